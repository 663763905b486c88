# SPDX-License-Identifier: BSD-2-Clause
"""The synchronous client: Client, Semaphore, Permit, MultiPermit, Watch.

Every call blocks in libsemclient with the GIL released, so threads sharing
one Client run in parallel and their requests share its one connection.
With a lease, the library's keepalive thread reads the connection all the
time: lost holds are reported within milliseconds (Permit.lost is set,
on_lost runs in that thread). Without a lease nothing reads while no thread
is in a call, and a loss is seen at the next call: Permit.check() looks.
"""
from __future__ import annotations

import collections
import heapq
import threading
import time
import weakref
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from . import _semclient as _c
from ._common import (HELD, LIMIT_MAX, LOST, MODES, RELEASED, ClientBase, Number, PermitGroup,
                      PermitState, SemaphoreBase, WatchBase, backup_to, call_on_lost, count,
                      iter_pages, lease_end, lease_ms, name_of, policy_of, queue_of, rate_of,
                      timeout_ms, wants_of)
from ._errors import (Closed, Compacted, Disconnected, Error, Exists, HoldLost, NotFound,
                      NotHolder, WouldBlock)
from ._errors import lost as _lost
from ._types import Backup, ClusterStatus, Hold, Holder, Info, Summary, WatchEvent

__all__ = ["Client", "Semaphore", "Permit", "MultiPermit", "Watch"]

OnLost = Callable[["Permit"], None]


