#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Connections going away: disconnect and kill -9 free permits at once,
# session leases keep them and can be resumed, detached holds outlive the
# client, a retried down is idempotent, SIGTERM answers waiters UNAVAILABLE.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
start_semd d || exit 1
A=$d_UNIX

# waiters NAME: the number of waiters info reports.
waiters() { $PROBE "$A" hello "info $1" | sed -n 's/.* waiters=\([0-9]*\).*/\1/p' | head -1; }
waiting() { [ "$(waiters "$1")" = "$2" ]; }
now_ms() { python3 -c 'import time; print(int(time.monotonic() * 1000))'; }

# A holder that is killed with SIGKILL: its permit goes to the waiter at once.
$PROBE "$A" hello "down k9" "sleep 60000" >"$T/h.out" 2>&1 &
h=$!
PIDS_TO_KILL="$PIDS_TO_KILL $h"
ok "holder granted" t_wait_for 5 has 'code=OK permit=' "$T/h.out"
$PROBE "$A" hello "down k9 timeout=20000" >"$T/w.out" 2>&1 &
w=$!
ok "waiter queued" t_wait_for 5 waiting k9 1
t0=$(now_ms)
kill -9 "$h"
# (at once; 5 s leaves a loaded machine room, the holder would hold a minute)
ok "kill -9 of the holder: waiter granted at once" t_wait_for 5 has 'code=OK permit=' "$T/w.out"
echo "# grant seen $(( $(now_ms) - t0 )) ms after kill -9 (50 ms polling)"
wait "$w"

# A holder that disconnects normally.
$PROBE "$A" hello "down dc" "sleep 300" >"$T/h2.out" 2>&1 &
$PROBE "$A" hello "sleep 100" "down dc timeout=20000" >"$T/w2.out" 2>&1 &
w=$!
ok "disconnect: waiter granted" t_wait_for 5 has 'code=OK permit=' "$T/w2.out"
wait "$w"

# Over a UNIX socket a close is death, lease or not (the kernel's
# down_killable: a local client cannot ride out a network blip).
$PROBE "$A" "hello lease=60000" "down ud" >"$T/ud.out" 2>&1
$PROBE "$A" hello "down ud timeout=0" >"$T/ud2.out" 2>&1
ok "unix: a leased session's close without detach frees at once" has '^reply id=2 code=OK permit=' "$T/ud2.out"

# Lease: after Detach the holds stay when the connection closes, and can
# be resumed.
$PROBE "$A" "hello lease=10000" "down ls id=2" detach >"$T/l1.out" 2>&1
sid=$(sed -n 's/.* session=\([0-9]*\) .*/\1/p' "$T/l1.out")
sec=$(sed -n 's/.* secret=\([0-9a-f]*\) .*/\1/p' "$T/l1.out")
permit=$(sed -n 's/^reply id=2 code=OK permit=\([0-9]*\).*/\1/p' "$T/l1.out")
ok "lease: session and permit" test -n "$sid" -a -n "$permit"
$PROBE "$A" hello "down ls timeout=20000" >"$T/lw.out" 2>&1 &
w=$!
ok "lease: waiter queued behind the lingering hold" t_wait_for 5 waiting ls 1
sleep 1
ok "lease: still held 1 s after the disconnect" test "$(grep -c 'permit=' "$T/lw.out")" = 0
$PROBE "$A" "hello resume=$sid secret=00" >"$T/bad.out" 2>&1
ok "lease: resume with a wrong secret refused" has 'code=SESSION_EXPIRED' "$T/bad.out"
# The resumed session's lease, 2 s, counts from its last frame, after t0.
t0=$(now_ms)
$PROBE "$A" "hello resume=$sid secret=$sec lease=2000" "down ls id=2" "info ls" detach >"$T/l2.out" 2>&1
ok "lease: resumed" has '^reply id=1 code=OK .*resumed=1' "$T/l2.out"
ok "lease: retried down returns the same permit" has "^reply id=2 code=OK permit=$permit " "$T/l2.out"
ok "lease: still one holder" has 'holders=1 waiters=1' "$T/l2.out"
ok "lease: expiry hands the permit on" t_wait_for 10 has 'code=OK permit=' "$T/lw.out"
dt=$(( $(now_ms) - t0 ))
echo "# lease of 2000 ms expired $dt ms after the resume began"
ok "lease: not before the lease ran out" test "$dt" -ge 1999
wait "$w"
$PROBE "$A" "hello resume=$sid secret=$sec" >"$T/l3.out" 2>&1
ok "lease: expired session cannot be resumed" has 'code=SESSION_EXPIRED' "$T/l3.out"

