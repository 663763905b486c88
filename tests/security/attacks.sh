#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/security/attacks.sh - issue 12, "safe by default on a shared host":
# every attack of the issue, made by an unprivileged local user created for
# the test, against semd in its DEFAULT configuration (no listen, no config:
# the daemon binds /run/semd/semd.sock itself, inside a private mount
# namespace with a tmpfs on /run/semd). Opt-in listeners (TCP, TLS, metrics)
# are added only where the attack needs one, everything else left at its
# default. While and after each attack root and a second user keep working
# (hello, ping, down/up, create), and the attacker is refused with an error
# that says why. Every count is scaled to what reaches a default limit.
#
# Needs root (useradd, setpriv, unshare -m); otherwise it is skipped (77).
# SEMD_ATTACK_ADDR (e.g. tcp:127.0.0.1:7385) makes the attacker use another
# address: to measure a semd from before this work, whose only socket a
# local user could reach was the loopback TCP port.
# Lines starting with "# measure" are the figures for the issue's table.
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (useradd, setpriv, a private mount namespace)"
	exit 77
fi
for tool in useradd userdel setpriv unshare mount prlimit python3 openssl; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool is not installed"
		exit 77
	fi
done
# The attacker runs the system's python (root's PATH may hold one it cannot read).
apy=/usr/bin/python3
if [ ! -x "$apy" ]; then
	echo "SKIP: $apy is not installed"
	exit 77
fi
if [ -z "${SEMD_ATTACK_NS:-}" ]; then
	SEMD_ATTACK_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
mkdir -p /run/semd || exit 1
mount -t tmpfs -o mode=0755,size=16m semd-test /run/semd || {
	echo "SKIP: cannot mount a tmpfs on /run/semd"; exit 77; }

. "$top_srcdir/tests/lib.sh"
t_watchdog 300
chmod 0755 "$T"

# Two users: the attacker and a second honest user. Removed at exit.
ATK=semd-atk-$$
HON=semd-hon-$$
attacks_cleanup() {
	rc=$?
	for p in $PIDS_TO_KILL; do kill -KILL "$p" 2>/dev/null; done
	userdel "$ATK" 2>/dev/null
	userdel "$HON" 2>/dev/null
	(exit "$rc")
	t_cleanup
}
trap attacks_cleanup EXIT
useradd -M -r -s /usr/sbin/nologin "$ATK" || exit 1
useradd -M -r -s /usr/sbin/nologin "$HON" || exit 1
as_atk() { setpriv --reuid="$ATK" --regid="$(id -g "$ATK")" --clear-groups "$@"; }
as_hon() { setpriv --reuid="$HON" --regid="$(id -g "$HON")" --clear-groups "$@"; }
auid=$(id -u "$ATK")
A=unix:/run/semd/semd.sock
AA=${SEMD_ATTACK_ADDR:-$A}

# start_default NAME [ARGS...]: a fresh semd with the default configuration
# (and ARGS, for an opt-in listener); sets NAME_PID, the ready file NAME.ready.
start_default() {
	n=$1; shift
	if [ -n "${cur_pid:-}" ]; then
		kill -TERM "$cur_pid" 2>/dev/null
		i=0; while kill -0 "$cur_pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	fi
	rm -f "$T/$n.ready"
	"$SEMD" --ready-file "$T/$n.ready" "$@" >"$T/$n.log" 2>&1 &
	cur_pid=$!
	PIDS_TO_KILL="$PIDS_TO_KILL $cur_pid"
	eval "${n}_PID=$cur_pid"
	t_wait_for 10 test -s "$T/$n.ready" || { echo "semd $n not ready"; cat "$T/$n.log"; exit 1; }
}

