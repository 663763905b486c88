#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The log's disk work in the metrics (--data-dir): every append is timed
# (semd_log_append_seconds counts the writes, a valid histogram), and the
# snapshots written are counted (semd_snapshots_total, with
# --snapshot-every 64), none failed (semd_snapshot_failures_total); in
# memory there is no log and none of these. tests/cluster/test_port
# has the failures and the timing of single calls.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }

# sample ADDR NAME: NAME's value on the metrics page at ADDR.
sample() {
	python3 -c 'import sys, urllib.request
for l in urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=5).read().decode().splitlines():
    if l.split(" ")[0] == sys.argv[2]: print(l.split(" ")[1])' "$1" "$2"
}
# at_least NAME N: daemon d's NAME is N or more.
at_least() { v=$(sample "$M" "$1") && [ -n "$v" ] && [ "$v" -ge "$2" ]; }
# ops N: N down and up pairs on one connection, one request at a time
# (each an entry of the log).
ops() {
	cnt=$1; n=0; set --
	while [ $n -lt "$cnt" ]; do set -- "$@" "down d/x" "up d/x"; n=$((n + 1)); done
	"$PROBE" "$d_UNIX" hello "$@" >"$T/ops.out" 2>&1
}

start_semd d --data-dir "$T/d.data" --snapshot-every 64 \
	--metrics-listen tcp:127.0.0.1:0 || exit 1
M=$(sed -n 's/^metrics://p' "$T/d.ready")
a0=$(sample "$M" semd_log_append_seconds_count)
ok "the appends of the start are counted ($a0)" test "$a0" -ge 1
expect_eq "no snapshot yet" 0 "$(sample "$M" semd_snapshots_total)"
ops 100
ok "200 downs and ups served" test "$(grep -c '^reply id=.* code=OK' "$T/ops.out")" -gt 200
ok "semd_log_append_seconds counts their appends (at least one each)" \
	t_wait_secs 5 at_least semd_log_append_seconds_count $((a0 + 200))
ok "the +Inf bucket is the count" test "$(sample "$M" 'semd_log_append_seconds_bucket{le="+Inf"}')" = \
	"$(sample "$M" semd_log_append_seconds_count)"
ok "the sum is some time and under a minute" awk -v s="$(sample "$M" semd_log_append_seconds_sum)" \
	'BEGIN { exit !(s > 0 && s < 60) }'
ok "snapshot-every 64: snapshots are written and counted" \
	t_wait_secs 10 at_least semd_snapshots_total 2
# as_logged: as many snapshots counted as the log says were taken.
as_logged() {
	[ "$(sample "$M" semd_snapshots_total)" = "$(grep -c 'log: snapshot of .* taken' "$T/d.log")" ]
}
ok "... as many as the log says it took" t_wait_secs 10 as_logged
expect_eq "none failed" 0 "$(sample "$M" semd_snapshot_failures_total)"

start_semd m --metrics-listen tcp:127.0.0.1:0 || exit 1
M=$(sed -n 's/^metrics://p' "$T/m.ready")
expect_eq "in memory: no log families" "" \
	"$(sample "$M" semd_snapshots_total)$(sample "$M" semd_log_append_seconds_count)"
t_done
