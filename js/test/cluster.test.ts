// SPDX-License-Identifier: BSD-2-Clause
// A three-node cluster: a client given a follower first is redirected to
// the leader; then the leader is killed (SIGKILL) under a held permit, a
// waiting acquire and a watch, and all three ride out the failover: the
// permit stays held (renewed on the new leader), the waiter keeps its place
// and is granted by the release, the watch goes on without a gap.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Client, type ClusterEvent, type WatchEvent } from "semclient";
import { Cluster, waitFor } from "./daemon.js";

let cl: Cluster;

before(async () => {
  cl = await Cluster.start("cluster");
});

after(async () => {
  await cl.stop();
});

// The leader's node id once it serves and every live node of urls names
// it (0: not yet): the leader has applied all of its log, its first entry
// of the term included. (Requests made while a leader is not yet serving
// can wait for ever on the daemon this was written against: the report.)
async function leaderId(urls: string[]): Promise<number> {
  const seen: { leader: number; serving: boolean; self: number }[] = [];
  for (const u of urls) {
    const s = await new Client({ url: u, failoverMs: 500, requestTimeoutMs: 2000 }).cluster();
    seen.push({
      leader: s.leader_id, self: s.node_id,
      serving: s.state === "leader" && s.applied_index === s.last_index && s.commit_index === s.last_index,
    });
  }
  const l = seen[0]!.leader;
  if (l === 0 || !seen.every((x) => x.leader === l)) return 0;
  return seen.some((x) => x.self === l && x.serving) ? l : 0;
}

test("redirects to the leader; a held permit, a waiter and a watch ride out the leader's kill", { timeout: 60000 }, async () => {
  let leader = 0;
  assert.ok(await waitFor(async () => (leader = await leaderId(cl.urls)) > 0, 15000), "a leader serves");
  const follower = leader % 3 + 1;
  const urls = [cl.urls[follower - 1]!, ...cl.urls.filter((_, i) => i !== follower - 1)];

  const c = new Client({ url: urls, lease: 15000 });
  const sem = c.semaphore("c/a", { limit: 1 });
  const holder = await sem.acquire();
  assert.equal(c.transport.base, cl.urls[leader - 1], "the follower's 307 named the leader");

  const events: WatchEvent[] = [];
  const clusters: ClusterEvent[] = [];
  const ctl = new AbortController();
  let ready = false;
  const reader = (async () => {
    try {
      for await (const ev of new Client({ url: urls }).watch({ name: "c/", prefix: true, signal: ctl.signal })) {
        if (ev.kind === "ready") ready = true;
        else if (ev.kind === "compacted") throw new Error("compacted: events were lost");
        else if (ev.kind === "cluster") clusters.push(ev);
        else events.push(ev);
      }
    } catch (e) {
      if (!ctl.signal.aborted) throw e;
    }
  })();
  try {
    assert.ok(await waitFor(() => ready), "the watch is ready");

    const c2 = new Client({ url: urls, lease: 15000 });
    const waiting = c2.semaphore("c/a").acquire({ signal: ctl.signal });
    assert.ok(await waitFor(async () => (await sem.info()).waiters.length === 1), "the second acquire waits");
    assert.ok(await waitFor(() => events.some((e) => e.kind === "wait")), "the watch saw it wait");

    await cl.nodes[leader - 1]!.stop("SIGKILL");
    const live = cl.urls.filter((_, i) => i !== leader - 1);
    assert.ok(await waitFor(async () => {
      const l = await leaderId(live);
      return l > 0 && l !== leader;
    }, 20000), "a new leader is elected");

    const info = await sem.info();
    assert.equal(info.holders.length, 1, "the permit is still held");
    assert.equal(info.holders[0]!.permit, holder.id);
    assert.equal(info.waiters.length, 1, "the waiter kept its place");
    assert.ok(holder.held && !holder.lost);
    assert.equal(await holder.release(), true);
    const q = await waiting;
    assert.ok(BigInt(q.token) > BigInt(holder.token));
    assert.equal(await q.release(), true);
    assert.ok(await waitFor(() => events.filter((e) => e.kind === "release").length === 2, 10000),
      "the watch saw both releases");
    ctl.abort();
    await reader;
    assert.deepEqual(events.map((e) => e.kind), ["wait", "release", "grant", "release"]);
    for (let i = 1; i < events.length; i++) {
      assert.ok(BigInt(events[i]!.revision) > BigInt(events[i - 1]!.revision), "revisions increase");
    }
    assert.equal(clusters.length, 0, "cluster events go to watches of every name, not of a prefix");
  } finally {
    ctl.abort(); // a failed check leaves no watch running
  }
});
