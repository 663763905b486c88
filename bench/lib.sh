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

# bench_peers: the arguments by which a cluster node's peers prove who they
# are - a peer key in $T (made on the first call) - or none for a semd that
# predates them (a build of before, for a comparison).
bench_peers() {
	if "$SEMD" --help 2>&1 | grep -q -- --peer-key; then
		[ -f "$T/peer.key" ] || (umask 077 && head -c 32 /dev/urandom >"$T/peer.key")
		echo "--peer-key $T/peer.key"
	fi
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

# bench_anchors: ANCHORS, the anchors' bench directory (limit/, load/): as
# given, else ../shared/bench beside the checkout; none: exits 1 saying so.
bench_anchors() {
	local top
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	if [ -z "${ANCHORS:-}" ] && [ -d "$top/../shared/bench" ]; then
		ANCHORS=$(cd "$top/../shared/bench" && pwd)
	fi
	if [ -z "${ANCHORS:-}" ] || [ ! -f "$ANCHORS/limit/limitd.c" ] || [ ! -f "$ANCHORS/load/loadgen.c" ]; then
		echo "no anchors in '${ANCHORS:-}': set ANCHORS to their bench directory (limit/, load/)" >&2
		exit 1
	fi
}

# bench_loadgen DIR: the anchors' limitd and loadgen built in DIR from a
# copy of their sources (the shared folder stays read-only, nothing of it
# enters this tree), loadgen with our bench/drv_semd.c (its reserved
# drivers[] entry enabled by a sed on the copy; SEMD_DRV names another
# drv_semd.c, an older tree's, to compare drivers); LIMITD and LG are set.
bench_loadgen() {
	local top
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	bench_anchors
	cp -r "$ANCHORS/limit" "$ANCHORS/load" "$1/"
	chmod -R u+w "$1/limit" "$1/load"
	make -s -C "$1/limit" >/dev/null
	sed -i 's|^/\* *extern const struct lg_driver lg_drv_semd;.*|extern const struct lg_driver lg_drv_semd;|
s|^\( *\)/\* *&lg_drv_semd,.*|\1\&lg_drv_semd,|' "$1/load/loadgen.c"
	grep -q '^ *&lg_drv_semd,' "$1/load/loadgen.c" ||
		{ echo "cannot enable the semd driver in loadgen.c" >&2; exit 1; }
	${CC:-gcc} -O2 -Wall -Wextra -I"$1/load" -o "$1/load/loadgen" "$1/load/loadgen.c" \
		"$1/load/drv_echo.c" "$1/load/drv_redis.c" "${SEMD_DRV:-$top/bench/drv_semd.c}"
	# shellcheck disable=SC2034 # the caller's
	LIMITD=$1/limit/limitd LG=$1/load/loadgen
}

# bench_port_busy PORT: is something listening on 127.0.0.1:PORT?
bench_port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# bench_free_port: a TCP port of 127.0.0.1 nobody listens on (20000-49999).
bench_free_port() {
	local p i
	for ((i = 0; i < 50; i++)); do
		p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 30000 ))
		bench_port_busy "$p" || { echo "$p"; return 0; }
	done
	echo "no free port found" >&2
	return 1
}
