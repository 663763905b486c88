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


t = threading.Thread(target=poll)
t.start()
time.sleep(1)				# the poll waits on the leader
os.kill(pids[lead - 1], signal.SIGKILL)
new = wait_leader(lead)
ok("a new leader after the kill -9 (%d, was %d)" % (new, lead), new != 0)
waiting = False
for _ in range(100):
    r = c.get(waiter)
    if r.status == 200 and r.json["state"] == "waiting":
        waiting = True
        break
    time.sleep(0.1)
ok("the waiter, resumed on the new leader, still waits first in line", waiting and
   r.json["places"][0]["position"] == 1, r)
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
ids = [int(e["id"]) for e in evs if "id" in e]
ok("the watch resumed on the new leader: the events after the last one seen, "
   "none twice", ids and ids[0] == int(last_id) + 1 and
   ids == sorted(set(ids)) and
   [e["event"] for e in evs][-2:] == ["release", "grant"], evs)
c.delete(g.get("href", "/v1/x"))
done()
