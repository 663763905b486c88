#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# log-format json: every line semd writes is one JSON object with the keys
# ts, level, msg and func in that order (error and errno after them for a
# failed call), in valid UTF-8, whatever the message holds: a socket path
# with control characters, quotes, a backslash, a newline and a byte that is
# not UTF-8 comes out escaped and whole. Under systemd the journal's
# priority prefix stays in front. A reload switches the format.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
unset SEMD_TEST_DURABLE

# check.py LOG [--prefix]: every line of LOG parses (after its "<N>" with
# --prefix, which must agree with the level); prints the objects' msg
# fields, one JSON string a line, for the test to look at.
cat >"$T/check.py" <<'EOF'
import json, re, sys
LEVELS = {"emergency": 0, "alert": 1, "critical": 2, "error": 3,
          "warning": 4, "notice": 5, "info": 6, "debug": 7}
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
prefix = "--prefix" in sys.argv
raw = open(sys.argv[1], "rb").read()
if not raw.endswith(b"\n"):
    sys.exit("the log does not end with a newline")
n = 0
for i, b in enumerate(raw[:-1].split(b"\n"), 1):
    line = b.decode("utf-8")          # strict: raises on a byte not UTF-8
    pri = None
    if prefix:
        m = re.match(r"^<([0-7])>", line)
        if not m:
            sys.exit("line %d has no priority prefix: %r" % (i, line))
        pri = int(m.group(1))
        line = line[m.end():]
    o = json.loads(line)
    keys = list(o)
    if keys[:4] != ["ts", "level", "msg", "func"]:
        sys.exit("line %d: keys %r" % (i, keys))
    extra = keys[4:]
    if extra not in ([], ["error", "errno"]):
        sys.exit("line %d: unexpected keys %r" % (i, extra))
    if extra and not (isinstance(o["errno"], int) and o["errno"] > 0 and
                      o["msg"].endswith(": " + o["error"])):
        sys.exit("line %d: error and errno do not match the message" % i)
    if not TS.match(o["ts"]) or o["level"] not in LEVELS:
        sys.exit("line %d: ts or level: %r" % (i, o))
    if pri is not None and LEVELS[o["level"]] != pri:
        sys.exit("line %d: prefix <%d> but level %s" % (i, pri, o["level"]))
    if not isinstance(o["msg"], str) or not o["func"]:
        sys.exit("line %d: msg or func: %r" % (i, o))
    print(json.dumps(o["msg"]) + (" ERRNO %d" % o["errno"] if extra else ""))
    n += 1
if n == 0:
    sys.exit("no lines")
EOF

# A socket path with ESC, a tab, SOH, a quote, a backslash, a newline, a
# byte that is not UTF-8 (0xff) and an e with an acute accent (UTF-8).
hostile=$(printf 'h\033[31m\t\001"\\\nx\377\303\251')
sock="$T/$hostile.sock"
"$SEMD" --listen "unix:$sock" --listen "unix:$T/j.sock" --log-format json \
	--log-level debug --ready-file "$T/j.ready" \
	--metrics-listen tcp:127.0.0.1:0 >"$T/j.out" 2>&1 &
jpid=$!
PIDS_TO_KILL="$PIDS_TO_KILL $jpid"
ok "semd starts with --log-format json" t_wait_for 10 test -s "$T/j.ready"
metrics=$(sed -n 's/^metrics://p' "$T/j.ready")
# A client's operations, and a client denied (anonymous TCP may do nothing
# by default), for lines of several kinds.
"$SEMCTL" -s "unix:$T/j.sock" create j/a 2 >/dev/null 2>&1
"$SEMCTL" -s "unix:$T/j.sock" down j/a >/dev/null 2>&1
# The metrics address again: that bind fails (a line with errno).
"$SEMD" --listen "unix:$T/k.sock" --metrics-listen "tcp:$metrics" \
	--log-format json >"$T/k.out" 2>&1 </dev/null
expect_eq "a second semd on the same metrics port stops (EX_OSERR)" 71 "$?"
kill -TERM "$jpid"
wait "$jpid"
expect_eq "semd stops cleanly" 0 "$?"

ok "every line is one JSON object with the keys in order" \
	sh -c "python3 '$T/check.py' '$T/j.out' >'$T/j.msgs'"
ok "the start-up line is there" grep -q '"semd .* starting: libevent' "$T/j.msgs"
want=$(python3 -c 'import json, os, sys
print(json.dumps("listening on unix:" + os.fsencode(sys.argv[1]).decode("utf-8", "replace")))' "$sock")
ok "the hostile path is escaped: control characters, quote, backslash, newline; U+FFFD for the bad byte" \
	grep -qxF "$want" "$T/j.msgs"
ok "... and its raw bytes are nowhere in the output" \
	sh -c "! LC_ALL=C grep -q '$(printf '\033')' '$T/j.out'"
ok "a failed call: error and errno keys (EADDRINUSE)" \
	sh -c "python3 '$T/check.py' '$T/k.out' | grep -q 'cannot bind: .* ERRNO 98$'"

# Under systemd: the priority prefix, then the object.
JOURNAL_STREAM=8:1 "$SEMD" --listen "unix:$T/s.sock" --log-format json \
	--ready-file "$T/s.ready" >"$T/s.out" 2>&1 &
spid=$!
PIDS_TO_KILL="$PIDS_TO_KILL $spid"
ok "semd starts under a journal stream" t_wait_for 10 test -s "$T/s.ready"
kill -TERM "$spid"
wait "$spid"
ok "journal lines: <N> agreeing with the level, then a JSON object" \
	sh -c "python3 '$T/check.py' '$T/s.out' --prefix >/dev/null"
ok "... notice is <5>" grep -q '^<5>{"ts":' "$T/s.out"

# The format from the configuration file, and switched by a reload.
printf 'listen unix:%s\nlog-format json\n' "$T/r.sock" >"$T/r.conf"
"$SEMD" --config "$T/r.conf" --ready-file "$T/r.ready" >"$T/r.out" 2>&1 &
rpid=$!
PIDS_TO_KILL="$PIDS_TO_KILL $rpid"
ok "semd starts with log-format json in its file" t_wait_for 10 test -s "$T/r.ready"
t_reload "$rpid" "$T/r.conf" 's/^log-format json/log-format text/'
ok "the reload is logged" t_wait_for 10 grep -q 'reload: log-format json -> text' "$T/r.out"
kill -TERM "$rpid"
wait "$rpid"
ok "lines before the reload are JSON" grep -q '^{"ts":.*"msg":"ready"' "$T/r.out"
ok "lines after it are text" grep -q '^semd: notice: stopped$' "$T/r.out"

out=$("$SEMD" --log-format xml --check-config 2>&1)
expect_eq "an unknown format is refused" \
	"semd: --log-format: log-format 'xml': use text or json" "$out"
t_done
