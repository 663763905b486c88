#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/client/features.sh - semctl's commands of issue 15 against the real
# semd: create --rate and set-rate, multi-name down, trydown and run (with
# SEMD_TOKENS), the progress line on a terminal (and its absence off one,
# or with --quiet), --progress's log lines and -E's exit, watch (lines and JSON), renew and holds; JSON parsed by
# python3.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120

jget() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }
rc() { "$@" >/dev/null 2>&1; echo $?; }
# now_ms: the test's one clock (monotonic, milliseconds)
now_ms() { python3 -c 'import time; print(int(time.monotonic() * 1000))'; }
# queued NAME: a down waits on NAME
queued() { "$SEMCTL" -s "$d_UNIX" info "$1" 2>/dev/null | grep -q '^waiters: 1$'; }

start_semd d || exit 1
S() { "$SEMCTL" -s "$d_UNIX" "$@"; }

# --- rates --------------------------------------------------------------------
expect_eq "create --rate" "created api (rate 2/s, burst 2)" "$(S create api --rate 2/s --burst 2)"
expect_eq "create --rate --limit" "created gh (limit 3, rate 5000/h, burst 100)" \
	"$(S create gh --rate 5000/h --burst 100 --limit 3)"
expect_eq "create: --burst needs --rate" 2 "$(rc S create x --limit 1 --burst 3)"
expect_eq "create: no rate on signal mode" 2 "$(rc S create x --limit 1 --mode signal --rate 1/s)"
expect_eq "create: a bad rate" 2 "$(rc S create x --rate 5/fortnight)"
expect_eq "info --json: the bucket" "rate 2 1000 2" \
	"$(S --json info api | jget '" ".join(map(str, (j["mode"], j["rate"], j["rate_period_ms"], j["burst"])))')"
ok "info: the rate line" sh -c "'$SEMCTL' -s '$d_UNIX' info api | grep -q '^rate: 2/s, burst 2, 2.000 tokens now (full)'"
expect_eq "trydown takes tokens" 0 "$(rc S trydown api -n 2)"
# (would block: on a name whose next token is an hour away, so that a slow
# machine's gap between two commands refills nothing)
S create hourly --rate 1/h --burst 1 >/dev/null
S trydown hourly >/dev/null
out=$(S trydown hourly 2>&1; echo "rc=$?")
ok "then it would block, saying so in tokens" sh -c "echo '$out' | grep -q 'tokens in the bucket' && echo '$out' | grep -q '^rc=1'"
expect_eq "down waits for the next token" 0 "$(rc S down api --timeout 2s)"
expect_eq "no up on a rate-only name" 6 "$(rc S up api)"
expect_eq "set-rate" "api: rate 3/min, burst 1" "$(S set-rate api 3/min --burst 1)"
expect_eq "set-rate 0 of a rate-only name" 6 "$(rc S set-rate api 0)"
expect_eq "set-rate 0 of a limit's name" "gh: no rate" "$(S set-rate gh 0)"
expect_eq "set-rate --json" "3 60000 3" "$(S --json set-rate gh 3/min | jget '" ".join(map(str, (j["rate"], j["rate_period_ms"], j["burst"])))')"

# --- several names at once ------------------------------------------------------
S create db --limit 1 >/dev/null
S create lic --limit 4 >/dev/null
out=$(S --json down db lic:2 --lease 1m)
expect_eq "down of two names: both" "db lic 1 2" \
	"$(echo "$out" | jget '" ".join([g["name"] for g in j["grants"]] + [str(g["n"]) for g in j["grants"]])')"
