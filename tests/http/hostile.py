# SPDX-License-Identifier: BSD-2-Clause
"""tests/http/hostile.py ADDR TOKEN UNIX - hostile input and hostile clients
against one daemon (http-request-timeout 2s, max-output 64 KiB, a token for
cn:ci): each gets a clear 4xx or is cut off, and a well-behaved client beside
them is served all along."""

import json
import os
import resource
import socket
import sys
import threading
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from hclient import Client, ok, done, raw_socket  # noqa: E402

addr, token, unix = sys.argv[1], sys.argv[2], sys.argv[3]
a = Client(addr)
adm = Client(unix)


def raw(data, wait=3):
    """Send raw bytes on a new connection; the status of the answer (0:
    none, the connection closed), and the answer."""
    s = raw_socket(addr)
    s.settimeout(wait)
    s.sendall(data)
    got = b""
    try:
        while b"\r\n\r\n" not in got:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError:
        pass
    s.close()
    try:
        return int(got.split(b" ", 2)[1]), got
    except (IndexError, ValueError):
        return 0, got


def problem(r, status, error="invalid_argument"):
    return r.status == status and r.json is not None and \
        r.json.get("error") == error and \
        r.headers.get("content-type") == "application/problem+json"


# --- bodies ---------------------------------------------------------------------
P = "/v1/semaphores/h/permits"
r = a.post(P, b'{"n": 1,')
ok("broken JSON: 400 with where", problem(r, 400) and "JSON" in r.json["detail"], r)
r = a.post(P, b'[1, 2]')
ok("not an object: 400", problem(r, 400), r)
r = a.post(P, {"n": "one"})
ok("a member of the wrong type: 400 naming it", problem(r, 400) and
   "n:" in r.json["detail"], r)
r = a.post(P, {"n": 1, "colour": "red"})
ok("an unknown member: 400 naming it", problem(r, 400) and "colour" in
   r.json["detail"], r)
r = a.post(P, b'{"n": 1, "n": 2}')
ok("a member twice: 400", problem(r, 400), r)
r = a.post(P, b'{"client": "a\\u0000b"}')
ok("a NUL in a string: 400", problem(r, 400), r)
r = a.post(P, {"n": -1})
ok("a negative count: 400", problem(r, 400), r)
r = a.post(P, {"n": 2 ** 70})
ok("a number too big: 400", problem(r, 400), r)
r = a.post(P, {"priority": 99})
ok("a priority out of range: 400", problem(r, 400), r)
r = a.post(P, {"client": "x" * 300})
ok("a string too long: 400", problem(r, 400), r)
deep = "[" * 50 + "]" * 50
r = a.post(P, ('{"client": %s}' % deep).encode())
ok("nested deep: 400", problem(r, 400), r)
r = a.post("/v1/permits", {"wants": [{"name": "x"}] * 17})
ok("too many names: 400", problem(r, 400), r)
r = a.post("/v1/permits", {"wants": [{"name": "x"}, {"name": "x"}]})
ok("a name twice: 400", problem(r, 400), r)
r = a.put("/v1/semaphores/h", {"mode": "chaotic"})
ok("an unknown mode: 400", problem(r, 400), r)
r = a.req("GET", "/v1/stats", body=b'{"a":1}')
ok("a body on a GET: 400", problem(r, 400), r)
r = a.post(P, b"x" * 70000)
ok("a body over http-max-body: 413", r.status == 413, r)
a.close()
st, _ = raw(b"GET /v1/stats HTTP/1.1\r\nHost: x\r\nX-Big: " + b"y" * 20000 +
            b"\r\n\r\n")
ok("headers over http-max-header: refused (4xx) or cut", st == 0 or
   400 <= st < 500, st)

# --- paths and methods -------------------------------------------------------
r = a.get("/v2/stats")
ok("no such path: 404 problem", problem(r, 404, "not_found"), r)
r = a.get("/v1/semaphores/a%00b")
ok("a NUL in a name: 404", r.status == 404, r)
r = a.get("/v1/semaphores/" + "n" * 300)
ok("a name too long: 400 from the state", problem(r, 400), r)
r = a.get("/v1/semaphores/%01ctl")
ok("a control character in a name: 400", problem(r, 400), r)
r = a.req("PATCH", "/v1/semaphores/h")
ok("a method the resource has not: 405 and Allow", r.status == 405 and
   "PUT" in r.headers.get("allow", ""), r)