# honest LABEL: root and the second user each: hello, ping, down/up on a
# name of their own, create a new name. Counts one check per user.
hn=0
honest() {
	hn=$((hn + 1))
	$PROBE "$A" hello ping "down hon/root timeout=5000" "up hon/root" \
		"create hon/root-$hn 1" >"$T/hr.out" 2>&1
	ok "$1: root is served (ping, down/up, create)" sh -c "
		grep -q '^reply id=2 code=OK pong' '$T/hr.out' &&
		grep -q '^reply id=3 code=OK permit=' '$T/hr.out' &&
		grep -q '^reply id=4 code=OK released=1' '$T/hr.out' &&
		grep -q '^reply id=5 code=OK\$' '$T/hr.out'" || cat "$T/hr.out"
	as_hon "$PROBE" "$A" hello ping "down hon/u2 timeout=5000" "up hon/u2" \
		"create hon/u2-$hn 1" >"$T/hu.out" 2>&1
	ok "$1: the second user is served (ping, down/up, create)" sh -c "
		grep -q '^reply id=2 code=OK pong' '$T/hu.out' &&
		grep -q '^reply id=3 code=OK permit=' '$T/hu.out' &&
		grep -q '^reply id=4 code=OK released=1' '$T/hu.out' &&
		grep -q '^reply id=5 code=OK\$' '$T/hu.out'" || cat "$T/hu.out"
}

# lat_start / lat_end LABEL: root's ping round trips while an attack runs.
lat_start() {
	$PROBE --latency "$A" "${1:-400}" 2 >"$T/lat.out" 2>&1 &
	lat_pid=$!
}
lat_end() {
	wait "$lat_pid"
	l=$(grep '^latency' "$T/lat.out")
	echo "# measure $1: root's ping during the attack: $l"
	ok "$1: root's pings during the attack all answered" \
		sh -c "grep -q 'failed=0' '$T/lat.out' && ! grep -q 'n=0 ' '$T/lat.out'"
}

# loglines NAME: lines in the daemon's log so far.
loglines() { wc -l <"$T/$1.log"; }

