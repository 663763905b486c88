#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The identity of a UNIX peer when the rules change under its connection.
# Without rules semd does not look up user and group names (uid:N is all
# it needs, and NSS lookups cost a lot per connection); when a reload
# brings rules, a connection made before is looked up on its next request,
# so user: and group: rules apply to it, a deny included.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
me=$(id -u)
user=$(id -un)
group=$(id -gn)

cfg=$T/semd.conf
: >"$cfg"
start_semd d --config "$cfg" || exit 1

# Connected while there are no rules; the requests come after the reload.
$PROBE "$d_UNIX" hello "down open/a timeout=0" "up open/a" "until $T/old.go" \
	"down id/a timeout=0" "info id/a" "down grp/a timeout=0" >"$T/old.out" 2>&1 &
old=$!
t_wait_for 5 has '^reply id=3 code=OK' "$T/old.out"
ok "no rules: served" has '^reply id=2 code=OK permit=' "$T/old.out"
# The user is denied id/ by name before everyone is allowed it: a peer known
# only as uid:N would pass. group: rules must see its groups too.
cat >"$cfg" <<EOF2
acl user:$user id/ inspect
acl * id/ all
acl group:$group grp/ use
protect grp/
EOF2
kill -HUP "$d_PID"
t_wait_for 5 has 'configuration reloaded' "$T/d.log"
touch "$T/old.go"
wait "$old"
cat "$T/old.out"
ok "reload: a user: deny applies to a connection made before the rules" \
	has '^reply id=4 code=PERMISSION_DENIED' "$T/old.out"
ok "reload: the same rule's allowed right still works" \
	has '^reply id=5 code=' "$T/old.out"
ok "reload: a group: allow applies to a connection made before the rules" \
	has '^reply id=6 code=OK permit=' "$T/old.out"
ok "the denial names the principal" has "denied: uid:$me may not use id/a" "$T/d.log"

# A connection made after the reload is looked up at once: the same answers.
$PROBE "$d_UNIX" hello "down id/b timeout=0" "down grp/b timeout=0" >"$T/new.out" 2>&1
ok "new connection: user: deny" has '^reply id=2 code=PERMISSION_DENIED' "$T/new.out"
ok "new connection: group: allow" has '^reply id=3 code=OK permit=' "$T/new.out"
t_done
