# SPDX-License-Identifier: BSD-2-Clause
"""The asyncio client: AsyncClient, AsyncSemaphore, AsyncPermit,
AsyncMultiPermit, AsyncWatch.

The same C handle as Client, driven by the event loop instead of the
library's keepalive thread: the loop watches the handle's socket
(loop.add_reader on semc_fd()) and calls semc_process() when it is readable
and at the latest when semc_timeout() says (a keepalive ping, the end of
the client-side lease, a reconnection). Acquires, releases, info, validate
and ping are asynchronous requests whose callbacks resolve futures; the
operations the library offers only as blocking calls (create, list, watch,
...) run in the loop's default executor, and a callback that runs in that
thread hands its result to the loop.

Cancelling a task that awaits an acquire cancels its waiter on the daemon
at once (the Cancel is queued before the CancelledError goes on, so any
later request sees the line without it), and a grant that crossed the
Cancel is given back. In ``async with sem.acquire() as permit:``, the
body's task is cancelled when the hold is lost, and the block raises
HoldLost.
"""
from __future__ import annotations

import asyncio
import functools
import threading
import time
from typing import (Any, Awaitable, Callable, Coroutine, Dict, Generator, Iterable, List,
                    Optional, TypeVar, Union)

from . import _semclient as _c
from ._client import _create_args, _holds_page, _token, create_checked
from ._common import (ClientBase, Number, PermitGroup, PermitState, SemaphoreBase, WatchBase,
                      backup_to, call_on_lost, count, iter_pages, lease_end, lease_ms, name_of,
                      policy_of, queue_of, rate_of, timeout_ms, wants_of)
from ._errors import Closed, Compacted, Error, HoldLost, NoReply, NotFound, NotHolder, WouldBlock
from ._errors import from_code as _error
from ._errors import lost as _lost
from ._types import Backup, ClusterStatus, Hold, Holder, Info, Summary, WatchEvent

__all__ = ["AsyncClient", "AsyncSemaphore", "AsyncPermit", "AsyncMultiPermit", "AsyncWatch"]

OnLost = Callable[["AsyncPermit"], Any]


def _ignore(code: int, message: str, value: Any) -> None:
    pass


class _Call:
    """One asynchronous request waiting for its callback. Abandoned (its
    awaiting task cancelled, or no reply in time), a grant that still comes
    is given back."""

    __slots__ = ("client", "fut", "name", "abandoned", "rid", "op", "timer")

    def __init__(self, client: "AsyncClient", op: str, name: Optional[str]) -> None:
        self.client = client
        self.fut = client._loop.create_future()
        self.op = op
        self.name = name
        self.abandoned = False
        self.rid = 0
        self.timer: Optional[asyncio.TimerHandle] = None

    def done(self, code: int, message: str, value: Any) -> None:
        """The library's callback: in the loop's thread, or another."""
        c = self.client
        if threading.get_ident() == c._loop_tid:
            self._done(code, message, value)
        elif not c._loop.is_closed():       # else: the loop is gone, and its futures
            c._loop.call_soon_threadsafe(self._done, code, message, value)

    def _done(self, code: int, message: str, value: Any) -> None:
        if self.timer is not None:
            self.timer.cancel()
        fut = self.fut
        if self.abandoned or fut.cancelled():
            self.abandoned = True
            if code == 0:
                self.client._give_back(self.op, self.name, value)
            return
        if fut.done():
            return
        if code == 0:
            fut.set_result(value)
        elif self.client._closed and code == _c.E_DISCONNECTED:
            fut.set_exception(Closed("the client was closed", code=_c.E_CLOSED, op=self.op,
                                     name=self.name))
        else:
            fut.set_exception(_error(code, message, self.op, self.name))

    def abandon(self) -> None:
        """Give up (the task was cancelled, or no reply in time): cancel the
        request on the daemon, give back a grant already here."""
        if self.abandoned:
            return
        self.abandoned = True
        fut = self.fut
        if fut.done() and not fut.cancelled():
            if fut.exception() is None:
                self.client._give_back(self.op, self.name, fut.result())
            return
        if self.op == "acquire" and self.rid > 0 and not self.client._closed:
            try:
                self.client._h.cancel_async(self.rid)
            except Error:
                pass    # closed or disconnected: the session's end takes it back

    def no_reply(self) -> None:
        self.timer = None
        if self.fut.done():
            return
        self.fut.set_exception(NoReply("no reply in time", code=_c.E_NO_REPLY, op=self.op,
                                       name=self.name))
        self.abandon()


