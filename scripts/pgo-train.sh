#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/pgo-train.sh BUILDDIR: the training run of a build with
# profile-guided optimization (scripts/pgo-build.sh, the Debian package's
# debian/rules). BUILDDIR's semd and semd-benchmark are instrumented
# (-fprofile-generate); their profile goes where they were built to put it.
# A private semd on a UNIX socket and on TCP (127.0.0.1, a free port), and
# semd-benchmark's standard tests (ping, down-up, trydown-up, contended,
# churn, names, info) at 1 and 16 connections, 1 and 16 in flight, and a
# hand-off, PGO_TRAIN_S seconds each (default 1); then semd stops (SIGTERM:
# its profile is written at exit). The operations users make, not one
# benchmark's mix. Nothing leaves the machine.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILDDIR" >&2; exit 64; }
TOP=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "$1" && pwd)
TRAIN_S=${PGO_TRAIN_S:-1}
. "$TOP/bench/lib.sh"		# wait_ready

T=$(mktemp -d "${TMPDIR:-/tmp}/semd-pgo.XXXXXX")
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$T"
}
trap cleanup EXIT
train_failed() {
	echo "pgo: training failed:" >&2
	tail -20 "$T/train.log" >&2
	exit 1
}
"$B/semd" --listen "unix:$T/semd.sock" --listen tcp:127.0.0.1:0 \
	--acl 'anonymous * all' --ready-file "$T/ready" >"$T/semd.log" 2>&1 &
pid=$!
wait_ready "$pid" "$T/ready" 10 || { cat "$T/semd.log" >&2; exit 1; }
tcp=$(awk '/^tcp:/ { print; exit }' "$T/ready")
for addr in "unix:$T/semd.sock" "$tcp"; do
	for cp in "1 1" "16 1" "16 16"; do
		read -r c p <<<"$cp"
		"$B/semd-benchmark" -s "$addr" -c "$c" -P "$p" -d "$TRAIN_S" \
			--warmup 0 --names 5000 \
			-t ping,down-up,trydown-up,contended,churn,names,info \
			>>"$T/train.log" 2>&1 || train_failed
	done
	"$B/semd-benchmark" -s "$addr" -d "$TRAIN_S" --warmup 0 -t handoff \
		>>"$T/train.log" 2>&1 || train_failed
done
kill -TERM "$pid"
wait "$pid" || true
pid=
