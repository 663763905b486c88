#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tests/daemon/fulldisk.sh - issue 35, item 3: a durable semd whose data
# directory's disk is full (a 20 MB tmpfs in a private mount namespace: an
# 8 MB ballast file before the start, so that the log's first segment of
# 8 MB fits and no second one does; a file filling the rest after it).
# While the log's segment still has room, writes and reads are served. Once
# the log has filled it (semd_probe --fill-log), writes are refused at once
# with UNAVAILABLE naming the disk - a down and a create, over the protocol
# (semctl exits 3, long before its --timeout) and over HTTP (503 with
# Retry-After) - while reads are answered, on new connections too (a guest
# without a session), and a holder's keepalives keep its session past its
# lease; the log, the metrics and /readyz say so. With room again the same
# daemon takes writes without a restart, the holder's run ends with its
# command's status, and a connection made while the disk was full (a
# guest) is told to connect again. Stopped on a full disk it stops cleanly; started on one
# it says the disk is full (exit status 74, EX_IOERR), and with room again
# it starts with every name it had. Never a crash.
# Needs root (unshare -m, mount: tests/mountns.sh); otherwise skipped (77).
MOUNTNS_TOOLS="curl"
. "$top_srcdir/tests/mountns.sh"
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
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
mount -t tmpfs -o size=20m semd-fulldisk "$D" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
# fill: the disk to its last byte; unfill: room again (the ballast too:
# the log needs 8 MB for its next segment).
fill() { dd if=/dev/zero of="$D/fill" bs=64k >/dev/null 2>&1; [ "$(df -P "$D" | awk 'NR == 2 { print $4 }')" = 0 ]; }
unfill() { rm -f "$D/fill" "$D/ballast"; }
# ms: a monotonic-enough clock in milliseconds.
ms() { echo $(( $(date +%s%N) / 1000000 )); }
# metric NAME: its value on s's metrics page.
metric() { curl -s -m 5 "http://$M/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
# refused OUT: OUT (semctl's stderr) says the disk is full.
refused() { has "disk is full" "$1"; }

dd if=/dev/zero of="$D/ballast" bs=1M count=8 >/dev/null 2>&1 || exit 1
start_semd s --data-dir "$D/data" --metrics-listen tcp:127.0.0.1:0 \
	--listen http:127.0.0.1:0 || exit 1
M=$(sed -n 's/^metrics://p' "$T/s.ready")
H=$(sed -n 's/^http://p' "$T/s.ready")
ok "a name created" "$SEMCTL" -s "$s_TCP" create m --limit 3
ok "... and one to hold" "$SEMCTL" -s "$s_TCP" create h --limit 1
# A holder with a short lease, its command running until told to end.
"$SEMCTL" -s "$s_TCP" run h --lease 2s -- sh -c \
	"until [ -e '$T/release' ]; do sleep 0.05; done" >"$T/run.out" 2>&1 &
RUN=$!
ok "a holder holds h" t_wait_for 10 sh -c "'$SEMCTL' -s '$s_TCP' info h | grep -q 'available 0'"

ok "the disk is full" fill
ok "full: a permit taken (room left in the log's segment)" "$SEMCTL" -s "$s_TCP" down m --timeout 5s
ok "full: a read answered" sh -c "'$SEMCTL' -s '$s_TCP' info m | grep -q 'available 2'"
ok "full: a name created" "$SEMCTL" -s "$s_TCP" create n --limit 1

# The log fills its segment: writes wait for the disk, then are refused.
"$PROBE" --fill-log "$s_TCP" h 8000 >"$T/fill.out" 2>&1
ok "the log's segment filled: writes refused with UNAVAILABLE naming the disk" \
	has "^fill: refused UNAVAILABLE: the data directory's disk is full" "$T/fill.out"
ok "... each refusal at once" has "^after: UNAVAILABLE=5 none=0" "$T/fill.out"
t0=$(ms)
"$SEMCTL" -s "$s_TCP" down m --timeout 20s >"$T/down.out" 2>&1
rc=$? t1=$(ms)
echo "# a down refused in $((t1 - t0)) ms (its --timeout 20s)"
ok "full: a down is refused, exit 3, not at its deadline (was $rc)" [ "$rc" = 3 ]
ok "... saying the disk is full" refused "$T/down.out"
"$SEMCTL" -s "$s_TCP" create z --limit 1 >"$T/create.out" 2>&1
rc=$?
ok "full: a create is refused, exit 3 (was $rc)" [ "$rc" = 3 ]
ok "... saying the disk is full" refused "$T/create.out"
ok "full: a read on a new connection answered" sh -c "'$SEMCTL' -s '$s_TCP' info m | grep -q 'available 2'"
# A connection made now, kept: a guest (no session), its write refused;
# once there is room, its next write tells it to connect again.
"$PROBE" "$s_TCP" hello "info m" "create g 1" "until $T/roomy" "create g 1" \
	expect-eof >"$T/guest.out" 2>&1 &
GUEST=$!
ok "full: a new connection's Hello answered without a session" \
	t_wait_for 10 has '^reply id=1 code=OK session=0 secret= lease=0' "$T/guest.out"
ok "... its read answered" t_wait_for 10 has '^reply id=2 code=OK name=m limit=3 available=2' "$T/guest.out"
ok "... its write refused" t_wait_for 10 has '^reply id=3 code=UNAVAILABLE.*disk is full' "$T/guest.out"
ok "full: a list answered" sh -c "'$SEMCTL' -s '$s_TCP' list | grep -q '^n'"
st=$(curl -s -m 5 -o "$T/http.out" -D "$T/http.head" -w '%{http_code}' -X POST "http://$H/v1/semaphores/m/permits")
ok "full: over HTTP a down is 503 (was $st)" [ "$st" = 503 ]
ok "... with Retry-After" grep -qi '^retry-after:' "$T/http.head"
ok "... a problem naming the disk" has '"error":"unavailable".*disk is full\|disk is full.*"error":"unavailable"' "$T/http.out"
st=$(curl -s -m 5 -o "$T/http2.out" -w '%{http_code}' "http://$H/v1/semaphores/m")
ok "full: over HTTP a read is 200 (was $st)" [ "$st" = 200 ]
ok "full: the log says so" has "disk is full" "$T/s.log"
ok "... and that writes are refused" has "writes are refused" "$T/s.log"
expect_eq "full: semd_log_disk_full" 1 "$(metric semd_log_disk_full)"
expect_eq "full: semd_log_writes_refused" 1 "$(metric semd_log_writes_refused)"
ok "full: /readyz not ready, saying why" sh -c "curl -s -m 5 'http://$M/readyz' | grep -q 'not ready: writes refused: the data directory.s disk is full'"
# Past the holder's lease: its keepalives are what keeps its session.
sleep 3
ok "full: the holder still holds h past its lease" sh -c "'$SEMCTL' -s '$s_TCP' info h | grep -q 'available 0'"
ok "full: the holder's run goes on" kill -0 "$RUN"
ok "full: semd is up" kill -0 "$s_PID"

unfill
ok "space again: writes taken without a restart" t_wait_for 10 "$SEMCTL" -s "$s_TCP" create w --limit 1
ok "... the log says so" has "writes are taken again" "$T/s.log"
expect_eq "... semd_log_writes_refused" 0 "$(metric semd_log_writes_refused)"
expect_eq "... semd_log_disk_full" 0 "$(metric semd_log_disk_full)"
ok "... /readyz ready" sh -c "curl -s -m 5 'http://$M/readyz' | grep -q '^ready: '"
touch "$T/roomy"
wait "$GUEST"
ok "... the guest's next write: connect again, and closed" \
	has '^reply id=4 code=UNAVAILABLE.*connect again' "$T/guest.out"
ok "... (closed)" has '^eof' "$T/guest.out"
ok "... the writes that waited in the log made nothing: m as it was" \
	sh -c "'$SEMCTL' -s '$s_TCP' info m | grep -q 'available 2'"
ok "... no name of the fill's tries left" sh -c "! '$SEMCTL' -s '$s_TCP' list | grep -q '^[b-p]ffff'"
touch "$T/release"
wait "$RUN"
rc=$?
ok "the holder's run ends with its command's status, its hold never lost (was $rc)" [ "$rc" = 0 ]
ok "h is free again" sh -c "'$SEMCTL' -s '$s_TCP' info h | grep -q 'available 1'"
ok "... and taken by the next" "$SEMCTL" -s "$s_TCP" down h --timeout 5s

# Full again: a stop is clean, a start refused saying why (filled again
# after the stop, which gave back the room its open segment did not use).
ok "the disk is full again" fill
kill -TERM "$s_PID"
wait "$s_PID"
ok "full: semd stops cleanly" [ $? = 0 ]
ok "... the disk is full" fill
"$SEMD" --data-dir "$D/data" --listen tcp:127.0.0.1:0 >"$T/full.log" 2>&1
rc=$?
ok "a start on the full disk fails with 74 (EX_IOERR, was $rc)" [ "$rc" = 74 ]
ok "... saying the disk is full" has "disk.*full" "$T/full.log"
ok "... no crash" sh -c "! grep -qi 'double free\|segmentation\|abort\|sanitizer' '$T/full.log' '$T/s.log'"

unfill
start_semd s2 --data-dir "$D/data" || exit 1
ok "space again: it starts with m" sh -c "'$SEMCTL' -s '$s2_TCP' info m | grep -q 'limit 3'"
ok "... and n and w" sh -c "'$SEMCTL' -s '$s2_TCP' info n && '$SEMCTL' -s '$s2_TCP' info w"
ok "... and writes" "$SEMCTL" -s "$s2_TCP" down n --timeout 5s
kill -TERM "$s2_PID"
wait "$s2_PID"
ok "... and stops cleanly" [ $? = 0 ]
t_done
