#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/http-compare.sh - semd's HTTP/JSON front door (doc/http.md) next to
# its binary protocol on the same daemon, etcd's JSON gateway and Redis' Lua
# semaphore, measured in one run with one client: the shared load generator
# (../shared/bench/load) with our drivers bench/drv_semd.c (binary) and
# bench/drv_semdhttp.c (HTTP/1.1 keep-alive, POST .../permits + DELETE
# .../permits/ID), built from a temp copy (the shared folder stays read-only).
# One op = acquire + release = two round trips; closed loop; C connections,
# one request at a time each (P = 1: HTTP/1.1 answers in turn, and etcd's
# gateway does not overlap pipelined requests either).
#   bin   = loadgen -d semd      on semd's tcp listener
#   http  = loadgen -d semdhttp  on semd's http listener (the same daemon)
#   redis = loadgen -d redis     (persistence off)
#   etcd  = loadgen -d etcd      1 node, its WAL fsynced on DDIR
# Cells C=1 and C=16, each REPS times interleaved, the median run shown.
# Then a granted acquire's own latency (semd-benchmark -t down-up --threads 1
# -c 1, acquire_us) over tcp and over http, in memory.
#
# Usage: bench/http-compare.sh   (from a build directory, or set top_builddir)
# Knobs: D (seconds per cell, 3), WARM (0.5), REPS (3), ANCHORS (the shared
#        bench dir), SEMD, BENCH, OUT (also save the table there), ETCD=0 (no
#        etcd column), DDIR (etcd's data dir: default /var/tmp when the temp
#        dir is a tmpfs).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$TOP/bench/lib.sh"
ANCHORS=${ANCHORS:-$(cd "$TOP/../shared/bench" 2>/dev/null && pwd || echo /work/shared/bench)}
D=${D:-3}
WARM=${WARM:-0.5}
REPS=${REPS:-3}
ETCD=${ETCD:-1}

[ -f "$ANCHORS/load/loadgen.c" ] || { echo "http-compare: no anchors in $ANCHORS (set ANCHORS)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "http-compare: need redis-server" >&2; exit 1; }
if [ "$ETCD" = 1 ] && ! command -v etcd >/dev/null; then
	echo "http-compare: etcd not installed (apt-get install etcd-server etcd-client): no etcd column" >&2
	ETCD=0
fi
bench_init httpcmp
EXTRA_RM=
trap 'bench_cleanup; [ -z "$EXTRA_RM" ] || rm -rf "$EXTRA_RM"' EXIT

cp -r "$ANCHORS/load" "$T/"
chmod -R u+w "$T/load"
sed -i 's|^/\* *extern const struct lg_driver lg_drv_semd;.*|extern const struct lg_driver lg_drv_semd;\nextern const struct lg_driver lg_drv_semdhttp;|
s|^\( *\)/\* *&lg_drv_semd,.*|\1\&lg_drv_semd, \&lg_drv_semdhttp,|' "$T/load/loadgen.c"
grep -q '^ *&lg_drv_semd, &lg_drv_semdhttp,' "$T/load/loadgen.c" ||
	{ echo "http-compare: cannot enable the semd drivers in loadgen.c" >&2; exit 1; }
${CC:-gcc} -O2 -Wall -Wextra -I"$T/load" -o "$T/load/loadgen" "$T/load/loadgen.c" \
	"$T/load/drv_echo.c" "$T/load/drv_redis.c" "$T/load/drv_etcd.c" \
	"$TOP/bench/drv_semd.c" "$TOP/bench/drv_semdhttp.c"
LG=$T/load/loadgen

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { # a port with the next one free too (etcd's peer port)
	local p
	for _ in $(seq 50); do
		p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 30000 ))
		port_busy "$p" || port_busy $((p + 1)) || { echo "$p"; return 0; }
	done
	echo "http-compare: no free port found" >&2
	return 1
}
REDIS_PORT=$(free_port)

declare -A PID
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --protected-mode no \
	--save "" --appendonly no --dir "$T" --logfile "$T/redis.log" \
	--daemonize no >/dev/null 2>&1 &
PIDS+=($!)
PID[redis]=$!
if [ "$ETCD" = 1 ]; then
	if [ -z "${DDIR:-}" ]; then
		DDIR=$T
		[ "$(stat -f -c %T "$T")" = tmpfs ] && DDIR=$(mktemp -d /var/tmp/semd-httpcmp.XXXXXX) &&
			EXTRA_RM=$DDIR
	fi
	ETCD_PORT=$(free_port)
	etcd --name n1 --data-dir "$DDIR/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
		--initial-cluster "n1=http://127.0.0.1:$((ETCD_PORT + 1))" --initial-cluster-state new \
		>"$T/etcd.log" 2>&1 &
	PIDS+=($!)
	PID[etcd]=$!
fi
bench_start semd 10 --listen tcp:127.0.0.1:0 --listen http:127.0.0.1:0 --acl "anonymous * all"
PID[bin]=$(cat "$T/semd.pid")
PID[http]=${PID[bin]}
SEMD_TCP=$(grep -m1 '^tcp:' "$T/semd.ready")
SEMD_HTTP=$(grep -m1 '^http:' "$T/semd.ready")

