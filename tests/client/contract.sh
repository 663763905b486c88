# SPDX-License-Identifier: BSD-2-Clause
# tests/client/contract.sh - semctl's contract, exactly (semctl(1)): global
# options before or after the command, every command's own help and usage
# from the one command table, ranges said as ranges, NAME:N the same
# everywhere, --lease beyond the daemon's max-lease refused, one JSON object
# with "ok":false and the exit code for every failure, an interrupted wait
# that says so and holds nothing, "over the limit", cluster commands against
# an in-memory semd, and the daemon's labels and words for these cases.
. "$top_srcdir/tests/lib.sh"
t_watchdog 150
unset SEMD_TEST_DURABLE		# in memory: the cluster cases need it

# jget EXPR: evaluate a python expression on the JSON document j from stdin
jget() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }
# rc CMD...: run CMD, print its exit status (stdout discarded)
rc() { "$@" >/dev/null 2>&1; echo $?; }
# one_object RC FILE: FILE is exactly one JSON object with "ok":false and
# "exit" equal to RC (and the keys every failure has)
one_object() {
	python3 - "$1" "$2" <<'PY'
import json, sys
lines = open(sys.argv[2]).read().splitlines()
assert len(lines) == 1, lines
j = json.loads(lines[0])
assert j["ok"] is False and j["exit"] == int(sys.argv[1]), j
assert isinstance(j["error"], str) and isinstance(j["code"], int) and j["message"], j
PY
}

start_semd d --metrics-listen tcp:127.0.0.1:0 || exit 1
d_METRICS=$(sed -n 's/^metrics://p' "$T/d.ready")
S() { "$SEMCTL" -s "$d_UNIX" "$@"; }

# --- global options, before or after the command -------------------------------
expect_eq "-q before the command" 0 "$(rc "$SEMCTL" -q -s "$d_UNIX" down g/q)"
expect_eq "--quiet before the command" 0 "$(rc "$SEMCTL" --quiet -s "$d_UNIX" up g/q)"
for o in "-q" "--quiet" "-j" "--json" "--no-tls-resume" "--tls-ca $T/none.pem" \
	"--tls-cert $T/none.pem" "--tls-key $T/none.key"; do
	expect_eq "$o before the command" 0 "$(rc "$SEMCTL" $o -s "$d_UNIX" ping)"
	expect_eq "$o after the command" 0 "$(rc "$SEMCTL" ping $o -s "$d_UNIX")"
done
expect_eq "--server before" 0 "$(rc "$SEMCTL" --server "$d_UNIX" ping)"
expect_eq "--server after" 0 "$(rc "$SEMCTL" ping --server "$d_UNIX")"
expect_eq "-V after the command" "semctl 0.4.0" "$("$SEMCTL" ping -V)"
"$SEMCTL" --limit 3 down x >/dev/null 2>"$T/before.err"
expect_eq "a command's option before the command: usage" 2 $?
ok "... saying where it goes" grep -q "option '--limit' is a command's: put it after the command" "$T/before.err"

# --- per-command help and usage, from the table -----------------------------------
"$SEMCTL" down --help >"$T/h1" 2>&1
expect_eq "down --help exits 0" 0 $?
"$SEMCTL" help down >"$T/h2" 2>&1
expect_eq "help down exits 0" 0 $?
expect_eq "down --help: down's usage, not the global help" \
	"usage: semctl down NAME [-n N] [--timeout DUR] [--lease DUR] [--limit N] [--replace KEY] [--priority P] [--group KEY]" "$(head -n 1 "$T/h1")"
ok "help down and down --help say the same" cmp -s "$T/h1" "$T/h2"
ok "help down lists down's options" grep -q '^  --lease DUR ' "$T/h1"
expect_eq "help of an unknown command" 2 "$(rc "$SEMCTL" help frobnicate)"
for c in $("$SEMCTL" --json help | jget '" ".join(c["name"] for c in j["commands"])'); do
	"$SEMCTL" help "$c" >"$T/hc" 2>&1 && "$SEMCTL" "$c" --help >"$T/hd" 2>&1 &&
		head -n 1 "$T/hc" | grep -q "^usage: semctl $c" && cmp -s "$T/hc" "$T/hd"
	ok "help $c = $c --help: its own usage" test $? = 0