class Client(ClientBase):
    """A connection (one daemon session) to semd, or to the leader of a
    semd cluster, over libsemclient. Thread-safe: any number of threads may
    share it, their requests multiplexed over the one connection.

    ``address`` is ``"unix:PATH"``, ``"tcp:HOST[:PORT]"``, ``"tls:HOST[:PORT]"``
    or a comma-separated list of a cluster's nodes (None: ``$SEMD_SERVER``,
    else ``unix:/run/semd/semd.sock``). ``lease`` (seconds) asks for a session
    lease: the session and its holds survive a cut of the connection or a
    failover that long, and the library ends its own, client-side, lease
    first, reporting every hold lost before the daemon can grant it again.
    ``timeout`` bounds how long an ordinary request waits for its reply;
    ``connect_timeout`` the connection (default: ``timeout``). ``on_lost``
    is called with each Permit whose hold is lost (in the library's thread).
    ``parent`` (a ``(session, link)`` pair) names the session this one's
    process runs under (see ``session_link``); by default the library takes
    it from ``$SEMD_SESSION``, which ``semctl run`` exports.

    Use it as a context manager, or call close()::

        with semclient.Client("unix:/run/semd/semd.sock", lease=10) as c:
            with c.semaphore("db/replica", limit=4).acquire(timeout=30) as permit:
                ...
    """

    _keepalive_thread = True

    def _start(self, reply_ms: int, connect_ms: int) -> None:
        """Connect (ClientBase.__init__ made the handle)."""
        self._plock = threading.Lock()
        self._clock: Optional[_LeaseClock] = None
        try:
            self._h.connect(min(connect_ms, 0x7FFFFFFF))
        except BaseException:
            self._closed = True
            self._h.close()
            raise
        # with a lease the library's thread reads all the time
        self._driven = self._h.session()[1] > 0

    # --- lifetime -----------------------------------------------------------

    def close(self) -> None:
        """Give back the permits of the session, end the session and the
        connection. Threads blocked in calls get Closed; watches end.
        Detached holds (acquired with a lease) are left to their lease.
        Idempotent."""
        if self._closed:
            return
        self._closed = True
        for p in self._holds.permits():
            try:
                p.release()
            except Error:
                pass
        for w in list(self._watches):
            w._end()
        self._h.close()
        if self._clock is not None:
            self._clock.stop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _shutdown_at_exit(self) -> None:
        self._closed = True
        self._h.close()
        if self._clock is not None:
            self._clock.stop()

    # --- permits --------------------------------------------------------------

    def semaphore(self, name: str, *, limit: Optional[int] = None,
                  lease: Optional[Number] = None) -> "Semaphore":
        """A handle on the semaphore ``name`` (making one sends nothing).
        ``limit``: acquires create the name with this limit when it does
        not exist (Exists when it does, with another). ``lease`` (seconds):
        acquires make detached holds, owned by the principal and kept that
        long whatever becomes of the connection (renew() extends them)."""
        return Semaphore(self, name, limit, lease)

    def acquire_many(self, wants: Union[Iterable[Any], Dict[str, int]],
                     timeout: Optional[Number] = None, *, lease: Optional[Number] = None,
                     on_lost: Optional[OnLost] = None, priority: int = 0) -> "MultiPermit":
        """Take every want at once, or none (SysV semop): nothing is held
        while waiting in line, one deadline. ``wants``: names, (name, n)
        pairs, Semaphores, or {name: n}; 1 to 16, owned-mode names. Raises
        Deadlock when waiting would close a cycle of sessions. ``priority``
        as Semaphore.acquire()'s."""
        ws = wants_of(wants)
        tms, lms = timeout_ms(timeout), lease_ms(lease)
        policy_of(priority, None, None)
        sent = time.monotonic()
        try:
            grants, waited = self._h.down_multi(ws, tms, lms, priority)
        except Disconnected:
            self._raise_if_closed()
            raise
        return MultiPermit([self._file(Permit(self, g[0], (g[1], g[2], g[3], waited), lms,
                                              on_lost, sent)) for g in grants])

    def _lost(self, permit: "Permit", err: HoldLost) -> None:
        with self._plock:
            if not permit._lose(err):
                return
            ev = permit._event
        if ev is not None:
            ev.set()
        call_on_lost(permit._on_lost or self._on_lost, permit)

    def _arm_lease(self, permit: "Permit") -> None:
        if self._clock is None:
            with self._plock:
                if self._clock is None:
                    self._clock = _LeaseClock(self)
        self._clock.arm(permit)

    def _raise_if_closed(self) -> None:
        if self._closed:
            raise Closed("the client was closed", code=_c.E_CLOSED, op="acquire")

    def _poke(self) -> None:
        """Read what the daemon said (lost-hold notices) without blocking."""
        if not self._closed:
            self._h.process()

    # --- operations -------------------------------------------------------------

    def create(self, name: str, limit: Optional[int] = None, *, mode: str = "owned",
               exist_ok: bool = False,
               initial: Optional[int] = None, rate: Any = None,
               burst: Optional[int] = None, max_waiters: Optional[int] = None,
               share: Optional[str] = None, weights: Any = None) -> None:
        """Create a semaphore: ``limit`` permits (default 1), ``mode`` "owned" (only a
        holder gives back, what it holds), "signal" (anyone may up, bounded
        by the limit; ``initial`` free permits at first) or "rate". A
        ``rate`` ("10/s", "5000/h", N per second, or (N, seconds)) adds a
        token bucket of ``burst`` (default: rate); with mode "rate" the
        name is rate-only (limit 0: nothing is held). ``exist_ok``: no
        Exists for a name that exists with that limit and mode (and rate,
        when one is given); Exists, saying what it has, when they differ.

        Queue policies: ``max_waiters`` bounds the line (an acquire that
        would wait while that many wait raises QueueFull); ``share``
        ("principal" or "key") splits the permits between groups while
        several wait, in proportion to ``weights`` ({group: weight}, 1 to
        1000, a group not listed weighs 1): by principal, or by the
        acquire's ``group`` key. Shares are set at creation only."""
        create_checked(self._h, _create_args(name, limit, mode, exist_ok, initial, rate, burst),
                       queue_of(max_waiters, share, weights))

    def delete(self, name: str, force: bool = False) -> None:
        """Delete a semaphore; ``force`` takes its holds back (their holders
        see HoldLost) and fails its waiters."""
        self._h.delete(name_of(name), bool(force))

    def set_limit(self, name: str, limit: int) -> None:
        """Change a semaphore's limit live (shrinking waits for releases)."""
        self._h.set_limit(name_of(name), count(limit, "limit"))

    def set_rate(self, name: str, rate: Any, burst: Optional[int] = None) -> None:
        """Change a name's token bucket ("10/s", ...; 0 or None takes it away)."""
        r, p, b = rate_of(0 if rate is None else rate, burst)
        self._h.set_rate(name_of(name), r, p, b)

    def set_queue(self, name: str, max_waiters: Optional[int]) -> None:
        """Change a name's bound on its line (0 or None: no bound)."""
        self._h.set_queue(name_of(name), queue_of(max_waiters, None, None)[0])

    def backup(self, file: Any) -> Backup:
        """Write an online backup of the daemon's whole state (an
        administrator's right) to ``file``: a path (made; removed if the
        backup fails), a binary file or a descriptor. ``semd --restore``
        reads it. The checksum is verified before it returns."""
        return Backup._of(backup_to(self._h, file))

    def info(self, name: str) -> Info:
        """Describe a semaphore: its limit, holders and waiters."""
        return Info._of(self._h.info(name_of(name)))

    def list(self, prefix: str = "") -> List[Summary]:
        """Every name that begins with prefix, with its counts."""
        p = name_of(prefix, "prefix")
        return [Summary(*t) for t in iter_pages(lambda after: self._h.list(p, after, 1000),
                                                "", "")]

    def holds(self, principal: Optional[str] = None) -> List[Hold]:
        """A principal's holds across all names: this client's principal's,
        or another's (administrators)."""
        if principal is not None:
            name_of(principal, "principal")
        pages = iter_pages(lambda after: _holds_page(self._h.holds(principal, after, 1000)), 0, 0)
        return [Hold(n, Holder._of(h)) for n, h in pages]

    def validate(self, name: str, token: int) -> bool:
        """Whether token still holds a permit of name (for the resource a
        permit guards)."""
        return self._h.validate(name_of(name), _token(token))

    def force_release(self, name: str, permit_id: int) -> int:
        """Take back someone else's hold (administrators): permits released."""
        return self._h.release(name_of(name), _token(permit_id, "permit_id"))

    def watch(self, name: str, *, prefix: bool = False, from_revision: Optional[int] = None,
              resume: bool = False) -> "Watch":
        """The events of a semaphore (``prefix``: of every name that begins
        with ``name``), an iterator of WatchEvent until closed.
        ``from_revision``: first the events from that revision on that the
        daemon still keeps (Compacted if some are gone). ``resume``: after
        a reconnection or a failover, replay from the event after the last
        one received (with none, after the daemon's last revision when the
        watch began) instead of reporting a gap (a gap still comes if the
        daemon no longer keeps them)."""
        rev = 0 if from_revision is None else _token(from_revision, "from_revision")
        return Watch(self, name_of(name), bool(prefix), rev, bool(resume))

    def ping(self) -> float:
        """A round trip to the daemon: its duration in seconds."""
        return self._h.ping() / 1e6

    def stats(self) -> Dict[str, int]:
        """The daemon's counters."""
        return self._h.stats()

    def cluster_status(self) -> ClusterStatus:
        """The view of the first node of the address list that answers
        (leader or not; no session needed)."""
        return ClusterStatus._of(self._h.cluster_status())

    def detach(self) -> None:
        """Over a UNIX socket, keep the session (for its lease) when the
        connection closes; see semclient(3)."""
        self._h.detach()


