// SPDX-License-Identifier: BSD-2-Clause
// A permit held over HTTP: a detached hold with a lease, renewed in the
// background while it is held; its signal aborts, and a "lost" event fires,
// when the hold is gone - before the daemon can grant it to anyone else.

import { HoldLostError, makeError, SemdError } from "./errors.js";
import { now, unrefTimer } from "./transport.js";
import type { Grant, Renewed } from "./types.js";
import type { Client } from "./client.js";

/** Symbol.asyncDispose, or where the runtime lacks it the key its polyfills use. */
export const asyncDispose: typeof Symbol.asyncDispose =
  (Symbol as { asyncDispose?: typeof Symbol.asyncDispose }).asyncDispose ??
  (Symbol.for("Symbol.asyncDispose") as typeof Symbol.asyncDispose);

/** What a permit is told when it is made. */
export interface PermitInit {
  grant: Grant;
  /** The lease asked for (ms), used when the answer names none. */
  lease: number;
  /** When the hold's lease began at the latest, on performance.now()'s clock. */
  since: number;
  /** Renew in the background (default true). */
  renew: boolean;
  onLost?: ((err: HoldLostError) => void) | undefined;
}

/** The share of a lease after which it is renewed. */
const RENEW_AT = 1 / 3;

/**
 * Permits granted by an acquire. In owned mode they are held until
 * release() (or until the lease runs out unrenewed); in signal and rate mode
 * nothing is held (`held` false) and release() does nothing.
 *
 * Events: "lost" (an Event) when the hold is gone without release().
 */
export class Permit extends EventTarget {
  /** The semaphore's name. */
  readonly name: string;
  /** The permit's id (undefined: nothing held, signal or rate mode). */
  readonly id: string | undefined;
  /** The fencing token: strictly increasing per name, a decimal string. */
  readonly token: string;
  /** How many permits. */
  readonly n: number;
  /** How long the acquire waited in line (ms, as the daemon counts). */
  readonly waitedMs: number;
  /** The lease (ms) each renewal asks for. */
  readonly lease: number;
  /** Aborts when the hold is lost (reason: a HoldLostError). */
  readonly signal: AbortSignal;

  private readonly client: Client;
  private readonly ctl = new AbortController();
  private state: "held" | "released" | "lost" = "held";
  private lostErr: HoldLostError | undefined;
  private deadline: number;
  private renewTimer: ReturnType<typeof setTimeout> | undefined;
  private lossTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly onLost: ((err: HoldLostError) => void) | undefined;

  /** Made by Semaphore.acquire. */
  constructor(client: Client, init: PermitInit) {
    super();
    this.client = client;
    const g = init.grant;
    this.name = g.name;
    this.id = g.permit;
    this.token = g.token;
    this.n = g.n;
    this.waitedMs = g.waited_ms;
    this.lease = g.lease_ms && g.lease_ms > 0 ? g.lease_ms : init.lease;
    this.signal = this.ctl.signal;
    this.onLost = init.onLost;
    this.deadline = init.since + margin(this.lease);
    if (this.id === undefined) {
      this.state = "released";
      return;
    }
    this.armLoss();
    if (init.renew) this.scheduleRenew(this.lease * RENEW_AT);
  }

  /** Something is held (owned mode, not released, not lost). */
  get held(): boolean {
    return this.state === "held";
  }

  /** The hold was lost (the signal has aborted). */
  get lost(): boolean {
    return this.state === "lost";
  }

  /** Why it was lost, if it was. */
  get lostError(): HoldLostError | undefined {
    return this.lostErr;
  }

  /** Milliseconds the hold is still guaranteed on this side's clock (0: lost or released). */
  get leftMs(): number {
    return this.state === "held" ? Math.max(0, this.deadline - now()) : 0;
  }

  /** Throws the HoldLostError if the hold is lost. */
  check(): void {
    if (this.lostErr) throw this.lostErr;
  }

