# SPDX-License-Identifier: BSD-2-Clause
"""The promises of the daemon kept up to the caller's code (issue 34): grants
made together resume their tasks in FIFO (token) order; a cancel that
crosses a signal-mode grant loses no permit; a lease longer than the
daemon's max-lease is refused before the acquire queues; acquire() is a
coroutine (tasks, task groups); create(exist_ok=True) is not silent about
another limit; a post to a signal-mode name and a part of a hold given back;
the daemon's argument ranges."""
import asyncio
import os
import random
import subprocess
import sys
import time

import pytest

import semclient


def run(coro, timeout=60):
    async def bounded():
        return await asyncio.wait_for(coro, timeout)
    return asyncio.run(bounded())


async def waiters(c, name, n):
    """Wait (bounded) until name has n waiters."""
    for _ in range(500):
        if (await c.info(name)).waiters_total == n:
            return True
        await asyncio.sleep(0.005)
    return False


def test_fifo_simultaneous_grants(semd):
    """Four tasks wait on a limit-4 name held whole; one up of 4 grants them
    all at once (one write of the daemon, one read of the library): they
    resume in the order of their tokens, the order the daemon granted."""
    async def main():
        async with semclient.AsyncClient(semd.unix) as c, \
                semclient.AsyncClient(semd.unix) as h:
            await c.create("fifo", 4)
            sem = c.semaphore("fifo")
            for _ in range(5):
                held = await h.semaphore("fifo").acquire(4)
                resumed = []

                async def wait():
                    p = await sem.acquire(timeout=10)
                    resumed.append(p.token)
                    return p
                tasks = []
                for _ in range(4):
                    tasks.append(asyncio.create_task(wait()))
                    await asyncio.sleep(0)
                assert await waiters(h, "fifo", 4)
                await held.release()
                permits = await asyncio.gather(*tasks)
                assert resumed == sorted(resumed), resumed
                assert [p.token for p in permits] == sorted(resumed)    # queued in order
                for p in permits:
                    await p.release()
    run(main())


def test_cancel_signal_acquires_under_load(semd):
    """1,000 signal-mode acquires, most cancelled by short deadlines while
    permits are posted and taken around them: a grant that crosses its
    cancel has no permit id and goes back by count (it was dropped, and
    each such crossing lost a permit for good)."""
    limit = 4

    async def main():
        async with semclient.AsyncClient(semd.unix) as c, \
                semclient.AsyncClient(semd.tcp) as c2:
            await c.create("sig", limit, mode="signal", initial=limit)
            rnd = random.Random(34)
            tries, got = [0], [0]

            async def worker(cl):
                sem = cl.semaphore("sig")
                while tries[0] < 1000:
                    tries[0] += 1
                    try:
                        p = await asyncio.wait_for(sem.acquire(), rnd.choice((0, 0.0005, 0.002)))
                    except asyncio.TimeoutError:
                        continue
                    got[0] += 1
                    await asyncio.sleep(0)
                    await sem.release(p.n)      # the post that gives it back
            await asyncio.gather(*(worker(c if i % 2 else c2) for i in range(8)))
            assert got[0] > 0
            for _ in range(400):
                info = await c.info("sig")
                if info.available == limit and info.waiters_total == 0:
                    break
                await asyncio.sleep(0.01)
            assert (info.available, info.waiters_total) == (limit, 0), (got[0], info)
            assert c._debug()["callbacks"] == 0 and c2._debug()["callbacks"] == 0
    run(main(), 120)


@pytest.fixture
def short_max(daemons):
    return daemons.start("short", "--max-lease", "3s")


def test_lease_longer_than_max_lease(short_max):
    """semd --max-lease 3s: a hold lease of 10 s is refused before the
    acquire queues (it was cut to 3 s silently: lost stayed False, lease_left
    said 6 s, the hold was gone); 3 s is granted as asked."""
    d = short_max
    with semclient.Client(d.unix) as c, semclient.Client(d.unix) as h:
        c.create("m", 1)
        held = h.semaphore("m").acquire()
        token = c.info("m").last_token
        t0 = time.monotonic()
        with pytest.raises(semclient.Invalid, match="max-lease"):
            c.semaphore("m", lease=10).acquire(timeout=5)
        assert time.monotonic() - t0 < 2, "refused before it waited its turn"
        assert c.info("m").last_token == token and c.info("m").waiters_total == 0
        with pytest.raises(semclient.Invalid):
            c.acquire_many(["m"], timeout=0, lease=10)
        held.release()
        with c.semaphore("m", lease=3).acquire() as p:
            assert 2 < p.lease_left <= 3
            with pytest.raises(semclient.Invalid):
                p.renew(10)
            p.renew(3)

    async def main():
        async with semclient.AsyncClient(d.tcp) as ac:
            with pytest.raises(semclient.Invalid, match="max-lease"):
                await ac.semaphore("m", lease=10).acquire(timeout=5)
            p = await ac.semaphore("m", lease=2).acquire()
            with pytest.raises(semclient.Invalid):
                await p.renew(4)
            await p.release()
    run(main())