class Semaphore(SemaphoreBase[Client]):
    """A handle on one named semaphore of a Client: a name and options.
    Making one sends nothing; it is safe to share between threads."""

    __slots__ = ()

    def acquire(self, n: int = 1, timeout: Optional[Number] = None, *,
                lease: Optional[Number] = None, on_lost: Optional[OnLost] = None,
                priority: int = 0, group: Optional[str] = None,
                replace: Optional[str] = None) -> "Permit":
        """Take ``n`` permits, waiting in the daemon's FIFO line at most
        ``timeout`` seconds (None: for ever; 0: only if free now). Returns
        a Permit, which is a context manager that gives it back. Raises
        Timeout, WouldBlock (timeout 0), Deadlock, NotFound (no such name
        and no ``limit``), PermissionDenied, Unreachable, Closed, ...

        ``priority`` (-8 to 7, default 0): a higher class is served first,
        FIFO within a class, each class worth 10 s of waiting. ``group``:
        the fair-share group on a name shared by key (default: the
        principal). ``replace``: a key; this acquire replaces the waiting
        one of the same principal with that key on the name, which raises
        Replaced ("latest wins"). A full line raises QueueFull.

        The wait is in the C library with the GIL released; Ctrl-C (a
        signal handler) runs when it ends: give a timeout, or use
        AsyncClient, for a wait you want to interrupt."""
        lms = self._lease_ms if lease is None else lease_ms(lease)
        if n.__class__ is not int or not 0 < n <= LIMIT_MAX:
            n = count(n)
        tms = -1 if timeout is None else timeout_ms(timeout)
        c = self._client
        pol = policy_of(priority, group, replace)
        sent = time.monotonic() if lms else 0.0
        try:
            if pol is None:
                grant = c._h.down(self.name, n, tms, lms, self._create_limit)
            else:
                grant = c._h.down_policy(self.name, n, tms, lms, self._create_limit, *pol)
        except Disconnected:
            c._raise_if_closed()
            raise
        p = Permit(c, self.name, grant, lms, on_lost, sent)
        if lms == 0 and p.permit_id:    # a hold of the session: tracked for losses
            early = c._holds.file((self.name, p.permit_id), p)
            if early is not None:
                c._lost(p, early)
            return p
        return c._file(p)

    def try_acquire(self, n: int = 1, *, lease: Optional[Number] = None,
                    on_lost: Optional[OnLost] = None, priority: int = 0,
                    group: Optional[str] = None) -> Optional["Permit"]:
        """Take ``n`` permits if they are free now: a Permit, or None."""
        try:
            return self.acquire(n, 0, lease=lease, on_lost=on_lost, priority=priority,
                                group=group)
        except WouldBlock:
            return None

    def release(self, n: int = 1) -> int:
        """Give back ``n`` permits of the name by count, as semctl up and
        threading.Semaphore.release() do: on a signal-mode name a post (any
        client may, up to the limit); on an owned one, n of what this
        session holds there, taken from its newest holds first (their
        Permits' ``n`` shrink, or they are released), then from the
        principal's detached holds. Raises NotHolder when they hold fewer.
        The permits given back."""
        c = self._client
        released = c._h.up(self.name, count(n), 0)
        with c._plock:
            c._gave_back(self.name, released or n)
        return released or n

    def create(self, limit: Optional[int] = None, **kw: Any) -> None:
        """Client.create() of this name (limit: the Semaphore's, else 1)."""
        self._client.create(self.name, limit or self._create_limit or 1, **kw)

    def delete(self, force: bool = False) -> None:
        self._client.delete(self.name, force)

    def info(self) -> Info:
        return self._client.info(self.name)

    def validate(self, token: int) -> bool:
        return self._client.validate(self.name, token)

    def set_limit(self, limit: int) -> None:
        self._client.set_limit(self.name, limit)

    def set_rate(self, rate: Any, burst: Optional[int] = None) -> None:
        self._client.set_rate(self.name, rate, burst)

    def set_queue(self, max_waiters: Optional[int]) -> None:
        self._client.set_queue(self.name, max_waiters)

    def watch(self, **kw: Any) -> "Watch":
        return self._client.watch(self.name, **kw)


