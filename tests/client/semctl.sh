# SPDX-License-Identifier: BSD-2-Clause
# tests/client/semctl.sh - every semctl command and exit code against the
# real semd; JSON output parsed by python3; run's environment, exit status,
# signal forwarding, and its lost-hold handling (kill -9 of the daemon).
. "$top_srcdir/tests/lib.sh"
t_watchdog 150

json_ok() { python3 -c 'import json,sys; json.load(sys.stdin)'; }
# jget EXPR: evaluate a python expression on the JSON document j from stdin
jget() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }
# rc CMD...: run CMD, print its exit status (stdout discarded)
rc() { "$@" >/dev/null 2>&1; echo $?; }
# now_ms: the test's one clock (monotonic, milliseconds)
now_ms() { python3 -c 'import time; print(int(time.monotonic() * 1000))'; }

start_semd d || exit 1
S() { "$SEMCTL" -s "$d_UNIX" "$@"; }
ST() { "$SEMCTL" -s "$d_TCP" "$@"; }

# --- usage and global options -------------------------------------------------
expect_eq "--help exits 0" 0 "$(rc "$SEMCTL" --help)"
ok "--help lists the commands" sh -c "'$SEMCTL' --help | grep -q 'set-limit NAME N'"
expect_eq "--version" "semctl 0.4.0" "$("$SEMCTL" --version)"
expect_eq "no command is a usage error" 2 "$(rc "$SEMCTL")"
expect_eq "unknown command" 2 "$(rc S frobnicate)"
expect_eq "unknown option" 2 "$(rc S ping --bogus)"
expect_eq "option of another command" 2 "$(rc S info x --force)"
expect_eq "bad duration" 2 "$(rc S down x --timeout 5parsecs)"
expect_eq "bad count" 2 "$(rc S down x -n 0)"
expect_eq "bad address" 2 "$(rc "$SEMCTL" -s 'tcp:' ping)"
expect_eq "missing argument" 2 "$(rc S info)"
expect_eq "create needs --limit" 2 "$(rc S create x)"
expect_eq "bad mode" 2 "$(rc S create x --limit 1 --mode shared)"
expect_eq "cannot reach the server" 3 "$(rc "$SEMCTL" -s "unix:$T/none.sock" ping)"
expect_eq "-s after the command" 0 "$(rc "$SEMCTL" ping -s "$d_UNIX")"
expect_eq "SEMD_SERVER is the default address" 0 "$(SEMD_SERVER=$d_UNIX rc "$SEMCTL" ping)"
out=$("$SEMCTL" -s "unix:$T/none.sock" --json ping 2>/dev/null)
expect_eq "unreachable: JSON error" "connect 3" "$(echo "$out" | jget 'j["error"], j["exit"]')"