done
ok "--help lists help COMMAND" sh -c "'$SEMCTL' --help | grep -q '^  help \[COMMAND\]'"
# usage errors: the command's synopses as lines (no literal \n)
S run X >/dev/null 2>"$T/u1"
expect_eq "run without a command: usage" 2 $?
ok "... its synopses on lines of their own" sh -c "grep -q '^usage: semctl run NAME ' '$T/u1' && grep -q '^       semctl run NAME\[:N\] NAME\[:N\]\.\.\. ' '$T/u1'"
ok "... no literal \\n" sh -c "! grep -qF '\\n' '$T/u1'"
S create >/dev/null 2>"$T/u2"
expect_eq "create without arguments: usage" 2 $?
ok "create: its two synopses, no literal \\n" sh -c "grep -q '^usage: semctl create NAME --limit N' '$T/u2' && grep -q '^       semctl create NAME --rate R/UNIT' '$T/u2' && ! grep -qF '\\n' '$T/u2'"
ok "... and where to find help" grep -q "^Try 'semctl help create'" "$T/u2"

# --- --limit against another limit: both limits -----------------------------------
S create lim --limit 3 >/dev/null
S down lim --limit 5 >/dev/null 2>"$T/lim.err"
expect_eq "down --limit 5 on a limit-3 name" 6 $?
ok "... says the name has limit 3, not 5" grep -q "lim exists with limit 3, not 5" "$T/lim.err"
expect_eq "... and so does its JSON" "exists 6 lim exists with limit 3, not 5" \
	"$(S --json run lim --limit 5 -- true 2>/dev/null | jget 'j["error"], j["exit"], j["message"]')"

# --- ranges are said as ranges ------------------------------------------------------
S set-limit lim 99999999999 >/dev/null 2>"$T/r1"
expect_eq "set-limit 99999999999: usage" 2 $?
ok "... out of range, with the range" grep -q "99999999999 is out of range (1 to 1073741824)" "$T/r1"
S set-limit lim many >/dev/null 2>"$T/r2"
ok "set-limit many: not a number" grep -q "'many' is not a number" "$T/r2"
S down lim -n 0 >/dev/null 2>"$T/r3"
ok "-n 0: out of range, with the range" grep -q "0 is out of range (1 to 1073741824)" "$T/r3"
S down lim --lease 50d >/dev/null 2>"$T/r4"
expect_eq "--lease 50d: usage" 2 $?
ok "... out of range, with the range" grep -q "50d is out of range (at most 4294967295ms, 49d17h" "$T/r4"
# --lease beyond the daemon's max-lease (24h): refused, nothing held
S --json down lease/a --lease 30d >"$T/l1.json" 2>"$T/l1.err"
expect_eq "--lease 30d against a 24h max-lease: refused" 6 $?
ok "... saying the max-lease" grep -q -- "--lease 30d is more than this semd's max-lease (24h): refused, nothing was asked" "$T/l1.err"
ok "... one JSON failure" one_object 6 "$T/l1.json"
expect_eq "... with max_lease_ms" 86400000 "$(jget 'j["max_lease_ms"]' <"$T/l1.json")"
expect_eq "... and nothing held" 6 "$(rc S info lease/a)"
start_semd m --max-lease 2s || exit 1
expect_eq "--lease 5s against max-lease 2s: refused" 6 "$(rc "$SEMCTL" -s "$m_UNIX" down lease/b --lease 5s)"
expect_eq "... nothing held" 0 "$(rc "$SEMCTL" -s "$m_UNIX" trydown lease/b)"
"$SEMCTL" -s "$m_UNIX" up lease/b >/dev/null
expect_eq "--lease 2s is within it" 0 "$(rc "$SEMCTL" -s "$m_UNIX" down lease/c --lease 2s)"
# ... refused before it queues (issue 34): on a name held, it neither waits
# its turn nor takes a token (it waited, was granted, gave back and failed)
tok=$("$SEMCTL" -s "$m_UNIX" --json info lease/c | jget 'j["last_token"]')
"$SEMCTL" -s "$m_UNIX" down lease/c --lease 1h --timeout 20s >/dev/null 2>"$T/l2.err"
expect_eq "--lease 1h on a held name, max-lease 2s: refused at once" 6 $?
ok "... before queueing" grep -q "refused, nothing was asked" "$T/l2.err"
expect_eq "... no token taken" "$tok" "$("$SEMCTL" -s "$m_UNIX" --json info lease/c | jget 'j["last_token"]')"

