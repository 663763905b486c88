#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Reads off the log (issue 23): on a three-node cluster the leader answers
# Info, List, Stats, Holds, Validate and Ping without a log entry, after a
# read barrier (a round of its voters). Reads cost no entries; a read
# pipelined behind a Down and before another sees exactly what came before
# it on its connection; a leader whose followers are stopped answers no
# read (it cannot prove it still leads), and the read goes elsewhere.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS

t_cluster3 15 || exit 1
start_node() {
	t_cluster_node "$@" --bootstrap "$BOOT" --election-timeout 1s \
		--metrics-listen tcp:127.0.0.1:0
}
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }
# sample ADDR NAME: NAME's value on the metrics page at ADDR.
sample() {
	python3 -c 'import sys, urllib.request
for l in urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=5).read().decode().splitlines():
    if l.split(" ")[0] == sys.argv[2]: print(l.split(" ")[1])' "$1" "$2"
}
# last: the measured node's last log index, read from its metrics (which
# add no entry, as a client's status request would with its own
# connection), once it stopped moving: the same value 50 ms apart.
last() {
	l_prev=""; l_i=0
	while [ $l_i -lt 100 ]; do
		l_v=$(sample "$MA" semd_cluster_last_index)
		[ -n "$l_v" ] && [ "$l_v" = "$l_prev" ] && break
		l_prev=$l_v; l_i=$((l_i + 1)); sleep 0.05
	done
	echo "$l_v"
}
S="$SEMCTL -s $ADDRS"
leader() { t_cluster_field leader_id; }
has_leader() { t_cluster_has_leader; }

for i in 1 2 3; do start_node $i || { echo "node $i did not start"; exit 1; }; done
ok "a leader is elected" t_wait_for 10 has_leader
$S create r/a --limit 2 >/dev/null
L=$(leader); eval "lport=\$((base + 10 + L))"
LA="tcp:127.0.0.1:$lport"
MA=$(sed -n 's/^metrics://p' "$T/r$L")

# 300 reads of every kind on one connection: no entry for them.
cmds=""
i=0
while [ $i -lt 50 ]; do
	cmds="$cmds|info r/a|list prefix=r/|stats|holds|validate r/a 1|ping x"
	i=$((i + 1))
done
# The entries of a connection that only says Hello (its open, its close,
# and semctl's own around the measure), then of one that reads 300 times.
entries() { # PROBE ARGS...: the log entries while they run
	e0=$(last)
	"$PROBE" "$LA" "$@" >"$T/reads.out" 2>&1
	echo $? >"$T/reads.rc"
	e1=$(last)
	echo $((e1 - e0))
}
stat() { "$SEMCTL" -s "$LA" stats 2>/dev/null | awk -v k="$1" '$1 == k { print $2 }'; }
r0=$(stat cluster_reads)
base=$(entries hello)
IFS='|'
# shellcheck disable=SC2086 # split on | on purpose
n=$(entries hello $cmds)
unset IFS
expect_eq "300 reads answered" 0 "$(cat "$T/reads.rc")"
expect_eq "... every one OK" 301 "$(grep -c 'code=OK' "$T/reads.out")"
echo "# log entries: $base for a Hello alone, $n with 300 reads after it"
ok "... and they cost no log entry" test "$n" -le "$((base + 1))"
r1=$(stat cluster_reads)
echo "# cluster_reads: $r0 before, $r1 after; barrier rounds: $(stat cluster_read_rounds)"
ok "... the leader counts them (cluster_reads)" test "$((r1 - r0))" -ge 300

# Pipelined on one connection: info, down, info, up, info - each read sees
# exactly the requests before it (the writes are held behind the reads).
"$PROBE" "$LA" hello "info r/a nowait" "down r/a nowait" "info r/a nowait" \
	"up r/a nowait" "info r/a nowait" read read read read read >"$T/order.out" 2>&1
sed 's/^/# /' "$T/order.out"
holders() { grep 'holders=' "$T/order.out" | sed -n "${1}p" | sed -n 's/.* holders=\([0-9]*\).*/\1/p'; }
ok "pipelined: the first info is before the down" test "$(holders 1)" = 0
ok "... the second after it" test "$(holders 2)" = 1
ok "... the third after the up" test "$(holders 3)" = 0

# A leader cut off from its voters (both followers stopped) cannot prove it
# leads: its reads wait, unanswered, until it steps down (check quorum,
# an election timeout) and the client is told to go elsewhere.
"$PROBE" "$LA" hello "info r/a" "until $T/stopped" "info r/a" >"$T/cut.out" 2>&1 &
probe=$!
t_wait_for 10 grep -q 'holders=' "$T/cut.out"
for i in 1 2 3; do
	[ "$i" = "$L" ] && continue
	eval "kill -STOP \$N$i"
done
touch "$T/stopped"
wait "$probe"
sed 's/^/# /' "$T/cut.out"
for i in 1 2 3; do
	[ "$i" = "$L" ] && continue
	eval "kill -CONT \$N$i"
done
ok "cut off: the read before is answered, the read after is not" \
	test "$(grep -c 'holders=' "$T/cut.out")" = 1
ok "... the leader had stepped down" grep -q 'no longer the leader' "$T/n$L.log"
ok "a leader again after the followers are back" t_wait_for 15 has_leader
ok "... and reads are served again" sh -c "$S info r/a >/dev/null"

# A log of one voter (--data-dir, no peers) answers its reads at once: no
# other leader can be, and every change it acknowledged is applied.
t_start_node 9 --data-dir "$T/one" --listen "tcp:127.0.0.1:$((base + 9))" \
	--acl "anonymous * all" --metrics-listen tcp:127.0.0.1:0 ||
	{ echo "the one-voter node did not start"; exit 1; }
LA="tcp:127.0.0.1:$((base + 9))"
MA=$(sed -n 's/^metrics://p' "$T/r9")
"$SEMCTL" -s "$LA" create r/a --limit 2 >/dev/null
r0=$(stat cluster_reads)
base=$(entries hello)
IFS='|'
# shellcheck disable=SC2086 # split on | on purpose
n=$(entries hello $cmds)
unset IFS
r1=$(stat cluster_reads)
expect_eq "one voter: 300 reads answered, every one OK" "0 301" \
	"$(cat "$T/reads.rc") $(grep -c 'code=OK' "$T/reads.out")"
echo "# one voter: log entries $base for a Hello alone, $n with 300 reads; cluster_reads $r0 -> $r1"
ok "... at no log entry" test "$n" -le "$((base + 1))"
ok "... counted (cluster_reads)" test "$((r1 - r0))" -ge 300
t_done
