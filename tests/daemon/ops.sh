#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Every operation over UNIX and over TCP, against a real semd.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
start_semd d || exit 1

# has PATTERN FILE: a line of FILE matches PATTERN.

for ADDR in "$d_UNIX" "$d_TCP"; do
	k=$(echo "$ADDR" | cut -d: -f1)
	out=$T/ops-$k.out
	$PROBE "$ADDR" hello "create $k/a 2" "create $k/a 2" "create $k/a 5 ine" \
		"down $k/a" "down $k/a n=1 timeout=1000" "down $k/a timeout=0" \
		"info $k/a" "up $k/a" "up $k/a n=5" "up $k/nope" \
		"create $k/sig 1 signal" "down $k/sig timeout=0" "up $k/sig" "up $k/sig n=2" \
		"list prefix=$k/" "list prefix=$k/ max=1" "setlimit $k/a 3" "info $k/a" \
		"setlimit $k/a 0" "delete $k/a" "delete $k/a force" "info $k/a" \
		"ping hello" "stats" "down $k/auto" "info $k/auto" "up $k/auto" "info $k/auto" \
		"down $k/w timeout=0" "down $k/w id=77 nowait" "cancel 77" \
		"down hex:610162 timeout=0" "down hex:c328 timeout=0" \
		"down hex:$(printf '61%.0s' $(seq 256)) timeout=0" "down $k/big n=2 timeout=0" \
		>"$out" 2>&1
	ok "$k: hello answered with a session" has '^reply id=1 code=OK session=[1-9]' "$out"
	ok "$k: create" has '^reply id=2 code=OK$' "$out"
	ok "$k: create again is EXISTS" has '^reply id=3 code=EXISTS' "$out"
	ok "$k: create if-not-exists is OK" has '^reply id=4 code=OK$' "$out"
	ok "$k: down granted" has '^reply id=5 code=OK permit=[1-9][0-9]* token=[1-9]' "$out"
	ok "$k: second down granted" has '^reply id=6 code=OK permit=' "$out"
	ok "$k: trydown on a full one is WOULD_BLOCK" has '^reply id=7 code=WOULD_BLOCK msg=' "$out"
	ok "$k: info shows 2 holders" has "^reply id=8 code=OK name=$k/a limit=2 available=0 .*holders=2" "$out"
	ok "$k: up" has '^reply id=9 code=OK released=1' "$out"
	ok "$k: up of more than held is NOT_HOLDER" has '^reply id=10 code=NOT_HOLDER' "$out"
	ok "$k: up of an unknown name is NOT_FOUND" has '^reply id=11 code=NOT_FOUND' "$out"
	ok "$k: signal semaphore trydown" has '^reply id=13 code=OK permit=0' "$out"
	ok "$k: signal up by anyone" has '^reply id=14 code=OK released=1' "$out"
	ok "$k: signal up over the limit refused" has '^reply id=15 code=RESOURCE_EXHAUSTED' "$out"
	ok "$k: list" has "^reply id=16 code=OK entries=2 $k/a $k/sig next=\$" "$out"
	ok "$k: list paging" has "^reply id=17 code=OK entries=1 $k/a next=$k/a" "$out"
	ok "$k: set-limit grow" has "^reply id=19 code=OK name=$k/a limit=3 available=2" "$out"
	ok "$k: set-limit 0 refused" has '^reply id=20 code=INVALID_ARGUMENT' "$out"
	ok "$k: delete of a busy one needs force" has '^reply id=21 code=INVALID_ARGUMENT' "$out"
	ok "$k: delete force" has '^reply id=22 code=OK' "$out"
	ok "$k: deleted is NOT_FOUND" has '^reply id=23 code=NOT_FOUND' "$out"
	ok "$k: ping echoes" has '^reply id=24 code=OK pong=hello' "$out"
	ok "$k: stats" has '^reply id=25 code=OK semaphores=[0-9]* .*connections=[1-9]' "$out"
	ok "$k: auto-created on down" has "^reply id=27 code=OK name=$k/auto limit=1 .*auto=1" "$out"
	ok "$k: auto-created freed when idle" has '^reply id=29 code=NOT_FOUND' "$out"
	ok "$k: cancel" has '^reply id=78 code=OK$' "$out"
	ok "$k: cancelled down answered CANCELLED" has '^reply id=77 code=CANCELLED' "$out"
	ok "$k: control character in a name is INVALID_ARGUMENT" has '^reply id=79 code=INVALID_ARGUMENT' "$out"
	ok "$k: bad UTF-8 in a name is INVALID_ARGUMENT" has '^reply id=80 code=INVALID_ARGUMENT' "$out"
	ok "$k: 256-byte name is INVALID_ARGUMENT" has '^reply id=81 code=INVALID_ARGUMENT msg=.*256 bytes' "$out"
	ok "$k: n over the limit is INVALID_ARGUMENT" has '^reply id=82 code=INVALID_ARGUMENT' "$out"
	ok "$k: lost-hold notice on delete force" has '^reply id=0 code=CANCELLED lost=[^ ]* permit=' "$out"

	# validate and fencing tokens
	out=$T/val-$k.out
	$PROBE "$ADDR" hello "down $k/v" "sleep 1" >"$out"
	tok=$(sed -n 's/^reply id=2 code=OK permit=[0-9]* token=\([0-9]*\).*/\1/p' "$out")
	$PROBE "$ADDR" hello "down $k/v lease=60000" "validate $k/v $tok" >"$out"
	ok "$k: token from a closed connection is invalid" has '^reply id=3 code=OK valid=0' "$out"
	tok2=$(sed -n 's/^reply id=2 code=OK permit=[0-9]* token=\([0-9]*\).*/\1/p' "$out")
	ok "$k: tokens grow" test "$tok2" -gt "$tok"
	$PROBE "$ADDR" hello "validate $k/v $tok2" "info $k/v" "up $k/v" "validate $k/v $tok2" >"$out"
	ok "$k: detached hold outlives the client and validates" has '^reply id=2 code=OK valid=1' "$out"
	ok "$k: detached hold shown detached" has 'holder=uid:[0-9]*/[0-9]*/1/detached\|holder=anonymous/[0-9]*/1/detached' "$out"
	ok "$k: the same principal can up it" has '^reply id=4 code=OK released=1' "$out"
	ok "$k: invalid after the up" has '^reply id=5 code=OK valid=0' "$out"
done

# Requests before hello, and a wrong version.
$PROBE "$d_UNIX" "down x" "expect-eof" >"$T/nohello.out"
ok "no hello: PROTOCOL_ERROR and closed" has '^reply id=1 code=PROTOCOL_ERROR' "$T/nohello.out"
ok "no hello: connection closed" has '^eof' "$T/nohello.out"
$PROBE "$d_UNIX" "hello version=2" "expect-eof" >"$T/v2.out"
ok "version 2 refused" has '^reply id=1 code=PROTOCOL_ERROR msg=.*version' "$T/v2.out"

# The principal over UNIX is the peer's uid.
$PROBE "$d_UNIX" hello >"$T/who.out"
ok "UNIX principal is uid:N" has "principal=uid:$(id -u) " "$T/who.out"
$PROBE "$d_TCP" hello >"$T/who.out"
ok "TCP principal is anonymous" has "principal=anonymous " "$T/who.out"
t_done
