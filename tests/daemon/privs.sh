#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Exposure and privileges: plain TCP beyond loopback is refused unless
# allow-insecure-tcp says so; the UNIX socket is open to every local user
# (each as itself) by default and
# takes a configured mode and group; --user drops root after binding (run
# as root only, with the user nobody).
. "$top_srcdir/tests/lib.sh"
t_watchdog 60

# Protected mode. Only -t for the accepted cases: nothing is bound beyond
# loopback by this test.
"$SEMD" --listen tcp:0.0.0.0:0 --ready-file "$T/x.ready" >"$T/exposed.out" 2>&1
expect_eq "tcp:0.0.0.0 refused with EX_CONFIG" 78 "$?"
ok "... saying why and what to do" has 'non-loopback address.*allow-insecure-tcp yes' "$T/exposed.out"
ok "... and nothing was bound" test ! -e "$T/x.ready"
"$SEMD" -t --listen "tcp:[::]:7385" >"$T/exposed6.out" 2>&1
expect_eq "tcp:[::] refused" 78 "$?"
"$SEMD" -t --listen tcp::7385 >/dev/null 2>&1
expect_eq "tcp: with an empty host (every address) refused" 78 "$?"
"$SEMD" -t --listen tcp:192.0.2.1:7385 >/dev/null 2>&1
expect_eq "tcp: on a LAN address refused" 78 "$?"
printf 'listen tcp:0.0.0.0:7385\n' >"$T/exposed.conf"
"$SEMD" -t --config "$T/exposed.conf" >"$T/exposed-conf.out" 2>&1
expect_eq "... from a config file too" 78 "$?"
for a in tcp:127.0.0.1:0 tcp:127.3.4.5:0 "tcp:[::1]:0" tcp:localhost:0; do
	out=$("$SEMD" -t --listen "$a" 2>&1)
	expect_eq "$a is loopback: accepted" "semd: configuration OK" "$out"
done
out=$("$SEMD" -t --listen tcp:0.0.0.0:7385 --allow-insecure-tcp 2>&1)
expect_eq "--allow-insecure-tcp (bare flag) allows it" "semd: configuration OK" "$out"
printf 'listen tcp:0.0.0.0:7385\nallow-insecure-tcp yes\n' >"$T/insecure.conf"
out=$("$SEMD" -t --config "$T/insecure.conf" 2>&1)
expect_eq "allow-insecure-tcp yes in the file allows it" "semd: configuration OK" "$out"
"$SEMD" -t --config "$T/insecure.conf" --allow-insecure-tcp=no >/dev/null 2>&1
expect_eq "--allow-insecure-tcp=no overrides the file" 78 "$?"
# The metrics endpoint has no authentication: the same rule holds for it.
"$SEMD" -t --listen "unix:$T/m.sock" --metrics-listen tcp:0.0.0.0:0 >"$T/metrics-exposed.out" 2>&1
expect_eq "metrics-listen on 0.0.0.0 is refused (EX_CONFIG)" 78 "$?"
ok "... saying why and what to do" has 'metrics-listen.*allow-insecure-tcp yes' "$T/metrics-exposed.out"
out=$("$SEMD" -t --listen "unix:$T/m.sock" --metrics-listen tcp:127.0.0.1:0 2>&1)
expect_eq "metrics-listen on loopback is accepted" "semd: configuration OK" "$out"
out=$("$SEMD" -t --listen "unix:$T/m.sock" --metrics-listen tcp:0.0.0.0:0 --allow-insecure-tcp 2>&1)
expect_eq "metrics-listen on 0.0.0.0 with allow-insecure-tcp is accepted" "semd: configuration OK" "$out"
printf 'allow-insecure-tcp maybe\n' >"$T/bad.conf"
"$SEMD" -t --config "$T/bad.conf" >"$T/bad.out" 2>&1
ok "allow-insecure-tcp maybe: file:line error" has 'bad.conf:1: allow-insecure-tcp .maybe.: use yes or no' "$T/bad.out"
"$SEMD" -t --listen tls:127.0.0.1:0 >"$T/tlsnocert.out" 2>&1
ok "tls: without a certificate: refused" has 'needs tls-cert and tls-key' "$T/tlsnocert.out"