# --- bash completion ------------------------------------------------------------
# The completion asks semctl itself (semctl __complete): the one built here.
comp() { # WORDS...: what the completion offers for the last word
	PATH="$top_builddir:$PATH" bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _semctl; echo "${COMPREPLY[*]}"' \
		_ "$top_srcdir/cli/semctl.bash-completion" "$@"
}
expect_eq "completion: commands" "create" "$(comp semctl cr)"
expect_eq "completion: after -s ADDR" "info" "$(comp semctl -s unix:/x inf)"
expect_eq "completion: options" "--mode" "$(comp semctl create x --mo)"
expect_eq "completion: --mode values" "owned signal" "$(comp semctl create x --mode '')"
expect_eq "completion: delete --force" "--force" "$(comp semctl delete x --f)"
ok "completion: the command after run --" test -n "$(comp semctl run x -- ech)"
help_cmds=$("$SEMCTL" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' | sort -u | tr '\n' ' ')
comp_cmds=$(comp semctl '' | tr ' ' '\n' | sort | tr '\n' ' ')
expect_eq "completion offers exactly the commands of --help" "$help_cmds" "$comp_cmds"

# --- ping, stats --------------------------------------------------------------
ok "ping over UNIX" S ping
expect_eq "ping --json over TCP: anonymous" anonymous "$(ST --json ping | jget 'j["principal"]')"
ok "stats" sh -c "'$SEMCTL' -s '$d_UNIX' stats | grep -q semaphores"
ok "stats --json parses" sh -c "'$SEMCTL' -s '$d_UNIX' --json stats | python3 -c 'import json,sys; assert isinstance(json.load(sys.stdin)[\"counters\"], dict)'"

# --- create, down, info, validate, up ------------------------------------------
expect_eq "create" 0 "$(rc S create jobs --limit 2)"
expect_eq "create again: exists" 6 "$(rc S create jobs --limit 2)"
expect_eq "create --json" "sig 3 signal" "$(S create sig --limit 3 --mode signal --json | jget 'j["name"], j["limit"], j["mode"]')"
tok=$(S down jobs)
expect_eq "down exits 0" 0 $?
ok "down prints a numeric token" sh -c "echo '$tok' | grep -Eq '^[0-9]+$'"
info=$(S --json info jobs)
echo "$info" | json_ok
expect_eq "the hold outlives the CLI (detached)" "1 True 1" "$(echo "$info" | jget 'len(j["holders"]), j["holders"][0]["detached"], j["available"]')"
expect_eq "info holder token" "$tok" "$(echo "$info" | jget 'j["holders"][0]["token"]')"
expect_eq "info holder client" semctl "$(echo "$info" | jget 'j["holders"][0]["client_name"]')"
ok "info plain shows the holder" sh -c "'$SEMCTL' -s '$d_UNIX' info jobs | grep -q '$tok'"
expect_eq "validate a held token" 0 "$(rc S validate jobs "$tok")"
expect_eq "validate --json" True "$(S --json validate jobs "$tok" | jget 'j["valid"]')"
tok2=$(S down jobs -n 1 --timeout 1s)
expect_eq "trydown on a full semaphore would block" 1 "$(rc S trydown jobs)"
# (the daemon counts 300 ms from the request: no less on the test's clock;
# the upper bound only tells a timeout from none, with room for a loaded machine)
t0=$(now_ms)
expect_eq "down --timeout 300ms times out" 1 "$(rc S down jobs --timeout 300ms)"
el=$(( $(now_ms) - t0 ))
ok "the timeout took 300 ms or more, not forever ($el ms)" test "$el" -ge 300 -a "$el" -lt 10000
out=$(S --json trydown jobs 2>/dev/null)
expect_eq "would block: JSON" "would_block 1" "$(echo "$out" | jget 'j["error"], j["exit"]')"

# a waiter in the queue shows in info, with its wait time (its timeout is
# far longer than the checks before the up, however slow the machine)
S down jobs --timeout 60s >"$T/waiter.out" 2>&1 &
wpid=$!
t_wait_for 5 sh -c "'$SEMCTL' -s '$d_UNIX' --json info jobs | python3 -c 'import json,sys; assert len(json.load(sys.stdin)[\"waiters\"]) == 1'"
expect_eq "info shows the waiter" "1 1 2" "$(S --json info jobs | jget 'len(j["waiters"]), j["waiters_total"], j["holders_total"]')"
ok "info plain shows the waiter" sh -c "'$SEMCTL' -s '$d_UNIX' info jobs | grep -q '^waiters: 1'"
expect_eq "up" 0 "$(rc S up jobs)"
wait $wpid
expect_eq "the waiter got the permit" 0 $?
expect_eq "up --json" 1 "$(S --json up jobs | jget 'j["released"]')"
expect_eq "up again (the waiter's permit is ours too: same uid)" 0 "$(rc S up jobs)"
expect_eq "up with nothing held: not holder" 6 "$(rc S up jobs)"
expect_eq "validate a released token" 6 "$(rc S validate jobs "$tok")"
expect_eq "validate --json of a released token" False "$(S --json validate jobs "$tok2" 2>/dev/null | jget 'j["valid"]')"

# a lease ends a detached hold
S down jobs --lease 500ms >/dev/null
ok "a leased hold expires" t_wait_for 5 sh -c "'$SEMCTL' -s '$d_UNIX' --json info jobs | python3 -c 'import json,sys; assert json.load(sys.stdin)[\"available\"] == 2'"
expect_eq "down --json" "jobs 2" "$(S --json down jobs -n 2 | jget 'j["name"], j["n"]')"
expect_eq "up -n 2" 0 "$(rc S up jobs -n 2)"

# --- list, set-limit, release, delete ------------------------------------------
S create 'list/a' --limit 1 >/dev/null
S create 'list/b' --limit 4 >/dev/null
S create 'we"ird\name' --limit 1 >/dev/null
expect_eq "list PREFIX" 2 "$(S list list/ | tail -n +2 | wc -l)"
expect_eq "list --json PREFIX" "2 list/a" "$(S --json list list/ | jget 'j["count"], j["semaphores"][0]["name"]')"
expect_eq "JSON escapes quotes and backslashes" 'we"ird\name' "$(S --json list we | jget 'j["semaphores"][0]["name"]')"
expect_eq "list everything" 5 "$(S --json list | jget 'j["count"]')"
expect_eq "list --max 1" 1 "$(S list list/ --max 1 2>"$T/list.err" | tail -n +2 | wc -l)"
ok "list --max says where to go on" grep -q -- "--after list/a" "$T/list.err"
expect_eq "list --json --max 1: count and next" "1 list/a" "$(S --json list list/ --max 1 | jget 'j["count"], j["next"]')"
expect_eq "list --after" "1 list/b" "$(S --json list list/ --after list/a | jget 'j["count"], j["semaphores"][0]["name"]')"
expect_eq "list --max 2 at the end: no next" "2 None" "$(S --json list list/ --max 2 | jget 'j["count"], j.get("next")')"
expect_eq "list --max 0 is a usage error" 2 "$(rc S list --max 0)"
expect_eq "set-limit" 0 "$(rc S set-limit list/a 3)"
expect_eq "set-limit took" 3 "$(S --json info list/a | jget 'j["limit"]')"
expect_eq "set-limit --json" 5 "$(S --json set-limit list/a 5 | jget 'j["limit"]')"
expect_eq "set-limit of a missing name" 6 "$(rc S set-limit nothing 3)"
expect_eq "set-limit N must be a number" 2 "$(rc S set-limit list/a many)"
pid=$(S --json down list/b | jget 'j["permit_id"]')
expect_eq "release --holder" 0 "$(rc S release list/b --holder "$pid")"
expect_eq "release freed it" 4 "$(S --json info list/b | jget 'j["available"]')"
expect_eq "release of a missing permit" 6 "$(rc S release list/b --holder "$pid")"
expect_eq "release needs --holder" 2 "$(rc S release list/b)"
S down list/b >/dev/null
expect_eq "delete" 0 "$(rc S delete list/a)"
expect_eq "delete again: not found" 6 "$(rc S delete list/a)"
expect_eq "info of a missing name" 6 "$(rc S info list/a)"
expect_eq "delete --force with a holder" 0 "$(rc S delete list/b --force)"
expect_eq "delete --json" True "$(S --json delete 'we"ird\name' | jget 'j["ok"]')"

# --- permission denied: a daemon whose configuration protects secret/ -----------
printf 'protect secret/\nacl * secret/ro inspect\n' >"$T/acl.conf"
start_semd acl --config "$T/acl.conf" || exit 1
expect_eq "use of a protected name: permission denied" 4 "$(rc "$SEMCTL" -s "$acl_UNIX" down secret/x --timeout 1s)"
expect_eq "admin of a protected name: permission denied" 4 "$(rc "$SEMCTL" -s "$acl_UNIX" create secret/ro --limit 1)"
out=$("$SEMCTL" -s "$acl_UNIX" --json trydown secret/x 2>/dev/null)
expect_eq "permission denied: JSON" "permission_denied 4" "$(echo "$out" | jget 'j["error"], j["exit"]')"
expect_eq "inspect allowed, name missing: not found" 6 "$(rc "$SEMCTL" -s "$acl_UNIX" info secret/ro)"
expect_eq "names outside secret/ are open" 0 "$(rc "$SEMCTL" -s "$acl_UNIX" trydown open/x)"

# --- run -----------------------------------------------------------------------
S create r --limit 1 >/dev/null
out=$(S run r -- sh -c 'echo "$SEMD_NAME $SEMD_TOKEN"; exit 3')
expect_eq "run exits with the command's status" 3 $?
set -- $out
expect_eq "run exports SEMD_NAME" r "$1"
ok "run exports SEMD_TOKEN" sh -c "echo '$2' | grep -Eq '^[0-9]+$'"
expect_eq "run: the token was valid while it ran" 0 "$(S run r -- sh -c "'$SEMCTL' -s '$d_UNIX' validate r \"\$SEMD_TOKEN\" >/dev/null" ; echo $?)"
expect_eq "run released the permit" 1 "$(S --json info r | jget 'j["available"]')"
expect_eq "run: status 0" 0 "$(rc S run r -- true)"
expect_eq "run: command killed by a signal" 137 "$(rc S run r -- sh -c 'kill -9 $$')"
expect_eq "run: command not found" 127 "$(rc S run r -- /nonexistent/cmd)"
expect_eq "run without a command" 2 "$(rc S run r)"
S down r >/dev/null
expect_eq "run --timeout on a held semaphore" 1 "$(rc S run r --timeout 200ms -- touch "$T/ran")"
ok "the command did not run" test ! -e "$T/ran"
S up r >/dev/null

