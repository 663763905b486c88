#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/compare.sh - semd next to the anchors of ../shared/bench, measured in
# one run on this machine with the same shape (one op = acquire + release =
# two round trips; closed loop; C connections with P ops in flight each):
#   limit = the reference request/reply server (limitd, loadgen -d echo)
#   redis = redis-server with the Lua semaphore (loadgen -d redis)
#   semd  = a private semd driven by the same loadgen with our wire driver
#           bench/drv_semd.c (loadgen -d semd: trydown + up on one name of
#           the same limit as redis' key)
#   sbm   = the same semd driven by semd-benchmark -t down-up --threads 1
#           (single-threaded, as loadgen is; each connection its own name)
# Cells: C=1 P=1, C=16 P=1, C=16 P=16, over unix and tcp, back to back.
# semd2 = a second semd started with --threads THREADS2 (2), the 16-connection
#         cells driven by loadgen again: one event loop against several.
# semdD = a third semd with --data-dir (every change through the raft log,
#         fsynced, on the disk of DDIR), driven by semd-benchmark down-up like
#         sbm: durable vs in-memory at 16x1 and 16x16, unix and tcp.
# Also: semd ping vs limit echo round trips, semd handoff vs the limit's
# one-connection round trip, and the tool's own overhead (loadgen echo vs
# semd-benchmark -t echo against the same limitd).
#
# Usage: bench/compare.sh   (from a build directory, or set top_builddir)
# Knobs: D (seconds per cell, 3), WARM (0.5), THREADS2 (2), REPS (3: median of that many
#        interleaved runs), ANCHORS (the anchors' bench directory: limit/, load/;
#        default ../shared/bench beside the checkout),
#        SEMD, BENCH (binaries), OUT (also save the table there), DDIR (where
#        semdD's data directory goes: default the temp dir, or /var/tmp when
#        that is a tmpfs - a durable log on tmpfs measures nothing).
# The anchors' sources are copied to a temp dir and built there: the shared
# folder stays read-only and nothing of it enters this tree. loadgen is built
# there with bench/drv_semd.c added (its reserved drivers[] entry enabled by
# a sed on the temp copy).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
: "${top_builddir:=$(pwd)}"
SEMD=${SEMD:-$top_builddir/semd}
BENCH=${BENCH:-$top_builddir/semd-benchmark}
D=${D:-3}
WARM=${WARM:-0.5}
REPS=${REPS:-3}
THREADS2=${THREADS2:-2}

for b in "$SEMD" "$BENCH"; do
	[ -x "$b" ] || { echo "compare: $b not built (run make first, or set SEMD/BENCH)" >&2; exit 1; }