# Detached hold: the CLI-style down that outlives the process.
$PROBE "$A" hello "down job lease=60000" >"$T/d1.out" 2>&1
$PROBE "$A" hello "down job timeout=0" "info job" "up job" "down job timeout=0" >"$T/d2.out" 2>&1
ok "detached: still held after the client exits" has '^reply id=2 code=WOULD_BLOCK' "$T/d2.out"
ok "detached: shown as detached" has 'holder=uid:[0-9]*/[0-9]*/1/detached' "$T/d2.out"
ok "detached: same principal releases it" has '^reply id=4 code=OK released=1' "$T/d2.out"
ok "detached: free again" has '^reply id=5 code=OK permit=' "$T/d2.out"

# n permits: a big request at the head is served before smaller later ones.
# The first holds until the test has looked (n1.go), not for a fixed time.
$PROBE "$A" hello "create pool 3" "down pool n=2" "until $T/n1.go" "up pool n=2" "sleep 1500" >"$T/n1.out" 2>&1 &
n1=$!
ok "n-permit: first holds 2" t_wait_for 5 has '^reply id=3 code=OK permit=.* n=2' "$T/n1.out"
$PROBE "$A" hello "down pool n=3 timeout=10000" "up pool n=3" >"$T/n2.out" 2>&1 &
n2=$!
t_wait_for 5 waiting pool 1
$PROBE "$A" hello "down pool n=1 timeout=10000" >"$T/n3.out" 2>&1 &
n3=$!
t_wait_for 5 waiting pool 2
$PROBE "$A" hello "info pool" >"$T/n4.out"
ok "n-permit: the 1-permit down waits behind the 3-permit one (no barging)" has 'available=1 .*waiters=2' "$T/n4.out"
touch "$T/n1.go"
wait "$n1" "$n2" "$n3"
ok "n-permit: 3 granted" has '^reply id=2 code=OK permit=.* n=3' "$T/n2.out"
ok "n-permit: then 1 granted" has '^reply id=2 code=OK permit=.* n=1' "$T/n3.out"
g2=$(sed -n 's/^reply id=2 code=OK permit=[0-9]* token=\([0-9]*\).*/\1/p' "$T/n2.out")
g3=$(sed -n 's/^reply id=2 code=OK permit=[0-9]* token=\([0-9]*\).*/\1/p' "$T/n3.out")
ok "n-permit: in FIFO order (tokens)" test "$g2" -lt "$g3"

# SIGTERM with waiters: UNAVAILABLE, exit 0.
start_semd e || exit 1
$PROBE "$e_UNIX" hello "down st" "until $T/st.go" >"$T/s1.out" 2>&1 &
t_wait_for 5 has 'code=OK permit=' "$T/s1.out"
$PROBE "$e_TCP" hello "down st timeout=-1" >"$T/s2.out" 2>&1 &
s2=$!
ok "sigterm: waiter queued" t_wait_for 5 eval '[ "$($PROBE "$e_UNIX" hello "info st" | sed -n "s/.* waiters=\([0-9]*\).*/\1/p")" = 1 ]'
kill -TERM "$e_PID"
wait "$e_PID"
rc=$?
expect_eq "sigterm: exit status" 0 "$rc"
wait "$s2"
ok "sigterm: waiter answered UNAVAILABLE" has 'code=UNAVAILABLE' "$T/s2.out"
touch "$T/st.go"
ok "sigterm: UNIX socket removed" test ! -e "$T/e.sock"
t_done
