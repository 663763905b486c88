#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Watches against a real semd: the events of a prefix in order; a watcher
# that does not read is cut off by max-output while the daemon goes on
# serving at full speed; 100 watchers each get every event.
. "$top_srcdir/tests/lib.sh"
t_watchdog 180
start_semd d --max-output 65536 || exit 1


out=$T/watch.out
$PROBE "$d_UNIX" hello "watch ev/ prefix" read read read read read read >"$out" 2>&1 &
wpid=$!
t_wait_for 5 grep -q '^reply id=2 code=OK$' "$out"
$PROBE "$d_UNIX" hello "create ev/a 1" "down ev/a" "down ev/a timeout=50" "setlimit ev/a 2" \
	"up ev/a" "delete ev/a" >/dev/null 2>&1
wait "$wpid"
ok "watch: create" has '^reply id=0 code=OK watch=2 event=8 name=ev/a' "$out"
ok "watch: grant, with who" has '^reply id=0 code=OK watch=2 event=2 name=ev/a n=1 permit=[1-9][0-9]* principal=uid:' "$out"
ok "watch: wait then timeout" has '^reply id=0 code=OK watch=2 event=4 name=ev/a' "$out"
ok "watch: limit" has '^reply id=0 code=OK watch=2 event=6 name=ev/a' "$out"
ok "watch: release" has '^reply id=0 code=OK watch=2 event=3 name=ev/a' "$out"
ok "watch: in order" test "$(sed -n 's/^reply id=0 code=OK watch=2 event=\([0-9]*\).*/\1/p' "$out" | tr '\n' ' ')" = "8 2 1 4 6 3 "

# A watcher that never reads: cut off, and the daemon does not slow down.
$PROBE "$d_UNIX" hello "watch slow prefix" "sleep 20000" >"$T/slow.out" 2>&1 &
spid=$!
t_wait_for 5 grep -q '^reply id=2 code=OK$' "$T/slow.out"
$PROBE --watchers "$d_UNIX" 0 slow 20000 >"$T/flood.out" 2>&1
ok "slow watcher: the flood went through" has '^watchers=0 pairs=20000 ' "$T/flood.out"
ok "slow watcher: dropped by max-output" t_wait_for 10 grep -q 'does not read its replies.*dropped' "$T/d.log"
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# 100 watchers, each must read both events of every pair.
$PROBE --watchers "$d_UNIX" 100 many 300 >"$T/many.out" 2>&1
ok "100 watchers: every event to every watcher" has '^watchers=100 pairs=300 .*events_each_min=600 ' "$T/many.out"
cat "$T/flood.out" "$T/many.out"
t_done
