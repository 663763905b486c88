# SPDX-License-Identifier: BSD-2-Clause
"""tests/http/resources.py TCP UNIX MODE - every resource of /v1 through
Python's http.client, against one daemon (MODE memory or durable): TCP as
anonymous (the test's daemon lets anonymous do everything), the UNIX socket
as the test's own uid (root: an administrator)."""

import json
import socket
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from hclient import Client, ok, done, seg, raw_socket  # noqa: E402

tcp, unix, mode = sys.argv[1], sys.argv[2], sys.argv[3]
a = Client(tcp, agent="resources/1")
adm = Client(unix)


def name_path(n, rest=""):
    return "/v1/semaphores/" + seg(n) + rest


# --- the service ------------------------------------------------------------
r = a.get("/v1/openapi.json")
ok("openapi.json is served", r.status == 200 and r.json["openapi"] == "3.1.0", r)
r = a.get("/v1/server")
ok("server: anonymous over TCP", r.status == 200 and
   r.json["principal"] == "anonymous" and r.json["mode"] == mode, r)
r = adm.get("/v1/server")
ok("server: the peer's uid over a UNIX socket, an administrator",
   r.json["principal"].startswith("uid:") and r.json["admin"] is True, r)

# --- names ------------------------------------------------------------------
n = "jobs/a b"
r = a.put(name_path(n), {"limit": 2, "max_waiters": 10})
ok("create: 201 and where it is", r.status == 201 and
   r.headers["location"] == "/v1/semaphores/jobs%2Fa%20b", r)
r = a.put(name_path(n), {"limit": 2})
ok("create again: 409 exists, semctl's code", r.status == 409 and
   r.json["error"] == "exists" and r.json["code"] == -4 and r.json["exit"] == 6, r)
r = a.put(name_path(n), {"limit": 2, "if_not_exists": True})
ok("create if_not_exists: 200", r.status == 200, r)
r = a.get("/v1/semaphores?prefix=jobs%2F")
ok("list by prefix", r.status == 200 and [e["name"] for e in r.json["items"]] ==
   [n], r)
r = a.get(name_path(n))
ok("info", r.status == 200 and r.json["limit"] == 2 and r.json["holders"] == []
   and r.json["max_waiters"] == 10, r)
ok("set the limit", a.put(name_path(n, "/limit"), {"limit": 3}).status == 204)
ok("set a rate", a.put(name_path(n, "/rate"), {"rate": 1000, "burst": 50}).status
   == 204)
ok("set the queue bound", a.put(name_path(n, "/queue"), {"max_waiters": 4}).status
   == 204)
r = a.get(name_path(n))
ok("info shows them", r.json["limit"] == 3 and r.json["rate"] == 1000 and
   r.json["burst"] == 50 and r.json["max_waiters"] == 4, r)
ok("remove the rate", a.put(name_path(n, "/rate"), {"rate": 0}).status == 204)
r = a.put(name_path(n, "/limit"), {"limit": 0})
ok("limit 0: 400 invalid_argument", r.status == 400 and
   r.json["error"] == "invalid_argument", r)
r = a.put(name_path(n, "/limit"), {})
ok("limit missing: 400", r.status == 400, r)

# --- permits ---------------------------------------------------------------
r = a.post(name_path(n, "/permits"), {"lease_ms": 5000, "client": "job-7",
                                       "host": "ci-3", "pid": 4242})
ok("acquire: 201, the permit and where it is", r.status == 201 and
   r.json["n"] == 1 and r.json["lease_ms"] == 5000 and
   r.headers["location"] == r.json["href"], r)
p1, tok1 = r.json["permit"], r.json["token"]
r = a.get(r.json["href"])
ok("the permit: its holder as the acquire named it", r.status == 200 and
   r.json["token"] == tok1 and r.json["client"] == "job-7" and
   r.json["host"] == "ci-3" and r.json["pid"] == 4242 and
   r.json["detached"] is True and r.json["expires_ms"] > 0, r)
exp = r.json["expires_ms"]
time.sleep(0.05)
r = a.post(name_path(n, "/permits/%s/renew" % p1), {"lease_ms": 60000})
ok("renew: a later end", r.status == 200 and r.json["expires_ms"] > exp, r)
r = a.get(name_path(n, "/tokens/" + tok1))
ok("validate the token: current", r.status == 200 and r.json["valid"] is True, r)
r = a.post(name_path(n, "/permits"), {"n": 2, "lease_ms": 5000})
ok("acquire n=2: 201", r.status == 201 and r.json["n"] == 2, r)
p2 = r.json["permit"]
r = a.get("/v1/holds")
ok("holds: the principal's permits", r.status == 200 and
   sorted(h["permit"] for h in r.json["items"]) == sorted([p1, p2]) and
   r.json["total"] == 2, r)
