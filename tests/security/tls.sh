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
ok "tls_test: handshakes, verification, client auth, reload" \
	"$top_builddir/tests/security/tls_test" "$T/certs"
ok "tls_bev_test: bufferevent_openssl echo over loopback TCP" \
	"$top_builddir/tests/security/tls_bev_test" "$T/certs"
t_done