# signal forwarding: TERM, INT and HUP reach the command; run exits with its status
for sig in TERM INT HUP; do
	rm -f "$T/started" "$T/got"
	"$SEMCTL" -s "$d_UNIX" run r -- sh -c "trap 'echo $sig > \"$T/got\"; exit 42' $sig; touch '$T/started'; i=0; while [ \$i -lt 200 ]; do sleep 0.05; i=\$((i+1)); done" &
	rpid=$!
	t_wait_for 5 test -e "$T/started"
	kill -s "$sig" "$rpid"
	wait "$rpid"
	expect_eq "run forwards SIG$sig and exits with the command's status" 42 $?
	expect_eq "the command saw SIG$sig" "$sig" "$(cat "$T/got" 2>/dev/null)"
done

# semctl itself killed: its command must not run on without the permit
rm -f "$T/started" "$T/got"
"$SEMCTL" -s "$d_UNIX" run r -- sh -c "trap 'echo orphan > \"$T/got\"; exit 0' TERM; touch '$T/started'; i=0; while [ \$i -lt 200 ]; do sleep 0.05; i=\$((i+1)); done" &
rpid=$!
t_wait_for 5 test -e "$T/started"
kill -9 "$rpid"
wait "$rpid" 2>/dev/null
ok "the command of a killed semctl run gets SIGTERM" t_wait_for 5 test -s "$T/got"

