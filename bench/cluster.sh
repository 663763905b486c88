#!/bin/sh
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
# right after "three" in each cell).
set -eu
B=$(cd "${1:?usage: bench/cluster.sh BUILDDIR [ANCHORS]}" && pwd)
ANCHORS=${2:-}
D=${D:-5}
CFGS=${CFGS:-1 1,16 1,16 16}
PORT=${PORT:-29200}
DIR=${DIR:-/var/tmp}
W=$(mktemp -d "$DIR/semd-cluster-bench.XXXXXX")
PIDS=
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || :; done
	for p in $PIDS; do wait "$p" 2>/dev/null || :; done
	rm -rf "$W"
}
trap cleanup EXIT INT TERM

# start NAME ARGS...: a semd, waited for.
start() {
	n=$1; shift
	"$B/semd" --acl "anonymous * all" --ready-file "$W/$n.ready" "$@" \
		>"$W/$n.log" 2>&1 &
	PIDS="$PIDS $!"
	i=0
	while [ ! -s "$W/$n.ready" ]; do
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "$n did not start:" >&2; cat "$W/$n.log" >&2; exit 1; }
		sleep 0.05
	done
}

MEM=$PORT; ONE=$((PORT + 1))
C1=$((PORT + 2)); C2=$((PORT + 3)); C3=$((PORT + 4))
BOOT="1=127.0.0.1:$((PORT + 12)),2=127.0.0.1:$((PORT + 13)),3=127.0.0.1:$((PORT + 14))"
start mem --listen "tcp:127.0.0.1:$MEM"
start one --listen "tcp:127.0.0.1:$ONE" --data-dir "$W/one"
for n in 1 2 3; do
	eval "cp=\$C$n"
	start "n$n" --listen "tcp:127.0.0.1:$cp" --data-dir "$W/d$n" --node-id "$n" \
		--peer-listen "tcp:127.0.0.1:$((PORT + 11 + n))" --bootstrap "$BOOT"
done
# leader CLIENT-ADDR: the leader's client address, as that node sees it.
leader() {
	l=
	i=0
	while [ -z "$l" ] && [ $i -lt 100 ]; do
		l=$("$B/semctl" -s "$1" --json cluster status 2>/dev/null |
		    sed -n 's/.*"leader":"\([^"]*\)".*/\1/p')
		i=$((i + 1)); [ -n "$l" ] || sleep 0.1
	done
	[ -n "$l" ] || { echo "the cluster at $1 elected no leader" >&2; exit 1; }
	echo "$l"
}
lead=$(leader "tcp:127.0.0.1:$C1")
SETUPS="mem tcp:127.0.0.1:$MEM,one tcp:127.0.0.1:$ONE,three $lead"
if [ "${PEER_TLS:-0}" = 1 ]; then
	# The same cluster with peer TLS: EC P-256 certificates of a CA of its own.
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$W/ca.key" -out "$W/ca.pem" -days 1 -subj /CN=bench-ca 2>/dev/null
	TBOOT="1=127.0.0.1:$((PORT + 15)),2=127.0.0.1:$((PORT + 16)),3=127.0.0.1:$((PORT + 17))"
	for n in 1 2 3; do
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-keyout "$W/t$n.key" -out "$W/t$n.csr" -subj "/CN=node$n" 2>/dev/null
		echo "subjectAltName=IP:127.0.0.1" >"$W/t$n.ext"
		openssl x509 -req -in "$W/t$n.csr" -CA "$W/ca.pem" -CAkey "$W/ca.key" \
			-CAcreateserial -out "$W/t$n.pem" -days 1 -extfile "$W/t$n.ext" 2>/dev/null
		start "t$n" --listen "tcp:127.0.0.1:$((PORT + 4 + n))" --data-dir "$W/td$n" \
			--node-id "$n" --peer-listen "tcp:127.0.0.1:$((PORT + 14 + n))" \
			--bootstrap "$TBOOT" --peer-tls-cert "$W/t$n.pem" \
			--peer-tls-key "$W/t$n.key" --peer-tls-ca "$W/ca.pem"
	done
	tlead=$(leader "tcp:127.0.0.1:$((PORT + 5))")
	SETUPS="$SETUPS,tls3 $tlead"
fi

printf '# semd acquire+release (down-up), TCP loopback, %ss per cell, %s\n' "$D" "$(date -u '+%F %T')"
printf '# three: 3-node cluster (leader at %s), every write committed by 2 of 3 fsyncs\n' "$lead"
[ -z "${tlead:-}" ] || printf '# tls3: the same with peer TLS 1.3 (leader at %s)\n' "$tlead"
printf '%-6s %-3s %-3s %10s %9s %9s\n' setup C P 'op/s' 'p50 us' 'p99 us'
IFS=,
for cfg in $CFGS; do
	unset IFS
	set -- $cfg
	IFS=,
	for s in $SETUPS; do
		unset IFS
		set -- $cfg $s
		"$B/semd-benchmark" -s "$4" -t down-up -c "$1" -P "$2" -d "$D" --json \
			>"$W/out.json" 2>"$W/err" || { cat "$W/err" >&2; exit 1; }
		python3 - "$3" "$1" "$2" "$W/out.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[4]))["results"][0]
print("%-6s %-3s %-3s %10d %9.0f %9.0f" % (sys.argv[1], sys.argv[2], sys.argv[3],
      r["ops_per_sec"], r["latency_us"]["p50"], r["latency_us"]["p99"]))
EOF
	done
	IFS=,
done
unset IFS
if [ -n "$ANCHORS" ]; then
	echo "# anchors (run-anchors.sh, the etcd table), same run:"
	BASE=0 ZK=0 REPS=1 D=$D ETCD_CFGS=$CFGS bash "$ANCHORS"
fi
