#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# No heap allocation per down/up on an existing name: in an
# --enable-alloc-count build Stats reports "allocations" (every malloc,
# calloc and realloc of semd, libevent and protobuf-c); after a warm-up,
# 1,000 down/up pairs on one connection must not add a single one, over
# UNIX and over TCP; nor on an auto-created name (made by each down, freed
# by each up). Skipped (77) in builds that do not count.
. "$top_srcdir/tests/lib.sh"
PROBE=$top_builddir/tests/daemon/semd_probe
N=1000
t_watchdog 120
start_semd d || exit 1

if ! $PROBE "$d_UNIX" hello stats | grep -q ' allocations='; then
	echo "# not an --enable-alloc-count build: skipped"
	exit 77
fi

for ADDR in "$d_UNIX" "$d_TCP"; do
	k=$(echo "$ADDR" | cut -d: -f1)
	set -- hello "create perf-$k 1000000"
	i=0
	while [ $i -lt 50 ]; do set -- "$@" "down perf-$k timeout=5000" "up perf-$k"; i=$((i + 1)); done
	# The first Stats grows the reply buffer: measure from the second.
	set -- "$@" stats stats
	i=0
	while [ $i -lt $N ]; do set -- "$@" "down perf-$k timeout=5000" "up perf-$k"; i=$((i + 1)); done
	set -- "$@" stats
	$PROBE "$ADDR" "$@" >"$T/$k.out" 2>&1
	expect_eq "$k: $N down/up pairs answered" 0 "$?"
	grants=$(grep -c 'permit=' "$T/$k.out")
	expect_eq "$k: every down granted" $((N + 50)) "$grants"
	a=$(sed -n 's/.* allocations=\([0-9]*\).*/\1/p' "$T/$k.out" | sed -n 2p)
	b=$(sed -n 's/.* allocations=\([0-9]*\).*/\1/p' "$T/$k.out" | tail -1)
	echo "# $k: allocations before $a, after $b ($N down/up pairs)"
	expect_eq "$k: allocations per down/up on an existing name" 0 $((b - a))
done

set -- hello
i=0
while [ $i -lt 50 ]; do set -- "$@" "down auto-x" "up auto-x"; i=$((i + 1)); done
set -- "$@" stats stats
i=0
while [ $i -lt $N ]; do set -- "$@" "down auto-x" "up auto-x"; i=$((i + 1)); done
set -- "$@" stats
$PROBE "$d_UNIX" "$@" >"$T/auto.out" 2>&1
expect_eq "auto-created: $N down/up pairs answered" 0 "$?"
expect_eq "auto-created: every down granted" $((N + 50)) "$(grep -c 'permit=' "$T/auto.out")"
# Only the two names created above are left.
expect_eq "auto-created: the name is gone after each up" 2 \
	"$(sed -n 's/.* semaphores=\([0-9]*\).*/\1/p' "$T/auto.out" | tail -1)"
a=$(sed -n 's/.* allocations=\([0-9]*\).*/\1/p' "$T/auto.out" | sed -n 2p)
b=$(sed -n 's/.* allocations=\([0-9]*\).*/\1/p' "$T/auto.out" | tail -1)
echo "# auto-created: allocations before $a, after $b ($N down/up pairs)"
expect_eq "auto-created: allocations per down/up" 0 $((b - a))
t_done
