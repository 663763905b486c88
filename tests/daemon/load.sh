#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# FIFO across 50 connections, 1,000 concurrent connections, timeout
# precision (the measured error is printed).
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
# 1,000 clients need more than the usual 1,024 descriptors in the daemon.
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
start_semd d || exit 1

# both MODE COUNT WHAT: semd_probe --MODE ADDR COUNT over UNIX and TCP.
both() {
	for ADDR in "$d_UNIX" "$d_TCP"; do
		k=$(echo "$ADDR" | cut -d: -f1)
		$PROBE "--$1" "$ADDR" "$2" >"$T/$1-$k.out" 2>&1
		rc=$?
		cat "$T/$1-$k.out"
		expect_eq "$k: $3" 0 "$rc"
	done
}

both fifo 50 "50 waiters on 50 connections granted in FIFO order"
if [ "$(ulimit -n)" -ge 2200 ]; then
	both many 1000 "1,000 concurrent connections served"
else
	echo "# skipped 1,000 connections: ulimit -n is $(ulimit -n)"
fi
$PROBE "$d_UNIX" hello ping >"$T/after.out"
ok "daemon still serves after the load" grep -q 'code=OK pong' "$T/after.out"

# Out of descriptors: accept pauses for a second instead of spinning, and
# serves again once descriptors are free.
( ulimit -n 32; exec "$SEMD" --listen "unix:$T/fd.sock" --ready-file "$T/fd.ready" ) >"$T/fd.log" 2>&1 &
fdpid=$!
PIDS_TO_KILL="$PIDS_TO_KILL $fdpid"
ok "low-descriptor daemon ready" t_wait_for 10 test -s "$T/fd.ready"
python3 - "$T/fd.sock" <<'PY' >"$T/fdclients.out" 2>&1
import socket, sys, time
conns = []
for i in range(60):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    conns.append(s)
time.sleep(1.5)
for s in conns:
    s.close()
print("closed", len(conns))
PY
ok "EMFILE: accepts paused with a log line" grep -q 'pausing accepts for 1 s' "$T/fd.log"
pauses=$(grep -c 'pausing accepts' "$T/fd.log")
ok "EMFILE: no accept spinning ($pauses pauses in 1.5 s)" test "$pauses" -le 5
ok "EMFILE: served again afterwards" t_wait_for 10 sh -c "$PROBE unix:$T/fd.sock hello ping | grep -q 'code=OK pong'"

for ms in 50 200; do
	$PROBE --timeout "$d_UNIX" "$ms" >"$T/to.out" 2>&1
	cat "$T/to.out"
	ok "timeout $ms ms answered TIMEOUT" grep -q 'code=TIMEOUT' "$T/to.out"
	err=$(sed -n 's/.*(error \([-+][0-9.]*\) ms).*/\1/p' "$T/to.out")
	# never more than a millisecond early (ms clock), never 100 ms late
	ok "timeout $ms ms error $err ms within [-1, +100]" \
		awk -v e="$err" 'BEGIN { exit !(e >= -1.0 && e <= 100.0) }'
done
t_done
