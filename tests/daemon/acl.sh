#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Principals and access control: acl/protect rules from the config file
# decide per request (inspect, use, admin) for uid:N over UNIX sockets and
# anonymous over TCP; a denied request is PERMISSION_DENIED and logged with
# the principal; a connection quota refuses the extra connection; SIGHUP
# loads new rules; bad lines are file:line errors. A second local principal
# (nobody, through setpriv) is used when the test runs as root.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
me=$(id -u)

# Bad lines: file and line named.
printf '# rules\nacl uid:%s jobs/ use,fly\n' "$me" >"$T/bad1.conf"
"$SEMD" -t --config "$T/bad1.conf" >"$T/bad1.out" 2>&1
expect_eq "bad right: EX_CONFIG" 78 "$?"
ok "bad right: file:line in the message" has 'bad1.conf:2: ' "$T/bad1.out"
printf 'protect db/*x\n' >"$T/bad2.conf"
"$SEMD" -t --config "$T/bad2.conf" >"$T/bad2.out" 2>&1
ok "a '*' inside a pattern: file:line error" has 'bad2.conf:1: ' "$T/bad2.out"
printf 'quota sockets uid:1 3\n' >"$T/bad3.conf"
"$SEMD" -t --config "$T/bad3.conf" >"$T/bad3.out" 2>&1
ok "unknown quota kind: file:line error" has 'bad3.conf:1: ' "$T/bad3.out"

cat >"$T/acl.conf" <<EOF
# me: use and inspect jobs/, everything on admin/; anyone: everything on pub/
acl uid:$me jobs/ use,inspect
acl uid:$me admin/ all
acl anonymous jobs/ inspect
acl * pub/ all
protect jobs/
protect admin/
protect secret-*
quota connections uid:65534 2
EOF
out=$("$SEMD" -t --config "$T/acl.conf" 2>&1)
expect_eq "the rules parse" "semd: configuration OK" "$out"
chmod 0755 "$T"
start_semd d --config "$T/acl.conf" --unix-mode 0666 || exit 1
A=$d_UNIX

$PROBE "$A" hello "down jobs/a" "info jobs/a" "up jobs/a" "create jobs/b 2" \
	"create admin/x 3" "setlimit admin/x 4" "delete admin/x" \
	"down secret-1 timeout=0" "info secret-1" "down free timeout=0" "up free" \
	"down pub/p" "up pub/p" ping >"$T/me.out" 2>&1
ok "use on jobs/: down" has '^reply id=2 code=OK permit=' "$T/me.out"
ok "inspect on jobs/: info" has '^reply id=3 code=OK name=jobs/a' "$T/me.out"
ok "use on jobs/: up" has '^reply id=4 code=OK released=1' "$T/me.out"
ok "no create on jobs/: create denied" has "^reply id=5 code=PERMISSION_DENIED msg=\"uid:$me may not create jobs/b\"" "$T/me.out"
ok "admin on admin/: create" has '^reply id=6 code=OK' "$T/me.out"
ok "admin on admin/: set-limit" has '^reply id=7 code=OK' "$T/me.out"
ok "admin on admin/: delete" has '^reply id=8 code=OK' "$T/me.out"
ok "protected secret-*: down denied" has '^reply id=9 code=PERMISSION_DENIED' "$T/me.out"
ok "protected secret-*: info denied" has '^reply id=10 code=PERMISSION_DENIED' "$T/me.out"
ok "unprotected name: allowed" has '^reply id=11 code=OK permit=' "$T/me.out"
ok "acl * pub/ all: allowed" has '^reply id=13 code=OK permit=' "$T/me.out"
ok "the connection is still served after denials" has '^reply id=15 code=OK pong' "$T/me.out"
ok "denials logged with the principal" has "request 5 denied: uid:$me may not create jobs/b" "$T/d.log"

# A client hammering at a protected name: every request answered, the log
# holds back most of the lines.
cmds=""
for i in $(seq 300); do cmds="$cmds down secret-x timeout=0 nowait|"; done
IFS='|'
# shellcheck disable=SC2086
$PROBE "$A" hello $cmds ping >"$T/hammer.out" 2>&1
unset IFS
expect_eq "300 denied requests: 300 PERMISSION_DENIED" 300 "$(grep -c 'code=PERMISSION_DENIED' "$T/hammer.out")"
ok "... and the connection still served" has 'code=OK pong' "$T/hammer.out"
ok "... at most about 20 of them logged in a second" test "$(grep -c 'denied: uid:.* may not use secret-x' "$T/d.log")" -le 60
ok "... the rest counted" t_wait_for 3 eval "$PROBE \"\$A\" hello 'down secret-y timeout=0' >/dev/null; grep -q 'more denied request(s) not logged' \"\$T/d.log\""

