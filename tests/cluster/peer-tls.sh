#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Peer traffic in mutual TLS (peer-tls-cert, -key, -ca): three nodes elect
# a leader and serve clients, survive the leader's kill -9 and restart; a
# node whose certificate another CA signed is refused and never catches up;
# a plain raft connection to a TLS peer port is refused; every node stops
# cleanly. And the settings: all three or none; with them, a non-loopback
# peer-listen needs no allow-insecure-peers.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS

t_cluster3 20 || exit 1

# The peer CA and a certificate for each node (its peer IP as a SAN); node
# 4's is signed by another CA.
( cd "$T" &&
  t_ca ca "/CN=semd peer CA" ec && t_ca other "/CN=another CA" ec &&
  for i in 1 2 3; do t_cert "n$i" "/CN=node$i" "IP:127.0.0.1" ca ec || exit 1; done &&
  t_cert n4 "/CN=node4" "IP:127.0.0.1" other ec ) ||
	{ echo "cannot make the test certificates"; exit 1; }
ptls() { echo "--peer-tls-cert $T/n$1.pem --peer-tls-key $T/n$1.key --peer-tls-ca $T/ca.pem"; }

# start_node I [ARGS...]: node I (t_cluster_node), its peers in TLS.
start_node() {
	i=$1; shift
	# shellcheck disable=SC2046
	t_cluster_node "$i" --election-timeout 300ms $(ptls "$i") "$@"
}
field() { t_cluster_field "$@"; }
# leader_field NAME: as the leader sees it.
leader_field() {
	l=$(field leader_id)
	[ -n "$l" ] && [ "$l" != 0 ] && field "$1" "tcp:127.0.0.1:$((base + 10 + l))"
}
has_leader() { t_cluster_has_leader "${1:-}"; }
members_are() {
	[ "$("$SEMCTL" -s "$ADDRS" --json cluster status 2>/dev/null |
		grep -o '"role"' | wc -l)" -eq "$1" ]
}
caught_up() {
	[ "$(field applied_index "tcp:127.0.0.1:$((base + 10 + $1))")" -ge "$2" ]
}
down_up() {
	"$SEMCTL" -s "$ADDRS" down "$1" >/dev/null && "$SEMCTL" -s "$ADDRS" up "$1" >/dev/null
}
stopped_ok() { kill -TERM "$1" && wait "$1"; }

# --- the settings -----------------------------------------------------------------
"$SEMD" --check-config --data-dir "$T/x" --node-id 1 \
	--peer-listen "tcp:127.0.0.1:$((base + 9))" --peer-tls-cert "$T/n1.pem" \
	>"$T/partial.out" 2>&1
expect_eq "peer-tls-cert alone: exit status EX_CONFIG" 78 $?
ok "... and it says all three are needed" has "peer-tls-ca" "$T/partial.out"
"$SEMD" --data-dir "$T/x" --node-id 1 --listen "tcp:127.0.0.1:$((base + 19))" \
	--peer-listen "tcp:127.0.0.1:$((base + 9))" --peer-tls-key "$T/n1.key" \
	--peer-tls-ca "$T/ca.pem" >"$T/partial2.out" 2>&1
expect_eq "peer-tls-key and -ca without -cert: exit status EX_CONFIG" 78 $?
"$SEMD" --data-dir "$T/x" --node-id 1 --listen "tcp:127.0.0.1:$((base + 19))" \
	--peer-listen "tcp:127.0.0.1:$((base + 9))" --peer-tls-cert "$T/ca.pem" \
	--peer-tls-key "$T/n1.key" --peer-tls-ca "$T/ca.pem" >"$T/badkey.out" 2>&1
expect_eq "a key of another certificate: exit status EX_CONFIG" 78 $?
ok "... and it says so" has "peer TLS: private key .* does not match" "$T/badkey.out"
# shellcheck disable=SC2046
"$SEMD" --check-config --data-dir "$T/x" --node-id 1 \
	--peer-listen "tcp:0.0.0.0:$((base + 9))" $(ptls 1) >"$T/wide.out" 2>&1
