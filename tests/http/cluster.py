# SPDX-License-Identifier: BSD-2-Clause
"""tests/http/cluster.py NODES PIDS - HTTP on a three-node cluster (NODES:
http:HOST:PORT of nodes 1, 2, 3, comma-separated; PIDS: their pids, the
same order): a follower redirects to the leader (307, the same path on the
leader's http-nodes URL); a waiter long-polled on the leader rides out a
kill -9 of the leader - its client polls again through any node, the new
leader resumes its session in its place, and a release grants it; a watch
resumed on the new leader from its Last-Event-ID goes on without a gap."""

import os
import signal
import sys
import threading
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from hclient import Client, ok, done  # noqa: E402

nodes = sys.argv[1].split(",")
pids = [int(p) for p in sys.argv[2].split(",")]
everyone = ",".join(nodes)


def leader():
    """The node id every live node agrees leads (0: none yet)."""
    seen = set()
    for n in nodes:
        try:
            r = Client(n, timeout=2).get("/v1/server")
        except OSError:
            continue
        if r.status == 200:
            seen.add(r.json["leader_id"])
    return seen.pop() if len(seen) == 1 else 0


def wait_leader(not_this=0, secs=20):
    end = time.time() + secs
    while time.time() < end:
        lead = leader()
        if lead not in (0, not_this):
            return lead
        time.sleep(0.1)
    return 0


lead = wait_leader()
ok("a leader", lead != 0)
follower = nodes[lead % 3]		# another node
r = Client(follower).get("/v1/semaphores/x")
ok("a follower answers 307 to the leader's URL", r.status == 307 and
   r.headers["location"].endswith(nodes[lead - 1][5:] + "/v1/semaphores/x"), r)
r = Client(follower).get("/v1/cluster")
ok("the cluster status on a follower: its own view, with the URLs",
   r.status == 200 and r.json["leader_id"] == lead and
   all("url" in n for n in r.json["nodes"]), r)

c = Client(everyone, follow=True)
r = c.post("/v1/semaphores/fo/permits", {"limit": 1, "lease_ms": 60000})
ok("acquire through a redirect", r.status == 201, r)
held = r.json
r = c.post("/v1/semaphores/fo/permits", {"lease_ms": 60000},
           headers={"Prefer": "wait=0"})
ok("a waiter behind it", r.status == 202, r)
waiter = r.json["href"]
# Keyed acquires before the failover: a permit, and a waiter behind it.
kp = {"Idempotency-Key": "fail-1"}
kw = {"Idempotency-Key": "fail-2", "Prefer": "wait=0"}
rk1 = c.post("/v1/semaphores/fk/permits", {"limit": 1, "lease_ms": 60000},
             headers=kp)
rk2 = c.post("/v1/semaphores/fk/permits", {"lease_ms": 60000}, headers=kw)
ok("a keyed permit and a keyed waiter", rk1.status == 201 and
   rk2.status == 202, (rk1, rk2))
evs0, _ = Client(nodes[lead - 1]).events("/v1/watch?name=fo&from=1",
                                         lambda e: len(e) >= 3, 5)
last_id = [e["id"] for e in evs0 if "id" in e][-1]

# The long-poll, through whatever node answers, until granted.
result = {}


def poll():
    b = Client(nodes[lead - 1] + "," + everyone, follow=True)
    end = time.time() + 40
    polls = 0
    while time.time() < end:
        try:
            r = b.get(waiter, headers={"Prefer": "wait=5"})
        except OSError as e:
            result.setdefault("errors", []).append(str(e)[:300])
            b._next()
            time.sleep(0.1)
            continue
        polls += 1
        result["last"] = r
        result.setdefault("states", []).append((b.cur, r.status,
                                                r.json and r.json.get("state")))
        if r.status != 200 or r.json["state"] == "granted":
            break
    result["polls"] = polls


# Acquires sent to the survivors while they elect a new leader, each key
# used three times: every one is answered within its deadline, and none is
# a redirect of a node to itself (an elected node that does not serve yet
# answers 503 with Retry-After).
probe = []
probe_stop = threading.Event()


