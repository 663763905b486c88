#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Issue 35: a local user at a three-node cluster's raft peer ports
# (tests/security/peer_attack.py), then a peer that holds the peer key and
# went bad. The crafted messages of the issue - an AppendEntries of term + 1
# with one 9-byte entry to each follower, a RequestVote of term 2^64 - 2 to
# every node, an AppendEntries whose header is 1 byte long - and a
# disruptive RequestVote every 0.6 s as node 2 while an honest client takes
# and gives back a permit, 16 silent connections at each peer port while
# the leader goes: no node goes down, the term stays what elections
# made (and an election after the leader's loss works), every node
# applied the leader's log, and no honest request fails. Without a
# peer key the nodes refuse the connections at the handshake; with it, the
# wire checker and the peer port refuse the messages, each saying why.
# Against a semd of before (no --peer-key: libraft's plain TCP) the same
# steps fail: followers stop on the entry, the term saturates, a node
# crashes on the short header, requests fail while the votes come.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }

ATTACK="python3 $top_srcdir/tests/security/peer_attack.py"
OLD=
"$SEMD" --help 2>&1 | grep -q -- --peer-key || OLD=--old	# the semd of before

t_cluster3 20 || exit 1
peer() { echo "127.0.0.1:$((base + $1))"; }
cl() { echo "tcp:127.0.0.1:$((base + 10 + $1))"; }
field() { t_cluster_field "$@"; }
has_leader() { t_cluster_has_leader "${1:-}"; }
# new_leader: a leader, not node $L.
new_leader() { nl=$(field leader_id); [ -n "$nl" ] && [ "$nl" != 0 ] && [ "$nl" != "$L" ]; }
down_up() {
	"$SEMCTL" -s "$ADDRS" down "$1" >/dev/null 2>&1 &&
		"$SEMCTL" -s "$ADDRS" up "$1" >/dev/null 2>&1
}
logs_have() { cat "$T/n1.log" "$T/n2.log" "$T/n3.log" | grep -q -- "$1"; }
alive() { kill -0 "$N1" 2>/dev/null && kill -0 "$N2" 2>/dev/null && kill -0 "$N3" 2>/dev/null; }
# same_log: every node, in the leader's term, has applied what the leader
# had committed (each status query is itself logged - a connection's open
# and close - so indexes move: a node is asked once, both numbers from that
# answer). A node that took a rogue entry stopped applying, or left the term.
same_log() {
	sl_s=$("$SEMCTL" -s "$(cl "$(field leader_id)")" --json cluster status 2>/dev/null)
	sl_c=$(echo "$sl_s" | sed -n 's/.*"commit_index":\([0-9]*\).*/\1/p')
	sl_t=$(echo "$sl_s" | sed -n 's/.*"term":\([0-9]*\).*/\1/p')
	[ -n "$sl_c" ] && [ -n "$sl_t" ] || return 1
	for sl_i in 1 2 3; do
		sl_s=$("$SEMCTL" -s "$(cl $sl_i)" --json cluster status 2>/dev/null)
		echo "$sl_s" | grep -q "\"term\":$sl_t," || return 1
		sl_a=$(echo "$sl_s" | sed -n 's/.*"applied_index":\([0-9]*\).*/\1/p')
		[ -n "$sl_a" ] && [ "$sl_a" -ge "$sl_c" ] || return 1
	done
}
# after WHAT TERM0: the checks after an attack.
after() {
	ok "$1: every node is up" alive
	ok "$1: a leader" t_wait_for 10 has_leader
	t=$(field term)
	ok "$1: the term is what elections made (${t:-?}, was $2)" \
		[ -n "$t" ] && [ "$t" -lt $(($2 + 20)) ]
	ok "$1: a client takes and gives back a permit" t_wait_for 10 down_up m
	ok "$1: every node applied the leader's log" t_wait_for 10 same_log
	ok "$1: no node stopped on an entry" sh -c \
		"! cat '$T/n1.log' '$T/n2.log' '$T/n3.log' | grep -q 'committed entry cannot be applied'"
}

for i in 1 2 3; do
	t_cluster_node $i --bootstrap "$BOOT" --election-timeout 300ms ||
		{ echo "node $i did not start"; exit 1; }
done
ok "a leader is elected" t_wait_for 15 has_leader
ok "a client creates a semaphore" "$SEMCTL" -s "$ADDRS" create m --limit 1
ok "... and takes and gives back a permit" down_up m
t_wait_for 10 same_log

