// SPDX-License-Identifier: BSD-2-Clause
// The errors semd answers, as classes: one for each problem code of
// doc/http.md (the names semctl --json uses), and the client's own.

/** An RFC 9457 problem as semd answers it (application/problem+json). */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  error: string;
  code: number;
  exit: number;
  leader_id?: number;
  leader?: string;
  oldest_revision?: string;
}

/** The problem codes of the contract. */
export type ErrorName =
  | "timeout"
  | "would_block"
  | "not_found"
  | "exists"
  | "not_holder"
  | "permission_denied"
  | "invalid_argument"
  | "resource_exhausted"
  | "cancelled"
  | "unavailable"
  | "protocol_error"
  | "internal"
  | "session_expired"
  | "deadlock"
  | "queue_full"
  | "replaced"
  | "compacted"
  | "hold_lost";

/** Every error of this package: `error` says which, `problem` is the daemon's answer if any. */
export class SemdError extends Error {
  /** The problem code (semctl --json's name). */
  readonly error: string;
  /** The HTTP status (0: the client's own, nothing answered). */
  readonly status: number;
  /** semctl --json's number for it (0: unknown). */
  readonly code: number;
  /** The exit code semctl would give. */
  readonly exit: number;
  /** Seconds to wait before a retry (Retry-After), when the daemon said. */
  readonly retryAfter: number | undefined;
  /** The problem as answered. */
  readonly problem: Problem | undefined;

  constructor(message: string, init: {
    error: string; status?: number; code?: number; exit?: number;
    retryAfter?: number; problem?: Problem; cause?: unknown;
  }) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.error = init.error;
    this.status = init.status ?? 0;
    this.code = init.code ?? 0;
    this.exit = init.exit ?? 1;
    this.retryAfter = init.retryAfter;
    this.problem = init.problem;
  }
}

/** The acquire waited as long as it was allowed to (timeoutMs). */
export class TimeoutError extends SemdError {}
/** A try (timeoutMs: 0) found too few permits free. */
export class WouldBlockError extends SemdError {}
/** No such name, permit or waiter. */
export class NotFoundError extends SemdError {}
/** The name exists already. */
export class ExistsError extends SemdError {}
/** The permit is not the caller's. */
export class NotHolderError extends SemdError {}
/** The access rules refuse it (403), or the bearer token matches none (401). */
export class PermissionDeniedError extends SemdError {}
/** A request the daemon cannot take (400, 405, 413, 415, 422). */
export class InvalidArgumentError extends SemdError {}
/** A quota or the request rate (429). */
export class ResourceExhaustedError extends SemdError {}
/** The waiting acquire was cancelled, by its owner or an administrator. */
export class CancelledError extends SemdError {}
/** No node could answer: none reachable, or no leader (503). */
export class UnavailableError extends SemdError {}
/** The daemon did not understand the request. */
export class ProtocolError extends SemdError {}
/** The daemon failed. */
export class InternalError extends SemdError {}
/** The waiter's lease ran out before it was renewed. */
export class SessionExpiredError extends SemdError {}
/** Granting this acquire would close a cycle of waiters. */
export class DeadlockError extends SemdError {}
/** The name's queue is full (max_waiters). */
export class QueueFullError extends SemdError {}
/** A later acquire with the same replace key took this one's place. */
export class ReplacedError extends SemdError {}
/** The events asked for are no longer kept. */
export class CompactedError extends SemdError {}
/** A permit's hold is gone: released by force, or its lease ran out unrenewed. */
export class HoldLostError extends SemdError {}

type ErrorClass = new (message: string, init: ConstructorParameters<typeof SemdError>[1]) => SemdError;

const classes: Record<string, ErrorClass> = {
  timeout: TimeoutError,
  would_block: WouldBlockError,
  not_found: NotFoundError,
  exists: ExistsError,
  not_holder: NotHolderError,
  permission_denied: PermissionDeniedError,
  invalid_argument: InvalidArgumentError,
  resource_exhausted: ResourceExhaustedError,
  cancelled: CancelledError,
  unavailable: UnavailableError,
  protocol_error: ProtocolError,
  internal: InternalError,
  session_expired: SessionExpiredError,
  deadlock: DeadlockError,
  queue_full: QueueFullError,
  replaced: ReplacedError,
  compacted: CompactedError,
  hold_lost: HoldLostError,
};

// The status an error name stands for when the body says nothing better.
const fallbackByStatus: Record<number, string> = {
  400: "invalid_argument", 401: "permission_denied", 403: "permission_denied",
  404: "not_found", 405: "invalid_argument", 409: "would_block", 410: "cancelled",
  413: "invalid_argument", 415: "invalid_argument", 422: "invalid_argument",
  429: "resource_exhausted", 500: "internal", 503: "unavailable",
};

/** The error of a name, with a message and what else is known. */
export function makeError(error: string, message: string,
  init: Omit<ConstructorParameters<typeof SemdError>[1], "error"> = {}): SemdError {
  const cls = classes[error] ?? SemdError;
  return new cls(message, { ...init, error });
}

/** The error for an answer that is not a success: its problem, or its status alone. */
export function errorFromAnswer(status: number, body: unknown, retryAfter: string | null): SemdError {
  const ra = retryAfter !== null && /^[0-9]+$/.test(retryAfter) ? Number(retryAfter) : undefined;
  if (isProblem(body)) {
    const msg = body.detail ? `${body.error}: ${body.detail}` : body.title || body.error;
    return makeError(body.error, msg, {
      status, code: body.code, exit: body.exit, problem: body,
      ...(ra === undefined ? {} : { retryAfter: ra }),
    });
  }
  const error = fallbackByStatus[status] ?? (status >= 500 ? "internal" : "protocol_error");
  return makeError(error, `HTTP ${status}`, { status, ...(ra === undefined ? {} : { retryAfter: ra }) });
}

// A body that has a problem's required members.
function isProblem(v: unknown): v is Problem {
  if (typeof v !== "object" || v === null) return false;
  const p = v as Record<string, unknown>;
  return typeof p.error === "string" && typeof p.status === "number" && typeof p.code === "number";
}
