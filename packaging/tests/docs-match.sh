#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# packaging/tests/docs-match.sh - the manual pages and the example
# configuration tell the truth about the semd that is built: every option in
# `semd --help` is in semd(8), every setting is in semd.conf(5) and in
# semd.conf.example, neither documents an option semd does not have, and the
# example is a valid configuration both as shipped and with every setting
# uncommented. And semctl(1) documents every command of semctl's command
# table (`semctl --json help`, which --help, help COMMAND, the dispatch and
# the bash completion read too) with exactly the options the table gives
# it, every global option, and nothing the table does not have.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60

SEMD=$top_builddir/semd
man8=$top_srcdir/doc/semd.8
man5=$top_srcdir/doc/semd.conf.5
example=$top_srcdir/packaging/semd.conf.example

"$SEMD" --help >"$T/help" 2>&1
ok "semd --help works" test -s "$T/help"

# Long options in the help, and the settings among them.
grep -o -- '--[a-z][a-z-]*' "$T/help" | sort -u | sed 's/^--//' >"$T/opts"
grep -v -x -e config -e check-config -e version -e help -e restore -e make-token \
	"$T/opts" >"$T/keys"
ok "the help lists settings ($(wc -l <"$T/keys"))" test "$(wc -l <"$T/keys")" -ge 6

# roff writes a dash as \-.
roff() { printf '%s' "$1" | sed 's/-/\\\\-/g'; }

while read -r o; do
	ok "semd(8) documents --$o" grep -q -- "^\.B[IR]* .*\\\\-\\\\-$(roff "$o")\\b" "$man8"
done <"$T/opts"
for s in l c t V h; do
	ok "semd(8) documents -$s" grep -q -- "\\\\-$s\\b" "$man8"
	ok "semd --help lists -$s" grep -q -- "-$s," "$T/help"
done
while read -r k; do
	ok "semd.conf(5) documents $k" grep -q -- "^\.BI $(roff "$k") " "$man5"
	ok "semd.conf.example shows $k" grep -q -- "^#$k " "$example"
done <"$T/keys"
# Set in the example as shipped: the packaged service keeps its state.
for k in data-dir; do
	ok "semd.conf.example sets $k" grep -q -- "^$k " "$example"
done

# Nothing documented that semd does not know.
sed -n 's/^\.B[IR]* \\-\\-\([a-z\\-]*\).*/\1/p' "$man8" | sed 's/\\-/-/g' | sort -u >"$T/man8-opts"
while read -r o; do
	ok "--$o in semd(8) is a real option" grep -qx -- "$o" "$T/opts"
done <"$T/man8-opts"
sed -n '/^\.SH KEYS/,/^\.SH /s/^\.BI \([a-z\\-]*\) .*/\1/p' "$man5" | sed 's/\\-/-/g' | sort -u >"$T/man5-keys"
ok "semd.conf(5) lists as many keys as semd has" test "$(wc -l <"$T/man5-keys")" -eq "$(wc -l <"$T/keys")"
while read -r k; do
	ok "$k in semd.conf(5) is a real setting" grep -qx -- "$k" "$T/keys"
done <"$T/man5-keys"

# semd-benchmark(1) has every option of semd-benchmark --help.
"$top_builddir/semd-benchmark" --help >"$T/bhelp" 2>&1
grep -o -- ' --*[a-zA-Z][a-z-]*' "$T/bhelp" | sed 's/^ //' | sort -u >"$T/bopts"
ok "semd-benchmark --help lists options ($(wc -l <"$T/bopts"))" test "$(wc -l <"$T/bopts")" -ge 8
while read -r o; do
	ok "semd-benchmark(1) documents $o" grep -q -- "^\.B[IR]* .*$(roff "$o")\b" "$top_srcdir/doc/semd-benchmark.1"
done <"$T/bopts"

