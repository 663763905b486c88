#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# semctl backup and semd --restore: a backup taken from a running semd (in
# memory, then durable) while clients take and give back permits restores
# into a new data directory; one taken at rest restores to the same names,
# limits, modes, holders and tokens (list, info, validate), and the tokens
# after it are above every one before. A damaged, cut-off or foreign backup
# is refused with exit 65 and a message, with nothing written to the data
# directory; a data directory that is not empty is refused (73), and one
# whose restore did not finish is refused at the next start (78). Backups
# are an administrator's.
. "$top_srcdir/tests/lib.sh"
t_watchdog 240
unset SEMD_TEST_DURABLE		# this test gives its own data directories

jproj() { # the parts of `semctl --json info` a restore keeps, on a line
	python3 -c '
import json, sys
j = json.load(sys.stdin)
hs = sorted((h["permit_id"], h["token"], h["n"], h["principal"], h["client_name"])
            for h in j.get("holders", []))
print(j["name"], j["limit"], j["available"], j["mode"], j.get("last_token"), hs)'
}

# load ADDR N: N rounds of clients taking and giving back permits (bounded)
load() {
	i=0
	while [ "$i" -lt "$2" ]; do
		"$SEMCTL" -s "$1" run ld/$((i % 4)) --timeout 10s -- true >/dev/null 2>&1
		"$SEMCTL" -s "$1" trydown ld/x -n 2 --limit 5 >/dev/null 2>&1 &&
			"$SEMCTL" -s "$1" up ld/x -n 2 >/dev/null 2>&1
		i=$((i + 1))
	done
	echo done >"$T/load.$3"
}