r = a.req("HEAD", "/v1/stats")
ok("HEAD: GET's answer without its body", r.status == 200 and r.body == b""
   and int(r.headers.get("content-length", "0")) > 0, r)
r = a.get("/v1/stats")
ok("... and the connection goes on", r.status == 200 and r.json is not None, r)


def two_answers(first):
    """first, then a GET /v1/server, pipelined on one connection: the two
    answers as (status, body) each, read by their Content-Length (HEAD's
    answer has none to read)."""
    s = raw_socket(addr)
    s.settimeout(3)
    s.sendall(first + b"GET /v1/server HTTP/1.1\r\nHost: x\r\n\r\n")
    got, out = b"", []
    try:
        while len(out) < 2:
            while b"\r\n\r\n" not in got:
                b = s.recv(65536)
                if not b:
                    raise OSError("closed")
                got += b
            head, got = got.split(b"\r\n\r\n", 1)
            n = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    n = int(v)
            if not out and first.startswith(b"HEAD"):
                n = 0
            while len(got) < n:
                b = s.recv(65536)
                if not b:
                    raise OSError("closed")
                got += b
            out.append((int(head.split(b" ")[1]), got[:n]))
            got = got[n:]
    except (OSError, ValueError, IndexError):
        pass
    s.close()
    return out, got


out, rest = two_answers(b"HEAD /v1/semaphores/h/permits HTTP/1.1\r\nHost: x\r\n\r\n")
ok("HEAD where there is no GET: 405 without a body, and the next answer "
   "is whole on the same connection", len(out) == 2 and out[0] == (405, b"")
   and out[1][0] == 200 and b'"server"' in out[1][1] and rest == b"", (out, rest))
out, rest = two_answers(b"HEAD /v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n")
ok("HEAD of no resource: 404 without a body, the next answered",
   len(out) == 2 and out[0] == (404, b"") and out[1][0] == 200, (out, rest))
st, _ = raw(b"BREW /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n")
ok("an unknown method: 501, as RFC 9110 asks", st == 501, st)
st, _ = raw(b"\x16\x03\x01\x00\xa5garbage\r\n\r\n")
ok("not HTTP at all: 4xx or cut", st == 0 or 400 <= st < 500, st)
r = a.get("/v1/waiters/AAAA")
ok("a forged waiter id: 404", problem(r, 404, "not_found"), r)
r = a.get("/v1/waiters/" + "A" * 60)
ok("a waiter id of the right size, wrong session: 404", r.status == 404, r)
r = a.get("/v1/semaphores/h/permits/xyz")
ok("a permit id that is no number: 404", r.status == 404, r)
r = a.get("/v1/semaphores/h/tokens/-1")
ok("a token that is no number: 400", problem(r, 400), r)
r = a.get("/v1/holds?limit=zillion")
ok("a bad query parameter: 400", problem(r, 400), r)
r = a.post(P, {}, headers={"Idempotency-Key": "bad\tkey"})
ok("a bad Idempotency-Key: 400", problem(r, 400), r)
r = a.post("/v1/semaphores/pw/permits", {"lease_ms": 5000},
           headers={"Prefer": "wait=99999"})
ok("Prefer: wait over http-max-wait is cut to it",
   r.headers.get("preference-applied") == "wait=60", r)

# --- who ----------------------------------------------------------------------
r = a.get("/v1/server", headers={"Authorization": "Bearer nope"})
ok("a token that matches no line: 401 and WWW-Authenticate", r.status == 401 and
   r.headers.get("www-authenticate", "").startswith("Bearer"), r)
t = Client(addr, token=token)
r = t.get("/v1/server")
ok("a token acts as its principal", r.status == 200 and
   r.json["principal"] == "cn:ci", r)
r = t.post("/v1/semaphores/tok/permits", {"limit": 1, "lease_ms": 20000},
           headers={"Prefer": "wait=0"})
r2 = a.post("/v1/semaphores/tok/permits", {"lease_ms": 20000},
            headers={"Prefer": "wait=0"})
ok("two principals: a permit and a waiter", r.status == 201 and
   r2.status == 202, (r, r2))
r3 = t.get(r2.json["href"])
ok("another principal's waiter: 404", r3.status == 404, r3)
r3 = a.delete(r.json["href"])
ok("another principal's permit: not released", r3.status == 409, r3)
t.delete(r.json["href"])
a.delete(r2.json["href"])
r = a.get("/v1/stats", headers={"Origin": "http://evil.example"})
ok("a browser's request from another origin: 403", problem(r, 403,
   "permission_denied"), r)