ok("release", a.delete(name_path(n, "/permits/" + p1)).status == 204)
r = a.get(name_path(n, "/tokens/" + tok1))
ok("validate: no longer", r.json["valid"] is False, r)
r = a.get(name_path(n, "/permits/" + p1))
ok("a released permit: 404", r.status == 404 and r.json["error"] == "not_found", r)
r = a.delete(name_path(n, "/permits/" + p1))
ok("release again: 409 not_holder", r.status == 409 and
   r.json["error"] == "not_holder", r)
r = a.delete(name_path(n))
ok("delete a name held: refused", r.status >= 400, r)
ok("release the other", a.delete(name_path(n, "/permits/" + p2)).status == 204)

# --- waiting ----------------------------------------------------------------
q = "q"
r = a.post(name_path(q, "/permits"), {"limit": 1, "lease_ms": 20000})
ok("acquire with limit: the name made", r.status == 201, r)
pa = r.json["permit"]
r = a.post(name_path(q, "/permits"), {"lease_ms": 20000, "timeout_ms": 0})
ok("a try on a busy name: 409 would_block, exit 1", r.status == 409 and
   r.json["error"] == "would_block" and r.json["exit"] == 1, r)
t0 = time.time()
r = a.post(name_path(q, "/permits"), {"timeout_ms": 300},
           headers={"Prefer": "wait=3"})
ok("a deadline that passes while the POST waits: 409 timeout", r.status == 409 and
   r.json["error"] == "timeout" and time.time() - t0 < 2.5, r)
r = a.post(name_path(q, "/permits"), {"lease_ms": 20000},
           headers={"Prefer": "wait=0"})
ok("a busy name: 202 and the waiter, first in line", r.status == 202 and
   r.json["state"] == "waiting" and r.json["places"][0]["position"] == 1 and
   r.headers["location"] == r.json["href"], r)
wb = r.json["href"]
r = a.post(name_path(q, "/permits"), {"lease_ms": 20000},
           headers={"Prefer": "wait=1"})
ok("Prefer: wait=1 waits, then 202, second in line", r.status == 202 and
   r.json["places"][0]["position"] == 2 and
   r.headers.get("preference-applied") == "wait=1", r)
wc = r.json["href"]
t0 = time.time()
r = a.get(wb, headers={"Prefer": "wait=1"})
ok("long-poll a waiter: still waiting after 1 s", r.status == 200 and
   r.json["state"] == "waiting" and time.time() - t0 >= 0.9, r)
r = a.post(wb + "/renew")
ok("renew a waiter", r.status == 200 and r.json["state"] == "waiting", r)
r = adm.get(name_path(q))
ok("the queue in order, each waiter's place and class",
   [w["priority"] for w in r.json["waiters"]] == [0, 0] and
   r.json["waiters"][0]["since_ms"] <= r.json["waiters"][1]["since_ms"], r)
ok("release the holder", a.delete(name_path(q, "/permits/" + pa)).status == 204)
r = a.get(wb, headers={"Prefer": "wait=5"})
ok("the first waiter is granted: its permit", r.status == 200 and
   r.json["state"] == "granted" and len(r.json["grants"]) == 1 and
   "permit" in r.json["grants"][0], r)
pb = r.json["grants"][0]["permit"]
r = a.get(wc)
ok("the second moved up", r.json["state"] == "waiting" and
   r.json["places"][0]["position"] == 1, r)
ok("cancel it", a.delete(wc).status == 204)
r = a.get(wc)
ok("a cancelled waiter: 410 cancelled", r.status == 410 and
   r.json["error"] == "cancelled", r)
r = a.post(name_path(q, "/permits"), {"lease_ms": 20000},
           headers={"Prefer": "wait=0"})
wd = r.json["href"]
seq = adm.get(name_path(q)).json["waiters"][0]["seq"]
r = adm.delete(name_path(q, "/waiters/" + seq))
ok("an administrator cancels a waiter by its place", r.status == 204, r)
r = a.get(wd, headers={"Prefer": "wait=2"})
ok("that waiter hears it: 410 cancelled", r.status == 410 and
   r.json["error"] == "cancelled", r)