expect_eq "trydown of two: would block, nothing taken" 1 "$(rc S trydown db lic:2)"
expect_eq "lic is not half-taken" 2 "$(S --json info lic | jget 'j["available"]')"
S up db >/dev/null
S up lic -n 2 >/dev/null
expect_eq "down text: a token a line" 2 "$(S down db lic:2 --lease 1m | wc -l)"
S up db >/dev/null
S up lic -n 2 >/dev/null
expect_eq "-n with several names is a usage error" 2 "$(rc S down db lic -n 2)"
out=$(S run db lic:3 -- sh -c 'printf "%s|%s" "$SEMD_NAME" "$SEMD_TOKENS"')
ok "run of two names: SEMD_NAME and SEMD_TOKENS" sh -c "echo '$out' | grep -q '^db|db=[0-9]*' && echo '$out' | grep -q '^lic=[0-9]*'"
expect_eq "run of two names: given back after" 4 "$(S --json info lic | jget 'j["available"]')"
expect_eq "run of two names: the command's status" 3 "$(rc S run db lic -- sh -c 'exit 3')"
expect_eq "run --json: both grants" 2 "$(S --json run db lic:2 -- true | jget 'len(j["grants"])')"

# --- the progress line ----------------------------------------------------------
# (the up comes once the line is drawn, or the down has waited 10 s: not
# after a fixed time that a loaded machine could outrun)
S down db --lease 1m >/dev/null
( t_wait_for 10 grep -q 'waiting for db' "$T/pty.out"; S up db >/dev/null ) &
bpid=$!
python3 "$top_srcdir/tests/client/ptyrun.py" 60 "$SEMCTL" -s "$d_UNIX" down db --timeout 30s >"$T/pty.out" 2>&1
wait "$bpid"
ok "on a terminal: where it stands, drawn in place" has "waiting for db: 1st of 1 in line, 1/1 held, [0-9]* s" "$T/pty.out"
ok "on a terminal: the line is erased before the token" python3 -c '
import re, sys
sys.exit(0 if re.search(rb"\r\x1b\[K[0-9]+\r?\n", open(sys.argv[1], "rb").read()) else 1)' "$T/pty.out"
S up db >/dev/null
# (no line: the down is given back its permit once it has waited in line
# for 1.5 s, past when the line would be drawn)
S down db --lease 1m >/dev/null
( t_wait_for 10 queued db; sleep 1.5; S up db >/dev/null ) &
bpid=$!
python3 "$top_srcdir/tests/client/ptyrun.py" 60 "$SEMCTL" -s "$d_UNIX" --quiet down db --timeout 30s >"$T/quiet.out" 2>&1
wait "$bpid"
ok "--quiet: no progress line" sh -c "! grep -q 'waiting for' '$T/quiet.out'"
S up db >/dev/null
S down db --lease 1m >/dev/null
( t_wait_for 10 queued db; sleep 1.5; S up db >/dev/null ) &
bpid=$!
S down db --timeout 30s >/dev/null 2>"$T/notty.err"
wait "$bpid"
ok "not a terminal: no progress line" sh -c "! grep -q 'waiting for' '$T/notty.err'"
S up db >/dev/null

# --progress: a log line every SECS, terminal or not, with who holds it; the
# up comes once two lines are there (or 20 s passed)
S down db --lease 1m >/dev/null
( t_wait_for 20 sh -c "test \$(grep -c 'waited' '$T/log.err') -ge 2"; S up db >/dev/null ) &
bpid=$!
S down db --timeout 60s --progress=1 >"$T/log.out" 2>"$T/log.err"
expect_eq "--progress: the down got it" 0 "$?"
wait "$bpid"
ok "--progress: a line a second, off a terminal" sh -c "test \$(grep -c '^semctl: down: waited [0-9.]*s for db: 1st of 1 in line, 1/1 held by uid:[0-9]* (semctl@[^ ]* pid [0-9]*, for [0-9.]*[ms]*)$' '$T/log.err') -ge 2"
ok "--progress: no terminal escapes" sh -c "! grep -q \"\$(printf '\\033')\" '$T/log.err'"
ok "--progress: the token on stdout only" grep -qx '[0-9]*' "$T/log.out"
S up db >/dev/null
expect_eq "--progress=0 is a usage error" 2 "$(rc S down db --progress=0)"
expect_eq "--progress does not apply to up" 2 "$(rc S up db --progress)"

