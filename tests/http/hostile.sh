#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/http/hostile.sh - hostile input and clients over HTTP
# (tests/http/hostile.py): bodies and paths that are wrong in every way,
# bad tokens and origins, slowloris, a watcher that does not read, ten
# thousand idle connections; then bearer tokens reloaded with SIGHUP and
# the per-principal rate (http-rate).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/http/lib.sh"
t_watchdog 150

"$SEMD" --make-token cn:ci >"$T/tok" || exit 1
token=$(sed -n 's/^token: //p' "$T/tok")
ok "--make-token: a token of 43 characters" test "${#token}" = 43
cat >"$T/d.conf" <<CONF
acl anonymous * inspect,use,create
acl cn:ci * inspect,use,create
$(grep '^http-token' "$T/tok")
http-cors-origin http://ok.example
http-request-timeout 2s
max-output 65536
CONF
ok "the config file holds the hash, not the token" sh -c "! grep -q '$token' '$T/d.conf'"
start_http d --config "$T/d.conf" || exit 1

ok "hostile input and clients" python3 "$HTTP_PY/hostile.py" "$d_HTTP" "$token" \
	"$d_HTTPU"

# Tokens are read again on SIGHUP: one taken out is refused at once.
hcurl "$T/s1" -H "Authorization: Bearer $token" "$d_URL/v1/server"
expect_eq "the token lets in" 200 "$(st "$T/s1")"
sed -i '/^http-token/d' "$T/d.conf"
kill -HUP "$d_PID"
refused() {
	hcurl "$T/s2" -H "Authorization: Bearer $token" "$d_URL/v1/server"
	[ "$(st "$T/s2")" = 401 ]
}
ok "after a reload without it: 401" t_wait_for 5 refused

# http-rate: requests a second per principal, then 429 with Retry-After.
start_http r --config "$T/d.conf" --http-rate 2 || exit 1
n=0
for i in 1 2 3 4 5 6 7 8; do
	hcurl "$T/r$i" "$r_URL/v1/server"
	[ "$(st "$T/r$i")" = 429 ] && n=$((n + 1))
done
ok "over http-rate: 429" test "$n" -ge 1
ok "with Retry-After" sh -c "curl -s -D - -o /dev/null '$r_URL/v1/server' \
	'$r_URL/v1/server' '$r_URL/v1/server' '$r_URL/v1/server' '$r_URL/v1/server' \
	'$r_URL/v1/server' | grep -qi '^retry-after: [0-9]'"

ok "every answer as the OpenAPI document says" python3 "$HTTP_PY/openapi-check.py" \
	"$top_srcdir/daemon/http/openapi.json" "$HTTP_SEEN"
t_done