r = a.get("/v1/stats", headers={"Origin": "http://ok.example"})
ok("from an allowed origin: answered, and CORS said",
   r.status == 200 and
   r.headers.get("access-control-allow-origin") == "http://ok.example", r)
host = addr[5:] if addr.startswith("http:") else addr
r = a.get("/v1/stats", headers={"Origin": "http://" + host, "Host": host})
ok("from the daemon's own origin: answered", r.status == 200, r)
r = a.req("OPTIONS", "/v1/semaphores/x/permits",
          headers={"Origin": "http://ok.example",
                   "Access-Control-Request-Method": "POST"})
ok("a preflight: 204, methods and headers", r.status == 204 and
   "POST" in r.headers.get("access-control-allow-methods", "") and
   "Idempotency-Key" in r.headers.get("access-control-allow-headers", ""), r)

# --- slow clients -------------------------------------------------------------
slow = []
for _ in range(50):
    s = raw_socket(addr)
    s.sendall(b"POST /v1/semaphores/s/permits HTTP/1.1\r\nHost: x\r\n")
    slow.append(s)
t0 = time.time()
lat = []
stop = time.time() + 3.5
i = 0
while time.time() < stop:
    for s in slow:			# a byte every 0.2 s: never done
        try:
            s.send(b"X")
        except OSError:
            pass
    q0 = time.time()
    r = a.post("/v1/semaphores/n%d/permits" % (i % 4), {"lease_ms": 5000})
    a.delete(r.json["href"])
    lat.append(time.time() - q0)
    i += 1
    time.sleep(0.2)
cut = 0
for s in slow:
    s.settimeout(0.5)
    got = b""
    try:
        while True:		# a 408 (or nothing), then the end
            b = s.recv(4096)
            if not b:
                break
            got += b
        if got == b"" or got.startswith(b"HTTP/1.1 408 "):
            cut += 1
    except (ConnectionResetError, BrokenPipeError):
        cut += 1
    except OSError:
        pass
    s.close()
ok("slowloris: every trickling request is cut off within http-request-timeout",
   cut == 50, cut)
ok("... while another client is served all along (%d acquires, slowest %.0f ms)"
   % (len(lat), max(lat) * 1000), len(lat) >= 10 and max(lat) < 1.0, lat)

# A watcher that does not read is cut off at max-output; others go on.
s = raw_socket(addr)
s.sendall(b"GET /v1/watch?name=flood HTTP/1.1\r\nHost: x\r\n\r\n")
time.sleep(0.2)
a.put("/v1/semaphores/flood", {"limit": 1000})
who = {"lease_ms": 60000, "client": "c" * 255, "host": "h" * 255}
for i in range(3000):		# some 5 MB of events: more than the
    r = a.post("/v1/semaphores/flood/permits", who)	# sockets hold
    a.delete(r.json["href"])
drained = 0
closed = False
s.settimeout(10)
try:
    while True:
        b = s.recv(1 << 20)
        if not b:
            closed = True
            break
        drained += len(b)
except socket.timeout:
    closed = False
except OSError:
    closed = True
s.close()
ok("a watcher that does not read is cut off (it was sent %d bytes of "
   "some 5 MB)" % drained, closed and drained < 4.5 * 1024 * 1024, drained)
ok("... and the daemon goes on", a.get("/v1/stats").status == 200)

# --- ten thousand idle connections --------------------------------------------
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = int(os.environ.get("IDLE_CONNS", "10000"))
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, want + 200), hard))
idle = []
t0 = time.time()
try:
    for _ in range(want):
        s = raw_socket(addr)
        idle.append(s)
except OSError as e:
    print("# opened %d idle connections: %s" % (len(idle), e))
opened = time.time() - t0
a.close()
lat = []
for i in range(20):
    q0 = time.time()
    r = a.post("/v1/semaphores/idle%d/permits" % (i % 4), {"lease_ms": 5000})
    r2 = a.delete(r.json["href"])
    a.close()		# a new connection each time: past the cap too
    lat.append(time.time() - q0)
ok("%d idle connections (opened in %.1f s): a client is served, slowest %.0f ms"
   % (len(idle), opened, max(lat) * 1000), len(idle) >= want * 0.9 and
   r.status == 201 and r2.status == 204 and max(lat) < 2.0, lat)
for s in idle:
    s.close()
done()
