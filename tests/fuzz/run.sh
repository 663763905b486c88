#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/fuzz/run.sh BUILD_DIR SECONDS - build every libFuzzer target with
# clang (-fsanitize=fuzzer,address,undefined) in BUILD_DIR and run each for
# SECONDS from the seed corpus in tests/fuzz/corpus/<target>/, JOBS (default
# 2) of them at once. Exits non-zero
# when a target crashes, leaks, hits undefined behaviour or does not build;
# the input that did it is kept in BUILD_DIR/artifacts/.
#
# The tree's libraries are built by a clang configure of their own in
# BUILD_DIR (instrumented with -fsanitize=fuzzer-no-link), so the targets
# link the same objects the daemon is made of.
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 BUILD_DIR SECONDS" >&2
	exit 2
fi
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$1
SECONDS_EACH=$2
CC=${FUZZ_CC:-clang}
JOBS=${JOBS:-2}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)

command -v "$CC" >/dev/null || { echo "fuzz: $CC not found (apt-get install clang)" >&2; exit 1; }
[ -x "$TOP/configure" ] || (cd "$TOP" && ./autogen.sh)

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
if [ ! -f "$BUILD/Makefile" ]; then
	(cd "$BUILD" && "$TOP/configure" -q CC="$CC" --without-systemd \
		CFLAGS="$SAN -fsanitize=fuzzer-no-link")
fi

# target name -> the libraries it needs, in link order (paths under BUILD)
declare -A LIBS
LIBS[fuzz_frame]="proto/libsemproto.a"
LIBS[fuzz_dispatch]="daemon/state/libsemstate.a core/libsemcore.a proto/libsemproto.a"
LIBS[fuzz_entry]="daemon/state/libsemstate.a core/libsemcore.a proto/libsemproto.a"
LIBS[fuzz_snap]="daemon/state/libsemstate.a core/libsemcore.a proto/libsemproto.a"
LIBS[fuzz_http_json]="daemon/http/libsemhttp.a proto/libsemproto.a"
LIBS[fuzz_http_parse]="daemon/http/libsemhttp.a"
LIBS[fuzz_peer]="daemon/log/libsemlog.a daemon/state/libsemstate.a core/libsemcore.a proto/libsemproto.a"
# target name -> more it needs: sources of the tree, system libraries
declare -A MORE
MORE[fuzz_peer]="$TOP/daemon/logging.c $(pkg-config --libs raft libuv)"

# The generated protobuf sources first (BUILT_SOURCES, which only "make all"
# makes first): the libraries include them.
make -s -C "$BUILD" proto/semd.pb-c.h proto/semd.pb-c.c
# shellcheck disable=SC2046
make -s -C "$BUILD" -j"$JOBS" $(printf '%s\n' ${LIBS[*]} | sort -u)

PROTOBUF=$(pkg-config --cflags --libs libprotobuf-c jansson)
failed=0
summary=()
mkdir -p "$BUILD/artifacts"
targets=()
for t in $(printf '%s\n' "${!LIBS[@]}" | sort); do
	libs=""
	for lib in ${LIBS[$t]}; do
		[ -f "$BUILD/$lib" ] && libs="$libs $BUILD/$lib"
	done
	echo "=== fuzz: building $t"
	# shellcheck disable=SC2086
	if ! "$CC" $SAN -fsanitize=fuzzer -std=c11 -D_GNU_SOURCE -I"$TOP" -I"$BUILD" \
		-o "$BUILD/$t" "$TOP/tests/fuzz/$t.c" $libs ${MORE[$t]:-} $PROTOBUF -lpthread; then
		summary+=("$t: BUILD FAILED"); failed=1; continue
	fi
	targets+=("$t")
done

# fuzz_one TARGET: run it for SECONDS_EACH; its verdict in BUILD/TARGET.result.
fuzz_one() {
	local t=$1 work=$BUILD/corpus/$1 runs
	mkdir -p "$work"
	if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$BUILD/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
		-max_len=4096 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" \
		"$work" "$TOP/tests/fuzz/corpus/$t" >"$BUILD/$t.log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$BUILD/$t.log")
		echo "$t: ok (${runs:-?} runs, corpus $(ls "$work" | wc -l) files)" >"$BUILD/$t.result"
	else
		echo "$t: FAILED (see $BUILD/$t.log and $BUILD/artifacts/)" >"$BUILD/$t.result"
	fi
}

# The targets are independent and each keeps one core busy: JOBS at a time,
# each still for SECONDS_EACH.
running=0
for t in "${targets[@]}"; do
	if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
	echo "=== fuzz: running $t for ${SECONDS_EACH}s"
	rm -f "$BUILD/$t.result"
	fuzz_one "$t" &
	running=$((running + 1))
done
wait
for t in "${targets[@]}"; do
	r=$(cat "$BUILD/$t.result" 2>/dev/null || echo "$t: FAILED (no verdict)")
	case $r in *FAILED*) tail -n 40 "$BUILD/$t.log"; failed=1 ;; esac
	summary+=("$r")
done
echo "=== fuzz summary"
printf '%s\n' "${summary[@]}"
exit $failed
