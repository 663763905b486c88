// SPDX-License-Identifier: BSD-2-Clause
// The client: a daemon or a cluster reached over HTTP, its semaphores, the
// acquire (201 a permit, 202 a waiter long-polled until granted), and the
// other resources of the contract.

import { HoldLostError, makeError, SemdError } from "./errors.js";
import { Permit } from "./permit.js";
import { now, Transport, type FetchLike } from "./transport.js";
import type {
  ClusterStatus, CreateOptions, Grant, Holds, Renewed, SemaphoreInfo, ServerInfo, Sessions, Stats,
  Summary, WaiterState, WatchItem,
} from "./types.js";
import { watch, type WatchOptions } from "./watch.js";

/** How a Client reaches semd. */
export interface ClientOptions {
  /**
   * The daemon's HTTP base URL ("http://127.0.0.1:8080"), or a cluster's
   * nodes: a list, or one string with commas. A follower's 307 names the
   * leader; an unreachable node makes the client try the next.
   */
  url: string | string[];
  /** A bearer token (semd.conf's http-token). */
  token?: string;
  /** The lease (ms) of permits and waiting acquires (default 30000). */
  lease?: number;
  /** The longest long-poll (seconds, default 20; the daemon caps it at http-max-wait). */
  maxWait?: number;
  /** How long (ms) a request tries the nodes before it fails unavailable (default 30000). */
  failoverMs?: number;
  /**
   * How long (ms) a node may take to start its answer, beyond a long-poll's
   * own wait, before the next node is tried (default 10000).
   */
  requestTimeoutMs?: number;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** The fetch to use (default: the platform's). */
  fetch?: FetchLike;
  /** The program named in holder lists, and the User-Agent (default "semclient-js"). */
  clientName?: string;
}

/** How an acquire waits and what it holds. */
export interface AcquireOptions {
  /** Permits (default 1). */
  n?: number;
  /** Longest wait in line (ms): 0 tries once (WouldBlockError), absent waits as long as it takes. */
  timeoutMs?: number;
  /** The permit's lease and the waiter's (ms; default the client's). */
  lease?: number;
  /** Cancels a waiting acquire: the daemon's waiter goes, the acquire rejects with the reason. */
  signal?: AbortSignal;
  /** Create a missing name with this limit. */
  limit?: number;
  /** The place in line: -8..7, a higher class first. */
  priority?: number;
  /** The fair-share group (a name shared by key). */
  group?: string;
  /** An earlier waiting acquire of ours with this key fails ReplacedError. */
  replace?: string;
  /** Renew the lease in the background while held (default true). */
  renew?: boolean;
  /** Called when the hold is lost (as the permit's "lost" event and signal). */
  onLost?: (err: HoldLostError) => void;
  /** Idempotency-Key of the acquire (default: a new random one). */
  idempotencyKey?: string;
}

const DEFAULT_LEASE = 30000;

/** A handle on a daemon or a cluster. It holds no connection of its own: fetch's pool does. */
export class Client {
  /** The nodes and how requests reach them. */
  readonly transport: Transport;
  /** The default lease (ms). */
  readonly lease: number;
  /** The longest long-poll (s). */
  readonly maxWait: number;
  /** The program named in holder lists. */
  readonly clientName: string;

  constructor(opts: ClientOptions | string | string[]) {
    const o: ClientOptions = typeof opts === "string" || Array.isArray(opts) ? { url: opts } : opts;
    const urls = (Array.isArray(o.url) ? o.url : o.url.split(",")).map((u) => u.trim()).filter((u) => u !== "");
    this.clientName = o.clientName ?? "semclient-js";
    this.transport = new Transport(urls, {
      fetch: o.fetch, token: o.token, headers: o.headers, failoverMs: o.failoverMs, userAgent: this.clientName,
      requestTimeoutMs: o.requestTimeoutMs,
    });
    this.lease = o.lease ?? DEFAULT_LEASE;
    this.maxWait = o.maxWait ?? 20;
  }

  /** A semaphore by name (sends nothing); defaults for its acquires. */
  semaphore(name: string, defaults: Omit<AcquireOptions, "signal" | "idempotencyKey"> = {}): Semaphore {
    return new Semaphore(this, name, defaults);
  }

  /** Who the daemon takes us for, and which daemon it is. */
  async server(): Promise<ServerInfo> {
    return (await this.transport.request<ServerInfo>("GET", "/v1/server")).body;
  }