# lost hold: the daemon dies under a running command
rm -f "$T/started" "$T/got"
"$SEMCTL" -s "$d_UNIX" run r2 -- sh -c "trap 'echo lost > \"$T/got\"; exit 0' TERM; touch '$T/started'; i=0; while [ \$i -lt 600 ]; do sleep 0.05; i=\$((i+1)); done" 2>"$T/run.err" &
rpid=$!
t_wait_for 5 test -e "$T/started"
t0=$(now_ms)
kill -9 "$d_PID"
wait "$rpid"
expect_eq "run exits 5 when the hold is lost" 5 $?
expect_eq "the command was terminated" lost "$(cat "$T/got" 2>/dev/null)"
el=$(( $(now_ms) - t0 ))
if [ -n "${SEMD_TEST_DURABLE:-}" ]; then
	# semd keeps its state: the session waits for it to come back, until
	# only the grace (2 s) is left of the client-side lease (10 s less 1%
	# and 500 ms from the last ping answered, which went out up to a third
	# of the lease before the kill): SIGTERM 4.1 (less a reply) to 7.4 s
	# after the kill; later on a loaded machine, never sooner
	ok "with a data directory the session waits out its lease ($el ms)" \
		test "$el" -ge 3500 -a "$el" -le 15000
	ok "run said why" grep -q "did not answer for most of the session's lease" "$T/run.err"
