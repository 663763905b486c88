// SPDX-License-Identifier: BSD-2-Clause
// Requests to semd's HTTP front door over the platform's fetch: a list of
// nodes, the leader learnt from 307 redirects, other nodes tried while one
// is unreachable or has no leader, problems turned into typed errors.

import { errorFromAnswer, makeError, SemdError } from "./errors.js";

/** The fetch this package calls (the platform's, or one given). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** How a request is made. */
export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Ends the request (and its retries) at once. */
  signal?: AbortSignal | undefined;
  /** Until when (performance.now()) other nodes are tried; default the client's failover time. */
  deadline?: number | undefined;
  /** Statuses answered as they come, not as errors. */
  accept?: number[];
}

/** An answer: its status, headers, and its JSON body (undefined if none). */
export interface Answer<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  /** When the request was sent, on performance.now()'s clock (its last try). */
  sentAt: number;
  /** The base URL that answered. */
  base: string;
}

/** A connection-level failure of one try (no HTTP answer). */
class NetworkFailure extends Error {}

const MAX_REDIRECTS = 8;
/** How long a node that did not answer is taken for down when a redirect names it (ms). */
const STALE_LEADER_MS = 1000;

/** Milliseconds on a monotonic clock. */
export function now(): number {
  return performance.now();
}

/** A promise that resolves after ms, or rejects when signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) { reject(signal.reason); return; }
    // Not unref'd: whoever awaits it keeps the runtime alive.
    const t = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = (): void => { clearTimeout(t); reject(signal?.reason); };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A timer that keeps no runtime alive on its own (Node, Bun, Deno). */
export function unrefTimer(t: unknown): void {
  if (typeof t === "object" && t !== null && typeof (t as { unref?: unknown }).unref === "function") {
    (t as { unref(): void }).unref();
    return;
  }
  const deno = (globalThis as { Deno?: { unrefTimer?: (id: number) => void } }).Deno;
  if (typeof t === "number" && deno?.unrefTimer) deno.unrefTimer(t);
}

/** A signal that aborts when any of signals does (AbortSignal.any is not in Node 18). */
export function anySignal(signals: (AbortSignal | undefined)[]): { signal: AbortSignal; done(): void } {
  const ctl = new AbortController();
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  const offs: (() => void)[] = [];
  for (const s of live) {
    if (s.aborted) { ctl.abort(s.reason); break; }
    const f = (): void => ctl.abort(s.reason);
    s.addEventListener("abort", f, { once: true });
    offs.push(() => s.removeEventListener("abort", f));
  }
  return { signal: ctl.signal, done: () => { for (const off of offs) off(); } };
}

/** The nodes of a daemon or a cluster and how to reach them. */
export class Transport {
  readonly bases: string[];
  private current = 0;
  /** The leader's base URL as a redirect named it (it may be none of bases). */
  private leader: string | undefined;
  private readonly fetchFn: FetchLike;
  /** When each node last failed to answer (performance.now()). */
  private readonly failedAt = new Map<string, number>();
  private readonly headers: Record<string, string>;
  readonly failoverMs: number;
  /** How long (ms) a node may take to answer's head, beyond a long-poll's wait. */
  readonly requestTimeoutMs: number;

  constructor(urls: string[], opts: { fetch?: FetchLike | undefined; token?: string | undefined;
    headers?: Record<string, string> | undefined; failoverMs?: number | undefined;
    userAgent?: string | undefined; requestTimeoutMs?: number | undefined }) {
    if (urls.length === 0) throw new TypeError("semclient: no URL");
    this.bases = urls.map(normalizeBase);
    const f = opts.fetch ?? (globalThis.fetch as FetchLike | undefined);
    if (typeof f !== "function") throw new TypeError("semclient: no fetch in this runtime (Node >= 18, Deno, Bun)");
    this.fetchFn = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
    // The daemon names a caller's program after its User-Agent in holder lists.
    this.headers = { ...(opts.userAgent ? { "user-agent": opts.userAgent } : {}), ...(opts.headers ?? {}) };
    if (opts.token !== undefined) this.headers.authorization = `Bearer ${opts.token}`;
    this.failoverMs = opts.failoverMs ?? 30000;
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 10000;
  }

