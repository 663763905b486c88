# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# bench/lib.sh - what the bench scripts (bash) share, and scripts/demo.sh its
# wait for a daemon. Source it:  . "$(dirname "$0")/lib.sh"

# bench_init NAME [DIR]: SEMD and BENCH from the build directory (top_builddir,
# default the current one; SEMD and BENCH override), both built or NAME says
# so and exits 1; T a private directory in DIR (default $TMPDIR or /tmp),
# removed at exit after every daemon in the array PIDS is stopped (SIGTERM,
# waited for).
bench_init() {
	local b
	: "${top_builddir:=$(pwd)}"
	SEMD=${SEMD:-$top_builddir/semd}
	BENCH=${BENCH:-$top_builddir/semd-benchmark}
	for b in "$SEMD" "$BENCH"; do
		[ -x "$b" ] || { echo "$1: $b not built (run make first)" >&2; exit 1; }
	done
	T=$(mktemp -d "${2:-${TMPDIR:-/tmp}}/semd-$1.XXXXXX")
	PIDS=()
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

bench_cleanup() {
	local p
	set +e
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$T"
}

# wait_ready PID FILE SECONDS: poll every 50 ms until the daemon PID has
# written its ready file FILE; fails when PID exits first or after SECONDS.
wait_ready() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		[ -s "$2" ] && return 0
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	[ -s "$2" ]
}
