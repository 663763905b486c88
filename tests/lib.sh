# SPDX-License-Identifier: BSD-2-Clause
# tests/lib.sh - shared helpers for the shell tests. Source it:
#   . "$top_srcdir/tests/lib.sh"
# It gives each test a private directory, starts real daemons on private
# sockets and free ports (port 0 + --ready-file), waits for readiness with
# bounded retries, kills what it started on exit, and prints the daemon's log
# when the test fails.
set -u

: "${top_builddir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_srcdir:=$top_builddir}"
SEMD=${SEMD:-$top_builddir/semd}
# Sanitizer builds: what libraft leaks on its way out of a damaged log.
: "${LSAN_OPTIONS:=suppressions=$top_srcdir/tests/lsan.supp:print_suppressions=0}"
export LSAN_OPTIONS
# Debian's python3 (scripts/deps.sh installs it) before any version
# manager's shim on the PATH, which can cost a second or more a start.
if [ -x /usr/bin/python3 ]; then PATH=/usr/bin:$PATH; export PATH; fi
# The built semctl itself, not libtool's wrapper script around it (which
# costs a shell and ~0.2 s a call): the tests run it hundreds of times.
if [ -z "${SEMCTL:-}" ] && [ -x "$top_builddir/.libs/semctl" ] &&
    [ -d "$top_builddir/client/.libs" ]; then
	SEMCTL=$top_builddir/.libs/semctl
	LD_LIBRARY_PATH=$top_builddir/client/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
fi
SEMCTL=${SEMCTL:-$top_builddir/semctl}
PROBE=${PROBE:-$top_builddir/tests/daemon/semd_probe}
T=$(mktemp -d "${TMPDIR:-/tmp}/semd-test.XXXXXX")
PIDS_TO_KILL=""
TEST_NAME=$(basename "$0")
. "$top_srcdir/tests/tap.sh"

