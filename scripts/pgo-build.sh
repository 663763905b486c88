#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/pgo-build.sh [BUILDDIR] [CONFIGURE-ARGS...]: build semd with GCC's
# profile-guided optimization, out of tree in BUILDDIR (default build/pgo).
#  1. configure and build with -fprofile-generate (the profile goes to
#     BUILDDIR/pgo-data);
#  2. train (scripts/pgo-train.sh): a private semd on a UNIX socket and on
#     TCP (127.0.0.1, a free port), and semd-benchmark's standard tests
#     (ping, down-up, trydown-up, contended, churn, names, info) at 1 and 16
#     connections, 1 and 16 in flight, and a hand-off, 1 s each; then semd
#     stops (SIGTERM: its profile is written at exit);
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

[ -x configure ] || ./autogen.sh >/dev/null
cd "$B"
rm -rf "$PROF"
echo "pgo: 1. an instrumented build in $B"
"$TOP/configure" -q "$@" CFLAGS="-g -O3 -fprofile-generate -fprofile-update=prefer-atomic -fprofile-dir=$PROF"
make -s clean
make -s -j"$JOBS" semd semd-benchmark

echo "pgo: 2. training"
"$TOP/scripts/pgo-train.sh" "$B"
ls "$PROF"/*.gcda >/dev/null 2>&1 || { echo "pgo: no profile written in $PROF" >&2; exit 1; }

echo "pgo: 3. the optimized build"
rm -f "$PROF"/*conftest*	# configure's own test programs ran too
"$TOP/configure" -q "$@" CFLAGS="-g -O3 -fprofile-use -fprofile-partial-training -Wno-missing-profile -fprofile-dir=$PROF"
make -s clean
make -s -j"$JOBS"
echo "pgo: built $B/semd"
