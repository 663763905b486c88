#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# semd-benchmark over TLS against a private semd with a TLS listener: the
# server certificate verifies against the test CA (by name and by address),
# every test runs briefly, and an untrusted server is refused clearly.
# Skipped (77) while semd has no TLS listener.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
BENCH=$top_builddir/semd-benchmark
command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }

cd "$T" || exit 1
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
	-subj "/CN=semd-benchmark test CA" 2>/dev/null || exit 1
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj "/CN=localhost" 2>/dev/null &&
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >srv.ext &&
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem \
	-days 2 -extfile srv.ext 2>/dev/null || exit 1

"$SEMD" --listen "unix:$T/d.sock" --listen tls:127.0.0.1:0 --tls-cert srv.pem \
	--acl "anonymous * all" \
	--tls-key srv.key --ready-file "$T/d.ready" >"$T/d.log" 2>&1 &
pid=$!
PIDS_TO_KILL="$PIDS_TO_KILL $pid"
if ! t_wait_for 10 grep -q '^tls:' "$T/d.ready"; then
	echo "SKIP: this semd has no TLS listener:"
	tail -n 3 "$T/d.log"
	exit 77
fi
TLS=$(grep -m1 '^tls:' "$T/d.ready")
PORT=${TLS##*:}

field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "$2" | head -n 1; }
positive() { awk -v v="$1" 'BEGIN { exit !(v > 0) }'; }

for test in ping down-up contended handoff churn; do
	ok "$test over tls runs" "$BENCH" -s "tls:localhost:$PORT" --tls-ca ca.pem -t "$test" \
		-c 3 -P 2 -d 0.3 --warmup 0.1 --json >"$test.json"
	ok "$test over tls completed operations" positive "$(field ops "$test.json")"
done
ok "an IP address verifies against the certificate's IP" \
	"$BENCH" -s "$TLS" --tls-ca ca.pem -t ping -c 1 -d 0.2 --warmup 0 --json >ip.json
"$BENCH" -s "$TLS" -t ping -c 1 -d 0.2 >/dev/null 2>untrusted.err
expect_eq "an untrusted server fails the test" 1 $?
ok "and says why" grep -q "certificate" untrusted.err
ok "daemon still alive" kill -0 "$pid"
t_done