# -E N: not got (timed out, would block) told apart from the command's own 1
S down db --lease 1m >/dev/null
expect_eq "trydown -E 75: would block" 75 "$(rc S trydown db -E 75)"
expect_eq "down -E 75: timed out" 75 "$(rc S down db --timeout 100ms -E 75)"
expect_eq "run --conflict-exit-code 9: timed out" 9 "$(rc S run db --timeout 100ms --conflict-exit-code 9 -- true)"
expect_eq "-E 0" 0 "$(rc S trydown db -E 0)"
expect_eq "--json: the exit says -E's" "would_block 75" \
	"$(S --json trydown db -E 75 2>/dev/null | jget 'j["error"] + " " + str(j["exit"])')"
expect_eq "without -E: 1" 1 "$(rc S trydown db)"
S up db >/dev/null
expect_eq "run -E 9: the command's own 1 stays 1" 1 "$(rc S run db -E 9 -- sh -c 'exit 1')"
expect_eq "-E: not another error" 6 "$(rc S trydown db --limit 5 -E 75)"
expect_eq "-E 256 is a usage error" 2 "$(rc S trydown db -E 256)"

# --- watch ----------------------------------------------------------------------
# (semctl itself in the background, not a shell function: $! is its pid)
"$SEMCTL" -s "$d_UNIX" --json watch w/ >"$T/watch.json" 2>"$T/watch.err" &
wpid=$!
t_wait_for 5 sh -c "'$SEMCTL' -s '$d_UNIX' --json stats | grep -q '\"replies_watch_OK\":1'"
S create w/a --limit 1 >/dev/null
S trydown w/a >/dev/null
S set-limit w/a 2 >/dev/null
S delete w/a --force >/dev/null
t_wait_for 5 sh -c "test \$(wc -l <'$T/watch.json') -ge 5"
kill -INT "$wpid"
wait "$wpid"
expect_eq "watch: interrupted, exit 0" 0 "$?"
expect_eq "watch --json: one object a line, in order" "create grant limit release delete" \
	"$(python3 -c 'import json,sys; print(" ".join(json.loads(l)["event"] for l in open(sys.argv[1])))' "$T/watch.json")"
"$SEMCTL" -s "$d_UNIX" watch w/a >"$T/watch.txt" 2>"$T/watch2.err" &
wpid=$!
t_wait_for 5 grep -q watching "$T/watch2.err"
S trydown w/a >/dev/null
t_wait_for 5 grep -q grant "$T/watch.txt"
kill -TERM "$wpid"
wait "$wpid"
ok "watch: a line an event" grep -q '^[0-9-]* [0-9:.]* grant    w/a n=1 permit=[0-9]* token=[0-9]* request=[0-9]* by uid:' "$T/watch.txt"
S up w/a >/dev/null

# --- renew, holds -----------------------------------------------------------------
# (the first lease, 5 s, counts from the down, after t0: past t0 + 5.2 s on
# the test's clock it has run out, had the renew not made it an hour)
t0=$(now_ms)
S down r --lease 5s >/dev/null
ok "renew" sh -c "'$SEMCTL' -s '$d_UNIX' renew r --lease 1h | grep -q '^renewed 1 hold(s) of r until '"
expect_eq "renew --json" 1 "$(S --json renew r | jget 'j["renewed"]')"
expect_eq "renew of nothing held" 6 "$(rc S renew db)"
left=$((t0 + 5200 - $(now_ms)))
[ "$left" -le 0 ] || sleep "$(awk -v ms="$left" 'BEGIN { printf "%.3f", ms / 1000 }')"
expect_eq "renewed: still held after its first lease" 1 "$(rc S trydown r)"
ok "holds lists the hold" sh -c "'$SEMCTL' -s '$d_UNIX' holds | grep -q '^r  *[0-9]'"
expect_eq "holds --json" True "$(S --json holds | jget '"r" in [h["name"] for h in j["holds"]]')"
expect_eq "holds --principal (an administrator)" True \
	"$(S --json holds --principal "uid:$(id -u)" | jget 'j["count"] >= 1')"
t_done
