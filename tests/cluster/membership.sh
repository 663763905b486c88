#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Live changes of a three-node cluster through semctl: leadership handed to
# a chosen node, a fourth node added (it catches up with the log) and taken
# out again, changes that name no member refused; clients carry on across
# each, and every node stops cleanly.
. "$top_srcdir/tests/lib.sh"
t_watchdog 90
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS

t_cluster3 15 || exit 1

start_node() { t_cluster_node "$@"; }
field() { t_cluster_field "$@"; }
leader_is() { [ "$(field leader_id)" = "$1" ]; }
has_leader() { t_cluster_has_leader; }
members() { "$SEMCTL" -s "$ADDRS" --json cluster status 2>/dev/null | grep -o '"role"' | wc -l; }
members_are() { [ "$(members)" -eq "$1" ]; }
# caught_up I: node I has applied at least what the leader had committed.
caught_up() {
	[ "$(field applied_index "tcp:127.0.0.1:$((base + 10 + $1))")" -ge "$2" ]
}
stopped_ok() { kill -TERM "$1" && wait "$1"; }

for i in 1 2 3; do
	start_node $i --bootstrap "$BOOT" || { echo "node $i did not start"; exit 1; }
done
ok "a leader is elected" t_wait_for 10 has_leader
ok "a client takes and gives back a permit" sh -c \
	"'$SEMCTL' -s '$ADDRS' create m --limit 1 >/dev/null && \
	 t=\$('$SEMCTL' -s '$ADDRS' down m) && '$SEMCTL' -s '$ADDRS' up m >/dev/null"

# transfer: to a follower chosen by the test.
L=$(field leader_id)
to=$((L % 3 + 1))
"$SEMCTL" -s "$ADDRS" cluster transfer "$to" >"$T/transfer.out" 2>&1
rc=$?
expect_eq "cluster transfer $to: exit status" 0 $rc
[ "$rc" = 0 ] || sed 's/^/# /' "$T/transfer.out"
ok "node $to leads after the transfer" t_wait_for 10 leader_is "$to"
ok "clients carry on after the transfer" "$SEMCTL" -s "$ADDRS" trydown m

# add: a fourth node, started empty, joins and catches up.
start_node 4 || { echo "node 4 did not start"; exit 1; }
"$SEMCTL" -s "$ADDRS" cluster add 4 "127.0.0.1:$((base + 4))" >"$T/add.out" 2>&1
expect_eq "cluster add 4: exit status" 0 $?
ok "four members after the add" t_wait_for 10 members_are 4
"$SEMCTL" -s "$ADDRS" create after-add --limit 3 >/dev/null
commit=$(field commit_index)
ok "node 4 applies the log (index $commit)" t_wait_for 10 caught_up 4 "$commit"
ok "node 4 knows the leader" sh -c \
	"[ \"\$('$SEMCTL' -s tcp:127.0.0.1:$((base + 14)) --json cluster status | \
	  sed -n 's/.*\"leader_id\":\([0-9]*\).*/\1/p')\" = $to ]"

# Changes that name no member, or a second change at once, are refused.
"$SEMCTL" -s "$ADDRS" cluster remove 9 >"$T/bad.out" 2>&1
rc=$?
ok "cluster remove 9 (no such node) fails" [ "$rc" -ne 0 ]
"$SEMCTL" -s "$ADDRS" cluster transfer 9 >>"$T/bad.out" 2>&1
rc=$?
ok "cluster transfer 9 (no such node) fails" [ "$rc" -ne 0 ]
ok "the refusals say why" has "semctl: " "$T/bad.out"

# remove: node 4 leaves; the three go on.
"$SEMCTL" -s "$ADDRS" cluster remove 4 >"$T/remove.out" 2>&1
expect_eq "cluster remove 4: exit status" 0 $?
ok "three members after the remove" t_wait_for 10 members_are 3
ok "node 4 stops cleanly" stopped_ok "$N4"
ok "clients carry on after the remove" "$SEMCTL" -s "$ADDRS" up m

for i in 1 2 3; do
	ok "node $i stops cleanly on SIGTERM" stopped_ok "$(eval echo "\$N$i")"
	ok "node $i logged no crash" sh -c "! grep -qi 'assert\|abort\|Sanitizer' '$T/n$i.log'"
done
t_done
