#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/cluster.sh - acquire+release (semd-benchmark down-up, TCP loopback)
# on semd in memory, semd with a log of one voter, and a 3-node cluster
# (talking to its leader), one row per C x P, back to back in one run.
#
#   bench/cluster.sh BUILDDIR [ANCHORS]
#
# ANCHORS: the path of run-anchors.sh; when given, its etcd table (the
# reference server, Redis, etcd 1 and 3 nodes) is measured right after,
# with the same C x P cells. Knobs: D (seconds per cell, 5), CFGS ("C P"
# pairs, default "1 1,16 1,16 16"), PORT (first of 20, default 29200: below the ephemeral range),
# DIR (parent of the data directories, default /var/tmp: the log is
# fsynced, tmpfs would flatter it), PEER_TLS (1: a second 3-node cluster
# with peer TLS, certificates made here with openssl, measured as "tls3"
# right after "three" in each cell), TESTS (semd-benchmark tests, one row
# each per setup and cell: default down-up; "down-up info" adds reads,
# which a leader answers without an entry), SEMD (the daemon to measure,
# default BUILDDIR's: an older one gives the before of a change).
set -eu
top_builddir=$(cd "${1:?usage: bench/cluster.sh BUILDDIR [ANCHORS]}" && pwd)
B=$top_builddir
ANCHORS=${2:-}
D=${D:-5}
CFGS=${CFGS:-1 1,16 1,16 16}
TESTS=${TESTS:-down-up}
PORT=${PORT:-29200}
. "$(dirname "$0")/lib.sh"
bench_init cluster-bench "${DIR:-/var/tmp}"
# start NAME ARGS...: a semd, waited for.
start() { n=$1; shift; bench_start "$n" 15 --acl "anonymous * all" "$@"; }

MEM=$PORT; ONE=$((PORT + 1))
C1=$((PORT + 2)); C2=$((PORT + 3)); C3=$((PORT + 4))
BOOT="1=127.0.0.1:$((PORT + 12)),2=127.0.0.1:$((PORT + 13)),3=127.0.0.1:$((PORT + 14))"
start mem --listen "tcp:127.0.0.1:$MEM"
start one --listen "tcp:127.0.0.1:$ONE" --data-dir "$T/one"
for n in 1 2 3; do
	eval "cp=\$C$n"
	# shellcheck disable=SC2046 # bench_peers gives words
	start "n$n" --listen "tcp:127.0.0.1:$cp" --data-dir "$T/d$n" --node-id "$n" \
		--peer-listen "tcp:127.0.0.1:$((PORT + 11 + n))" --bootstrap "$BOOT" $(bench_peers)
done
lead=$(bench_leader "tcp:127.0.0.1:$C1")
SETUPS="mem tcp:127.0.0.1:$MEM,one tcp:127.0.0.1:$ONE,three $lead"
if [ "${PEER_TLS:-0}" = 1 ]; then
	# The same cluster with peer TLS: EC P-256 certificates of a CA of its own.
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$T/ca.key" -out "$T/ca.pem" -days 1 -subj /CN=bench-ca 2>/dev/null
	TBOOT="1=127.0.0.1:$((PORT + 15)),2=127.0.0.1:$((PORT + 16)),3=127.0.0.1:$((PORT + 17))"
	for n in 1 2 3; do
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-keyout "$T/t$n.key" -out "$T/t$n.csr" -subj "/CN=node$n" 2>/dev/null
		echo "subjectAltName=IP:127.0.0.1" >"$T/t$n.ext"
		openssl x509 -req -in "$T/t$n.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
			-CAcreateserial -out "$T/t$n.pem" -days 1 -extfile "$T/t$n.ext" 2>/dev/null
		start "t$n" --listen "tcp:127.0.0.1:$((PORT + 4 + n))" --data-dir "$T/td$n" \
			--node-id "$n" --peer-listen "tcp:127.0.0.1:$((PORT + 14 + n))" \
			--bootstrap "$TBOOT" --peer-tls-cert "$T/t$n.pem" \
			--peer-tls-key "$T/t$n.key" --peer-tls-ca "$T/ca.pem"
	done
	tlead=$(bench_leader "tcp:127.0.0.1:$((PORT + 5))")
	SETUPS="$SETUPS,tls3 $tlead"
fi

printf '# semd %s, TCP loopback, %ss per cell, %s\n' "$TESTS" "$D" "$(date -u '+%F %T')"
printf '# three: 3-node cluster (leader at %s), every write committed by 2 of 3 fsyncs\n' "$lead"
[ -z "${tlead:-}" ] || printf '# tls3: the same with peer TLS 1.3 (leader at %s)\n' "$tlead"
printf '%-8s %-6s %-3s %-3s %10s %9s %9s\n' test setup C P 'op/s' 'p50 us' 'p99 us'
IFS=,
for cfg in $CFGS; do
	unset IFS
	set -- $cfg
	IFS=,
	for s in $SETUPS; do
		unset IFS
		for t in $TESTS; do
			set -- $cfg $s
			"$B/semd-benchmark" -s "$4" -t "$t" -c "$1" -P "$2" -d "$D" \
				--json >"$T/out.json" 2>"$T/err" ||
				{ cat "$T/err" >&2; exit 1; }
			python3 - "$3" "$1" "$2" "$T/out.json" "$t" <<'EOF'
import json, sys
r = json.load(open(sys.argv[4]))["results"][0]
print("%-8s %-6s %-3s %-3s %10d %9.0f %9.0f" % (sys.argv[5], sys.argv[1], sys.argv[2],
      sys.argv[3], r["ops_per_sec"], r["latency_us"]["p50"], r["latency_us"]["p99"]))
EOF
		done
	done
	IFS=,
done
unset IFS
if [ -n "$ANCHORS" ]; then
	echo "# anchors (run-anchors.sh, the etcd table), same run:"
	BASE=0 ZK=0 REPS=1 D=$D ETCD_CFGS=$CFGS bash "$ANCHORS"
fi
