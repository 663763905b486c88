#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Rate semaphores over the wire: a rate-only name and a name with a limit and
# a rate, tokens that come on time (the state machine's T_RATE timer through
# the daemon's deadline timer, or with a log through an entry), set-rate
# live, and (with a log) a bucket that survives a restart.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
start_semd d || exit 1

# waited ID FILE: the waited_us of reply ID in FILE.
waited() { sed -n "s/^reply id=$1 code=OK permit=[0-9]* token=[0-9]* n=[0-9]* waited_us=\([0-9]*\).*/\1/p" "$2"; }

out=$T/rate.out
# 20 tokens a second, at most 2: two now, then one every 50 ms.
$PROBE "$d_UNIX" hello "create api 0 rate=20 burst=2" "down api timeout=0" \
	"down api timeout=0" "down api timeout=0" "down api timeout=2000" \
	"down api n=2 timeout=2000" "info api" "up api" "down api n=3 timeout=0" \
	"setrate api 1000 burst=5" "down api n=5 timeout=2000" "setrate api 0" >"$out" 2>&1
ok "rate-only: created" has '^reply id=2 code=OK$' "$out"
ok "rate-only: the full bucket gives 2 at once" has '^reply id=4 code=OK permit=0 token=' "$out"
ok "rate-only: then WOULD_BLOCK, told in tokens" has '^reply id=5 code=WOULD_BLOCK msg=.*tokens' "$out"
w6=$(waited 6 "$out")
ok "rate-only: a waiter gets the next token (waited ${w6:-?} us)" \
	test -n "$w6" -a "${w6:-0}" -ge 20000 -a "${w6:-0}" -le 1500000
w7=$(waited 7 "$out")
ok "rate-only: two tokens take 100 ms (waited ${w7:-?} us)" \
	test -n "$w7" -a "${w7:-0}" -ge 80000 -a "${w7:-0}" -le 1500000
ok "rate-only: info shows the bucket" has '^reply id=8 code=OK name=api limit=0 .*mode=2 .*rate=20/1000 burst=2' "$out"
ok "rate-only: no up" has '^reply id=9 code=NOT_HOLDER' "$out"
ok "rate-only: n above the burst" has '^reply id=10 code=INVALID_ARGUMENT' "$out"
ok "set-rate: live" has '^reply id=11 code=OK$' "$out"
ok "set-rate: a larger burst fills at the new rate" has '^reply id=12 code=OK permit=0' "$out"
ok "set-rate: a rate-only name keeps its rate" has '^reply id=13 code=INVALID_ARGUMENT' "$out"

# A limit and a rate: a free slot and a token; an up gives back the slot.
# One token a second, so that the token used at the grant is not back
# before the info after it, however loaded the machine (100 ms was not).
out=$T/limit.out
$PROBE "$d_UNIX" hello "create gh 1 rate=1 burst=1" "down gh" "down gh id=9 timeout=5000 nowait" \
	"sleep 1200" "info gh" "up gh" "wait 9" "info gh" >"$out" 2>&1
ok "limit and rate: the first down takes the slot and the token" has '^reply id=3 code=OK permit=[1-9]' "$out"
ok "limit and rate: the second waits for the slot (the token came)" has '^reply id=10 code=OK name=gh limit=1 available=0 .*waiters=1 .*tokens_nano=1000000000 ' "$out"
ok "limit and rate: granted at the up" has '^reply id=9 code=OK permit=[1-9]' "$out"
ok "limit and rate: the token was used" has '^reply id=12 code=OK name=gh .*tokens_nano=[0-9]\{1,9\} ' "$out"

if [ -n "${SEMD_TEST_DURABLE:-}" ]; then
	# The bucket through a restart: its rate, its level.
	kill -TERM "$d_PID"
	t_wait_for 10 sh -c "! kill -0 $d_PID"
	start_semd d || exit 1
	$PROBE "$d_UNIX" hello "info api" "info gh" >"$T/restart.out" 2>&1
	ok "restart: the rate-only name and its bucket are back" has '^reply id=2 code=OK name=api limit=0 .*rate=1000/1000 burst=5' "$T/restart.out"
	ok "restart: so is the limit-and-rate name" has '^reply id=3 code=OK name=gh limit=1 .*rate=1/1000 burst=1' "$T/restart.out"
fi
t_done