# state ADDR OUT: list and the kept parts of every name's info, and the
# tokens held, into OUT
state() {
	"$SEMCTL" -s "$1" list >"$2"
	for n in $("$SEMCTL" -s "$1" --json list | python3 -c '
import json, sys
print(" ".join(x["name"] for x in json.load(sys.stdin)["semaphores"]))'); do
		"$SEMCTL" -s "$1" --json info "$n" | jproj >>"$2"
	done
}

# one_case MODE ARGS...: MODE memory or durable, ARGS for the source semd
one_case() {
	mode=$1; shift
	start_semd src "$@" || return 1
	S="$SEMCTL -s $src_UNIX"
	$S create jobs --limit 3 >/dev/null
	$S create pc --limit 4 --mode signal --initial 1 >/dev/null
	$S create api --rate 5/s --burst 10 >/dev/null
	tok=$($S down jobs -n 2 --lease 1h)
	$S down deploy --lease 30m >/dev/null
	load "$src_UNIX" 40 "$mode" &
	lpid=$!
	# under load: backups while the clients run (at least 3 of them, each
	# taken once the load has granted something more)
	k=0
	while [ "$k" -lt 3 ] && [ ! -e "$T/load.$mode" ]; do
		$S backup "$T/live.$mode.$k" >/dev/null 2>"$T/live.$mode.err" || break
		k=$((k + 1))
	done
	ok "$mode: backups under load ($k)" test "$k" -ge 1
	wait "$lpid"
	start_semd live --data-dir "$T/live.$mode.data" --restore "$T/live.$mode.0"
	ok "$mode: a backup taken under load restores" test -n "$live_UNIX"
	"$SEMCTL" -s "$live_UNIX" list >"$T/live.$mode.list" 2>&1
	ok "$mode: ... with its names" has '^jobs  *3 ' "$T/live.$mode.list"
	kill "$live_PID"; wait "$live_PID" 2>/dev/null

	# at rest: the same state
	$S --json backup "$T/b.$mode" >"$T/b.$mode.json"
	ok "$mode: backup --json" has '"ok":true,"file":' "$T/b.$mode.json"
	state "$src_UNIX" "$T/before.$mode"
	start_semd dst --data-dir "$T/dst.$mode.data" --restore "$T/b.$mode" || return 1
	D="$SEMCTL -s $dst_UNIX"
	state "$dst_UNIX" "$T/after.$mode"
	ok "$mode: list and info are the same after the restore" cmp "$T/before.$mode" "$T/after.$mode"
	[ -s "$T/before.$mode" ] && ! cmp -s "$T/before.$mode" "$T/after.$mode" &&
		diff "$T/before.$mode" "$T/after.$mode"
	expect_eq "$mode: the held token is valid after the restore" valid "$($D validate jobs "$tok")"
	$D trydown jobs -n 2 >/dev/null 2>&1
	expect_eq "$mode: ... and still held (1 of 3 free)" 1 "$?"
	t2=$($D down fresh --lease 1m)
	ok "$mode: a new token ($t2) is above the last before ($tok)" test "$t2" -gt "$tok"
	$D up jobs -n 2 >/dev/null
	expect_eq "$mode: the restored hold is given back by its principal" \
		"jobs 3 3 owned $tok []" "$($D --json info jobs | jproj)"
	# a restart keeps the restored state, without --restore
	kill "$dst_PID"; wait "$dst_PID" 2>/dev/null
	start_semd dst --data-dir "$T/dst.$mode.data" || return 1
	ok "$mode: restarted, the restored names are there" has '^pc  *4  *1 signal' \
		"$("$SEMCTL" -s "$dst_UNIX" list >"$T/rl.$mode"; echo "$T/rl.$mode")"
	kill "$dst_PID"; wait "$dst_PID" 2>/dev/null
	kill "$src_PID"; wait "$src_PID" 2>/dev/null
}

one_case memory
one_case durable --data-dir "$T/src.data"

# --- refusals ---------------------------------------------------------------------
# restore FILE DIR: semd --restore, which must exit; its status
restore() {
	"$SEMD" --listen "unix:$T/r.sock" --data-dir "$2" --restore "$1" >"$T/r.log" 2>&1
	echo $?
}
B=$T/b.memory
cp "$B" "$T/flip"
printf 'X' | dd of="$T/flip" bs=1 seek=300 conv=notrunc 2>/dev/null
expect_eq "a damaged backup: exit 65" 65 "$(restore "$T/flip" "$T/n1")"
ok "... saying so" has 'damaged: its checksum' "$T/r.log"
ok "... and nothing is written" test ! -e "$T/n1"
head -c 1000 "$B" >"$T/cut"
expect_eq "a cut-off backup: exit 65" 65 "$(restore "$T/cut" "$T/n1")"
ok "... saying so" has 'cut short' "$T/r.log"
expect_eq "a file that is no backup: exit 65" 65 "$(restore "$top_srcdir/README.md" "$T/n1")"
ok "... saying so" has 'is no backup of semd' "$T/r.log"
# the right header and checksum over bytes that are no state of semd's
python3 - "$T/foreign" <<'EOF'
import hashlib, struct, sys
body = b"SEMDSNAP" + bytes(range(256)) * 8
hdr = b"SEMDBKUP" + struct.pack("<IIQQ", 1, 64, len(body), 0) + hashlib.sha256(body).digest()
open(sys.argv[1], "wb").write(hdr + body)
EOF
expect_eq "a foreign state under a good checksum: exit 65" 65 "$(restore "$T/foreign" "$T/n1")"
ok "... saying so" has 'holds no state this semd can load' "$T/r.log"
ok "... and nothing is written" test ! -e "$T/n1"
mkdir "$T/full"
echo keep >"$T/full/mine"
expect_eq "a data directory that is not empty: exit 73" 73 "$(restore "$B" "$T/full")"
ok "... saying so" has 'not empty' "$T/r.log"
ok "... and left as it was" test "$(ls "$T/full")" = mine
"$SEMD" --listen "unix:$T/r.sock" --restore "$B" >"$T/r.log" 2>&1
expect_eq "--restore without --data-dir: exit 64" 64 "$?"
# a restore that did not finish leaves its mark: refused until done again
touch "$T/dst.memory.data/restore.pending"
"$SEMD" --listen "unix:$T/r.sock" --data-dir "$T/dst.memory.data" >"$T/r.log" 2>&1
expect_eq "an unfinished restore: exit 78" 78 "$?"
ok "... saying what to do" has 'did not finish' "$T/r.log"

# --- rights -------------------------------------------------------------------------
echo 'acl anonymous * inspect,use' >"$T/ro.conf"
start_semd ro --config "$T/ro.conf" || exit 1
"$SEMCTL" -s "$ro_TCP" backup "$T/ro" >/dev/null 2>"$T/ro.err"
expect_eq "backup is an administrator's: exit 4" 4 "$?"
ok "... and no file is left" test ! -e "$T/ro"
expect_eq "... nor a partial one" 0 "$(ls "$T" | grep -c '^ro\.[A-Za-z0-9]\{6\}$')"
"$SEMCTL" -s "$ro_UNIX" backup "$T/ro" >/dev/null
expect_eq "root over the UNIX socket may" 0 "$?"
t_done
