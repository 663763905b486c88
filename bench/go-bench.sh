#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/go-bench.sh - the Go package go/semclient beside the C client and
# beside etcd's own Go client, in one run on this machine:
#
#  1. In memory, over UNIX: acquire+release of one permit of a name with a
#     large limit (2 round trips an op) by semd-benchmark (the C client:
#     -t down-up, one thread, C connections) and by the Go package
#     (go test -bench BenchmarkAcquireRelease: G1 = one goroutine, G16 =
#     16 goroutines on one Client, C16 = 16 Clients of one goroutine),
#     interleaved, REPS times, medians. The target: Go G16 >= 0.5x the C
#     client at 16.
#  2. Replicated, over TCP loopback: the same Go benchmark against semd's
#     3-node cluster (every down and up a raft entry, fsynced), and
#     bench/go-etcd (etcd's clientv3, from Debian's golang-etcd-server-dev,
#     built offline in GOPATH mode) against a 3-node etcd, with 1 and 16
#     goroutines: a slot-key Txn semaphore (2 raft writes an op, as semd's
#     down and up) and concurrency.Mutex Lock/Unlock (the idiom).
#
#   bench/go-bench.sh          (from a build directory, or set top_builddir)
# Knobs: D (seconds a cell, 3), REPS (3), DIR (data directories, default
# /var/tmp: both logs are fsynced, tmpfs would flatter them), PORT (first of
# 16 TCP ports, default 29400: below the ephemeral range), ETCD=0 (skip
# etcd). Needs golang-go; the etcd part needs etcd-server and
# golang-etcd-server-dev (apt-get install -y etcd-server golang-etcd-server-dev).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
D=${D:-3}
REPS=${REPS:-3}
PORT=${PORT:-29400}
ETCD=${ETCD:-1}
bench_init go-bench "${DIR:-/var/tmp}"
command -v go >/dev/null || { echo "go-bench: no go (apt-get install golang-go)" >&2; exit 1; }
export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-buildvcs=false
export GOCACHE="${GOCACHE:-$top_builddir/go/cache}"
export PKG_CONFIG_PATH="$top_builddir/client${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$top_builddir/client/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SEMD

# The Go benchmark binary, built once (cgo against this build's library).
(cd "$top/go/semclient" && GO111MODULE=on GOPATH="$T/gopath" \
	go test -c -o "$T/semclient.test" .) || { echo "go-bench: go test -c failed" >&2; exit 1; }

# gobench ADDRS CASE: ops/s of BenchmarkAcquireRelease/CASE against ADDRS.
gobench() {
	SEMD_BENCH_SERVER=$1 "$T/semclient.test" -test.run '^$' \
		-test.bench "^BenchmarkAcquireRelease/$2\$" -test.benchtime "${D}s" 2>&1 |
		awk '/^BenchmarkAcquireRelease/ { for (i = 1; i < NF; i++) if ($(i + 1) == "ops/s") print int($i) }'
}
# cbench ADDR C: ops/s of semd-benchmark down-up, one thread, C connections.
cbench() {
	"$BENCH" -s "$1" -t down-up -c "$2" -d "$D" --threads 1 --json |
		sed -n 's/.*"ops_per_sec": \([0-9]*\).*/\1/p'
}
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

# start NAME ARGS...: a semd, waited for.
start() {
	local n=$1; shift
	"$SEMD" --acl "anonymous * all" --ready-file "$T/$n.ready" "$@" >"$T/$n.log" 2>&1 &
	PIDS+=($!)
	wait_ready $! "$T/$n.ready" 30 || { echo "go-bench: $n did not start" >&2; cat "$T/$n.log" >&2; exit 1; }
}

echo "go-bench: in memory over UNIX, $D s a cell, median of $REPS (ops/s; 1 op = acquire + release)"
start mem --listen "unix:$T/mem.sock"
U=unix:$T/mem.sock
declare -a c1 c16 g1 g16 gc16
for ((r = 0; r < REPS; r++)); do
	c1+=("$(cbench "$U" 1)"); g1+=("$(gobench "$U" G1)")
	c16+=("$(cbench "$U" 16)"); g16+=("$(gobench "$U" G16)"); gc16+=("$(gobench "$U" C16)")
done
C1=$(median "${c1[@]}"); C16=$(median "${c16[@]}")
G1=$(median "${g1[@]}"); G16=$(median "${g16[@]}"); GC16=$(median "${gc16[@]}")
printf '%-34s %10s %8s\n' "client" "ops/s" "x C"
printf '%-34s %10s %8s\n' "C (semd-benchmark), 1 conn" "$C1" "1.00"
printf '%-34s %10s %8s\n' "Go, 1 goroutine" "$G1" "$(ratio "$G1" "$C1")"
printf '%-34s %10s %8s\n' "C (semd-benchmark), 16 conns" "$C16" "1.00"
printf '%-34s %10s %8s\n' "Go, 16 goroutines, 1 Client" "$G16" "$(ratio "$G16" "$C16")"
printf '%-34s %10s %8s\n' "Go, 16 Clients, 1 goroutine each" "$GC16" "$(ratio "$GC16" "$C16")"

