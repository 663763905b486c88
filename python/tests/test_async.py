# SPDX-License-Identifier: BSD-2-Clause
"""AsyncClient against a real semd: operations, tasks sharing a client,
cancellation of a waiting acquire (the waiter leaves the daemon's line at
once, a grant that crosses the cancel goes back, nothing leaks), watches,
blocking operations in the executor."""
import asyncio
import time

import pytest

import semclient


def run(coro, timeout=60):
    async def bounded():
        return await asyncio.wait_for(coro, timeout)
    return asyncio.run(bounded())


def test_operations(addr):
    async def main():
        async with semclient.AsyncClient(addr, name="aio") as c:
            assert "session=" in repr(c) and c.session.id > 0
            await c.create("a", 2)
            sem = c.semaphore("a")
            async with sem.acquire() as p:
                assert isinstance(p, semclient.AsyncPermit) and p.held
                assert await c.validate("a", p.token)
                info = await c.info("a")
                assert info.available == 1 and info.holders[0].client_name == "aio"
                assert not p.lost.is_set()
            assert p.released and not await c.validate("a", p.token)
            assert await p.release() is False
            p = await sem.acquire(2)
            assert await sem.try_acquire() is None
            with pytest.raises(semclient.WouldBlock):
                await sem.acquire(timeout=0)
            t0 = time.monotonic()
            with pytest.raises(semclient.Timeout):
                await sem.acquire(timeout=0.2)
            assert time.monotonic() - t0 >= 0.15
            assert await p.release()
            assert await c.ping() > 0
            assert [s.name for s in await c.list()] == ["a"]
            await c.set_limit("a", 4)
            assert (await sem.info()).limit == 4
            async with c.acquire_many(["a", ("a2", 1)], timeout=5) as mp:
                assert len(mp) == 2 and mp["a"].n == 1
            with pytest.raises(semclient.NotFound):
                await c.info("none")
            with pytest.raises(semclient.NotFound):
                await c.delete("none")
            q = await c.semaphore("det", limit=1, lease=30).acquire()
            assert q.lease == 30 and q.lease_left > 25
            await q.renew(60)
            assert q.lease_left > 55
            assert [h.name for h in await c.holds()] == ["det"]
            await q.release()
            st = await c.stats()
            assert st["grants"] >= 5
            await c.delete("a", force=True)
        assert c.closed
        with pytest.raises(semclient.Closed):
            await c.ping()
    run(main())


def test_tasks_share_a_client(addr):
    limit, tasks, rounds = 3, 16, 30

    async def main():
        async with semclient.AsyncClient(addr) as c:
            await c.create("t", limit)
            sem = c.semaphore("t")
            inside, most = [0], [0]

            async def work():
                for _ in range(rounds):
                    async with sem.acquire(timeout=30):
                        inside[0] += 1
                        most[0] = max(most[0], inside[0])
                        await asyncio.sleep(0)
                        inside[0] -= 1
            await asyncio.gather(*(work() for _ in range(tasks)))
            assert 1 <= most[0] <= limit
            info = await c.info("t")
            assert info.available == limit and info.holders_total == 0
            assert c._debug() == {"pending": 0, "callbacks": 0, "permits": 0, "reconnects": 0}
    run(main())


def test_cancel_frees_the_waiter_at_once(addr):
    async def main():
        async with semclient.AsyncClient(addr) as c, semclient.AsyncClient(addr) as other:
            await c.create("cx", 1)
            holder = await other.semaphore("cx").acquire()
            for _ in range(20):
                task = asyncio.ensure_future(c.semaphore("cx").acquire())
                await asyncio.sleep(0.005)
                for _ in range(200):
                    if (await other.info("cx")).waiters_total == 1:
                        break
                    await asyncio.sleep(0.005)
                assert (await other.info("cx")).waiters_total == 1
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                # the Cancel went before this info on c's connection
                assert (await c.info("cx")).waiters_total == 0
            await holder.release()
            assert (await c.info("cx")).available == 1
            assert c._debug()["callbacks"] == 0 and c._debug()["pending"] == 0
    run(main())