t_cleanup() {
	rc=$?
	for p in $PIDS_TO_KILL; do kill -TERM "$p" 2>/dev/null; done
	for p in $PIDS_TO_KILL; do
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		kill -KILL "$p" 2>/dev/null
	done
	if [ "$rc" != 0 ] || [ "$t_failed" != 0 ]; then
		for f in "$T"/*.log; do
			[ -f "$f" ] || continue
			echo "---- $f ----"; tail -n 60 "$f"
		done
	fi
	rm -rf "$T"
	exit "$rc"
}
trap t_cleanup EXIT
trap 'exit 130' INT TERM

# A watchdog: the whole test is killed after $1 seconds (default 120). The
# shell runs its TERM trap only once the command it waits for has ended, so
# 10 s later that command (a hung client, say) and the others are killed.
t_watchdog() {
	( sleep "${1:-120}"; echo "$TEST_NAME: watchdog fired after ${1:-120}s" >&2; kill -TERM $$
	  sleep 10; ! kill -0 $$ 2>/dev/null || pkill -KILL -P $$ ) &
	PIDS_TO_KILL="$PIDS_TO_KILL $!"
}

# has PATTERN FILE: FILE has a line matching PATTERN.
has() { grep -q -- "$1" "$2"; }

# t_wait_for SECONDS CMD... : poll CMD every 50 ms until it succeeds.
t_wait_for() {
	t_wf_limit=$(( $1 * 20 )); shift
	t_wf_i=0
	while [ $t_wf_i -lt $t_wf_limit ]; do
		if "$@" 2>/dev/null; then return 0; fi
		sleep 0.05; t_wf_i=$((t_wf_i + 1))
	done
	return 1
}

# t_wait_secs SECONDS CMD... : poll CMD every 0.2 s until it succeeds, for
# at most SECONDS of wall-clock time (t_wait_for counts tries, which a
# CMD that takes a while itself, a python3 client say, stretches).
t_wait_secs() {
	t_end=$(( $(date +%s) + $1 )); shift
	while :; do
		if "$@" 2>/dev/null; then return 0; fi
		[ "$(date +%s)" -lt "$t_end" ] || return 1
		sleep 0.2
	done
}

# start_semd NAME [ARGS...]: start a daemon listening on $T/NAME.sock and
# tcp:127.0.0.1:0; sets NAME_PID, NAME_UNIX (unix:PATH), NAME_TCP
# (tcp:HOST:PORT) from its ready file. Log in $T/NAME.log.
# SEMD_TEST_THREADS=N runs it with --threads N (the threaded test pass),
# SEMD_TEST_DURABLE=1 with a data directory (the durable test pass).
# A TCP client is anonymous, which the daemon lets only use names: unless
# the test brings its own --config, anonymous gets every right here (after
# the file's rules, --acl), so tests of operations may run over TCP too.
# Tests of the defaults themselves start semd on their own
# (tests/security/attacks.sh).
start_semd() {
	name=$1; shift
	case " $* " in
	*" --config "*|*" -c "*) ;;
	*) set -- --acl "anonymous * all" "$@" ;;
	esac
	rm -f "$T/$name.ready"
	"$SEMD" --listen "unix:$T/$name.sock" --listen tcp:127.0.0.1:0 \
		--ready-file "$T/$name.ready" \
		${SEMD_TEST_THREADS:+--threads "$SEMD_TEST_THREADS"} \
		${SEMD_TEST_DURABLE:+--data-dir "$T/$name.data"} \
		"$@" >"$T/$name.log" 2>&1 &
	pid=$!
	PIDS_TO_KILL="$PIDS_TO_KILL $pid"
	if ! t_wait_for 10 test -s "$T/$name.ready"; then
		echo "semd '$name' did not become ready" >&2
		cat "$T/$name.log" >&2
		return 1
	fi
	eval "${name}_PID=$pid"
	eval "${name}_UNIX=\$(grep -m1 '^unix:' \"\$T/\$name.ready\")"
	eval "${name}_TCP=\$(grep -m1 '^tcp:' \"\$T/\$name.ready\")"
}

# t_reload PID CONF SED-SCRIPT [OUT]: edit the configuration file CONF in
# place with SED-SCRIPT, then reload PID (SIGHUP). With OUT, first wait until
# the probe writing OUT, started in the background to keep a connection open
# across the reload, has had its hello answered.
t_reload() {
	if [ -n "${4:-}" ]; then
		t_wait_for 5 has '^reply id=1 ' "$4" || return 1
	fi
	sed -i "$3" "$2" && kill -HUP "$1"
}

# t_reload_across PID CONF SED-SCRIPT LOG PATTERN OUT ADDR REQUEST...: a
# reload (t_reload) with a connection open across it. A probe on ADDR says
# hello, waits until the reload is logged (PATTERN in LOG: a check of its
# own), then sends REQUEST... on the same connection; its replies go to OUT.
t_reload_across() {
	_ra_pid=$1 _ra_conf=$2 _ra_sed=$3 _ra_log=$4 _ra_pat=$5 _ra_out=$6 _ra_addr=$7
	shift 7
	$PROBE "$_ra_addr" hello "until $_ra_out.go" "$@" >"$_ra_out" 2>&1 &
	_ra_probe=$!
	t_reload "$_ra_pid" "$_ra_conf" "$_ra_sed" "$_ra_out"
	ok "reload logged" t_wait_for 5 has "$_ra_pat" "$_ra_log"
	touch "$_ra_out.go"
	wait "$_ra_probe"
}

# t_port_base N: the first of N consecutive TCP ports that are free on
# 127.0.0.1 and 127.0.0.2 now, for a cluster whose peers must know each
# other's addresses before they start (port 0 cannot do). Chosen at random
# below the kernel's ephemeral range, so that no client connection of a test
# running beside this one can be holding one of them.
t_port_base() {
	python3 - "$1" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
hi = min(lo, 32768) - n
for _ in range(200):
    base = random.randrange(10000, hi)
    socks = []
    try:
        for port in range(base, base + n):
            for host in ("127.0.0.1", "127.0.0.2"):
                s = socket.socket()
                socks.append(s)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((host, port))
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    sys.exit(0)
sys.exit("no free block of %d ports" % n)
PY
}

# t_cluster3 N: the addresses of a three-node cluster on 127.0.0.1, in a
# block of N free ports (t_port_base): node I's peer port is base+I, its
# client port base+10+I. Sets base, BOOT (the peers, id=host:port, for
# --bootstrap) and ADDRS (the client addresses, for semctl -s).
# shellcheck disable=SC2034 # BOOT and ADDRS are for the caller
t_cluster3() {
	base=$(t_port_base "$1") || return 1
	BOOT="1=127.0.0.1:$((base + 1)),2=127.0.0.1:$((base + 2)),3=127.0.0.1:$((base + 3))"
	ADDRS="tcp:127.0.0.1:$((base + 11)),tcp:127.0.0.1:$((base + 12)),tcp:127.0.0.1:$((base + 13))"
}

# t_peer_key FILE: a new peer key (32 random bytes, mode 600) in FILE, for
# plain cluster peers (--peer-key FILE).
t_peer_key() {
	(umask 077 && head -c 32 /dev/urandom >"$1")
}

# t_peers: the arguments by which a cluster node's peers prove who they are,
# --peer-key $T/peer.key (made on the first call); none for a semd that
# predates them (a test run against the build of before, to show it fails).
t_peers() {
	if [ -z "${t_peers_arg+set}" ]; then
		t_peers_arg=
		if "$SEMD" --help 2>&1 | grep -q -- --peer-key; then
			[ -f "$T/peer.key" ] || t_peer_key "$T/peer.key"
			t_peers_arg="--peer-key $T/peer.key"
		fi
	fi
	echo "$t_peers_arg"
}

# t_cluster_node I [ARGS...]: node I of t_cluster3's cluster (t_start_node)
# on its data directory $T/dI, peer port base+I, client port base+10+I,
# open to anyone, its peers proving $T/peer.key (unless ARGS give peer TLS
# or allow-insecure-peers); ARGS after.
t_cluster_node() {
	t_n=$1; shift
	case " $* " in
	*" --peer-tls-cert "*|*" --allow-insecure-peers"*|*" --peer-key "*) t_pk= ;;
	*) t_pk=$(t_peers) ;;
	esac
	# shellcheck disable=SC2086 # t_pk is two words or none
	t_start_node "$t_n" --data-dir "$T/d$t_n" --node-id "$t_n" \
		--peer-listen "tcp:127.0.0.1:$((base + t_n))" \
		--listen "tcp:127.0.0.1:$((base + 10 + t_n))" \
		--acl "anonymous * all" $t_pk "$@"
}

# t_cluster_field NAME [ADDRS]: a number of the cluster status, as the first
# node of ADDRS (default: $ADDRS) that answers sees it.
t_cluster_field() {
	"$SEMCTL" -s "${2:-$ADDRS}" --json cluster status 2>/dev/null |
		sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"
}

# t_cluster_has_leader [ADDRS]: a node there knows a leader.
t_cluster_has_leader() {
	t_l=$(t_cluster_field leader_id "${1:-}")
	[ -n "$t_l" ] && [ "$t_l" != 0 ]
}

# t_start_node I [ARGS...]: semd ARGS (a cluster node, say) in the
# background with the ready file $T/rI, logging to $T/nI.log; its pid in NI
# (killed at the end). Waits up to 10 s for it to be ready.
t_start_node() {
	t_i=$1; shift
	rm -f "$T/r$t_i"
	"$SEMD" --ready-file "$T/r$t_i" "$@" >>"$T/n$t_i.log" 2>&1 &
	eval "N$t_i=$!"
	PIDS_TO_KILL="$PIDS_TO_KILL $!"
	t_wait_for 10 test -s "$T/r$t_i"
}

# t_notify_socket SECONDS [stamp]: a systemd notify socket at
# $T/notify.sock for SECONDS (or until STOPPING=1): every line semd sends is
# appended to $T/notify.out, after the monotonic time with "stamp".
t_notify_socket() {
	python3 - "$T/notify.sock" "$T/notify.out" "$1" "${2:-}" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(0.2)
end = time.time() + float(sys.argv[3])
with open(sys.argv[2], "a", buffering=1) as out:
    while time.time() < end:
        try:
            msg = s.recv(4096).decode()
        except socket.timeout:
            continue
        for line in msg.split("\n"):
            out.write("%.3f %s\n" % (time.monotonic(), line) if sys.argv[4] else line + "\n")
        if "STOPPING=1" in msg:
            break
PY
	PIDS_TO_KILL="$PIDS_TO_KILL $!"
	t_wait_for 5 test -S "$T/notify.sock"
}

# Throw-away certificates from the openssl CLI, in the current directory.
# t_key NAME [ec]: NAME.key, RSA 2048 (or EC P-256).
t_key() {
	if [ "${2:-}" = ec ]; then
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null
	else
		openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1.key" 2>/dev/null
	fi
}
# t_ca NAME SUBJECT [ec]: a self-signed CA, NAME.key and NAME.pem.
t_ca() {
	t_key "$1" "${3:-}" &&
	openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "$2" 2>/dev/null
}
# t_cert NAME SUBJECT SAN CA [ec]: NAME.key and NAME.pem signed by CA.
t_cert() {
	t_key "$1" "${5:-}" &&
	openssl req -new -key "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null &&
	printf 'subjectAltName=%s\n' "$3" >"$1.ext" &&
	openssl x509 -req -in "$1.csr" -CA "$4.pem" -CAkey "$4.key" -CAcreateserial \
		-out "$1.pem" -days 2 -extfile "$1.ext" 2>/dev/null
}

# t_tls_certs [ec]: skipped (77) without the openssl CLI; otherwise in $T,
# which becomes the current directory, a CA "ca", a CA "other" the tests do
# not trust, and srv.key/srv.pem for localhost and 127.0.0.1 signed by ca
# (RSA, or EC with "ec"). The test's own certificates come after.
t_tls_certs() {
	command -v openssl >/dev/null || { echo "SKIP: no openssl"; exit 77; }
	cd "$T" || exit 1
	t_ca ca "/CN=semd test CA" "${1:-}" && t_ca other "/CN=other CA" "${1:-}" &&
	t_cert srv "/CN=localhost" "DNS:localhost,IP:127.0.0.1" ca "${1:-}" || exit 1
}

# t_tls_conf CERT CA AUTH: the TLS lines of a semd configuration: the server
# certificate $T/CERT.pem and its key, client certificates checked against
# $T/CA.pem, tls-client-auth AUTH (optional or required).
t_tls_conf() {
	printf 'tls-cert %s\ntls-key %s\ntls-ca %s\ntls-client-auth %s\n' \
		"$T/$1.pem" "$T/$1.key" "$T/$2.pem" "$3"
}

# t_done: print the plain summary line and exit with the right status.
t_done() {
	echo "$t_passed passed, $t_failed failed"
	[ "$t_failed" = 0 ]
}
