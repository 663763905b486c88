// SPDX-License-Identifier: BSD-2-Clause
// The package against a real in-memory semd over HTTP: permits, await using,
// withPermit, FIFO across tasks, abort and timeout leaving no waiter,
// renewal, a hold lost by force, typed errors, rate mode, watch.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import {
  Client, ExistsError, HoldLostError, InvalidArgumentError, NotFoundError, SemdError, TimeoutError,
  WouldBlockError, type Permit, type Semaphore, type WatchEvent,
} from "semclient";
import { Daemon, delay, waitFor } from "./daemon.js";

let d: Daemon;
let c: Client;

before(async () => {
  d = await new Daemon("memory").start();
  c = new Client({ url: d.url });
});

after(async () => {
  await d.stop();
});

// A new name of this limit (names made by an acquire go when unused).
async function fresh(name: string, limit: number): Promise<Semaphore> {
  await c.create(name, { limit });
  return c.semaphore(name);
}

// The number of waiters the daemon shows for name.
async function waiters(name: string): Promise<number> {
  return (await c.info(name)).waiters.length;
}

test("acquire: a permit with an id and a token, held on the daemon until released", { timeout: 60000 }, async () => {
  const sem = await fresh("m/basic", 2);
  const p = await sem.acquire();
  assert.match(p.token, /^[0-9]+$/);
  assert.ok(p.id !== undefined);
  assert.equal(p.n, 1);
  assert.ok(p.held && !p.lost && !p.signal.aborted);
  let info = await sem.info();
  assert.equal(info.limit, 2);
  assert.equal(info.available, 1);
  assert.equal(info.holders.length, 1);
  assert.equal(info.holders[0]!.permit, p.id);
  assert.equal(info.holders[0]!.token, p.token);
  assert.match(info.holders[0]!.client ?? "", /^semclient-js/);
  assert.equal(await sem.validate(p.token), true);
  assert.equal(await p.release(), true, "the first release gives it back");
  assert.equal(await p.release(), false, "a second one does nothing");
  info = await sem.info();
  assert.equal(info.holders.length, 0);
  assert.equal(info.available, 2);
  assert.equal(await sem.validate(p.token), false);
  const p2 = await sem.acquire({ n: 2 });
  assert.equal(p2.n, 2);
  assert.ok(BigInt(p2.token) > BigInt(p.token), "tokens increase");
  await p2.release();
});

test("await using gives the permit back when the block ends", { timeout: 60000 }, async () => {
  const sem = await fresh("m/using", 1);
  {
    await using p = await sem.acquire();
    assert.ok(p.held);
    assert.equal((await sem.info()).holders.length, 1);
  }
  assert.equal((await sem.info()).holders.length, 0);
  // and when it throws
  await assert.rejects(async () => {
    await using p = await sem.acquire();
    assert.ok(p.held);
    throw new Error("boom");
  }, /boom/);
  assert.equal((await sem.info()).holders.length, 0);
});

test("withPermit gives the permit back however fn ends", { timeout: 60000 }, async () => {
  const sem = await fresh("m/with", 1);
  const v = await sem.withPermit(async (p) => {
    assert.ok(p.held);
    return 42;
  });
  assert.equal(v, 42);
  assert.equal((await sem.info()).holders.length, 0);
  const boom = new Error("boom");
  await assert.rejects(sem.withPermit(() => { throw boom; }), (e) => e === boom);
  assert.equal((await sem.info()).holders.length, 0);
});

test("FIFO across tasks: waiters are granted in the order they queued", { timeout: 60000 }, async () => {
  const sem = await fresh("m/fifo", 1);
  const holder = await sem.acquire();
  const order: number[] = [];
  const tokens: bigint[] = [];
  const tasks: Promise<void>[] = [];
  for (let i = 0; i < 8; i++) {
    tasks.push(sem.withPermit(async (p) => {
      order.push(i);
      tokens.push(BigInt(p.token));
      await delay(2);
    }));
    assert.ok(await waitFor(async () => (await waiters("m/fifo")) === i + 1), `task ${i} queued`);
  }
  const queued = (await sem.info()).waiters;
  assert.ok(queued.every((w) => w.pid === process.pid && w.n === 1 && w.client === "semclient-js"));
  await holder.release();
  await Promise.all(tasks);
  assert.deepEqual(order, [0, 1, 2, 3, 4, 5, 6, 7]);
  for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, "tokens in grant order");
  const info = await sem.info();
  assert.equal(info.waiters.length, 0);
  assert.equal(info.holders.length, 0);
});

