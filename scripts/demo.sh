#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The README's first command: install the packages semd needs to build
# (scripts/deps.sh build), build it out of tree in build/demo, start a private
# semd (a UNIX socket, its state in a data directory, both in a temporary
# directory) and show semctl at work, and the state kept across a restart.
# Runs on a fresh Debian 12, Debian 13 or Ubuntu 24.04 machine as root (or
# with sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=$PWD
JOBS=${JOBS:-$(nproc)}
B=$TOP/build/demo
. "$TOP/bench/lib.sh"		# wait_ready

bold= plain=
if [ -t 1 ]; then bold=$(printf '\033[1m'); plain=$(printf '\033[0m'); fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
# show CMD...: print the command as a shell would read it, then run it.
show() {
	local a line='$'
	for a; do
		case $a in
		*[!A-Za-z0-9_./:=@%+,-]*|'') line+=" '${a//\'/\'\\\'\'}'" ;;
		*) line+=" $a" ;;
		esac
	done
	printf '%s\n' "$line"
	"$@"
}

step "Installing the build dependencies (scripts/deps.sh build)"
scripts/deps.sh build
if [ ! -x configure ]; then
	step "Generating ./configure (autogen.sh)"
	./autogen.sh >autogen.log 2>&1 || { cat autogen.log; exit 1; }
	rm -f autogen.log
fi

step "Configuring and building in build/demo"
mkdir -p "$B"
(cd "$B" && { [ -f Makefile ] || "$TOP/configure" -q; } && make -s -j"$JOBS")

D=$(mktemp -d "${TMPDIR:-/tmp}/semd-demo.XXXXXX")
SEMD_PID=
cleanup() {
	if [ -n "$SEMD_PID" ] && kill -0 "$SEMD_PID" 2>/dev/null; then kill -TERM "$SEMD_PID"; wait "$SEMD_PID" || true; fi
	rm -rf "$D"
}
trap cleanup EXIT

# start_semd: semd on a private UNIX socket, its state in $D/data.
start_semd() {
	rm -f "$D/ready"
	"$B/semd" --listen "unix:$D/semd.sock" --data-dir "$D/data" \
		--ready-file "$D/ready" --log-level notice 2>>"$D/semd.log" &
	SEMD_PID=$!
	if ! wait_ready "$SEMD_PID" "$D/ready" 10; then
		echo "semd did not start:"; cat "$D/semd.log"; exit 1
	fi
}

step "Starting semd on a private UNIX socket, its state in a data directory"
start_semd
echo "semd (pid $SEMD_PID) listens on:"; sed 's/^/  /' "$D/ready"
export SEMD_SERVER="unix:$D/semd.sock"
semctl() { "$B/semctl" "$@"; }

step "Creating the semaphore 'demo/jobs' with 2 permits"
show semctl create demo/jobs --limit 2

step "Taking both permits: each down prints its fencing token"
show semctl down demo/jobs
show semctl down demo/jobs

# trydown_fails: a trydown fails at once (exit status 1): no permit is free.
trydown_fails() {
	local rc=0
	show semctl trydown demo/jobs || rc=$?
	echo "exit status $rc"
	[ "$rc" = 1 ] || { echo "expected exit status 1"; exit 1; }
}

step "A trydown now would block: it fails at once with exit status 1"
trydown_fails

step "Who holds what"
show semctl info demo/jobs

step "Restarting semd: the semaphore and its holds are kept (--data-dir)"
kill -TERM "$SEMD_PID"; wait "$SEMD_PID" || true
start_semd
show semctl info demo/jobs
echo "Both permits are still held, so a trydown still fails:"
trydown_fails

step "Giving one permit back"
show semctl up demo/jobs

step "Running a command while holding a permit"
show semctl run demo/jobs -- sh -c 'echo "working with token $SEMD_TOKEN"'

step "Giving the last permit back"
show semctl up demo/jobs
show semctl info demo/jobs

step "The daemon's figures"
show semctl stats

step "Stopping semd (SIGTERM: graceful)"
kill -TERM "$SEMD_PID"
rc=0; wait "$SEMD_PID" || rc=$?
SEMD_PID=
echo "semd exited with status $rc"
[ "$rc" = 0 ] || { cat "$D/semd.log"; exit 1; }
