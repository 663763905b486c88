#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/client/down-resume.sh - a waiting `semctl down` rides out a restart
# of a durable daemon (SIGTERM and kill -9, over UNIX and TCP): it keeps its
# session, its place in line (a second waiter behind it is served after it)
# and its deadline (never granted, it times out at the original one: exit
# 1); a restart of a daemon without --data-dir ends it (exit 3, as
# semctl(1) says). A down whose session is away is passed over, so a semctl
# killed while it waits leaves no detached hold behind (owned by nobody for
# its whole lease).
. "$top_srcdir/tests/lib.sh"
# (a sanitizer build on a loaded machine took more than 120 s)
t_watchdog 300
unset SEMD_TEST_DURABLE		# this test gives its own data directory
D=$T/data
port=$(t_port_base 1) || exit 1
U=unix:$T/d.sock
TCP=tcp:127.0.0.1:$port
S="$SEMCTL -s $U"

start_d() { start_semd d --listen "$TCP" "$@"; }
stop_d() { kill "-$1" "$d_PID"; wait "$d_PID" 2>/dev/null; }
# waiters NAME N: NAME has N waiters queued.
waiters() { $S info "$1" 2>/dev/null | grep -q "^waiters: $2\$"; }
# running PID: the process has not exited yet.
running() { kill -0 "$1" 2>/dev/null; }
# now_ms: the test's one clock (monotonic, milliseconds).
now_ms() { python3 -c 'import time; print(int(time.monotonic() * 1000))'; }

start_d --data-dir "$D" || exit 1