# cpu_ms PID: user + system CPU time of a process so far, in ms.
cpu_ms() { awk '{ print ($14 + $15) * 1000 / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }

##### 0. The defaults themselves
start_default d
ok "default: only the UNIX socket, no TCP listener" sh -c \
	"grep -qx 'unix:/run/semd/semd.sock' '$T/d.ready' && ! grep -q '^tcp:' '$T/d.ready'"
expect_eq "default: the socket is reachable by every local user (0666)" 666 \
	"$(stat -c %a /run/semd/semd.sock)"
as_atk "$PROBE" "$A" hello "create atk/own 1" "down atk/own" "up atk/own" \
	"delete atk/own" >"$T/own.out" 2>&1
ok "default: a local user connects as itself" has "^reply id=1 code=OK .*principal=uid:$auid " "$T/own.out"
ok "default: ... creates a name, takes and gives back its permit, deletes it" sh -c "
	grep -q '^reply id=2 code=OK\$' '$T/own.out' && grep -q '^reply id=3 code=OK permit=' '$T/own.out' &&
	grep -q '^reply id=4 code=OK released=1' '$T/own.out' && grep -q '^reply id=5 code=OK\$' '$T/own.out'"
honest "defaults"

##### 1. Session table filled: connect, Hello with a 24 h lease, disconnect.
# Over the UNIX socket a disconnect ends the session (nothing can be in
# between), so nothing lingers; over TCP (opt-in) the lease keeps it, and
# the principal's session cap stops the attacker.
if [ -n "${SEMD_ATTACK_ADDR:-}" ]; then
	start_default s
	TCP=$SEMD_ATTACK_ADDR
else
	start_default s --listen unix:/run/semd/semd.sock --listen tcp:127.0.0.1:0
	TCP=$(grep -m1 '^tcp:' "$T/s.ready")
fi
# sessions_flood VIA ADDR OUT: the attacker's 1050 sessions with 24 h
# leases through ADDR (VIA: UNIX or TCP), root's pings timed meanwhile.
sessions_flood() {
	lat_start 600
	t0=$(date +%s%N)
	as_atk "$PROBE" --sessions "$2" 1050 86400000 >"$3" 2>&1
	t1=$(date +%s%N)
	lat_end "sessions ($1)"
	echo "# measure sessions: $1 attacker $(head -1 "$3") in $(((t1 - t0) / 1000000)) ms"
}
sessions_flood UNIX "$AA" "$T/sess.out"
$PROBE "$A" hello stats >"$T/sst.out" 2>&1
ns=$(sed -n 's/.* sessions=\([0-9]*\).*/\1/p' "$T/sst.out")
ok "sessions: over UNIX, a closed connection leaves no session ($ns left)" test "${ns:-9999}" -le 3
sessions_flood TCP "$TCP" "$T/sesst.out"
expect_eq "sessions: over TCP the attacker gets 1000 lingering sessions (the default cap)" 1 \
	"$(grep -c 'OK=1000 ' "$T/sesst.out")"
ok "sessions: then RESOURCE_EXHAUSTED naming the sessions limit" \
	grep -q 'first RESOURCE_EXHAUSTED: .*session' "$T/sesst.out"
honest "sessions (after)"

##### 2. Names and holds filled: downs on new names with 24 h leases,
# explicit creates, queued downs
start_default h
# flood_to_cap LABEL WHAT LIMIT FLOOD-ARGS...: the attacker's flood gets
# 10000 OKs (the default cap of LIMIT), then RESOURCE_EXHAUSTED naming it.
flood_to_cap() {
	label=$1 what=$2 limit=$3
	shift 3
	lat_start 600
	as_atk "$PROBE" --flood "$AA" "$@" >"$T/$label.out" 2>&1
	lat_end "$label"
	echo "# measure $label: $(grep '^flood' "$T/$label.out")"
	ok "$label: the attacker $what (the default cap)" \
		grep -q '^flood: OK=10000 ' "$T/$label.out"
	ok "$label: then RESOURCE_EXHAUSTED naming the ${limit}s limit" \
		grep -q "first RESOURCE_EXHAUSTED: .*$limit" "$T/$label.out"
	honest "$label (after)"
}
flood_to_cap holds "holds 10000 permits" permit 3 3500 0 "down atk/%d lease=86400000"
flood_to_cap names "creates 10000 names" semaphore 1 10050 0 "create atkn/%d 1"
# Queued downs on a name root holds: the replies of the queued ones never
# come (none=), the refused ones come at once. A fresh daemon: the holds
# above last 24 h.
start_default w
$PROBE "$A" hello "down hon/held" "sleep 30000" >"$T/held.out" 2>&1 &
held_pid=$!
PIDS_TO_KILL="$PIDS_TO_KILL $held_pid"
t_wait_for 5 has '^reply id=2 code=OK permit' "$T/held.out"
lat_start 600
FLOOD_READ_MS=50 as_atk "$PROBE" --flood "$AA" 11 1000 0 "down hon/held timeout=60000" >"$T/wait.out" 2>&1
lat_end "waiters"
echo "# measure waiters: $(grep '^flood' "$T/wait.out")"
ok "waiters: RESOURCE_EXHAUSTED naming the waiters limit" \
	grep -q 'first RESOURCE_EXHAUSTED: .*wait' "$T/wait.out"
ok "waiters: 1000 refused of 11000 (10000 queued)" grep -q '^flood: RESOURCE_EXHAUSTED=1000 none=10000' "$T/wait.out"
kill "$held_pid" 2>/dev/null
honest "waiters (after)"

##### 3. The loopback TCP listener undid the UNIX socket's permissions
ok "tcp: nothing listens on TCP by default" sh -c "! grep -q '^tcp:' '$T/h.ready'"
start_default t --listen unix:/run/semd/semd.sock --listen tcp:127.0.0.1:0
TCP=$(grep -m1 '^tcp:' "$T/t.ready")
$PROBE "$A" hello "create rootjob 1" "down rootjob" "sleep 6000" "info rootjob" >"$T/rj.out" 2>&1 &
rj=$!
t_wait_for 5 has '^reply id=3 code=OK permit' "$T/rj.out"
permit=$(sed -n 's/^reply id=3 code=OK permit=\([0-9]*\) .*/\1/p' "$T/rj.out")
as_atk "$PROBE" "$TCP" hello "release rootjob $permit" "delete rootjob force" \
	"down rootjob timeout=0" "info rootjob" "create atk/x 1" >"$T/tcp.out" 2>&1
echo "# measure tcp: anonymous release/delete --force/down of root's name: $(grep -o 'code=[A-Z_]*' "$T/tcp.out" | sed -n '2,4p' | tr '\n' ' ')"
ok "tcp (opt-in): the attacker is anonymous" has '^reply id=1 code=OK .*principal=anonymous' "$T/tcp.out"
ok "tcp: force-release of root's hold refused" has '^reply id=2 code=PERMISSION_DENIED msg="anonymous may not release holds on rootjob"' "$T/tcp.out"
ok "tcp: delete --force refused" has '^reply id=3 code=PERMISSION_DENIED msg="anonymous may not delete rootjob"' "$T/tcp.out"
ok "tcp: the permit was not taken" has '^reply id=4 code=WOULD_BLOCK' "$T/tcp.out"
ok "tcp: anonymous may not inspect" has '^reply id=5 code=PERMISSION_DENIED' "$T/tcp.out"
ok "tcp: anonymous may not create" has '^reply id=6 code=PERMISSION_DENIED msg="anonymous may not create atk/x"' "$T/tcp.out"
# The same through the UNIX socket, as itself: the state machine's ownership.
as_atk "$PROBE" "$A" hello "release rootjob $permit" "delete rootjob force" \
	"setlimit rootjob 5" >"$T/own2.out" 2>&1
echo "# measure ownership: a user's release/delete --force/set-limit of root's name: $(grep -o 'code=[A-Z_]*' "$T/own2.out" | sed -n '2,4p' | tr '\n' ' ')"
ok "unix: a user may not force-release root's hold (ownership)" \
	sh -c "! grep -q '^reply id=2 code=OK' '$T/own2.out'"
ok "unix: ... nor delete root's name" sh -c "! grep -q '^reply id=3 code=OK' '$T/own2.out'"
ok "unix: ... nor change its limit" sh -c "! grep -q '^reply id=4 code=OK' '$T/own2.out'"
ok "unix: ... and no force-release was logged for the refusals" \
	sh -c "! grep -q 'force-released permit' '$T/t.log'"
wait "$rj"
ok "root's hold survived" has '^reply id=4 code=OK name=rootjob .*holders=1' "$T/rj.out"
honest "tcp (after)"

##### 4. Noise: denied requests are not logged one by one; a half-sent frame
# is cut off by frame-timeout
before=$(loglines t)
cmds=""
for i in $(seq 2000); do cmds="$cmds|release rootjob 1 nowait"; done
IFS='|'
# shellcheck disable=SC2086
as_atk "$PROBE" "$TCP" hello $cmds ping >"$T/noise.out" 2>&1
unset IFS
after=$(loglines t)
echo "# measure noise: 2000 denied releases, $((after - before)) log lines"
expect_eq "noise: 2000 denied releases answered" 2000 "$(grep -c 'code=PERMISSION_DENIED' "$T/noise.out")"
ok "noise: at most 100 log lines for them ($((after - before)))" test $((after - before)) -le 100
ok "noise: none logged as a force-release" sh -c \
	"! tail -n +$((before + 1)) '$T/t.log' | grep -q 'force-release'"
cat >"$T/half.py" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"\x00\x00\x00\x06\x08\x01\x12\x02\x08\x01")   # Hello
time.sleep(0.2)
s.sendall(b"\x00\x00\x03\xe8" + b"\x08\x01" * 50)   # 104 of 1004 bytes
t0 = time.monotonic()
s.settimeout(30)
try:
    while s.recv(4096):
        pass