test("an aborted acquire rejects with the signal's reason and leaves no waiter", { timeout: 60000 }, async () => {
  const sem = await fresh("m/abort", 1);
  const holder = await sem.acquire();
  const ctl = new AbortController();
  const pending = sem.acquire({ signal: ctl.signal });
  assert.ok(await waitFor(async () => (await waiters("m/abort")) === 1), "the acquire waits");
  const reason = new Error("changed my mind");
  ctl.abort(reason);
  await assert.rejects(pending, (e) => e === reason);
  const info = await sem.info();
  assert.equal(info.waiters.length, 0, "no waiter left");
  assert.equal(info.waiters_total, 0);
  // The holder's release grants nobody: the permit is free again.
  assert.equal(await holder.release(), true);
  const after = await sem.info();
  assert.equal(after.available, 1);
  assert.equal(after.holders.length, 0);
  // A timeout signal the same way; an acquire already aborted sends nothing.
  const h2 = await sem.acquire();
  await assert.rejects(sem.acquire({ signal: AbortSignal.timeout(300) }), { name: "TimeoutError" });
  assert.equal(await waiters("m/abort"), 0, "no waiter left by a timeout signal");
  await assert.rejects(sem.acquire({ signal: AbortSignal.abort() }), { name: "AbortError" });
  assert.equal(await waiters("m/abort"), 0);
  await h2.release();
});

test("timeoutMs: the acquire fails TimeoutError after that long in line, leaving no waiter", { timeout: 60000 }, async () => {
  const sem = await fresh("m/timeout", 1);
  const holder = await sem.acquire();
  const t0 = performance.now();
  await assert.rejects(sem.acquire({ timeoutMs: 300 }), (e) => {
    assert.ok(e instanceof TimeoutError, String(e));
    assert.ok(e instanceof SemdError);
    assert.equal(e.error, "timeout");
    return true;
  });
  assert.ok(performance.now() - t0 >= 250, "it waited");
  assert.equal(await waiters("m/timeout"), 0);
  await holder.release();
});

test("timeoutMs 0 tries once: WouldBlockError; tryAcquire gives null", { timeout: 60000 }, async () => {
  const sem = await fresh("m/try", 1);
  const holder = await sem.acquire();
  await assert.rejects(sem.acquire({ timeoutMs: 0 }), (e) => {
    assert.ok(e instanceof WouldBlockError, String(e));
    assert.equal(e.status, 409);
    assert.equal(e.error, "would_block");
    assert.equal(e.exit, 1);
    assert.equal(e.problem?.type, "urn:semd:problem:would_block");
    return true;
  });
  assert.equal(await sem.tryAcquire(), null);
  await holder.release();
  const p = await sem.tryAcquire();
  assert.ok(p !== null && p.held);
  await p.release();
  assert.equal(await waiters("m/try"), 0);
});

test("typed errors match the daemon's problem codes", { timeout: 60000 }, async () => {
  await assert.rejects(c.info("m/none"), (e) => {
    assert.ok(e instanceof NotFoundError, String(e));
    assert.equal(e.status, 404);
    assert.equal(e.error, "not_found");
    assert.equal(typeof e.code, "number");
    return true;
  });
  assert.equal(await c.create("m/dup", { limit: 3 }), true);
  await assert.rejects(c.create("m/dup", { limit: 3 }), (e) => e instanceof ExistsError && e.status === 409);
  assert.equal(await c.create("m/dup", { limit: 3, if_not_exists: true }), false);
  await assert.rejects(c.create("m/bad", { limit: -1 }), (e) => e instanceof InvalidArgumentError && e.status === 400);
  await assert.rejects(c.setLimit("m/none", 2), (e) => e instanceof NotFoundError);
  await c.delete("m/dup");
  await assert.rejects(c.info("m/dup"), NotFoundError);
});

test("the lease is renewed in the background while the permit is held", { timeout: 60000 }, async () => {
  const sem = await fresh("m/renew", 1);
  const p = await sem.acquire({ lease: 600 });
  const first = (await sem.info()).holders[0]!.expires_ms;
  await delay(1500); // two and a half leases: held only if renewed
  assert.ok(p.held && !p.lost);
  const info = await sem.info();
  assert.equal(info.holders.length, 1);
  assert.ok(info.holders[0]!.expires_ms > first, "its lease was moved on");
  assert.equal(await p.release(), true);
});

