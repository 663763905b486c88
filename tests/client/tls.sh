# SPDX-License-Identifier: BSD-2-Clause
# tests/client/tls.sh - the client side of tls: addresses, against
# `openssl s_server` (semd's TLS listener belongs to the security work):
# the server certificate is verified against the CA and the host name or
# IP, a client certificate is presented for mutual TLS, and bytes flow
# through the session (the server's garbage reply is reported as such).
. "$top_srcdir/tests/lib.sh"
t_watchdog 90
t_tls_certs
t_cert wrongname "/CN=elsewhere" "DNS:elsewhere.example" ca || exit 1
t_cert cli "/CN=worker-1" "DNS:worker-1" ca || exit 1

# serve CERT [s_server args...]: one connection; sets PORT. The server sends
# a frame semd would never send (length 2, bytes ff ff) once a client is in.
serve() {
	cert=$1; shift
	rm -f srv.out
	( printf '\000\000\000\002\377\377'; sleep 8 ) |
		timeout 20 openssl s_server -accept 127.0.0.1:0 -naccept 1 -cert "$cert.pem" \
			-key "$cert.key" "$@" >srv.out 2>&1 &
	PIDS_TO_KILL="$PIDS_TO_KILL $!"
	t_wait_for 10 grep -q '^ACCEPT' srv.out || { echo "s_server did not start"; cat srv.out; return 1; }
	PORT=$(sed -n 's/^ACCEPT .*:\([0-9]*\)$/\1/p' srv.out | head -n1)
}
# probe ARGS...: semctl ping through TLS; sets RC and ERR (stderr)
probe() {
	ERR=$("$SEMCTL" "$@" ping 2>&1 >/dev/null)
	RC=$?
}

serve srv && probe -s "tls:127.0.0.1:$PORT" --tls-ca ca.pem
expect_eq "verified server: the reply went through TLS (and is garbage)" 3 "$RC"
ok "... reported as an undecodable reply ($ERR)" sh -c "echo '$ERR' | grep -q undecodable"

serve srv && probe -s "tls:localhost:$PORT" --tls-ca ca.pem
ok "host name checked against DNS SAN ($ERR)" sh -c "echo '$ERR' | grep -q undecodable"

serve srv && probe -s "tls:127.0.0.1:$PORT" --tls-ca other.pem
expect_eq "unknown CA: cannot talk to the server" 3 "$RC"
ok "... certificate verification failed ($ERR)" sh -c "echo '$ERR' | grep -q 'cannot verify'"

serve wrongname && probe -s "tls:127.0.0.1:$PORT" --tls-ca ca.pem
ok "wrong name in the certificate is refused ($ERR)" sh -c "echo '$ERR' | grep -q 'cannot verify'"

serve srv -Verify 1 -CAfile ca.pem && SEMD_TLS_CA=ca.pem SEMD_TLS_CERT=cli.pem SEMD_TLS_KEY=cli.key probe -s "tls:127.0.0.1:$PORT"
ok "mutual TLS: the client certificate from the environment ($ERR)" sh -c "echo '$ERR' | grep -q undecodable"
ok "... the server saw worker-1" grep -q "worker-1" srv.out

# the real semd over TLS
start_semd d --listen tls:127.0.0.1:0 --tls-cert srv.pem --tls-key srv.key --tls-ca ca.pem \
	--tls-client-auth optional || exit 1
A=$(grep -m1 '^tls:' "$T/d.ready")
jget() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }
expect_eq "semd over TLS: anonymous without a certificate" anonymous \
	"$("$SEMCTL" -s "$A" --tls-ca ca.pem --json ping | jget 'j["principal"]')"
expect_eq "semd over mutual TLS: the certificate's name" cn:worker-1 \
	"$("$SEMCTL" -s "$A" --tls-ca ca.pem --tls-cert cli.pem --tls-key cli.key --json ping | jget 'j["principal"]')"
tok=$(SEMD_TLS_CA=ca.pem "$SEMCTL" -s "$A" down tjob --lease 30s)
expect_eq "down over TLS" 0 $?
expect_eq "validate over TLS" 0 "$(SEMD_TLS_CA=ca.pem "$SEMCTL" -s "$A" validate tjob "$tok" >/dev/null; echo $?)"
expect_eq "up over TLS" 0 "$(SEMD_TLS_CA=ca.pem "$SEMCTL" -s "$A" up tjob >/dev/null; echo $?)"
expect_eq "semd's certificate from another CA is refused" 3 \
	"$("$SEMCTL" -s "$A" --tls-ca other.pem ping >/dev/null 2>&1; echo $?)"
ok "threads and async on one TLS connection" env SEMD_TLS_CA=ca.pem "$top_builddir/tests/client/test_api" --threads "$A"
out=$(SEMD_TLS_CA=ca.pem "$top_builddir/examples/jobs" -s "$A" -w 4 -k 2 -t 3 -d 10)
expect_eq "worker processes over TLS" "4 workers ran 12 tasks, at most 2 at once (limit 2)" "$out"

probe -s "tls:127.0.0.1:$PORT" --tls-ca missing.pem
expect_eq "missing CA file" 3 "$RC"
ok "... named in the message ($ERR)" sh -c "echo '$ERR' | grep -q missing.pem"
t_done
