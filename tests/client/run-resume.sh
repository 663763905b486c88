# SPDX-License-Identifier: BSD-2-Clause
# tests/client/run-resume.sh - `semctl run` rides out a brief network cut:
# its TCP connection goes through a relay (python3) that the test kills and
# restarts; the session is resumed, the command is not disturbed, the hold
# is kept throughout, and run exits with the command's status.
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
start_semd d || exit 1
target=${d_TCP##*:}

cat >"$T/relay.py" <<'PY'
import socket, sys, threading
port, target, portfile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(16)
open(portfile + ".tmp", "w").write(str(ls.getsockname()[1]))
import os; os.rename(portfile + ".tmp", portfile)
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
while True:
    c, _ = ls.accept()
    u = socket.create_connection(("127.0.0.1", target))
    for a, b in ((c, u), (u, c)):
        threading.Thread(target=pump, args=(a, b), daemon=True).start()
PY

# relay PORT: start the relay (0: any port); sets RELAY_PID and RELAY_PORT
relay() {
	rm -f "$T/relay.port"
	python3 "$T/relay.py" "$1" "$target" "$T/relay.port" 2>>"$T/relay.log" &
	RELAY_PID=$!
	PIDS_TO_KILL="$PIDS_TO_KILL $RELAY_PID"
	t_wait_for 10 test -s "$T/relay.port" || return 1
	RELAY_PORT=$(cat "$T/relay.port")
}

relay 0 || { echo "relay did not start"; exit 1; }
ok "through the relay" "$SEMCTL" -s "tcp:127.0.0.1:$RELAY_PORT" ping

rm -f "$T/started" "$T/done"
"$SEMCTL" -s "tcp:127.0.0.1:$RELAY_PORT" run cut -- sh -c "touch '$T/started'; i=0; while [ \$i -lt 50 ]; do sleep 0.05; i=\$((i+1)); done; echo \"\$SEMD_TOKEN\" >'$T/done'; exit 7" 2>"$T/run.err" &
rpid=$!
t_wait_for 5 test -e "$T/started"
kill -9 "$RELAY_PID"		# the network goes away...
sleep 0.3
expect_eq "the hold is kept while the client is cut off" 1 "$("$SEMCTL" -s "$d_UNIX" --json info cut | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["holders"]))')"
relay "$RELAY_PORT" || { echo "relay did not restart"; exit 1; }	# ...and comes back
wait "$rpid"
expect_eq "run exits with the command's status" 7 $?
ok "the command ran to its end" test -s "$T/done"
ok "no hold was lost" sh -c "! grep -q lost '$T/run.err'"
expect_eq "the permit was given back (the auto-created name is gone)" 6 "$("$SEMCTL" -s "$d_UNIX" info cut >/dev/null 2>&1; echo $?)"
t_done