# Anonymous over TCP: inspect on jobs/ only.
$PROBE "$d_TCP" hello "info jobs/a" "down jobs/a timeout=0" "down pub/t" "up pub/t" >"$T/anon.out" 2>&1
ok "anonymous (TCP) principal" has '^reply id=1 code=OK .*principal=anonymous' "$T/anon.out"
ok "anonymous: inspect on jobs/ allowed" has '^reply id=2 code=NOT_FOUND' "$T/anon.out"
ok "anonymous: use on jobs/ denied" has '^reply id=3 code=PERMISSION_DENIED msg="anonymous may not use jobs/a"' "$T/anon.out"
ok "anonymous: pub/ allowed" has '^reply id=4 code=OK permit=' "$T/anon.out"

# A second local principal: nobody.
if [ "$me" = 0 ] && command -v setpriv >/dev/null && getent passwd nobody >/dev/null; then
	NB="setpriv --reuid=nobody --regid=$(id -g nobody) --clear-groups"
	nuid=$(id -u nobody)
	$PROBE "$A" hello "down hold/me" "down admin/h" "until $T/nobody.done" "info hold/me" "info admin/h" >"$T/holder.out" 2>&1 &
	holder=$!
	t_wait_for 5 has '^reply id=3 code=OK permit' "$T/holder.out"
	$NB "$PROBE" "$A" hello "down jobs/a timeout=0" "info jobs/a" "down pub/n" "up pub/n" \
		"release admin/h 1" "up hold/me" >"$T/nobody.out" 2>&1
	touch "$T/nobody.done"
	ok "nobody is uid:$nuid" has "^reply id=1 code=OK .*principal=uid:$nuid" "$T/nobody.out"
	ok "nobody: use on jobs/ denied" has "^reply id=2 code=PERMISSION_DENIED msg=\"uid:$nuid may not use jobs/a\"" "$T/nobody.out"
	ok "nobody: inspect on jobs/ denied" has '^reply id=3 code=PERMISSION_DENIED' "$T/nobody.out"
	ok "nobody: pub/ allowed" has '^reply id=4 code=OK permit=' "$T/nobody.out"
	ok "nobody: force-release of my hold on admin/ denied" has "^reply id=6 code=PERMISSION_DENIED msg=\"uid:$nuid may not release holds on admin/h\"" "$T/nobody.out"
	ok "... and not logged as a force-release" sh -c "! grep -q 'force-released permit 1 of admin/h' '$T/d.log'"
	ok "nobody: up of my hold is NOT_HOLDER" has '^reply id=7 code=NOT_HOLDER' "$T/nobody.out"
	wait "$holder"
	ok "my hold survived nobody's up" has '^reply id=4 code=OK name=hold/me .*holders=1' "$T/holder.out"
	ok "my hold survived nobody's release" has '^reply id=5 code=OK name=admin/h .*holders=1' "$T/holder.out"

	# Connection quota: nobody may have 2 connections; a third is refused,
	# others are not affected.
	$NB "$PROBE" "$A" hello "until $T/q.done" ping >"$T/q1.out" 2>&1 &
	q1=$!
	$NB "$PROBE" "$A" hello "until $T/q.done" ping >"$T/q2.out" 2>&1 &
	q2=$!
	t_wait_for 5 has '^reply id=1 code=OK' "$T/q1.out"
	t_wait_for 5 has '^reply id=1 code=OK' "$T/q2.out"
	$NB "$PROBE" "$A" hello >"$T/q3.out" 2>&1
	ok "quota connections 2: a third connection refused" has 'RESOURCE_EXHAUSTED.*quota\|^eof\|^write failed' "$T/q3.out"
	ok "... and logged" has "quota: uid:$nuid may have 2 connection(s) open" "$T/d.log"
	$PROBE "$A" hello ping >"$T/q4.out" 2>&1
	ok "... while another principal connects fine" has 'code=OK pong' "$T/q4.out"
	touch "$T/q.done"
	wait "$q1" "$q2"
	ok "the two within the quota were served" has 'code=OK pong' "$T/q2.out"
	$NB "$PROBE" "$A" hello ping >"$T/q5.out" 2>&1
	ok "once they left, nobody connects again" has 'code=OK pong' "$T/q5.out"
else
	echo "# skipping the second principal: not root or no setpriv/nobody"
fi

# Quotas on held permits and waiting downs, per principal (not per
# connection), with detached holds counted after their client left.
printf 'quota permits uid:%s 3\nquota waiters uid:%s 1\n' "$me" "$me" >"$T/q.conf"
start_semd q --config "$T/q.conf" || exit 1
$PROBE "$q_UNIX" hello "down p1" "down p2" "down dt lease=60000" "down p3 timeout=0" \
	"up p2" "create big 5" "down big n=2 timeout=0" >"$T/qa.out" 2>&1
