#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Watches that resume: every event has a revision, one more than the one
# before; `semctl watch --from REV` replays what the daemon keeps from REV
# on, the same events as they were sent live; a revision no longer kept is
# refused as compacted (exit 6, the oldest kept said); a watcher cut off by
# a restart of a durable semd - stopped meanwhile, so that events happen
# while it is away - resumes after its last revision without losing or
# repeating one, and one that saw no event resumes after the revision the
# daemon had when it began watching.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
unset SEMD_TEST_DURABLE		# this test gives its own data directory

# revs FILE: the revisions of a JSON watch output, on one line
revs() {
	python3 -c '
import json, sys
print(" ".join(str(json.loads(l)["revision"]) for l in open(sys.argv[1]) if l.strip()))' "$1"
}
# events FILE [FROM]: "revision event name" of each event from revision FROM on
events() {
	python3 -c '
import json, sys
f = int(sys.argv[2]) if len(sys.argv) > 2 else 0
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j["revision"] >= f:
        print(j["revision"], j["event"], j["name"], j["n"], j["permit_id"], j["token"])' "$@"
}
# consecutive FILE: the revisions go up by one, none twice
consecutive() {
	python3 -c '
import json, sys
r = [json.loads(l)["revision"] for l in open(sys.argv[1]) if l.strip()]
sys.exit(0 if r and all(b == a + 1 for a, b in zip(r, r[1:])) else 1)' "$1"
}
# increasing FILE: the revisions go up, none twice (with a log, a new
# leader's cluster event, told to watches of every name only, takes one)
increasing() {
	python3 -c '
import json, sys
r = [json.loads(l)["revision"] for l in open(sys.argv[1]) if l.strip()]
sys.exit(0 if r and all(b > a for a, b in zip(r, r[1:])) else 1)' "$1"
}
lines() { test "$(wc -l <"$1")" -ge "$2"; }

start_semd d --watch-history 4096 || exit 1
S="$SEMCTL -s $d_UNIX"
"$SEMCTL" -s "$d_UNIX" --json watch r/ >"$T/live.json" 2>"$T/live.err" &
wpid=$!
t_wait_for 5 sh -c "$S --json stats | grep -q '\"replies_watch_OK\":1'"
$S create r/a --limit 2 >/dev/null
$S trydown r/a >/dev/null
$S trydown r/a >/dev/null
$S up r/a >/dev/null
$S set-limit r/a 3 >/dev/null
$S up r/a >/dev/null
t_wait_for 5 lines "$T/live.json" 6
kill -INT "$wpid"; wait "$wpid"
ok "every event has its revision, one more than the one before" consecutive "$T/live.json"
from=$(revs "$T/live.json" | cut -d' ' -f3)
"$SEMCTL" -s "$d_UNIX" --json watch r/ --from "$from" >"$T/again.json" 2>/dev/null &
wpid=$!
t_wait_for 5 lines "$T/again.json" 4
kill -INT "$wpid"; wait "$wpid"
expect_eq "--from REV: the kept events from REV on, as they were sent" \
	"$(events "$T/live.json" "$from")" "$(events "$T/again.json")"
out=$($S watch r/a --from 1000 2>&1)
expect_eq "--from a revision yet to come: exit 6" 6 "$?"
ok "... saying the last" sh -c "echo '$out' | grep -q 'the last is'"

# a small history: the first revisions are gone
i=0
while [ "$i" -lt 40 ]; do
	$S trydown r/a >/dev/null && $S up r/a >/dev/null
	i=$((i + 1))
done
$S watch r/ --from 1 >/dev/null 2>"$T/compacted.err"
expect_eq "a revision no longer kept: exit 6" 6 "$?"
ok "... compacted, saying the oldest kept" grep -q 'compacted: the oldest event kept is [0-9]' "$T/compacted.err"
oldest=$(sed -n 's/.*oldest event kept is \([0-9]*\).*/\1/p' "$T/compacted.err")
"$SEMCTL" -s "$d_UNIX" --json watch r/ --from "$oldest" >"$T/oldest.json" 2>/dev/null &
wpid=$!
t_wait_for 5 lines "$T/oldest.json" 2
kill -INT "$wpid"; wait "$wpid"
expect_eq "... and from the oldest kept: replayed" "$oldest" "$(revs "$T/oldest.json" | cut -d' ' -f1)"
kill "$d_PID"; wait "$d_PID" 2>/dev/null

# durable: a watcher away across a restart, while events happen
D=$T/data
start_semd e --data-dir "$D" || exit 1
E="$SEMCTL -s $e_UNIX"
# an event of z/ from before the watches: a resume must not replay it
$E create z/old --limit 1 >/dev/null
"$SEMCTL" -s "$e_UNIX" --json watch q/ >"$T/dur.json" 2>"$T/dur.err" &
wpid=$!
# and one that sees no event before the restart: it resumes after the
# daemon's last revision when it began (the Watch reply says it)
"$SEMCTL" -s "$e_UNIX" --json watch z/ >"$T/none.json" 2>"$T/none.err" &
zpid=$!
t_wait_for 5 sh -c "$E --json stats | grep -q '\"replies_watch_OK\":2'"
$E create q/a --limit 1 >/dev/null
$E down q/a --lease 1h >/dev/null
t_wait_for 5 lines "$T/dur.json" 2
kill -STOP "$wpid" "$zpid"
kill -KILL "$e_PID"; wait "$e_PID" 2>/dev/null
start_semd e --data-dir "$D" || exit 1
$E up q/a >/dev/null
$E set-limit q/a 2 >/dev/null
$E trydown q/a -n 2 >/dev/null
$E create z/a --limit 1 >/dev/null
$E trydown z/a >/dev/null
kill -CONT "$wpid" "$zpid"
t_wait_for 20 lines "$T/dur.json" 5
t_wait_for 20 lines "$T/none.json" 2
kill -INT "$wpid" "$zpid"; wait "$wpid"; wait "$zpid"
expect_eq "a watcher that saw no event: those made while it was away are there, none from before it began" \
	"create grant" \
	"$(python3 -c 'import json,sys; print(" ".join(json.loads(l)["event"] for l in open(sys.argv[1])))' "$T/none.json")"
ok "... it said it resumes from a revision" grep -q 'to resume from revision' "$T/none.err"
expect_eq "resumed after the restart: no event lost or repeated" \
	"create grant release limit grant" \
	"$(python3 -c 'import json,sys; print(" ".join(json.loads(l)["event"] for l in open(sys.argv[1])))' "$T/dur.json")"
ok "... in the order of their revisions" increasing "$T/dur.json"
expect_eq "... the events made while it was away are there" "create grant release limit grant" \
	"$(python3 -c 'import json,sys; print(" ".join(json.loads(l)["event"] for l in open(sys.argv[1])))' "$T/dur.json")"
ok "... it said it resumes" grep -q 'to resume from revision' "$T/dur.err"
t_done
