#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/suite.sh - `make bench`: start a private semd (UNIX socket in a temp
# dir, TCP on 127.0.0.1 port 0, --ready-file), run semd-benchmark's standard
# suite against it, and print one table. Short by default; knobs:
#   D (seconds per test, 2), WARM (warm-up, 0.3), NAMES (100000),
#   THREADS (semd-benchmark threads, default one per core), SEMD, BENCH.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init suite
D=${D:-2}
WARM=${WARM:-0.3}
NAMES=${NAMES:-100000}
THREADS=${THREADS:-$(nproc)}

"$SEMD" --listen "unix:$T/semd.sock" --listen tcp:127.0.0.1:0 --acl "anonymous * all" \
	--ready-file "$T/ready" >"$T/semd.log" 2>&1 &
SEMD_PID=$!
PIDS+=("$SEMD_PID")
wait_ready "$SEMD_PID" "$T/ready" 10 ||
	{ echo "suite: semd did not become ready" >&2; cat "$T/semd.log" >&2; exit 1; }
UNIX=$(grep -m1 '^unix:' "$T/ready")
TCP=$(grep -m1 '^tcp:' "$T/ready")

# json FIELD LINE: a number or string field of one result line (the last one
# of that name: pick the object first with obj)
json() { sed -n "s/.*\"$1\": \"*\([^,\"}]*\).*/\1/p" <<<"$2"; }
# obj NAME LINE: the inside of the object NAME of one result line
obj() { sed -n "s/.*\"$1\": {\([^}]*\)}.*/\1/p" <<<"$2"; }

printf '# semd-benchmark suite %s, %s s per test (+%s s warm-up), %s client threads, %s cpus\n' \
	"$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$D" "$WARM" "$THREADS" "$(nproc)"
printf '# ops/s: one op = the round trips in column rt; latency per op in microseconds\n'
printf '%-5s %-11s %5s %3s %11s %3s %9s %9s %9s %9s  %s\n' \
	tr test C P ops/s rt p50 p99 p99.9 max notes
failed=0
# the daemon's peak resident memory in kB (VmHWM: the names test deletes its
# names at the end, and freed memory may go back), and its growth per name
rss_kb() { sed -n "s/^$1:[^0-9]*\([0-9]*\).*/\1/p" "/proc/$SEMD_PID/status" 2>/dev/null; }
RSS0=$(rss_kb VmRSS)
rss_per_name() { awk -v a="${RSS0:-0}" -v b="$(rss_kb VmHWM)" -v n="$1" 'BEGIN { if (n > 0 && b > 0) printf "%.0f", (b - a) * 1024 / n; else printf "?" }'; }
row() { # transport address test C P [extra args]
	local tr=$1 addr=$2 test=$3 c=$4 p=$5 out line notes
	shift 5
	if ! out=$("$BENCH" -s "$addr" -t "$test" -c "$c" -P "$p" -d "$D" --warmup "$WARM" \
			--threads "$THREADS" --json "$@" 2>"$T/err"); then
		printf '%-5s %-11s %5s %3s  FAILED: %s\n' "$tr" "$test" "$c" "$p" "$(tr '\n' ' ' <"$T/err")"
		failed=1
		return 0
	fi
	line=$(grep '"test"' <<<"$out")
	lat=$(obj latency_us "$line")
	notes=""
	case $test in
	contended) notes="limit=$(json limit "$line") wait_us p50=$(json p50 "$(obj wait_us "$line")") p99=$(json p99 "$(obj wait_us "$line")") fairness(max/min)=$(json fairness_max_over_min "$line")" ;;
	handoff) notes="up -> next waiter's grant (rt: not round trips)" ;;
	names) notes="$(json names "$line") names, $(json deletes_per_sec "$line") deletes/s, $(json bytes_per_name "$line") bytes/name ($(json memory_counter "$line")), peak RSS growth $(rss_per_name "$(json names "$line")") bytes/name" ;;
	trydown-up) notes="refused=$(json refused "$line")" ;;
	esac
	printf '%-5s %-11s %5s %3s %11s %3s %9s %9s %9s %9s  %s\n' "$tr" "$test" \
		"$(json conns "$line")" "$(json pipeline "$line")" "$(json ops_per_sec "$line")" \
		"$(json round_trips_per_op "$line")" "$(json p50 "$lat")" "$(json p99 "$lat")" \
		"$(json p999 "$lat")" "$(json max "$lat")" "$notes"
}
row unix "$UNIX" ping 16 1
row unix "$UNIX" down-up 16 1
row tcp "$TCP" down-up 16 1
row unix "$UNIX" down-up 16 16
row unix "$UNIX" down-up 1 1
row unix "$UNIX" trydown-up 16 1
row unix "$UNIX" contended 16 1 --limit 4
row unix "$UNIX" handoff 2 1
row unix "$UNIX" churn 16 1
row unix "$UNIX" names 16 16 --names "$NAMES"
exit $failed