# --- NAME:N means N permits, the same with one name or several -----------------------
S down m/a m/x:0 >/dev/null 2>"$T/n1"
expect_eq "down m/a m/x:0: usage" 2 $?
ok "... the count 0 is out of range" grep -q "'m/x:0': the count 0 is out of range" "$T/n1"
expect_eq "... and nothing was created" 0 "$(S --json list m/ | jget 'j["count"]')"
expect_eq "down m/b:2 (one name) takes 2 of m/b" "m/b 2 1" \
	"$(S --json down m/b:2 --limit 3 | jget 'j["name"], j["n"], 3 - 2')"
expect_eq "down m/c:2 m/d (several) takes 2 of m/c" "2 1" \
	"$(S --json down m/c:2 m/d --limit 2 | jget '" ".join(str(g["n"]) for g in j["grants"])')"
expect_eq "a name ending in :DIGITS is written NAME:DIGITS:1" "port:8080 1" \
	"$(S --json down port:8080:1 | jget 'j["name"], j["n"]')"
expect_eq "-n with NAME:N: the count twice" 2 "$(rc S down m/e:2 -n 2)"
expect_eq "trydown m/f:2 too" "2" "$(S --json trydown m/f:2 --limit 2 | jget 'j["n"]')"

# --- every --json failure: "ok":false and the exit code ------------------------------
S down busy >/dev/null
tok=$(S down stale); S up stale >/dev/null
fcase() { # RC DESC CMD...: semctl --json CMD fails with RC and one object
	want=$1 desc=$2; shift 2
	"$SEMCTL" -s "$d_UNIX" --json "$@" >"$T/f.json" 2>/dev/null
	got=$?
	expect_eq "$desc: exit $want" "$want" "$got"
	ok "$desc: one JSON failure with exit $want" one_object "$want" "$T/f.json"
}
fcase 6 "validate of a stale token" validate stale "$tok"
expect_eq "... says invalid_token and valid false" "invalid_token False" "$(jget 'j["error"], j["valid"]' <"$T/f.json")"
fcase 6 "info of a missing name" info nothing/here
fcase 6 "delete of a missing name" delete nothing/here
fcase 6 "up of nothing held" up nothing/here
fcase 6 "create of an existing name" create lim --limit 3
fcase 1 "trydown of a held name" trydown busy
fcase 1 "down that times out" down busy --timeout 100ms
fcase 2 "a usage error" down busy --timeout soon
fcase 6 "cluster status of an in-memory semd" cluster status
fcase 6 "cluster add to an in-memory semd" cluster add 2 127.0.0.1:1
fcase 6 "release of a missing permit" release busy --holder 999999
fcase 6 "renew of nothing held" renew nothing/here