# case SIGNAL ADDR: a holder, two waiters (W1 then W2) over ADDR; the daemon
# is stopped with SIGNAL and started again; the first up goes to W1 only,
# the second to W2.
restart_case() {
	sig=$1 addr=$2 sem=r/$1-${2%%:*}
	$S down "$sem" --lease 1m >/dev/null || return 1
	"$SEMCTL" -s "$addr" down "$sem" --timeout 60s --lease 1m >"$T/w1.out" 2>"$T/w1.err" &
	w1=$!
	t_wait_for 10 waiters "$sem" 1
	"$SEMCTL" -s "$addr" down "$sem" --timeout 60s --lease 1m >"$T/w2.out" 2>"$T/w2.err" &
	w2=$!
	t_wait_for 10 waiters "$sem" 2
	stop_d "$sig"
	start_d --data-dir "$D" || exit 1
	ok "$sig over ${addr%%:*}: both downs still wait after the restart" \
		sh -c "kill -0 $w1 && kill -0 $w2"
	# the waiters resume on their own: both are back in line
	if t_wait_for 15 sh -c "$S --json info '$sem' | python3 -c '
import json, sys
w = json.load(sys.stdin)[\"waiters\"]
sys.exit(not (len(w) == 2 and not any(x.get(\"detached\") for x in w) and
              [x[\"pid\"] for x in w] == [$w1, $w2]))'"; then
		ok "$sig over ${addr%%:*}: ... and are queued, in their places" true
	else
		ok "$sig over ${addr%%:*}: ... and are queued, in their places" false
		# what the daemon and the waiters said (the next start empties d.log)
		echo "# info: $($S --json info "$sem" 2>&1 | head -c 800)"
		sed 's/^/# w1: /' "$T/w1.err"; sed 's/^/# w2: /' "$T/w2.err"
		sed 's/^/# d.log: /' "$T/d.log" | tail -n 30
	fi
	$S up "$sem" >/dev/null
	wait "$w1"
	expect_eq "$sig over ${addr%%:*}: the first up grants the first waiter" 0 $?
	ok "$sig over ${addr%%:*}: ... its token printed" grep -q '^[0-9][0-9]*$' "$T/w1.out"
	ok "$sig over ${addr%%:*}: ... and the second still waits" running "$w2"
	# W1's hold is its principal's (anonymous over TCP)
	"$SEMCTL" -s "$addr" up "$sem" >/dev/null
	wait "$w2"
	expect_eq "$sig over ${addr%%:*}: the second up grants the second waiter" 0 $?
	"$SEMCTL" -s "$addr" up "$sem" >/dev/null
}
restart_case TERM "$U"
restart_case KILL "$U"
restart_case TERM "$TCP"
restart_case KILL "$TCP"

# The deadline is the original one: the waiter found after a kill -9 is the
# same (its arrival number, its start), not a new one made by the resent
# down; never granted, it ends with exit 1 once its 4 s have passed (semd's
# time stands still while it is down: they pass on the test's clock no
# sooner, and the deadline on the wall clock moves by the time semd was
# down, as semd(8) says of leases).
# wait_info NAME: "seq since deadline detached" of NAME's first waiter.
wait_info() {
	$S --json info "$1" | python3 -c '
import json, sys
w = json.load(sys.stdin)["waiters"][0]
print(w["seq"], w["since_ms"], w["deadline_ms"], int(w.get("detached", False)))'
}
$S down dl --lease 1m >/dev/null
t0=$(now_ms)
$S down dl --timeout 4s --lease 1m >/dev/null 2>"$T/dl.err" &
dl=$!
t_wait_for 10 waiters dl 1
before=$(wait_info dl)
stop_d KILL
start_d --data-dir "$D" || exit 1
t_wait_for 10 sh -c "$S --json info dl | grep -q '\"detached\":false'"
after=$(wait_info dl)
# shellcheck disable=SC2086 # word splitting wanted
set -- $before $after
expect_eq "kill -9: the resumed down is the same waiter (its arrival number)" "$1" "$5"
expect_eq "... waiting since the same time" "$2" "$6"
# (its deadline on the wall clock moved by the time semd was down: $(($7 - $3)) ms)
expect_eq "... and it is back, not away" 0 "$8"
wait "$dl"
rc=$?
t1=$(now_ms)
expect_eq "the down times out after the restart: exit 1" 1 "$rc"
ok "... no sooner than its 4 s (waited $((t1 - t0)) ms)" test "$((t1 - t0))" -ge 4000
ok "... and says so" grep -q 'no permit of dl within' "$T/dl.err"
$S up dl >/dev/null

# A semctl killed while it waits over TCP leaves its session for its lease;
# its down is passed over meanwhile, so the permit goes to nobody's hold.
$S down gone --lease 1m >/dev/null
"$SEMCTL" -s "$TCP" down gone --timeout 60s --lease 1m >/dev/null 2>&1 &
g=$!
t_wait_for 10 waiters gone 1
kill -9 "$g"; wait "$g" 2>/dev/null
$S up gone >/dev/null
ok "a killed waiter's down is not granted while its session is away" \
	sh -c "$S trydown gone >/dev/null"
$S up gone >/dev/null
# The same at the protocol level: a session with a lease, its down of a
# detached hold queued, detached and closed; the hold goes, and the down,
# passed over, is still in line when the session comes back.
$S down gone2 --lease 1m >/dev/null
$PROBE "$U" "hello lease=60000" "down gone2 timeout=-1 lease=60000 nowait id=5" detach \
	>"$T/p1.out" 2>&1
sid=$(sed -n 's/.* session=\([0-9]*\) .*/\1/p' "$T/p1.out")
sec=$(sed -n 's/.* secret=\([0-9a-f]*\) .*/\1/p' "$T/p1.out")
$S up gone2 >/dev/null
ok "a detached hold is not granted to a session that is away" \
	sh -c "$S info gone2 | grep -q '^holders: 0'"
ok "... its down keeps its place" sh -c "$S info gone2 | grep -q '^waiters: 1'"
$PROBE "$U" "hello resume=$sid secret=$sec lease=60000" "down gone2 timeout=-1 lease=60000 id=5" \
	>"$T/p2.out" 2>&1
ok "... and is granted when the session is back" has '^reply id=5 code=OK permit=' "$T/p2.out"
stop_d TERM

# A daemon without --data-dir forgets everything: the waiting down ends
# with exit 3 (SIGTERM: the daemon said it shuts down; kill -9: the session
# cannot be resumed).
for sig in TERM KILL; do
	for addr in "$U" "$TCP"; do
		start_d || exit 1
		$S down m --lease 1m >/dev/null
		"$SEMCTL" -s "$addr" down m --timeout 60s --lease 1m >/dev/null 2>"$T/m.err" &
		m=$!
		t_wait_for 10 waiters m 1
		stop_d "$sig"
		start_d || exit 1
		# bounded: the down ends at once, or on its 60 s deadline
		wait "$m"
		expect_eq "in-memory daemon, $sig over ${addr%%:*}: the down fails with exit 3" 3 $?
		ok "... and says why" test -s "$T/m.err"
		stop_d TERM
	done
done
t_done
