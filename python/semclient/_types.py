# SPDX-License-Identifier: BSD-2-Clause
"""The value types semclient returns: what info(), list(), holds(), watch()
and cluster_status() report. Times are Unix seconds (floats) on the
daemon's clock, durations seconds."""
from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

__all__ = ["Session", "Holder", "Waiter", "Rate", "Group", "Info", "Summary", "Hold",
           "WatchEvent", "ClusterNode", "ClusterStatus", "Backup"]


def _secs(ms: int) -> Optional[float]:
    return ms / 1000.0 if ms else None


@dataclass(frozen=True)
class Session:
    """What the daemon said in the latest handshake."""
    id: int
    lease: Optional[float]  #: the lease granted, seconds (None: no lease)
    principal: str
    server: str             #: "semd 0.4.0"
    resumed: bool


@dataclass(frozen=True)
class Holder:
    """One hold of a semaphore."""
    permit_id: int
    token: int
    n: int
    client_name: str
    host: str
    pid: int
    principal: str
    since: float                #: when it was granted
    detached: bool              #: owned by the principal, kept for its lease
    expires: Optional[float]    #: a detached hold's end (None: tied to a session)

    @classmethod
    def _of(cls, d: dict) -> "Holder":
        return cls(d["permit_id"], d["token"], d["n"], d["client_name"], d["host"], d["pid"],
                   d["principal"], d["since_ms"] / 1000.0, d["detached"], _secs(d["expires_ms"]))


@dataclass(frozen=True)
class Waiter:
    """One request waiting in a semaphore's FIFO line."""
    request_id: int
    n: int
    client_name: str
    host: str
    pid: int
    principal: str
    since: float
    deadline: Optional[float]
    seq: int
    detached: bool              #: its session is disconnected, inside its lease
    priority: int = 0           #: its acquire's class, PRIORITY_MIN to PRIORITY_MAX
    replace: str = ""           #: its acquire's replace key ("": none)

    @classmethod
    def _of(cls, d: dict) -> "Waiter":
        return cls(d["request_id"], d["n"], d["client_name"], d["host"], d["pid"], d["principal"],
                   d["since_ms"] / 1000.0, _secs(d["deadline_ms"]), d["seq"], d["detached"],
                   d["priority"], d["replace"])


@dataclass(frozen=True)
class Rate:
    """A token bucket: ``rate`` tokens every ``period`` seconds, at most ``burst``."""
    rate: int
    period: float
    burst: int


@dataclass(frozen=True)
class Group:
    """A group of a name with fair shares (Info.groups)."""
    group: str
    weight: int
    share: int          #: permits: limit x weight / the weights of the active groups
    held: int           #: permits held
    waiting: int        #: acquires waiting


@dataclass(frozen=True)
class Info:
    """A semaphore as the daemon describes it (up to 10,000 holders and
    waiters listed; ``holders_total``/``waiters_total`` count them all)."""
    name: str
    limit: int
    available: int          #: negative after a shrinking set_limit
    mode: str               #: "owned", "signal" or "rate"
    auto_created: bool
    last_token: int
    holders: List[Holder] = field(repr=False)
    waiters: List[Waiter] = field(repr=False)
    holders_total: int
    waiters_total: int
    rate: Optional[Rate]
    tokens: Optional[float]         #: tokens in the bucket now (None: no bucket)
    next_token: Optional[float]     #: when the next whole token comes (None: full or none)
    max_waiters: int = 0            #: the queue's bound (0: none)
    share: str = "none"             #: fair shares by "principal", by "key", or "none"
    groups: List[Group] = field(default_factory=list, repr=False)  #: with shares: by name

    @classmethod
    def _of(cls, d: dict) -> "Info":
        rate = Rate(d["rate"], d["rate_period_ms"] / 1000.0, d["burst"]) if d["rate"] else None
        return cls(d["name"], d["limit"], d["available"], d["mode"], d["auto_created"],
                   d["last_token"], [Holder._of(h) for h in d["holders"]],
                   [Waiter._of(w) for w in d["waiters"]], d["holders_total"], d["waiters_total"],
                   rate, d["tokens_nano"] / 1e9 if rate else None, _secs(d["next_token_ms"]),
                   d["max_waiters"], d["share"], [Group(**g) for g in d["groups"]])


@dataclass(frozen=True)
class Summary:
    """One name of list()."""
    name: str
    limit: int
    available: int
    mode: str
    holders: int
    waiters: int


@dataclass(frozen=True)
class Hold:
    """One hold of a principal, across names (holds())."""
    name: str
    holder: Holder


@dataclass(frozen=True)
class WatchEvent:
    """One change of a watched semaphore, as the daemon reported it.
    ``kind`` is "wait", "grant", "release", "timeout", "cancel", "limit",
    "rate", "create", "delete", "deadlock", "queue", "replaced", or "gap":
    the package's own, first after a reconnection when the events in
    between could not be replayed (they are missing). ``revision`` numbers
    the daemon's events (one more than the event before it, the same on
    every node; 0 for a gap): watch(from_revision=ev.revision + 1) resumes
    after it."""
    watch: int
    name: str
    kind: str
    time: float
    n: int
    permit_id: int
    token: int
    request_id: int
    principal: str
    client_name: str
    host: str
    pid: int
    holders: int        #: after the event
    waiters: int
    available: int
    limit: int
    rate: int
    rate_period: float
    burst: int
    reason: str
    revision: int = 0

    @classmethod
    def _of(cls, t: tuple) -> "WatchEvent":
        (watch, name, _kind, kind_name, time_ms, n, permit_id, token, request_id, principal,
         client_name, host, pid, holders, waiters, available, limit, rate, period, burst,
         reason, revision) = t
        return cls(watch, name, kind_name, time_ms / 1000.0, n, permit_id, token, request_id,
                   principal, client_name, host, pid, holders, waiters, available, limit, rate,
                   period / 1000.0, burst, reason, revision)

    @classmethod
    def _gap(cls, name: str, when: float) -> "WatchEvent":
        return cls(0, name, "gap", when, 0, 0, 0, 0, "", "", "", 0, 0, 0, 0, 0, 0, 0.0, 0, "")


@dataclass(frozen=True)
class ClusterNode:
    id: int
    address: str        #: its peer address
    role: str           #: voter, standby, spare
    match_index: int
    lag: int


@dataclass(frozen=True)
class ClusterStatus:
    """A cluster node's view (cluster_status())."""
    node_id: int
    state: str          #: leader, follower, candidate, unavailable
    term: int
    commit_index: int
    applied_index: int
    last_index: int
    leader_id: int      #: 0: none known
    leader: str         #: where clients reach the leader ("": unknown)
    nodes: Tuple[ClusterNode, ...]

    @classmethod
    def _of(cls, d: dict) -> "ClusterStatus":
        return cls(d["node_id"], d["state"], d["term"], d["commit_index"], d["applied_index"],
                   d["last_index"], d["leader_id"], d["leader"],
                   tuple(ClusterNode(**n) for n in d["nodes"]))


@dataclass(frozen=True)
class Backup:
    """What backup() wrote: a backup file that ``semd --restore`` reads."""
    bytes: int          #: of state
    time: float         #: when it was taken (the daemon's clock)
    sha256: builtins.bytes  #: of the state

    @classmethod
    def _of(cls, t: tuple) -> "Backup":
        return cls(t[0], t[1] / 1000.0, t[2])