  /** Every name with this prefix, in order (every page). */
  async list(prefix = ""): Promise<Summary[]> {
    const out: Summary[] = [];
    let after: string | undefined;
    for (let page = 0; page < 100000; page++) {
      const q = new URLSearchParams({ prefix, limit: "1000" });
      if (after !== undefined) q.set("after", after);
      const b = (await this.transport.request<{ items: Summary[]; next?: string }>("GET", `/v1/semaphores?${q}`)).body;
      out.push(...b.items);
      if (b.next === undefined || b.items.length === 0) break;
      after = b.next;
    }
    return out;
  }

  /** A name, its holders and its queue in order (the first 1000 of each). */
  async info(name: string): Promise<SemaphoreInfo> {
    return (await this.transport.request<SemaphoreInfo>("GET", `${semPath(name)}?limit=1000`)).body;
  }

  /** Creates a name (ExistsError if it exists, unless if_not_exists). */
  async create(name: string, opts: CreateOptions = {}): Promise<boolean> {
    const a = await this.transport.request("PUT", semPath(name), { body: opts });
    return a.status === 201;
  }

  /** Deletes a name (force: its waiters cancelled and holders dropped). */
  async delete(name: string, opts: { force?: boolean } = {}): Promise<void> {
    await this.transport.request("DELETE", `${semPath(name)}${opts.force ? "?force=true" : ""}`);
  }

  /** Sets a name's limit. */
  async setLimit(name: string, limit: number): Promise<void> {
    await this.transport.request("PUT", `${semPath(name)}/limit`, { body: { limit } });
  }

  /** Sets or removes (rate 0) a name's rate. */
  async setRate(name: string, rate: number, opts: { periodMs?: number; burst?: number } = {}): Promise<void> {
    const body: Record<string, number> = { rate };
    if (opts.periodMs !== undefined) body.rate_period_ms = opts.periodMs;
    if (opts.burst !== undefined) body.burst = opts.burst;
    await this.transport.request("PUT", `${semPath(name)}/rate`, { body });
  }

  /** Bounds a name's queue (0: no bound). */
  async setQueue(name: string, maxWaiters: number): Promise<void> {
    await this.transport.request("PUT", `${semPath(name)}/queue`, { body: { max_waiters: maxWaiters } });
  }

  /** Up n: adds permits (signal mode), or gives back n of ours. The count released. */
  async up(name: string, n = 1): Promise<number> {
    const a = await this.transport.request<{ n: number }>("POST", `${semPath(name)}/up`, { body: { n } });
    return a.body?.n ?? 0;
  }

  /** Whether a fencing token still holds a permit of name. */
  async validate(name: string, token: string): Promise<boolean> {
    const a = await this.transport.request<{ valid: boolean }>("GET", `${semPath(name)}/tokens/${token}`);
    return a.body.valid;
  }

  /** Gives back anyone's permit (the creator or an administrator). */
  async forceRelease(name: string, permit: string): Promise<void> {
    await this.transport.request("DELETE", `${semPath(name)}/permits/${permit}?force=true`);
  }

  /** Cancels anyone's waiter by its place in the queue (seq; the creator or an administrator). */
  async cancelQueued(name: string, seq: string): Promise<void> {
    await this.transport.request("DELETE", `${semPath(name)}/waiters/${seq}`);
  }

  /** Every permit of ours (or of principal: administrators), every page. */
  holds(principal?: string): Promise<Holds> {
    return this.pages<Holds["items"][number]>("/v1/holds", principal);
  }

  /** Our sessions (or every one, or principal's: administrators), every page. */
  sessions(principal?: string): Promise<Sessions> {
    return this.pages<Sessions["items"][number]>("/v1/sessions", principal);
  }

  // Every page of a principal's list (holds, sessions).
  private async pages<T>(path: string, principal?: string): Promise<{ items: T[]; total: number }> {
    const items: T[] = [];
    let total = 0;
    let after: string | undefined;
    for (let page = 0; page < 100000; page++) {
      const q = new URLSearchParams({ limit: "1000" });
      if (principal !== undefined) q.set("principal", principal);
      if (after !== undefined) q.set("after", after);
      const b = (await this.transport.request<{ items: T[]; next?: string; total: number }>("GET",
        `${path}?${q}`)).body;
      items.push(...b.items);
      total = b.total;
      if (b.next === undefined || b.items.length === 0) break;
      after = b.next;
    }
    return { items, total };
  }

  /** The daemon's counters and histograms. */
  async stats(): Promise<Stats> {
    return (await this.transport.request<Stats>("GET", "/v1/stats")).body;
  }