else
	# (the lease would end it 4.1 s or more after the kill)
	ok "at once: over UNIX the close ended the session ($el ms)" test "$el" -le 3000
	ok "run said why" grep -q "hold was lost" "$T/run.err"
fi

# a command that ignores SIGTERM is killed after the grace period
start_semd e || exit 1
rm -f "$T/started"
"$SEMCTL" -s "$e_UNIX" run r -- sh -c "trap '' TERM; touch '$T/started'; i=0; while [ \$i -lt 600 ]; do sleep 0.05; i=\$((i+1)); done" 2>/dev/null &
rpid=$!
t_wait_for 5 test -e "$T/started"
kill -9 "$e_PID"
wait "$rpid"
expect_eq "a command ignoring SIGTERM is killed; run exits 5" 5 $?

# --lease and --grace: the daemon stops answering (SIGSTOP, the socket stays
# open). With a 1 s lease the client-side lease ends 940 ms after the last
# answered ping at most (0.99 s less the 50 ms margin): with no grace the
# command is killed then.
start_semd f || exit 1
rm -f "$T/started"
"$SEMCTL" -s "$f_UNIX" run r --lease 1s --grace 0 -- sh -c "trap '' TERM; touch '$T/started'; i=0; while [ \$i -lt 600 ]; do sleep 0.05; i=\$((i+1)); done" 2>/dev/null &
rpid=$!
t_wait_for 5 test -e "$T/started"
t0=$(now_ms)
kill -STOP "$f_PID"
wait "$rpid"
expect_eq "run --lease 1s --grace 0: hold lost, run exits 5" 5 $?
el=$(( $(now_ms) - t0 ))
kill -CONT "$f_PID"
# (0.94 s at most after the last answered ping, which came before the
# stop; the bound leaves a loaded machine 2 s to schedule and reap)
ok "run --lease 1s --grace 0 ended about the client-side lease after the stop ($el ms)" \
	test "$el" -le 3000
expect_eq "run --grace needs a duration" 2 "$(rc S run r --grace soon -- true)"
expect_eq "run --lease 0: no lease, accepted" 0 "$(rc "$SEMCTL" -s "$f_UNIX" run r --lease 0 -- true)"
expect_eq "run --lease 100ms is too short" 2 "$(rc "$SEMCTL" -s "$f_UNIX" run r --lease 100ms -- true)"

# --- issue 11's small ones (against f) ------------------------------------------
F() { "$SEMCTL" -s "$f_UNIX" "$@"; }
# waiters NAME N: N downs wait on NAME (semctl info says so).
waiters() { F info "$1" | grep -qE "^waiters: $2( |\$)"; }
# up_grants NAME PID DESC: an up of NAME lets the waiting semctl PID
# through (it exits 0).
up_grants() {
	F up "$1" >/dev/null
	wait "$2"
	expect_eq "$3" 0 "$?"
}
# --json: exactly one JSON object for a usage error, wherever --json is
for args in "--json frobnicate" "info --bogus --json" "--json down x -n 0" "run r --json" "--json create x"; do
	out=$("$SEMCTL" -s "$f_UNIX" $args 2>/dev/null)
	expect_eq "usage error as JSON: semctl $args" "1 usage 2" \
		"$(printf '%s\n' "$out" | python3 -c 'import json,sys; l=sys.stdin.read().splitlines(); j=json.loads(l[0]); print(len(l), j["error"], j["exit"])')"
