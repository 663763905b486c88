#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# semd-benchmark end to end: every test against a private semd, over UNIX and
# TCP, briefly; the JSON must show completed operations and sane latencies,
# the names test must find the daemon's memory counter, and bad addresses
# and options must fail clearly.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
BENCH=$top_builddir/semd-benchmark

start_semd d || exit 1

# field NAME FILE: the first number after "NAME": in the JSON
field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "$2" | head -n 1; }
positive() { awk -v v="$1" 'BEGIN { exit !(v > 0) }'; }

for test in ping down-up trydown-up contended handoff churn; do
	out=$T/$test.json
	ok "$test over unix runs" "$BENCH" -s "$d_UNIX" -t "$test" -c 4 -P 2 -d 0.3 \
		--warmup 0.1 --threads 2 --json >"$out" 2>"$T/$test.err"
	[ -s "$T/$test.err" ] && cat "$T/$test.err"
	ops=$(field ops "$out")
	ok "$test completed operations ($ops)" positive "${ops:-0}"
	p50=$(field p50 "$out"); max=$(field max "$out")
	ok "$test latency p50 $p50 <= max $max" awk -v a="${p50:-0}" -v b="${max:-0}" 'BEGIN { exit !(a > 0 && a <= b) }'
done

# the daemon counted the grants the tool counted (plus at most the ops still
# in flight when the window closed: 4 connections x 2)
out=$T/down-up.json
cg=$(field client_grants "$out"); sg=$(field server_grants "$out")
ok "server grants $sg = client grants $cg + in flight" \
	awk -v c="${cg:-0}" -v s="${sg:-0}" 'BEGIN { exit !(c > 0 && s >= c && s - c <= 8) }'
expect_eq "the daemon counted no errors" 0 "$(field server_errors "$out")"

out=$T/tcp.json
ok "down-up over tcp runs" "$BENCH" -s "$d_TCP" -t down-up -c 2 -P 4 -d 0.3 --warmup 0.1 --json >"$out"
ok "down-up over tcp completed operations" positive "$(field ops "$out")"

out=$T/contended.json
ok "contended with limit 2 runs" "$BENCH" -s "$d_UNIX" -t contended -c 4 --limit 2 -d 0.3 \
	--warmup 0.1 --json >"$out"
ok "contended reports fairness" grep -q '"fairness_max_over_min": [0-9]' "$out"
expect_eq "contended reports its limit" 2 "$(field limit "$out")"

# handoff on a name with fair shares: N + 1 connections, downs of groups
# g0..gN-1 (the daemon refuses a group on a name without shares, and
# priorities on one with them: a failed run would show either)
out=$T/share.json
ok "handoff with 4 groups runs" "$BENCH" -s "$d_UNIX" -t handoff --groups 4 -d 1 \
	--warmup 0.1 --threads 2 --json >"$out"
ok "handoff with groups completed hand-offs" positive "$(field ops "$out")"
expect_eq "handoff with 4 groups has 5 connections" 5 "$(field conns "$out")"
expect_eq "handoff reports its groups" 4 "$(field groups "$out")"
expect_eq "handoff with groups: no server errors" 0 "$(field server_errors "$out")"
out=$T/prio.json
ok "handoff with priorities runs" "$BENCH" -s "$d_UNIX" -t handoff --priority -c 17 -d 0.3 \
	--warmup 0.1 --threads 2 --json >"$out"
ok "handoff with priorities completed hand-offs" positive "$(field ops "$out")"
ok "handoff says it used priorities" grep -q '"priority": true' "$out"

out=$T/names.json
ok "names runs" "$BENCH" -s "$d_UNIX" -t names --names 2000 -c 2 -P 8 --json >"$out"
expect_eq "names created every name" 2000 "$(field ops "$out")"
ok "names reports bytes per name" positive "$(field bytes_per_name "$out")"

# the table form has a header and one row per test
"$BENCH" -s "$d_UNIX" -t ping,down-up -c 2 -d 0.2 --warmup 0 >"$T/table" 2>&1
ok "table has a header" grep -q '^test .*ops/s.*p50_us.*p99_us.*p99.9_us.*max_us' "$T/table"
expect_eq "table has two rows" 2 "$(grep -c '^\(ping\|down-up\) ' "$T/table")"

# errors
"$BENCH" -s tls:127.0.0.1:1 --tls-ca "$T/nonexistent.pem" -t ping >/dev/null 2>"$T/tls.err"
expect_eq "a missing CA file exits 2" 2 $?
ok "a missing CA file is named" grep -q "nonexistent.pem" "$T/tls.err"
"$BENCH" -s udp:127.0.0.1:1 -t ping >/dev/null 2>"$T/addr.err"
expect_eq "a bad address exits 2" 2 $?
ok "a bad address says what is expected" grep -q "unix:PATH, tcp:HOST:PORT, tls:HOST:PORT, http:HOST:PORT or http+unix:PATH" "$T/addr.err"
"$BENCH" -s "$d_UNIX" -t nosuchtest >/dev/null 2>"$T/bad.err"
expect_eq "unknown test exits 2" 2 $?
"$BENCH" -s "$d_UNIX" -t handoff --groups 2 --priority >/dev/null 2>"$T/bad.err"
expect_eq "--groups with --priority exits 2" 2 $?
ok "--groups with --priority says why" grep -q "no priorities" "$T/bad.err"
"$BENCH" -s "$d_UNIX" -t handoff --groups 0 >/dev/null 2>"$T/bad.err"
expect_eq "--groups 0 exits 2" 2 $?
"$BENCH" -s "unix:$T/nobody.sock" -t ping -d 0.1 >/dev/null 2>"$T/conn.err"
expect_eq "no server exits 1" 1 $?
ok "no server says connect" grep -q "connect" "$T/conn.err"

# the daemon is still serving after all of it
ok "daemon still alive" kill -0 "$d_PID"
t_done
