#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# --threads: clients on several event loops share the semaphores. The
# stress runs race CONNS connections for a name (downs with and without
# timeouts, disconnects while waiting and while holding) and check that no
# more than the limit is ever held, every fencing token is unique, no
# queued down is left without its grant, and every permit comes back. They
# run against one loop and against four (more loops than this machine may
# have CPUs, so grants cross threads all the time).
. "$top_srcdir/tests/lib.sh"
t_watchdog 150
unset SEMD_TEST_THREADS		# this test chooses the number itself

for n in 1 4; do
	start_semd "d$n" --threads "$n" || exit 1
	eval "U=\$d${n}_UNIX TCP=\$d${n}_TCP PID=\$d${n}_PID"
	ok "threads $n: the log says how many loops run" \
		grep -q "$n thread(s)" "$T/d$n.log"

	$PROBE --stress "$U" 24 3 3000 "$n" >"$T/stress-u$n.out" 2>&1
	rc=$?
	cat "$T/stress-u$n.out"
	expect_eq "threads $n: unix, 24 connections, limit 3: no permit lost or granted twice" 0 "$rc"
	$PROBE --stress "$TCP" 24 1 2000 "$((n + 10))" >"$T/stress-t$n.out" 2>&1
	rc=$?
	cat "$T/stress-t$n.out"
	expect_eq "threads $n: tcp, 24 connections, limit 1: no permit lost or granted twice" 0 "$rc"

	$PROBE --fifo "$U" 40 >"$T/fifo$n.out" 2>&1
	rc=$?
	cat "$T/fifo$n.out"
	expect_eq "threads $n: 40 waiters on connections of every loop granted in FIFO order" 0 "$rc"

	# A timeout armed by one loop fires even when that loop's clients are idle.
	$PROBE --timeout "$U" 200 >"$T/timeout$n.out" 2>&1
	cat "$T/timeout$n.out"
	ok "threads $n: a 200 ms down times out" grep -q "code=TIMEOUT" "$T/timeout$n.out"

	$PROBE "$U" hello stats >"$T/stats$n.out" 2>&1
	ok "threads $n: nothing held or queued after the runs" \
		grep -q " holders=0 waiters=0 " "$T/stats$n.out"
done

# Reload cannot change the number of loops: a warning, and the daemon goes on.
cfg=$T/semd.conf
echo "threads 2" >"$cfg"
start_semd r --config "$cfg" || exit 1
ok "threads from the config file" grep -q "2 thread(s)" "$T/r.log"
echo "threads 3" >"$cfg"
kill -HUP "$r_PID"
t_wait_for 5 grep -q "threads changes only at a restart" "$T/r.log"
ok "reload: threads changes only at a restart" grep -q "threads changes only at a restart" "$T/r.log"
ok "reload: still serving" $PROBE "$r_UNIX" hello ping

# A stop with waiters on every loop: all hear UNAVAILABLE, semd exits 0.
$PROBE "$r_UNIX" hello "down stop/x" "sleep 8000" >/dev/null 2>&1 &
holder=$!
t_wait_for 5 sh -c "$PROBE '$r_UNIX' hello 'info stop/x' | grep -q 'holders=1'"
i=0
waiters=
while [ $i -lt 6 ]; do
	$PROBE "$r_UNIX" hello "down stop/x timeout=30000" >"$T/stopw$i.out" 2>&1 &
	waiters="$waiters $!"
	i=$((i + 1))
done
t_wait_for 5 sh -c "$PROBE '$r_UNIX' hello 'info stop/x' | grep -q 'waiters=6'"
kill -TERM "$r_PID"
t0=$(date +%s%N)
wait "$r_PID"
rc=$?
el=$((($(date +%s%N) - t0) / 1000000))
expect_eq "stop with waiters on both loops: exit status" 0 "$rc"
# (clients still there are cut off after 5 s; 2 s more for a loaded machine)
ok "stop: semd exited within the grace time ($el ms)" test "$el" -le 7000
kill "$holder" 2>/dev/null
wait $waiters
# In memory each waiting down is answered; with a log (the state is kept)
# each client is told the daemon stops.
if [ -n "${SEMD_TEST_DURABLE:-}" ]; then
	n=$(cat "$T"/stopw*.out | grep -c "^reply id=0 code=UNAVAILABLE")
else
	n=$(cat "$T"/stopw*.out | grep -c "^reply id=[1-9][0-9]* code=UNAVAILABLE")
fi
expect_eq "stop: every waiter heard UNAVAILABLE" 6 "$n"
t_done
