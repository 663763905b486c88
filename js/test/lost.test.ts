// SPDX-License-Identifier: BSD-2-Clause
// The holder learns first: a daemon that answers no renewal (stopped with
// SIGSTOP) leaves the permit lost on this side at the end of its lease, as
// counted from before the daemon could have started it, before the daemon
// can grant the permit to anyone else.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Client, HoldLostError } from "semclient";
import { Daemon, waitFor } from "./daemon.js";

let d: Daemon;

before(async () => {
  d = await new Daemon("lost").start();
});

after(async () => {
  d.signal("SIGCONT");
  await d.stop();
});

test("no renewal answered: lost at the lease's end, before the next holder is granted", { timeout: 60000 }, async () => {
  const c1 = new Client({ url: d.url });
  const c2 = new Client({ url: d.url });
  const p = await c1.semaphore("l/a", { limit: 1 }).acquire({ lease: 1500 });
  let lostAt = 0;
  p.addEventListener("lost", () => { lostAt = performance.now(); });
  let grantedAt = 0;
  const next = c2.semaphore("l/a").acquire({ lease: 10000 }).then((q) => {
    grantedAt = performance.now();
    return q;
  });
  assert.ok(await waitFor(async () => (await c1.info("l/a")).waiters.length === 1), "the second acquire waits");
  d.signal("SIGSTOP");
  try {
    assert.ok(await waitFor(() => lostAt > 0, 5000), "lost without an answer");
    assert.ok(p.signal.reason instanceof HoldLostError);
    assert.match(p.lostError!.message, /lease ran out/);
  } finally {
    d.signal("SIGCONT");
  }
  const q = await next;
  assert.ok(grantedAt > lostAt, "the holder learnt first");
  assert.ok(BigInt(q.token) > BigInt(p.token));
  assert.equal(await p.release(), false);
  assert.equal(await q.release(), true);
});