# attack [KEY]: the issue's three crafted messages, as any local user (or
# with the peer key: a peer that went bad).
attack() {
	key=${1:+--key $1 --addr $(peer 2)}
	L=$(field leader_id)
	term0=$(field term)
	for f in 1 2 3; do
		[ "$f" = "$L" ] && continue
		last=$(field last_index "$(cl $f)")
		# shellcheck disable=SC2086
		$ATTACK $OLD $key append "$(peer $f)" $((term0 + 1)) "$last" "$term0" \
			$((last + 1)) 9 >>"$T/attack.log" 2>&1
		# shellcheck disable=SC2086
		$ATTACK $OLD $key append "$(peer $f)" $((term0 + 1)) "$last" "$term0" \
			$((last + 1)) 16 >>"$T/attack.log" 2>&1
	done
	for i in 1 2 3; do
		# shellcheck disable=SC2086
		$ATTACK $OLD $key vote "$(peer $i)" 18446744073709551614 >>"$T/attack.log" 2>&1
	done
	sleep 1
	for i in 1 2 3; do
		# shellcheck disable=SC2086
		$ATTACK $OLD $key short "$(peer $i)" >>"$T/attack.log" 2>&1
	done
}

# --- any local user -----------------------------------------------------------------
attack
after "crafted messages from a local user" "$term0"
if [ -z "$OLD" ]; then
	ok "... refused at the handshake (logged)" has \
		"connection from 127.0.0.1:.*refused: it does not prove a peer key" "$T/n1.log"
fi

# failover WHAT: the leader (node $L) goes; the others elect a new one
# within 5 s, clients carry on, and it comes back. Sets term0.
failover() {
	L=$(field leader_id)
	term0=$(field term)
	kill -TERM "$(eval echo "\$N$L")"
	wait "$(eval echo "\$N$L")" 2>/dev/null
	ok "$1: a new leader after node $L stopped" t_wait_for 5 new_leader
	ok "$1: clients carry on" t_wait_for 5 down_up m
	t_cluster_node "$L" --election-timeout 300ms || echo "node $L did not restart"
	ok "$1: node $L is back" t_wait_for 10 same_log
}

# The leader goes (a saturated term would elect no one).
failover "after the crafted messages"

# A disruptive RequestVote every 0.6 s as node 2, while a client works.
term0=$(field term)
# shellcheck disable=SC2046,SC2086
$ATTACK $OLD --id 2 disrupt 5 0.6 "$SEMCTL" "$ADDRS" $(peer 1) $(peer 2) $(peer 3) \
	>"$T/disrupt.log" 2>&1 &
D=$!
fails=0; n=0
while kill -0 "$D" 2>/dev/null && [ $n -lt 400 ]; do
	down_up m || fails=$((fails + 1))
	n=$((n + 1))
done
wait "$D"
echo "# disruptive votes: $(cat "$T/disrupt.log"); $fails of $n down+up pairs failed"
ok "no honest request failed under the disruptive votes ($fails of $n)" [ "$fails" = 0 ]
after "disruptive votes" "$term0"

# Silent connections (issue 35, item 4): 16 at each node's peer port, held
# and opened again as soon as a node closes one, while the leader goes.
# $SILENT_S: the connections' lifetime.
SILENT_S=8
# shellcheck disable=SC2046
$ATTACK silent $SILENT_S 16 $(peer 1) $(peer 2) $(peer 3) >"$T/silent.log" 2>&1 &
S=$!
if [ -z "$OLD" ]; then
	ok "silent connections: the nodes make room (logged)" t_wait_for 5 logs_have \
		"ended for a newer connection"
else
	sleep 1		# the semd of before logs nothing of them
fi
failover "silent connections"
wait "$S"
echo "# $(cat "$T/silent.log")"
after "silent connections" "$term0"

# --- a peer with the key that went bad (this semd's own checks) -----------------------
if [ -z "$OLD" ]; then
	: >"$T/attack.log"
	attack "$T/peer.key"
	after "crafted messages from a key holder" "$term0"
	ok "... the 9-byte entry refused on the wire" logs_have \
		"refused: entry 0 of an AppendEntries is 9 bytes long"
	ok "... the entry of an unknown format refused by the port" logs_have \
		"entry 0 cannot be applied: entry of an unknown format"
	ok "... the term of 2^64 - 2 refused by the port" logs_have \
		"RequestVote from node 2: term 18446744073709551614"
	ok "... the 1-byte header refused on the wire" logs_have \
		"refused: a header of 1 bytes for message type 1"
fi
t_done
