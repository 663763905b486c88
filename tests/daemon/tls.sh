#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# semd's tls: listener, with throw-away certificates from the openssl CLI and
# the real client (semctl): the ready file lists tls:HOST:PORT; anonymous and
# certificate (cn:NAME) principals, used by ACLs; client-auth required and
# certificates from an unknown CA refused; TLS 1.2 minimum; a handshake that
# never finishes, or plaintext on the TLS port, is cut while others are
# served; SIGHUP loads a new certificate without dropping established
# connections, and a bad one is refused with the old kept.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
t_tls_certs
t_cert srv2 "/CN=localhost" "DNS:localhost,IP:127.0.0.1" ca || exit 1
t_cert cli "/CN=worker-1" "DNS:worker-1" ca || exit 1
t_cert rogue "/CN=worker-1" "DNS:worker-1" other || exit 1
cp srv.pem live.pem
cp srv.key live.key

t_tls_conf live ca optional >"$T/tls.conf"
cat >>"$T/tls.conf" <<EOF
acl cn:worker-1 jobs/ all
acl anonymous jobs/ inspect
protect jobs/
EOF

# Start-up errors.
"$SEMD" --listen tls:127.0.0.1:0 --tls-cert missing.pem --tls-key srv.key \
	--ready-file "$T/x.ready" >"$T/missing.out" 2>&1
ok "a missing certificate: start-up fails" test $? -ne 0
ok "... naming the file" has 'missing.pem' "$T/missing.out"
"$SEMD" -t --listen tls:127.0.0.1:0 --tls-cert srv.pem --tls-key srv.key \
	--tls-client-auth required >"$T/noca.out" 2>&1
ok "client-auth required without tls-ca: refused" has 'needs tls-ca' "$T/noca.out"

rm -f "$T/d.ready"
"$SEMD" --config "$T/tls.conf" --listen "unix:$T/d.sock" --listen tls:127.0.0.1:0 \
	--handshake-timeout 700ms --ready-file "$T/d.ready" >"$T/d.log" 2>&1 &
