#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/session-flood.sh - what idle sessions cost: N sessions with a lease
# of L ms that only keep themselves alive (bench/session-flood.c, a Ping
# every third of the lease, as libsemclient's keepalive), against semd with
# a log of one voter and a 3-node cluster (its leader). Once they are all
# up, for D seconds: the log's entries a second (the leader's last index),
# the disk bytes written a second (/proc/PID/io write_bytes: the leader, and
# all nodes), and the leader's CPU (user + system, % of one core).
#
#   bench/session-flood.sh BUILDDIR
#
# Knobs: N (sessions, 15000: each is a connection, and a descriptor on both
# sides), L (lease, ms, 10000), D (seconds measured, 60), SETUPS ("one
# three"), PORT (first of 10, 29300), DIR (parent of the data directories,
# default /var/tmp: not tmpfs, the log is fsynced).
set -eu
top_builddir=$(cd "${1:?usage: bench/session-flood.sh BUILDDIR}" && pwd)
B=$top_builddir
N=${N:-15000}
L=${L:-10000}
D=${D:-60}
SETUPS=${SETUPS:-one three}
PORT=${PORT:-29300}
. "$(dirname "$0")/lib.sh"
bench_init flood "${DIR:-/var/tmp}"
# The default quota is 1000 connections and sessions a principal.
printf 'quota connections anonymous 200000\nquota sessions anonymous 200000\n' \
	>"$T/quota.conf"

# start NAME ARGS...: a semd, waited for; its pid in the file NAME.pid.
start() {
	n=$1; shift
	bench_start "$n" 30 --config "$T/quota.conf" --acl "anonymous * all" \
		--max-connections $((N + 100)) --max-sessions $((N + 100)) "$@"
}

# status ADDR FIELD: a number of the node's cluster status.
status() {
	"$B/semctl" -s "$1" --json cluster status | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"
}

wbytes() { sed -n 's/^write_bytes: //p' "/proc/$1/io"; }
cputicks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# measure NAME ADDR LEADER_PID ALL_PIDS: flood ADDR, measure, print a row.
measure() {
	name=$1 addr=$2 lp=$3 all=$4
	"$B/session-flood" -s "$addr" -n "$N" -L "$L" -d $((D + 5)) \
		>"$T/$name.flood" 2>&1 &
	fp=$!
	i=0
	until grep -qs '^up ' "$T/$name.flood"; do
		i=$((i + 1))
		kill -0 $fp 2>/dev/null && [ $i -lt 6000 ] ||
			{ echo "$name: the sessions did not come up:" >&2;
			  cat "$T/$name.flood" >&2; exit 1; }
		sleep 0.05
	done
	sleep 2		# the last Hellos' entries go by
	i0=$(status "$addr" last_index); c0=$(cputicks "$lp"); b0=$(wbytes "$lp")
	a0=0; for p in $all; do a0=$((a0 + $(wbytes "$p"))); done
	t0=$(date +%s.%N)
	sleep "$D"
	i1=$(status "$addr" last_index); c1=$(cputicks "$lp"); b1=$(wbytes "$lp")
	a1=0; for p in $all; do a1=$((a1 + $(wbytes "$p"))); done
	t1=$(date +%s.%N)
	wait $fp || { echo "$name: session-flood failed:" >&2; cat "$T/$name.flood" >&2; exit 1; }
	hz=$(getconf CLK_TCK)
	awk -v n="$name" -v s="$N" -v l="$L" -v up="$(sed -n 's/^up [0-9]* //p' "$T/$name.flood")" \
	    -v i="$((i1 - i0))" -v c="$((c1 - c0))" -v b="$((b1 - b0))" \
	    -v a="$((a1 - a0))" -v t0="$t0" -v t1="$t1" -v hz="$hz" \
	    -v done="$(sed -n 's/^done //p' "$T/$name.flood")" 'BEGIN {
		d = t1 - t0
		printf "%-6s %7d %6d %7.1f %10.2f %12.0f %12.0f %8.1f   %s\n", n, s, l, up,
		    i / d, b / d, a / d, 100 * c / hz / d, done
	}'
}

echo "sessions=$N lease=${L}ms measured ${D}s after they were up ($(nproc) cores)"
printf "%-6s %7s %6s %7s %10s %12s %12s %8s   %s\n" setup sessions lease "up(s)" \
	entries/s "disk B/s" "all disks" "cpu%" "the flood's own count"
for s in $SETUPS; do
	case $s in
	one)
		start one --listen "tcp:127.0.0.1:$PORT" --data-dir "$T/one"
		measure one "tcp:127.0.0.1:$PORT" "$(cat "$T/one.pid")" "$(cat "$T/one.pid")"
		kill "$(cat "$T/one.pid")"; wait "$(cat "$T/one.pid")" 2>/dev/null || :
		;;
	three)
		BOOT="1=127.0.0.1:$((PORT + 5)),2=127.0.0.1:$((PORT + 6)),3=127.0.0.1:$((PORT + 7))"
		for n in 1 2 3; do
			start "n$n" --listen "tcp:127.0.0.1:$((PORT + n))" --data-dir "$T/d$n" \
				--node-id "$n" --peer-listen "tcp:127.0.0.1:$((PORT + 4 + n))" \
				--bootstrap "$BOOT" $(bench_peers)
		done
		lead=$(bench_leader "tcp:127.0.0.1:$((PORT + 1))")
		lp=
		for n in 1 2 3; do
			[ "$lead" = "tcp:127.0.0.1:$((PORT + n))" ] && lp=$(cat "$T/n$n.pid")
		done
		[ -n "$lp" ] || { echo "leader $lead is none of ours" >&2; exit 1; }
		measure three "$lead" "$lp" "$(cat "$T/n1.pid" "$T/n2.pid" "$T/n3.pid" | tr '\n' ' ')"
		;;
	*)
		echo "unknown setup $s (one, three)" >&2; exit 2
		;;
	esac
done
