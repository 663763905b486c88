#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Leases under faults: a three-node cluster, the leader killed (kill -9),
# paused (SIGSTOP 3 s) and cut off from the others (4 s); all along two
# groups of 6 clients take and give back a limit-1 name each, one group
# with a 2 s session lease, the other without. Every check of cluster_load
# holds for both, and the leased group's grants per second over the faults
# are at least half the other's: the sessions the faults leave
# behind (their clients gave up at their own 2 s lease and came back as new
# sessions) used to keep their permits and their places in the queue for
# 10 s of restart grace more at every fault, and the leased group made
# 0.05-0.1 of the other's grants (0.26 here before the fix, 0.82 after).
. "$top_srcdir/tests/lib.sh"
t_watchdog 150
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS
if grep -qa -e __asan_init -e __tsan_init "$SEMD"; then
	echo "SKIP: a sanitizer build (a rate test; faults.sh checks safety there)"
	exit 77
fi

. "$top_srcdir/tests/cluster/proxied.sh"

for i in 1 2 3; do start_node $i || { echo "node $i did not start"; exit 1; }; done
ok "a leader is elected" wait_leader
# Both groups at once, so they see the same faults on the same machine.
"$LOAD" -s "$ADDRS" -p lz -d 90 -t 6 -n 1 -l 1 -L 2000 -q 0 -w "$T/faults" \
	-f "$T/faults-done" >"$T/lease.out" 2>"$T/lease.err" &
lz=$!
"$LOAD" -s "$ADDRS" -p nl -d 90 -t 6 -n 1 -l 1 -L 0 -q 0 -w "$T/faults" \
	-f "$T/faults-done" >"$T/nolease.out" 2>"$T/nolease.err" &
nl=$!
PIDS_TO_KILL="$PIDS_TO_KILL $lz $nl"
sleep 2
touch "$T/faults"

L=$(leader); echo "# kill -9 of the leader, node $L"
kill -9 "$(pid_of "$L")"; wait "$(pid_of "$L")" 2>/dev/null
sleep 1
start_node "$L"
ok "kill -9: a new leader" wait_leader
sleep 3
L=$(leader); echo "# SIGSTOP of the leader, node $L, for 3 s"
kill -STOP "$(pid_of "$L")"
sleep 3
kill -CONT "$(pid_of "$L")"
ok "SIGSTOP: a leader after it" wait_leader
sleep 3
L=$(leader); echo "# node $L, the leader, cut off from the others for 4 s"
echo "$L" >"$T/blocked"
sleep 4
: >"$T/blocked"
ok "partition healed: a leader" wait_leader
sleep 3
touch "$T/faults-done"

wait "$lz"; rc_lz=$?
wait "$nl"; rc_nl=$?
for g in lease nolease; do
	sed "s/^/# $g: /" "$T/$g.out"
	sed "s/^/# $g: /" "$T/$g.err" | head -20
done
expect_eq "the leased clients' checks" 0 "$rc_lz"
expect_eq "the clients' checks without a lease" 0 "$rc_nl"
rate() { sed -n 's/^fault window: .*(\([0-9.]*\)\/s)$/\1/p' "$1"; }
r_lz=$(rate "$T/lease.out"); r_nl=$(rate "$T/nolease.out")
echo "# grants per second over the faults: ${r_lz:-?} with a 2 s lease, ${r_nl:-?} without"
half() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && b > 0 && a * 2 >= b) }'; }
# An election the faults did not cause (a node starved of CPU on a loaded
# machine misses heartbeats: seen once in CI, the ratio then 0.44) is one
# more fault inside the window, which a leased group pays for with a lease
# and its grace: the rate is then reported, not compared.
leads=$(cat "$T/n1.log" "$T/n2.log" "$T/n3.log" | grep -c 'is the leader (term')
echo "# leaderships: $leads (4 when only the faults made them: the first, one after each)"
if [ "$leads" -le 4 ]; then
	ok "with a lease, at least half the grants per second without" half "$r_lz" "$r_nl"
else
	echo "# more leaderships than the faults made: the rate is not compared"
fi
stopped_ok() { kill -TERM "$1" && wait "$1" && ! grep -qi 'assert\|abort\|Sanitizer' "$2"; }
for i in 1 2 3; do
	ok "node $i stops cleanly on SIGTERM" stopped_ok "$(pid_of $i)" "$T/n$i.log"
done
t_done
