// SPDX-License-Identifier: BSD-2-Clause
// The package's compiled ESM on another runtime (Deno, Bun) against a real
// daemon at URL: a try refused with its typed error, an aborted acquire
// leaving no waiter, a permit kept past its lease by renewals and given back
// by its disposer, a watch, withPermit. Prints "runtime ok" or throws.
//   deno run -A smoke.mjs URL     bun smoke.mjs URL
import { Client, WouldBlockError, asyncDispose } from "../dist/index.js";

const url = (globalThis.Deno ? globalThis.Deno.args : globalThis.process.argv.slice(2))[0];
const check = (cond, what) => { if (!cond) throw new Error(`failed: ${what}`); };
const delay = (ms) => new Promise((r) => setTimeout(r, ms));
const c = new Client({ url });
const name = `rt/${Math.random().toString(36).slice(2)}`;
await c.create(name, { limit: 1 });
const sem = c.semaphore(name);
const p = await sem.acquire({ lease: 900 });
let refused;
try { await sem.acquire({ timeoutMs: 0 }); } catch (e) { refused = e; }
check(refused instanceof WouldBlockError && refused.status === 409, "a try refused with WouldBlockError");
const ctl = new AbortController();
const waiting = sem.acquire({ signal: ctl.signal }).then(() => "granted", (e) => e);
for (let i = 0; i < 250 && (await c.info(name)).waiters.length === 0; i++) await delay(20);
const reason = new Error("changed my mind");
ctl.abort(reason);
check((await waiting) === reason, "the aborted acquire rejects with the reason");
check((await c.info(name)).waiters.length === 0, "no waiter left");
await delay(1500);
check(p.held && !p.lost, "held past its lease");
await p[asyncDispose]();
check((await c.info(name)).holders.length === 0, "released by its disposer");
const it = c.watch({ name: `${name}/`, prefix: true });
check((await it.next()).value.kind === "ready", "the watch is ready");
await c.create(`${name}/w`, { limit: 1 });
const ev = (await it.next()).value;
check(ev.kind === "create" && ev.name === `${name}/w`, "the watch sees the create");
await it.return();
check(await sem.withPermit(async (q) => /^[0-9]+$/.test(q.token)), "withPermit");
console.log("runtime ok");