class AsyncClient(ClientBase):
    """Client for asyncio: the same options and operations, as coroutines.
    Connect it with ``await client.connect()`` or ``async with``::

        async with semclient.AsyncClient("tcp:db1:7385", lease=10) as c:
            async with c.semaphore("db/replica", limit=4).acquire(timeout=30) as permit:
                ...

    It belongs to the event loop that connected it. The loop must not be
    blocked for long: it keeps the session alive (a ping a third of the
    lease after the last answer) and ends the client-side lease.
    """

    _keepalive_thread = False

    def _start(self, reply_ms: int, connect_ms: int) -> None:
        """The state of the loop's driving; connect() connects."""
        self._reply_ms = reply_ms
        self._connect_ms = connect_ms
        self._loop: Any = None
        self._loop_tid = 0
        self._fd = -1
        self._fd_stale = False
        self._timer: Optional[asyncio.TimerHandle] = None
        self._timer_when = 0.0
        self._connected = False
        self._lease_timers: Dict[Any, asyncio.TimerHandle] = {}

    # --- lifetime and the loop ---------------------------------------------------

    async def connect(self) -> "AsyncClient":
        """Connect and open the session (in the executor: the handshake
        blocks); then the loop drives the handle."""
        if self._closed:
            raise Closed("the client was closed", code=_c.E_CLOSED, op="connect")
        if self._connected:
            return self
        loop = asyncio.get_running_loop()
        self._loop, self._loop_tid = loop, threading.get_ident()
        await loop.run_in_executor(None, self._h.connect, min(self._connect_ms, 0x7FFFFFFF))
        self._connected = True
        self._arm()
        return self

    async def __aenter__(self) -> "AsyncClient":
        return await self.connect()

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Give back the permits of the session and close (idempotent)."""
        if self._closed:
            return
        held = self._holds.permits()
        if held and self._connected:
            await asyncio.gather(*(p.release() for p in held), return_exceptions=True)
        self._close_now()

    def close(self) -> None:
        """Close at once, from synchronous code: held permits go back with
        the session (its end, or its lease)."""
        self._close_now()

    def _close_now(self) -> None:
        if self._closed:
            return
        self._closed = True
        for w in list(self._watches):
            w._end()
        self._unarm()
        for t in self._lease_timers.values():
            t.cancel()
        self._lease_timers.clear()
        self._h.close()

    def _shutdown_at_exit(self) -> None:
        self._closed = True
        self._h.close()

    def _unarm(self) -> None:
        if self._loop is None:
            return
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            self._fd = -1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        """Watch the handle's current socket; wake up when the library has
        something to do (semc_timeout)."""
        if self._closed or self._loop is None:
            return
        loop = self._loop
        fd = self._h.fd()
        if fd != self._fd or self._fd_stale:
            self._fd_stale = False
            if self._fd >= 0:
                loop.remove_reader(self._fd)
            if fd >= 0:
                loop.add_reader(fd, self._pump)
            self._fd = fd
        t = self._h.timeout()
        if fd < 0 and (t < 0 or t > 100):
            t = 100     # disconnected: semc_process() retries with a back-off
        if t >= 0:
            when = loop.time() + t / 1000.0
            if self._timer is None or when < self._timer_when - 0.001:
                if self._timer is not None:
                    self._timer.cancel()
                self._timer = loop.call_at(when, self._on_timer)
                self._timer_when = when

    def _on_timer(self) -> None:
        self._timer = None
        self._pump()

    def _pump(self) -> None:
        if self._closed:
            return
        self._h.process()
        self._arm()

    def _disconnected(self) -> None:
        # the library closed the socket: its number may come back for the
        # next connection, which the loop must watch afresh
        self._fd_stale = True
        if self._loop is not None and threading.get_ident() != self._loop_tid and \
                not self._closed and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._arm)

    def _check(self) -> None:
        if self._closed:
            raise Closed("the client was closed", code=_c.E_CLOSED, op="call")
        if not self._connected:
            raise Closed("not connected: await connect() first", code=_c.E_CLOSED, op="call")

    def _call(self, op: str, name: Optional[str], extra_ms: int) -> _Call:
        """A _Call with its no-reply timer: the reply timeout plus extra_ms
        (< 0: none, a wait for ever)."""
        call = _Call(self, op, name)
        if extra_ms >= 0:
            call.timer = self._loop.call_later((self._reply_ms + extra_ms) / 1000.0,
                                               call.no_reply)
        return call

    async def _wait(self, call: _Call) -> Any:
        self._arm()
        try:
            return await call.fut
        except asyncio.CancelledError:
            if call.timer is not None:
                call.timer.cancel()
            call.abandon()
            raise

    def _give_back(self, op: str, name: Optional[str], value: Any) -> None:
        """Give back a grant nobody waits for (an abandoned acquire): by its
        permit id, or (a signal-mode grant has none) its n by count (on a
        rate-only name, whose tokens are taken for good, the daemon refuses
        it)."""
        if op != "acquire" or value is None or self._closed:
            return
        try:
            if isinstance(value[0], list):      # a multi-name grant
                for g in value[0]:
                    self._h.up_async(g[0], 0, g[1], _ignore)
            elif value[0]:
                self._h.up_async(name, 0, value[0], _ignore)
            elif value[2]:
                self._h.up_async(name, value[2], 0, _ignore)
        except Error:
            pass

    def _blocking(self, fn: Callable[..., Any], *args: Any) -> Awaitable[Any]:
        """A blocking call of the library, in the loop's executor."""
        self._check()
        return self._loop.run_in_executor(None, functools.partial(fn, *args))

    # --- permits ----------------------------------------------------------------

    def _lost(self, permit: "AsyncPermit", err: HoldLost) -> None:
        if threading.get_ident() != self._loop_tid and self._loop is not None:
            if not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._lost, permit, err)
            return
        if not permit._lose(err):
            return
        if permit._event is not None:
            permit._event.set()
        t = self._lease_timers.pop(permit, None)
        if t is not None:
            t.cancel()
        task = permit._task
        if task is not None and not task.done():
            permit._cancelled_task = True
            task.cancel("semclient: the hold of %s was lost" % permit.name)
        fn = permit._on_lost or self._on_lost
        if fn is not None:
            self._loop.call_soon(_run_on_lost, fn, permit)

    def _arm_lease(self, permit: "AsyncPermit") -> None:
        t = self._lease_timers.pop(permit, None)
        if t is not None:
            t.cancel()
        delay = max(0.0, (permit._expires or 0.0) - time.monotonic())
        self._lease_timers[permit] = self._loop.call_later(
            delay, self._lost, permit,
            _lost(_c.E_HOLD_LOST, "the hold's lease ran out on the client's clock", permit.name))

    def semaphore(self, name: str, *, limit: Optional[int] = None,
                  lease: Optional[Number] = None) -> "AsyncSemaphore":
        """A handle on the semaphore ``name``, as Client.semaphore()."""
        return AsyncSemaphore(self, name, limit, lease)

    def acquire_many(self, wants: Union[Iterable[Any], Dict[str, int]],
                     timeout: Optional[Number] = None, *, lease: Optional[Number] = None,
                     on_lost: Optional[OnLost] = None, priority: int = 0) -> "_AcquireMany":
        """Client.acquire_many(), awaitable and an ``async with``."""
        policy_of(priority, None, None)
        return _AcquireMany(self, wants_of(wants), timeout_ms(timeout), lease_ms(lease),
                            on_lost, priority)

    async def _down(self, name: str, n: int, tms: int, lms: int, climit: int,
                    on_lost: Optional[OnLost], pol: Optional[tuple] = None) -> "AsyncPermit":
        self._check()
        call = self._call("acquire", name, tms)
        sent = time.monotonic()
        if pol is None:
            call.rid = self._h.down_async(name, n, tms, lms, climit, call.done)
        else:
            call.rid = self._h.down_policy_async(name, n, tms, lms, climit, *pol, call.done)
        grant = await self._wait(call)
        return self._file(AsyncPermit(self, name, grant, lms, on_lost, sent))

    async def _down_multi(self, wants: tuple, tms: int, lms: int,
                          on_lost: Optional[OnLost], priority: int = 0) -> "AsyncMultiPermit":
        self._check()
        call = self._call("acquire", wants[0][0], tms)
        sent = time.monotonic()
        call.rid = self._h.down_multi_async(wants, tms, lms, call.done, priority)
        grants, waited = await self._wait(call)
        return AsyncMultiPermit([self._file(AsyncPermit(self, g[0], (g[1], g[2], g[3], waited),
                                                        lms, on_lost, sent)) for g in grants])

    # --- operations -------------------------------------------------------------

    async def info(self, name: str) -> Info:
        """Describe a semaphore (its first 100 holders and waiters; the
        totals count them all)."""
        self._check()
        call = self._call("info", name_of(name), 0)
        self._h.info_async(name, call.done)
        return Info._of(await self._wait(call))

    async def validate(self, name: str, token: int) -> bool:
        self._check()
        call = self._call("validate", name_of(name), 0)
        self._h.validate_async(name, _token(token), call.done)
        return await self._wait(call)

    async def ping(self) -> float:
        """A round trip: its duration in seconds."""
        self._check()
        call = self._call("ping", None, 0)
        t0 = time.monotonic()
        self._h.ping_async(call.done)
        await self._wait(call)
        return time.monotonic() - t0

    async def create(self, name: str, limit: Optional[int] = None, *, mode: str = "owned",
                     exist_ok: bool = False, initial: Optional[int] = None, rate: Any = None,
                     burst: Optional[int] = None, max_waiters: Optional[int] = None,
                     share: Optional[str] = None, weights: Any = None) -> None:
        """Client.create()."""
        await self._blocking(create_checked, self._h,
                             _create_args(name, limit, mode, exist_ok, initial, rate, burst),
                             queue_of(max_waiters, share, weights))

    async def set_queue(self, name: str, max_waiters: Optional[int]) -> None:
        """Client.set_queue()."""
        await self._blocking(self._h.set_queue, name_of(name),
                             queue_of(max_waiters, None, None)[0])

    async def backup(self, file: Any) -> Backup:
        """Client.backup(), in the loop's executor."""
        return Backup._of(await self._blocking(backup_to, self._h, file))

    async def delete(self, name: str, force: bool = False) -> None:
        await self._blocking(self._h.delete, name_of(name), bool(force))

    async def set_limit(self, name: str, limit: int) -> None:
        await self._blocking(self._h.set_limit, name_of(name), count(limit, "limit"))

    async def set_rate(self, name: str, rate: Any, burst: Optional[int] = None) -> None:
        r, p, b = rate_of(0 if rate is None else rate, burst)
        await self._blocking(self._h.set_rate, name_of(name), r, p, b)

    async def list(self, prefix: str = "") -> List[Summary]:
        p = name_of(prefix, "prefix")
        h = self._h
        out = await self._blocking(lambda: list(iter_pages(lambda a: h.list(p, a, 1000), "", "")))
        return [Summary(*t) for t in out]

    async def holds(self, principal: Optional[str] = None) -> List[Hold]:
        if principal is not None:
            name_of(principal, "principal")
        h = self._h
        out = await self._blocking(lambda: list(iter_pages(
            lambda a: _holds_page(h.holds(principal, a, 1000)), 0, 0)))
        return [Hold(n, Holder._of(d)) for n, d in out]

    async def force_release(self, name: str, permit_id: int) -> int:
        return await self._blocking(self._h.release, name_of(name), _token(permit_id, "permit_id"))

    async def stats(self) -> Dict[str, int]:
        return await self._blocking(self._h.stats)

    async def cluster_status(self) -> ClusterStatus:
        return ClusterStatus._of(await self._blocking(self._h.cluster_status))

    async def detach(self) -> None:
        await self._blocking(self._h.detach)

    def watch(self, name: str, *, prefix: bool = False, from_revision: Optional[int] = None,
              resume: bool = False) -> "AsyncWatch":
        """The events of a semaphore (or prefix): ``async for ev in
        client.watch(name)``, or ``async with`` it. ``from_revision`` and
        ``resume`` as Client.watch()'s."""
        rev = 0 if from_revision is None else _token(from_revision, "from_revision")
        return AsyncWatch(self, name_of(name), bool(prefix), rev, bool(resume))