# --- an interrupted wait says so, exits 128+N, holds nothing -------------------------
for sig in INT:2 TERM:15; do
	num=${sig#*:} sig=${sig%:*}
	"$SEMCTL" -s "$d_UNIX" --json down busy --timeout 30s >"$T/int.json" 2>"$T/int.err" &
	w=$!
	t_wait_for 10 sh -c "'$SEMCTL' -s '$d_UNIX' info busy | grep -q '^waiters: 1\$'"
	kill -s "$sig" "$w"
	wait "$w"
	got=$?
	want=$((128 + num))
	expect_eq "a waiting --json down stopped by SIG$sig exits $want" "$want" "$got"
	ok "... printing one JSON failure" one_object "$want" "$T/int.json"
	expect_eq "... interrupted, with the signal" "interrupted $num" \
		"$(jget 'j["error"], j["signal"]' <"$T/int.json")"
	ok "... saying nothing is held" grep -q "interrupted by SIG$sig while waiting; nothing is held" "$T/int.err"
	expect_eq "... and its waiter is gone" "1 0" "$(S --json info busy | jget 'j["holders_total"], j["waiters_total"]')"
done
rm -f "$T/ran"
"$SEMCTL" -s "$d_UNIX" run busy --timeout 30s -- touch "$T/ran" >/dev/null 2>&1 &
w=$!
t_wait_for 10 sh -c "'$SEMCTL' -s '$d_UNIX' info busy | grep -q '^waiters: 1\$'"
kill -TERM "$w"
wait "$w"
expect_eq "a waiting run stopped by SIGTERM exits 143" 143 $?
ok "... its command never ran" test ! -e "$T/ran"
expect_eq "... and its waiter is gone" 0 "$(S --json info busy | jget 'j["waiters_total"]')"

# --- over the limit -----------------------------------------------------------------
S create shrink --limit 3 >/dev/null
S down shrink -n 3 >/dev/null
S set-limit shrink 1 >/dev/null
ok "info after shrinking: 2 over the limit" sh -c "'$SEMCTL' -s '$d_UNIX' info shrink | grep -q '^shrink: limit 1, 2 over the limit, '"
expect_eq "info --json: over_limit" "2 -2" "$(S --json info shrink | jget 'j["over_limit"], j["available"]')"
ok "list: 2 over" sh -c "'$SEMCTL' -s '$d_UNIX' list shrink | grep -q ' 2 over '"

# --- cluster commands against an in-memory semd -------------------------------------
S cluster status >/dev/null 2>"$T/c1"
expect_eq "cluster status in memory: exit 6" 6 $?
ok "... not a cluster" grep -q "this semd is not a cluster: it keeps its state in memory" "$T/c1"
S cluster add 2 127.0.0.1:1 >/dev/null 2>"$T/c2"
expect_eq "cluster add in memory: exit 6" 6 $?
ok "... not a cluster" grep -q "this semd is not a cluster" "$T/c2"
ok "no protocol error in the daemon's log" sh -c "! grep -q 'protocol error' '$T/d.log'"
# without the admin right: the denial names the right
printf 'acl * * inspect,use,create\n' >"$T/noadmin.conf"
start_semd n --config "$T/noadmin.conf" || exit 1
"$SEMCTL" -s "$n_TCP" cluster add 2 127.0.0.1:1 >/dev/null 2>"$T/c3"
expect_eq "cluster add without admin: permission denied" 4 $?
ok "... naming what and which right" grep -q "anonymous may not change the cluster: that needs the admin right on every name" "$T/c3"

# --- the daemon's labels and words ---------------------------------------------------
S create del --limit 1 >/dev/null
S down del >/dev/null
S delete del >/dev/null 2>"$T/del.err"
ok "delete in use: names --force" grep -q "delete it with force (semctl delete --force)" "$T/del.err"
# a run's hold deleted by force: its session gets a HoldLost notice (CANCELLED)
rm -f "$T/started"
"$SEMCTL" -s "$d_UNIX" run held -- sh -c "touch '$T/started'; i=0; while [ \$i -lt 200 ]; do sleep 0.05; i=\$((i+1)); done" >/dev/null 2>&1 &
w=$!
t_wait_for 10 test -e "$T/started"
S delete held --force >/dev/null
wait "$w"
expect_eq "the run whose hold was deleted exits 5" 5 $?
$PROBE "$d_UNIX" hello "raw 0000000108" expect-eof >"$T/trunc.out" 2>&1
ok "an undecodable request: PROTOCOL_ERROR" grep -q 'code=PROTOCOL_ERROR' "$T/trunc.out"
python3 - "http://$d_METRICS/metrics" >"$T/metrics.txt" <<'PY'
import sys, urllib.request
assert sys.argv[1].startswith("http://127.0.0.1:")
print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())
PY
ok "metrics: no op=\"unknown\"" sh -c "! grep -q 'op=\"unknown\"' '$T/metrics.txt'"
ok "metrics: the HoldLost notice under op=\"notice\"" grep -q '^semd_requests_total{op="notice",code="CANCELLED"} [1-9]' "$T/metrics.txt"
ok "metrics: the undecodable request under op=\"invalid_request\"" grep -q '^semd_requests_total{op="invalid_request",code="PROTOCOL_ERROR"} [1-9]' "$T/metrics.txt"
ok "stats: the same labels" sh -c "'$SEMCTL' -s '$d_UNIX' stats | grep -q '^replies_notice_CANCELLED '"

t_done