def test_cancel_racing_grants_leaks_nothing(addr):
    """Waiters cancelled while the permit is handed around: whatever crosses
    the cancel is given back; the permits are all free at the end."""
    async def main():
        async with semclient.AsyncClient(addr) as c, semclient.AsyncClient(addr) as h:
            await c.create("race", 2)
            for i in range(150):
                p = await h.semaphore("race").acquire(2)
                tasks = [asyncio.ensure_future(c.semaphore("race").acquire()) for _ in range(3)]
                await asyncio.sleep(0)
                rel = asyncio.ensure_future(p.release())
                if i % 3:
                    await asyncio.sleep(0.0002 * (i % 7))
                for t in tasks:
                    t.cancel()
                got = await asyncio.gather(*tasks, return_exceptions=True)
                await rel
                for g in got:
                    if isinstance(g, semclient.AsyncPermit):
                        await g.release()
            for _ in range(200):
                info = await c.info("race")
                if info.available == 2 and info.waiters_total == 0:
                    break
                await asyncio.sleep(0.01)
            assert (info.available, info.holders_total, info.waiters_total) == (2, 0, 0)
            assert c._debug()["callbacks"] == 0 and c.holding == 0
    run(main())


def test_cancel_multi(addr):
    async def main():
        async with semclient.AsyncClient(addr) as c, semclient.AsyncClient(addr) as h:
            await c.create("mc/a", 1)
            await c.create("mc/b", 1)
            p = await h.semaphore("mc/b").acquire()
            t = asyncio.ensure_future(c.acquire_many(["mc/a", "mc/b"]))
            for _ in range(200):
                if (await h.info("mc/b")).waiters_total == 1:
                    break
                await asyncio.sleep(0.005)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            assert (await c.info("mc/b")).waiters_total == 0
            assert (await c.info("mc/a")).available == 1
            await p.release()
    run(main())


def test_no_reply_timeout(semd, relay_to):
    """A daemon that stops answering: an acquire with a deadline gives up
    after it plus the reply timeout (NoReply), and its waiter is cancelled."""
    relay = relay_to(semd.tcp)

    async def main():
        async with semclient.AsyncClient(relay.addr, timeout=0.5) as c:
            await c.create("nr", 1)
            relay.stall()
            t0 = time.monotonic()
            with pytest.raises(semclient.NoReply):
                await c.semaphore("nr").acquire(timeout=0.2)
            assert 0.6 <= time.monotonic() - t0 < 5
            relay.stall(False)
    run(main())


def test_watch_async(addr):
    async def main():
        async with semclient.AsyncClient(addr) as c, semclient.AsyncClient(addr) as w:
            async with w.watch("aw/", prefix=True) as events:
                await c.create("aw/x", 1)
                p = await c.semaphore("aw/x").acquire()
                await p.release()
                kinds = []
                async for ev in events:
                    kinds.append(ev.kind)
                    if ev.kind == "release":
                        break
                assert kinds == ["create", "grant", "release"]
            # iterated directly, ended by aclose()
            ws = w.watch("aw/x")
            await ws
            await c.set_limit("aw/x", 2)
            ev = await ws.__anext__()
            assert ev.kind == "limit" and ev.limit == 2
            await ws.aclose()
            with pytest.raises(StopAsyncIteration):
                await ws.__anext__()
    run(main())


def test_executor_callbacks(addr):
    """Blocking operations run in the executor: a callback of the loop's
    requests that runs there is handed to the loop."""
    async def main():
        async with semclient.AsyncClient(addr) as c:
            await c.create("ex", 1)
            sem = c.semaphore("ex")
            for _ in range(50):
                p, _ = await asyncio.gather(sem.acquire(), c.list("ex"))
                await asyncio.gather(p.release(), c.holds())
            assert (await c.info("ex")).available == 1
    run(main())


def test_not_connected():
    async def main():
        c = semclient.AsyncClient("unix:/nonexistent/s.sock")
        with pytest.raises(semclient.Closed):
            await c.semaphore("x").acquire()
        c.close()
        with pytest.raises(semclient.Closed):
            await c.connect()
    run(main())