[ "$ETCD" = 1 ] || exit 0
command -v etcd >/dev/null ||
	{ echo "go-bench: no etcd (apt-get install etcd-server); ETCD=0 skips it" >&2; exit 1; }
[ -d /usr/share/gocode/src/go.etcd.io/etcd/clientv3 ] ||
	{ echo "go-bench: no clientv3 (apt-get install golang-etcd-server-dev); ETCD=0 skips it" >&2; exit 1; }
mkdir -p "$T/gopath/src/goetcd"
cp "$here/go-etcd/main.go" "$T/gopath/src/goetcd/"
(cd "$T/gopath/src/goetcd" && GO111MODULE=off GOPATH="$T/gopath:/usr/share/gocode" \
	go build -o "$T/go-etcd" .) || { echo "go-bench: go-etcd did not build" >&2; exit 1; }

# A 3-node semd cluster and a 3-node etcd, both on loopback.
BOOT="1=127.0.0.1:$((PORT + 3)),2=127.0.0.1:$((PORT + 4)),3=127.0.0.1:$((PORT + 5))"
for n in 1 2 3; do
	start "n$n" --listen "tcp:127.0.0.1:$((PORT + n - 1))" --data-dir "$T/d$n" --node-id "$n" \
		--peer-listen "tcp:127.0.0.1:$((PORT + n + 2))" --bootstrap "$BOOT" $(bench_peers)
done
SEMD3="tcp:127.0.0.1:$PORT,tcp:127.0.0.1:$((PORT + 1)),tcp:127.0.0.1:$((PORT + 2))"
ic=""
for n in 1 2 3; do ic="$ic${ic:+,}e$n=http://127.0.0.1:$((PORT + 9 + n))"; done
for n in 1 2 3; do
	etcd --name "e$n" --data-dir "$T/e$n" \
		--listen-client-urls "http://127.0.0.1:$((PORT + 5 + n))" \
		--advertise-client-urls "http://127.0.0.1:$((PORT + 5 + n))" \
		--listen-peer-urls "http://127.0.0.1:$((PORT + 9 + n))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((PORT + 9 + n))" \
		--initial-cluster "$ic" --initial-cluster-state new >"$T/e$n.log" 2>&1 &
	PIDS+=($!)
done
E3="127.0.0.1:$((PORT + 6)),127.0.0.1:$((PORT + 7)),127.0.0.1:$((PORT + 8))"
# Both elected and serving: one acquire+release each, retried for 30 s.
for ((i = 0; i < 300; i++)); do
	"$T/go-etcd" -endpoints "$E3" -d 100ms -warm 0 >/dev/null 2>&1 && break
	sleep 0.1
done
[ $i -lt 300 ] || { echo "go-bench: etcd did not serve" >&2; tail -n 20 "$T/e1.log" >&2; exit 1; }
for ((i = 0; i < 300; i++)); do
	"$top_builddir/semctl" -s "$SEMD3" ping >/dev/null 2>&1 && break
	sleep 0.1
done
[ $i -lt 300 ] || { echo "go-bench: the semd cluster did not serve" >&2; exit 1; }

echo
echo "go-bench: 3 nodes over TCP, Go clients, $D s a cell, median of $REPS (ops/s)"
declare -a s1 s16 t1 t16 m1 m16
for ((r = 0; r < REPS; r++)); do
	s1+=("$(gobench "$SEMD3" G1)")
	t1+=("$("$T/go-etcd" -endpoints "$E3" -g 1 -d "${D}s" -mode txn | sed -n 's/.*ops_s=\([0-9]*\).*/\1/p')")
	m1+=("$("$T/go-etcd" -endpoints "$E3" -g 1 -d "${D}s" -mode mutex | sed -n 's/.*ops_s=\([0-9]*\).*/\1/p')")
	s16+=("$(gobench "$SEMD3" G16)")
	t16+=("$("$T/go-etcd" -endpoints "$E3" -g 16 -d "${D}s" -mode txn | sed -n 's/.*ops_s=\([0-9]*\).*/\1/p')")
	m16+=("$("$T/go-etcd" -endpoints "$E3" -g 16 -d "${D}s" -mode mutex | sed -n 's/.*ops_s=\([0-9]*\).*/\1/p')")
done
S1=$(median "${s1[@]}"); S16=$(median "${s16[@]}")
T1=$(median "${t1[@]}"); T16=$(median "${t16[@]}")
M1=$(median "${m1[@]}"); M16=$(median "${m16[@]}")
printf '%-12s %12s %14s %14s %10s %10s\n' goroutines "semd 3 (Go)" "etcd 3 (txn)" "etcd 3 (mutex)" "x txn" "x mutex"
printf '%-12s %12s %14s %14s %10s %10s\n' 1 "$S1" "$T1" "$M1" "$(ratio "$S1" "$T1")" "$(ratio "$S1" "$M1")"
printf '%-12s %12s %14s %14s %10s %10s\n' 16 "$S16" "$T16" "$M16" "$(ratio "$S16" "$T16")" "$(ratio "$S16" "$M16")"
