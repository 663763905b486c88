#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/ab.sh - two semd builds side by side, the same load generator,
# interleaved rounds: is NEW faster or slower than OLD?
#
#   bench/ab.sh [OPTIONS] OLD NEW      (OLD, NEW: build directories or semd binaries)
#
# Both daemons run at once (in memory, a UNIX socket and TCP port 0 each).
# Every round measures every cell on both, OLD first in odd rounds and NEW
# first in even ones (the order's own effect cancels), so a change of the
# machine's load hits both alike; the table gives per cell the median ops/s
# of each, NEW/OLD, how many rounds NEW won, the median p50 and the daemon's
# CPU per round trip (user + system, /proc/PID/stat over the run: less
# swayed by the load than ops/s). The load is the anchors' loadgen with our
# bench/drv_semd.c (acquire = a trydown, release = an up, as its Redis
# driver does: the client of the reference server and Redis, so --anchors
# puts both in the same rounds); --tool sbm drives NEW's semd-benchmark
# (down-up, one thread) instead.
#
# Options (and their environment knobs):
#   -r N        rounds (ROUNDS, 7)              -d S   seconds a run (D, 3)
#   -w S        warm-up seconds (WARM, 0.5)     -o F   also save table and raw lines in F (OUT)
#   -c CELLS    "TR C P" cells, comma-separated (CELLS, "unix 1 1,unix 16 1,unix 16 16")
#   --tcp       the same cells over TCP too
#   --threads N both daemons with --threads N
#   --durable   both with --data-dir (DDIR: the temp dir, or /var/tmp if it is a tmpfs)
#   --old-args A, --new-args A   more daemon arguments for one side
#                (bench/ab.sh --new-args "--threads 2" B B: one loop against two)
#   --mid B     one more build (or binary) in the same rounds, between OLD and NEW
#               (repeatable): its op/s and its ratio to OLD in extra columns
#   --anchors   the reference server (limitd) and Redis' Lua semaphore in the same
#               rounds (ANCHORS: their bench directory; redis-server installed),
#               their op/s and CPU a round trip beside semd's
#   --handoff   a hand-off row: semd-benchmark -t handoff (2 connections, limit 1),
#               p50 of an up going out to the other's grant; with --anchors beside
#               the reference server's round trip (its 1x1 op p50 / 2)
#   --tool T    loadgen (default) or sbm
#   --instr     instead of timing: each daemon under callgrind, one run a cell of D
#               seconds, instructions per round trip (repeatable whatever the load),
#               and the functions that differ most (TOP, 15); KEEP=DIR keeps the dumps,
#               CG_ARGS more callgrind options (--dump-instr=yes: counts per instruction)
#   --profile   perf record of each daemon in round 1 of each cell, the top
#               symbols printed at the end (TOP, 15)
# Needs: the anchors' sources (loadgen is theirs), gcc, libevent-dev; valgrind
# for --instr, perf for --profile. The machine's load average is printed
# at the start and the end: read the table with it.
# shellcheck disable=SC2086 # a cell "TR C P" is split into its words on purpose
set -euo pipefail

usage() { sed -n '3,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
ROUNDS=${ROUNDS:-7}
D=${D:-3}
WARM=${WARM:-0.5}
CELLS=${CELLS:-unix 1 1,unix 16 1,unix 16 16}
TOP=${TOP:-15}
TOOL=loadgen TCP=0 ANCH=0 HAND=0 INSTR=0 PROF=0 DUR=0
COMMON=() OLD_ARGS=() NEW_ARGS=() MIDS=()
while [ $# -gt 0 ]; do
	case $1 in
	-r) ROUNDS=$2; shift ;;
	-d) D=$2; shift ;;
	-w) WARM=$2; shift ;;
	-o) OUT=$2; shift ;;
	-c) CELLS=$2; shift ;;
	--tcp) TCP=1 ;;
	--threads) COMMON+=(--threads "$2"); shift ;;
	--durable) DUR=1 ;;
	--old-args) read -ra OLD_ARGS <<<"$2"; shift ;;
	--new-args) read -ra NEW_ARGS <<<"$2"; shift ;;
	--mid) MIDS+=("$2"); shift ;;
	--anchors) ANCH=1 ;;
	--handoff) HAND=1 ;;
	--tool) TOOL=$2; shift ;;
	--instr) INSTR=1 ;;
	--profile) PROF=1 ;;
	-h|--help) usage ;;
	-*) echo "ab: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
	shift
done
[ $# -eq 2 ] || usage
case $TOOL in loadgen|sbm) ;; *) echo "ab: --tool loadgen or sbm" >&2; exit 2 ;; esac

