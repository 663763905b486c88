// SPDX-License-Identifier: BSD-2-Clause
// semclient: semd's named counting semaphores over its HTTP/JSON front door,
// for Node (>= 18), Deno and Bun by the same code: fetch, AbortSignal and
// Server-Sent Events read from the response's stream; no dependency.

export { Client, Semaphore } from "./client.js";
export type { AcquireOptions, ClientOptions } from "./client.js";
export { Permit, asyncDispose } from "./permit.js";
export { SseParser } from "./sse.js";
export type { SseEvent } from "./sse.js";
export type { WatchOptions } from "./watch.js";
export type { FetchLike } from "./transport.js";
export {
  SemdError, TimeoutError, WouldBlockError, NotFoundError, ExistsError, NotHolderError,
  PermissionDeniedError, InvalidArgumentError, ResourceExhaustedError, CancelledError,
  UnavailableError, ProtocolError, InternalError, SessionExpiredError, DeadlockError,
  QueueFullError, ReplacedError, CompactedError, HoldLostError,
} from "./errors.js";
export type { ErrorName, Problem } from "./errors.js";
export type * from "./types.js";