  /** The cluster as the node asked sees it. */
  async cluster(): Promise<ClusterStatus> {
    return (await this.transport.request<ClusterStatus>("GET", "/v1/cluster")).body;
  }

  /** What happens to a name or a prefix: an async iterator that resumes across reconnections. */
  watch(opts: WatchOptions = {}): AsyncGenerator<WatchItem, void, undefined> {
    return watch(this.transport, opts);
  }
}

/** A named semaphore of a Client. */
export class Semaphore {
  readonly client: Client;
  readonly name: string;
  private readonly defaults: Omit<AcquireOptions, "signal" | "idempotencyKey">;

  /** Made by Client.semaphore. */
  constructor(client: Client, name: string, defaults: Omit<AcquireOptions, "signal" | "idempotencyKey"> = {}) {
    if (name === "") throw new TypeError("semclient: an empty name");
    this.client = client;
    this.name = name;
    this.defaults = defaults;
  }

  /**
   * n permits, waiting in line as long as timeoutMs allows. Rejects with
   * TimeoutError, WouldBlockError (timeoutMs 0), the signal's reason when
   * it aborts (the daemon's waiter cancelled first), or another SemdError.
   */
  async acquire(opts: AcquireOptions = {}): Promise<Permit> {
    const o: AcquireOptions = { ...this.defaults, ...opts };
    const c = this.client;
    const signal = o.signal;
    signal?.throwIfAborted();
    const lease = o.lease ?? c.lease;
    const start = now();
    const body: Record<string, unknown> = {
      n: o.n ?? 1, lease_ms: lease, timeout_ms: o.timeoutMs ?? -1, client: c.clientName,
    };
    const pid = (globalThis as { process?: { pid?: unknown } }).process?.pid;
    if (typeof pid === "number") body.pid = pid;
    if (o.limit !== undefined) body.limit = o.limit;
    if (o.priority !== undefined) body.priority = o.priority;
    if (o.group !== undefined) body.group = o.group;
    if (o.replace !== undefined) body.replace = o.replace;
    // Answered at once (no Prefer: wait): a granted permit, or a waiter to
    // long-poll. Not cut short by the signal, so that what it made is known
    // and can be undone.
    const a = await c.transport.request<Grant | WaiterState>("POST", `${semPath(this.name)}/permits`, {
      body, headers: { "idempotency-key": o.idempotencyKey ?? newKey() },
    });
    if (a.status === 201 || a.status === 200) {
      const permit = this.permit(a.body as Grant, lease, a.sentAt, o);
      if (signal?.aborted) {
        await permit.release().catch(() => false);
        throw signal.reason;
      }
      return permit;
    }
    if (a.status !== 202) throw makeError("protocol_error", `acquire ${this.name}: HTTP ${a.status}`, { status: a.status });
    const waiter = a.body as WaiterState;
    const grant = await this.await(waiter, a.sentAt, lease, start, o);
    return this.permit(grant.grant, lease, grant.since, o);
  }

  /** A permit if n are free now, else null. */
  async tryAcquire(opts: Omit<AcquireOptions, "timeoutMs" | "signal"> = {}): Promise<Permit | null> {
    try {
      return await this.acquire({ ...opts, timeoutMs: 0 });
    } catch (e) {
      if (e instanceof SemdError && e.error === "would_block") return null;
      throw e;
    }
  }

  /** Runs fn holding a permit, and gives it back however fn ends. */
  async withPermit<T>(fn: (permit: Permit) => T | Promise<T>, opts: AcquireOptions = {}): Promise<T> {
    const permit = await this.acquire(opts);
    try {
      return await fn(permit);
    } finally {
      await permit.release().catch(() => false);
    }
  }

  /** The name, its holders and its queue. */
  info(): Promise<SemaphoreInfo> {
    return this.client.info(this.name);
  }

  /** Creates the name. */
  create(opts: CreateOptions = {}): Promise<boolean> {
    return this.client.create(this.name, opts);
  }

  /** Deletes the name. */
  delete(opts: { force?: boolean } = {}): Promise<void> {
    return this.client.delete(this.name, opts);
  }

  /** Up n (signal mode: adds permits). */
  up(n = 1): Promise<number> {
    return this.client.up(this.name, n);
  }

  /** Whether a fencing token still holds a permit. */
  validate(token: string): Promise<boolean> {
    return this.client.validate(this.name, token);
  }

