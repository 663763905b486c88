// SPDX-License-Identifier: BSD-2-Clause
// A job worker limited by a counting semaphore: however many workers run,
// on however many machines, at most LIMIT jobs run at once. Each job runs
// holding a permit (withPermit gives it back however the job ends), passes
// the permit's fencing token to what it writes, and stops if the hold is
// lost (permit.signal aborts).
//
//   SEMD_URL=http://127.0.0.1:8080 LIMIT=2 JOBS=6 node dist/worker.js
import { setTimeout as sleep } from "node:timers/promises";
import { Client } from "semclient";

const semd = new Client({ url: process.env.SEMD_URL ?? "http://127.0.0.1:8080", lease: 10000 });
const slots = semd.semaphore(process.env.SLOTS ?? "jobs/render", { limit: Number(process.env.LIMIT ?? 2) });
const jobs = Number(process.env.JOBS ?? 6);
const jobMs = Number(process.env.JOB_MS ?? 200);

// Ctrl-C: waiting jobs leave the line (no waiter is left behind).
const stop = new AbortController();
for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => stop.abort());

// One job: the work, stopped if the permit is lost; the token fences its writes.
async function render(job: number, token: string, lost: AbortSignal): Promise<void> {
  await sleep(jobMs, undefined, { signal: lost });
  void job;
  void token; // e.g. storage.put(key, value, { ifTokenAbove: token })
}

await Promise.all(Array.from({ length: jobs }, (_, job) =>
  slots.withPermit(async (permit) => {
    const start = Date.now();
    await render(job, permit.token, permit.signal);
    console.log(JSON.stringify({ pid: process.pid, job, token: permit.token, start, end: Date.now() }));
  }, { signal: stop.signal })));
