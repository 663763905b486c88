#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A holder without a lease on a paused leader learns that its hold is lost
# before the next leader grants that permit to anyone else. Client A (no
# session lease) holds a limit-1 name of a three-node cluster, 8 s at a
# time; the leader is stopped (SIGSTOP) for 4 s, and client B, given the
# other two nodes only, takes and gives back the name meanwhile, from the
# next leader (whose first entry ended A's session). By both clients' own
# records on one clock, A's hold ends - the library reports it lost - before
# B's first grant arrives, and every token of B is above A's. Without a
# lease A's session was its connection, which a paused leader keeps open:
# A believed it held the name for the whole pause while B held it too.
# Then a client stopped while its grant comes refuses it (below).
. "$top_srcdir/tests/lib.sh"
t_watchdog 90
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS
LOAD=$top_builddir/tests/cluster/cluster_load

t_cluster3 15 || exit 1
for i in 1 2 3; do
	t_cluster_node "$i" --bootstrap "$BOOT" || { echo "node $i did not start"; exit 1; }
done
ok "a leader is elected" t_wait_for 10 t_cluster_has_leader
L=$(t_cluster_field leader_id)
case "$L" in 1|2|3) ;; *) echo "no leader id: $L"; exit 1 ;; esac
lp=$(eval "echo \$N$L")
OTHERS=$(echo "$ADDRS" | tr ',' '\n' | grep -v ":$((base + 10 + L))\$" | paste -sd, -)
held() { "$SEMCTL" -s "$ADDRS" --json info ph/0 2>/dev/null | grep -q '"holders":\[{'; }

"$LOAD" -s "$ADDRS" -t 1 -n 1 -l 1 -L 0 -H 8000 -d 10 -q 0 -p ph -o "$T/a.rec" \
	>"$T/a.out" 2>"$T/a.err" &
a=$!
PIDS_TO_KILL="$PIDS_TO_KILL $a"
ok "client A holds the name" t_wait_for 10 held
kill -STOP "$lp"
read -r stop _ </proc/uptime
"$LOAD" -s "$OTHERS" -t 1 -n 1 -l 1 -L 0 -H 20 -d 4 -q 0 -p ph -o "$T/b.rec" \
	>"$T/b.out" 2>"$T/b.err"
rc_b=$?
kill -CONT "$lp"
wait "$a"
rc_a=$?
expect_eq "client A's own checks" 0 "$rc_a"
expect_eq "client B's own checks (and a grant while the leader was stopped)" 0 "$rc_b"
# Every hold of A against every hold of B (seconds on the clients' clock
# from the stop): no overlap, and B's tokens above A's.
check() {
	awk -v stop="$stop" '
	FNR == 1 { f++ }
	$1 != "hold" { next }
	f == 1 { na++; as[na] = $8; ae[na] = $9; at[na] = $4; al[na] = $10; next }
	{ nb++; bs[nb] = $8; be[nb] = $9; bt[nb] = $4 }
	END {
		bad = 0
		for (i = 1; i <= na; i++)
			for (j = 1; j <= nb; j++) {
				if (as[i] < be[j] && bs[j] < ae[i]) {
					printf "# overlap: A token %s [%.3f, %.3f] %s, B token %s [%.3f, %.3f] s\n",
					    at[i], as[i] / 1e6 - stop, ae[i] / 1e6 - stop,
					    al[i] ? "(reported lost)" : "", bt[j], bs[j] / 1e6 - stop,
					    be[j] / 1e6 - stop
					bad++
				}
				if (bt[j] <= at[i] && bs[j] > ae[i]) {
					printf "# B token %s not above A token %s\n", bt[j], at[i]
					bad++
				}
			}
		if (na > 0 && nb > 0)
			printf "# after the stop: A held until %.3f s, B first granted at %.3f s\n",
			    ae[1] / 1e6 - stop, bs[1] / 1e6 - stop
		exit bad != 0 || na == 0 || nb == 0
	}' "$T/a.rec" "$T/b.rec"
}
ok "A's hold ended before B was granted; B's tokens are above A's" check
[ "$t_failed" = 0 ] || { cat "$T/a.out" "$T/a.err" "$T/b.out" "$T/b.err"; }

# The other side of the guard: a grant that reaches a client without a
# lease later than the election timeout after its down was sent is void
# (its leader may have been deposed meanwhile). Client D waits for a name C
# holds 2 s, and is stopped for 3 s: the grant comes while it is stopped.
# D refuses it (semctl exits 5, hold lost, its command never runs), and
# its session's end gives the permit back.
ok "a leader" t_wait_for 15 t_cluster_has_leader
"$SEMCTL" -s "$ADDRS" run --lease 0 ph/v -- sleep 2 &
c=$!
vheld() { "$SEMCTL" -s "$ADDRS" --json info ph/v 2>/dev/null | grep -q '"holders":\[{'; }
ok "client C holds ph/v" t_wait_for 10 vheld
"$SEMCTL" -s "$ADDRS" run --lease 0 ph/v -- touch "$T/ran" 2>"$T/d.err" &
d=$!
vwaits() { "$SEMCTL" -s "$ADDRS" --json info ph/v 2>/dev/null | grep -q '"waiters_total":1'; }
ok "client D waits" t_wait_for 10 vwaits
kill -STOP "$d"
sleep 3
kill -CONT "$d"
wait "$d"
expect_eq "client D refuses the late grant (hold lost)" 5 "$?"
ok "... its command did not run" test ! -e "$T/ran"
wait "$c"
vfree() { ! "$SEMCTL" -s "$ADDRS" --json info ph/v 2>/dev/null | grep -q '"holders":\[{'; }
ok "... and the permit came back" t_wait_for 10 vfree
t_done
