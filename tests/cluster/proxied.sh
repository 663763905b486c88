# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=sh
# tests/cluster/proxied.sh - sourced by the fault tests after tests/lib.sh:
# a three-node cluster whose peers reach each other through peerproxy.py, so
# a test can cut a node off (by its name in $T/blocked). Sets the ports P1..P3
# (nodes bind 127.0.0.1, the configuration names the proxies on 127.0.0.2)
# and C1..C3 (clients), BOOT and ADDRS; starts the proxy; defines
# start_node I, leader (the leader's node id), has_leader, wait_leader and
# pid_of I.
# Skipped without python3, or with SEMD_SKIP_FAULTS (tests/run's distcheck
# stage: the check and sanitizer stages run the fault tests). LOAD is the
# clients' program.
# shellcheck disable=SC2034 # P*, C*, ADDRS and LOAD are for the test
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }
[ -z "${SEMD_SKIP_FAULTS:-}" ] || { echo "SKIP: SEMD_SKIP_FAULTS"; exit 77; }
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS
LOAD=$top_builddir/tests/cluster/cluster_load
base=$(t_port_base 14) || exit 1
P1=$base; P2=$((base + 1)); P3=$((base + 2))
C1=$((base + 11)); C2=$((base + 12)); C3=$((base + 13))
BOOT="1=127.0.0.2:$P1,2=127.0.0.2:$P2,3=127.0.0.2:$P3"
ADDRS="tcp:127.0.0.1:$C1,tcp:127.0.0.1:$C2,tcp:127.0.0.1:$C3"
: >"$T/blocked"
python3 "$top_srcdir/tests/cluster/peerproxy.py" "$T/blocked" \
	"127.0.0.2:$P1=127.0.0.1:$P1" "127.0.0.2:$P2=127.0.0.1:$P2" \
	"127.0.0.2:$P3=127.0.0.1:$P3" >"$T/proxy.log" 2>&1 &
PIDS_TO_KILL="$PIDS_TO_KILL $!"

# start_node I: node I on its data directory (made on the first start).
start_node() {
	eval "port=\$P$1 cport=\$C$1"
	t_start_node "$1" --data-dir "$T/d$1" --node-id "$1" \
		--peer-listen "tcp:127.0.0.2:$port" --peer-bind "tcp:127.0.0.1:$port" \
		--bootstrap "$BOOT" --listen "tcp:127.0.0.1:$cport" \
		--acl "anonymous * all"
}
leader() { t_field leader_id; }
has_leader() { t_has_leader; }
wait_leader() { t_wait_for 10 has_leader; }
pid_of() { eval "echo \$N$1"; }
