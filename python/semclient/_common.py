# SPDX-License-Identifier: BSD-2-Clause
"""What Client and AsyncClient share: argument checks, the handle's
settings, the table of holds that lost-hold events are matched against,
and the state of a permit."""
from __future__ import annotations

import math
import os
import sys
import threading
import time
import weakref
from typing import Any, Callable, Dict, Generic, Iterable, List, Optional, Tuple, TypeVar, Union

from . import _semclient as _c
from ._errors import HoldLost, lost as _lost
from ._types import Session

Number = Union[int, float]

MODES = {"owned": _c.MODE_OWNED, "signal": _c.MODE_SIGNAL, "rate": _c.MODE_RATE}
U32 = 0xFFFFFFFF
#: The daemon's ranges: permits (a limit, an acquire's n, a rate's tokens, a
#: burst, max_waiters) up to 2**30; a group's weight 1 to 1000; a rate's
#: period up to a day.
LIMIT_MAX = 1 << 30
WEIGHT_MAX = 1000
RATE_PERIOD_MAX = 86400.0
_MAX_EARLY = 1024

#: The client a Semaphore or Watch belongs to (Client or AsyncClient).
ClientT = TypeVar("ClientT", bound="ClientBase")


def timeout_ms(timeout: Optional[Number], what: str = "timeout") -> int:
    """Seconds (None or inf: for ever) as the library's milliseconds (-1: for ever)."""
    if timeout is None:
        return -1
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError("%s must be a number of seconds or None, not %s"
                        % (what, type(timeout).__name__))
    if timeout != timeout or timeout < 0:
        raise ValueError("%s must be 0 or more seconds, not %r" % (what, timeout))
    if math.isinf(timeout) or timeout > 2 ** 53 / 1000:
        return -1
    return int(math.ceil(timeout * 1000))