  /**
   * Gives the permits back. True when this call gave them back; false when
   * they were already released, lost, or nothing was held.
   */
  async release(): Promise<boolean> {
    if (this.state !== "held") return false;
    this.state = "released";
    this.stopTimers();
    try {
      await this.client.transport.request("DELETE", this.path(), {});
      return true;
    } catch (e) {
      if (e instanceof SemdError && (e.error === "not_found" || e.error === "not_holder")) {
        this.markLost(e.error === "not_found" ? "the permit is gone" : "the permit is no longer ours", e, false);
        return false;
      }
      throw e;
    }
  }

  /** Renews the lease now (for `lease` ms, or the permit's). */
  async renew(lease?: number): Promise<void> {
    if (this.state !== "held") throw this.lostErr ?? makeError("not_found", `${this.name}: permit ${this.id} released`);
    const ms = lease ?? this.lease;
    const sent = now();
    try {
      const a = await this.client.transport.request<Renewed>("POST", `${this.path()}/renew`,
        { body: { lease_ms: ms }, deadline: this.deadline });
      if (this.state !== "held") return;
      const granted = a.body?.lease_ms && a.body.lease_ms > 0 ? a.body.lease_ms : ms;
      this.deadline = Math.max(this.deadline, sent + margin(granted));
      this.armLoss();
    } catch (e) {
      if (e instanceof SemdError && (e.error === "not_found" || e.error === "not_holder")) {
        this.markLost(`${this.name}: permit ${this.id}: ${e.message}`, e, true);
        throw this.lostErr;
      }
      throw e;
    }
  }

  /** The same as release(), for `await using`. */
  async [asyncDispose](): Promise<void> {
    await this.release();
  }

  // The permit's resource path.
  private path(): string {
    return `/v1/semaphores/${encodeURIComponent(this.name)}/permits/${this.id}`;
  }

  // The background renewal: at a third of the lease, sooner again after a failure.
  private scheduleRenew(ms: number): void {
    if (this.state !== "held") return;
    this.renewTimer = setTimeout(() => {
      this.renewTimer = undefined;
      this.renew().then(
        () => this.scheduleRenew(this.lease * RENEW_AT),
        () => {
          // Lost: nothing more. Otherwise (a node down, an election) again
          // soon, until the lease's end on this side says it is lost.
          if (this.state === "held") this.scheduleRenew(Math.max(50, Math.min(this.lease / 10, 1000)));
        });
    }, Math.max(0, ms));
    unrefTimer(this.renewTimer);
  }

  // The timer that declares the hold lost at the lease's end on this side.
  private armLoss(): void {
    if (this.lossTimer !== undefined) clearTimeout(this.lossTimer);
    this.lossTimer = setTimeout(() => {
      this.lossTimer = undefined;
      if (this.state !== "held") return;
      if (now() < this.deadline) { this.armLoss(); return; }
      this.markLost(`${this.name}: permit ${this.id}: its lease ran out before a renewal was answered`, undefined, true);
      // The daemon may still count it held (a renewal it answers late): give
      // it back, so that it does not wait out a lease nobody renews.
      this.client.transport.request("DELETE", this.path(), { accept: [404, 409] }).catch(() => undefined);
    }, Math.max(0, this.deadline - now()));
    unrefTimer(this.lossTimer);
  }

  // The hold is gone: the signal aborts, the event fires, the callback runs.
  private markLost(message: string, cause: unknown, notify: boolean): void {
    if (this.state === "lost") return;
    const wasHeld = this.state === "held";
    this.state = "lost";
    this.stopTimers();
    this.lostErr = makeError("hold_lost", message, cause === undefined ? {} : { cause }) as HoldLostError;
    if (!notify && !wasHeld) return;
    this.ctl.abort(this.lostErr);
    this.dispatchEvent(new Event("lost"));
    try {
      this.onLost?.(this.lostErr);
    } catch {
      // a callback's own failure is its own
    }
  }

  // No more renewals or loss checks.
  private stopTimers(): void {
    if (this.renewTimer !== undefined) clearTimeout(this.renewTimer);
    if (this.lossTimer !== undefined) clearTimeout(this.lossTimer);
    this.renewTimer = this.lossTimer = undefined;
  }
}

// A lease as this side may count on it: a little shorter than the daemon's,
// for clocks that run at slightly different rates.
function margin(lease: number): number {
  return lease - Math.max(5, lease / 100);
}
