# SPDX-License-Identifier: BSD-2-Clause
"""A lost hold is never silent: Permit.lost, lost_error, on_lost,
check(), a with block that raises HoldLost, and in asyncio the body's task
cancelled. Lost by force-release, a forced delete, the daemon shutting
down, the client-side lease ending on a network that stopped delivering
(before the daemon can grant the permit again), a detached hold's lease."""
import asyncio
import signal
import threading
import time

import pytest

import semclient
from conftest import wait_for


def test_force_release_with_lease(semd):
    seen = []
    with semclient.Client(semd.unix, lease=10, on_lost=seen.append) as c, \
            semclient.Client(semd.unix) as admin:
        c.create("fl", 1)
        with pytest.raises(semclient.HoldLost) as ei:
            with c.semaphore("fl").acquire() as p:
                assert not p.lost.is_set()
                admin.force_release("fl", p.permit_id)
                # the library's thread reads the notice: no call needed
                assert p.lost.wait(10)
                assert seen == [p] and not p.held and "lost" in repr(p)
                assert p.lost_error.reason == semclient.E_CANCELLED
                with pytest.raises(semclient.HoldLost):
                    p.check()
                assert p.lease_left == 0
        assert ei.value is p.lost_error and ei.value.exit_code == 5 and ei.value.name == "fl"
        assert p.release() is False
        assert c.holding == 0
        assert admin.info("fl").available == 1


def test_force_release_without_lease(semd):
    """No lease, no library thread: the next call learns; check() asks."""
    with semclient.Client(semd.unix) as c, semclient.Client(semd.unix) as admin:
        c.create("nl", 1)
        calls = []
        p = c.semaphore("nl").acquire(on_lost=calls.append)
        admin.force_release("nl", p.permit_id)
        assert wait_for(lambda: _raises(p.check), 10)
        assert p.lost.is_set() and calls == [p]
        assert p.lost_error.reason == semclient.E_CANCELLED


def _raises(f):
    try:
        f()
    except semclient.HoldLost:
        return True
    return False


def test_forced_delete(semd):
    with semclient.Client(semd.unix, lease=10) as c, semclient.Client(semd.unix) as admin:
        c.create("fd", 2)
        mp = c.acquire_many(["fd"])
        admin.delete("fd", force=True)
        assert mp[0].lost.wait(10)
        with pytest.raises(semclient.HoldLost):
            mp.check()


def test_daemon_shutdown(daemons):
    d = daemons.start("down")
    with semclient.Client(d.unix, lease=10, reconnect=False) as c:
        c.create("sd", 1)
        p = c.semaphore("sd").acquire()
        d.stop(signal.SIGTERM)
        assert p.lost.wait(10)
        assert p.lost_error.reason in (semclient.E_UNAVAILABLE, semclient.E_DISCONNECTED)


def test_client_side_lease_ends_first(semd, relay_to):
    """The network stops delivering: the client-side lease ends and the hold
    is reported lost before the daemon grants the permit to the waiter."""
    relay = relay_to(semd.tcp)
    lost_at, granted_at = [], []
    with semclient.Client(relay.addr, lease=3) as c, semclient.Client(semd.unix) as w:
        c.create("cs", 1)
        p = c.semaphore("cs").acquire(on_lost=lambda p: lost_at.append(time.monotonic()))

        def wait():
            with w.semaphore("cs").acquire(timeout=30):
                granted_at.append(time.monotonic())
        t = threading.Thread(target=wait)
        t.start()
        assert wait_for(lambda: w.info("cs").waiters_total == 1)
        relay.stall()
        t0 = time.monotonic()
        t.join(30)
        assert lost_at and granted_at, (lost_at, granted_at)
        assert p.lost_error.reason == semclient.E_HOLD_LOST
        # the library's margin is max(50 ms, lease / 20) = 150 ms here
        assert lost_at[0] < granted_at[0], (lost_at[0] - t0, granted_at[0] - t0)
        assert lost_at[0] - t0 < 6.0     # a bound on a hang only (lease 3 s)
        relay.stall(False)


