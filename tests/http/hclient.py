# SPDX-License-Identifier: BSD-2-Clause
"""tests/http/hclient.py - the HTTP tests' client: Python's http.client over
TCP or a UNIX socket, JSON in and out, Server-Sent Events, redirects across
a cluster's nodes, and a record of every answer (HTTP_SEEN, one JSON object
a line) for the OpenAPI check (tests/http/openapi-check.py). Also the checks'
"ok - ..." lines (as tests/tap.sh prints them)."""

import http.client
import json
import os
import socket
import sys
import time
import urllib.parse

passed = 0
failed = 0


def ok(desc, cond, why=""):
    """Count and print one check."""
    global passed, failed
    if cond:
        passed += 1
        print("ok - %s" % desc, flush=True)
    else:
        failed += 1
        print("not ok - %s%s" % (desc, (": " + str(why)) if why else ""), flush=True)
    return cond


def done():
    """The summary line; the exit status says whether every check passed."""
    print("%d passed, %d failed" % (passed, failed), flush=True)
    sys.exit(0 if failed == 0 else 1)


class UnixConnection(http.client.HTTPConnection):
    """http.client over a UNIX socket."""

    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Resp:
    """An answer: status, headers (lower-case names), body, its JSON."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        self.json = None
        ctype = headers.get("content-type", "")
        if "json" in ctype and body:
            try:
                self.json = json.loads(body)
            except ValueError:
                self.json = None

    def __repr__(self):
        return "<%d %s>" % (self.status, self.body[:300])


def seg(name):
    """A name as one path segment."""
    return urllib.parse.quote(name, safe="")


class Client:
    """A keep-alive connection to one address (http:HOST:PORT,
    http+unix:PATH, or HOST:PORT), or with follow=True to the leader of
    several (a comma list), following 307s."""

    def __init__(self, addr, token=None, follow=False, timeout=15, agent=None):
        self.addrs = list(dict.fromkeys(addr.split(",")))	# no twice
        self.pos = 0
        self.cur = self.addrs[0]
        self.token = token
        self.follow = follow
        self.timeout = timeout
        self.agent = agent
        self.c = None
        self.errors = []

    def _connect(self, addr):
        if addr.startswith("http+unix:"):
            return UnixConnection(addr[10:], self.timeout)
        if addr.startswith("http://"):
            addr = addr[7:]
        elif addr.startswith("http:"):
            addr = addr[5:]
        host, port = addr.rsplit(":", 1)
        return http.client.HTTPConnection(host, int(port), timeout=self.timeout)

    def close(self):
        if self.c is not None:
            self.c.close()
        self.c = None

    def raw(self, method, path, body=None, headers=None):
        """One request on the kept connection (a new one if it broke)."""
        hdrs = {}
        if self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        if self.agent:
            hdrs["User-Agent"] = self.agent
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        for attempt in range(2):
            if self.c is None:
                self.c = self._connect(self.cur)
            try:
                self.c.request(method, path, body=body, headers=hdrs)
                r = self.c.getresponse()
                data = r.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError,
                    ConnectionResetError):
                self.close()
                if attempt == 1:
                    raise
        resp = Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        if resp.headers.get("connection", "").lower() == "close":
            self.close()
        record(method, path, resp)
        return resp

    def req(self, method, path, body=None, headers=None, tries=100):
        """A request; with follow, 307s and 503s lead to the leader."""
        r = None
        for _ in range(tries):
            try:
                r = self.raw(method, path, body, headers)
            except OSError as e:
                if not self.follow:
                    raise
                self.errors.append("%s: %r" % (self.cur, e))
                self._next()
                time.sleep(0.1)
                continue
            if not self.follow or r.status not in (307, 503):
                return r
            loc = r.headers.get("location")
            if r.status == 307 and loc:
                u = urllib.parse.urlsplit(loc)
                self.close()
                self.cur = "%s:%d" % (u.hostname, u.port)
            else:
                self._next()
                time.sleep(0.1)
        if r is None:
            raise OSError("no node answered: %s" % self.errors[-5:])
        return r

    def _next(self):
        """The next address of the list, round and round."""
        self.close()
        self.pos = (self.pos + 1) % len(self.addrs)
        self.cur = self.addrs[self.pos]

    def get(self, path, **kw):
        return self.req("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.req("POST", path, body, **kw)

    def put(self, path, body=None, **kw):
        return self.req("PUT", path, body, **kw)

    def delete(self, path, **kw):
        return self.req("DELETE", path, **kw)

    def events(self, path, want, timeout=10, headers=None):
        """Read Server-Sent Events of GET path on a connection of its own
        until want(events) is true or timeout: the events, each a dict
        (id, event, data as JSON), and the HTTP answer's status."""
        hdrs = {"Accept": "text/event-stream"}
        if self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        hdrs.update(headers or {})
        for _ in range(100):
            try:
                c = self._connect(self.cur)
                c.request("GET", path, headers=hdrs)
                r = c.getresponse()
            except OSError:
                if not self.follow:
                    raise
                self._next()
                time.sleep(0.1)
                continue
            if not self.follow or r.status not in (307, 503):
                break
            loc = r.headers.get("location") if r.status == 307 else None
            r.read()
            c.close()
            if loc:
                u = urllib.parse.urlsplit(loc)
                self.cur = "%s:%d" % (u.hostname, u.port)
            else:
                self._next()
                time.sleep(0.1)
        evs = []
        if r.status != 200:
            resp = Resp(r.status, {k.lower(): v for k, v in r.getheaders()},
                        r.read())
            record("GET", path, resp)
            c.close()
            return evs, resp
        record("GET", path, Resp(200, {"content-type": r.getheader(
            "content-type", "")}, b""))
        end = time.time() + timeout
        cur = {}
        while time.time() < end and not want(evs):
            c.sock.settimeout(max(end - time.time(), 0.01))
            try:
                line = r.readline()	# through the chunked framing
            except (socket.timeout, TimeoutError):
                break
            if not line:
                break
            line = line.decode().rstrip("\n")
            if line == "":
                if "data" in cur:
                    cur["data"] = json.loads(cur["data"])
                    evs.append(cur)
                cur = {}
            elif line.startswith(":"):
                continue
            else:
                k, _, v = line.partition(": ")
                cur[k] = v
        c.close()
        return evs, r


def record(method, path, resp):
    """Append an answer to $HTTP_SEEN (for the OpenAPI check)."""
    seen = os.environ.get("HTTP_SEEN")
    if not seen:
        return
    body = None
    if resp.json is not None:
        body = resp.json
    with open(seen, "a") as f:
        f.write(json.dumps({"method": method, "path": path.split("?")[0],
                            "status": resp.status,
                            "type": resp.headers.get("content-type", ""),
                            "body": body}) + "\n")


def raw_socket(addr):
    """A plain socket to an HTTP address, for hostile and half-made requests."""
    if addr.startswith("http+unix:"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(addr[10:])
        return s
    host, port = addr[5:].rsplit(":", 1) if addr.startswith("http:") else \
        addr.rsplit(":", 1)
    return socket.create_connection((host, int(port)))
