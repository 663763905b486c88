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

# bench_start NAME SECONDS ARGS...: a semd ($SEMD ARGS), its ready file, log
# and pid (NAME.pid) in $T, its pid added to PIDS, waited for SECONDS; if it
# does not come up, its log is shown and the script exits 1.
bench_start() {
	local n=$1 secs=$2
	shift 2
	"$SEMD" --ready-file "$T/$n.ready" "$@" >"$T/$n.log" 2>&1 &
	PIDS+=($!)
	echo $! >"$T/$n.pid"
	wait_ready $! "$T/$n.ready" "$secs" ||
		{ echo "$n did not start:" >&2; cat "$T/$n.log" >&2; exit 1; }
}

# bench_leader ADDR: the leader's client address, as the node at ADDR sees
# it (asked for 10 s at most; none: the script exits 1).
bench_leader() {
	local l= i
	for ((i = 0; i < 100; i++)); do
		l=$("$top_builddir/semctl" -s "$1" --json cluster status 2>/dev/null |
		    sed -n 's/.*"leader":"\([^"]*\)".*/\1/p')
		[ -z "$l" ] || break
		sleep 0.1
	done
	[ -n "$l" ] || { echo "the cluster at $1 elected no leader" >&2; exit 1; }
	echo "$l"
}
