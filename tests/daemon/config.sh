#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The command line and the config file: -t, errors with file:line, flags
# over the file, SIGHUP reload, start-up failures with sysexits codes, a
# stale UNIX socket replaced.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60

"$SEMD" --version >"$T/v.out"
ok "--version" has '^semd [0-9]' "$T/v.out"
"$SEMD" --help >"$T/h.out"
ok "--help names --listen and --check-config" sh -c "grep -q -- --listen '$T/h.out' && grep -q -- --check-config '$T/h.out'"
"$SEMD" --no-such-flag >/dev/null 2>&1
expect_eq "unknown flag: EX_USAGE" 64 "$?"

cat >"$T/good.conf" <<CONF
# a comment
listen unix:$T/c.sock

listen tcp:127.0.0.1:0
default-limit 2
max-frame 4096
log-level info
handshake-timeout 5s
CONF
"$SEMD" --config "$T/good.conf" -t >"$T/t.out" 2>&1
expect_eq "-t on a good file: exit 0" 0 "$?"
printf 'default-limit 2\n\nmax-frobs 3\n' >"$T/bad.conf"
"$SEMD" --config "$T/bad.conf" --check-config >"$T/t.out" 2>&1
expect_eq "-t on a bad key: EX_CONFIG" 78 "$?"
ok "bad key: file:line and the key" has "bad.conf:3: unknown setting 'max-frobs'" "$T/t.out"
printf 'default-limit many\n' >"$T/bad2.conf"
"$SEMD" --config "$T/bad2.conf" -t >"$T/t.out" 2>&1
ok "bad value: file:line and why" has "bad2.conf:1: default-limit 'many': not a number" "$T/t.out"
printf 'listen udp:1.2.3.4:5\n' >"$T/bad3.conf"
"$SEMD" --config "$T/bad3.conf" -t >"$T/t.out" 2>&1
ok "bad listen address explained" has "bad3.conf:1: listen udp:1.2.3.4:5: unknown address kind" "$T/t.out"
"$SEMD" --config "$T/missing.conf" -t >"$T/t.out" 2>&1
expect_eq "missing file: EX_CONFIG" 78 "$?"
"$SEMD" --max-frame 10 -t >"$T/t.out" 2>&1
ok "flag out of range explained" has "max-frame 10: out of range" "$T/t.out"

# The file's listen lines are used; a flag overrides the file.
"$SEMD" --config "$T/good.conf" --default-limit 3 --ready-file "$T/c.ready" >"$T/c.log" 2>&1 &
c=$!
PIDS_TO_KILL="$PIDS_TO_KILL $c"
ok "started from the file" t_wait_for 10 test -s "$T/c.ready"
ok "file listen lines used" has "^unix:$T/c.sock\$" "$T/c.ready"
ok "port 0 reported as the bound port" sh -c "grep -q '^tcp:127.0.0.1:[1-9][0-9]*\$' '$T/c.ready'"
ok "bound addresses logged" has "listening on unix:$T/c.sock" "$T/c.log"
ok "start-up line with the libevent version and backend" has 'libevent 2\..*backend ' "$T/c.log"
$PROBE "unix:$T/c.sock" hello "down x1" "info x1" >"$T/x1.out"
ok "flag beats the file (default-limit 3)" has 'name=x1 limit=3 ' "$T/x1.out"

# SIGHUP: re-read the file (the flag still wins for default-limit).
$PROBE "unix:$T/c.sock" hello "ping $(printf 'x%.0s' $(seq 12000))" >"$T/big1.out" 2>&1
ok "a 12000-byte request is over max-frame 4096" has 'code=PROTOCOL_ERROR msg="frame of 120[0-9][0-9] bytes is over max-frame 4096"' "$T/big1.out"
# A connection open across the reload gets the new max-frame too.
t_reload_across "$c" "$T/good.conf" 's/^max-frame 4096/max-frame 20000/; s/^log-level info/log-level debug/' \
    "$T/c.log" 'reload: max-frame 4096 -> 20000' "$T/big2.out" "unix:$T/c.sock" "ping $(printf 'x%.0s' $(seq 12000))"
ok "after reload a 12000-byte request is served on an old connection" has 'code=OK pong=xxxx' "$T/big2.out"
ok "reload: log level changed" has 'reload: log-level info -> debug' "$T/c.log"
$PROBE "unix:$T/c.sock" hello "down x2" "info x2" >"$T/x2.out"
ok "after reload the flag still wins" has 'name=x2 limit=3 ' "$T/x2.out"
echo 'bogus line' >>"$T/good.conf"
kill -HUP "$c"
ok "bad reload refused, named" t_wait_for 5 has 'reload failed.*good.conf:9: unknown setting' "$T/c.log"
$PROBE "unix:$T/c.sock" hello ping >"$T/p.out"
ok "still serving after a bad reload" has 'code=OK pong' "$T/p.out"

# A second daemon on the same UNIX path refuses to steal it.
"$SEMD" --listen "unix:$T/c.sock" >"$T/dup.log" 2>&1
expect_eq "live socket path: EX_OSERR" 71 "$?"
ok "live socket path explained" has 'another daemon is accepting there' "$T/dup.log"
kill -TERM "$c"
wait "$c"

# A stale socket file is replaced.
python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/stale.sock"
ok "stale socket file exists" test -S "$T/stale.sock"
start_semd stale || exit 1
$PROBE "unix:$T/stale.sock" hello ping >"$T/st.out"
ok "stale socket replaced and served" has 'code=OK pong' "$T/st.out"
ok "socket mode 0666 (every local user, as itself)" sh -c "[ \"\$(stat -c %a '$T/stale.sock')\" = 666 ]"

# TCP keepalive probes are armed on client connections.
if command -v ss >/dev/null 2>&1; then
	start_semd ka --keepalive 7s || exit 1
	$PROBE "$ka_TCP" hello "until $T/ka.go" >/dev/null 2>&1 &
	ka=$!
	port=${ka_TCP##*:}
	ok "keepalive timer on the daemon's side of a TCP client" t_wait_for 5 \
		sh -c "ss -tno state established '( sport = :$port )' | grep -q 'timer:(keepalive'"
	touch "$T/ka.go"
	wait "$ka"
fi

# IPv6 loopback, when the machine has it.
if python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
	start_semd v6 --listen 'tcp:[::1]:0' || exit 1
	v6=$(grep -m1 '^tcp:\[::1\]:[1-9]' "$T/v6.ready")
	ok "tcp:[::1]:0 bound and reported" test -n "$v6"
	$PROBE "$v6" hello ping >"$T/v6.out" 2>&1
	ok "served over IPv6" has 'code=OK pong' "$T/v6.out"
else
	echo "# skipped IPv6: no ::1"
fi

"$SEMD" --listen "unix:$T/no/such/dir/s.sock" >"$T/nd.log" 2>&1
expect_eq "socket in a missing directory: EX_CANTCREAT" 73 "$?"
ok "missing directory explained" has "bind unix:$T/no/such/dir/s.sock: No such file or directory" "$T/nd.log"
t_done
