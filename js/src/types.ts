// SPDX-License-Identifier: BSD-2-Clause
// The JSON of semd's HTTP front door (daemon/http/openapi.json), as types.
// 64-bit identities (permit ids, tokens, revisions) are decimal strings;
// counts, limits and times are numbers; times are unix milliseconds.

/** GET /v1/server. */
export interface ServerInfo {
  server: string;
  api: "v1";
  principal: string;
  admin: boolean;
  mode: "memory" | "durable" | "cluster";
  node_id: number;
  leader_id?: number;
  leader_url?: string;
  /** The history the revisions count (0: none yet): a watch resumed across another one joins another history. */
  instance: string;
}

/** A semaphore's mode. */
export type Mode = "owned" | "signal" | "rate";

/** PUT /v1/semaphores/{name}: what a name is made with. */
export interface CreateOptions {
  limit?: number;
  mode?: Mode;
  initial?: number;
  rate?: number;
  rate_period_ms?: number;
  burst?: number;
  max_waiters?: number;
  share?: "none" | "principal" | "key";
  weights?: Record<string, number>;
  if_not_exists?: boolean;
}

/** One name of a list. */
export interface Summary {
  name: string;
  limit: number;
  available: number;
  mode: Mode;
  holders: number;
  waiters: number;
  rate?: number;
  rate_period_ms?: number;
  href: string;
}

/** Who holds or waits, and since when. */
export interface Caller {
  n: number;
  principal: string;
  client?: string;
  host?: string;
  pid?: number;
  since_ms: number;
}

/** A permit held, as the holder lists show it. */
export interface Holder extends Caller {
  name?: string;
  permit: string;
  token: string;
  detached: boolean;
  expires_ms: number;
  href?: string;
}

/** A waiter in a name's queue, in queue order. */
export interface QueuedWaiter extends Caller {
  seq: string;
  request: string;
  deadline_ms: number;
  detached: boolean;
  replace?: string;
  priority: number;
  /** Its share group (a name with shares). */
  group?: string;
}

/** A fair-share group of a name. */
export interface Group {
  group: string;
  weight: number;
  share: number;
  held: number;
  waiting: number;
}

/** GET /v1/semaphores/{name}: a name, its holders and its queue. */
export interface SemaphoreInfo {
  name: string;
  limit: number;
  available: number;
  mode: Mode;
  auto_created: boolean;
  last_token?: string;
  holders_total: number;
  waiters_total: number;
  holders: Holder[];
  waiters: QueuedWaiter[];
  next_holder?: string;
  next_waiter?: string;
  rate?: number;
  rate_period_ms?: number;
  burst?: number;
  tokens?: number;
  next_token_ms?: number;
  max_waiters?: number;
  share?: "none" | "principal" | "key";
  groups?: Group[];
  /** How long its grants waited and its holds were held (from its first grant). */
  histograms?: { wait: Histogram; hold: Histogram };
  /** Where in the history this answer stands (a watch from it misses nothing after it). */
  revision: string;
}

/** Permits granted: a permit (owned mode) or a grant of signal or rate mode. */
export interface Grant {
  name: string;
  permit?: string;
  token: string;
  n: number;
  lease_ms?: number;
  expires_ms?: number;
  waited_ms: number;
  href?: string;
}

/** Where a waiting acquire stands in one name's line. */
export interface Place {
  name: string;
  n: number;
  position: number;
  waiters: number;
  held?: number;
  limit?: number;
  available?: number;
}

/** A waiting acquire (202), or one granted since. */
export interface WaiterState {
  id: string;
  href: string;
  state: "waiting" | "granted";
  lease_ms?: number;
  expires_ms?: number;
  since_ms?: number;
  places?: Place[];
  grants?: Grant[];
}

/** POST .../renew. */
export interface Renewed {
  lease_ms?: number;
  expires_ms: number;
}

/** GET /v1/holds. */
export interface Holds {
  items: Holder[];
  next?: string;
  total: number;
  revision?: string;
}

/** A session of GET /v1/sessions: who, its lease, what it holds and waits for, when it was last heard. */
export interface Session {
  id: string;
  principal: string;
  client?: string;
  host?: string;
  pid?: number;
  lease_ms: number;
  holds: number;
  waiters: number;
  heard_ms: number;
  connected: boolean;
}

/** GET /v1/sessions: ours, or (administrators) everyone's or a principal's. */
export interface Sessions {
  items: Session[];
  next?: string;
  total: number;
  revision?: string;
}

/** A histogram of GET /v1/stats or of a name (buckets not cumulative; le_ms null: +Inf). */
export interface Histogram {
  count: number;
  sum_ms: number;
  buckets: { le_ms: number | null; count: number }[];
}

/** GET /v1/stats. */
export interface Stats {
  counters: Record<string, number>;
  histograms: Record<string, Histogram>;
}

/** A node of GET /v1/cluster. */
export interface ClusterNode {
  id: number;
  address: string;
  role: string;
  match_index?: number;
  lag?: number;
  url?: string;
}

/** GET /v1/cluster. */
export interface ClusterStatus {
  node_id: number;
  state: string;
  term: number;
  commit_index?: number;
  applied_index?: number;
  last_index?: number;
  leader_id: number;
  leader?: string;
  nodes: ClusterNode[];
}

/** The kinds of event a watch sees. */
export type EventKind =
  | "wait" | "grant" | "release" | "timeout" | "cancel" | "limit" | "rate"
  | "create" | "delete" | "deadlock" | "queue" | "replaced";

/** One event of a watch (the data of a Server-Sent Event). */
export interface WatchEvent {
  revision: string;
  kind: EventKind;
  name: string;
  time_ms: number;
  n?: number;
  permit?: string;
  token?: string;
  request?: string;
  principal?: string;
  client?: string;
  host?: string;
  pid?: number;
  holders?: number;
  waiters?: number;
  available?: number;
  limit?: number;
  rate?: number;
  rate_period_ms?: number;
  burst?: number;
  reason?: string;
  max_waiters?: number;
}

/** The stream is (again) connected: events after `revision` follow. */
export interface WatchReady {
  kind: "ready";
  revision: string;
  /** It is a reconnection, resumed after the last revision seen. */
  resumed: boolean;
}

/** Events were lost (no longer kept): read the state again; live events follow. */
export interface WatchCompacted {
  kind: "compacted";
  revision?: string;
}

/** The cluster changed (a new leader, a membership change): told to watches of every name (no name, prefix). */
export interface ClusterEvent {
  kind: "cluster";
  revision: string;
  time_ms: number;
  leader_id: number;
  leader?: string;
  term: number;
  members: { id: number; role: string }[];
}

/** What a watch yields. */
export type WatchItem = WatchEvent | ClusterEvent | WatchReady | WatchCompacted;
