// SPDX-License-Identifier: BSD-2-Clause
// The package against semd --data-dir restarted under it: a watch resumes
// after the last revision it saw (events made while it was away included,
// none twice), and a permit's background renewal rides out the restart.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { Client, type FetchLike, type WatchEvent, type WatchReady } from "semclient";
import { Daemon, delay, testDir, waitFor } from "./daemon.js";

let d: Daemon;

before(async () => {
  d = await new Daemon("durable", { dataDir: join(testDir("durable"), "data") }).start();
});

after(async () => {
  await d.stop();
});

test("watch resumes across a restart: the events made while away, then live ones, none twice", { timeout: 60000 }, async () => {
  // The watcher's fetch can be held shut, so that events are made while it
  // cannot reconnect (they must come from the daemon's history).
  let shut = false;
  const gated: FetchLike = async (url, init) => {
    for (let i = 0; shut && i < 1000; i++) await delay(20);
    return fetch(url, init);
  };
  const cw = new Client({ url: d.url, fetch: gated });
  const c = new Client({ url: d.url });
  const events: WatchEvent[] = [];
  const readies: WatchReady[] = [];
  const ctl = new AbortController();
  const reader = (async () => {
    try {
      for await (const ev of cw.watch({ name: "d/", prefix: true, signal: ctl.signal, maxBackoff: 200 })) {
        if (ev.kind === "ready") readies.push(ev);
        else if (ev.kind === "cluster") continue; // none here: a prefix's watch
        else if (ev.kind !== "compacted") events.push(ev);
        else throw new Error("compacted: events were lost");
      }
    } catch (e) {
      if (!ctl.signal.aborted) throw e;
    }
  })();
  try {
    assert.ok(await waitFor(() => readies.length === 1), "the watch is ready");
    await c.create("d/a", { limit: 1 });
    const p = await c.semaphore("d/a").acquire();
    await p.release();
    assert.ok(await waitFor(() => events.length === 3), "three events before the restart");

    shut = true;
    await d.restart();
    await c.create("d/b", { limit: 2 });
    const q = await c.semaphore("d/b").acquire();
    await q.release();
    shut = false;
    assert.ok(await waitFor(() => events.length >= 6, 15000), `the events made while away (${events.length})`);
    await c.create("d/c", { limit: 1 });
    assert.ok(await waitFor(() => events.some((e) => e.name === "d/c")), "a live event after them");
    ctl.abort();
    await reader;

    assert.deepEqual(events.map((e) => `${e.kind} ${e.name}`), [
      "create d/a", "grant d/a", "release d/a", "create d/b", "grant d/b", "release d/b", "create d/c",
    ]);
    for (let i = 1; i < events.length; i++) {
      assert.ok(BigInt(events[i]!.revision) > BigInt(events[i - 1]!.revision), "revisions increase");
    }
    assert.equal(readies.length, 2, "one reconnection");
    assert.equal(readies[1]!.resumed, true);
  } finally {
    ctl.abort(); // a failed check leaves no watch running
  }
});

test("a permit's background renewal rides out a restart of the durable daemon", { timeout: 60000 }, async () => {
  const c = new Client({ url: d.url });
  const sem = c.semaphore("d/hold", { limit: 1 });
  const p = await sem.acquire({ lease: 4000 });
  await d.restart();
  // Past the lease from the acquire: held only if renewed after the restart.
  await delay(4500);
  assert.ok(p.held && !p.lost, "not lost");
  const info = await sem.info();
  assert.equal(info.holders.length, 1);
  assert.equal(info.holders[0]!.permit, p.id);
  assert.equal(await p.release(), true);
});