done
# shellcheck source=bench/lib.sh
. "$TOP/bench/lib.sh"
bench_anchors
command -v redis-server >/dev/null || { echo "compare: need redis-server (apt-get install redis-server)" >&2; exit 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/semd-compare.XXXXXX")
chmod 755 "$T"
PIDS=()
cleanup() {
	set +e
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$T" ${EXTRA_RM:+"$EXTRA_RM"}
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_loadgen "$T"

LIMIT_PORT=$(bench_free_port)
REDIS_PORT=$(bench_free_port)

"$LIMITD" -p "$LIMIT_PORT" -u "$T/limit.sock" 2>"$T/limitd.log" &
PIDS+=($!)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --protected-mode no \
	--unixsocket "$T/redis.sock" --unixsocketperm 700 \
	--save "" --appendonly no --dir "$T" --logfile "$T/redis.log" \
	--daemonize no >/dev/null 2>&1 &
PIDS+=($!)
"$SEMD" --listen "unix:$T/semd.sock" --listen tcp:127.0.0.1:0 --acl "anonymous * all" \
	--ready-file "$T/semd.ready" >"$T/semd.log" 2>&1 &
PIDS+=($!)
"$SEMD" --listen "unix:$T/semd2.sock" --listen tcp:127.0.0.1:0 --threads "$THREADS2" \
	--acl "anonymous * all" \
	--ready-file "$T/semd2.ready" >"$T/semd2.log" 2>&1 &
PIDS+=($!)
if [ -z "${DDIR:-}" ]; then
	DDIR=$T
	[ "$(stat -f -c %T "$T")" = tmpfs ] && DDIR=$(mktemp -d /var/tmp/semd-compare.XXXXXX) &&
		EXTRA_RM=$DDIR
fi
"$SEMD" --listen "unix:$T/semdd.sock" --listen tcp:127.0.0.1:0 --acl "anonymous * all" \
	--data-dir "$DDIR/semdd.data" --ready-file "$T/semdd.ready" >"$T/semdd.log" 2>&1 &
PIDS+=($!)

ready=0
for _ in $(seq 200); do
	if [ -S "$T/limit.sock" ] && bench_port_busy "$LIMIT_PORT" && [ -s "$T/semd.ready" ] && [ -s "$T/semd2.ready" ] &&
	   [ -s "$T/semdd.ready" ] &&
	   [ "$(redis-cli -s "$T/redis.sock" ping 2>/dev/null)" = PONG ] &&
	   [ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]; then ready=1; break; fi
	sleep 0.05
done
[ "$ready" = 1 ] || { echo "compare: servers did not come up" >&2; cat "$T"/*.log >&2; exit 1; }
SEMD_UNIX=$(grep -m1 '^unix:' "$T/semd.ready")
SEMD_TCP=$(grep -m1 '^tcp:' "$T/semd.ready")
SEMD2_UNIX=$(grep -m1 '^unix:' "$T/semd2.ready")
SEMD2_TCP=$(grep -m1 '^tcp:' "$T/semd2.ready")
SEMDD_UNIX=$(grep -m1 '^unix:' "$T/semdd.ready")
SEMDD_TCP=$(grep -m1 '^tcp:' "$T/semdd.ready")

# loadgen's key=value lines
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }
# semd-benchmark's JSON: a field of the latency object, or a top-level field
lat() { sed -n "s/.*\"latency_us\": {[^}]*\"$1\": \([0-9.]*\).*/\1/p" <<<"$2"; }
top() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }

lg() { # driver transport C P
	local target
	case $1/$2 in
	redis/tcp) target="-t 127.0.0.1:$REDIS_PORT" ;;
	redis/unix) target="-u $T/redis.sock" ;;
	semd/tcp) target="-t ${SEMD_TCP#tcp:}" ;;
	semd/unix) target="-u ${SEMD_UNIX#unix:}" ;;
	semd2/tcp) target="-t ${SEMD2_TCP#tcp:}" ;;
	semd2/unix) target="-u ${SEMD2_UNIX#unix:}" ;;
	*/tcp) target="-t 127.0.0.1:$LIMIT_PORT" ;;
	*) target="-u $T/limit.sock" ;;
	esac
	# shellcheck disable=SC2086
	"$LG" -d "${1%2}" $target -c "$3" -P "$4" -D "$D" -w "$WARM" | tee -a "$T/raw"
}
sb() { # test transport C P [args]: semd-benchmark on semd (or on limitd for echo)
	local test=$1 tr=$2 c=$3 p=$4 addr
	shift 4
	case ${SB_DURABLE:-}$test/$tr in
	echo/unix) addr="unix:$T/limit.sock" ;;
	echo/tcp) addr="tcp:127.0.0.1:$LIMIT_PORT" ;;
	1*/unix) addr=$SEMDD_UNIX ;;
	1*/tcp) addr=$SEMDD_TCP ;;
	*/unix) addr=$SEMD_UNIX ;;
	*) addr=$SEMD_TCP ;;
	esac
	"$BENCH" -s "$addr" -t "$test" -c "$c" -P "$p" -d "$D" --warmup "$WARM" --threads 1 --json "$@" |
		grep '"test"' | sed "s/^ */transport=$tr /" | tee -a "$T/raw"
}

