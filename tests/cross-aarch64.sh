#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/cross-aarch64.sh BUILD_DIR - cross-build arch/, core/ and the core
# tests for aarch64 and run them under qemu-aarch64, three ways:
#   llsc     native asm as Debian's default compiler targets it (armv8-a:
#            ldaxr/stlxr loops)
#   generic  the portable C11 <stdatomic.h> header (-DSEMD_ARCH_GENERIC)
#   lse      native asm with ARMv8.1 LSE (casal/swpal/ldaddal), run with
#            qemu -cpu max
# No configure: the sources need only -D_GNU_SOURCE and -I<top>. Exits
# non-zero on any build or test failure.
# Needs: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: tests/cross-aarch64.sh BUILD_DIR}
CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
OBJDUMP=${CROSS_OBJDUMP:-aarch64-linux-gnu-objdump}
QEMU=${QEMU:-qemu-aarch64}
STRESS_SECONDS=${STRESS_SECONDS:-1}
TESTS="test_arch test_sema test_sema_threads test_model test_stress"

for tool in "$CC" "$OBJDUMP" "$QEMU"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "cross-aarch64: $tool not found:" \
		    "apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user" >&2
		exit 1
	fi
done

CFLAGS="-static -O2 -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
	-Wmissing-prototypes -Wno-unused-parameter -Wformat=2 -Wvla -D_GNU_SOURCE -I$top"

pass=0
fail=0
result() { # ok|FAIL what
	if [ "$1" = ok ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
	echo "$1: $2"
}

# variant name, expected SEMD_ARCH_NAME, extra CFLAGS, qemu flags,
# an instruction that must appear in the code, one that must not
run_variant() {
	local v=$1 name=$2 extra=$3 qflags=$4 must=$5 mustnot=$6 dir=$out/$1 t args log
	mkdir -p "$dir"
	echo "=== aarch64 $v ($name)"
	for t in $TESTS; do
		# shellcheck disable=SC2086
		if ! $CC $CFLAGS $extra -o "$dir/$t" "$top/tests/core/$t.c" \
		    "$top/core/semaphore.c" -lpthread 2>"$dir/$t.build.log"; then
			cat "$dir/$t.build.log"
			result FAIL "$v: build $t"
			return
		fi
	done
	# The right atomics were compiled in: look at two core functions
	# (libc's own code may use either kind, so not the whole binary).
	if [ -n "$must" ]; then
		"$OBJDUMP" -d --no-show-raw-insn "$dir/test_sema" | awk '
			/^[0-9a-f]+ <(sema_up_n|sema_task_signal)>:$/ { p = 1; print; next }
			/^[0-9a-f]+ </ { p = 0 }
			p' >"$dir/core.dis"
		if ! grep -qw "$must" "$dir/core.dis"; then
			result FAIL "$v: no $must in sema_up_n/sema_task_signal ($dir/core.dis)"
		elif grep -qwE "$mustnot" "$dir/core.dis"; then
			result FAIL "$v: unexpected $mustnot in sema_up_n/sema_task_signal ($dir/core.dis)"
		else
			result ok "$v: core code uses $must, not $mustnot"
		fi
	fi
	for t in $TESTS; do
		args=
		[ "$t" = test_stress ] && args="-s $STRESS_SECONDS"
		log=$dir/$t.log
		# shellcheck disable=SC2086
		if timeout 600 "$QEMU" $qflags "$dir/$t" $args >"$log" 2>&1; then
			if [ "$t" = test_arch ] && ! grep -qx "arch: $name" "$log"; then
				result FAIL "$v: $t ran with $(grep '^arch:' "$log"), expected $name"
			else
				result ok "$v: $t"
			fi
		else
			tail -n 30 "$log"
			result FAIL "$v: $t (see $log)"
		fi
	done
	# More threads than CPUs on one permit: every hand-off wakes a sleeper.
	log=$dir/stress-oversub.log
	# shellcheck disable=SC2086
	if timeout 600 "$QEMU" $qflags "$dir/test_stress" -t 8 -k 1 -s "$STRESS_SECONDS" >"$log" 2>&1; then
		result ok "$v: test_stress -t 8 -k 1"
	else
		tail -n 30 "$log"
		result FAIL "$v: test_stress -t 8 -k 1 (see $log)"
	fi
}

run_variant llsc aarch64-llsc "" "" ldaxr "casal|swpal|ldaddal|__aarch64_[a-z0-9_]+"
run_variant generic generic "-DSEMD_ARCH_GENERIC" "" "" ""
if "$QEMU" -cpu help 2>/dev/null | grep -qw max; then
	run_variant lse aarch64-lse "-march=armv8.1-a" "-cpu max" swpal "ldaxr|stlxr"
else
	echo "skip: $QEMU has no -cpu max, LSE variant not run"
fi

echo "cross-aarch64: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