def _run_on_lost(fn: OnLost, permit: "AsyncPermit") -> None:
    r = call_on_lost(fn, permit)
    if asyncio.iscoroutine(r):
        asyncio.ensure_future(r)


class AsyncSemaphore(SemaphoreBase[AsyncClient]):
    """A handle on one named semaphore of an AsyncClient (Semaphore's
    options)."""

    __slots__ = ()

    def acquire(self, n: int = 1, timeout: Optional[Number] = None, *,
                lease: Optional[Number] = None, on_lost: Optional[OnLost] = None,
                priority: int = 0, group: Optional[str] = None,
                replace: Optional[str] = None) -> "_Acquire":
        """Take ``n`` permits, waiting at most ``timeout`` seconds (None: for
        ever). ``permit = await sem.acquire()`` or ``async with
        sem.acquire() as permit:``, which gives it back at its end, cancels
        the body's task when the hold is lost and then raises HoldLost.
        Cancelling the awaiting task cancels the waiter on the daemon.
        ``priority``, ``group`` and ``replace`` as Semaphore.acquire()'s."""
        lms = self._lease_ms if lease is None else lease_ms(lease)
        return _Acquire(self._client, self.name, count(n), timeout_ms(timeout), lms,
                        self._create_limit, on_lost, policy_of(priority, group, replace))

    async def try_acquire(self, n: int = 1, *, lease: Optional[Number] = None,
                          on_lost: Optional[OnLost] = None, priority: int = 0,
                          group: Optional[str] = None) -> Optional["AsyncPermit"]:
        """Take ``n`` permits if free now: an AsyncPermit, or None."""
        try:
            return await self.acquire(n, 0, lease=lease, on_lost=on_lost, priority=priority,
                                      group=group)
        except WouldBlock:
            return None

    async def release(self, n: int = 1) -> int:
        """Semaphore.release(), as a coroutine: ``n`` permits of the name
        back by count (on a signal-mode name, a post)."""
        c = self._client
        c._check()
        call = c._call("release", self.name, 0)
        c._h.up_async(self.name, count(n), 0, call.done)
        released = await c._wait(call) or n
        c._gave_back(self.name, released)
        return released

    async def info(self) -> Info:
        return await self._client.info(self.name)

    async def validate(self, token: int) -> bool:
        return await self._client.validate(self.name, token)

    async def create(self, limit: Optional[int] = None, **kw: Any) -> None:
        await self._client.create(self.name, limit or self._create_limit or 1, **kw)

    async def delete(self, force: bool = False) -> None:
        await self._client.delete(self.name, force)

    async def set_limit(self, limit: int) -> None:
        await self._client.set_limit(self.name, limit)

    async def set_rate(self, rate: Any, burst: Optional[int] = None) -> None:
        await self._client.set_rate(self.name, rate, burst)

    async def set_queue(self, max_waiters: Optional[int]) -> None:
        await self._client.set_queue(self.name, max_waiters)

    def watch(self, **kw: Any) -> "AsyncWatch":
        return self._client.watch(self.name, **kw)


