#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Socket activation: systemd-socket-activate owns a UNIX and a TCP socket and
# starts semd on the first connection; that connection, made before semd was
# running, is served. READY=1 arrives on a NOTIFY_SOCKET owned by this test.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
if ! command -v systemd-socket-activate >/dev/null 2>&1 ||
    ! command -v python3 >/dev/null 2>&1; then
	echo "# skipped: systemd-socket-activate or python3 missing"
	exit 77
fi
if ! grep -q '^#define HAVE_SYSTEMD 1' "$top_builddir/config.h"; then
	echo "# skipped: built --without-systemd"
	exit 77
fi

# The notify socket: a datagram socket that records what semd says.
t_notify_socket 50

# systemd-socket-activate wants a port number: ask the kernel for a free one.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=200000 \
    systemd-socket-activate -E NOTIFY_SOCKET -E WATCHDOG_USEC \
	-l "$T/act.sock" -l "127.0.0.1:$port" \
	"$SEMD" --ready-file "$T/act.ready" --log-level debug \
	${SEMD_TEST_THREADS:+--threads "$SEMD_TEST_THREADS"} >"$T/act.log" 2>&1 &
act=$!
PIDS_TO_KILL="$PIDS_TO_KILL $act"
ok "activator listening" t_wait_for 5 test -S "$T/act.sock"
ok "semd not started before a connection" test ! -e "$T/act.ready"

# The first connection starts semd; it is served.
$PROBE "unix:$T/act.sock" hello "down act" ping >"$T/first.out" 2>&1
ok "connection made before semd ran is served" has '^reply id=2 code=OK permit=' "$T/first.out"
ok "ready file written" t_wait_for 5 test -s "$T/act.ready"
ok "READY=1 on the notify socket" t_wait_for 5 has '^READY=1' "$T/notify.out"
ok "STATUS on the notify socket" has '^STATUS=listening on' "$T/notify.out"
ok "ready file lists the passed UNIX socket" has "^unix:$T/act.sock\$" "$T/act.ready"
tcp=$(grep -m1 '^tcp:' "$T/act.ready")
expect_eq "ready file lists the passed TCP socket" "tcp:127.0.0.1:$port" "$tcp"
$PROBE "$tcp" hello "down act timeout=0" >"$T/tcp.out" 2>&1
ok "TCP socket served" has '^reply id=2 code=OK permit=' "$T/tcp.out"
ok "journal priority prefixes under systemd" has '^<5>listening on' "$T/act.log"
ok "WATCHDOG=1 pings (WATCHDOG_USEC=200000)" t_wait_for 5 \
	eval '[ "$(grep -c "^WATCHDOG=1" "$T/notify.out")" -ge 3 ]'

kill -TERM "$act"
wait "$act"
expect_eq "SIGTERM: exit 0" 0 "$?"
ok "STOPPING=1 on the notify socket" t_wait_for 5 has '^STOPPING=1' "$T/notify.out"
t_done