# side_bin DIR|BIN: the semd binary
side_bin() {
	if [ -d "$1" ]; then echo "$(cd "$1" && pwd)/semd"; else echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; fi
}
OLD=$(side_bin "$1")
NEW=$(side_bin "$2")
SIDES=(old) MID_BINS=()
for ((i = 0; i < ${#MIDS[@]}; i++)); do
	MID_BINS+=("$(side_bin "${MIDS[i]}")")
	SIDES+=("mid$((i + 1))")
done
SIDES+=(new)
for b in "$OLD" "$NEW" "${MID_BINS[@]}"; do
	[ -x "$b" ] || { echo "ab: $b is not a semd binary" >&2; exit 1; }
done
BENCH=${BENCH:-$(dirname "$NEW")/semd-benchmark}
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d "${TMPDIR:-/tmp}/semd-ab.XXXXXX")
PIDS=()
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
bench_loadgen "$T"
if [ "$INSTR" = 1 ]; then
	command -v callgrind_control >/dev/null || { echo "ab: --instr needs valgrind" >&2; exit 1; }
	ROUNDS=1 HAND=0 ANCH=0 PROF=0
fi
if [ "$PROF" = 1 ]; then
	command -v perf >/dev/null || { echo "ab: --profile needs perf" >&2; exit 1; }
fi
if [ "$ANCH" = 1 ]; then
	command -v redis-server >/dev/null ||
		{ echo "ab: --anchors needs redis-server (apt-get install redis-server)" >&2; exit 1; }
fi
[ "$TOOL" = loadgen ] && [ "$HAND" = 0 ] ||
	[ -x "$BENCH" ] || { echo "ab: $BENCH not built (or set BENCH)" >&2; exit 1; }

IFS=, read -ra CL <<<"$CELLS"
if [ "$TCP" = 1 ]; then
	for c in "${CL[@]}"; do
		set -- $c
		[ "$1" = unix ] && CL+=("tcp $2 $3")
	done
fi
DDIR=${DDIR:-$T}
if [ "$DUR" = 1 ] && [ "$DDIR" = "$T" ] && [ "$(stat -f -c %T "$T")" = tmpfs ]; then
	DDIR=$(mktemp -d /var/tmp/semd-ab.XXXXXX)
	trap 'bench_cleanup; rm -rf "$DDIR"' EXIT
fi

# start SIDE BIN ARGS...: a daemon (under callgrind with --instr), its pid in SIDE.pid
start() {
	local side=$1 bin=$2 w=$T/$1.run
	shift 2
	if [ "$INSTR" = 1 ]; then
		# shellcheck disable=SC2016 # CG_ARGS: the wrapper's, at its start
		printf '#!/bin/sh\nexec valgrind --tool=callgrind ${CG_ARGS:-} --instr-atstart=no --callgrind-out-file=%s "%s" "$@"\n' \
			"$T/$side.cg" "$bin" >"$w"
	else
		printf '#!/bin/sh\nexec "%s" "$@"\n' "$bin" >"$w"
	fi
	chmod +x "$w"
	[ "$DUR" = 1 ] && set -- "$@" --data-dir "$DDIR/$side.data"
	SEMD=$w bench_start "$side" 120 --listen "unix:$T/$side.sock" --listen tcp:127.0.0.1:0 \
		--acl "anonymous * all" "${COMMON[@]}" "$@"
}
start old "$OLD" "${OLD_ARGS[@]}"
for ((i = 0; i < ${#MID_BINS[@]}; i++)); do start "mid$((i + 1))" "${MID_BINS[i]}"; done
start new "$NEW" "${NEW_ARGS[@]}"
if [ "$ANCH" = 1 ]; then
	LPORT=$(bench_free_port)
	RPORT=$(bench_free_port)
	"$LIMITD" -p "$LPORT" -u "$T/limit.sock" 2>"$T/limitd.log" &
	PIDS+=($!)
	echo $! >"$T/limit.pid"
	redis-server --port "$RPORT" --bind 127.0.0.1 --protected-mode no \
		--unixsocket "$T/redis.sock" --unixsocketperm 700 --save "" --appendonly no \
		--dir "$T" --logfile "$T/redis.log" --daemonize no >/dev/null 2>&1 &
	PIDS+=($!)
	echo $! >"$T/redis.pid"
	for ((i = 0; i < 100; i++)); do
		[ -S "$T/limit.sock" ] && bench_port_busy "$LPORT" &&
			[ "$(redis-cli -s "$T/redis.sock" ping 2>/dev/null)" = PONG ] && break
		sleep 0.05
	done
	[ "$i" -lt 100 ] || { echo "ab: the anchors did not come up" >&2; cat "$T"/*.log >&2; exit 1; }
fi

# addr SIDE TR: loadgen's target arguments
addr() {
	case $1/$2 in
	limit/unix) echo "-u $T/limit.sock" ;;
	limit/tcp) echo "-t 127.0.0.1:$LPORT" ;;
	redis/unix) echo "-u $T/redis.sock" ;;
	redis/tcp) echo "-t 127.0.0.1:$RPORT" ;;
	*/unix) echo "-u ${T}/$1.sock" ;;
	*) echo "-t $(awk '/^tcp:/ { sub(/^tcp:/, ""); print; exit }' "$T/$1.ready")" ;;
	esac
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)

# run SIDE TR C P [ROUND]: one run; prints "ops p50 rts cpu_ns_per_rt" and logs the raw line
run() {
	local side=$1 tr=$2 c=$3 p=$4 pid t0 t1 line ops p50 rts drv=semd prof=""
	case $side in limit) drv='echo' ;; redis) drv=redis ;; esac
	pid=$(cat "$T/$side.pid")
	t0=$(cpu_ticks "$pid")
	if [ "$drv" = semd ] && [ "$PROF" = 1 ] && [ "${5:-0}" = 1 ]; then
		prof=$T/$side.$tr.$c.$p.perf
		perf record -q -F 999 -g -p "$pid" -o "$prof" 2>/dev/null &
		sleep 0.2
	fi
	if [ "$TOOL" = sbm ] && [ "$drv" = semd ]; then
		line=$("$BENCH" -s "$(grep -m1 "^$tr:" "$T/$side.ready")" -t down-up -c "$c" -P "$p" \
			-d "$D" --warmup "$WARM" --threads 1 --json | grep '"test"')
		ops=$(sed -n 's/.*"ops_per_sec": \([0-9.]*\).*/\1/p' <<<"$line")
		p50=$(sed -n 's/.*"p50": \([0-9.]*\).*/\1/p' <<<"$line")
		rts=$(sed -n 's/.*"round_trips": \([0-9]*\).*/\1/p' <<<"$line")
	else
		# shellcheck disable=SC2046
		line=$("$LG" -d "$drv" $(addr "$side" "$tr") -c "$c" -P "$p" -D "$D" -w "$WARM")
		ops=$(sed -n 's/.* ops_s=\([0-9.]*\).*/\1/p' <<<" $line")
		p50=$(sed -n 's/.* p50_us=\([0-9.]*\).*/\1/p' <<<" $line")
		rts=$(sed -n 's/.* rts=\([0-9]*\).*/\1/p' <<<" $line")
	fi
	if [ -n "$prof" ]; then
		kill -INT %% 2>/dev/null || true
		wait %% 2>/dev/null || true
	fi
	t1=$(cpu_ticks "$pid")
	cpu=$(awk -v a="$t0" -v b="$t1" -v r="$rts" -v k="$TCK" \
		'BEGIN { if (r > 0) printf "%.0f", (b - a) * 1e9 / k / r; else print "-" }')
	echo "$side $tr $c $p: $line" >>"$T/raw"
	echo "${ops:-0} ${p50:-0} ${rts:-0} $cpu"
}

# handoff SIDE: semd-benchmark's hand-off p50 (us)
handoff() {
	local line
	line=$("$BENCH" -s "$(grep -m1 '^unix:' "$T/$1.ready")" -t handoff -d "$D" --warmup "$WARM" \
		--threads 1 --json | grep '"test"')
	echo "$1 handoff: $line" >>"$T/raw"
	sed -n 's/.*"p50": \([0-9.]*\).*/\1/p' <<<"$line"
}

# instr SIDE TR C P: instructions per round trip of one run under callgrind
# (its dump kept as SIDE-TR-CxP.cg)
instr() {
	local pid rts tot f
	pid=$(cat "$T/$1.pid")
	callgrind_control -i on "$pid" >/dev/null 2>&1
	set -- "$@" "$(run "$1" "$2" "$3" "$4")"
	callgrind_control -i off "$pid" >/dev/null 2>&1
	callgrind_control -d "$1-$2-$3x$4" "$pid" >/dev/null 2>&1
	f=$(find "$T" -maxdepth 1 -name "$1.cg.*" -print -quit)
	mv "$f" "$T/$1-$2-$3x$4.cg"
	rts=$(awk '{ print $3 }' <<<"$5")
	tot=$(sed -n 's/^totals: //p' "$T/$1-$2-$3x$4.cg")
	awk -v t="${tot:-0}" -v r="$rts" 'BEGIN { if (r > 0) printf "%.0f %s %s\n", t / r, 0, r; else print "- 0 0" }'
}

declare -A RES
med() { # values on stdin, one a line -> their median
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
col() { # KEY FIELD -> the median of that field over the rounds
	awk -v f="$2" 'NF { print $f }' <<<"${RES[$1]:-}" | grep -v '^-$' | med
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "-") printf "%.2f", a / b; else printf "-" }'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

LOAD0=$(load)
START=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for ((r = 1; r <= ROUNDS; r++)); do
	# the sides in order in odd rounds, the other way in even ones
	if ((r % 2)); then ORDER="${SIDES[*]}"; else ORDER=$(printf '%s\n' "${SIDES[@]}" | tac | tr '\n' ' '); fi
	for cell in "${CL[@]}"; do
		set -- $cell
		for s in $ORDER; do
			if [ "$INSTR" = 1 ]; then
				RES["$s|$cell"]+="$(instr "$s" "$1" "$2" "$3")"$'\n'
			else
				RES["$s|$cell"]+="$(run "$s" "$1" "$2" "$3" "$r")"$'\n'
			fi
		done
		if [ "$ANCH" = 1 ]; then
			RES["limit|$cell"]+="$(run limit "$1" "$2" "$3")"$'\n'
			RES["redis|$cell"]+="$(run redis "$1" "$2" "$3")"$'\n'
		fi
	done
	if [ "$HAND" = 1 ]; then
		for s in $ORDER; do RES["$s|handoff"]+="$(handoff "$s")"$'\n'; done
		[ "$ANCH" = 1 ] && RES["limit|rt"]+="$(run limit unix 1 1)"$'\n'
	fi
done
LOAD1=$(load)

{
what="$TOOL${COMMON[*]:+ ${COMMON[*]}}"
[ "$DUR" = 1 ] && what+=" --data-dir"
echo "# ab $START $(hostname) cpus=$(nproc): $ROUNDS rounds x ${D}s (warm-up ${WARM}s), $what"
echo "#   old = $OLD ${OLD_ARGS[*]}"
for ((i = 0; i < ${#MID_BINS[@]}; i++)); do echo "#   mid$((i + 1)) = ${MID_BINS[i]}"; done
echo "#   new = $NEW ${NEW_ARGS[*]}"
echo "#   load average at start $LOAD0, at end $LOAD1"
if [ "$INSTR" = 1 ]; then
	echo "# instructions per round trip (callgrind, user space only; one op = 2 round trips)"
	hdr=$(printf '%-4s %3s %3s | %9s %9s | %7s' tr C P "old Ir/rt" "new Ir/rt" new/old)
	for m in "${SIDES[@]:1:${#SIDES[@]}-2}"; do hdr+=$(printf ' | %9s %7s' "$m Ir" "$m/old"); done
	echo "$hdr"
	for cell in "${CL[@]}"; do
		set -- $cell
		o=$(col "old|$cell" 1); n=$(col "new|$cell" 1)
		line=$(printf '%-4s %3s %3s | %9s %9s | %7s' "$1" "$2" "$3" "$o" "$n" "$(ratio "$n" "$o")")
		for m in "${SIDES[@]:1:${#SIDES[@]}-2}"; do
			line+=$(printf ' | %9s %7s' "$(col "$m|$cell" 1)" "$(ratio "$(col "$m|$cell" 1)" "$o")")
		done
		echo "$line"
	done
else
	echo "# op = acquire + release (2 round trips); medians; won = rounds NEW had more op/s; cpu = the daemon's ns a round trip"
	hdr=$(printf '%-4s %3s %3s | %9s %9s %7s %5s | %7s %7s | %6s %6s' tr C P "old op/s" "new op/s" new/old won \
		"old p50" "new p50" "old cpu" "new cpu")
	[ "$ANCH" = 1 ] && hdr+=$(printf ' | %9s %9s %7s %7s | %6s %6s' "limit/s" "redis/s" new/lim new/red \
		"lim cpu" "red cpu")
	for m in "${SIDES[@]:1:${#SIDES[@]}-2}"; do
		hdr+=$(printf ' | %9s %7s %6s' "$m op/s" "$m/old" "$m cpu")
	done
	echo "$hdr"
	for cell in "${CL[@]}"; do
		set -- $cell
		o=$(col "old|$cell" 1); n=$(col "new|$cell" 1)
		won=$(paste -d' ' <(awk 'NF { print $1 }' <<<"${RES["old|$cell"]}") \
			<(awk 'NF { print $1 }' <<<"${RES["new|$cell"]}") | awk '$2 > $1 { w++ } END { print w + 0 }')
		line=$(printf '%-4s %3s %3s | %9.0f %9.0f %7s %5s | %7.1f %7.1f | %6.0f %6.0f' "$1" "$2" "$3" "$o" "$n" \
			"$(ratio "$n" "$o")" "$won/$ROUNDS" "$(col "old|$cell" 2)" "$(col "new|$cell" 2)" \
			"$(col "old|$cell" 4)" "$(col "new|$cell" 4)")
		if [ "$ANCH" = 1 ]; then
			l=$(col "limit|$cell" 1); rd=$(col "redis|$cell" 1)
			line+=$(printf ' | %9.0f %9.0f %7s %7s | %6.0f %6.0f' "$l" "$rd" "$(ratio "$n" "$l")" \
				"$(ratio "$n" "$rd")" "$(col "limit|$cell" 4)" "$(col "redis|$cell" 4)")
		fi
		for m in "${SIDES[@]:1:${#SIDES[@]}-2}"; do
			line+=$(printf ' | %9.0f %7s %6.0f' "$(col "$m|$cell" 1)" \
				"$(ratio "$(col "$m|$cell" 1)" "$o")" "$(col "$m|$cell" 4)")
		done
		echo "$line"
	done
	if [ "$HAND" = 1 ]; then
		echo
		echo "# hand-off p50 (us): semd-benchmark -t handoff, 2 connections, limit-1 name"
		line=""
		for m in "${SIDES[@]}"; do line+="$m $(col "$m|handoff" 1)  "; done
		if [ "$ANCH" = 1 ]; then
			lrt=$(awk -v a="$(col limit\|rt 2)" 'BEGIN { printf "%.1f", a / 2 }')
			line+="  | limit round trip p50 $lrt | new/limit $(ratio "$(col new\|handoff 1)" "$lrt")"
		fi
		echo "$line"
	fi
fi
} >"$T/table"

if [ "$INSTR" = 1 ]; then
	# the functions whose self cost a round trip moved most, per cell
	fns() { # DUMP RTS
		callgrind_annotate --auto=no --inclusive=no --threshold=99 "$1" 2>/dev/null |
			sed -n '/file:function/,$p' | sed -n 's/^ *\([0-9,]*\) *([^)]*) *\([^ ]*\).*/\1 \2/p' |
			awk -v r="$2" '{ gsub(",", "", $1); n = $2; sub(/.*:/, "", n); a[n] += $1 / r }
				END { for (k in a) printf "%s %.1f\n", k, a[k] }' | sort
	}
	for cell in "${CL[@]}"; do
		set -- $cell
		k="$1-$2x$3"
		if [ ! -f "$T/old-$k.cg" ] || [ ! -f "$T/new-$k.cg" ]; then continue; fi
		{
			echo
			echo "# $1 ${2}x$3: self Ir a round trip, the $TOP functions that moved most (old, new, new - old)"
			join -a1 -a2 -e 0 -o 0,1.2,2.2 \
				<(fns "$T/old-$k.cg" "$(awk 'NF { print $3; exit }' <<<"${RES["old|$cell"]:-}")") \
				<(fns "$T/new-$k.cg" "$(awk 'NF { print $3; exit }' <<<"${RES["new|$cell"]:-}")") |
				awk '{ d = $3 - $2; printf "%-36s %8.1f %8.1f %+8.1f\n", $1, $2, $3, d }' |
				awk '{ print ($4 < 0 ? -$4 : $4) "\t" $0 }' | sort -g -r | awk -v t="$TOP" 'NR <= t' |
				cut -f2- | sort -k4 -g
		} >>"$T/table"
	done
	if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$T"/*.cg "$KEEP"/; fi
fi
if [ "$PROF" = 1 ]; then
	for f in "$T"/*.perf; do
		[ -f "$f" ] || continue
		{
			echo
			echo "# perf record, round 1: $(basename "$f" .perf) (self; the kernel's share, then the top $TOP in user space)"
			perf report -i "$f" --no-children --sort sym --stdio 2>/dev/null |
				awk -v t="$TOP" '/^ +[0-9.]+%/ { if ($2 == "[k]") k += $1; else if (n++ < t) u[n] = $0 }
					END { printf "    %.2f%%  (kernel, all)\n", k; for (i = 1; i <= n && i <= t; i++) print u[i] }'
		} >>"$T/table"
	done
	if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$T"/*.perf "$KEEP"/; fi
fi

echo
cat "$T/table"
if [ -n "${OUT:-}" ]; then
	{ cat "$T/table"; echo; echo "# raw lines"; cat "$T/raw"; } >"$OUT"
	echo "(saved to $OUT)"
fi
