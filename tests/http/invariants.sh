#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/http/invariants.sh - no permit lost or granted twice over HTTP:
# two dozen clients acquiring, long-polling, dropping mid-poll and
# cancelling, checked against the daemon's own events
# (tests/http/invariants.py). SEMD_TEST_DURABLE and SEMD_TEST_THREADS
# run it through the log and on several loops.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/http/lib.sh"
t_watchdog 120

printf 'acl anonymous * inspect,use\nhttp-lease 2s\n' >"$T/d.conf"
start_http d --config "$T/d.conf" || exit 1
ok "the permit invariants under many HTTP clients" python3 \
	"$HTTP_PY/invariants.py" "$d_HTTP" "$d_HTTPU" 6
ok "every answer as the OpenAPI document says" python3 "$HTTP_PY/openapi-check.py" \
	"$top_srcdir/daemon/http/openapi.json" "$HTTP_SEEN"
t_done