d_PID=$!
PIDS_TO_KILL="$PIDS_TO_KILL $d_PID"
ok "semd with a tls: listener is ready" t_wait_for 10 test -s "$T/d.ready"
TLS=$(grep -m1 '^tls:' "$T/d.ready")
ok "the ready file lists tls:127.0.0.1:PORT ($TLS)" sh -c "echo '$TLS' | grep -q '^tls:127\.0\.0\.1:[0-9][0-9]*$'"
PORT=${TLS##*:}
C() { "$SEMCTL" -s "$TLS" --tls-ca ca.pem "$@"; }
CC() { "$SEMCTL" -s "$TLS" --tls-ca ca.pem --tls-cert cli.pem --tls-key cli.key "$@"; }

out=$(C ping 2>&1)
ok "ping over TLS as anonymous ($out)" sh -c "echo '$out' | grep -q 'as anonymous'"
out=$(CC ping 2>&1)
ok "ping over mutual TLS as cn:worker-1 ($out)" sh -c "echo '$out' | grep -q 'as cn:worker-1'"
"$SEMCTL" -s "tls:localhost:$PORT" --tls-ca ca.pem ping >/dev/null 2>&1
expect_eq "host name localhost verified" 0 "$?"
"$SEMCTL" -s "$TLS" --tls-ca other.pem ping >"$T/wrongca.out" 2>&1
expect_eq "server not trusted by the client: unreachable" 3 "$?"

# ACLs by certificate name.
CC down jobs/a >/dev/null 2>&1
expect_eq "cn:worker-1: down on protected jobs/" 0 "$?"
C trydown jobs/b >"$T/anon-down.out" 2>&1
expect_eq "anonymous: down on jobs/ is PERMISSION_DENIED (exit 4)" 4 "$?"
C info jobs/a >"$T/anon-info.out" 2>&1
ok "anonymous: inspect on jobs/ allowed, sees the count of holders" has 'holders: 1' "$T/anon-info.out"
ok "... but not who holds it (only managers of a name see others' holds)" sh -c "! grep -q 'cn:worker-1' '$T/anon-info.out'"
CC up jobs/a >/dev/null 2>&1
expect_eq "cn:worker-1: up" 0 "$?"
ok "denial logged with the principal" has 'denied: anonymous may not use jobs/b' "$T/d.log"

# A certificate from an unknown CA is refused, even in optional mode.
"$SEMCTL" -s "$TLS" --tls-ca ca.pem --tls-cert rogue.pem --tls-key rogue.key ping >/dev/null 2>&1
ok "client certificate from an unknown CA: refused" test $? -ne 0

# TLS 1.2 minimum.
openssl s_client -connect "127.0.0.1:$PORT" -tls1_1 -CAfile ca.pem </dev/null >"$T/tls11.out" 2>&1
ok "TLS 1.1 refused" test $? -ne 0
openssl s_client -connect "127.0.0.1:$PORT" -tls1_2 -CAfile ca.pem </dev/null >"$T/tls12.out" 2>&1
ok "TLS 1.2 accepted" has 'Protocol *: TLSv1.2' "$T/tls12.out"

# Handshakes that never finish, and plaintext on the TLS port: cut, while a
# TLS client holding a permit is served throughout.
CC create jobs/hold --limit 1 >/dev/null 2>&1
CC run jobs/hold -- sleep 3 >"$T/run.out" 2>&1 &
run=$!
held() { C info jobs/hold 2>/dev/null | grep -q 'holders: 1'; }
ok "a mutual-TLS client holds jobs/hold" t_wait_for 5 held
python3 - "$PORT" <<'PY' >"$T/stall.out" 2>&1
import socket, sys, time
port = int(sys.argv[1])
def cut_after(data):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(5)
    t0 = time.time()
    if data:
        s.sendall(data)
    try:
        while s.recv(4096):
            pass
        return time.time() - t0
    except socket.timeout:
        return None
    except OSError:
        return time.time() - t0
silent = cut_after(b"")
partial = cut_after(bytes.fromhex("1603010200010001fc0303") + b"\0" * 20)
plain = cut_after(bytes.fromhex("00000006080112020801"))
print("silent", silent, "partial", partial, "plain", plain)
print("ok" if silent and partial and plain and silent < 3 and partial < 3 and plain < 3 else "bad")
PY
ok "silent, half-a-ClientHello and plaintext clients are all cut ($(head -1 "$T/stall.out"))" has '^ok$' "$T/stall.out"
ok "the cuts are logged" has 'TLS handshake' "$T/d.log"
C ping >/dev/null 2>&1
expect_eq "still served after them" 0 "$?"

# SIGHUP: a new certificate for new connections; the established one stays.
serial() {
	openssl s_client -connect "127.0.0.1:$PORT" -CAfile ca.pem </dev/null 2>/dev/null |
		openssl x509 -noout -serial 2>/dev/null
}
s1=$(serial)
expect_eq "the served certificate is srv.pem" "$(openssl x509 -noout -serial -in srv.pem)" "$s1"
cp srv2.pem live.pem
cp srv2.key live.key
kill -HUP "$d_PID"
ok "reload logged" t_wait_for 5 has 'TLS certificate and key loaded' "$T/d.log"
expect_eq "after SIGHUP new connections get srv2.pem" "$(openssl x509 -noout -serial -in srv2.pem)" "$(serial)"
wait "$run"
expect_eq "the TLS connection open across the reload finished its run" 0 "$?"
C info jobs/hold >"$T/hold.out" 2>&1
ok "... and its permit went back" has 'limit 1, available 1' "$T/hold.out"
printf 'not a key\n' >live.key
kill -HUP "$d_PID"
ok "a bad key on reload is refused" t_wait_for 5 has 'TLS certificate not changed' "$T/d.log"
expect_eq "... and the loaded certificate is kept" "$(openssl x509 -noout -serial -in srv2.pem)" "$(serial)"
out=$(CC ping 2>&1)
ok "... clients still served ($out)" sh -c "echo '$out' | grep -q 'as cn:worker-1'"

# client-auth required: no certificate, no service.
rm -f "$T/r.ready"
"$SEMD" --listen tls:127.0.0.1:0 --tls-cert srv.pem --tls-key srv.key --tls-ca ca.pem \
	--tls-client-auth required --ready-file "$T/r.ready" >"$T/r.log" 2>&1 &
PIDS_TO_KILL="$PIDS_TO_KILL $!"
t_wait_for 10 test -s "$T/r.ready"
R=$(grep -m1 '^tls:' "$T/r.ready")
"$SEMCTL" -s "$R" --tls-ca ca.pem ping >/dev/null 2>&1
ok "client-auth required: refused without a certificate" test $? -ne 0
out=$("$SEMCTL" -s "$R" --tls-ca ca.pem --tls-cert cli.pem --tls-key cli.key ping 2>&1)
ok "client-auth required: served with one ($out)" sh -c "echo '$out' | grep -q 'as cn:worker-1'"
t_done