def lease_ms(lease: Optional[Number], what: str = "lease") -> int:
    """Seconds (None: none) as a lease in milliseconds (0: none)."""
    if lease is None:
        return 0
    if isinstance(lease, bool) or not isinstance(lease, (int, float)):
        raise TypeError("%s must be a number of seconds or None, not %s"
                        % (what, type(lease).__name__))
    if lease != lease or lease < 0 or lease * 1000 > U32:
        raise ValueError("%s must be from 0 to %d seconds, not %r" % (what, U32 // 1000, lease))
    return int(math.ceil(lease * 1000))


def count(n: Any, what: str = "n", low: int = 1, high: int = LIMIT_MAX) -> int:
    """A count of permits (or a limit): an int from low to high (the
    daemon's 2**30 unless said)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError("%s must be an int, not %s" % (what, type(n).__name__))
    if n < low or n > high:
        raise ValueError("%s must be from %d to %d, not %d" % (what, low, high, n))
    return n


def name_of(name: Any, what: str = "name") -> str:
    """A semaphore name: a str (the daemon checks its length: 1 to 255 bytes)."""
    if not isinstance(name, str):
        raise TypeError("%s must be a str, not %s" % (what, type(name).__name__))
    return name


def rate_of(rate: Any, burst: Optional[int]) -> Tuple[int, int, int]:
    """A token bucket as (rate, period_ms, burst): "10/s", "5000/h", an int
    (per second), or (tokens, period seconds)."""
    if isinstance(rate, str):
        r, period = _c.parse_rate(rate)
    elif isinstance(rate, tuple) and len(rate) == 2:
        r = count(rate[0], "rate", 0)
        period = lease_ms(rate[1], "rate period")
        if not 0 < period <= RATE_PERIOD_MAX * 1000:
            raise ValueError("rate period must be more than 0 and at most %d seconds, not %r"
                             % (RATE_PERIOD_MAX, rate[1]))
    else:
        r, period = count(rate, "rate", 0), 1000
    b = 0 if burst is None else count(burst, "burst")
    return r, period, b


def wants_of(wants: Any) -> Tuple[Tuple[str, int, int], ...]:
    """A multi-name acquire's wants: names, (name, n) pairs, Semaphores, or
    a {name: n} dict, as ((name, n, create_limit), ...)."""
    if isinstance(wants, dict):
        wants = list(wants.items())
    out: List[Tuple[str, int, int]] = []
    for w in wants:
        limit = 0
        if isinstance(w, str):
            name, n = w, 1
        elif hasattr(w, "_create_limit") and hasattr(w, "name"):
            name, n, limit = w.name, 1, w._create_limit
        elif isinstance(w, tuple) and len(w) == 2:
            name, n = w
        else:
            raise TypeError("each want must be a name, a (name, n) pair or a Semaphore, not %r"
                            % (w,))
        out.append((name_of(name), count(n), limit))
    if not 1 <= len(out) <= 16:
        raise ValueError("a multi-name acquire takes 1 to 16 names, not %d" % len(out))
    return tuple(out)


SHARES = {"none": _c.SHARE_NONE, "principal": _c.SHARE_PRINCIPAL, "key": _c.SHARE_KEY}


def queue_of(max_waiters: Optional[int], share: Optional[str],
             weights: Any) -> Tuple[int, int, Tuple[Tuple[str, int], ...]]:
    """A name's queue policies as (max_waiters, share, ((group, weight), ...)):
    ``share`` "principal", "key" or None; ``weights`` {group: weight} or
    (group, weight) pairs."""
    mw = 0 if max_waiters is None else count(max_waiters, "max_waiters", 0)
    if share is None:
        share = "none"
    if share not in SHARES:
        raise ValueError("share must be one of %s, not %r" % (", ".join(SHARES), share))
    if weights is None:
        weights = ()
    if isinstance(weights, dict):
        weights = list(weights.items())
    ws = []
    for w in weights:
        if not isinstance(w, tuple) or len(w) != 2:
            raise TypeError("each weight must be a (group, weight) pair, not %r" % (w,))
        ws.append((name_of(w[0], "group"), count(w[1], "weight", 1, WEIGHT_MAX)))
    if ws and share == "none":
        raise ValueError("weights need a share (\"principal\" or \"key\")")
    return mw, SHARES[share], tuple(ws)


def policy_of(priority: int, group: Optional[str],
              replace: Optional[str]) -> Optional[Tuple[int, Optional[str], Optional[str]]]:
    """An acquire's place in line as (priority, group, replace), or None
    for the default (priority 0, no group, no replace key)."""
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError("priority must be an int, not %s" % type(priority).__name__)
    if not _c.PRIO_MIN <= priority <= _c.PRIO_MAX:
        raise ValueError("priority must be from %d to %d, not %d"
                         % (_c.PRIO_MIN, _c.PRIO_MAX, priority))
    if group is not None:
        name_of(group, "group")
    if replace is not None:
        name_of(replace, "replace")
    if priority == 0 and group is None and replace is None:
        return None
    return priority, group, replace


def parent_of(parent: Any) -> Dict[str, Any]:
    """The Handle's parent_session/parent_link of a (session, link) pair
    (None: $SEMD_SESSION's, as semctl run exports it)."""
    if parent is None:
        return {}
    if not isinstance(parent, tuple) or len(parent) != 2:
        raise TypeError("parent must be a (session, link) pair or None, not %r" % (parent,))
    for what, v in zip(("parent session", "parent link"), parent):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 1 << 64:
            raise ValueError("%s must be an int from 0 to 2**64 - 1" % what)
    return dict(parent_session=parent[0], parent_link=parent[1])


def backup_to(h: Any, file: Any) -> Tuple[int, int, bytes]:
    """Handle.backup() into file: a path (made, removed on failure), an
    open binary file or a file descriptor (written from where it is)."""
    if isinstance(file, (str, bytes, os.PathLike)):
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            return h.backup(fd)
        except BaseException:
            os.unlink(file)
            raise
        finally:
            os.close(fd)
    if isinstance(file, int) and not isinstance(file, bool):
        return h.backup(file)
    f: Any = file
    if hasattr(f, "fileno"):
        if hasattr(f, "flush"):
            f.flush()
        r = h.backup(f.fileno())
        if hasattr(f, "seek") and f.seekable():
            f.seek(0, os.SEEK_END)      # past what the descriptor got
        return r
    raise TypeError("file must be a path, a binary file or a descriptor, not %s"
                    % type(file).__name__)


def handle_options(address: Optional[str], lease: Optional[Number], name: Optional[str],
                   timeout: Number, reconnect: bool, tls: Optional[bool], tls_ca: Optional[str],
                   tls_cert: Optional[str], tls_key: Optional[str]) -> Dict[str, Any]:
    """The keyword arguments of _semclient.Handle, checked."""
    if address is not None and not isinstance(address, str):
        raise TypeError("address must be a str or None, not %s" % type(address).__name__)
    if name is None:
        name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    t = timeout_ms(timeout, "timeout")
    if t <= 0 or t > 0x7FFFFFFF:
        raise ValueError("timeout must be more than 0 and at most 24 days")
    for what, v in (("tls_ca", tls_ca), ("tls_cert", tls_cert), ("tls_key", tls_key)):
        if v is not None and not isinstance(v, (str, os.PathLike)):
            raise TypeError("%s must be a path or None" % what)
    use_tls = bool(tls) or any(v is not None for v in (tls_ca, tls_cert, tls_key))
    return dict(address=address, client_name=name_of(name, "name"),
                lease_ms=lease_ms(lease), timeout_ms=t, reconnect=bool(reconnect), tls=use_tls,
                tls_ca=os.fspath(tls_ca) if tls_ca is not None else None,
                tls_cert=os.fspath(tls_cert) if tls_cert is not None else None,
                tls_key=os.fspath(tls_key) if tls_key is not None else None)


def session_of(t: tuple) -> Session:
    sid, lease, principal, server, resumed, _err, _link = t
    return Session(sid, lease / 1000.0 if lease else None, principal, server, bool(resumed))


def lease_end(sent: float, lease: int) -> float:
    """The client-side end (monotonic seconds) of a detached hold's lease of
    lease ms asked for at sent: lease x (1 - 1%) - max(50 ms, lease / 20),
    the library's own rule for the session's lease (semclient(3))."""
    margin = max(50, lease // 20)
    return sent + (lease - lease // 100 - margin) / 1000.0


_live_clients: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _close_all() -> None:
    for c in list(_live_clients):
        try:
            c._shutdown_at_exit()
        except Exception:   # at exit: nothing to report to
            pass


import atexit  # noqa: E402

atexit.register(_close_all)


class HoldTable:
    """The holds a client tracks, by (name, permit id), for lost-hold
    events. A loss may be reported before its grant is filed (the event
    comes from the library's thread): it waits in the table as the
    exception, and the filing finds it. dict.setdefault makes each side
    one atomic step."""

    __slots__ = ("_d", "_early")

    def __init__(self) -> None:
        self._d: Dict[Tuple[str, int], Any] = {}
        self._early = 0

    def file(self, key: Tuple[str, int], permit: Any) -> Optional[HoldLost]:
        """Track permit; its loss if that came first."""
        v = self._d.setdefault(key, permit)
        if v is permit:
            return None
        self._d.pop(key, None)
        self._early -= 1
        return v

    def lost(self, key: Tuple[str, int], err: HoldLost) -> Any:
        """The permit of a lost hold (None: not filed yet, or not ours)."""
        v = self._d.setdefault(key, err)
        if v is err:
            self._early += 1
            if self._early > _MAX_EARLY:
                self._purge()
            return None
        if isinstance(v, HoldLost):
            return None
        self._d.pop(key, None)
        return v

    def drop(self, key: Tuple[str, int]) -> None:
        self._d.pop(key, None)

    def permits(self) -> List[Any]:
        return [v for v in list(self._d.values()) if not isinstance(v, HoldLost)]

    def of_name(self, name: str) -> List[Any]:
        """The permits of name, newest first (the daemon's order: permit ids
        grow with the grants)."""
        ps = [v for k, v in list(self._d.items()) if k[0] == name and not isinstance(v, HoldLost)]
        ps.sort(key=lambda p: p.permit_id, reverse=True)
        return ps

    def _purge(self) -> None:
        for k, v in list(self._d.items()):
            if isinstance(v, HoldLost):
                self._d.pop(k, None)
        self._early = 0

    def __len__(self) -> int:
        return len(self.permits())


HELD, RELEASED, LOST = 0, 1, 2


class PermitState:
    """The state a Permit and an AsyncPermit share (attributes, loss)."""

    __slots__ = ("_client", "name", "n", "token", "permit_id", "_waited_us", "_lease_ms",
                 "_state", "_lost_error", "_on_lost", "_expires", "__weakref__")

    HELD, RELEASED, LOST = HELD, RELEASED, LOST

    def __init__(self, client: Any, name: str, grant: tuple, lease: int,
                 on_lost: Optional[Callable[[Any], None]], sent: float) -> None:
        self._client = client
        #: the semaphore's name
        self.name = name
        #: the daemon's id of the hold (0 for a rate-only name: nothing is held);
        #: the fencing token, strictly increasing per name: hand it to the
        #: resource the permit guards, which refuses older ones; how many
        #: permits the hold is
        self.permit_id, self.token, self.n, self._waited_us = grant
        self._lease_ms = lease
        self._state = HELD if self.permit_id else RELEASED
        self._lost_error: Optional[HoldLost] = None
        self._on_lost = on_lost
        self._expires = lease_end(sent, lease) if lease else None

    @property
    def waited(self) -> float:
        """How long the acquire waited in line, seconds."""
        return self._waited_us / 1e6

    @property
    def lease(self) -> Optional[float]:
        """A detached hold's lease, seconds (None: the hold lives with the session)."""
        return self._lease_ms / 1000.0 if self._lease_ms else None

    @property
    def held(self) -> bool:
        """Whether the hold is still ours: neither released nor lost."""
        return self._state == self.HELD

    @property
    def released(self) -> bool:
        return self._state == self.RELEASED

    @property
    def lost_error(self) -> Optional[HoldLost]:
        """Why the hold was lost (a HoldLost, whose ``reason`` is the
        library's code), or None."""
        return self._lost_error

    @property
    def lease_left(self) -> Optional[float]:
        """Seconds until the hold can no longer be guaranteed on the
        client's clock: a detached hold's own lease, or the session's
        client-side lease (None: no lease, the hold lives with the
        connection). 0 once lost."""
        if self._state == self.LOST:
            return 0.0
        if self._expires is not None:
            return max(0.0, self._expires - time.monotonic())
        ms = self._client._h.lease_left()
        return ms / 1000.0 if ms >= 0 else None

    def _key(self) -> Tuple[str, int]:
        return (self.name, self.permit_id)

    def _lost_event(self, event: Any) -> Any:
        """A new ``lost`` event (threading or asyncio), set if the hold is
        lost already."""
        if self._state == self.LOST:
            event.set()
        return event

    def _part(self, n: Any) -> Optional[int]:
        """The n of a release(n): None for the whole hold (n None or its n),
        else a part, which goes back by count: the daemon takes it from the
        session's newest hold of the name, so this must be that hold."""
        if n is None:
            return None
        n = count(n, "n", 1, max(self.n, 1))
        if n == self.n or self._state != HELD:
            return None
        if self._lease_ms or self._client._holds.of_name(self.name)[:1] != [self]:
            raise ValueError("a part of a hold goes back by count, which the daemon takes from "
                             "the session's newest hold of the name: this permit is not that hold"
                             " (%s); give back all of it, or n of the name with "
                             "semaphore.release(n)" % ("a detached hold" if self._lease_ms
                                                       else "a newer one exists"))
        return n

    def _lose(self, err: HoldLost) -> bool:
        """Mark the hold lost (once); whether it was held."""
        if self._state != self.HELD:
            return False
        self._state = self.LOST
        self._lost_error = err
        return True

    def __repr__(self) -> str:
        state = ("held", "released", "lost")[self._state]
        extra = ""
        if self._state == self.LOST and self._lost_error is not None:
            extra = ": " + self._lost_error.message
        elif self.lease is not None:
            extra = " lease=%gs" % self.lease
        return "<%s %s n=%d token=%d permit_id=%d %s%s>" % (
            type(self).__name__, self.name, self.n, self.token, self.permit_id, state, extra)


class SemaphoreBase(Generic[ClientT]):
    """A name and the options of its acquires (Semaphore, AsyncSemaphore)."""

    __slots__ = ("_client", "name", "_create_limit", "_lease_ms")

    def __init__(self, client: ClientT, name: str, limit: Optional[int] = None,
                 lease: Optional[Number] = None) -> None:
        self._client = client
        self.name = name_of(name)
        self._create_limit = 0 if limit is None else count(limit, "limit")
        self._lease_ms = lease_ms(lease)

    def __repr__(self) -> str:
        opts = ""
        if self._create_limit:
            opts += " limit=%d" % self._create_limit
        if self._lease_ms:
            opts += " lease=%gs" % (self._lease_ms / 1000.0)
        return "<%s %s%s>" % (type(self).__name__, self.name, opts)


class PermitGroup:
    """The permits of a multi-name acquire, in the order of the wants: a
    sequence of permits (also by name: ``group["db"]``), given back
    together; MultiPermit and AsyncMultiPermit add the release."""

    __slots__ = ("permits",)

    def __init__(self, permits: List[Any]) -> None:
        self.permits = permits

    def __getitem__(self, key: Union[int, str]) -> Any:
        if isinstance(key, str):
            for p in self.permits:
                if p.name == key:
                    return p
            raise KeyError(key)
        return self.permits[key]

    def __len__(self) -> int:
        return len(self.permits)

    def __iter__(self) -> Any:
        return iter(self.permits)

    @property
    def held(self) -> bool:
        """Whether every hold is still ours."""
        return all(p.held for p in self.permits)

    def check(self) -> None:
        """Raise HoldLost if any of the holds is lost."""
        for p in self.permits:
            p.check()

    def __repr__(self) -> str:
        return "<%s %s>" % (type(self).__name__, ", ".join(
            "%s n=%d token=%d" % (p.name, p.n, p.token) for p in self.permits))


class WatchBase(Generic[ClientT]):
    """What Watch and AsyncWatch share: the name (or prefix) watched, and
    the flags that the client's events set (the watch must be made again
    after a reconnection; it ended), after which each wakes its reader in
    its own way (_wake)."""

    _id: int    #: the watch's id in the library (its subclasses set it)

    def __init__(self, client: ClientT, name: str, prefix: bool, from_revision: int = 0,
                 resume: bool = False) -> None:
        self._client = client
        self.name = name
        self.prefix = prefix
        self._stale = False
        self._ended = False
        self._from = from_revision
        self._resume = resume
        #: the revision of the latest event read (0: none yet)
        self.revision = 0

    def _seen(self, ev: Any) -> Any:
        """An event read: None for one read already (a replay after a
        reconnection may repeat what the old watch delivered)."""
        if ev is None or not ev.revision:
            return ev
        if self._resume and ev.revision <= self.revision:
            return None
        self.revision = ev.revision
        return ev

    def _gapped(self) -> None:
        """Watched again live after a gap: revisions start afresh."""
        self.revision = 0

    def _again(self) -> Tuple[int, bool]:
        """The revision to watch again from after a reconnection (0: live
        only), and whether a gap event says so: without ``resume``; with
        it, where the library says the old watch left off, after the last
        event it delivered or, with none, after the daemon's last revision
        when it began (so that a watch that saw no event misses none)."""
        rev = self._client._h.watch_next_revision(self._id) if self._resume else 0
        return rev, rev == 0

    def _kick(self) -> None:
        self._stale = True
        self._wake()

    def _end(self) -> None:
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return "<%s %s%s%s>" % (type(self).__name__, self.name, "*" if self.prefix else "",
                                " closed" if self._ended else "")


class ClientBase:
    """The handle and the hold table; Client and AsyncClient add the calls
    (and say what the options of the constructor mean)."""

    _h: Any
    #: whether the library's keepalive thread reads the connection (Client),
    #: or the caller's loop does (AsyncClient)
    _keepalive_thread = True

    def __init__(self, address: Optional[str] = None, *, lease: Optional[Number] = None,
                 name: Optional[str] = None, timeout: Number = 10.0,
                 connect_timeout: Optional[Number] = None, reconnect: bool = True,
                 tls: Optional[bool] = None, tls_ca: Optional[str] = None,
                 tls_cert: Optional[str] = None, tls_key: Optional[str] = None,
                 on_lost: Optional[Callable[[Any], Any]] = None,
                 parent: Optional[Tuple[int, int]] = None) -> None:
        opts = handle_options(address, lease, name, timeout, reconnect, tls, tls_ca, tls_cert,
                              tls_key)
        opts.update(parent_of(parent))
        reply_ms = opts["timeout_ms"]
        connect_ms = reply_ms if connect_timeout is None else timeout_ms(connect_timeout,
                                                                         "connect_timeout")
        self._h = _c.Handle(keepalive_thread=self._keepalive_thread,
                            on_event=self._event_handler(weakref.ref(self)), **opts)
        self._holds = HoldTable()
        self._on_lost = on_lost
        self._watches: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self._reconnects = 0
        self._closed = False
        _live_clients.add(self)
        self._start(reply_ms, connect_ms)

    def _start(self, reply_ms: int, connect_ms: int) -> None:
        """The rest of the construction: the reply timeout and the
        connection's, in ms."""
        raise NotImplementedError

    @staticmethod
    def _event_handler(ref: "weakref.ref[Any]") -> Callable[..., None]:
        """The handle's event callback, holding the client weakly (no cycle)."""
        def on_event(type_: int, error: int, message: str, name: Optional[str], permit_id: int,
                     token: int, n: int) -> None:
            self = ref()
            if self is not None:
                self._event(type_, error, message, name, permit_id)
        return on_event

    def _event(self, type_: int, error: int, message: str, name: Optional[str],
               permit_id: int) -> None:
        """A connection event (in whichever thread the library noticed it)."""
        if type_ == _c.EV_HOLD_LOST and name is not None:
            err = _lost(error, message, name)
            p = self._holds.lost((name, permit_id), err)
            if p is not None:
                self._lost(p, err)
        elif type_ in (_c.EV_RECONNECTED, _c.EV_RESUMED):
            self._reconnects += 1
            for w in list(self._watches):
                w._kick()
        elif type_ == _c.EV_DISCONNECTED:
            self._disconnected()

    def _disconnected(self) -> None:
        pass

    def _lost(self, permit: Any, err: HoldLost) -> None:
        raise NotImplementedError

    def _gave_back(self, name: str, n: int) -> None:
        """n permits of name went back by count: the daemon took them from
        the session's holds of the name, newest first, as the Permits now
        say (the rest, if any, from the principal's detached holds)."""
        for p in self._holds.of_name(name):
            if n <= 0:
                break
            take = min(n, p.n)
            n -= take
            if take == p.n:
                p._state = RELEASED
                self._holds.drop(p._key())
            else:
                p.n -= take

    def _file(self, permit: Any) -> Any:
        """Track a new permit for lost-hold events."""
        if permit.permit_id == 0:
            return permit
        if permit.lease is None:
            early = self._holds.file(permit._key(), permit)
            if early is not None:
                self._lost(permit, early)
        else:
            self._arm_lease(permit)
        return permit

    def _arm_lease(self, permit: Any) -> None:
        raise NotImplementedError

    @property
    def address(self) -> str:
        """The address in use, canonical ("unix:/run/semd/semd.sock")."""
        return self._h.address()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def session_link(self) -> int:
        """The link of the current session (0: disconnected, or a daemon
        older than 0.4): a child process's client given ``parent=(session.id,
        session_link)`` tells the daemon that this session waits for the
        child's, so that a deadlock across the two is seen."""
        return self._h.session()[6]

    @property
    def session(self) -> Session:
        """What the daemon said in the latest handshake."""
        return session_of(self._h.session())

    @property
    def holding(self) -> int:
        """How many holds (Permits) the client tracks."""
        return len(self._holds)

    def _debug(self) -> Dict[str, int]:
        """Counters for tests: requests unanswered, callbacks owed, permits."""
        return {"pending": self._h.pending(), "callbacks": self._h.callbacks(),
                "permits": len(self._holds), "reconnects": self._reconnects}

    def _shutdown_at_exit(self) -> None:
        self._closed = True
        self._h.close()

    def __repr__(self) -> str:
        if self._closed:
            return "<%s closed>" % type(self).__name__
        try:
            s = self.session
            lease = " lease=%gs" % s.lease if s.lease else ""
            return "<%s %s session=%d%s holding=%d>" % (
                type(self).__name__, self.address, s.id, lease, len(self._holds))
        except Exception:
            return "<%s %s>" % (type(self).__name__, self._h.address())


def call_on_lost(fn: Optional[Callable[[Any], Any]], permit: Any) -> Any:
    """Run an on_lost callback (its result is returned); an exception it
    raises goes to sys.unraisablehook: it runs in a callback of the
    library, where there is nobody to raise it to."""
    if fn is None:
        return None
    try:
        return fn(permit)
    except Exception as e:
        sys.unraisablehook(_Unraisable(e, fn))  # type: ignore[arg-type]
        return None


class _Unraisable:
    def __init__(self, e: BaseException, fn: Any) -> None:
        self.exc_type, self.exc_value, self.exc_traceback = type(e), e, e.__traceback__
        self.err_msg = "Exception ignored in on_lost callback"
        self.object = fn


def iter_pages(fetch: Callable[[Any], Tuple[list, Any]], first: Any, done: Any) -> Iterable[Any]:
    """Every item of a paged listing: fetch(cursor) -> (items, next cursor)."""
    cursor = first
    for _ in range(1 << 20):   # bounded: a million pages
        items, cursor = fetch(cursor)
        yield from items
        if cursor == done or not items:
            return


def lock() -> threading.Lock:
    return threading.Lock()
