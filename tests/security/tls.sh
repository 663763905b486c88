#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/security/tls.sh - make throw-away certificates with the openssl CLI,
# then run the TLS handshake tests and the libevent TLS echo test on them.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120

if ! command -v openssl >/dev/null 2>&1; then
	echo "openssl CLI not found: apt-get install openssl" >&2
	exit 1
fi
ok "generate CA, server and client certificates" \
	sh "$top_srcdir/tests/security/gen-certs.sh" "$T/certs"
ok "test_tls: handshakes, verification, client auth, reload" \
	"$top_builddir/tests/security/test_tls" "$T/certs"
ok "test_tls_bev: bufferevent_openssl echo over loopback TCP" \
	"$top_builddir/tests/security/test_tls_bev" "$T/certs"
t_done
