#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The systemd watchdog with several event loops: semd pings WATCHDOG=1 only
# while every loop runs. One loop's thread is frozen alone (ptrace
# interrupt, the other threads go on): the pings stop and the log says
# which loop; once it runs again the pings come back.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }

t_notify_socket 40 stamp

NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=400000 \
	"$SEMD" --listen "unix:$T/w.sock" --ready-file "$T/w.ready" --threads 2 \
	>"$T/w.log" 2>&1 &
pid=$!
PIDS_TO_KILL="$PIDS_TO_KILL $pid"
ok "ready" t_wait_for 10 test -s "$T/w.ready"
ok "WATCHDOG=1 pings with two loops" t_wait_for 5 \
	eval '[ "$(grep -c " WATCHDOG=1" "$T/notify.out")" -ge 3 ]'

# The newest thread is loop 1 (loop 0 is the main thread).
tid=$(ls "/proc/$pid/task" | sort -n | tail -n 1)
python3 - "$tid" "$T/notify.out" >"$T/freeze.out" 2>&1 <<'PY'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
tid = int(sys.argv[1])
SEIZE, INTERRUPT, DETACH, WALL = 0x4206, 0x4207, 17, 0x40000000
if libc.ptrace(SEIZE, tid, 0, 0) != 0:
    print("cannot ptrace: errno", ctypes.get_errno()); sys.exit(77)
libc.ptrace(INTERRUPT, tid, 0, 0)
os.waitpid(tid, WALL)
start = time.monotonic()
time.sleep(2.0)
libc.ptrace(DETACH, tid, 0, 0)
print("frozen %.3f %.3f" % (start, time.monotonic()))
PY
rc=$?
if [ "$rc" = 77 ]; then
	cat "$T/freeze.out"
	echo "SKIP: ptrace not allowed here"
	exit 77
fi
read -r _ t0 t1 <"$T/freeze.out"
# pings_after T: WATCHDOG=1 lines after the time T (the notify socket's clock)
pings_after() { awk -v b="$1" '$2 == "WATCHDOG=1" && $1 > b { n++ } END { print n + 0 }' "$T/notify.out"; }
# (waited for, not slept: a loaded machine may take longer than a second)
t_wait_for 10 eval '[ "$(pings_after "$t1")" -ge 2 ]'
t_wait_for 10 has 'event loop 1 has not run for' "$T/w.log"
# Pings while frozen, leaving the first watchdog period (0.4 s) for the
# loop's last beat to age.
n=$(awk -v a="$t0" -v b="$t1" '$2 == "WATCHDOG=1" && $1 > a + 0.7 && $1 < b { n++ } END { print n + 0 }' "$T/notify.out")
expect_eq "no WATCHDOG=1 while a loop is frozen" 0 "$n"
ok "the log names the frozen loop" has 'event loop 1 has not run for' "$T/w.log"
n=$(pings_after "$t1")
ok "pings come back once it runs ($n)" test "$n" -ge 2
kill -TERM "$pid"
wait "$pid"
expect_eq "SIGTERM: exit 0" 0 "$?"
t_done
