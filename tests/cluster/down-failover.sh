#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A `semctl -s a,b,c down` waiting behind a holder rides out a kill -9 of
# the cluster's leader: its session is resumed on the new leader, its
# waiter keeps its place (a second waiter behind it is served after it),
# and the next up grants it (exit 0, its token printed).
. "$top_srcdir/tests/lib.sh"
t_watchdog 90
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS

t_cluster3 15 || exit 1
start_node() { t_cluster_node "$@" --bootstrap "$BOOT"; }
S="$SEMCTL -s $ADDRS"
leader() { t_cluster_field leader_id; }
has_leader() { t_cluster_has_leader; }
# queued NAME PID...: NAME's waiters are these processes, in this order,
# none of them away.
queued() {
	n=$1; shift
	$S --json info "$n" 2>/dev/null | python3 -c '
import json, sys
w = json.load(sys.stdin)["waiters"]
want = [int(p) for p in sys.argv[1:]]
sys.exit(not ([x["pid"] for x in w] == want and not any(x.get("detached") for x in w)))' "$@"
}

for i in 1 2 3; do start_node $i || { echo "node $i did not start"; exit 1; }; done
ok "a leader is elected" t_wait_for 10 has_leader
$S down f/a --lease 1m >/dev/null
$S down f/a --timeout 60s --lease 1m >"$T/w1.out" 2>"$T/w1.err" &
w1=$!
t_wait_for 10 queued f/a "$w1"
$S down f/a --timeout 60s --lease 1m >"$T/w2.out" 2>"$T/w2.err" &
w2=$!
ok "two downs wait behind the holder" t_wait_for 10 queued f/a "$w1" "$w2"
L=$(leader)
eval "lp=\$N$L"
kill -9 "$lp"; wait "$lp" 2>/dev/null
ok "a new leader is elected" t_wait_for 15 sh -c "l=\$($S --json cluster status 2>/dev/null | sed -n 's/.*\"leader_id\":\\([0-9]*\\).*/\\1/p'); [ -n \"\$l\" ] && [ \"\$l\" != 0 ] && [ \"\$l\" != $L ]"
ok "both downs still wait, resumed on it in their places" t_wait_for 20 queued f/a "$w1" "$w2"
$S up f/a >/dev/null
wait "$w1"
expect_eq "the first up grants the first waiter" 0 $?
ok "... its token printed" grep -q '^[0-9][0-9]*$' "$T/w1.out"
ok "... and the second still waits" kill -0 "$w2"
$S up f/a >/dev/null
wait "$w2"
expect_eq "the second up grants the second waiter" 0 $?
[ "$t_failed" = 0 ] || cat "$T/w1.err" "$T/w2.err"
t_done