# semctl(1) against semctl's command table.
"$top_builddir/semctl" --json help >"$T/semctl.json"
ok "semctl --json help works" test -s "$T/semctl.json"
python3 - "$T/semctl.json" "$top_srcdir/doc/semctl.1" >"$T/semctl.check" <<'PY'
import json, re, sys
table = json.load(open(sys.argv[1]))
man = open(sys.argv[2]).read().split("\n")

def section(name):
    """The lines of a .SH section."""
    out, on = [], False
    for line in man:
        if line.startswith(".SH "):
            on = line[4:].strip('"') == name
        elif on:
            out.append(line)
    return out

def headings(lines):
    """The tag line of each .TP, as plain text."""
    out = []
    for i, line in enumerate(lines[:-1]):
        if line == ".TP":
            t = re.sub(r"^\.[BIR]+ ?", "", lines[i + 1])
            t = re.sub(r"\\f[BIRP]", "", t).replace('"', " ").replace("\\-", "-")
            out.append(t)
    return out

OPT = re.compile(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])(?![\w-])")

def check(desc, cond):
    print(("PASS " if cond else "FAIL ") + desc)

# Commands: each heading's first word, and the options the headings give it.
doc = {}
for h in headings(section("COMMANDS")):
    words = h.split()
    doc.setdefault(words[0], set()).update(OPT.findall(h))
cmds = {c["name"]: c for c in table["commands"]}
check("the table has commands (%d)" % len(cmds), len(cmds) >= 15)
for name, c in cmds.items():
    check("semctl(1) documents the command %s" % name, name in doc)
    want = {o["long"] or o["short"] for o in c["options"]}
    got = doc.get(name, set())
    for o in sorted(want):
        check("semctl(1) gives %s its option %s" % (name, o), o in got)
    for o in sorted(got - want):
        check("%s %s in semctl(1) is in the table" % (name, o), False)
for name in sorted(set(doc) - set(cmds)):
    check("the command %s in semctl(1) is in the table" % name, False)
# The global options: short and long spellings alike.
want = set()
for o in table["options"]:
    want.update(x for x in (o["short"], o["long"]) if x)
got = set()
for h in headings(section("OPTIONS")):
    got.update(OPT.findall(h))
check("the table has global options (%d)" % len(want), len(want) >= 10)
for o in sorted(want):
    check("semctl(1) documents the global option %s" % o, o in got)
for o in sorted(got - want):
    check("the global option %s in semctl(1) is in the table" % o, False)
PY
ok "semctl(1) was compared with the table" test -s "$T/semctl.check"
while read -r verdict desc; do
	ok "$desc" test "$verdict" = PASS
done <"$T/semctl.check"
# The completion offers exactly the table's commands.
cmds=$(python3 -c 'import json,sys; print(" ".join(sorted(c["name"] for c in json.load(open(sys.argv[1]))["commands"])))' "$T/semctl.json")
comp=$("$top_builddir/semctl" __complete '' | sed 1d | LC_ALL=C sort | tr '\n' ' ')
expect_eq "the completion offers the table's commands" "$cmds " "$comp"

out=$("$SEMD" --check-config --config "$example" 2>&1)
expect_eq "the example as shipped is valid" "semd: configuration OK" "$out"
sed 's/^#\([a-z][a-z-]* \)/\1/' "$example" >"$T/uncommented.conf"
n=$(grep -c '^[a-z]' "$T/uncommented.conf")
ok "uncommenting gives a setting for every key ($n lines)" test "$n" -ge "$(wc -l <"$T/keys")"
# peer-key and peer-tls-* are two ways for peers to prove who they are, one
# at a time: each is checked with the rest.
grep -v '^peer-key ' "$T/uncommented.conf" >"$T/all.conf"
out=$("$SEMD" --check-config --config "$T/all.conf" 2>&1)
expect_eq "the example with every setting uncommented is valid (peer TLS)" "semd: configuration OK" "$out"
grep -v '^peer-tls-' "$T/uncommented.conf" >"$T/all-key.conf"
out=$("$SEMD" --check-config --config "$T/all-key.conf" 2>&1)
expect_eq "... and with peer-key instead of peer TLS" "semd: configuration OK" "$out"

t_done