expect_eq "non-loopback peer-listen with peer TLS: accepted" 0 $?
"$SEMD" --check-config --data-dir "$T/x" --node-id 1 \
	--peer-listen "tcp:0.0.0.0:$((base + 9))" >"$T/wide-plain.out" 2>&1
expect_eq "... and refused without it" 78 $?

# --- three nodes -------------------------------------------------------------------
for i in 1 2 3; do
	start_node $i --bootstrap "$BOOT" || { echo "node $i did not start"; exit 1; }
done
ok "a leader is elected over TLS" t_wait_for 15 has_leader
ok "a client creates a semaphore" "$SEMCTL" -s "$ADDRS" create m --limit 1
ok "a client takes and gives back a permit" down_up m
ok "cluster status shows three members" members_are 3
ok "the nodes talk TLS" has "log: peer traffic in TLS 1.3" "$T/n1.log"
ok "... and prove their certificates" has "peer: node [23] .*connection from" "$T/n1.log"

# The leader killed and restarted: the cluster carries on and it rejoins.
L=$(field leader_id)
kill -KILL "$(eval echo "\$N$L")"
wait "$(eval echo "\$N$L")" 2>/dev/null
ok "a new leader after the kill -9 of node $L" t_wait_for 15 has_leader
ok "clients carry on without node $L" down_up m
start_node "$L" || echo "node $L did not restart"
ok "node $L knows the leader after its restart" t_wait_for 10 has_leader \
	"tcp:127.0.0.1:$((base + 10 + L))"
commit=$(leader_field commit_index)
ok "node $L catches up after its restart (index $commit)" \
	t_wait_for 15 caught_up "$L" "$commit"

# A node with a certificate of another CA: added, it is refused both ways.
start_node 4 || { echo "node 4 did not start"; exit 1; }
timeout 8 "$SEMCTL" -s "$ADDRS" cluster add 4 "127.0.0.1:$((base + 4))" \
	>"$T/add.out" 2>&1 &
ADD=$!
"$SEMCTL" -s "$ADDRS" create after-add --limit 3 >/dev/null
sleep 2
commit=$(leader_field commit_index)
a4=$(field applied_index "tcp:127.0.0.1:$((base + 14))")
ok "node 4 (another CA) does not catch up (applied ${a4:-?} of $commit)" \
	[ -n "$a4" ] && [ "$a4" -lt "$commit" ]
ok "the others log the refused handshake" sh -c \
	"cat '$T/n1.log' '$T/n2.log' '$T/n3.log' | grep -q 'peer TLS: .*certificate verify failed'"
ok "node 4 logs the refused handshake too" has "peer TLS: .*refused" "$T/n4.log"
ok "the three carry on" down_up after-add
wait "$ADD" 2>/dev/null

# A plain raft connection (libraft's handshake) to a TLS peer port.
python3 - "$((base + 1))" <<'PY' 2>/dev/null
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
addr = b"127.0.0.1:9" + b"\0" * 5
s.sendall(struct.pack("<QQQ", 1, 7, len(addr)) + addr + b"\0" * 64)
try:
    s.recv(100)
except OSError:
    pass
s.close()
PY
ok "a plain raft connection is refused (logged)" t_wait_for 5 \
	has "connection from 127.0.0.1:.*refused" "$T/n1.log"
ok "node 1 keeps running" kill -0 "$N1"
ok "clients carry on after the plain connection" down_up m

for i in 1 2 3 4; do
	ok "node $i stops cleanly on SIGTERM" stopped_ok "$(eval echo "\$N$i")"
	ok "node $i logged no crash" sh -c "! grep -qi 'assert\|abort\|Sanitizer' '$T/n$i.log'"
done
t_done
