#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/pgo-build.sh [BUILDDIR] [CONFIGURE-ARGS...]: build semd with GCC's
# profile-guided optimization, out of tree in BUILDDIR (default build/pgo).
#  1. configure and build with -fprofile-generate (the profile goes to
#     BUILDDIR/pgo-data);
#  2. train: a private semd on a UNIX socket and on TCP (127.0.0.1, a free
#     port), and semd-benchmark's standard tests (ping, down-up, trydown-up,
#     contended, churn, names, info) at 1 and 16 connections, 1 and 16 in
#     flight, and a hand-off, 1 s each; then semd stops (SIGTERM: its
#     profile is written at exit);
#  3. make clean, configure again with -fprofile-use and build everything.
# The training is the operations users make, not one benchmark's mix. With
# GCC only (link-time optimization stays on); CFLAGS may not be given.
# PGO_TRAIN_S sets the seconds of each test (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=$PWD
B=${1:-$TOP/build/pgo}
[ $# -gt 0 ] && shift
mkdir -p "$B"
B=$(cd "$B" && pwd)
PROF=$B/pgo-data
JOBS=${JOBS:-$(nproc)}
TRAIN_S=${PGO_TRAIN_S:-1}
. "$TOP/bench/lib.sh"		# wait_ready

[ -x configure ] || ./autogen.sh >/dev/null
cd "$B"
rm -rf "$PROF"
echo "pgo: 1. an instrumented build in $B"
"$TOP/configure" -q "$@" CFLAGS="-g -O3 -fprofile-generate -fprofile-update=prefer-atomic -fprofile-dir=$PROF"
make -s clean
make -s -j"$JOBS" semd semd-benchmark

echo "pgo: 2. training"
T=$(mktemp -d /tmp/semd-pgo.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
train_failed() {
	echo "pgo: training failed:" >&2
	tail -20 "$T/train.log" >&2
	exit 1
}
"$B/semd" --listen "unix:$T/semd.sock" --listen tcp:127.0.0.1:0 \
	--acl 'anonymous * all' --ready-file "$T/ready" >"$T/semd.log" 2>&1 &
pid=$!
wait_ready "$pid" "$T/ready" 10 || { cat "$T/semd.log" >&2; exit 1; }
tcp=$(awk '/^tcp:/ { print; exit }' "$T/ready")
for addr in "unix:$T/semd.sock" "$tcp"; do
	for cp in "1 1" "16 1" "16 16"; do
		read -r c p <<<"$cp"
		"$B/semd-benchmark" -s "$addr" -c "$c" -P "$p" -d "$TRAIN_S" \
			--warmup 0 --names 5000 \
			-t ping,down-up,trydown-up,contended,churn,names,info \
			>>"$T/train.log" 2>&1 || train_failed
	done
	"$B/semd-benchmark" -s "$addr" -d "$TRAIN_S" --warmup 0 -t handoff \
		>>"$T/train.log" 2>&1 || train_failed
done
kill -TERM "$pid"
wait "$pid" || true
pid=
ls "$PROF"/*.gcda >/dev/null 2>&1 || { echo "pgo: no profile written in $PROF" >&2; exit 1; }

echo "pgo: 3. the optimized build"
rm -f "$PROF"/*conftest*	# configure's own test programs ran too
"$TOP/configure" -q "$@" CFLAGS="-g -O3 -fprofile-use -fprofile-partial-training -Wno-missing-profile -fprofile-dir=$PROF"
make -s clean
make -s -j"$JOBS"
echo "pgo: built $B/semd"