ok "quota permits 3: three held (one detached)" has '^reply id=4 code=OK permit=' "$T/qa.out"
ok "quota permits 3: a fourth refused" has "^reply id=5 code=RESOURCE_EXHAUSTED msg=\"quota: uid:$me has 3 permits, 1 more would pass its permits quota (3)\"" "$T/qa.out"
ok "quota permits 3: with two held, n=2 refused too" has '^reply id=8 code=RESOURCE_EXHAUSTED' "$T/qa.out"
$PROBE "$q_UNIX" hello "down p1" "down p2" "down p3 timeout=0" "up dt" "down p3 timeout=0" \
	>"$T/qb.out" 2>&1
ok "the detached hold still counts after its client left" has '^reply id=4 code=RESOURCE_EXHAUSTED' "$T/qb.out"
ok "giving it back frees quota" has '^reply id=6 code=OK permit=' "$T/qb.out"
$PROBE "$q_TCP" hello "down w" "until $T/qanon.go" "up w" >"$T/qanon.out" 2>&1 &
qanon=$!
t_wait_for 5 has '^reply id=2 code=OK permit' "$T/qanon.out"
ok "quotas are per principal: anonymous is not limited" has '^reply id=2 code=OK permit' "$T/qanon.out"
# anonymous lets go once the second waiting down has been refused
$PROBE "$q_UNIX" hello "down w timeout=30000 nowait" "down w2 timeout=0" \
	"down w timeout=30000 nowait" "wait 4" "wait 2" "info w" "stats" >"$T/qw.out" 2>&1 &
qw=$!
t_wait_for 10 has '^reply id=4 ' "$T/qw.out"
touch "$T/qanon.go"
wait "$qw"
wait "$qanon"
ok "quota waiters 1: one down waits" has '^reply id=2 code=OK permit=' "$T/qw.out"
ok "quota waiters 1: a second waiting down refused" has "^reply id=4 code=RESOURCE_EXHAUSTED msg=\"quota: uid:$me has 1 waiters, 1 more would pass its waiters quota (1)\"" "$T/qw.out"
ok "... a down that does not wait is still fine" has '^reply id=3 code=OK permit=' "$T/qw.out"
ok "the waiter was granted when anonymous let go" has '^reply id=5 code=OK name=w .*holders=1 waiters=0' "$T/qw.out"

# Quota on explicitly created semaphores: counted while they exist, across
# the creator's connections; a name a down creates (and frees) does not
# count; deleting one gives it back; other principals are not limited.
printf 'quota semaphores uid:%s 2\nacl anonymous * all\n' "$me" >"$T/qs.conf"
start_semd qs --config "$T/qs.conf" || exit 1
$PROBE "$qs_UNIX" hello "create s1 1" "create s2 1" "create s3 1" "down auto timeout=0" \
	>"$T/qs1.out" 2>&1
ok "quota semaphores 2: two created" has '^reply id=3 code=OK' "$T/qs1.out"
ok "quota semaphores 2: a third refused" has "^reply id=4 code=RESOURCE_EXHAUSTED msg=\"quota: uid:$me has 2 semaphores, 1 more would pass its semaphores quota (2)\"" "$T/qs1.out"
ok "... an auto-created name is not charged" has '^reply id=5 code=OK permit=' "$T/qs1.out"
$PROBE "$qs_UNIX" hello "create s3 1" "delete s1" "create s3 1" >"$T/qs2.out" 2>&1
ok "the count outlives the creator's connection" has '^reply id=2 code=RESOURCE_EXHAUSTED' "$T/qs2.out"
ok "deleting one gives it back" has '^reply id=4 code=OK' "$T/qs2.out"
$PROBE "$qs_TCP" hello "create a1 1" "create a2 1" "create a3 1" >"$T/qs3.out" 2>&1
ok "quotas are per principal: anonymous creates freely" has '^reply id=4 code=OK' "$T/qs3.out"

# List shows only names the caller may inspect: with team/ and
# db/replica-* protected and only team/public/ given to me, no prefix may
# reveal the other names under them (a prefix that itself passes the check,
# "" or "te", used to list them all); an allowed sub-prefix is listed; a
# principal allowed everything (anonymous, over TCP) still sees every name.
cat >"$T/list.conf" <<EOF
acl uid:$me team/public/ inspect
acl anonymous * all
protect team/
protect db/replica-*
EOF
start_semd l --config "$T/list.conf" || exit 1
all="alpha db/main db/replica-1 db/replica-2 team/a1 team/a2 team/public/p1 team/public/p2 team/q1 team/zz zeta"
mine="alpha db/main team/public/p1 team/public/p2 zeta"
cmds=""
for n in $all; do cmds="$cmds|create $n 1"; done
IFS='|'
# shellcheck disable=SC2086
$PROBE "$l_TCP" hello $cmds >"$T/lmk.out" 2>&1
unset IFS
expect_eq "list: 11 names created" 11 "$(grep -c '^reply id=[0-9]* code=OK$' "$T/lmk.out")"
$PROBE "$l_UNIX" hello "list" "list prefix=te" "list prefix=team" "list prefix=team/" \
	"list prefix=team/public/" "list prefix=db/" "info team/a1" >"$T/lme.out" 2>&1