r = adm.delete(name_path(q, "/permits/" + pb) + "?force=true")
ok("an administrator force-releases a hold", r.status == 204, r)
r = a.get(name_path(q, "/permits/" + pb))
ok("it is gone", r.status == 404, r)

# --- waiters without a lease of their own go with their connection ---------
r = a.post(name_path("k", "/permits"), {"limit": 1, "lease_ms": 20000})
pk = r.json["permit"]
s = raw_socket(tcp)
s.sendall(b"POST /v1/semaphores/k/permits HTTP/1.1\r\nHost: x\r\n"
          b"Prefer: wait=30\r\nContent-Length: 0\r\n\r\n")
for _ in range(100):
    if adm.get(name_path("k")).json["waiters_total"] == 1:
        break
    time.sleep(0.05)
ok("a waiting POST is in line", adm.get(name_path("k")).json["waiters_total"] == 1)
s.close()
for _ in range(100):
    if adm.get(name_path("k")).json["waiters_total"] == 0:
        break
    time.sleep(0.05)
ok("its connection closes: the waiter that asked for no lease is gone",
   adm.get(name_path("k")).json["waiters_total"] == 0)
s = raw_socket(tcp)
body = b'{"lease_ms":20000}'
s.sendall(b"POST /v1/semaphores/k/permits HTTP/1.1\r\nHost: x\r\n"
          b"Prefer: wait=30\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
for _ in range(100):
    if adm.get(name_path("k")).json["waiters_total"] == 1:
        break
    time.sleep(0.05)
s.close()
time.sleep(0.3)
ok("with a lease of its own it stays", adm.get(name_path("k")).json["waiters_total"]
   == 1)
ok("release k", a.delete(name_path("k", "/permits/" + pk)).status == 204)
r = adm.get(name_path("k"))
ok("the leased waiter was granted meanwhile", r.json["holders_total"] == 1 and
   r.json["waiters_total"] == 0, r)
adm.delete(name_path("k") + "?force=true")

# --- Idempotency-Key ------------------------------------------------------
idem = {"Idempotency-Key": "acq-1"}
r1 = a.post(name_path("i", "/permits"), {"limit": 1, "lease_ms": 20000},
            headers=idem)
r2 = a.post(name_path("i", "/permits"), {"limit": 1, "lease_ms": 20000},
            headers=idem)
ok("a retried acquire: the same permit, not a second", r1.status == 201 and
   r2.status == 201 and r1.json["permit"] == r2.json["permit"] and
   adm.get(name_path("i")).json["holders_total"] == 1, (r1, r2))
r = a.post(name_path("i", "/permits"), {"limit": 1, "lease_ms": 9999},
           headers=idem)
ok("the key with another body: 422", r.status == 422, r)
idem2 = {"Idempotency-Key": "acq-2", "Prefer": "wait=0"}
r1 = a.post(name_path("i", "/permits"), {"lease_ms": 20000}, headers=idem2)
r2 = a.post(name_path("i", "/permits"), {"lease_ms": 20000}, headers=idem2)
ok("a retried acquire that waits: the same waiter", r1.status == 202 and
   r2.status == 202 and r1.json["id"] == r2.json["id"] and
   adm.get(name_path("i")).json["waiters_total"] == 1, (r1, r2))
adm.delete(name_path("i") + "?force=true")

# --- signal and rate mode, several names ----------------------------------
r = a.put(name_path("sig"), {"limit": 2, "mode": "signal", "initial": 0})
ok("create in signal mode", r.status == 201, r)
r = a.post(name_path("sig", "/up"), {"n": 1})
ok("up adds a permit", r.status == 200 and r.json["n"] == 1, r)
r = a.post(name_path("sig", "/permits"))
ok("a signal grant: 200, a token, nothing held", r.status == 200 and
   "permit" not in r.json and "token" in r.json, r)
r = a.put(name_path("rt"), {"rate": 100, "rate_period_ms": 1000, "mode": "rate"})
ok("create a rate", r.status == 201, r)
r = a.post(name_path("rt", "/permits"), {"n": 5})
ok("a rate grant: 200", r.status == 200 and r.json["n"] == 5, r)
r = a.post("/v1/permits", {"wants": [{"name": "m1", "limit": 1},
                                     {"name": "m2", "n": 2, "limit": 2}],
                           "lease_ms": 20000})
ok("several names at once: every permit", r.status == 200 and
   [g["name"] for g in r.json["grants"]] == ["m1", "m2"], r)
multi = r.json["grants"]
r = a.post("/v1/permits", {"wants": [{"name": "m2"}, {"name": "m3"}],
                           "lease_ms": 20000}, headers={"Prefer": "wait=0"})
ok("several names, one busy: 202 waiter with a place on each", r.status == 202 and
   len(r.json["places"]) == 2, r)
wm = r.json["href"]
for g in multi:
    a.delete(g["href"])
r = a.get(wm, headers={"Prefer": "wait=5"})
ok("... granted both once free", r.json["state"] == "granted" and
   len(r.json["grants"]) == 2, r)
for g in r.json["grants"]:
    a.delete(g["href"])

# --- stats, cluster, backup -------------------------------------------------
r = a.get("/v1/stats")
ok("stats: counters and histograms", r.status == 200 and
   r.json["counters"]["grants"] > 0 and "wait" in r.json["histograms"] and
   r.json["histograms"]["wait"]["count"] > 0, r)
r = a.get("/v1/cluster")
if mode == "memory":
    ok("cluster in memory: 400, not a cluster", r.status == 400, r)
else:
    ok("cluster of one voter: its status", r.status == 200 and
       r.json["state"] == "leader", r)
r = a.get("/v1/backup")
ok("backup as anonymous: 403", r.status == 403, r)
r = adm.get("/v1/backup")
ok("backup as an administrator: the file semctl backup writes",
   r.status == 200 and r.body[:8] == b"SEMDBKUP" and
   int(r.headers["content-length"]) == len(r.body) and
   r.headers["repr-digest"].startswith("sha-256=:"), r.status)
open(sys.argv[4], "wb").write(r.body)

# --- watch -------------------------------------------------------------------
evs, st = a.events("/v1/watch?name=w", lambda e: len(e) >= 1, 5)
ok("watch: the stream starts with ready", st.status == 200 and
   evs and evs[0]["event"] == "ready", evs)
start = evs[0].get("id", "0")
a.put(name_path("w"), {"limit": 1})
a.post(name_path("w", "/permits"), {"lease_ms": 5000})
r = adm.get(name_path("w"))
pw = r.json["holders"][0]["permit"]
a.delete(name_path("w", "/permits/" + pw))
evs, st = a.events("/v1/watch?name=w", lambda e: len(e) >= 4, 5,
                   headers={"Last-Event-ID": start})
kinds = [e["event"] for e in evs]
ok("resume after Last-Event-ID: ready, then what came after: create, grant, "
   "release", kinds == ["ready", "create", "grant", "release"], kinds)
ids = [int(e["id"]) for e in evs if "id" in e]
ok("the ids are the revisions, growing, the resumed ready has none",
   ids == sorted(ids) and len(ids) == 3 and
   all(e["data"]["revision"] == e["id"] for e in evs if e["event"] != "ready"),
   evs)
last = evs[3]["id"]
evs, st = a.events("/v1/watch?name=w", lambda e: len(e) >= 2, 3,
                   headers={"Last-Event-ID": last})
ok("resume after the last one: nothing again but ready",
   [e["event"] for e in evs] == ["ready"], evs)
evs, st = a.events("/v1/watch?name=w&from=1", lambda e: len(e) >= 4, 3)
ok("from=REV does the same by hand", [e["event"] for e in evs] ==
   ["ready", "create", "grant", "release"], evs)
got = []


def live(e):
    if len(e) == 1 and not got:
        got.append(1)
        a.delete(name_path("w"))
    return len(e) >= 2


evs, st = a.events("/v1/watch?name=w", live, 5)
ok("live events: the delete", [e["event"] for e in evs] == ["ready", "delete"],
   evs)
evs, st = a.events("/v1/watch?name=w&from=x", lambda e: True, 2)
ok("a bad revision: 400", st.status == 400, st)

# --- names, gone ------------------------------------------------------------
ok("delete", a.delete(name_path(n)).status == 204)
r = a.get(name_path(n))
ok("a deleted name: 404 not_found", r.status == 404 and
   r.json["error"] == "not_found", r)
for x in ("sig", "rt"):
    a.delete(name_path(x) + "?force=true")
done()
