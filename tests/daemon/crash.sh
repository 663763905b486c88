#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The crash test: kill -9 semd --data-dir during a stream of grants from
# many clients, restart it, repeated (tests/daemon/crash_clients.c checks the
# clients' records: never more permits held than the limit, tokens only
# growing, every acknowledged grant still held or released by its client,
# every acknowledged create still there). Snapshots are taken often
# (--snapshot-every 64), so restarts load a snapshot and the log after it.
# Then the data directory the crashes left, with its last bytes cut off -
# the open segment written last, the last closed segment, the newest
# snapshot, the term and vote - stops semd with exit 78 and a message, never
# a crash, a hang or a start with a shorter log; the uncut directory still
# starts and serves.
. "$top_srcdir/tests/lib.sh"
CRASH=$top_builddir/tests/daemon/crash_clients
t_watchdog 150
unset SEMD_TEST_DURABLE
mkdir "$T/run"

# shellcheck disable=SC2086
"$CRASH" -S "$SEMD" -d "$T/run" -r "${CRASH_ROUNDS:-5}" -c "${CRASH_CLIENTS:-16}" \
	${CRASH_SEED:+-s "$CRASH_SEED"} -- --snapshot-every 64 \
	${SEMD_TEST_THREADS:+--threads "$SEMD_TEST_THREADS"} >"$T/crash.out" 2>"$T/crash.err"
rc=$?
cat "$T/crash.out"
[ "$rc" = 0 ] || { tail -n 40 "$T/crash.err"; cp "$T/run/semd.log" "$T/semd-crash.log"; }
expect_eq "kill -9 during a stream of grants, restarted: every check holds" 0 "$rc"
ok "... no sanitizer report, no crash of semd" sh -c "! grep -q -e 'Sanitizer' -e 'runtime error' '$T/run/semd.log'"
n=$(grep -c 'log: state restored' "$T/run/semd.log")
ok "... each restart restored the state ($n)" test "$n" -ge "${CRASH_ROUNDS:-5}"
ok "... snapshots were taken" grep -q 'log: snapshot of' "$T/run/semd.log"

D=$T/run/data
ls -l "$D" >"$T/dir.txt"

# expect_78 DESC DIR: semd refuses DIR with 78 and says why.
expect_78() {
	timeout 30 "$SEMD" --data-dir "$2" --listen "unix:$T/x.sock" >"$T/x.log" 2>&1
	rc=$?
	expect_eq "$1: exit 78" 78 "$rc"
	ok "$1: says why" grep -q 'log: .*damaged' "$T/x.log"
	ok "$1: no crash report" sh -c "! grep -q -e 'Sanitizer' -e 'runtime error' '$T/x.log'"
}
# used FILE: bytes before the zeros a preallocated segment ends with.
used() { python3 -c "import sys; print(len(open(sys.argv[1], 'rb').read().rstrip(b'\0')))" "$1"; }

# Leave an open segment with entries in it: grants, then kill -9.
start_semd d --data-dir "$D" || exit 1
for i in 1 2 3; do $SEMCTL -s "$d_UNIX" down "cut$i" --lease 10m >/dev/null; done
kill -KILL "$d_PID"; wait "$d_PID" 2>/dev/null
open=""
for f in $(ls -t "$D" | grep '^open-'); do
	if [ "$(used "$D/$f")" -gt 64 ]; then open=$f; break; fi
done
ok "an open segment with the last entries ($open)" test -n "$open"
if [ -n "$open" ]; then
	u=$(used "$D/$open")
	for cut in 1 20 $((u / 2)); do
		rm -rf "$T/cut"; cp -a "$D" "$T/cut"
		truncate -s $((u - cut)) "$T/cut/$open"
		expect_78 "the open segment's last $cut bytes cut off" "$T/cut"
	done
fi
# The last closed segment (the highest end index).
closed=$(ls "$D" | grep -E '^[0-9]{16}-[0-9]{16}$' | sort -t- -k2 | tail -1)
ok "a closed segment ($closed)" test -n "$closed"
if [ -n "$closed" ]; then
	size=$(stat -c %s "$D/$closed")
	for cut in 1 8 $((size / 2)); do
		rm -rf "$T/cut"; cp -a "$D" "$T/cut"
		truncate -s $((size - cut)) "$T/cut/$closed"
		expect_78 "the last closed segment's last $cut bytes cut off" "$T/cut"
	done
fi
# The newest snapshot, and its metadata file.
snap=$(ls "$D" | grep -E '^snapshot-[0-9-]+$' | sort -t- -k3n -k4n | tail -1)
ok "a snapshot ($snap)" test -n "$snap"
if [ -n "$snap" ]; then
	for f in "$snap" "$snap.meta"; do
		size=$(stat -c %s "$D/$f")
		rm -rf "$T/cut"; cp -a "$D" "$T/cut"
		truncate -s $((size - 8)) "$T/cut/$f"
		expect_78 "$f's last 8 bytes cut off" "$T/cut"
	done
fi

# The term and vote (metadata1), cut off: not taken for a new server.
size=$(stat -c %s "$D/metadata1")
rm -rf "$T/cut"; cp -a "$D" "$T/cut"
truncate -s $((size - 8)) "$T/cut/metadata1"
expect_78 "metadata1's last 8 bytes cut off" "$T/cut"
# A first start that stopped before raft wrote anything: started afresh.
mkdir "$T/bare" && cp "$D/semd.meta" "$T/bare/"
start_semd b --data-dir "$T/bare" || exit 1
$SEMCTL -s "$b_UNIX" create bare --limit 1 >/dev/null
expect_eq "a directory with only semd.meta starts afresh" 0 "$?"
kill -TERM "$b_PID"; wait "$b_PID" 2>/dev/null

# The uncut directory: semd starts, with what was acknowledged.
start_semd d --data-dir "$D" || exit 1
$SEMCTL -s "$d_UNIX" info cut3 >"$T/cut3.txt" 2>&1
ok "the uncut directory starts and has the last grant" grep -q 'holders: 1' "$T/cut3.txt"
kill -TERM "$d_PID"; wait "$d_PID" 2>/dev/null
t_done