done
expect_eq "--timeout 1min" 0 "$(rc F down min1 --timeout 1min)"
expect_eq "--timeout 2m still" 0 "$(rc F down min2 --timeout 2m)"
# create --mode signal --initial N
expect_eq "create --initial 0 (signal)" 0 "$(rc F create sig0 --limit 2 --mode signal --initial 0)"
expect_eq "nothing free at first" 1 "$(rc F trydown sig0)"
F up sig0 >/dev/null
expect_eq "free after an up" 0 "$(rc F trydown sig0)"
expect_eq "--initial needs --mode signal" 2 "$(rc F create sig1 --limit 2 --initial 0)"
expect_eq "--initial above the limit" 2 "$(rc F create sig1 --limit 2 --mode signal --initial 3)"
expect_eq "create --json --initial" "2 0" "$(F --json create sig2 --limit 2 --mode signal --initial 0 | jget 'j["limit"], j["initial"]')"
# down/run --limit N: create a missing name with that limit, EXISTS if it has another
expect_eq "down --limit 3 creates the name" 0 "$(rc F down lim --limit 3)"
expect_eq "with limit 3" 3 "$(F --json info lim | jget 'j["limit"]')"
expect_eq "down --limit 3 again" 0 "$(rc F down lim --limit 3)"
expect_eq "down --limit 4: exists with another limit" 6 "$(rc F down lim --limit 4)"
ok "... and says so" sh -c "'$SEMCTL' -s '$f_UNIX' down lim --limit 4 2>&1 | grep -q 'lim exists with limit 3, not 4'"
expect_eq "run --limit 4: exists" "exists 6" "$(F --json run lim --limit 4 -- true 2>/dev/null | jget 'j["error"], j["exit"]')"
expect_eq "run --limit 2 creates" 0 "$(rc F run lim2 --limit 2 -- true)"
# run --json: one object for the command's outcome, after the command's output
out=$(F --json run lim2 -- sh -c 'echo hello; exit 3')
expect_eq "run --json: the command's output, then one object" "hello|True 3 3" \
	"$(printf '%s\n' "$out" | python3 -c 'import json,sys; l=sys.stdin.read().splitlines(); j=json.loads(l[-1]); print(l[0] + "|" + str(j["ok"]), j["status"], j["exit"])')"
expect_eq "run --json: killed by a signal" "9 137" "$(F --json run lim2 -- sh -c 'kill -9 $$' | jget 'j["signal"], j["exit"]')"
# info pages: --max N
F create pg --limit 3 >/dev/null
F down pg >/dev/null; F down pg >/dev/null; F down pg >/dev/null
expect_eq "info --max 2 --json: two holders of three, and where to go on" "2 3 True" \
	"$(F --json info pg --max 2 | jget 'len(j["holders"]), j["holders_total"], j.get("next_permit", 0) > 0')"
ok "info --max 2: says there are more" sh -c "'$SEMCTL' -s '$f_UNIX' info pg --max 2 | grep -q '^holders: 3 (2 shown; --max N shows more)'"
expect_eq "info: every holder by default" 3 "$(F --json info pg | jget 'len(j["holders"])')"

# --- queue policies: --max-waiters (exit 8), down --replace (exit 9) ----------
expect_eq "create --max-waiters" 0 "$(rc F create qp --limit 1 --max-waiters 1)"
expect_eq "info --json: max_waiters" 1 "$(F --json info qp | jget 'j["max_waiters"]')"
ok "info: the bound" sh -c "'$SEMCTL' -s '$f_UNIX' info qp | grep -q '^queue: at most 1 waiters'"
F down qp >/dev/null
F down qp --replace job --timeout 30s >/dev/null 2>"$T/rep1.err" &
p1=$!
ok "the keyed down waits" t_wait_for 10 waiters qp 1
expect_eq "info --json: its replace key" job "$(F --json info qp | jget 'j["waiters"][0]["replace"]')"
ok "info: the key is shown" sh -c "'$SEMCTL' -s '$f_UNIX' info qp | grep -q ' replace job\$'"
expect_eq "a down past --max-waiters exits 8 at once" 8 "$(rc F down qp --timeout 30s)"
expect_eq "... queue_full in JSON" "queue_full 8" "$(F --json down qp --timeout 30s 2>/dev/null | jget 'j["error"], j["exit"]')"
expect_eq "a trydown is not refused for a full queue" 1 "$(rc F trydown qp)"
F down qp --replace job --timeout 30s >/dev/null 2>&1 &
p2=$!
wait $p1
expect_eq "the replaced down exits 9" 9 "$?"
ok "... and says why" grep -q "replaced by request" "$T/rep1.err"
expect_eq "--replace takes one name" 2 "$(rc F down qp qp2 --replace k)"
expect_eq "a bad key" 6 "$(rc F down qp --replace 'a b' --timeout 1s)"
expect_eq "set-queue needs --max-waiters" 2 "$(rc F set-queue qp)"
expect_eq "set-queue --json" 0 "$(F --json set-queue qp --max-waiters 0 | jget 'j["max_waiters"]')"
up_grants qp $p2 "the newer down is granted"
F up qp >/dev/null