def test_detached_lease_runs_out(semd):
    with semclient.Client(semd.unix) as c:
        c.create("dl", 1)
        kept = c.semaphore("dl", lease=4).acquire()
        lost = []
        p = c.semaphore("dl2", limit=1, lease=1).acquire(on_lost=lost.append)
        for _ in range(4):      # renewed well in time: kept
            time.sleep(0.5)
            kept.renew()
        assert kept.held
        assert p.lost.wait(5) and lost == [p]
        assert p.lost_error.reason == semclient.E_HOLD_LOST
        assert kept.held
        kept.release()


def test_async_body_cancelled_on_loss(semd):
    async def main():
        async with semclient.AsyncClient(semd.unix, lease=10) as c, \
                semclient.AsyncClient(semd.unix) as admin:
            await c.create("al", 1)
            notes = []

            async def on_lost(p):
                notes.append(p.name)
            t0 = time.monotonic()
            with pytest.raises(semclient.HoldLost) as ei:
                async with c.semaphore("al").acquire(on_lost=on_lost) as p:
                    asyncio.get_running_loop().call_later(
                        0.05, lambda: asyncio.ensure_future(
                            admin.force_release("al", p.permit_id)))
                    await asyncio.sleep(30)
            assert time.monotonic() - t0 < 10
            assert ei.value.reason == semclient.E_CANCELLED
            assert isinstance(ei.value.__cause__, asyncio.CancelledError)
            assert p.lost.is_set() and not p.held
            for _ in range(500):        # the coroutine on_lost runs as a task
                if notes:
                    break
                await asyncio.sleep(0.01)
            assert notes == ["al"]
            # the task goes on: it was not left cancelled
            await asyncio.sleep(0.01)
            assert (await c.info("al")).available == 1
    asyncio.run(main())


def test_async_lease_ends(semd, relay_to):
    relay = relay_to(semd.tcp)

    async def main():
        async with semclient.AsyncClient(relay.addr, lease=2) as c:
            await c.create("ae", 1)
            with pytest.raises(semclient.HoldLost) as ei:
                async with c.semaphore("ae").acquire() as p:
                    relay.stall()
                    await p.lost.wait()
                    await asyncio.sleep(30)     # cancelled: the hold is gone
            assert ei.value.reason == semclient.E_HOLD_LOST
            relay.stall(False)
    asyncio.run(asyncio.wait_for(main(), 30))


def test_async_external_cancel_is_not_hold_lost(semd):
    """A cancellation that is not the loss's goes on as CancelledError, and
    the permit goes back."""
    async def main():
        async with semclient.AsyncClient(semd.unix) as c:
            await c.create("ec", 1)

            async def body():
                async with c.semaphore("ec").acquire():
                    await asyncio.sleep(30)
            t = asyncio.ensure_future(body())
            await asyncio.sleep(0.05)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            assert (await c.info("ec")).available == 1
    asyncio.run(main())


def test_watch_comes_back_after_a_cut(semd, relay_to):
    """A watch belongs to its connection: after a cut the client resumes its
    session, makes the watch again, and a "gap" event says so."""
    relay = relay_to(semd.tcp)
    with semclient.Client(relay.addr, lease=5) as w, semclient.Client(semd.unix) as c:
        c.create("wc", 1)
        with w.watch("wc") as events:
            c.set_limit("wc", 2)
            assert events.get(timeout=10).kind == "limit"
            relay.cut()
            assert wait_for(lambda: w._reconnects > 0, 10)
            ev = events.get(timeout=10)
            assert ev is not None and ev.kind == "gap"
            c.set_limit("wc", 3)
            ev = events.get(timeout=10)
            assert ev is not None and (ev.kind, ev.limit) == ("limit", 3)


def test_async_watch_comes_back_after_a_cut(semd, relay_to):
    relay = relay_to(semd.tcp)

    async def main():
        async with semclient.AsyncClient(relay.addr, lease=5) as w, \
                semclient.AsyncClient(semd.unix) as c:
            await c.create("awc", 1)
            async with w.watch("awc") as events:
                await c.set_limit("awc", 2)
                assert (await events.__anext__()).kind == "limit"
                relay.cut()
                ev = await events.__anext__()
                assert ev.kind == "gap"
                await c.set_limit("awc", 3)
                ev = await events.__anext__()
                assert (ev.kind, ev.limit) == ("limit", 3)
    asyncio.run(asyncio.wait_for(main(), 30))
