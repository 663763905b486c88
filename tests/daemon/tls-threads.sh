#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# TLS clients on every event loop: with --threads 3 their handshakes and
# their I/O are dealt out over the loops like plain clients'; a permit held
# by a TLS client of one loop is handed, up after up, to TLS waiters of the
# others (through the loops' mailboxes); a contended name and the hand-off
# test of semd-benchmark over TLS, and churn resuming from tickets, run
# against the three loops with the daemon's and the client's counts
# agreeing. Under ThreadSanitizer (tests/run tsan) any race aborts semd.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
BENCH=$top_builddir/semd-benchmark
unset SEMD_TEST_THREADS		# this test chooses the number itself
export SEMD_TLS_SESSION_DIR=	# semctl: every run its own handshake
t_tls_certs ec

start_semd d --threads 3 --listen tls:127.0.0.1:0 --tls-cert srv.pem --tls-key srv.key \
	--tls-per-source-max-startups 0 --log-level debug || exit 1
TLS=$(grep -m1 '^tls:' "$T/d.ready")
C() { "$SEMCTL" -s "$TLS" --tls-ca ca.pem "$@"; }
U() { "$SEMCTL" -s "$d_UNIX" "$@"; }

U create x --limit 1 >/dev/null
# The holder keeps x until the waiters are queued (go), 30 s at most.
C run x -- sh -c "i=0; while [ ! -e '$T/go' ] && [ \$i -lt 600 ]; do sleep 0.05; i=\$((i + 1)); done" \
	>/dev/null 2>&1 &
holder=$!
held() { U info x 2>/dev/null | grep -q 'holders: 1'; }
ok "a TLS client holds x" t_wait_for 5 held
pids=
i=0
while [ $i -lt 6 ]; do
	C run x --timeout 20s -- sh -c "echo $i >>'$T/granted'" >"$T/w$i.out" 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
ok "six TLS waiters queue behind it" t_wait_for 10 sh -c \
	"'$SEMCTL' -s '$d_UNIX' --json info x | python3 -c 'import json,sys; sys.exit(len(json.load(sys.stdin)[\"waiters\"]) != 6)'"
touch "$T/go"
wait "$holder"
expect_eq "the holder ran and gave the permit back" 0 "$?"
rc=0
for p in $pids; do wait "$p" || rc=1; done
expect_eq "every waiter was granted in turn and ran" "0 6" "$rc $(wc -l <"$T/granted")"
loops=$(grep '(TLS' "$T/d.log" | sed -n 's/.*on loop \([0-9]*\)$/\1/p' | sort -u | wc -l)
expect_eq "the TLS clients were served by all three loops" 3 "$loops"
ok "... which ran their handshakes (no handshake failed)" sh -c "! grep -q 'TLS handshake:' '$T/d.log'"
U info x >"$T/x.out"
ok "x is free again" grep -q 'limit 1, available 1' "$T/x.out"

field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "$2" | head -n 1; }
positive() { awk -v v="$1" 'BEGIN { exit !(v > 0) }'; }
for t in contended handoff; do
	ok "semd-benchmark $t over TLS, six connections on three loops" \
		"$BENCH" -s "$TLS" --tls-ca ca.pem -t "$t" -c 6 -d 0.5 --warmup 0.1 --json >"$t.json"
	cg=$(field client_grants "$t.json")
	sg=$(field server_grants "$t.json")
	ok "... the daemon's grants $sg = the client's $cg + at most one in flight a connection" \
		awk -v c="${cg:-0}" -v s="${sg:-0}" 'BEGIN { exit !(c > 0 && s >= c && s - c <= 6) }'
	expect_eq "... no errors" 0 "$(field server_errors "$t.json")"
done
ok "churn over TLS resuming from tickets on three loops" \
	"$BENCH" -s "$TLS" --tls-ca ca.pem --tls-resume -t churn -c 6 -d 0.5 --warmup 0.1 --json >churn.json
ok "... resumed handshakes" positive "$(field tls_handshakes_resumed churn.json)"
ok "daemon still alive" kill -0 "$d_PID"
t_done