test("a permit released by force: its signal aborts, 'lost' fires, onLost is called", { timeout: 60000 }, async () => {
  const sem = await fresh("m/lost", 1);
  const calls: HoldLostError[] = [];
  const p: Permit = await sem.acquire({ lease: 900, onLost: (e) => calls.push(e) });
  let events = 0;
  p.addEventListener("lost", () => events++);
  await c.forceRelease("m/lost", p.id!);
  assert.ok(await waitFor(() => p.signal.aborted, 3000), "the next renewal learns it");
  assert.ok(p.signal.reason instanceof HoldLostError);
  assert.equal(p.lost, true);
  assert.equal(events, 1);
  assert.equal(calls.length, 1);
  assert.throws(() => p.check(), HoldLostError);
  assert.equal(await p.release(), false);
});

test("info's histograms and revision; sessions() shows the session a waiting acquire waits in", { timeout: 60000 }, async () => {
  const sem = await fresh("m/sessions", 1);
  const p = await sem.acquire({ lease: 30000 });
  const second = sem.acquire({ lease: 30000 });
  assert.ok(await waitFor(async () => (await waiters("m/sessions")) === 1, 10000), "the second acquire waits");
  const s = await c.sessions();
  assert.ok(s.total >= 1 && s.items.length === s.total);
  assert.ok(s.items.every((x) => /^[0-9]+$/.test(x.id) && x.principal === "anonymous"));
  assert.ok(s.items.some((x) => x.waiters === 1 && x.lease_ms > 0 && /^semclient-js/.test(x.client ?? "")),
    "the waiter's session, with its lease");
  await p.release();
  await (await second).release();
  const info = await sem.info();
  assert.match(info.revision, /^[0-9]+$/);
  assert.ok(BigInt(info.revision) > 0n);
  assert.equal(info.histograms?.wait.count, 2, "two grants");
  assert.equal(info.histograms?.hold.count, 2, "two holds ended");
  assert.match((await c.server()).instance, /^[0-9]+$/);
});

test("rate mode: a grant holds nothing", { timeout: 60000 }, async () => {
  await c.create("m/rate", { mode: "rate", limit: 0, rate: 2, rate_period_ms: 60000, burst: 2 });
  const sem = c.semaphore("m/rate");
  const a = await sem.acquire();
  const b = await sem.acquire();
  assert.equal(a.id, undefined);
  assert.equal(a.held, false);
  assert.ok(BigInt(b.token) > BigInt(a.token));
  await assert.rejects(sem.acquire({ timeoutMs: 0 }), WouldBlockError);
  assert.equal(await a.release(), false);
});

test("watch: the events of a prefix as an async iterator, ended by break", { timeout: 60000 }, async () => {
  const it = c.watch({ name: "m/w/", prefix: true });
  const first = await it.next();
  assert.equal(first.done, false);
  assert.equal(first.value!.kind, "ready");
  await c.create("m/w/a", { limit: 1 });
  const p = await c.semaphore("m/w/a").acquire();
  await p.release();
  await c.create("m/other", { limit: 1 });
  const seen: WatchEvent[] = [];
  for await (const ev of it) {
    if (ev.kind === "ready" || ev.kind === "compacted" || ev.kind === "cluster") continue;
    seen.push(ev);
    if (ev.kind === "release") break;
  }
  assert.deepEqual(seen.map((e) => `${e.kind} ${e.name}`), ["create m/w/a", "grant m/w/a", "release m/w/a"]);
  assert.equal(seen[1]!.token, p.token);
  for (let i = 1; i < seen.length; i++) assert.ok(BigInt(seen[i]!.revision) > BigInt(seen[i - 1]!.revision));
  assert.equal((await it.next()).done, true, "ended by break");
});

test("many tasks on one client: every acquire granted once, never more holders than the limit", { timeout: 60000 }, async () => {
  const sem = await fresh("m/many", 3);
  let inside = 0;
  let most = 0;
  const tokens = new Set<string>();
  await Promise.all(Array.from({ length: 16 }, async () => {
    for (let i = 0; i < 10; i++) {
      await sem.withPermit(async (p) => {
        inside++;
        most = Math.max(most, inside);
        tokens.add(p.token);
        await delay(1);
        inside--;
      });
    }
  }));
  assert.ok(most <= 3, `at most 3 inside (${most})`);
  assert.equal(tokens.size, 160, "a token for each grant");
  const info = await sem.info();
  assert.equal(info.holders.length + info.waiters.length, 0);
});
