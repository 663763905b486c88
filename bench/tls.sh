#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/tls.sh BUILD [BEFORE_BUILD] - TLS against plain TCP, one semd with
# both listeners (ECDSA P-256 certificate, anonymous clients), measured
# with semd-benchmark:
#   down-up 16x1 over TCP and TLS, and their ratio
#   churn (connect, Hello, down, up, close) over TCP, TLS with a full
#   handshake each time, TLS resuming from session tickets
#   down-up 16x1 against semd --threads 1 and --threads 2, the client on
#   one thread (it leaves a core to the daemon's second loop)
# BEFORE_BUILD, if given, is measured the same way in the same run
# (one build after the other), e.g. a build of an older commit; a
# test it does not know is reported as "-". D (default 5) seconds a test.
# The client is BUILD's semd-benchmark for both (BENCH overrides): only the
# daemon differs.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 BUILD [BEFORE_BUILD]" >&2; exit 64; }
D=${D:-5}
T=$(mktemp -d /tmp/semd-tls-bench.XXXXXX)
pids=
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$T"; }
trap cleanup EXIT INT TERM

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$T/$1.key" 2>/dev/null; }
key ca && openssl req -x509 -new -key "$T/ca.key" -out "$T/ca.pem" -days 2 \
	-subj "/CN=bench CA" 2>/dev/null &&
key srv && openssl req -new -key "$T/srv.key" -out "$T/srv.csr" -subj "/CN=localhost" 2>/dev/null &&
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$T/srv.ext" &&
openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
	-out "$T/srv.pem" -days 2 -extfile "$T/srv.ext" 2>/dev/null

# start TAG BUILD LOOPS: a semd; sets TCP and TLS
start() {
	rm -f "$T/$1.ready"
	"$2/semd" --listen "unix:$T/$1.sock" --listen tcp:127.0.0.1:0 --listen tls:127.0.0.1:0 \
		--tls-cert "$T/srv.pem" --tls-key "$T/srv.key" --acl "anonymous * all" \
		--tls-per-source-max-startups 0 --threads "$3" \
		--ready-file "$T/$1.ready" >"$T/$1.log" 2>&1 &
	pids="$pids $!"
	SPID=$!
	i=0
	while [ ! -s "$T/$1.ready" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	TCP=$(grep -m1 '^tcp:' "$T/$1.ready")
	TLS=$(grep -m1 '^tls:' "$T/$1.ready")
}
stop() { kill "$SPID"; wait "$SPID" 2>/dev/null || true; }
BENCH=${BENCH:-$1/semd-benchmark}
# ops BUILD ARGS...: ops/s (or "-")
ops() {
	shift
	"$BENCH" -d "$D" --warmup 0.5 --json "$@" 2>/dev/null |
		sed -n 's/.*"ops_per_sec": \([0-9]*\).*/\1/p' | head -n 1 | grep . || echo -
}
row() { printf '%-44s %12s %12s\n' "$1" "$2" "$3"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }

builds="$1"
[ $# -ge 2 ] && builds="$1 $2"
for b in $builds; do
	tag=$(echo "$b" | tr -c 'A-Za-z0-9\n' '_')
	start "$tag" "$b" 1
	eval "tcp_$tag=\$(ops $b -s $TCP -t down-up -c 16 --threads 1)"
	eval "tls_$tag=\$(ops $b -s $TLS --tls-ca $T/ca.pem -t down-up -c 16 --threads 1)"
	eval "ctcp_$tag=\$(ops $b -s $TCP -t churn -c 16 --threads 1)"
	eval "cfull_$tag=\$(ops $b -s $TLS --tls-ca $T/ca.pem -t churn -c 16 --threads 1)"
	eval "cres_$tag=\$(ops $b -s $TLS --tls-ca $T/ca.pem --tls-resume -t churn -c 16 --threads 1)"
	stop
	start "$tag" "$b" 2
	eval "tcp2_$tag=\$(ops $b -s $TCP -t down-up -c 16 --threads 1)"
	eval "tls2_$tag=\$(ops $b -s $TLS --tls-ca $T/ca.pem -t down-up -c 16 --threads 1)"
	stop
done

printf 'semd-benchmark, %s s a test, 16 connections, one client thread\n' "$D"
hdr=after
[ $# -ge 2 ] && hdr="after before"
printf '%-44s %12s %12s\n' "test (ops/s)" $hdr
for k in tcp tls ctcp cfull cres tcp2 tls2; do
	case $k in
	tcp) l="down-up TCP (1 loop)";; tls) l="down-up TLS (1 loop)";;
	ctcp) l="churn TCP";; cfull) l="churn TLS, full handshakes";;
	cres) l="churn TLS, resumed";;
	tcp2) l="down-up TCP, --threads 2";; tls2) l="down-up TLS, --threads 2";;
	esac
	set --
	for b in $builds; do
		tag=$(echo "$b" | tr -c 'A-Za-z0-9\n' '_')
		eval "set -- \"\$@\" \"\$${k}_$tag\""
	done
	row "$l" "$1" "${2:-}"
done
for b in $builds; do
	tag=$(echo "$b" | tr -c 'A-Za-z0-9\n' '_')
	eval "tcp=\$tcp_$tag tls=\$tls_$tag ctcp=\$ctcp_$tag cfull=\$cfull_$tag cres=\$cres_$tag tcp2=\$tcp2_$tag tls2=\$tls2_$tag"
	echo "# $b: TLS/TCP down-up $(ratio "$tls" "$tcp"); churn TLS/TCP $(ratio "$cfull" "$ctcp");" \
		"resumed/full churn $(ratio "$cres" "$cfull"); --threads 2 / 1: TCP $(ratio "$tcp2" "$tcp")," \
		"TLS $(ratio "$tls2" "$tls")"
done
