#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Probes answer while scrapers misbehave (issue 35). The metrics
# listener's slow clients trickle their requests, a byte every half
# second. First a few, under every cap: each is closed within
# metrics-timeout of its accept however often it sends a byte (a deadline,
# not an idle timer). Then 24 from four loopback addresses, more than
# metrics-max-connections (16) and than metrics-per-source-max-connections
# (4) from each, coming back whenever they are closed; meanwhile /healthz
# and /readyz are asked every quarter of a second from another address,
# and every probe is answered. Afterwards a scrape works.
. "$top_srcdir/tests/lib.sh"
t_watchdog 90

PY=${PYTHON:-python3}
if ! command -v "$PY" >/dev/null 2>&1; then
	echo "$TEST_NAME: SKIP (no python3)"
	exit 77
fi

# slow.py HOST:PORT SECONDS SOURCES EACH: EACH slow clients from each of
# SOURCES addresses (127.0.0.2 on) for SECONDS, coming back 0.2 s after
# they are closed, while the probes ask. Prints "probes N ok M" (M
# answered 200 with the right line within 3 s), "slow N longest S"
# (connections made, and the longest one lived), and the first failure.
cat >"$T/slow.py" <<'EOF'
import selectors, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
port, dur = int(port), float(sys.argv[2])
nsrc, each = int(sys.argv[3]), int(sys.argv[4])
sel = selectors.DefaultSelector()
REQ = b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 4000
SRC = ["127.0.0.%d" % i for i in range(2, 2 + nsrc)]
made, longest, probes, okp, first = 0, 0.0, 0, 0, ""
again = []

def slow(src):
    global made
    s = socket.socket()
    s.bind((src, 0))
    s.setblocking(False)
    s.connect_ex((host, port))
    made += 1
    sel.register(s, selectors.EVENT_READ, [src, time.monotonic(), 0])

def probe(path, want):
    global probes, okp, first
    probes += 1
    try:
        s = socket.create_connection((host, port), timeout=3,
                                     source_address=("127.0.0.1", 0))
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        with s, s.makefile("rb") as f:
            data = f.read()
        if data.startswith(b"HTTP/1.1 200 ") and want in data:
            okp += 1
        elif not first:
            first = "%s: %r" % (path.decode(), data[:80])
    except OSError as e:
        if not first:
            first = "%s: %s" % (path.decode(), e)

for i in range(nsrc * each):
    slow(SRC[i % nsrc])
t0 = time.monotonic()
next_drip = next_probe = t0 + 0.25
while time.monotonic() < t0 + dur:
    while again and again[0][0] <= time.monotonic():
        slow(again.pop(0)[1])
    for key, _ in sel.select(0.05):
        src, born, sent = key.data
        try:
            gone = key.fileobj.recv(4096) == b""
        except OSError:
            gone = True
        if gone:
            longest = max(longest, time.monotonic() - born)
            sel.unregister(key.fileobj)
            key.fileobj.close()
            again.append((time.monotonic() + 0.2, src))
    now = time.monotonic()
    if now >= next_drip:
        next_drip += 0.5
        for key in list(sel.get_map().values()):
            src, born, sent = key.data
            try:
                key.fileobj.send(REQ[sent:sent + 1])
                key.data[2] = sent + 1
            except OSError:
                pass
    if now >= next_probe:
        next_probe += 0.25
        probe(b"/healthz", b"ok: serving")
        probe(b"/readyz", b"ready: ")
for key in list(sel.get_map().values()):
    longest = max(longest, time.monotonic() - key.data[1])
print("probes %d ok %d" % (probes, okp))
print("slow %d longest %.1f" % (made, longest))
if first:
    print("first failure " + first)
EOF

start_semd p --metrics-listen tcp:127.0.0.1:0 --metrics-timeout 2s || exit 1
M=$(sed -n 's/^metrics://p' "$T/p.ready")

# A few slow ones: closed at the deadline.
timeout 30 "$PY" "$T/slow.py" "$M" 3.5 2 4 >"$T/few.out" 2>&1
sed 's/^/# /' "$T/few.out"
set -- $(sed -n 's/^slow //p' "$T/few.out")
ok "a few slow clients, a byte every 0.5 s: each closed within metrics-timeout 2s (+1 s; the longest ${3:-?} s)" \
	awk -v l="${3:-99}" 'BEGIN { exit !(l <= 3) }'
ok "... and they came back (${1:-0} connections)" test "${1:-0}" -gt 8

# A crowd of them: the probes are answered all the same.
timeout 30 "$PY" "$T/slow.py" "$M" 4.5 4 6 >"$T/crowd.out" 2>&1
sed 's/^/# /' "$T/crowd.out"
set -- $(sed -n 's/^probes //p' "$T/crowd.out")
ok "probes were made (${1:-0})" test "${1:-0}" -ge 24
expect_eq "every /healthz and /readyz answered 200" "${1:-x}" "${3:-y}"
ok "one address had no more than its 4 (logged)" \
	has 'metrics-per-source-max-connections 4 reached' "$T/p.log"
ok "all of them no more than 16 (logged)" \
	has 'metrics-max-connections 16 reached' "$T/p.log"
ok "a scrape works afterwards" sh -c \
	"'$PY' -c 'import urllib.request; urllib.request.urlopen(\"http://$M/metrics\", timeout=5).read()'"
t_done
