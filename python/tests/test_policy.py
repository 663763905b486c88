# SPDX-License-Identifier: BSD-2-Clause
"""The 0.4.0 additions against a real semd: queue policies (max_waiters,
fair shares), an acquire's priority, group and replace key, backups,
watches resumed from a revision, parent sessions."""
from __future__ import annotations

import asyncio
import hashlib
import os
import threading

import pytest

import semclient
from conftest import wait_for


def _waiters(c, name):
    return c.info(name).waiters_total


def _in_thread(fn):
    """Run fn in a thread; the returned dict gets its result or exception."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as e:      # handed to the test
            out["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    out["thread"] = t
    return out


def _granted_after(held, waiter):
    """Release held: the thread of waiter gets the permit, which it gives back."""
    held.release()
    waiter["thread"].join(30)
    assert waiter["value"].held
    waiter["value"].release()


def test_max_waiters_and_set_queue(addr):
    with semclient.Client(addr) as c:
        c.create("mq", 1, max_waiters=1)
        assert c.info("mq").max_waiters == 1
        held = c.semaphore("mq").acquire()
        w = _in_thread(lambda: c.semaphore("mq").acquire(timeout=30))
        assert wait_for(lambda: _waiters(c, "mq") == 1)
        with pytest.raises(semclient.QueueFull) as ei:
            c.semaphore("mq").acquire(timeout=30)
        assert ei.value.code == semclient.E_QUEUE_FULL and ei.value.exit_code == 8
        c.set_queue("mq", None)
        assert c.info("mq").max_waiters == 0
        with pytest.raises(semclient.Timeout):     # queued, now that the line is unbounded
            c.semaphore("mq").acquire(timeout=0.05)
        _granted_after(held, w)


def test_replace_key(addr):
    with semclient.Client(addr) as c:
        c.create("rk", 1)
        held = c.semaphore("rk").acquire()
        first = _in_thread(lambda: c.semaphore("rk").acquire(timeout=30, replace="job"))
        assert wait_for(lambda: _waiters(c, "rk") == 1)
        assert [(w.priority, w.replace) for w in c.info("rk").waiters] == [(0, "job")]
        second = _in_thread(lambda: c.semaphore("rk").acquire(timeout=30, replace="job"))
        first["thread"].join(30)
        err = first.get("error")
        assert isinstance(err, semclient.Replaced) and isinstance(err, semclient.Cancelled)
        assert err.code == semclient.E_REPLACED and err.exit_code == 9
        assert wait_for(lambda: _waiters(c, "rk") == 1)
        _granted_after(held, second)


def test_priority_serves_the_higher_class_first(addr):
    with semclient.Client(addr) as c:
        c.create("pr", 1)
        held = c.semaphore("pr").acquire()
        order = []

        def take(prio):
            p = c.semaphore("pr").acquire(timeout=30, priority=prio)
            order.append(prio)
            p.release()
        low = _in_thread(lambda: take(-3))
        assert wait_for(lambda: _waiters(c, "pr") == 1)
        high = _in_thread(lambda: take(semclient.PRIORITY_MAX))
        assert wait_for(lambda: _waiters(c, "pr") == 2)
        assert sorted((w.priority, w.replace) for w in c.info("pr").waiters) == [
            (-3, ""), (semclient.PRIORITY_MAX, "")]
        held.release()
        low["thread"].join(30)
        high["thread"].join(30)
        assert "error" not in low and "error" not in high
        assert order == [semclient.PRIORITY_MAX, -3]
        with pytest.raises(ValueError):
            c.semaphore("pr").acquire(priority=semclient.PRIORITY_MAX + 1)


def test_multi_acquire_with_a_priority(addr):
    with semclient.Client(addr) as c:
        c.create("ma", 1)
        c.create("mb", 1)
        with c.acquire_many(["ma", "mb"], timeout=5, priority=2) as mp:
            assert [p.name for p in mp] == ["ma", "mb"]


def test_fair_shares_by_key(addr):
    with semclient.Client(addr) as c:
        c.create("fs", 4, share="key", weights={"a": 3, "b": 1})
        a = c.semaphore("fs").acquire(group="a")
        b = c.semaphore("fs").acquire(group="b")
        info = c.info("fs")
        assert info.share == "key"
        groups = {g.group: g for g in info.groups}
        assert groups["a"].weight == 3 and groups["a"].held == 1
        assert groups["b"].weight == 1 and groups["b"].held == 1
        a.release()
        b.release()
        with pytest.raises(ValueError):
            c.create("fs2", 2, weights={"a": 2})     # weights without a share


def test_backup(semd, tmp_path):
    with semclient.Client(semd.unix) as c:
        c.create("bk", 3)
        path = tmp_path / "state.bkp"
        b = c.backup(path)
        data = path.read_bytes()
        assert b.bytes > 0 and len(data) == 64 + b.bytes
        assert data[:8] == b"SEMDBKUP"
        assert hashlib.sha256(data[64:]).digest() == b.sha256
        with open(tmp_path / "again.bkp", "wb") as f:
            f.write(b"x")          # the backup goes after what the file holds
            b2 = c.backup(f)
            f.write(b"y")
        again = (tmp_path / "again.bkp").read_bytes()
        assert again[:1] == b"x" and again[-1:] == b"y" and len(again) == 66 + b2.bytes


def test_backup_restores(daemons, tmp_path):
    d = daemons.start("src")
    path = str(tmp_path / "s.bkp")
    with semclient.Client(d.unix) as c:
        c.create("kept", 7)
        c.backup(path)
    r = daemons.start("dst", "--restore", path, "--data-dir", str(tmp_path / "data"))
    with semclient.Client(r.unix) as c:
        assert c.info("kept").limit == 7


def test_watch_from_revision(semd):
    with semclient.Client(semd.unix) as c:
        c.create("wr", 1)
        with c.watch("wr") as w:
            c.set_limit("wr", 2)
            c.set_limit("wr", 3)
            first, second = w.get(timeout=10), w.get(timeout=10)
        assert (first.kind, second.kind) == ("limit", "limit")
        assert second.revision == first.revision + 1 and w.revision == second.revision
        with c.watch("wr", from_revision=first.revision) as again:
            ev = again.get(timeout=10)
            assert (ev.revision, ev.limit) == (first.revision, 2)
            assert again.get(timeout=10).revision == second.revision


def test_watch_from_a_compacted_revision(daemons):
    d = daemons.start("small", "--watch-history", "4096")
    with semclient.Client(d.unix) as c:
        c.create("wc", 1)
        for i in range(200):
            c.set_limit("wc", 1 + i % 5)
        with pytest.raises(semclient.Compacted) as ei:
            c.watch("wc", from_revision=1)
        assert ei.value.code == semclient.E_COMPACTED


def test_watch_resumes_after_a_cut(semd, relay_to):
    relay = relay_to(semd.tcp)
    with semclient.Client(relay.addr, lease=5) as w, semclient.Client(semd.unix) as c:
        c.create("wz", 1)
        with w.watch("wz", resume=True) as events:
            c.set_limit("wz", 2)
            assert events.get(timeout=10).limit == 2
            relay.cut()
            c.set_limit("wz", 3)        # while cut: replayed, not a gap
            assert wait_for(lambda: w._reconnects > 0, 10)
            ev = events.get(timeout=10)
            assert ev is not None and (ev.kind, ev.limit) == ("limit", 3)
            c.set_limit("wz", 4)
            ev = events.get(timeout=10)
            assert ev is not None and (ev.kind, ev.limit) == ("limit", 4)


def test_parent_session_sees_a_deadlock_across_processes(semd):
    with semclient.Client(semd.unix) as parent:
        assert parent.session_link != 0
        held = parent.semaphore("pd", limit=1).acquire()
        s = parent.session
        with semclient.Client(semd.unix, parent=(s.id, parent.session_link)) as child:
            # the parent waits for its child, which would wait for the parent's hold
            with pytest.raises(semclient.Deadlock):
                child.semaphore("pd").acquire(timeout=10)
        with semclient.Client(semd.unix, parent=(0, 0)) as other:
            assert other.semaphore("pd").try_acquire() is None
        held.release()
    with pytest.raises(TypeError):
        semclient.Client(semd.unix, parent=5)


def test_parent_from_the_environment(semd, monkeypatch):
    with semclient.Client(semd.unix) as parent:
        held = parent.semaphore("pe", limit=1).acquire()
        monkeypatch.setenv("SEMD_SESSION", "%d:%016x" % (parent.session.id,
                                                          parent.session_link))
        with semclient.Client(semd.unix) as child:
            with pytest.raises(semclient.Deadlock):
                child.semaphore("pe").acquire(timeout=10)
        held.release()


def test_async_policies(semd, tmp_path):
    async def main():
        async with semclient.AsyncClient(semd.unix) as c:
            await c.create("aq", 1, max_waiters=1)
            held = await c.semaphore("aq").acquire()
            first = asyncio.ensure_future(c.semaphore("aq").acquire(timeout=30, replace="k",
                                                                    priority=-1))
            for _ in range(1000):
                if (await c.info("aq")).waiters_total == 1:
                    break
                await asyncio.sleep(0.01)
            with pytest.raises(semclient.QueueFull):
                await c.semaphore("aq").acquire(timeout=30)
            await c.set_queue("aq", 0)
            second = asyncio.ensure_future(c.semaphore("aq").acquire(timeout=30, replace="k"))
            with pytest.raises(semclient.Replaced):
                await first
            await held.release()
            p = await second
            assert p.held
            await p.release()
            async with c.acquire_many({"aq": 1}, priority=3) as mp:
                assert mp["aq"].held
            b = await c.backup(str(tmp_path / "a.bkp"))
            assert b.bytes > 0 and os.path.getsize(tmp_path / "a.bkp") == 64 + b.bytes
            async with c.watch("aq") as w:
                await c.set_limit("aq", 2)
                ev = await w.__anext__()
            async with c.watch("aq", from_revision=ev.revision) as again:
                ev2 = await again.__anext__()
                assert (ev2.revision, ev2.limit) == (ev.revision, 2)
    asyncio.run(asyncio.wait_for(main(), 60))


def test_async_watch_resumes_after_a_cut(semd, relay_to):
    relay = relay_to(semd.tcp)
    seen = []

    async def main():
        w = await semclient.AsyncClient(relay.addr, lease=5).connect()
        c = await semclient.AsyncClient(semd.unix).connect()
        try:
            await c.create("az", 1)
            events = await w.watch("az", resume=True)
            await c.set_limit("az", 2)
            async for ev in events:     # the one made while cut comes, not a gap
                seen.append((ev.kind, ev.limit))
                if len(seen) == 2:
                    break
                relay.cut()
                await c.set_limit("az", 3)
            await events.aclose()
        finally:
            await w.aclose()
            await c.aclose()
    asyncio.run(asyncio.wait_for(main(), 30))
    assert seen == [("limit", 2), ("limit", 3)]
