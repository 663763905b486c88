#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Hostile frames: garbage, truncated, zero-length, oversized, undecodable,
# unknown operations, requests split into single bytes. Each bad client gets
# a clear error or a closed connection; a good client keeps its permit and
# keeps being served throughout.
. "$top_srcdir/tests/lib.sh"
t_watchdog 120
start_semd d || exit 1
A=$d_UNIX

$PROBE "$A" hello "create fr 2" "down fr" "sleep 1500" ping "info fr" "up fr" "info fr" \
	>"$T/good.out" 2>&1 &
good=$!
t_wait_for 5 has '^reply id=3 code=OK permit=' "$T/good.out"

$PROBE "$A" "raw deadbeefdeadbeef" expect-eof >"$T/garbage.out" 2>&1
ok "garbage: PROTOCOL_ERROR (id 0)" has '^reply id=0 code=PROTOCOL_ERROR msg=.*max-frame' "$T/garbage.out"
ok "garbage: connection closed" has '^eof' "$T/garbage.out"

$PROBE "$A" "raw 00100000" expect-eof >"$T/big.out" 2>&1
ok "oversized: PROTOCOL_ERROR naming the size" has 'code=PROTOCOL_ERROR msg="frame of 1048576 bytes is over max-frame 65536"' "$T/big.out"
ok "oversized: connection closed" has '^eof' "$T/big.out"

$PROBE "$A" hello "raw 0000000108" expect-eof >"$T/trunc.out" 2>&1
ok "truncated message: PROTOCOL_ERROR" has '^reply id=0 code=PROTOCOL_ERROR msg=.*undecodable' "$T/trunc.out"
ok "truncated message: connection closed" has '^eof' "$T/trunc.out"

# A frame that never completes: the client just goes away.
$PROBE "$A" hello "raw 0000001008" >"$T/half.out" 2>&1
ok "half a frame then close: nothing breaks" has '^reply id=1 code=OK' "$T/half.out"

$PROBE "$A" "raw 00000000" expect-eof >"$T/zero.out" 2>&1
ok "zero-length frame before hello: PROTOCOL_ERROR and close" has 'code=PROTOCOL_ERROR msg=.*hello' "$T/zero.out"
$PROBE "$A" hello "raw 00000000" "read" ping >"$T/zero2.out" 2>&1
ok "zero-length frame after hello: INVALID_ARGUMENT" has '^reply id=0 code=INVALID_ARGUMENT' "$T/zero2.out"
ok "zero-length frame after hello: connection still served" has 'code=OK pong' "$T/zero2.out"

$PROBE "$A" hello "raw 0000000508059a0600" "wait 5" ping >"$T/unknown.out" 2>&1
ok "unknown operation: INVALID_ARGUMENT" has '^reply id=5 code=INVALID_ARGUMENT' "$T/unknown.out"
ok "unknown operation: connection still served" has 'code=OK pong' "$T/unknown.out"

$PROBE "$A" slow hello "down split timeout=0" "info split" >"$T/slow.out" 2>&1
ok "requests split into 1-byte writes are served" has '^reply id=3 code=OK name=split' "$T/slow.out"

# A client that says nothing is dropped after the handshake timeout.
start_semd h --handshake-timeout 300ms || exit 1
$PROBE "$h_UNIX" "sleep 1" expect-eof >"$T/silent.out" 2>&1
ok "silent client: told and closed after the handshake timeout" has 'code=PROTOCOL_ERROR msg=.*handshake' "$T/silent.out"

# Idle clients are closed when an idle timeout is configured. (A ping right
# after the hello: a loaded machine may pause the probe, not a second.)
start_semd i --idle-timeout 1s || exit 1
$PROBE "$i_UNIX" hello ping expect-eof >"$T/idle.out" 2>&1
ok "idle timeout: served while active" has 'code=OK pong' "$T/idle.out"
ok "idle timeout: closed when idle" has '^eof' "$T/idle.out"

# Over max-connections a client is closed at once, with a log line.
start_semd m --max-connections 2 --log-level debug || exit 1
$PROBE "$m_UNIX" hello "until $T/m.go" >/dev/null 2>&1 &
m1=$!
$PROBE "$m_UNIX" hello "until $T/m.go" >/dev/null 2>&1 &
m2=$!
ok "max-connections: two clients connected" t_wait_for 5 \
	eval '[ "$(grep -c "connected as" "$T/m.log")" -ge 2 ]'
$PROBE "$m_UNIX" hello >"$T/m3.out" 2>&1
ok "max-connections: third client refused" has '^eof\|^write failed' "$T/m3.out"
ok "max-connections: logged" has 'max-connections 2 reached' "$T/m.log"
touch "$T/m.go"
kill "$m1" "$m2" 2>/dev/null
wait "$m1" "$m2" 2>/dev/null

# Pipelining thousands of requests without reading: cut off, others fine.
start_semd o --max-output 65536 || exit 1
python3 - "$T/o.sock" <<'PY' >"$T/flood.out" 2>&1 &
import socket, sys, struct, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
hello = bytes([0x08, 0x01, 0x12, 0x02, 0x08, 0x01])   # id 1, hello{version 1}
ping = bytes([0x08, 0x02, 0x5a, 0x00])                  # id 2, ping{}
out = struct.pack(">I", len(hello)) + hello + (struct.pack(">I", len(ping)) + ping) * 200000
try:
    s.sendall(out)
    print("sent all")
except OSError as e:
    print("cut off:", e)
time.sleep(1)
PY
flood=$!
$PROBE "$d_UNIX" hello ping >/dev/null
wait "$flood"
ok "flooding client that does not read is dropped" t_wait_for 5 grep -q 'does not read its replies' "$T/o.log"
$PROBE "$o_UNIX" hello ping >"$T/o2.out" 2>&1
ok "others still served after the flood" has 'code=OK pong' "$T/o2.out"

wait "$good"
ok "good client: served throughout" has 'code=OK pong' "$T/good.out"
ok "good client: its permit was never lost" has "^reply id=5 code=OK name=fr limit=2 available=1 .*holders=1" "$T/good.out"
ok "good client: up" has '^reply id=6 code=OK released=1' "$T/good.out"
ok "good client: all permits back" has '^reply id=7 code=OK name=fr limit=2 available=2 .*holders=0' "$T/good.out"
t_done