# --- priorities ---------------------------------------------------------------
F create pr --limit 1 >/dev/null
F down pr >/dev/null
F down pr --timeout 30s >/dev/null 2>&1 &
p1=$!
ok "a class 0 down waits" t_wait_for 10 waiters pr 1
F down pr --priority 3 --timeout 90s >/dev/null 2>&1 &
p2=$!
ok "a class 3 down waits" t_wait_for 10 waiters pr 2
expect_eq "info --json: each waiter's class, the higher first in line" "[3, 0]" \
	"$(F --json info pr | jget '[w["priority"] for w in j["waiters"]]')"
ok "info: the class is shown" sh -c "'$SEMCTL' -s '$f_UNIX' info pr | grep -q ' priority 3\$'"
# The class 3 one (90s) is first: its deadline is a minute after the other's.
expect_eq "... and goes first in line" True \
	"$(F --json info pr | jget 'j["waiters"][0]["deadline_ms"] > j["waiters"][1]["deadline_ms"] + 30000')"
expect_eq "--priority 8 is out of range" 2 "$(rc F down pr --priority 8)"
expect_eq "--priority -9 is out of range" 2 "$(rc F down pr --priority -9)"
expect_eq "a class 7 trydown does not pass the holder" 1 "$(rc F trydown pr --priority 7)"
up_grants pr $p2 "the class 3 down is granted first"
ok "the class 0 one still waits" waiters pr 1
up_grants pr $p1 "then the class 0 one"
F up pr >/dev/null

# --- fair shares ----------------------------------------------------------------
expect_eq "create --share key --weight" 0 "$(rc F create fs --limit 2 --share key --weight heavy=3 --weight light=1)"
expect_eq "--weight needs --share" 2 "$(rc F create fs2 --limit 2 --weight a=1)"
expect_eq "--weight 0 is out of range" 2 "$(rc F create fs2 --limit 2 --share key --weight a=0)"
expect_eq "--share of a signal name is refused" 6 "$(rc F create fs2 --limit 2 --share key --mode signal)"
F down fs --group heavy >/dev/null
F down fs --group light >/dev/null
F down fs --group light --timeout 30s >/dev/null 2>&1 &
p1=$!
ok "a light down waits" t_wait_for 10 waiters fs 1
F down fs --group heavy --timeout 30s >/dev/null 2>&1 &
p2=$!
ok "a heavy down waits" t_wait_for 10 waiters fs 2
expect_eq "info --json: the groups, their weights, held and waiting" \
	"key [('heavy', 3, 1, 1), ('light', 1, 1, 1)]" \
	"$(F --json info fs | jget 'j["share"], [(g["group"], g["weight"], g["held"], g["waiting"]) for g in j["groups"]]')"
ok "info: the shares" sh -c "'$SEMCTL' -s '$f_UNIX' info fs | grep -q '^shares by key: heavy (weight 3, share 1, 1 held, 1 waiting)'"
expect_eq "--group on a name without shares" 6 "$(rc F down pr --group x --timeout 1s)"
expect_eq "--group takes one name" 2 "$(rc F down fs pr --group x)"
# heavy's tag is 1/3 of a permit on, light's a whole one: heavy first.
up_grants fs $p2 "the heavy group's down first (weight 3)"
ok "the light one still waits" waiters fs 1
up_grants fs $p1 "then the light one"
F up fs >/dev/null; F up fs >/dev/null

t_done