_P = TypeVar("_P", bound=Union["AsyncPermit", "AsyncMultiPermit"])


class _HoldCM(Coroutine[Any, Any, _P]):
    """What acquire() returns: a coroutine whose result is the permit
    (``permit = await sem.acquire()``, or a task of its own:
    ``asyncio.create_task(sem.acquire())``, a TaskGroup's create_task) and
    an async context manager (the permit, given back at the end, the body
    cancelled on loss). The request is made when it first runs."""

    __slots__ = ("_permit", "_coro", "_args")

    def __init__(self, client: AsyncClient, *args: Any) -> None:
        self._args = (client,) + args
        self._coro: Optional[Coroutine[Any, Any, _P]] = None

    def _get(self) -> Coroutine[Any, Any, _P]:
        raise NotImplementedError

    def _run(self) -> Coroutine[Any, Any, _P]:
        if self._coro is None:
            self._coro = self._get()
        return self._coro

    def __await__(self) -> Generator[Any, None, _P]:
        return self._run().__await__()

    def send(self, value: Any) -> Any:
        return self._run().send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        if val is None and tb is None:
            return self._run().throw(typ)
        return self._run().throw(typ, val, tb)      # pragma: no cover (old form)

    def close(self) -> None:
        if self._coro is not None:
            self._coro.close()

    async def __aenter__(self) -> _P:
        self._permit = await self._run()
        self._permit._bind(asyncio.current_task())
        return self._permit

    async def __aexit__(self, et: Any, ev: Any, tb: Any) -> None:
        await self._permit._exit(et, ev)