  /** The name's events. */
  watch(opts: Omit<WatchOptions, "name" | "prefix"> = {}): AsyncGenerator<WatchItem, void, undefined> {
    return this.client.watch({ ...opts, name: this.name });
  }

  // A permit from a grant whose lease began at since at the latest.
  private permit(g: Grant, lease: number, since: number, o: AcquireOptions): Permit {
    return new Permit(this.client, {
      grant: { ...g, name: g.name ?? this.name }, lease, since,
      renew: o.renew ?? true, onLost: o.onLost,
    });
  }

  // Long-polls a waiter until it is granted, ends, or the signal aborts.
  private async await(w: WaiterState, postSent: number, lease: number, start: number, o: AcquireOptions):
    Promise<{ grant: Grant; since: number }> {
    const c = this.client;
    const path = `/v1/waiters/${encodeURIComponent(w.id)}`;
    const deadline = o.timeoutMs !== undefined && o.timeoutMs >= 0 ? start + o.timeoutMs : Infinity;
    // A poll lasts at most a third of the lease, so that the grant (made
    // after the previous answer said "waiting") is at most that old.
    const pollS = Math.max(1, Math.min(c.maxWait, Math.floor(lease / 3000)));
    let lastWaiting = postSent;
    let state = w;
    while (state.state !== "granted") {
      if (now() > deadline + 5000) {
        // The daemon's own timeout answer is overdue: no node reached in time.
        await this.cancel(path);
        throw makeError("timeout", `${this.name}: no answer within ${o.timeoutMs} ms`);
      }
      try {
        const left = deadline - now();
        const waitS = Number.isFinite(left) ? Math.max(1, Math.min(pollS, Math.ceil(left / 1000) + 1)) : pollS;
        const a = await c.transport.request<WaiterState>("GET", path, {
          headers: { prefer: `wait=${waitS}` }, signal: o.signal,
          deadline: now() + Math.min(c.transport.failoverMs, Math.max(1000, lease - 1000)),
        });
        state = a.body;
        if (state.state === "waiting") lastWaiting = a.sentAt;
      } catch (e) {
        if (o.signal?.aborted) {
          await this.cancel(path);
          throw o.signal.reason;
        }
        throw e;
      }
    }
    const grants = state.grants ?? [];
    const g = grants.find((x) => x.name === this.name) ?? grants[0];
    if (g === undefined) throw makeError("protocol_error", `${this.name}: granted without a grant`);
    if (o.signal?.aborted) {
      await this.cancel(path);
      throw o.signal.reason;
    }
    // A grant older than two thirds of its lease by this side's count is
    // renewed before it is handed over, to start its lease on our clock.
    if (g.permit !== undefined && lastWaiting + lease - now() < lease / 3) {
      const sent = now();
      try {
        await c.transport.request<Renewed>("POST", `${semPath(this.name)}/permits/${g.permit}/renew`,
          { body: { lease_ms: lease } });
      } catch (e) {
        if (e instanceof SemdError && (e.error === "not_found" || e.error === "not_holder")) {
          throw makeError("hold_lost", `${this.name}: permit ${g.permit} lost before it was handed over`, { cause: e });
        }
        throw e;
      }
      return { grant: g, since: sent };
    }
    return { grant: g, since: lastWaiting };
  }

  // Cancels a waiter (or gives back what it was granted meanwhile); best effort.
  private async cancel(path: string): Promise<void> {
    try {
      await this.client.transport.request("DELETE", path, { accept: [404, 410] });
    } catch {
      // unreachable: the waiter's lease ends it
    }
  }
}

/** A semaphore's resource path. */
function semPath(name: string): string {
  return `/v1/semaphores/${encodeURIComponent(name)}`;
}

/** 96 random bits, drawn once: the prefix of this process's Idempotency-Keys. */
let keyPrefix: string | undefined;
let keyCount = 0;

/** A new Idempotency-Key: the process's random prefix and a counter (unique, cheap). */
function newKey(): string {
  if (keyPrefix === undefined) {
    const b = new Uint8Array(12);
    const cr = (globalThis as { crypto?: { getRandomValues?: (a: Uint8Array) => Uint8Array } }).crypto;
    if (cr?.getRandomValues) cr.getRandomValues(b);
    else for (let i = 0; i < b.length; i++) b[i] = Math.floor(Math.random() * 256);
    keyPrefix = "";
    for (const x of b) keyPrefix += x.toString(16).padStart(2, "0");
  }
  keyCount++;
  return `${keyPrefix}-${keyCount.toString(36)}`;
}