except OSError:
    pass
print(round(time.monotonic() - t0))
EOF
half=$(as_atk "$apy" "$T/half.py" /run/semd/semd.sock)
echo "# measure partial frame: closed after ${half}s"
ok "partial frame: closed after frame-timeout (10s default; took ${half}s)" \
	test "${half:-99}" -ge 9 -a "${half:-99}" -le 12
ok "partial frame: logged why" has 'not completed within frame-timeout' "$T/t.log"

##### 5. Global caps only: idle connections from one uid
start_default c
as_atk "$PROBE" --idle "$AA" 1100 5000 >"$T/idle.out" 2>&1 &
idle=$!
PIDS_TO_KILL="$PIDS_TO_KILL $idle"
ok "connections: the attacker's connections are up" t_wait_for 20 grep -q '^hellos' "$T/idle.out"
lat_start 300
honest "connections (during)"
lat_end "connections"
wait "$idle"
echo "# measure connections: $(grep '^hellos' "$T/idle.out")"
ok "connections: 1000 served (the default cap)" grep -q '^hellos: OK=1000 ' "$T/idle.out"
ok "connections: the rest refused naming the quota" sh -c \
	"grep -q 'first RESOURCE_EXHAUSTED: quota: uid:$auid may have 1000 connection(s) open (quota connections)' '$T/idle.out' ||
	 grep -q '^hellos: OK=1000 none=100' '$T/idle.out'"