class _Acquire(_HoldCM["AsyncPermit"]):
    __slots__ = ()

    def _get(self) -> Coroutine[Any, Any, "AsyncPermit"]:
        client, name, n, tms, lms, climit, on_lost, pol = self._args
        return client._down(name, n, tms, lms, climit, on_lost, pol)


class _AcquireMany(_HoldCM["AsyncMultiPermit"]):
    __slots__ = ()

    def _get(self) -> Coroutine[Any, Any, "AsyncMultiPermit"]:
        client, wants, tms, lms, on_lost, priority = self._args
        return client._down_multi(wants, tms, lms, on_lost, priority)


class AsyncPermit(PermitState):
    """A hold granted by AsyncSemaphore.acquire(): as Permit, with
    ``lost`` an asyncio.Event and release()/renew() coroutines. In an
    ``async with`` block the body's task is cancelled when the hold is
    lost, and the block raises HoldLost instead of CancelledError."""

    __slots__ = ("_event", "_task", "_cancelled_task")

    def __init__(self, client: AsyncClient, name: str, grant: tuple, lease: int,
                 on_lost: Optional[OnLost], sent: float) -> None:
        super().__init__(client, name, grant, lease, on_lost, sent)
        self._event: Optional[asyncio.Event] = None
        self._task: Optional["asyncio.Task[Any]"] = None
        self._cancelled_task = False

    @property
    def lost(self) -> asyncio.Event:
        """An asyncio.Event set when the hold is lost."""
        if self._event is None:
            self._event = self._lost_event(asyncio.Event())
        return self._event

    def check(self) -> None:
        """Raise HoldLost if the hold is lost."""
        if self._state == self.HELD and self._expires is not None and \
                time.monotonic() >= self._expires:
            self._client._lost(self, _lost(_c.E_HOLD_LOST, "the hold's lease ran out on the "
                                           "client's clock", self.name))
        if self._state == self.LOST and self._lost_error is not None:
            raise self._lost_error

    async def release(self, n: Optional[int] = None) -> bool:
        """Give the permit back by its permit id; idempotent (True when this
        call gave it back). ``n`` less than the hold's: only that many, as
        Permit.release(n)."""
        c = self._client
        part = self._part(n)
        if part is not None:
            c._check()
            call = c._call("release", self.name, 0)
            c._h.up_async(self.name, part, 0, call.done)
            await c._wait(call)
            c._gave_back(self.name, part)
            return True
        if self._state != self.HELD:
            return False
        self._state = self.RELEASED
        c._holds.drop((self.name, self.permit_id))
        t = c._lease_timers.pop(self, None)
        if t is not None:
            t.cancel()
        if c._closed:
            return False
        call = c._call("release", self.name, 0)
        c._h.up_async(self.name, 0, self.permit_id, call.done)
        try:
            await c._wait(call)
        except (HoldLost, NotHolder, NotFound) as e:
            self._state = self.HELD
            c._lost(self, e if isinstance(e, HoldLost) else
                    _lost(_c.E_HOLD_LOST, "the daemon no longer had it: " + e.message, self.name))
            return False
        return True

    async def renew(self, lease: Optional[Number] = None) -> None:
        """Permit.renew(), as a coroutine."""
        self.check()
        c = self._client
        if self.lease is None:
            await c.ping()
            self.check()
            return
        lms = lease_ms(lease) if lease is not None else 0
        sent = time.monotonic()
        renewed, _exp = await c._blocking(c._h.renew, self.name, self.permit_id, lms)
        if renewed == 0:
            c._lost(self, _lost(_c.E_HOLD_LOST, "the hold is gone", self.name))
            self.check()
        self._expires = lease_end(sent, lms or int(self.lease * 1000))
        c._arm_lease(self)

    def _bind(self, task: Optional["asyncio.Task[Any]"]) -> None:
        """Cancel task when the hold is lost (an async with's body)."""
        self._task = task
        if self._state == self.LOST and task is not None:
            self._cancelled_task = True
            task.cancel("semclient: the hold of %s was lost" % self.name)

    async def _exit(self, et: Any, ev: Any) -> None:
        self._task, task = None, self._task
        lost = self._state == self.LOST
        ours = self._cancelled_task
        if lost and ours and task is not None and hasattr(task, "uncancel"):
            task.uncancel()     # the cancellation was ours: it becomes HoldLost
        await self.release()
        if lost and self._lost_error is not None and (et is None or (
                ours and et is not None and issubclass(et, asyncio.CancelledError))):
            raise self._lost_error from (ev if et is not None else None)


