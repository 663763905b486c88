#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/cluster/fulldisk.sh - issue 35, item 3 in a cluster of three: a
# full disk is one node's failure, which raft rides out. Node 1 keeps its
# log on a tmpfs in a private mount namespace (with a ballast file beside
# at first, so that it holds one segment of the log, 8 MB, and no second
# one), nodes 2 and 3 on the test's own disk. semd_probe --fill-log writes
# the log until node 1's disk is full for the log (no room for its next
# segment: semd_log_disk_full):
#  - node 1 the leader: the followers commit, writes are taken and none is
#    refused; with node 3 stopped too (SIGSTOP) nothing commits: writes
#    are refused at once with the disk's message (semctl exit 3), reads are
#    answered, /readyz is not ready; node 3 continued: writes are taken
#    again though node 1's disk is still full; room again: it writes;
#  - node 1 a follower (leadership handed to node 3), its disk full again:
#    the leader commits with node 2, takes writes and refuses none (node 1
#    stays behind: the test ends there).
# Needs root (unshare -m, mount: tests/mountns.sh); otherwise skipped (77).
MOUNTNS_TOOLS="curl python3"
. "$top_srcdir/tests/mountns.sh"
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
unset SEMD_TEST_DURABLE SEMD_TEST_THREADS

# The tmpfs go before $T (their mount points could not be removed under them).
fulldisk_cleanup() {
	rc=$?
	for p in $PIDS_TO_KILL; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	for p in $PIDS_TO_KILL; do
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	done
	umount "$T/disk1" 2>/dev/null
	(exit "$rc")
	t_cleanup
}
trap fulldisk_cleanup EXIT
# disk I SIZE_MB BALLAST_MB: node I's data directory on a tmpfs of SIZE_MB
# with BALLAST_MB of ballast.
disk() {
	mkdir -p "$T/disk$1" &&
	mount -t tmpfs -o "size=$2m" "semd-fulldisk$1" "$T/disk$1" &&
	dd if=/dev/zero of="$T/disk$1/ballast" bs=1M count="$3" >/dev/null 2>&1
}
disk 1 48 36 || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
# fill I: node I's disk to its last byte; unfill I: room again.
fill() { dd if=/dev/zero of="$T/disk$1/fill" bs=64k >/dev/null 2>&1; [ "$(df -P "$T/disk$1" | awk 'NR == 2 { print $4 }')" = 0 ]; }
unfill() { rm -f "$T/disk$1/fill" "$T/disk$1/ballast"; }
# metric I NAME: NAME's value on node I's metrics page.
metric() { curl -s -m 5 "http://$(sed -n 's/^metrics://p' "$T/r$1")/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }
is() { [ "$(metric "$1" "$2")" = "$3" ]; }
# leader_is I: node I leads, as node I sees it.
leader_is() { [ "$(t_cluster_field leader_id "tcp:127.0.0.1:$((base + 10 + $1))")" = "$1" ]; }
# to I: leadership handed to node I.
to() {
	leader_is "$1" || "$SEMCTL" -s "$ADDRS" cluster transfer "$1" >/dev/null 2>&1
	t_wait_for 10 leader_is "$1"
}
at() { echo "tcp:127.0.0.1:$((base + 10 + $1))"; }
# filling I N: semd_probe --fill-log at leader I in the background until
# unfilling, its output in $T/fillN.out.
filling() {
	rm -f "$T/stop"
	"$PROBE" --fill-log "$(at "$1")" h 60000 "$T/stop" >"$T/fill$2.out" 2>&1 &
	FILL=$!
	PIDS_TO_KILL="$PIDS_TO_KILL $FILL"
}
unfilling() { touch "$T/stop"; wait "$FILL"; }

t_cluster3 15 || exit 1
for i in 1 2 3; do
	dir=$T/d$i
	[ "$i" = 1 ] && dir=$T/disk1/data
	# shellcheck disable=SC2046 # t_peers is two words or none
	t_start_node "$i" --data-dir "$dir" --node-id "$i" \
		--peer-listen "tcp:127.0.0.1:$((base + i))" \
		--listen "tcp:127.0.0.1:$((base + 10 + i))" \
		--acl "anonymous * all" $(t_peers) --bootstrap "$BOOT" \
		--metrics-listen tcp:127.0.0.1:0 || { echo "node $i did not start"; exit 1; }
done
ok "a leader elected" t_wait_for 15 t_cluster_has_leader
ok "node 1 leads" to 1
ok "a name to hold" "$SEMCTL" -s "$(at 1)" create h --limit 1
ok "... held" "$SEMCTL" -s "$(at 1)" down h --lease 1h

# The leader's own disk full.
ok "node 1's disk is full" fill 1
filling 1 1
ok "node 1's log filled its segment: it says its disk is full" \
	t_wait_for 20 is 1 semd_log_disk_full 1
ok "... the followers commit: it takes writes" "$SEMCTL" -s "$(at 1)" create a --limit 1
ok "... refusing none" is 1 semd_log_writes_refused 0
unfilling
ok "... none of the log's writes was refused" has "^fill: no refusal" "$T/fill1.out"
# And no majority that takes writes: refused.
kill -STOP "$N3"
# A write that reaches the log first waits with it: one that makes it wait.
"$SEMCTL" -s "$(at 1)" create x --limit 1 >/dev/null 2>&1 &
ok "node 3 stopped too: nothing commits, writes are refused" \
	t_wait_for 10 is 1 semd_log_writes_refused 1
"$SEMCTL" -s "$(at 1)" create b --limit 1 >"$T/create.out" 2>&1
rc=$?
ok "... a create refused, exit 3 (was $rc)" [ "$rc" = 3 ]
ok "... saying the disk is full" has "disk is full" "$T/create.out"
"$SEMCTL" -s "$(at 1)" down h --timeout 20s >"$T/down.out" 2>&1
rc=$?
ok "... a down refused, exit 3 (was $rc)" [ "$rc" = 3 ]
ok "... saying the disk is full" has "disk is full" "$T/down.out"
ok "... a read answered" "$SEMCTL" -s "$(at 1)" info a
ok "... /readyz not ready" sh -c "curl -s -m 5 http://$(sed -n 's/^metrics://p' "$T/r1")/readyz | grep -q '^not ready: writes refused'"
kill -CONT "$N3"
ok "node 3 continued: writes taken again" \
	t_wait_secs 10 "$SEMCTL" -s "$(at 1)" create b --limit 1
ok "... node 1's disk still full" is 1 semd_log_disk_full 1
unfill 1
ok "room again on node 1: its disk takes writes" t_wait_for 10 is 1 semd_log_disk_full 0

# A follower's disk full.
ok "node 3 leads" to 3
ok "node 1's disk is full again" fill 1
filling 3 2
ok "node 1's log filled its segments: it says its disk is full" \
	t_wait_for 30 is 1 semd_log_disk_full 1
ok "... the leader takes writes" "$SEMCTL" -s "$(at 3)" create c --limit 1
ok "... and refuses none" is 3 semd_log_writes_refused 0
ok "... is ready" sh -c "curl -s -m 5 http://$(sed -n 's/^metrics://p' "$T/r3")/readyz | grep -q '^ready: leader'"
unfilling
ok "... none of the log's writes was refused" has "^fill: no refusal" "$T/fill2.out"
ok "every node up" sh -c "kill -0 $N1 && kill -0 $N2 && kill -0 $N3"
for i in 1 2 3; do
	eval "pid=\$N$i"
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	ok "node $i stops cleanly (was $rc)" [ "$rc" = 0 ]
done
ok "... no crash" sh -c "! grep -qi 'double free\|segmentation\|abort\|sanitizer' '$T/n1.log' '$T/n2.log' '$T/n3.log'"
t_done
