#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# No heap allocation per down/up on an existing name: in an
# --enable-alloc-count build Stats reports "allocations" (every malloc,
# calloc and realloc of semd, libevent and protobuf-c); after a warm-up,
# 1,000 down/up pairs on one connection must not add a single one, over
# UNIX and over TCP; nor on an auto-created name (made by each down, freed
# by each up). Skipped (77) in builds that do not count.
. "$top_srcdir/tests/lib.sh"
N=1000
t_watchdog 120
start_semd d || exit 1

if ! $PROBE "$d_UNIX" hello stats | grep -q ' allocations='; then
	echo "# not an --enable-alloc-count build: skipped"
	exit 77
fi

# pairs LABEL ADDR DOWN UP NOTE [FIRST...]: hello, FIRST, 50 warm-up pairs of
# DOWN and UP, two stats (the first Stats grows the reply buffer: measure
# from the second), N measured pairs, stats; then the checks every run
# shares: all answered, every down granted, no allocation in between.
pairs() {
	label=$1 addr=$2 down=$3 up=$4 note=$5
	shift 5
	set -- hello "$@"
	i=0
	while [ $i -lt 50 ]; do set -- "$@" "$down" "$up"; i=$((i + 1)); done
	set -- "$@" stats stats
	i=0
	while [ $i -lt $N ]; do set -- "$@" "$down" "$up"; i=$((i + 1)); done
	set -- "$@" stats
	$PROBE "$addr" "$@" >"$T/$label.out" 2>&1
	expect_eq "$label: $N down/up pairs answered" 0 "$?"
	expect_eq "$label: every down granted" $((N + 50)) "$(grep -c 'permit=' "$T/$label.out")"
	a=$(sed -n 's/.* allocations=\([0-9]*\).*/\1/p' "$T/$label.out" | sed -n 2p)
	b=$(sed -n 's/.* allocations=\([0-9]*\).*/\1/p' "$T/$label.out" | tail -1)
	echo "# $label: allocations before $a, after $b ($N down/up pairs)"
	expect_eq "$label: allocations per down/up$note" 0 $((b - a))
}

for ADDR in "$d_UNIX" "$d_TCP"; do
	k=$(echo "$ADDR" | cut -d: -f1)
	pairs "$k" "$ADDR" "down perf-$k timeout=5000" "up perf-$k" \
		" on an existing name" "create perf-$k 1000000"
done
pairs auto-created "$d_UNIX" "down auto-x" "up auto-x" ""
# Only the two names created above are left.
expect_eq "auto-created: the name is gone after each up" 2 \
	"$(sed -n 's/.* semaphores=\([0-9]*\).*/\1/p' "$T/auto-created.out" | tail -1)"
t_done
