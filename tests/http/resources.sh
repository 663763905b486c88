#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/http/resources.sh - semd over HTTP/JSON (doc/http.md): the README's
# curl acquire and release, then every resource through curl and Python's
# http.client (tests/http/resources.py), a backup made over HTTP restored
# into a new daemon, and the OpenAPI check of every answer seen. With
# SEMD_TEST_DURABLE=1 (the durable stage) the daemon keeps a log.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/http/lib.sh"
t_watchdog 120

# Anonymous (TCP) may use and create, not manage another's: the UNIX
# socket's root is the administrator.
printf 'acl anonymous * inspect,use,create\n' >"$T/d.conf"
start_http d --config "$T/d.conf" || exit 1
U=$d_URL
mode=memory
[ -n "${SEMD_TEST_DURABLE:-}" ] && mode=durable

# The README's example.
hcurl "$T/c1" -X POST -H 'Prefer: wait=30' "$U/v1/semaphores/deploy/permits"
expect_eq "curl acquire: 201" 201 "$(st "$T/c1")"
permit=$(jget "$T/c1" permit)
token=$(jget "$T/c1" token)
ok "the fencing token is a decimal string" sh -c "expr \"$token\" : '[0-9][0-9]*$' >/dev/null"
hcurl "$T/c2" "$U/v1/semaphores/deploy/tokens/$token"
expect_eq "curl validate" True "$(jget "$T/c2" valid)"
hcurl "$T/c3" -X DELETE "$U/v1/semaphores/deploy/permits/$permit"
expect_eq "curl release: 204" 204 "$(st "$T/c3")"
hcurl "$T/c4" -X POST -d '{"n":' "$U/v1/semaphores/deploy/permits"
expect_eq "broken JSON: 400" 400 "$(st "$T/c4")"
ok "as a problem of semctl's kind" has '"error":"invalid_argument","code":-7' "$T/c4"
ok "of type application/problem+json" has 'problem+json' "$T/c4.st"
# The same over the UNIX socket, as the test's own uid.
ok "curl over http+unix: the uid" sh -c "curl -s --unix-socket \
	'${d_HTTPU#http+unix:}' http://localhost/v1/server | grep -q '\"principal\":\"uid:$(id -u)\"'"

ok "every resource through http.client" python3 "$HTTP_PY/resources.py" \
	"$d_HTTP" "$d_HTTPU" "$mode" "$T/backup"

# The backup made over HTTP is one semd --restore takes.
"$SEMD" --restore "$T/backup" --data-dir "$T/restored" \
	--listen "unix:$T/r.sock" --ready-file "$T/r.ready" >"$T/r.log" 2>&1 &
PIDS_TO_KILL="$PIDS_TO_KILL $!"
ok "the HTTP backup restores" t_wait_for 10 test -s "$T/r.ready"

ok "every answer as the OpenAPI document says" python3 "$HTTP_PY/openapi-check.py" \
	"$top_srcdir/daemon/http/openapi.json" "$HTTP_SEEN"
t_done
