# SPDX-License-Identifier: BSD-2-Clause
# tests/cluster/proxied.sh - sourced by the tests of a three-node cluster
# under faults (faults.sh, lease-faults.sh), after tests/lib.sh: every
# node's peer port behind peerproxy.py, which cuts links as $T/blocked says.
# Peers P1..P3 (the nodes bind 127.0.0.1, the configuration names the
# proxies on 127.0.0.2; they prove $T/peer.key), client ports C1..C3; sets BOOT, ADDRS and LOAD (the
# clients, cluster_load), and gives start_node, leader, has_leader,
# wait_leader and pid_of. Skipped without python3 or with SEMD_SKIP_FAULTS.
# shellcheck shell=sh disable=SC2034,SC2046
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }
# tests/run's distcheck stage: the check stage and the sanitizer stage run these
[ -z "${SEMD_SKIP_FAULTS:-}" ] || { echo "SKIP: SEMD_SKIP_FAULTS"; exit 77; }
LOAD=$top_builddir/tests/cluster/cluster_load
PROXY=$top_srcdir/tests/cluster/peerproxy.py
base=$(t_port_base 14) || exit 1
P1=$base; P2=$((base + 1)); P3=$((base + 2))
C1=$((base + 11)); C2=$((base + 12)); C3=$((base + 13))
BOOT="1=127.0.0.2:$P1,2=127.0.0.2:$P2,3=127.0.0.2:$P3"
ADDRS="tcp:127.0.0.1:$C1,tcp:127.0.0.1:$C2,tcp:127.0.0.1:$C3"
: >"$T/blocked"
python3 "$PROXY" "$T/blocked" "127.0.0.2:$P1=127.0.0.1:$P1" \
	"127.0.0.2:$P2=127.0.0.1:$P2" "127.0.0.2:$P3=127.0.0.1:$P3" \
	>"$T/proxy.log" 2>&1 &
PIDS_TO_KILL="$PIDS_TO_KILL $!"

# start_node I [ARGS...]: node I on its data directory (made on the first
# start), ARGS after.
start_node() {
	sn_i=$1; shift
	eval "port=\$P$sn_i cport=\$C$sn_i"
	t_start_node "$sn_i" --data-dir "$T/d$sn_i" --node-id "$sn_i" \
		--peer-listen "tcp:127.0.0.2:$port" --peer-bind "tcp:127.0.0.1:$port" \
		--bootstrap "$BOOT" --listen "tcp:127.0.0.1:$cport" \
		--acl "anonymous * all" $(t_peers) "$@"
}
# leader: the leader's node id, as the cluster says.
leader() { t_cluster_field leader_id; }
has_leader() { t_cluster_has_leader; }
wait_leader() { t_wait_for 10 has_leader; }
pid_of() { eval "echo \$N$1"; }