honest "connections (after)"

##### 6. Silent TCP connections to the TLS port
sh "$top_srcdir/tests/security/gen-certs.sh" "$T/certs" >/dev/null 2>&1
C=$T/certs
chmod -R a+rX "$C"
start_default tl --listen unix:/run/semd/semd.sock --listen tls:127.0.0.1:0 \
	--tls-cert "$C/server.crt" --tls-key "$C/server.key" --tls-ca "$C/ca.crt" \
	--tls-client-auth optional --log-level debug
TLS=$(grep -m1 '^tls:' "$T/tl.ready")
port=${TLS##*:}
cat >"$T/silent.py" <<'EOF'
import resource, socket, sys, time
port, n, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
socks, refused = [], 0
for i in range(n):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    try:
        s.connect(("127.0.0.1", port))
        socks.append(s)
    except OSError:
        refused += 1
print("connected", len(socks), "refused", refused, flush=True)
time.sleep(hold)
EOF
nsilent=${SEMD_ATTACK_SILENT:-1000}
as_atk "$apy" "$T/silent.py" "$port" "$nsilent" 8 >"$T/silent.out" 2>&1 &
silent=$!
PIDS_TO_KILL="$PIDS_TO_KILL $silent"
t_wait_for 20 grep -q connected "$T/silent.out"
okc=0
for i in 1 2 3; do
	if "$SEMCTL" -s "$TLS" --tls-ca "$C/ca.crt" --tls-cert "$C/client.crt" \
	    --tls-key "$C/client.key" ping >/dev/null 2>&1; then okc=$((okc + 1)); fi
done
echo "# measure tls: $nsilent silent connections ($(cat "$T/silent.out")): $okc of 3 mTLS pings served"
expect_eq "tls: 3 of 3 mTLS pings served during $nsilent silent connections" 3 "$okc"
honest "tls (during)"
ok "tls: the silent ones were refused past tls-per-source-max-startups" \
	has 'tls-per-source-max-startups: refusing TLS clients' "$T/tl.log"
wait "$silent"
# A certificate name with a space keeps it.
p=$("$SEMCTL" -s "$TLS" --tls-ca "$C/ca.crt" --tls-cert "$C/badname.crt" \
	--tls-key "$C/badname.key" --json ping 2>&1 |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["principal"])' 2>&1)
expect_eq "text: the certificate of CN 'bad name' is not anonymous" 'cn:bad\x20name' "$p"

##### 7. Metrics endpoint (opt-in): half-sent requests, scrapers that never
# read, descriptors used up
start_default m --metrics-listen tcp:127.0.0.1:0 --metrics-names pfx/
M=$(sed -n 's/^metrics://p' "$T/m.ready")
cmds=""
for i in $(seq 1500); do cmds="$cmds|create pfx/name-with-a-long-enough-label-$i 1 nowait"; done
IFS='|'
# shellcheck disable=SC2086
$PROBE "$A" hello $cmds ping >/dev/null 2>&1
unset IFS
cat >"$T/scrapers.py" <<'EOF'
import resource, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
mode, n, hold = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
socks = []
for i in range(n):
    try:
        s = socket.create_connection((host, int(port)), timeout=2)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        if mode == "half":
            s.sendall(b"GET /metr")
        else:
            s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n" * 20)
        socks.append(s)
    except OSError:
        pass
print("opened", len(socks), flush=True)
time.sleep(hold)
EOF
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$m_PID/status"; }
rss0=$(rss)
before=$(loglines m)
c0=$(cpu_ms "$m_PID")
lat_start 300
as_atk "$apy" "$T/scrapers.py" "$M" half 2000 3 >"$T/half2.out" 2>&1
as_atk "$apy" "$T/scrapers.py" "$M" noread 60 3 >"$T/noread.out" 2>&1
lat_end "metrics"
c1=$(cpu_ms "$m_PID")
rss1=$(rss)
after=$(loglines m)
echo "# measure metrics: 2000 half requests + 60 scrapers x 20 pipelined GETs unread: CPU $((${c1%.*} - ${c0%.*})) ms in ~6 s, RSS ${rss0} -> ${rss1} kB, $((after - before)) log lines"
ok "metrics: RSS grew by less than 64 MB (${rss0} -> ${rss1} kB)" test $((rss1 - rss0)) -lt 65536
ok "metrics: at most 100 log lines ($((after - before)))" test $((after - before)) -le 100
ok "metrics: the daemon did not spin (CPU $((${c1%.*} - ${c0%.*})) ms)" test $((${c1%.*} - ${c0%.*})) -lt 3000
ok "metrics: one address held no more than metrics-per-source-max-connections" \
	has 'metrics-per-source-max-connections 4 reached' "$T/m.log"
honest "metrics (after)"
# Descriptors used up: a semd with 128 of them, the attacker holds 200
# connections, then knocks on the metrics port and the UNIX socket.
kill -TERM "$m_PID"
wait "$m_PID" 2>/dev/null
cur_pid=
rm -f "$T/e.ready"
prlimit --nofile=128:128 "$SEMD" --ready-file "$T/e.ready" --metrics-listen tcp:127.0.0.1:0 \
	>"$T/e.log" 2>&1 &
e_PID=$!
cur_pid=$e_PID
PIDS_TO_KILL="$PIDS_TO_KILL $e_PID"
t_wait_for 10 test -s "$T/e.ready"
ME=$(sed -n 's/^metrics://p' "$T/e.ready")
cat >"$T/hold.py" <<'EOF'
import resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 400), hard))
socks = []
for i in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    s.setblocking(False)
    try:
        s.connect(sys.argv[1])
    except BlockingIOError:
        pass
    except OSError:
        break
    socks.append(s)
