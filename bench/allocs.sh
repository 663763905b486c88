#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/allocs.sh - heap allocations semd makes per request, measured from
# outside: semd runs under valgrind (which counts every malloc), semd-benchmark
# drives it for a short and a longer time, and the difference in allocations
# over the difference in round trips is the steady-state cost (start-up,
# connections and shutdown cancel out).
#   bench/allocs.sh [TEST...]     (default: ping down-up contended), from a
#   build directory or with top_builddir set. Knobs: C (connections, 4),
#   D1/D2 (the two durations, 1 and 3 s), SEMD, BENCH.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
C=${C:-4}
D1=${D1:-1}
D2=${D2:-3}
tests=${*:-ping down-up contended}

command -v valgrind >/dev/null || { echo "allocs: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
bench_init allocs

measure() { # test seconds -> "round_trips allocs"
	rm -f "$T/s.sock" "$T/ready"
	valgrind --tool=memcheck --leak-check=no "$SEMD" --listen "unix:$T/s.sock" \
		--ready-file "$T/ready" --log-level warning >"$T/vg.log" 2>&1 &
	VP=$!
	PIDS=("$VP")
	wait_ready "$VP" "$T/ready" 30 ||
		{ echo "allocs: semd under valgrind did not start" >&2; cat "$T/vg.log" >&2; exit 1; }
	rts=$("$BENCH" -s "unix:$T/s.sock" -t "$1" -c "$C" -d "$2" --warmup 0 --threads 1 --json |
		sed -n 's/.*"round_trips": \([0-9]*\).*/\1/p')
	kill -TERM "$VP"
	wait "$VP" || true
	PIDS=()
	allocs=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' "$T/vg.log" | tr -d ,)
	echo "${rts:-0} ${allocs:-0}"
}

printf '# heap allocations per request in semd (valgrind), %s connections, %ss vs %ss\n' "$C" "$D1" "$D2"
printf '%-11s %12s %12s %14s\n' test "round trips" allocations "allocs/request"
for t in $tests; do
	read -r r1 a1 <<<"$(measure "$t" "$D1")"
	read -r r2 a2 <<<"$(measure "$t" "$D2")"
	printf '%-11s %12s %12s %14s\n' "$t" "$((r2 - r1))" "$((a2 - a1))" \
		"$(awk -v a=$((a2 - a1)) -v r=$((r2 - r1)) 'BEGIN { if (r > 0) printf "%.2f", a / r; else printf "-" }')"
done
