#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# packaging/tests/socket-activate.sh - semd started the way semd.socket and
# semd.service start it: systemd-socket-activate holds the unit's socket
# (the UNIX one, moved to a private path; the unit has no TCP port), with
# the unit's descriptor name and blocking mode, and runs the service's
# ExecStart= with the shipped example configuration. Clients that connect
# while semd is not even running are served; READY=1 and STOPPING=1 reach a
# NOTIFY_SOCKET owned by the test; SIGTERM ends it with status 0.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60

for tool in systemd-socket-activate python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool is not installed (scripts/deps.sh installs it)"
		exit 77
	fi
done
if ! grep -q '^#define HAVE_SYSTEMD 1' "$top_builddir/config.h"; then
	echo "SKIP: semd is built --without-systemd (no socket activation)"
	exit 77
fi
socket=$top_srcdir/packaging/systemd/semd.socket
service=$top_srcdir/packaging/systemd/semd.service

# What the units say.
unix_path=$(sed -n 's|^ListenStream=\(/.*\)|\1|p' "$socket")
tcp_addr=$(sed -n 's|^ListenStream=\([^/].*\)$|\1|p' "$socket")
fdname=$(sed -n 's/^FileDescriptorName=//p' "$socket")
nonblock=$(sed -n 's/^NonBlocking=//p' "$service")
exec_start=$(sed -n 's|^ExecStart=/usr/sbin/semd ||p' "$service")
expect_eq "semd.socket's UNIX socket" /run/semd/semd.sock "$unix_path"
expect_eq "semd.socket has no TCP socket" "" "$tcp_addr"
expect_eq "semd.service's arguments" "--config /etc/semd/semd.conf" "$exec_start"

# The same, moved into $T (the state too: /var/lib/semd becomes $T/data).
sed "s|^data-dir /var/lib/semd\$|data-dir $T/data|" "$top_srcdir/packaging/semd.conf.example" >"$T/semd.conf"
ok "the example keeps the state in /var/lib/semd" grep -qx "data-dir $T/data" "$T/semd.conf"
# shellcheck disable=SC2086
set -- $(printf '%s' "$exec_start" | sed "s|/etc/semd/semd.conf|$T/semd.conf|")
sock=$T/semd.sock

# NonBlocking=yes (semd.service): systemd sets O_NONBLOCK on the sockets it
# passes; systemd-socket-activate cannot, so a small exec wrapper does.
wrap=
if [ "$nonblock" = yes ]; then
	cat >"$T/nonblock.py" <<'PY'
import os, sys
for fd in range(3, 3 + int(os.environ.get("LISTEN_FDS", "0"))):
    os.set_blocking(fd, False)
os.execv(sys.argv[1], sys.argv[1:])
PY
	wrap="python3 $T/nonblock.py"
fi

# A NOTIFY_SOCKET of our own: every datagram becomes lines in notify.out.
cat >"$T/notify.py" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(0.2)
end = time.monotonic() + 50
with open(sys.argv[2], "a") as out:
    print("LISTENING", file=out, flush=True)
    while time.monotonic() < end:
        try:
            msg = s.recv(4096).decode()
        except socket.timeout:
            continue
        print(msg, file=out, flush=True)
        if "STOPPING=1" in msg:
            break
PY
python3 "$T/notify.py" "$T/notify" "$T/notify.out" &
PIDS_TO_KILL="$PIDS_TO_KILL $!"
ok "the notify listener is up" t_wait_for 10 grep -q LISTENING "$T/notify.out"

# shellcheck disable=SC2086
systemd-socket-activate -l "$sock" --fdname="$fdname" \
	-E NOTIFY_SOCKET="$T/notify" $wrap "$SEMD" "$@" >"$T/semd.log" 2>&1 &
pid=$!
PIDS_TO_KILL="$PIDS_TO_KILL $pid"
ok "systemd-socket-activate listens on the UNIX socket" t_wait_for 10 test -S "$sock"
ok "semd is not running yet" sh -c '! grep -q READY=1 "$0"' "$T/notify.out"

# Two clients at once before semd has started.
timeout 20 "$SEMCTL" -s "unix:$sock" down act/first >"$T/c1.out" 2>&1 &
c1=$!
timeout 20 "$SEMCTL" -s "unix:$sock" ping >"$T/c2.out" 2>&1 &
c2=$!
rc1=0; wait "$c1" || rc1=$?
rc2=0; wait "$c2" || rc2=$?
expect_eq "a down over the UNIX socket made before semd started is served" 0 "$rc1"
ok "... and prints a fencing token" grep -qE '^[0-9]+$' "$T/c1.out"
expect_eq "a second client made before semd started is served" 0 "$rc2"
ok "READY=1 reaches NOTIFY_SOCKET" t_wait_for 10 grep -q READY=1 "$T/notify.out"
ok "STATUS= names the socket" grep -q "STATUS=listening on.*unix:$sock" "$T/notify.out"
ok "... and no TCP port" sh -c "! grep -q 'STATUS=.*tcp:' '$T/notify.out'"
ok "semd logs with journal priority prefixes" grep -q '^<5>ready' "$T/semd.log"
ok "the example configuration is in use (no listen of its own)" sh -c '! grep -q "/run/semd" "$0"' "$T/semd.log"
out=$("$SEMCTL" -s "unix:$sock" info act/first 2>&1)
ok "the hold is there for the next client" sh -c 'printf "%s" "$0" | grep -q "available 0"' "$out"

kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
expect_eq "SIGTERM: semd exits with status 0" 0 "$rc"
ok "STOPPING=1 reaches NOTIFY_SOCKET" t_wait_for 10 grep -q STOPPING=1 "$T/notify.out"
ok "the state was kept in the data directory" test -s "$T/data/semd.meta"
t_done