print("held", len(socks), flush=True)
time.sleep(float(sys.argv[3]))
EOF
as_atk "$apy" "$T/hold.py" /run/semd/semd.sock 200 4 >"$T/eidle.out" 2>&1 &
eidle=$!
PIDS_TO_KILL="$PIDS_TO_KILL $eidle"
t_wait_for 10 grep -q held "$T/eidle.out"
sleep 0.5
before=$(loglines e)
c0=$(cpu_ms "$e_PID")
as_atk "$apy" "$T/scrapers.py" "$ME" half 200 2 >/dev/null 2>&1
c1=$(cpu_ms "$e_PID")
after=$(loglines e)
echo "# measure EMFILE: CPU $((${c1%.*} - ${c0%.*})) ms in ~2 s, $((after - before)) log lines"
ok "EMFILE: the daemon did not spin (CPU $((${c1%.*} - ${c0%.*})) ms in ~2 s)" test $((${c1%.*} - ${c0%.*})) -lt 1000
ok "EMFILE: at most 30 log lines ($((after - before)))" test $((after - before)) -le 30
ok "EMFILE: accepting paused, logged" has 'pausing' "$T/e.log"
wait "$eidle"
ok "EMFILE: once the attacker left, root is served again" t_wait_for 10 sh -c \
	"'$PROBE' '$A' hello ping | grep -q 'code=OK pong'"

##### 8. Text: NUL inside a name; localhost resolved
start_default x
as_atk "$PROBE" "$A" hello "raw 0000000b08051a070a036100621001" "wait 5" \
	"raw 00000009080622050a03610062" "wait 6" "info a" ping >"$T/nul.out" 2>&1
ok "text: a create of 'a\\0b' is INVALID_ARGUMENT" has '^reply id=5 code=INVALID_ARGUMENT msg="a string field holds a NUL byte"' "$T/nul.out"
ok "text: a down of 'a\\0b' (hand decoder) is INVALID_ARGUMENT" has '^reply id=6 code=INVALID_ARGUMENT' "$T/nul.out"
ok "text: nothing named 'a' was made" has '^reply id=2 code=NOT_FOUND' "$T/nul.out"
ok "text: the connection is still served" has 'code=OK pong' "$T/nul.out"
printf '192.0.2.1 localhost\n::1 ip6-localhost\n' >"$T/hosts"
mount --bind "$T/hosts" /etc/hosts
"$SEMD" --listen tcp:localhost:0 --check-config >"$T/lh.out" 2>&1
rc=$?
umount /etc/hosts
expect_eq "text: tcp:localhost is resolved (to 192.0.2.1 here) and refused" 78 "$rc"
ok "... saying why" has 'plain TCP on a non-loopback address' "$T/lh.out"
t_done