# The UNIX socket: every local user by default (each as itself: the default
# access rules and quotas decide), mode and group configurable.
start_semd d || exit 1
expect_eq "default socket mode 0666" 666 "$(stat -c %a "$T/d.sock")"
grp=$(id -gn nobody 2>/dev/null || echo nogroup)
if getent group "$grp" >/dev/null && [ "$(id -u)" = 0 ]; then
	start_semd g --unix-mode 0660 --unix-group "$grp" || exit 1
	expect_eq "unix-mode 0660" 660 "$(stat -c %a "$T/g.sock")"
	expect_eq "unix-group $grp" "$grp" "$(stat -c %G "$T/g.sock")"
else
	echo "# skipping unix-group: not root or no group $grp"
fi
"$SEMD" -t --unix-group no-such-group-here >"$T/nogrp.out" 2>&1
ok "unknown unix-group: refused" has "no-such-group-here': no such group" "$T/nogrp.out"
"$SEMD" -t --user no-such-user-here >"$T/nouser.out" 2>&1
ok "unknown user: refused" has "no-such-user-here': no such user" "$T/nouser.out"

# --user: only root can test it.
if [ "$(id -u)" != 0 ] || ! getent passwd nobody >/dev/null; then
	echo "# skipping --user: not root or no user nobody"
	t_done
	exit $?
fi
mkdir "$T/run"
chmod 0777 "$T/run"
chmod 0755 "$T"
"$SEMD" --listen "unix:$T/run/u.sock" --listen tcp:127.0.0.1:0 --user nobody \
	--ready-file "$T/run/u.ready" >"$T/u.log" 2>&1 &
upid=$!
PIDS_TO_KILL="$PIDS_TO_KILL $upid"
ok "--user nobody: ready" t_wait_for 10 test -s "$T/run/u.ready"
nuid=$(id -u nobody)
ngid=$(id -g nobody)
expect_eq "--user nobody: every uid is nobody's" "$nuid $nuid $nuid $nuid" \
	"$(awk '/^Uid:/ { print $2, $3, $4, $5 }' /proc/$upid/status)"
expect_eq "--user nobody: every gid is nobody's" "$ngid $ngid $ngid $ngid" \
	"$(awk '/^Gid:/ { print $2, $3, $4, $5 }' /proc/$upid/status)"
expect_eq "--user nobody: no supplementary groups beyond nobody's" \
	"$(id -G nobody | tr ' ' '\n' | sort -n | tr '\n' ' ')" \
	"$(awk '/^Groups:/ { for (i = 2; i <= NF; i++) print $i }' /proc/$upid/status | sort -n | tr '\n' ' ')"
expect_eq "--user nobody: the socket belongs to nobody" nobody "$(stat -c %U "$T/run/u.sock")"
ok "--user nobody: logged" has 'running as user nobody' "$T/u.log"
$PROBE "unix:$T/run/u.sock" hello "down pv" "up pv" >"$T/u.out" 2>&1
ok "--user nobody: serves clients" has '^reply id=3 code=OK released=1' "$T/u.out"
if command -v setpriv >/dev/null; then
	setpriv --reuid=nobody --regid="$ngid" --clear-groups \
		"$PROBE" "unix:$T/run/u.sock" hello >"$T/u2.out" 2>&1
	ok "--user nobody: nobody itself may connect (its socket)" has 'code=OK .*principal=uid:'"$nuid" "$T/u2.out"
fi
kill -TERM "$upid"
wait "$upid"
expect_eq "--user nobody: SIGTERM exits 0" 0 "$?"
ok "--user nobody: removed its socket on exit" test ! -e "$T/run/u.sock"
t_done
