// SPDX-License-Identifier: BSD-2-Clause
// bench/js/bench.mjs - acquire+release from Node with TASKS async tasks for
// SECONDS, printed as one JSON line (ops/s, p50 and p99 in microseconds).
//
//   node bench.mjs semd URL NAME TASKS SECONDS   semclient over HTTP/1.1 keep-alive
//   node bench.mjs semd-http URL NAME TASKS SECONDS  the same over node:http
//   node bench.mjs redis PORT TASKS SECONDS      ioredis, the shared bench's Lua
//
// semd-http gives semclient (its `fetch` option) a fetch-like call made of
// node:http with a keep-alive agent, to tell what the platform's fetch
// costs from what the package does: the package itself uses fetch only.
// semd: `await sem.acquire()` then `await permit.release()` on one Client
// (fetch's pool keeps a connection per task alive), a name whose limit no
// load reaches. redis: the anchors' counting semaphore (bench/README.md):
// two Lua scripts loaded once and called by EVALSHA on one connection, as
// ioredis is used (the tasks' commands share it); acquire is GET < limit
// then INCR, release DECR. One op is an acquire and its release.
import http from "node:http";
import { Client } from "semclient";

const agent = new http.Agent({ keepAlive: true });

// The part of fetch semclient uses (no streams: no watch), over node:http.
function nodeFetch(url, init) {
  return new Promise((resolve, reject) => {
    const headers = { ...init.headers };
    if (init.body !== undefined) headers["content-length"] = Buffer.byteLength(init.body);
    const req = http.request(url, { method: init.method, headers, agent, signal: init.signal }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") h.set(k, v);
        const nobody = res.statusCode === 204 || res.statusCode === 304;
        resolve(new Response(nobody ? null : Buffer.concat(chunks), { status: res.statusCode, headers: h }));
      });
      res.on("error", reject);
    });
    req.on("error", (e) => reject(new TypeError(`fetch failed: ${e.message}`)));
    req.end(init.body);
  });
}

const ACQUIRE_LUA = "local n = tonumber(redis.call('GET', KEYS[1]) or '0') " +
  "if n < tonumber(ARGV[1]) then redis.call('INCR', KEYS[1]) return 1 end return 0";
const RELEASE_LUA = "return redis.call('DECR', KEYS[1])";
const REDIS_LIMIT = 1e9;

// Runs op in tasks loops for seconds after a warm-up; the figures.
async function measure(tasks, seconds, op) {
  let stop = false;
  let measuring = false;
  const lat = [];
  let ops = 0;
  const loop = async () => {
    while (!stop) {
      const t0 = performance.now();
      await op();
      if (measuring) {
        ops++;
        if (lat.length < 2e6) lat.push(performance.now() - t0);
      }
    }
  };
  const running = Array.from({ length: tasks }, loop);
  await new Promise((r) => setTimeout(r, 300)); // warm-up
  measuring = true;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  measuring = false;
  const dt = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  stop = true;
  await Promise.all(running);
  lat.sort((a, b) => a - b);
  const q = (p) => Math.round((lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? 0) * 1000);
  return {
    tasks, ops_per_sec: Math.round(ops / dt), p50_us: q(0.5), p99_us: q(0.99),
    client_cpu_pct: Math.round(((cpu.user + cpu.system) / 1e6 / dt) * 100),
  };
}

const [mode, ...args] = process.argv.slice(2);
if (mode === "semd" || mode === "semd-http") {
  const [url, name, tasks, seconds] = args;
  const c = new Client(mode === "semd" ? { url } : { url, fetch: nodeFetch });
  await c.create(name, { limit: 100000, if_not_exists: true });
  const sem = c.semaphore(name);
  const r = await measure(Number(tasks), Number(seconds), async () => {
    const p = await sem.acquire();
    await p.release();
  });
  console.log(JSON.stringify({ client: mode === "semd" ? "semclient-fetch" : "semclient-node-http", ...r }));
} else if (mode === "redis") {
  const { default: Redis } = await import("ioredis");
  const [port, tasks, seconds] = args;
  const redis = new Redis({ host: "127.0.0.1", port: Number(port), lazyConnect: true });
  await redis.connect();
  redis.defineCommand("semAcquire", { numberOfKeys: 1, lua: ACQUIRE_LUA });
  redis.defineCommand("semRelease", { numberOfKeys: 1, lua: RELEASE_LUA });
  await redis.del("bench:sem");
  const r = await measure(Number(tasks), Number(seconds), async () => {
    if ((await redis.semAcquire("bench:sem", REDIS_LIMIT)) !== 1) throw new Error("refused");
    await redis.semRelease("bench:sem");
  });
  redis.disconnect();
  console.log(JSON.stringify({ client: "ioredis-lua", ...r }));
} else {
  console.error("usage: bench.mjs semd|semd-http URL NAME TASKS SECONDS | redis PORT TASKS SECONDS");
  process.exit(2);
}