def election_probe(node):
    k = 0
    while not probe_stop.is_set() and k < 600:
        t0 = time.time()
        try:
            r = Client(node, timeout=15).post(
                "/v1/semaphores/probe/permits", {"limit": 100, "lease_ms": 5000},
                headers={"Idempotency-Key": "p-%s-%d" % (node, k // 3)})
            probe.append((node, r.status, time.time() - t0,
                          r.headers.get("location", "")))
        except OSError as e:
            probe.append((node, "error " + str(e)[:80], time.time() - t0, ""))
        k += 1
        time.sleep(0.02)


t = threading.Thread(target=poll)
t.start()
time.sleep(1)				# the poll waits on the leader
survivors = [n for i, n in enumerate(nodes) if i != lead - 1]
probes = [threading.Thread(target=election_probe, args=(n,)) for n in survivors]
os.kill(pids[lead - 1], signal.SIGKILL)
for p in probes:
    p.start()
new = wait_leader(lead)
time.sleep(0.5)
probe_stop.set()
for p in probes:
    p.join(30)
ok("a new leader after the kill -9 (%d, was %d)" % (new, lead), new != 0)
late = [x for x in probe if not isinstance(x[1], int) or x[2] > 10]
self_307 = [x for x in probe if x[1] == 307 and
            x[3].startswith("http://" + x[0][5:] + "/")]
ok("acquires during the election (%d, keys retried): each answered in time"
   % len(probe), probe and not late, late[:5])
ok("... and no node redirected one to itself", not self_307, self_307[:5])
waiting = False
for _ in range(100):
    r = c.get(waiter)
    if r.status == 200 and r.json["state"] == "waiting":
        waiting = True
        break
    time.sleep(0.1)
ok("the waiter, resumed on the new leader, still waits first in line", waiting and
   r.json["places"][0]["position"] == 1, r)
# The same acquires again, on the new leader: the keys are in the
# replicated state with what they made, so nothing new is made.
r1 = c.post("/v1/semaphores/fk/permits", {"limit": 1, "lease_ms": 60000},
            headers=kp)
ok("after the failover a keyed retry gets the same permit",
   r1.status == 201 and r1.json["permit"] == rk1.json["permit"] and
   r1.json["token"] == rk1.json["token"], (r1, rk1))
r2 = c.post("/v1/semaphores/fk/permits", {"lease_ms": 60000}, headers=kw)
ok("... and the same waiter", r2.status == 202 and
   r2.json["id"] == rk2.json["id"], (r2, rk2))
r = c.get("/v1/semaphores/fk")
ok("... so no permit or waiter was made twice", r.status == 200 and
   r.json["holders_total"] == 1 and r.json["waiters_total"] == 1, r)
c.delete("/v1/semaphores/fk?force=true")
time.sleep(0.5)
r = c.delete(held["href"])
ok("the holder releases through the new leader", r.status == 204, r)
t.join(45)
r = result.get("last")
ok("the long-poll rode out the failover and was granted (%s, %s)" %
   (result.get("states"), result.get("errors")), r is not None and r.status == 200 and
   r.json["state"] == "granted", result)
g = r.json["grants"][0] if r is not None and r.status == 200 and \
    r.json["state"] == "granted" else {}
ok("its token is after the first holder's",
   int(g.get("token", 0)) > int(held["token"]), g)
r = c.get("/v1/semaphores/fo")
ok("the daemon holds it for it", r.status == 200 and
   [h["permit"] for h in r.json["holders"]] == [g.get("permit")], r)
evs, _ = Client(everyone, follow=True).events(
    "/v1/watch?name=fo", lambda e: any(x["event"] == "grant" and
                                       x["data"].get("permit") == g.get("permit")
                                       for x in e), 10,
    headers={"Last-Event-ID": last_id})
ids = [int(e["id"]) for e in evs if "id" in e and e["event"] != "ready"]
full, _ = Client(everyone, follow=True).events(
    "/v1/watch?name=fo&from=0", lambda e: any(x["event"] == "grant" and
                                              x["data"].get("permit") == g.get("permit")
                                              for x in e), 10)
after = [int(e["id"]) for e in full if e["event"] != "ready" and
         int(e["id"]) > int(last_id)]
ok("the watch resumed on the new leader: the events after the last one seen, "
   "none twice, none lost", ids and ids == after and
   [e["event"] for e in evs][-2:] == ["release", "grant"], (evs, after))
c.delete(g.get("href", "/v1/x"))
done()