ready=0
for _ in $(seq 200); do
	if [ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] &&
	   { [ "$ETCD" = 0 ] || curl -sf "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1; }; then
		ready=1
		break
	fi
	sleep 0.05
done
[ "$ready" = 1 ] || { echo "http-compare: servers did not come up" >&2; cat "$T"/*.log >&2; exit 1; }

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }
lat() { sed -n "s/.*\"$1\": {[^}]*\"$2\": \([0-9.]*\).*/\1/p" <<<"$3"; }
top() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }

lg() { # system C
	local drv target
	case $1 in
	bin) drv=semd target="-t ${SEMD_TCP#tcp:}" ;;
	http) drv=semdhttp target="-t ${SEMD_HTTP#http:}" ;;
	redis) drv=redis target="-t 127.0.0.1:$REDIS_PORT" ;;
	etcd) drv=etcd target="-t 127.0.0.1:$ETCD_PORT" ;;
	esac
	# The server's CPU time over the run (user + system, all its threads),
	# per op: what the op costs it, which the machine's other load moves
	# far less than the throughput.
	local t0 t1 out ops
	t0=$(ticks "${PID[$1]}")
	# shellcheck disable=SC2086
	out=$("$LG" -d "$drv" $target -c "$2" -P 1 -D "$D" -w "$WARM")
	t1=$(ticks "${PID[$1]}")
	ops=$(field ops "$out")
	echo "sys=$1 $out srv_cpu_us_op=$(awk -v t=$((t1 - t0)) -v hz="$HZ" -v o="$ops" \
		-v d="$D" -v w="$WARM" 'BEGIN { printf "%.1f", (o > 0 ? t * 1e6 / hz / (o * (d + w) / d) : 0) }')" |
		tee -a "$T/raw"
}
HZ=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
sb() { # address: a granted acquire's latency, one connection
	"$BENCH" -s "$1" -t down-up -c 1 -P 1 -d "$D" --warmup "$WARM" --threads 1 \
		${2:+--control "$2"} --json | grep '"test"' | tee -a "$T/raw"
}

: >"$T/raw"
declare -A RES
add() { RES[$1]+="$2"$'\n'; }
ops_of() {
	case $1 in
	*ops_s=*) field ops_s "$1" ;;
	*) top ops_per_sec "$1" ;;
	esac
}
median() {
	local line
	while IFS= read -r line; do
		if [ -n "$line" ]; then printf '%s\t%s\n' "$(ops_of "$line")" "$line"; fi
	done <<<"${RES[$1]:-}" | sort -n | awk -F'\t' '{ l[NR] = $2 } END { if (NR) print l[int((NR + 1) / 2)] }'
}
SYSTEMS="bin http redis"
[ "$ETCD" = 1 ] && SYSTEMS="$SYSTEMS etcd"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for _ in $(seq "$REPS"); do
	for c in 1 16; do
		for s in $SYSTEMS; do add "$s|$c" "$(lg "$s" "$c")"; done
	done
	add "sb|tcp" "$(sb "$SEMD_TCP")"
	add "sb|http" "$(sb "$SEMD_HTTP" "$SEMD_TCP")"
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

{
echo "# semd HTTP vs binary vs redis vs etcd $(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(hostname) cpus=$(nproc) D=${D}s warm-up=${WARM}s, median of $REPS interleaved runs"
echo "# load average before: $LOAD0, after: $LOAD1 (the machine is shared)"
echo "# one op = acquire + release (2 round trips), tcp 127.0.0.1, P=1, one client: loadgen; latency per op in us"
echo "# cpu = the server's CPU time per op (us; the warm-up's ops estimated at the measured rate)"
printf '%3s | %-5s %9s %7s %7s %6s |' C sys "op/s" p50 p99 cpu
printf ' %7s %7s %7s\n' "h/bin" "h/redis" "h/etcd"
for c in 1 16; do
	for s in $SYSTEMS; do
		l=$(median "$s|$c")
		printf '%3s | %-5s %9s %7s %7s %6s |' "$c" "$s" "$(field ops_s "$l")" "$(field p50_us "$l")" \
			"$(field p99_us "$l")" "$(field srv_cpu_us_op "$l")"
		if [ "$s" = http ]; then
			h=$(field ops_s "$l")
			printf ' %7s %7s %7s' "$(ratio "$h" "$(field ops_s "$(median "bin|$c")")")" \
				"$(ratio "$h" "$(field ops_s "$(median "redis|$c")")")" \
				"$( [ "$ETCD" = 1 ] && ratio "$h" "$(field ops_s "$(median "etcd|$c")")" || echo -)"
		fi
		echo
	done
done
echo
echo "# a granted acquire's own latency (us), semd-benchmark -t down-up -c 1 --threads 1, in memory"
printf '%-4s | %9s | %7s %7s %7s %8s\n' tr "op/s" p50 p99 p999 max
for tr in tcp http; do
	l=$(median "sb|$tr")
	printf '%-4s | %9s | %7s %7s %7s %8s\n' "$tr" "$(top ops_per_sec "$l")" \
		"$(lat acquire_us p50 "$l")" "$(lat acquire_us p99 "$l")" \
		"$(lat acquire_us p999 "$l")" "$(lat acquire_us max "$l")"
done
} | tee "$T/table"
if [ -n "${OUT:-}" ]; then
	{ cat "$T/table"; echo; echo "# raw"; cat "$T/raw"; } >"$OUT"
fi