class Permit(PermitState):
    """A hold granted by Semaphore.acquire(): ``token``, ``permit_id``,
    ``n``, ``lease_left``; give it back with release() or by leaving its
    ``with`` block.

    A lost hold is never silent. ``lost`` is a threading.Event set when the
    daemon or the library reports the hold gone (force-released, the
    session ended, the daemon shut down, or the client-side lease ran out
    first, before the daemon could grant the permit to anyone else);
    ``lost_error`` says why; the ``on_lost`` callback runs. Synchronous code
    cannot be interrupted safely, so it asks: check() raises HoldLost
    (call it before each step that needs the hold), and a ``with`` block
    whose hold was lost raises HoldLost when it ends.
    """

    __slots__ = ("_event",)

    def __init__(self, client: Client, name: str, grant: tuple, lease: int,
                 on_lost: Optional[OnLost], sent: float) -> None:
        super().__init__(client, name, grant, lease, on_lost, sent)
        self._event: Optional[threading.Event] = None

    @property
    def lost(self) -> threading.Event:
        """An Event set when the hold is lost."""
        if self._event is None:
            with self._client._plock:
                if self._event is None:
                    self._event = self._lost_event(threading.Event())
        return self._event

    def check(self) -> None:
        """Raise HoldLost if the hold is lost. Without the library's thread
        (no lease), it first reads what the daemon said."""
        if self._state == self.HELD:
            c = self._client
            if not c._driven:
                c._poke()
            if self._expires is not None and time.monotonic() >= self._expires:
                c._lost(self, _lost(_c.E_HOLD_LOST, "the hold's lease ran out on the "
                                    "client's clock", self.name))
        if self._state == self.LOST and self._lost_error is not None:
            raise self._lost_error

    def release(self, n: Optional[int] = None) -> bool:
        """Give the permit back, by its permit id (never anyone else's).
        Idempotent: True when this call gave it back, False when it was
        released before or lost (see lost_error). ``n`` less than the
        hold's gives back only that many (by count: the daemon takes them
        from the session's newest hold of the name, which this Permit must
        be; ValueError otherwise) and keeps the rest (``n`` shrinks)."""
        c = self._client
        part = self._part(n)
        if part is not None:
            c._h.up(self.name, part, 0)
            with c._plock:
                c._gave_back(self.name, part)
            return True
        with c._plock:
            if self._state != HELD:
                return False
            self._state = RELEASED
        c._holds.drop((self.name, self.permit_id))
        try:
            c._h.up(self.name, 0, self.permit_id)
        except (HoldLost, NotHolder, NotFound) as e:
            self._state = HELD
            c._lost(self, e if isinstance(e, HoldLost) else
                    _lost(_c.E_HOLD_LOST, "the daemon no longer had it: " + e.message, self.name))
            return False
        return True

    def renew(self, lease: Optional[Number] = None) -> None:
        """Extend the hold. A detached hold (acquired with a lease) gets
        ``lease`` seconds from now (None: its own lease again); a hold of
        the session lives with the session, whose lease the library keeps:
        renew() then makes a round trip, which renews the session's lease
        at once. Raises HoldLost when the hold is gone."""
        self.check()
        c = self._client
        if self.lease is None:
            c._h.ping()
            self.check()
            return
        lms = lease_ms(lease) if lease is not None else 0
        sent = time.monotonic()
        renewed, _expires = c._h.renew(self.name, self.permit_id, lms)
        if renewed == 0:
            c._lost(self, _lost(_c.E_HOLD_LOST, "the hold is gone", self.name))
            self.check()
        self._expires = lease_end(sent, lms or int(self.lease * 1000))
        c._arm_lease(self)

    def __enter__(self) -> "Permit":
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        if self._state == HELD and self.release():
            return
        if self._state == LOST and et is None and self._lost_error is not None:
            raise self._lost_error


