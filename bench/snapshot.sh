#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/snapshot.sh - what a snapshot of many names costs a durable semd:
# its size, the time the state is locked to write it (the daemon logs it),
# the time a restart takes to load it, and the latency clients see while
# snapshots happen.
#
#   1. a semd --data-dir with NAMES names (semd-benchmark -t names
#      --keep-names), then D seconds of down-up at 16x1 over UNIX: the
#      snapshots taken in the window (size, ms under the lock) and the
#      op latency (p50, p99, p99.9, max);
#   2. the same down-up window on a semd --data-dir with no names (the
#      baseline: snapshots of a few KB);
#   3. a restart of the first semd: the time from exec to ready (the
#      snapshot read and restored, the log after it replayed), and the
#      data directory's size.
#
# Usage: bench/snapshot.sh   (from a build directory, or set top_builddir)
# Knobs: NAMES (1000000), D (30 s), EVERY (snapshot-every, default semd's),
#        DIR (where the data directories go: a disk, not tmpfs; default
#        /var/tmp), SEMD, BENCH.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
NAMES=${NAMES:-1000000}
D=${D:-30}
DIR=${DIR:-/var/tmp}
bench_init snapshot "$DIR"

now_ms() { date +%s%3N; }
# start NAME: a durable semd on $T/NAME.sock with its data in $T/NAME.data;
# START_MS: the milliseconds it took to be ready.
start() {
	local t0
	rm -f "$T/$1.ready"
	t0=$(now_ms)
	# shellcheck disable=SC2086
	"$SEMD" --listen "unix:$T/$1.sock" --data-dir "$T/$1.data" \
		--max-semaphores $((NAMES * 2 + 1000)) ${EVERY:+--snapshot-every "$EVERY"} \
		--ready-file "$T/$1.ready" >>"$T/$1.log" 2>&1 &
	PIDS+=($!)
	eval "${1}_PID=$!"
	wait_ready "$!" "$T/$1.ready" 300 && { START_MS=$(($(now_ms) - t0)); return 0; }
	echo "snapshot: semd $1 did not come up" >&2
	cat "$T/$1.log" >&2
	return 1
}
stop() { local p; p=$(eval echo "\$${1}_PID"); kill -TERM "$p"; wait "$p" 2>/dev/null || true; }
lat() { sed -n "s/.*\"latency_us\": {[^}]*\"$1\": \([0-9.]*\).*/\1/p" <<<"$2"; }
top() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" <<<"$2"; }
# snaps LOG FROM: the snapshot lines logged after line FROM: count, bytes, ms
snaps() {
	tail -n +"$(($2 + 1))" "$1" | sed -n 's/.*log: snapshot of \([0-9]*\) bytes taken in \([0-9]*\) ms.*/\1 \2/p' |
		awk '{ n++; b = $1; if ($2 > m) m = $2; s += $2 } END {
			if (n) printf "%d snapshots of %.1f MB, %.0f ms average, %d ms max under the lock", n, b / 1e6, s / n, m;
			else printf "no snapshot" }'
}
window() { # NAME: down-up 16x1 for D s over its socket; prints the JSON line
	"$BENCH" -s "unix:$T/$1.sock" -t down-up -c 16 -P 1 -d "$D" --json | grep '"test"'
}
row() { # LABEL JSON SNAPS
	printf '%-22s %9s %8s %8s %9s %9s  %s\n' "$1" "$(top ops_per_sec "$2")" "$(lat p50 "$2")" \
		"$(lat p99 "$2")" "$(lat p999 "$2")" "$(lat max "$2")" "$3"
}

echo "# bench/snapshot.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(hostname) cpus=$(nproc) names=$NAMES D=${D}s dir=$DIR ($(df -T "$DIR" | awk 'NR == 2 { print $2 }'))"
start big
t0=$(now_ms)
load=$("$BENCH" -s "unix:$T/big.sock" -t names --names "$NAMES" --keep-names -c 16 -P 16 --json | grep '"test"')
echo "# created $NAMES names in $(( ($(now_ms) - t0) / 1000 )) s ($(top ops_per_sec "$load") creates/s): $(snaps "$T/big.log" 0)"
start small

printf '%-22s %9s %8s %8s %9s %9s  %s\n' "down-up 16x1 unix" "op/s" p50_us p99_us p99.9_us max_us "snapshots in the window"
from=$(wc -l <"$T/big.log")
big=$(window big)
big_snaps=$(snaps "$T/big.log" "$from")
from=$(wc -l <"$T/small.log")
small=$(window small)
small_snaps=$(snaps "$T/small.log" "$from")
row "no names" "$small" "$small_snaps"
row "$NAMES names" "$big" "$big_snaps"

stop big
size=$(du -sm "$T/big.data" | cut -f1)
snapfile=$(ls -S "$T/big.data" | grep -E '^snapshot-[0-9-]+$' | head -1 || true)
start big
echo "# restart with $NAMES names: ready in $START_MS ms; data directory $size MB (newest snapshot file ${snapfile:-none}: $( [ -n "$snapfile" ] && du -m "$T/big.data/$snapfile" | cut -f1) MB)"
stop big
stop small
