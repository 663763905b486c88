#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Multi-name downs (all at once or none, nothing held while waiting, FIFO on
# each name), deadlocks answered at once and naming the cycle, where a
# waiter stands, renew and holds - against a real semd, several clients.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
start_semd d || exit 1


$PROBE "$d_UNIX" hello "create a 1" "create b 2" >/dev/null
out=$T/multi.out
$PROBE "$d_UNIX" hello "multi a,b:2" "multi a,b:2 id=2" "up a" "up b n=2" \
	"multi a,b:3" "multi a,s,a" >"$out" 2>&1
ok "multi: both granted at once" has '^reply id=2 code=OK grant=a/[1-9][0-9]*/[1-9][0-9]*/1 grant=b/[1-9][0-9]*/[1-9][0-9]*/2' "$out"
ok "multi: a retry is answered the same" test "$(grep -c '^reply id=2 code=OK grant=a' "$out")" = 2
ok "multi: more than a limit refused" has '^reply id=5 code=INVALID_ARGUMENT' "$out"
ok "multi: a name twice refused" has '^reply id=6 code=INVALID_ARGUMENT msg=.*twice' "$out"

# One holds a until told; a multi-name waiter holds nothing meanwhile.
$PROBE "$d_UNIX" hello "down a" "until $T/a.go" >"$T/holder.out" 2>&1 &
t_wait_for 5 grep -q '^reply id=2 code=OK' "$T/holder.out"
$PROBE "$d_UNIX" hello "multi a,b timeout=30000" >"$T/waiter.out" 2>&1 &
wpid=$!
t_wait_for 10 sh -c "$PROBE '$d_UNIX' hello 'info b' | grep -q 'waiters=1'"
$PROBE "$d_UNIX" hello "info b" "down b n=2 timeout=0" >"$T/look.out" 2>&1
touch "$T/a.go"
ok "multi: b is not held while the waiter waits for a" has '^reply id=2 code=OK name=b limit=2 available=2 .*waiters=1' "$T/look.out"
ok "multi: and nobody passes the waiter on b" has '^reply id=3 code=WOULD_BLOCK' "$T/look.out"
wait "$wpid"
ok "multi: granted when a comes free" has '^reply id=2 code=OK grant=a/.*grant=b/' "$T/waiter.out"

# A deadlock: P holds x1 and waits for x2; Q holds x2 and downs x1. Each
# step when the one before it is seen done, not after fixed times.
$PROBE "$d_UNIX" hello "down x1" "until $T/p.go" "down x2 timeout=30000" >"$T/p.out" 2>&1 &
ppid_=$!
t_wait_for 10 grep -q '^reply id=2 code=OK' "$T/p.out"
$PROBE "$d_UNIX" hello "down x2" "until $T/q.go" "down x1 timeout=30000" >"$T/q.out" 2>&1 &
qpid=$!
t_wait_for 10 grep -q '^reply id=2 code=OK' "$T/q.out"
touch "$T/p.go"
t_wait_for 10 sh -c "$PROBE '$d_UNIX' hello 'info x2' | grep -q 'waiters=1'"
touch "$T/q.go"
wait "$qpid"
wait "$ppid_"
ok "deadlock: the newest down answered at once" has '^reply id=3 code=DEADLOCK msg="deadlock: session [0-9]* (you) waits for x1, held by session [0-9]* (.*), which waits for x2, held by session [0-9]* (you)' "$T/q.out"
ok "deadlock: the other is granted when it goes" has '^reply id=3 code=OK permit=' "$T/p.out"
$PROBE "$d_UNIX" hello "stats" >"$T/stats.out"
ok "deadlock: counted" has ' deadlocks=1 ' "$T/stats.out"

# Where a waiter stands; renew; holds.
$PROBE "$d_UNIX" hello "down w" "until $T/w.go" >"$T/w.out" 2>&1 &
t_wait_for 10 grep -q '^reply id=2 code=OK' "$T/w.out"
$PROBE "$d_UNIX" hello "down w id=5 nowait" "where 5" "where 99" >"$T/where.out" 2>&1
touch "$T/w.go"
ok "where: first of one in line" has '^reply id=6 code=OK place=w/1/1' "$T/where.out"
ok "where: an unknown id is NOT_FOUND" has '^reply id=7 code=NOT_FOUND' "$T/where.out"
$PROBE "$d_UNIX" hello "down r lease=2000" "renew r lease=60000" "holds" >"$T/renew.out" 2>&1
ok "renew: a detached hold's lease" has '^reply id=3 code=OK renewed=1 expires=[1-9]' "$T/renew.out"
ok "holds: the principal's holds" has '^reply id=4 code=OK holds=[1-9][0-9]* total=[1-9][0-9]* .*hold=r/' "$T/renew.out"
sleep 2.5
$PROBE "$d_UNIX" hello "down r timeout=0" >"$T/renew2.out" 2>&1
ok "renew: still held after its first lease" has '^reply id=2 code=WOULD_BLOCK' "$T/renew2.out"
t_done