leaks() { grep -E "^reply id=$1 .*( team/a| team/q| team/zz| db/replica-)" "$T/lme.out"; }
ok 'list "": nothing I may not inspect' eval '! leaks 2'
ok 'list "": the names I may inspect, in order' has "^reply id=2 code=OK entries=5 $mine next=\$" "$T/lme.out"
ok 'list "te": nothing I may not inspect' eval '! leaks 3'
ok 'list "te": only team/public/' has '^reply id=3 code=OK entries=2 team/public/p1 team/public/p2 next=$' "$T/lme.out"
ok 'list "team": nothing I may not inspect' eval '! leaks 4'
ok 'list "team": only team/public/' has '^reply id=4 code=OK entries=2 team/public/p1 team/public/p2 next=$' "$T/lme.out"
ok 'list "team/": denied (the prefix itself is protected)' has '^reply id=5 code=PERMISSION_DENIED' "$T/lme.out"
ok 'list "team/public/": the allowed sub-prefix is listed' has '^reply id=6 code=OK entries=2 team/public/p1 team/public/p2 next=$' "$T/lme.out"
ok 'list "db/": db/main only' has '^reply id=7 code=OK entries=1 db/main next=$' "$T/lme.out"
ok 'info on a hidden name is still denied' has '^reply id=8 code=PERMISSION_DENIED' "$T/lme.out"
# Paging with small pages across hidden and visible runs: every visible
# name exactly once, in order, and no hidden name in a cursor.
for max in 1 2 3; do
	got="" after="" i=0
	while [ $i -lt 20 ]; do
		i=$((i + 1))
		line=$($PROBE "$l_UNIX" hello "list after=$after max=$max" 2>&1 | grep '^reply id=2 ')
		case $line in *"code=OK "*) ;; *) got="$got ERROR($line)"; break ;; esac
		names=$(printf '%s\n' "$line" | sed 's/^reply id=2 code=OK entries=[0-9]* //; s/ *next=.*$//')
		got="$got $names"
		after=${line##*next=}
		[ -n "$after" ] || break
	done
	expect_eq "paging max=$max: every visible name once, in order" " $mine" "$(echo "$got" | tr -s ' ' | sed 's/ $//')"
done
$PROBE "$l_TCP" hello "list" "list prefix=team/" "list prefix=db/ max=1" >"$T/lad.out" 2>&1
ok "a principal allowed everything sees every name" has "^reply id=2 code=OK entries=11 $all next=\$" "$T/lad.out"
ok "... under team/ too" has '^reply id=3 code=OK entries=6 team/a1 team/a2 team/public/p1 team/public/p2 team/q1 team/zz next=$' "$T/lad.out"
ok "... and pages over them" has '^reply id=4 code=OK entries=1 db/main next=db/main$' "$T/lad.out"

# SIGHUP: new rules apply to open and new connections.
t_reload_across "$d_PID" "$T/acl.conf" "s|^acl uid:$me jobs/ use,inspect|acl uid:$me jobs/ inspect|" \
    "$T/d.log" 'configuration reloaded' "$T/open.out" "$A" "down jobs/c timeout=0"
$PROBE "$A" hello "down jobs/a timeout=0" "info jobs/a" >"$T/after.out" 2>&1
ok "after SIGHUP: use on jobs/ now denied" has '^reply id=2 code=PERMISSION_DENIED' "$T/after.out"
ok "after SIGHUP: inspect still allowed" has '^reply id=3 code=NOT_FOUND' "$T/after.out"
ok "after SIGHUP: an open connection follows the new rules" has '^reply id=2 code=PERMISSION_DENIED' "$T/open.out"
printf 'acl uid:1 x/ bogus\n' >>"$T/acl.conf"
kill -HUP "$d_PID"
ok "a bad reload is refused with file:line" t_wait_for 5 has 'reload failed.*acl.conf:[0-9]*:' "$T/d.log"
$PROBE "$A" hello "info jobs/a" >"$T/kept.out" 2>&1
ok "... and the running rules are kept" has '^reply id=2 code=NOT_FOUND' "$T/kept.out"
t_done
