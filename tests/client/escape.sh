# SPDX-License-Identifier: BSD-2-Clause
# tests/client/escape.sh - issue 12: a server cannot write to the terminal
# through semctl. A fake semd (fakesemd) puts terminal escapes (OSC title,
# CSI clear screen), C1 controls, bidi overrides and isolates, zero-width
# characters, line separators, a byte-order mark, DEL and invalid UTF-8 in
# every string it sends; semctl must print none of them raw: escaped as
# \xHH / \uXXXX in text mode, as \uXXXX in JSON (which must still parse).
. "$top_srcdir/tests/lib.sh"
# (about 70 semctl and python3 runs: a minute and more on a loaded machine)
t_watchdog 240
"$top_builddir/tests/client/fakesemd" "$T/fake.sock" "$T/fake.ready" &
PIDS_TO_KILL="$PIDS_TO_KILL $!"
t_wait_for 10 test -s "$T/fake.ready" || { echo "fakesemd did not start"; exit 1; }
F="unix:$T/fake.sock"

# clean FILE: every byte printed is plain text (newlines allowed)
cat >"$T/clean.py" <<'PY'
import sys
UNSAFE = set(range(0x00, 0x20)) - {0x0a} | set(range(0x7f, 0xa0)) | {0x061c, 0x2028, 0x2029, 0xfeff} \
    | set(range(0x200b, 0x2010)) | set(range(0x202a, 0x202f)) | set(range(0x2066, 0x206a))
s = open(sys.argv[1], "rb").read().decode("utf-8", "surrogateescape")
bad = [hex(ord(ch)) for ch in s if ord(ch) in UNSAFE or 0xdc80 <= ord(ch) <= 0xdcff]
if bad:
    sys.exit("raw: %s in %r" % (" ".join(bad[:8]), s[:300]))
PY
for cmd in "ping" "info x" "list" "stats" "create x --limit 1" "down x" "trydown x" \
	"up x" "delete x" "release x --holder 1" "set-limit x 3" "validate x 1" "run x -- true" \
	"holds" "set-rate x 1/s" "renew x" "down x y:2" "down deadlock"; do
	"$SEMCTL" -s "$F" $cmd >"$T/out" 2>&1
	ok "text: $cmd prints no control or invisible character" python3 "$T/clean.py" "$T/out"
done
"$SEMCTL" -s "$F" ping >"$T/out" 2>&1
ok "text: the escape is shown as \\x1b" grep -qF 'x\x1b]0;pwned\x07\x1b[2J\u009b31m\u202e\u2066\u200b\u2028\ufeff\x7f\x9b\xff\nend' "$T/out"

timeout -k 10 -s INT 2 "$SEMCTL" -s "$F" watch x >"$T/out" 2>&1
ok "text: watch prints no control or invisible character" python3 "$T/clean.py" "$T/out"
ok "text: watch printed the event" grep -q grant "$T/out"
expect_eq "a deadlock exits 7" 7 "$("$SEMCTL" -s "$F" down deadlock >/dev/null 2>&1; echo $?)"
expect_eq "a multi-name deadlock exits 7" 7 "$("$SEMCTL" -s "$F" run deadlock y -- true >/dev/null 2>&1; echo $?)"
expect_eq "a deadlock in JSON" "deadlock 7" "$("$SEMCTL" -s "$F" --json down deadlock 2>/dev/null |
	python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["error"], j["exit"])')"

for cmd in "ping" "info x" "list" "stats" "down x" "run x -- true" "holds"; do
	"$SEMCTL" -s "$F" --json $cmd >"$T/out" 2>/dev/null
	ok "json: $cmd prints no raw control or invisible character" python3 "$T/clean.py" "$T/out"
	ok "json: $cmd is one JSON object with the escapes decoded" python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
def strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)
s = " ".join(strings(json.loads(lines[0])))
assert "\x1b]0;pwned\x07" in s and "\u202e" in s and "\ufffd" in s, s' "$T/out"
done
"$SEMCTL" -s "$F" --json ping >"$T/out" 2>/dev/null
ok "json: \\u001b and \\u202e on the wire" grep -qF '\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e\u2066\u200b\u2028\ufeff\u007f\ufffd\ufffd\nend' "$T/out"
t_done
