#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/daemon/fulldisk.sh - issue 35, item 3: a durable semd whose data
# directory's disk is full (a 12 MB tmpfs in a private mount namespace,
# filled by a file): it keeps serving reads and the writes its prepared
# segment holds, never crashes; stopped and started while the disk is still
# full, it says the disk is full (exit status 74, EX_IOERR), not an unknown
# error; once space returns it starts with every name it had.
# Needs root (unshare -m, mount); otherwise skipped (77).
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (a private mount namespace and a tmpfs)"
	exit 77
fi
for tool in unshare mount dd; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool is not installed"; exit 77; }
done
if [ -z "${SEMD_FULLDISK_NS:-}" ]; then
	unshare -m --propagation private true 2>/dev/null ||
		{ echo "SKIP: no private mount namespace here (unshare -m)"; exit 77; }
	SEMD_FULLDISK_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
. "$top_srcdir/tests/lib.sh"
t_watchdog 60
unset SEMD_TEST_DURABLE

D=$T/disk
mkdir -p "$D" || exit 1
# The tmpfs goes before $T (its mount point could not be removed under it).
fulldisk_cleanup() {
	rc=$?
	for p in $PIDS_TO_KILL; do kill -KILL "$p" 2>/dev/null; done
	umount "$D" 2>/dev/null
	(exit "$rc")
	t_cleanup
}
trap fulldisk_cleanup EXIT
mount -t tmpfs -o size=12m semd-fulldisk "$D" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
# fill: the disk to its last byte; unfill: room again.
fill() { dd if=/dev/zero of="$D/fill" bs=64k >/dev/null 2>&1; [ "$(df -P "$D" | awk 'NR == 2 { print $4 }')" = 0 ]; }
unfill() { rm -f "$D/fill"; }

start_semd s --data-dir "$D/data" || exit 1
ok "a name created" "$SEMCTL" -s "$s_TCP" create m --limit 3
ok "the disk is full" fill
ok "full: a permit taken" "$SEMCTL" -s "$s_TCP" down m --timeout 5s
ok "full: a read answered" sh -c "'$SEMCTL' -s '$s_TCP' info m | grep -q 'available 2'"
ok "full: a name created" "$SEMCTL" -s "$s_TCP" create n --limit 1
ok "full: semd is up" kill -0 "$s_PID"
kill -TERM "$s_PID"
wait "$s_PID"
ok "full: semd stops cleanly" [ $? = 0 ]

"$SEMD" --data-dir "$D/data" --listen tcp:127.0.0.1:0 >"$T/full.log" 2>&1
rc=$?
ok "a start on the full disk fails with 74 (EX_IOERR, was $rc)" [ "$rc" = 74 ]
ok "... saying the disk is full" has "disk.*full" "$T/full.log"
ok "... no crash" sh -c "! grep -qi 'double free\|segmentation\|abort' '$T/full.log'"

unfill
start_semd s2 --data-dir "$D/data" || exit 1
ok "space again: it starts with m" sh -c "'$SEMCTL' -s '$s2_TCP' info m | grep -q 'limit 3'"
ok "... and n" "$SEMCTL" -s "$s2_TCP" info n
ok "... and writes" "$SEMCTL" -s "$s2_TCP" down n --timeout 5s
kill -TERM "$s2_PID"
wait "$s2_PID"
t_done