  /** The base URL requests go to now. */
  get base(): string {
    return this.leader ?? this.bases[this.current]!;
  }

  // Moves on from a base that failed: the next one of the list.
  private next(failed: string): void {
    if (this.leader === failed) {
      this.leader = undefined;
      return;
    }
    if (this.bases[this.current] === failed) this.current = (this.current + 1) % this.bases.length;
  }

  /** One request: JSON in, JSON out; throws the answer's problem as a SemdError. */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<Answer<T>> {
    const res = await this.send(method, path, opts);
    const accept = opts.accept ?? [];
    const text = await readText(res.response, opts.signal).finally(res.done);
    let body: unknown;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch (e) {
        throw makeError("protocol_error", `${method} ${path}: an answer that is not JSON (HTTP ${res.response.status})`,
          { status: res.response.status, cause: e });
      }
    }
    const status = res.response.status;
    if ((status < 200 || status >= 300) && !accept.includes(status)) {
      throw errorFromAnswer(status, body, res.response.headers.get("retry-after"));
    }
    return { status, headers: res.response.headers, body: body as T, sentAt: res.sentAt, base: res.base };
  }

  /** A request whose answer's body is left unread (an event stream); errors as request. */
  async open(method: string, path: string, opts: RequestOptions = {}): Promise<{ response: Response; base: string }> {
    const res = await this.send(method, path, opts);
    const status = res.response.status;
    if (status < 200 || status >= 300) {
      const text = await readText(res.response, opts.signal).finally(res.done);
      let body: unknown;
      try { body = text ? JSON.parse(text) : undefined; } catch { body = undefined; }
      throw errorFromAnswer(status, body, res.response.headers.get("retry-after"));
    }
    return { response: res.response, base: res.base };
  }

  // Sends until a node answers something other than a redirect or "no
  // leader here", trying the others while the deadline lasts.
  private async send(method: string, path: string, opts: RequestOptions):
    Promise<{ response: Response; sentAt: number; base: string; done(): void }> {
    const deadline = opts.deadline ?? now() + this.failoverMs;
    const headers: Record<string, string> = { accept: "application/json", ...this.headers, ...(opts.headers ?? {}) };
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] = "application/json";
    }
    let redirects = 0;
    let backoff = 25;
    let tries = 0;
    let lastError: unknown;
    // A node that failed: the next one is tried; after a round of them, a
    // growing pause. False when the deadline leaves no time for another try.
    const failed = async (base: string, err: unknown, pauseAtLeast = 0): Promise<boolean> => {
      lastError = err;
      this.failedAt.set(base, now());
      this.next(base);
      tries++;
      redirects = 0;
      if (tries % this.bases.length !== 0 && this.bases.length > 1) return now() <= deadline;
      const pause = Math.min(Math.max(backoff, pauseAtLeast), 1000);
      if (now() + pause > deadline) return false;
      await sleep(pause, opts.signal);
      backoff = Math.min(backoff * 2, 500);
      return true;
    };
    for (;;) {
      opts.signal?.throwIfAborted();
      const base = this.base;
      const sentAt = now();
      let response: Response;
      let done: () => void;
      try {
        ({ response, done } = await this.tryOnce(base + path, method, headers, body, opts.signal));
      } catch (e) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (!(e instanceof NetworkFailure)) throw e;
        if (await failed(base, e.cause)) continue;
        break;
      }
      const status = response.status;
      if (status === 307 || status === 308) {
        const loc = response.headers.get("location");
        await discard(response);
        done();
        if (loc === null) throw makeError("protocol_error", `${method} ${path}: a redirect without a Location`, { status });
        const target = leaderBase(new URL(loc, base + path).href, path);
        // A follower that still names a leader we just failed to reach
        // knows no better than we do (an election is under way): another
        // node is asked, after a pause once each has been.
        // So does a node that names itself (a leader not yet serving).
        const t = this.failedAt.get(target);
        if (target === base || (t !== undefined && now() - t < STALE_LEADER_MS)) {
          if (await failed(base, makeError("unavailable", `${base} redirects to ${target}, which did not answer`))) continue;
          break;
        }
        if (++redirects > MAX_REDIRECTS) {
          // Nodes that name each other: an election under way (or nodes
          // misconfigured, which the deadline ends); a pause, then again.
          if (await failed(base, makeError("unavailable", `${method} ${path}: redirected ${redirects} times`, { status }))) continue;
          break;
        }
        this.leader = target;
        continue;
      }
      if (status === 503) {
        // No leader known here, or the node is starting: another node may
        // know better; the answer is kept in case none does in time.
        const text = await readText(response, opts.signal).finally(done);
        let problem: unknown;
        try { problem = text ? JSON.parse(text) : undefined; } catch { problem = undefined; }
        const err = errorFromAnswer(status, problem, response.headers.get("retry-after"));
        if (await failed(base, err, (err.retryAfter ?? 0) * 1000)) continue;
        throw err;
      }
      this.failedAt.delete(base);
      return { response, sentAt, base, done };
    }
    if (lastError instanceof SemdError) throw lastError;
    throw makeError("unavailable", `${method} ${path}: no node of ${this.bases.join(", ")} answered`,
      { cause: lastError });
  }

  // One fetch; a failure to connect, or no answer's head in time (a node
  // that accepts and does not answer: cut off from its peers, stopped),
  // becomes a NetworkFailure. The timer ends with the head: a body (an
  // event stream) may last.
  private async tryOnce(url: string, method: string, headers: Record<string, string>,
    body: string | undefined, signal: AbortSignal | undefined): Promise<{ response: Response; done(): void }> {
    const m = /(?:^|[;,\s])wait=([0-9]+)/.exec(headers.prefer ?? "");
    const limit = this.requestTimeoutMs + (m ? Number(m[1]) * 1000 : 0);
    const timer = new AbortController();
    const t = setTimeout(() => timer.abort(new Error(`no answer within ${limit} ms`)), limit);
    // The caller's signal still ends the answer's body after the head,
    // until done() (the body read): an event stream's stays.
    const both = signal === undefined ? { signal: timer.signal, done: () => undefined } : anySignal([signal, timer.signal]);
    const init: RequestInit = { method, headers, redirect: "manual", signal: both.signal };
    if (body !== undefined) init.body = body;
    try {
      return { response: await this.fetchFn(url, init), done: both.done };
    } catch (e) {
      both.done();
      if (signal?.aborted) throw signal.reason;
      const why = timer.signal.aborted ? String(timer.signal.reason) : String(e);
      throw new NetworkFailure(`${method} ${url}: ${why}`, { cause: e });
    } finally {
      clearTimeout(t);
    }
  }
}

/** A base URL without its trailing slash or /v1 (both are added by the paths). */
function normalizeBase(url: string): string {
  let u = url.trim();
  if (!/^https?:\/\//i.test(u)) u = `http://${u}`;
  u = u.replace(/\/+$/, "");
  if (u.endsWith("/v1")) u = u.slice(0, -3);
  return u;
}

// The leader's base URL from a redirect to the same path on it.
function leaderBase(location: string, path: string): string {
  const pathOnly = path.split("?")[0]!;
  const loc = location.split("?")[0]!;
  if (loc.endsWith(pathOnly)) return loc.slice(0, loc.length - pathOnly.length);
  return new URL(location).origin;
}

// The whole body as text; a failure to read it is a network failure of its own.
async function readText(res: Response, signal?: AbortSignal): Promise<string> {
  try {
    return await res.text();
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    throw makeError("unavailable", `reading an answer: ${String(e)}`, { cause: e });
  }
}

// Gives an answer's connection back without reading what is left.
async function discard(res: Response): Promise<void> {
  try {
    await res.body?.cancel();
  } catch {
    // nothing to give back
  }
}