class AsyncMultiPermit(PermitGroup):
    """The permits of a multi-name acquire (as MultiPermit), for asyncio."""

    __slots__ = ()

    async def release(self) -> bool:
        ok = True
        for p in self.permits:
            ok = (await p.release()) and ok
        return ok

    def _bind(self, task: Optional["asyncio.Task[Any]"]) -> None:
        for p in self.permits:
            p._bind(task)

    async def _exit(self, et: Any, ev: Any) -> None:
        err: Optional[BaseException] = None
        for p in self.permits:
            try:
                await p._exit(et, ev)
            except HoldLost as e:
                err = err or e
        if err is not None:
            raise err


class AsyncWatch(WatchBase[AsyncClient]):
    """Watch for asyncio: ``async for ev in client.watch(name)``; ``await``
    it to make the watch before iterating, or ``async with`` it."""

    def __init__(self, client: AsyncClient, name: str, prefix: bool, from_revision: int = 0,
                 resume: bool = False) -> None:
        super().__init__(client, name, prefix, from_revision, resume)
        self._q: "asyncio.Queue[WatchEvent]" = asyncio.Queue()
        self._id = 0

    async def start(self) -> "AsyncWatch":
        """Make the watch on the daemon (idempotent)."""
        if self._id == 0:
            c = self._client
            self._id = await c._blocking(c._h.watch, self.name, self.prefix, self._push,
                                         self._from)
            c._watches.add(self)
            c._arm()
        return self

    def __await__(self) -> Generator[Any, None, "AsyncWatch"]:
        return self.start().__await__()

    def _push(self, t: tuple) -> None:
        c = self._client
        ev = WatchEvent._of(t)
        if threading.get_ident() == c._loop_tid:
            self._q.put_nowait(ev)
        elif not c._loop.is_closed():
            c._loop.call_soon_threadsafe(self._q.put_nowait, ev)

    def _wake(self) -> None:
        # a None in the queue wakes the reader to look at the flags
        c = self._client
        if c._loop is None:
            return
        if threading.get_ident() == c._loop_tid:
            self._q.put_nowait(None)  # type: ignore[arg-type]
        elif not c._loop.is_closed():
            c._loop.call_soon_threadsafe(self._q.put_nowait, None)

    def __aiter__(self) -> "AsyncWatch":
        return self

    async def __anext__(self) -> WatchEvent:
        await self.start()
        c = self._client
        while True:
            if self._ended or c._closed:
                raise StopAsyncIteration
            if self._stale:
                self._stale = False
                old = self._id
                rev, gap = self._again()
                try:
                    self._id = await c._blocking(c._h.watch, self.name, self.prefix,
                                                 self._push, rev)
                except Compacted:
                    self._id, gap = await c._blocking(c._h.watch, self.name, self.prefix,
                                                      self._push), True
                try:
                    await c._blocking(c._h.unwatch, old)
                except Error:
                    pass
                if gap:
                    self._gapped()
                    return WatchEvent._gap(self.name, time.time())
                continue
            ev = self._seen(await self._q.get())
            if ev is not None:
                return ev

    async def aclose(self) -> None:
        """End the watch (idempotent)."""
        if self._ended:
            return
        self._end()
        c = self._client
        c._watches.discard(self)
        if self._id and not c._closed:
            try:
                await c._blocking(c._h.unwatch, self._id)
            except Error:
                pass

    async def __aenter__(self) -> "AsyncWatch":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
