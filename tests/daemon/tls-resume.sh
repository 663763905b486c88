#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# TLS session resumption with mutual TLS: a second semctl resumes from the
# ticket the first one kept, as the principal of the original certificate;
# another certificate (or none) never takes that session; a reload that
# keeps the CA keeps the tickets, one that changes it makes them useless,
# so the next connection is a full handshake and is refused when its
# certificate is no longer accepted; a chain of resumptions ends
# tls-ticket-lifetime after the full handshake that proved the client,
# across key rotations. Certificates from the openssl CLI (EC P-256).
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
t_tls_certs ec
t_cert w1 "/CN=worker-1" "DNS:worker-1" ca ec || exit 1
t_cert w2 "/CN=worker-2" "DNS:worker-2" ca ec || exit 1
t_cert w1o "/CN=worker-1" "DNS:worker-1" other ec || exit 1
cp ca.pem trust.pem

t_tls_conf srv trust required >"$T/d.conf"
cat >>"$T/d.conf" <<EOF
acl cn:worker-1 * all
acl cn:worker-2 * all
EOF
rm -f "$T/d.ready"
"$SEMD" --config "$T/d.conf" --listen "unix:$T/d.sock" --listen tls:127.0.0.1:0 \
	${SEMD_TEST_THREADS:+--threads "$SEMD_TEST_THREADS"} \
	--log-level debug --ready-file "$T/d.ready" >"$T/d.log" 2>&1 &
d_PID=$!
PIDS_TO_KILL="$PIDS_TO_KILL $d_PID"
ok "semd with tickets and client certificates required is ready" t_wait_for 10 test -s "$T/d.ready"
TLS=$(grep -m1 '^tls:' "$T/d.ready")
ok "tickets are on by default" has 'session tickets resume for 3600 s' "$T/d.log"

mkdir -m 700 "$T/sess"
export SEMD_TLS_SESSION_DIR="$T/sess"
W1() { "$SEMCTL" -s "$TLS" --tls-ca ca.pem --tls-cert w1.pem --tls-key w1.key "$@"; }
W2() { "$SEMCTL" -s "$TLS" --tls-ca ca.pem --tls-cert w2.pem --tls-key w2.key "$@"; }
principal() { python3 -c "import json,sys; print(json.load(sys.stdin)['principal'])"; }
stat_of() { "$SEMCTL" -s "unix:$T/d.sock" stats | awk -v k="$1" '$1 == k { print $2 }'; }
counts() { echo "$(stat_of tls_handshakes_full)/$(stat_of tls_handshakes_resumed)"; }

expect_eq "first connection: a full handshake, as cn:worker-1" cn:worker-1 "$(W1 --json ping | principal)"
expect_eq "... counted as full" 1/0 "$(counts)"
ok "... its ticket kept in one file of mode 0600" sh -c \
	"test \$(ls '$T/sess' | wc -l) = 1 && test \"\$(stat -c %a '$T'/sess/*.tls)\" = 600"
expect_eq "second semctl: resumed, still as cn:worker-1 (the original certificate)" \
	cn:worker-1 "$(W1 --json ping | principal)"
expect_eq "... counted as resumed" 1/1 "$(counts)"
ok "... logged as resumed" has 'connected as cn:worker-1 (TLS, resumed)' "$T/d.log"
W1 down jobs/a --lease 30s >/dev/null
expect_eq "a resumed session takes a permit" 0 "$?"
expect_eq "... and gives it back (the same principal)" 0 "$(W1 up jobs/a >/dev/null; echo $?)"

expect_eq "another certificate never resumes worker-1's session" \
	cn:worker-2 "$(W2 --json ping | principal)"
expect_eq "... a full handshake" 2/3 "$(counts)"
"$SEMCTL" -s "$TLS" --tls-ca ca.pem ping >/dev/null 2>&1
expect_eq "no certificate: refused (required), not let in on a kept session" 3 "$?"
expect_eq "... nothing resumed" 3 "$(stat_of tls_handshakes_resumed)"

# A reload that keeps the CA keeps the tickets.
n=$(grep -c 'configuration reloaded' "$T/d.log")
kill -HUP "$d_PID"
t_wait_for 5 sh -c "test \$(grep -c 'configuration reloaded' '$T/d.log') -gt $n"
ok "reload with the same CA: no new ticket keys" sh -c "! grep -q 'new ticket keys' '$T/d.log'"
W1 ping >/dev/null 2>&1
expect_eq "... worker-1 still resumes" 4 "$(stat_of tls_handshakes_resumed)"

# Another CA: worker-1's certificate is no longer accepted, and neither is its ticket.
cp other.pem trust.pem
kill -HUP "$d_PID"
ok "reload with another CA: new ticket keys" t_wait_for 5 has 'new ticket keys' "$T/d.log"
full=$(stat_of tls_handshakes_full)
lines=$(wc -l <"$T/d.log")
W1 ping >"$T/refused.out" 2>&1
expect_eq "worker-1 with its kept ticket: refused after the CA change" 3 "$?"
ok "... a full handshake that failed on its certificate" t_wait_for 5 sh -c \
	"tail -n +$((lines + 1)) '$T/d.log' | grep -q 'TLS handshake: .*certificate verify failed'"
expect_eq "... nothing resumed, nothing completed" "$full/4" "$(counts)"
expect_eq "a worker-1 certificate of the new CA is served (full handshake)" \
	cn:worker-1 "$("$SEMCTL" -s "$TLS" --tls-ca ca.pem --tls-cert w1o.pem --tls-key w1o.key --json ping | principal)"

# A chain of resumptions ends tls-ticket-lifetime after the full handshake,
# though every resumption brings a fresh ticket (and keys rotate each second).
rm -f "$T/e.ready"
"$SEMD" --listen "unix:$T/e.sock" --listen tls:127.0.0.1:0 --tls-cert srv.pem --tls-key srv.key \
	--acl "anonymous * all" --tls-ticket-lifetime 8s --tls-ticket-rotation 1s \
	--ready-file "$T/e.ready" >"$T/e.log" 2>&1 &
PIDS_TO_KILL="$PIDS_TO_KILL $!"
t_wait_for 10 test -s "$T/e.ready" || exit 1
E=$(grep -m1 '^tls:' "$T/e.ready")
mkdir -m 700 "$T/sess2"
A() { SEMD_TLS_SESSION_DIR="$T/sess2" "$SEMCTL" -s "$E" --tls-ca ca.pem ping >/dev/null; }
ecounts() {
	"$SEMCTL" -s "unix:$T/e.sock" stats |
		awk '$1 == "tls_handshakes_full" { f = $2 } $1 == "tls_handshakes_resumed" { r = $2 } END { print f "/" r }'
}
# sleep_until T0 S: sleep until S seconds past the time T0 (date +%s.%N).
sleep_until() {
	d=$(awk -v t0="$1" -v s="$2" -v now="$(date +%s.%N)" \
		'BEGIN { d = t0 + s - now; printf "%.2f", (d > 0 ? d : 0) }')
	sleep "$d"
}
# Times from t0, taken before the full handshake: the server counts whole
# seconds, so the resumption 2.5 s on stays well inside the 8 s lifetime
# however slow a loaded machine makes each call, and the last call comes a
# second and more past it.
t0=$(date +%s.%N)
A && A
sleep_until "$t0" 2.5
A
expect_eq "within the lifetime, across a key rotation: resumed" 1/2 "$(ecounts)"
sleep_until "$t0" 9.5
A
expect_eq "past the lifetime of the full handshake: a full handshake again" 2/2 "$(ecounts)"
t_done
