#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Peers by DNS name: three TLS nodes known as localhost:PORT, their
# certificates naming them by a DNS subjectAltName only (no IP), elect a
# leader and serve clients; a node whose certificate names 127.0.0.1 but
# not localhost (its CN says localhost: not looked at) is refused both ways
# and never catches up; a hostile address is refused by cluster add. And
# plain peers (IPv4 literals only) refuse a name in peer-listen and
# in the bootstrap list, saying why.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS
command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }

base=$(t_port_base 20) || exit 1
BOOT="1=localhost:$((base + 1)),2=localhost:$((base + 2)),3=localhost:$((base + 3))"
ADDRS="tcp:127.0.0.1:$((base + 11)),tcp:127.0.0.1:$((base + 12)),tcp:127.0.0.1:$((base + 13))"

( cd "$T" && t_ca ca "/CN=semd peer CA" ec &&
  for i in 1 2 3; do t_cert "n$i" "/CN=node$i" "DNS:localhost" ca ec || exit 1; done &&
  t_cert n4 "/CN=localhost" "IP:127.0.0.1" ca ec ) ||
	{ echo "cannot make the test certificates"; exit 1; }

# start_node I [ARGS...]: node I, its peer address localhost:base+I.
start_node() {
	i=$1; shift
	t_start_node "$i" --data-dir "$T/d$i" --node-id "$i" \
		--peer-listen "tcp:localhost:$((base + i))" \
		--listen "tcp:127.0.0.1:$((base + 10 + i))" \
		--acl "anonymous * all" --election-timeout 300ms \
		--peer-tls-cert "$T/n$i.pem" --peer-tls-key "$T/n$i.key" \
		--peer-tls-ca "$T/ca.pem" "$@"
}
field() { t_cluster_field "$@"; }
has_leader() { t_cluster_has_leader "${1:-}"; }
leader_field() {
	l=$(field leader_id)
	[ -n "$l" ] && [ "$l" != 0 ] && field "$1" "tcp:127.0.0.1:$((base + 10 + l))"
}
down_up() {
	"$SEMCTL" -s "$ADDRS" down "$1" >/dev/null && "$SEMCTL" -s "$ADDRS" up "$1" >/dev/null
}
in_logs() { cat "$T/n1.log" "$T/n2.log" "$T/n3.log" | grep -q -- "$1"; }
stopped_ok() { kill -TERM "$1" && wait "$1"; }

# --- plain peers take no name -------------------------------------------------------
"$SEMD" --check-config --data-dir "$T/x" --node-id 1 \
	--peer-listen "tcp:localhost:$((base + 9))" >"$T/plain.out" 2>&1
expect_eq "plain peers, peer-listen by name: exit status EX_CONFIG" 78 $?
ok "... and it says names need peer TLS" has "localhost:.*names and IPv6 need peer TLS" "$T/plain.out"
t_peer_key "$T/peer.key"
timeout 15 "$SEMD" --data-dir "$T/x" --node-id 1 --listen "tcp:127.0.0.1:$((base + 19))" \
	--peer-listen "tcp:127.0.0.1:$((base + 9))" --peer-key "$T/peer.key" \
	--bootstrap "1=127.0.0.1:$((base + 9)),2=localhost:$((base + 8))" \
	>"$T/plainboot.out" 2>&1
expect_eq "plain peers, a name in the bootstrap list: exit status EX_CONFIG" 78 $?
ok "... and it says which node" has "raft bootstrap: bootstrap: node 2: localhost:.*peer TLS" "$T/plainboot.out"
"$SEMD" --check-config --data-dir "$T/x" --node-id 1 --peer-tls-cert "$T/n1.pem" \
	--peer-tls-key "$T/n1.key" --peer-tls-ca "$T/ca.pem" \
	--peer-listen "tcp:local_host:$((base + 9))" >"$T/badname.out" 2>&1
expect_eq "TLS peers, a name DNS does not allow: exit status EX_CONFIG" 78 $?
ok "... and it says what is expected" has "is not HOST:PORT" "$T/badname.out"

# --- three nodes by name -------------------------------------------------------------
for i in 1 2 3; do
	start_node $i --bootstrap "$BOOT" || { echo "node $i did not start"; exit 1; }
done
ok "the nodes take each other's DNS names" t_wait_for 15 \
	in_logs "peer: node [123] (localhost:"
ok "a leader is elected among peers known by name" t_wait_for 15 has_leader
ok "a client creates a semaphore, takes a permit and gives it back" sh -c \
	"'$SEMCTL' -s '$ADDRS' create m --limit 1 && '$SEMCTL' -s '$ADDRS' down m &&
	'$SEMCTL' -s '$ADDRS' up m"
ok "cluster status lists the peers by name" sh -c \
	"'$SEMCTL' -s '$ADDRS' cluster status | grep -c 'localhost:' | grep -qx 3"

# Hostile or malformed addresses: refused by the leader, nothing added.
for bad in "local host:$((base + 5))" "localhost:0" "::1:$((base + 5))" \
	"$(printf 'a%.0s' $(seq 300)):$((base + 5))"; do
	"$SEMCTL" -s "$ADDRS" cluster add 5 "$bad" >"$T/bad.out" 2>&1
	rc=$?
	ok "cluster add '$(printf %.24s "$bad")': refused" sh -c \
		"[ $rc -ne 0 ] && grep -q 'is not HOST:PORT' '$T/bad.out'"
done
ok "still three members" sh -c \
	"[ \$('$SEMCTL' -s '$ADDRS' --json cluster status | grep -o '\"role\"' | wc -l) -eq 3 ]"

# Node 4: its certificate (same CA) names 127.0.0.1, not localhost. Its
# own bootstrap list has node 1, so it dials node 1 too (for votes).
start_node 4 --bootstrap "4=localhost:$((base + 4)),1=localhost:$((base + 1))" ||
	{ echo "node 4 did not start"; exit 1; }
ok "node 1 refuses node 4's connection (no DNS:localhost)" t_wait_for 10 \
	has "refused: node 4 says it is at localhost:$((base + 4)), which its certificate does not name (DNS subjectAltName)" "$T/n1.log"
timeout 8 "$SEMCTL" -s "$ADDRS" cluster add 4 "localhost:$((base + 4))" \
	>"$T/add.out" 2>&1 &
ADD=$!
ok "the leader refuses node 4's certificate (no DNS:localhost)" t_wait_for 10 \
	in_logs "peer TLS: node 4 at localhost:$((base + 4)): refused"
"$SEMCTL" -s "$ADDRS" create after-add --limit 3 >/dev/null
commit=$(leader_field commit_index)
a4=$(field applied_index "tcp:127.0.0.1:$((base + 14))")
ok "node 4 does not catch up (applied ${a4:-?} of $commit)" \
	[ -n "$a4" ] && [ "$a4" -lt "$commit" ]
ok "the three carry on" down_up after-add
wait "$ADD" 2>/dev/null

for i in 1 2 3 4; do
	ok "node $i stops cleanly on SIGTERM" stopped_ok "$(eval echo "\$N$i")"
	ok "node $i logged no crash" sh -c "! grep -qi 'assert\|abort\|Sanitizer' '$T/n$i.log'"
done
t_done
