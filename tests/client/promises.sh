#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/client/promises.sh - what semctl and the daemon promise, in words and
# in time (issue 34): an anonymous client that may only use names cannot
# make one with down --limit; the priority range said whole (-8 to 7) on
# both sides; an unknown option named as written, inside a group of letters
# too; one version for semd, semctl, libsemclient, the handshake, the
# manuals, the Python package and the Debian changelog; a detached hold's 1 s
# lease ends on time, by the daemon's own clock (the grant, the release and
# the next grant as a watch saw them).
. "$top_srcdir/tests/lib.sh"
t_watchdog 60

jget() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }
rc() { "$@" >/dev/null 2>&1; echo $?; }

# The defaults of semd.conf(5) (a configuration file of its own: no --acl),
# a TCP client anonymous: it may use names, not create them.
: >"$T/empty.conf"
start_semd d --config "$T/empty.conf" || exit 1
A() { "$SEMCTL" -s "$d_TCP" "$@"; }
L() { "$SEMCTL" -s "$d_UNIX" "$@"; }

# --- anonymous: down --limit does not create --------------------------------------
A down deploy/prod --limit 50 >/dev/null 2>"$T/a1"
expect_eq "anonymous down --limit 50 of a missing name: refused" 4 $?
ok "... saying that a limit needs create" grep -q \
	"anonymous may not create deploy/prod by a down with a limit" "$T/a1"
expect_eq "... and nothing was made" 6 "$(rc L info deploy/prod)"
expect_eq "anonymous create is refused too" 4 "$(rc A create deploy/prod --limit 50)"
expect_eq "anonymous down deploy/a:2 --limit 5 (several names) refused" 4 \
	"$(rc A down deploy/a deploy/b --limit 5)"
expect_eq "... nothing made" 0 "$(L --json list deploy/ | jget 'j["count"]')"
# what use allows: a plain down (a name made for the hold, gone after it)
expect_eq "anonymous down without a limit: use" 0 "$(rc A down deploy/tmp --lease 5s)"
expect_eq "... and up" 0 "$(rc A up deploy/tmp)"
# a local user (uid, create by default) makes it with the limit
expect_eq "a local user's down --limit 50 makes it" 0 "$(rc L down deploy/prod --limit 50 --lease 5s)"
expect_eq "... with limit 50" 50 "$(L --json info deploy/prod | jget 'j["limit"]')"
expect_eq "anonymous uses it without --limit" 0 "$(rc A trydown deploy/prod)"

# --- the priority range, whole on both sides ----------------------------------------
for p in 8 -9 99 -100; do
	L down pr --priority "$p" >/dev/null 2>"$T/p"
	expect_eq "--priority $p: usage" 2 $?
	ok "... '$p is out of range (-8 to 7)'" grep -q -- "--priority: $p is out of range (-8 to 7)" "$T/p"
done
L down pr --priority x >/dev/null 2>"$T/p"
ok "--priority x: not a number (-8 to 7)" grep -q -- "--priority: 'x' is not a number (-8 to 7)" "$T/p"
expect_eq "--priority -8 and 7 are taken" "0 0" \
	"$(rc L trydown pr1 --priority -8) $(rc L trydown pr2 --priority 7)"

# --- an unknown option, as written -----------------------------------------------------
L info t/a -xy >/dev/null 2>"$T/o1"
expect_eq "info t/a -xy: usage" 2 $?
ok "... names -x, not t/a" grep -q "info: unknown option '-x'" "$T/o1"
L info -qz t/a >/dev/null 2>"$T/o2"
ok "info -qz t/a names -z" grep -q "info: unknown option '-z'" "$T/o2"
L info t/a --frob >/dev/null 2>"$T/o3"
ok "info t/a --frob names --frob" grep -q "info: unknown option '--frob'" "$T/o3"
"$SEMCTL" -y -s "$d_UNIX" ping >/dev/null 2>"$T/o4"
ok "a global -y names -y" grep -q "unknown option '-y'" "$T/o4"

# --- one version everywhere -------------------------------------------------------------
v=$("$SEMD" --version | sed -n 's/^semd //p')
ok "semd --version is a version ($v)" sh -c "echo '$v' | grep -qx '[0-9]*\.[0-9]*\.[0-9]*'"
expect_eq "semctl --version" "semctl $v" "$("$SEMCTL" --version)"
expect_eq "the handshake's server" "semd $v" "$(L --json ping | jget 'j["server"]')"
for m in semd.8 semd.conf.5 semctl.1 semclient.3 semd-benchmark.1; do
	expect_eq "$m's version" "semd $v" \
		"$(sed -n '1,3s/^\.TH [^"]*"[^"]*" "\([^"]*\)".*/\1/p' "$top_srcdir/doc/$m")"
done
expect_eq "the Python package's __version__" "$v" \
	"$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$top_srcdir/python/semclient/__init__.py")"
expect_eq "the Python project's version" "$v" \
	"$(sed -n 's/^version = "\(.*\)"$/\1/p' "$top_srcdir/python/pyproject.toml")"
expect_eq "the Debian changelog's newest" "$v" \
	"$(sed -n '1s/^semd (\([^)]*\)).*/\1/p' "$top_srcdir/packaging/debian/changelog")"
ok "no page speaks of a version other than $v or 0.2.0 and before" sh -c \
	"! grep -rnoE '(semd|libsemclient|package) 0\.[0-9]+\.[0-9]+|0\.[0-9]+\.[0-9]+ additions' \
	'$top_srcdir/README.md' '$top_srcdir/doc' '$top_srcdir/python/README.md' |
	grep -vE ' 0\.[012]\.0|$v'"

# --- a 1 s lease ends on time, on the daemon's clock --------------------------------------
# The watch's events carry the daemon's time: the grant, the release when
# the lease ran out, and the waiting down's grant. In memory the lease's
# timer fires at its time (the loop's timer: a few ms, with room for a
# loaded machine); through the log (the durable pass) the entry that fires
# it is proposed at its time and applied once on the disk.
L create lz/a --limit 1 >/dev/null
L down lz/a --lease 1s >/dev/null
L down lz/a --timeout 10s --lease 5s >/dev/null
# the events of lz/a, replayed from the daemon's history (--from 1)
"$SEMCTL" -s "$d_UNIX" --json watch lz/a --from 1 >"$T/w" 2>/dev/null &
w=$!
PIDS_TO_KILL="$PIDS_TO_KILL $w"
ok "the events came" t_wait_for 5 sh -c "[ \$(grep -c '\"event\":\"grant\"' '$T/w') -ge 2 ]"
kill "$w" 2>/dev/null
python3 - "$T/w" "${SEMD_TEST_DURABLE:+durable}" >"$T/lz" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
g = [e for e in ev if e["event"] == "grant"]
r = [e for e in ev if e["event"] == "release"]
late = r[0]["time_ms"] - g[0]["time_ms"] - 1000
handoff = g[1]["time_ms"] - r[0]["time_ms"]
print(late, handoff, r[0].get("reason", ""))
PY
read -r late handoff why <"$T/lz"
echo "# the 1 s lease ended ${late} ms after its time; the waiter was granted ${handoff} ms later ($why)"
bound=100
[ -n "${SEMD_TEST_DURABLE:-}" ] && bound=250
ok "... at its time (0 to $bound ms late)" test "$late" -ge 0 -a "$late" -le "$bound"
ok "... and the waiter granted at once (within 20 ms)" test "$handoff" -ge 0 -a "$handoff" -le 20
t_done