def test_acquire_is_a_coroutine(semd):
    """acquire() is a coroutine (create_task, TaskGroup.create_task, gather)
    and an async context manager; made and never run it asks nothing."""
    async def main():
        async with semclient.AsyncClient(semd.unix) as c:
            await c.create("co", 3)
            sem = c.semaphore("co")
            assert asyncio.iscoroutine(sem.acquire())
            p = await asyncio.create_task(sem.acquire())
            assert isinstance(p, semclient.AsyncPermit) and p.held
            async with asyncio.TaskGroup() as tg:
                t1 = tg.create_task(sem.acquire())
                t2 = tg.create_task(c.acquire_many(["co"]))
            assert t1.result().held and t2.result().held
            for q in (p, t1.result(), t2.result()):
                await q.release()
            unused = sem.acquire()
            unused.close()          # never run: nothing sent, nothing held
            assert (await c.info("co")).available == 3
            async with sem.acquire() as q:
                assert q.held
            assert q.released
            t = asyncio.create_task(sem.acquire(3))
            p = await t
            with pytest.raises(semclient.WouldBlock):
                await sem.acquire(timeout=0)
            await p.release()
    run(main())


def test_create_exist_ok_another_limit(semd):
    """exist_ok passes a name with the limit and mode asked, and says so
    when they differ (the daemon's if_not_exists took any: silently 4
    permits for a caller that asked 5)."""
    with semclient.Client(semd.unix) as c:
        c.create("ex", 4)
        c.create("ex", 4, exist_ok=True)
        with pytest.raises(semclient.Exists, match="limit 4 .*not 5"):
            c.create("ex", 5, exist_ok=True)
        with pytest.raises(semclient.Exists, match="signal"):
            c.create("ex", 4, mode="signal", exist_ok=True)
        with pytest.raises(semclient.Exists):
            c.create("ex", 4)
        c.create("ex2", 2, exist_ok=True)
        assert c.info("ex2").limit == 2

    async def main():
        async with semclient.AsyncClient(semd.unix) as c:
            await c.create("ex", 4, exist_ok=True)
            with pytest.raises(semclient.Exists, match="not 7"):
                await c.create("ex", 7, exist_ok=True)
    run(main())


def test_post_and_part_of_a_hold(semd):
    """A post to a signal-mode name, and a part of a hold given back, in the
    synchronous and the asyncio client."""
    with semclient.Client(semd.unix) as c:
        c.create("post", 4, mode="signal", initial=0)
        sig = c.semaphore("post")
        assert sig.release(3) == 3
        assert c.info("post").available == 3
        p = sig.acquire(2, timeout=1)
        assert p.permit_id == 0 and c.info("post").available == 1
        sig.release(2)
        assert c.info("post").available == 3
        c.create("part", 4)
        sem = c.semaphore("part")
        p = sem.acquire(3)
        assert p.release(1) is True and p.n == 2 and p.held
        info = c.info("part")
        assert info.available == 2 and info.holders[0].n == 2
        with pytest.raises(ValueError):
            p.release(5)
        q = sem.acquire(1)
        with pytest.raises(ValueError, match="newest"):
            p.release(1)            # the daemon would take it from q
        assert sem.release(2) == 2  # q (newest) whole, then one of p
        assert q.released and p.n == 1 and c.info("part").available == 3
        assert p.release() is True and c.info("part").available == 4
        with pytest.raises(semclient.NotHolder):
            sem.release(1)

    async def main():
        async with semclient.AsyncClient(semd.unix) as c:
            sig = c.semaphore("post")
            assert await sig.release(1) == 1
            assert (await c.info("post")).available == 4
            sem = c.semaphore("part")
            p = await sem.acquire(4)
            assert await p.release(3) and p.n == 1
            assert (await c.info("part")).available == 3
            assert await p.release() and (await c.info("part")).available == 4
    run(main())


TYPED = '''
import asyncio
import semclient

async def main(c: semclient.AsyncClient) -> None:
    sem = c.semaphore("a")
    permit = await sem.acquire()
    reveal_type(permit)
    reveal_type(asyncio.create_task(sem.acquire()))
    async with sem.acquire() as p:
        reveal_type(p)
    reveal_type(await c.acquire_many(["a"]))
    n: int = await sem.release(2)

def sync(c: semclient.Client) -> None:
    reveal_type(c.semaphore("a").acquire())
'''


def test_typed(tmp_path):
    """``permit = await sem.acquire()`` is an AsyncPermit to a type checker
    (it was Any), create_task() takes acquire(), and the package checks
    clean (mypy, Debian's python3 package of it)."""
    src = tmp_path / "typed.py"
    src.write_text(TYPED)
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(semclient.__file__)))
    env = dict(os.environ, MYPYPATH=pkg)
    env.pop("LD_PRELOAD", None)     # the ASan runtime is for the extension, not mypy
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
                        "--no-error-summary", str(src)], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=120)
    revealed = [line.split('Revealed type is "')[1].rstrip('"') for line in r.stdout.splitlines()
                if "Revealed type is" in line]
    assert revealed == ["semclient._aio.AsyncPermit",
                        "asyncio.tasks.Task[semclient._aio.AsyncPermit]",
                        "semclient._aio.AsyncPermit", "semclient._aio.AsyncMultiPermit",
                        "semclient._client.Permit"], r.stdout
    assert "error" not in r.stdout, r.stdout