class MultiPermit(PermitGroup):
    """The permits of a multi-name acquire, in the order of the wants: a
    sequence of Permit (also by name: ``mp["db"]``), given back together;
    a ``with`` block whose holds were lost raises HoldLost at its end."""

    __slots__ = ()

    def release(self) -> bool:
        """Give every permit back; True if each was given back by this call."""
        ok = True
        for p in self.permits:
            ok = p.release() and ok
        return ok

    def __enter__(self) -> "MultiPermit":
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        lost = [p.lost_error for p in self.permits if p._state == LOST]
        self.release()
        if lost and et is None and lost[0] is not None:
            raise lost[0]


class Watch(WatchBase[Client]):
    """The events of a watched semaphore (or prefix): iterate it, or get()
    with a timeout. After a reconnection the watch is made again and an
    event of kind "gap" comes first (what happened in between is missing).
    Events queue without bound while not read (the daemon never waits for
    a watcher). close() (or leaving its ``with`` block) ends it."""

    def __init__(self, client: Client, name: str, prefix: bool, from_revision: int = 0,
                 resume: bool = False) -> None:
        super().__init__(client, name, prefix, from_revision, resume)
        self._q: Deque[WatchEvent] = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._id = client._h.watch(name, prefix, self._push, from_revision)
        client._watches.add(self)

    def _push(self, t: tuple) -> None:
        ev = WatchEvent._of(t)
        with self._cond:
            self._q.append(ev)
            self._cond.notify()

    def _wake(self) -> None:
        # a reader looks at the flags under the lock before it waits: once
        # the lock is ours it is waiting, or it has seen them
        with self._cond:
            self._cond.notify_all()

    def _rewatch(self) -> None:
        self._stale = False
        h = self._client._h
        rev, gap = self._again()
        old = self._id
        try:
            self._id = h.watch(self.name, self.prefix, self._push, rev)
        except Compacted:
            self._id, gap = h.watch(self.name, self.prefix, self._push), True
        try:
            h.unwatch(old)
        except Error:
            pass
        with self._cond:
            # what the old watch had queued is older than any replay
            if gap:
                self._gapped()
                self._q.appendleft(WatchEvent._gap(self.name, time.time()))

    def get(self, timeout: Optional[Number] = None) -> Optional[WatchEvent]:
        """The next event, waiting at most timeout seconds (None: for ever):
        None on timeout. Raises Closed once the watch or client is closed."""
        tms = timeout_ms(timeout)
        end = None if tms < 0 else time.monotonic() + tms / 1000.0
        c = self._client
        while True:
            if self._ended or c._closed:
                raise Closed("the watch was closed", code=_c.E_CLOSED, op="watch", name=self.name)
            if self._stale:
                self._rewatch()
            with self._cond:
                while self._q:
                    ev = self._seen(self._q.popleft())
                    if ev is not None:
                        return ev
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return None
            step = 0.25 if left is None else min(left, 0.25)
            if c._driven:
                with self._cond:
                    if not self._q and not self._stale and not self._ended:
                        self._cond.wait(step)
            else:
                c._h.poll(int(step * 1000) + 1)     # this thread reads the connection

    def __iter__(self) -> Iterator[WatchEvent]:
        return self

    def __next__(self) -> WatchEvent:
        try:
            ev = self.get()
        except Closed:
            raise StopIteration from None
        assert ev is not None
        return ev

    def close(self) -> None:
        """End the watch (idempotent)."""
        if self._ended:
            return
        self._end()
        c = self._client
        c._watches.discard(self)
        if not c._closed:
            try:
                c._h.unwatch(self._id)
            except Error:
                pass

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _LeaseClock:
    """One thread per client that reports detached holds lost when their
    lease runs out on the client's clock (they are not the session's: the
    library does not track them)."""

    def __init__(self, client: Client) -> None:
        self._client = weakref.ref(client)
        self._heap: List[Tuple[float, int, Any]] = []
        self._cond = threading.Condition(threading.Lock())
        self._stopped = False
        self._seq = 0
        self._thread = threading.Thread(target=self._run, name="semclient-lease", daemon=True)
        self._thread.start()

    def arm(self, permit: Permit) -> None:
        with self._cond:
            self._seq += 1
            heapq.heappush(self._heap, (permit._expires or 0.0, self._seq, weakref.ref(permit)))
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    now = time.monotonic()
                    if self._heap and self._heap[0][0] <= now:
                        break
                    self._cond.wait(None if not self._heap else self._heap[0][0] - now)
                if self._stopped:
                    return
                when, _seq, ref = heapq.heappop(self._heap)
            p, c = ref(), self._client()
            if p is None or c is None or p._state != p.HELD or p._expires is None:
                continue
            if p._expires <= when:      # not renewed since
                c._lost(p, _lost(_c.E_HOLD_LOST, "the hold's lease ran out on the client's "
                                 "clock", p.name))


