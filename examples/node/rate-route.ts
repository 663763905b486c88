// SPDX-License-Identifier: BSD-2-Clause
// An Express route limited by a semd rate semaphore: every process serving
// GET /search takes a token of one shared bucket (RATE a RATE_PERIOD_MS);
// when none is left the request is answered 429 at once, with Retry-After.
//
//   SEMD_URL=http://127.0.0.1:8080 PORT=3000 node dist/rate-route.js
import express, { type NextFunction, type Request, type Response } from "express";
import { Client, WouldBlockError, type Semaphore } from "semclient";

const semd = new Client({ url: process.env.SEMD_URL ?? "http://127.0.0.1:8080" });
const name = process.env.RATE_NAME ?? "api/search";
const rate = Number(process.env.RATE ?? 10);
const periodMs = Number(process.env.RATE_PERIOD_MS ?? 1000);

// A rate-only name (limit 0): tokens refill at rate a period, up to burst.
await semd.create(name, { mode: "rate", limit: 0, rate, rate_period_ms: periodMs, burst: rate, if_not_exists: true });

// Middleware: a token of the bucket, or 429 without waiting.
function rateLimited(bucket: Semaphore) {
  return async (_req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      await bucket.acquire({ timeoutMs: 0 });
    } catch (e) {
      if (e instanceof WouldBlockError) {
        res.set("Retry-After", String(Math.ceil(periodMs / 1000))).status(429).json({ error: "rate limited" });
        return;
      }
      next(e);
      return;
    }
    next();
  };
}

const app = express();
app.get("/search", rateLimited(semd.semaphore(name)), (req, res) => {
  res.json({ q: String(req.query.q ?? ""), results: [] });
});

const server = app.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  const a = server.address();
  console.log(`listening on http://127.0.0.1:${typeof a === "object" && a ? a.port : a}`);
});
for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => server.close());