: >"$T/raw"
# Every measurement is repeated REPS times, interleaved (limit, redis, semd,
# then again), and the run with the median throughput is reported: this
# machine is shared and single runs swing by tens of percent.
declare -A RES
add() { RES[$1]+="$2"$'\n'; }
ops_of() { # a loadgen line or a semd-benchmark JSON line -> its ops/s
	case $1 in
	*ops_s=*) field ops_s "$1" ;;
	*) top ops_per_sec "$1" ;;
	esac
}
median() { # key -> the line with the median ops/s
	local line
	while IFS= read -r line; do
		if [ -n "$line" ]; then printf '%s\t%s\n' "$(ops_of "$line")" "$line"; fi
	done <<<"${RES[$1]:-}" | sort -n | awk -F'\t' '{ l[NR] = $2 } END { if (NR) print l[int((NR + 1) / 2)] }'
}
CELLS=("unix 1 1" "tcp 1 1" "unix 16 1" "tcp 16 1" "unix 16 16" "tcp 16 16")
for rep in $(seq "$REPS"); do
	for cell in "${CELLS[@]}"; do
		set -- $cell
		add "L|$cell" "$(lg echo "$1" "$2" "$3")"
		add "R|$cell" "$(lg redis "$1" "$2" "$3")"
		add "G|$cell" "$(lg semd "$1" "$2" "$3")"
		add "S|$cell" "$(sb down-up "$1" "$2" "$3")"
		add "P|$cell" "$(sb ping "$1" "$2" "$3")"
	done
	for cell in "unix 16 1" "unix 16 16"; do
		set -- $cell
		add "CL|$cell" "$(lg echo "$1" "$2" "$3")"
		add "CE|$cell" "$(sb echo "$1" "$2" "$3")"
	done
	for cell in "unix 16 1" "tcp 16 1" "unix 16 16" "tcp 16 16"; do
		set -- $cell
		add "G2|$cell" "$(lg semd2 "$1" "$2" "$3")"
		add "D|$cell" "$(SB_DURABLE=1 sb down-up "$1" "$2" "$3")"
	done
	add "L1" "$(lg echo unix 1 1)"
	add "H" "$(sb handoff unix 2 1)"
done