def _create_args(name: str, limit: Optional[int], mode: str, exist_ok: bool,
                 initial: Optional[int], rate: Any, burst: Optional[int]) -> tuple:
    if mode not in MODES:
        raise ValueError("mode must be one of %s, not %r" % (", ".join(MODES), mode))
    m = MODES[mode]
    if limit is None:
        limit = 0 if m == _c.MODE_RATE else 1
    lim = count(limit, "limit", 0)
    has_rate = rate is not None or m == _c.MODE_RATE
    if m == _c.MODE_RATE and rate is None:
        raise ValueError("a rate-only name needs a rate")
    r, p, b = rate_of(rate, burst) if rate is not None else (0, 0, 0)
    ini = 0 if initial is None else count(initial, "initial", 0)
    return (name_of(name), lim, m, bool(exist_ok), ini, initial is not None, r, p, b, has_rate)


def create_checked(h: Any, args: tuple, queue: tuple) -> None:
    """Handle.create() with args (_create_args()'s) and queue (queue_of()'s).
    With exist_ok (args[3]) a name that exists passes only with the limit
    and mode asked (and the rate, when one is): the daemon's if_not_exists
    takes any, which left a caller silently with another limit."""
    if not args[3]:
        h.create(*args, *queue)
        return
    for _ in range(3):      # bounded: a name deleted and made again meanwhile
        try:
            h.create(*(args[:3] + (False,) + args[4:]), *queue)
            return
        except Exists:
            pass
        try:
            d = h.info(args[0])
        except NotFound:
            continue
        want_rate = (args[6], args[7] or 1000) if args[9] and args[6] else None
        have_rate = (d["rate"], d["rate_period_ms"]) if d["rate"] else None
        mode = {v: k for k, v in MODES.items()}.get(args[2], "?")
        if d["limit"] == args[1] and d["mode"] == mode and (
                want_rate is None or want_rate == have_rate):
            return
        raise Exists("%s exists with limit %d (%s%s), not %d (%s%s)" % (
            args[0], d["limit"], d["mode"],
            ", rate %d/%gs" % (have_rate[0], have_rate[1] / 1000.0) if have_rate else "",
            args[1], mode,
            ", rate %d/%gs" % (want_rate[0], want_rate[1] / 1000.0) if want_rate else ""),
            code=_c.E_EXISTS, op="create", name=args[0])
    h.create(*args, *queue)


def _holds_page(t: tuple) -> Tuple[list, int]:
    entries, _total, nxt = t
    return entries, nxt


def _token(v: Any, what: str = "token") -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("%s must be an int, not %s" % (what, type(v).__name__))
    if v < 0 or v >= 1 << 64:
        raise ValueError("%s must be from 0 to 2**64 - 1" % what)
    return v
