// SPDX-License-Identifier: BSD-2-Clause
// A watch: GET /v1/watch read as Server-Sent Events, an async iterator that
// reconnects (to another node if need be) and resumes after the last
// revision it saw (Last-Event-ID), without a gap or a repeat.

import { makeError, SemdError } from "./errors.js";
import { SseParser } from "./sse.js";
import { anySignal, sleep, type Transport } from "./transport.js";
import type { WatchCompacted, WatchEvent, WatchItem, WatchReady } from "./types.js";

/** What to watch. */
export interface WatchOptions {
  /** A name, or with prefix: every name that starts with it ("" : all). */
  name?: string;
  prefix?: boolean;
  /** Resume after this revision (sent as Last-Event-ID): the events after it come first. */
  after?: string;
  /** Ends the watch: the iterator throws the signal's reason. */
  signal?: AbortSignal;
  /** Longest pause between reconnections (ms, default 2000). */
  maxBackoff?: number;
}

/** A long stream has no deadline of its own: the reconnection loop is its retry. */
const CONNECT_DEADLINE = 5000;

/** The events of a name or prefix, for as long as the caller reads them. */
export async function* watch(transport: Transport, opts: WatchOptions = {}): AsyncGenerator<WatchItem, void, undefined> {
  const q = new URLSearchParams();
  if (opts.name !== undefined) q.set("name", opts.name);
  if (opts.prefix) q.set("prefix", "true");
  const qs = q.toString();
  const path = qs ? `/v1/watch?${qs}` : "/v1/watch";
  // The last revision delivered (or announced by a first ready): the cursor.
  let cursor: bigint | undefined = opts.after !== undefined ? BigInt(opts.after) : undefined;
  let backoff = 50;
  const maxBackoff = opts.maxBackoff ?? 2000;
  for (;;) {
    opts.signal?.throwIfAborted();
    const ctl = new AbortController();
    const both = anySignal([opts.signal, ctl.signal]);
    try {
      const headers: Record<string, string> = { accept: "text/event-stream" };
      const resumed = cursor !== undefined;
      if (cursor !== undefined) headers["last-event-id"] = cursor.toString();
      let response: Response;
      try {
        ({ response } = await transport.open("GET", path, {
          headers, signal: both.signal, deadline: performance.now() + CONNECT_DEADLINE,
        }));
      } catch (e) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (e instanceof SemdError && e.error !== "unavailable" && e.error !== "internal") throw e;
        await sleep(backoff, opts.signal);
        backoff = Math.min(backoff * 2, maxBackoff);
        continue;
      }
      if (!response.body) throw makeError("protocol_error", "watch: an answer without a body");
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      const parser = new SseParser();
      try {
        for (;;) {
          let chunk: ReadableStreamReadResult<Uint8Array>;
          try {
            chunk = await reader.read();
          } catch (e) {
            if (opts.signal?.aborted) throw opts.signal.reason;
            break; // the connection broke: reconnect
          }
          if (chunk.done) break;
          for (const ev of parser.push(decoder.decode(chunk.value, { stream: true }))) {
            const item = toItem(ev.event, ev.data, ev.id, resumed);
            if (item === undefined) continue;
            if (item.kind === "ready") {
              backoff = 50;
              if (cursor === undefined) cursor = BigInt(item.revision);
              yield item;
              continue;
            }
            if (item.kind === "compacted") {
              yield item;
              continue;
            }
            const rev = BigInt(item.revision);
            if (cursor !== undefined && rev <= cursor) continue; // already delivered
            cursor = rev;
            yield item;
          }
        }
      } finally {
        reader.cancel().catch(() => undefined);
      }
    } finally {
      ctl.abort();
      both.done();
    }
    opts.signal?.throwIfAborted();
    await sleep(backoff, opts.signal);
    backoff = Math.min(backoff * 2, maxBackoff);
  }
}

// One Server-Sent Event as an item (undefined: not one of ours).
function toItem(event: string, data: string, id: string | undefined, resumed: boolean): WatchItem | undefined {
  if (event === "ready") {
    const r: WatchReady = { kind: "ready", revision: revisionOf(id, data) ?? "0", resumed };
    return r;
  }
  if (event === "compacted") {
    const rev = revisionOf(id, data);
    const c: WatchCompacted = rev === undefined ? { kind: "compacted" } : { kind: "compacted", revision: rev };
    return c;
  }
  if (data === "") return undefined;
  let v: unknown;
  try {
    v = JSON.parse(data);
  } catch (e) {
    throw makeError("protocol_error", `watch: an event that is not JSON: ${data.slice(0, 80)}`, { cause: e });
  }
  const w = v as Partial<WatchEvent>;
  if (typeof w !== "object" || w === null || typeof w.revision !== "string" || !/^[0-9]{1,20}$/.test(w.revision)) {
    throw makeError("protocol_error", `watch: an event without a revision: ${data.slice(0, 80)}`);
  }
  if (w.kind === undefined) (w as { kind: string }).kind = event;
  return w as WatchEvent;
}

// The revision an event names: its id, or its data's revision.
function revisionOf(id: string | undefined, data: string): string | undefined {
  if (id !== undefined && /^[0-9]{1,20}$/.test(id)) return id;
  try {
    const v = JSON.parse(data) as { revision?: unknown };
    if (typeof v.revision === "string" && /^[0-9]{1,20}$/.test(v.revision)) return v.revision;
  } catch {
    // no JSON: no revision
  }
  return undefined;
}