{
echo "# semd vs anchors $(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(hostname) cpus=$(nproc) D=${D}s warm-up=${WARM}s, median of $REPS runs"
echo "# down-up: 1 op = acquire + release = 2 round trips; latency per op in us"
echo "#   semd = loadgen -d semd (the anchors' own client); sbm = semd-benchmark --threads 1"
printf '%-4s %3s %3s | %9s %7s | %9s %7s | %9s %7s %7s | %9s %7s | %7s %7s | %7s\n' \
	tr C P "limit/s" p99 "redis/s" p99 "semd/s" p50 p99 "sbm/s" p99 "s/limit" "s/redis" "sbm/lim"
for cell in "${CELLS[@]}"; do
	set -- $cell
	L=$(median "L|$cell"); R=$(median "R|$cell"); G=$(median "G|$cell"); S=$(median "S|$cell")
	lo=$(field ops_s "$L"); ro=$(field ops_s "$R"); go=$(field ops_s "$G"); so=$(top ops_per_sec "$S")
	printf '%-4s %3s %3s | %9s %7s | %9s %7s | %9s %7s %7s | %9s %7s | %7s %7s | %7s\n' "$1" "$2" "$3" \
		"$lo" "$(field p99_us "$L")" "$ro" "$(field p99_us "$R")" \
		"$go" "$(field p50_us "$G")" "$(field p99_us "$G")" "$so" "$(lat p99 "$S")" \
		"$(ratio "$go" "$lo")" "$(ratio "$go" "$ro")" "$(ratio "$so" "$lo")"
done
echo
echo "# threads: semd with 1 event loop vs $THREADS2 (loadgen -d semd, same run)"
printf '%-4s %3s %3s | %9s | %9s %7s | %7s %7s\n' tr C P "1 loop/s" "$THREADS2 loops/s" p99 "ratio" "vs lim"
for cell in "unix 16 1" "tcp 16 1" "unix 16 16" "tcp 16 16"; do
	set -- $cell
	L=$(median "L|$cell"); G=$(median "G|$cell"); G2=$(median "G2|$cell")
	printf '%-4s %3s %3s | %9s | %9s %7s | %7s %7s\n' "$1" "$2" "$3" \
		"$(field ops_s "$G")" "$(field ops_s "$G2")" "$(field p99_us "$G2")" \
		"$(ratio "$(field ops_s "$G2")" "$(field ops_s "$G")")" \
		"$(ratio "$(field ops_s "$G2")" "$(field ops_s "$L")")"
done
echo
echo "# durable: semd --data-dir ($(df -T "$DDIR" | awk 'NR == 2 { print $2 }') under $DDIR) vs in memory, semd-benchmark down-up --threads 1, same run"
echo "#   (1 op = down + up: 2 log entries' worth of commands, each fsynced before its reply)"
printf '%-4s %3s %3s | %9s %7s %7s | %9s %7s %7s %8s %8s | %7s %6s\n' tr C P "mem op/s" p50 p99 \
	"dur op/s" p50 p99 p99.9 max "d/mem" "p99 x"
for cell in "unix 16 1" "tcp 16 1" "unix 16 16" "tcp 16 16"; do
	set -- $cell
	S=$(median "S|$cell"); DU=$(median "D|$cell")
	printf '%-4s %3s %3s | %9s %7s %7s | %9s %7s %7s %8s %8s | %7s %6s\n' "$1" "$2" "$3" \
		"$(top ops_per_sec "$S")" "$(lat p50 "$S")" "$(lat p99 "$S")" \
		"$(top ops_per_sec "$DU")" "$(lat p50 "$DU")" "$(lat p99 "$DU")" "$(lat p999 "$DU")" \
		"$(lat max "$DU")" "$(ratio "$(top ops_per_sec "$DU")" "$(top ops_per_sec "$S")")" \
		"$(ratio "$(lat p99 "$DU")" "$(lat p99 "$S")")"
done
echo
echo "# ping: semd round trips/s (Ping) vs the limit's echo round trips/s (2 per loadgen op)"
printf '%-4s %3s %3s | %11s | %11s %7s %7s | %7s\n' tr C P "limit rt/s" "semd rt/s" p50 p99 "s/limit"
for cell in "${CELLS[@]}"; do
	set -- $cell
	L=$(median "L|$cell"); P=$(median "P|$cell")
	lr=$(awk -v a="$(field ops_s "$L")" 'BEGIN { printf "%.0f", 2 * a }')
	sr=$(top ops_per_sec "$P")
	printf '%-4s %3s %3s | %11s | %11s %7s %7s | %7s\n' "$1" "$2" "$3" "$lr" "$sr" \
		"$(lat p50 "$P")" "$(lat p99 "$P")" "$(ratio "$sr" "$lr")"
done
echo
L1=$(median L1); H=$(median H)
echo "# handoff: semd, 2 connections on a limit-1 name, from sending up to the other's grant (us)"
echo "#          vs one round trip of the limit at 1 connection (its 2-round-trip op / 2)"
printf 'semd handoff p50 %s p99 %s p99.9 %s | limit rt p50 %s p99 %s | p99 ratio %s\n' \
	"$(lat p50 "$H")" "$(lat p99 "$H")" "$(lat p999 "$H")" \
	"$(awk -v a="$(field p50_us "$L1")" 'BEGIN { printf "%.1f", a / 2 }')" \
	"$(awk -v a="$(field p99_us "$L1")" 'BEGIN { printf "%.1f", a / 2 }')" \
	"$(ratio "$(lat p99 "$H")" "$(awk -v a="$(field p99_us "$L1")" 'BEGIN { print a / 2 }')")"
echo
echo "# tool overhead: the same limitd driven by loadgen -d echo and by semd-benchmark -t echo"
echo "#   (ns/rt: the client's CPU time per round trip; loadgen's from its cpu% over D + warm-up)"
printf '%-4s %3s %3s | %11s %5s %7s | %11s %5s %7s | %7s\n' tr C P "loadgen/s" "cpu%" "ns/rt" "semd-bm/s" "cpu%" "ns/rt" "ratio"
for cell in "unix 16 1" "unix 16 16"; do
	set -- $cell
	L=$(median "CL|$cell"); E=$(median "CE|$cell")
	printf '%-4s %3s %3s | %11s %5s %7s | %11s %5s %7s | %7s\n' "$1" "$2" "$3" \
		"$(field ops_s "$L")" "$(field loadgen_cpu_pct "$L")" \
		"$(awk -v c="$(field loadgen_cpu_pct "$L")" -v r="$(field rts "$L")" -v d="$D" -v w="$WARM" \
			'BEGIN { if (r > 0) printf "%.0f", c / 100 * (d + w) * 1e9 / r; else printf "-" }')" \
		"$(top ops_per_sec "$E")" \
		"$(top client_cpu_pct "$E")" "$(top client_cpu_ns_per_round_trip "$E")" \
		"$(ratio "$(top ops_per_sec "$E")" "$(field ops_s "$L")")"
done
} >"$T/table"
echo
cat "$T/table"
if [ -n "${OUT:-}" ]; then
	{ cat "$T/table"; echo; echo "# raw lines"; cat "$T/raw"; } >"$OUT"
	echo "(saved to $OUT)"
fi
