# SPDX-License-Identifier: BSD-2-Clause
"""The synchronous client against a real semd, over UNIX and TCP: every
operation, permits, multi-name acquires, watches."""
import os
import pickle
import threading
import time

import pytest

import semclient
from conftest import wait_for


def test_session_and_repr(addr):
    with semclient.Client(addr, name="pytest") as c:
        s = c.session
        assert s.id > 0 and s.lease is None and s.server.startswith("semd ")
        assert c.address == addr
        assert "session=%d" % s.id in repr(c)
        assert c.ping() > 0
        assert "grants" in " ".join(c.stats())
    assert c.closed and repr(c) == "<Client closed>"
    with pytest.raises(semclient.Closed):
        c.ping()
    c.close()   # idempotent


def test_acquire_release(addr):
    with semclient.Client(addr) as c:
        c.create("jobs", 2)
        sem = c.semaphore("jobs")
        assert repr(sem) == "<Semaphore jobs>"
        with sem.acquire() as p:
            assert p.held and p.n == 1 and p.permit_id > 0 and p.token > 0
            assert p.lease is None and p.lease_left is None and p.waited >= 0
            assert "<Permit jobs n=1 token=%d permit_id=%d held>" % (p.token, p.permit_id) \
                == repr(p)
            assert c.validate("jobs", p.token)
            info = c.info("jobs")
            assert (info.limit, info.available, info.holders_total) == (2, 1, 1)
            assert info.holders[0].permit_id == p.permit_id
            assert info.holders[0].client_name
            assert c.holding == 1
        assert p.released and not p.held and "released" in repr(p)
        assert not c.validate("jobs", p.token)
        assert p.release() is False     # idempotent
        assert c.info("jobs").available == 2 and c.holding == 0
        # tokens strictly increase per name
        a = sem.acquire()
        b = sem.acquire()
        assert b.token > a.token
        # trying: a Permit or None; timeout 0 raises WouldBlock; a deadline Timeout
        assert sem.try_acquire() is None
        with pytest.raises(semclient.WouldBlock) as ei:
            sem.acquire(timeout=0)
        assert ei.value.exit_code == 1
        t0 = time.monotonic()
        with pytest.raises(semclient.Timeout) as ei:
            sem.acquire(timeout=0.2)
        assert time.monotonic() - t0 >= 0.15
        assert isinstance(ei.value, TimeoutError) and ei.value.name == "jobs"
        assert a.release() and b.release()
        # two permits in one hold
        with sem.acquire(2) as p2:
            assert p2.n == 2 and c.info("jobs").available == 0
        assert c.info("jobs").available == 2


def test_release_never_frees_another(addr):
    """A Permit gives back its own permit id: never another holder's,
    however often it is released."""
    with semclient.Client(addr) as c1, semclient.Client(addr) as c2:
        c1.create("own", 2)
        p1 = c1.semaphore("own").acquire()
        p1.release()
        p2 = c2.semaphore("own").acquire()
        p3 = c2.semaphore("own").acquire()
        assert p1.release() is False and p1.release() is False
        info = c1.info("own")
        assert {h.permit_id for h in info.holders} == {p2.permit_id, p3.permit_id}
        p2.release()
        p3.release()


def test_create_options(addr):
    with semclient.Client(addr) as c:
        c.create("opt/a", 3)
        with pytest.raises(semclient.Exists):
            c.create("opt/a", 3)
        c.create("opt/a", 3, exist_ok=True)
        c.set_limit("opt/a", 5)
        assert c.info("opt/a").limit == 5
        c.create("opt/sig", 2, mode="signal", initial=0)
        info = c.info("opt/sig")
        assert info.mode == "signal" and info.available == 0
        c.create("opt/rate", mode="rate", rate="10/s", burst=2)
        info = c.info("opt/rate")
        assert info.mode == "rate" and info.rate == semclient.Rate(10, 1.0, 2)
        p = c.semaphore("opt/rate").acquire(2)
        assert p.permit_id == 0 and not p.held and p.release() is False
        assert c.semaphore("opt/rate").try_acquire() is None
        c.set_rate("opt/rate", "1000/s")
        assert c.info("opt/rate").rate.rate == 1000
        names = [s.name for s in c.list("opt/")]
        assert names == ["opt/a", "opt/rate", "opt/sig"]
        assert c.list("nothing/") == []
        # acquire creating with a limit; another limit is Exists
        with c.semaphore("opt/auto", limit=4).acquire() as p:
            assert c.info("opt/auto").limit == 4
            with pytest.raises(semclient.Exists):
                c.semaphore("opt/auto", limit=3).acquire()
        with pytest.raises(semclient.NotFound) as ei:
            c.info("opt/none")
        assert isinstance(ei.value, LookupError)
        c.delete("opt/a")
        with pytest.raises(semclient.NotFound):
            c.delete("opt/a")
        for n in ("opt/sig", "opt/rate"):
            c.delete(n, force=True)


def test_list_pages(addr):
    with semclient.Client(addr) as c:
        for i in range(1205):
            c.create("pg/%04d" % i, 1)
        names = [s.name for s in c.list("pg/")]
        assert names == ["pg/%04d" % i for i in range(1205)]


def test_detached_hold_and_renew(addr):
    with semclient.Client(addr) as c:
        c.create("det", 1)
        p = c.semaphore("det", lease=30).acquire()
        assert p.lease == 30 and 25 < p.lease_left <= 30
        h = c.info("det").holders[0]
        assert h.detached and h.expires is not None
        p.renew(60)
        assert 55 < p.lease_left <= 60
        holds = c.holds()
        assert [x.name for x in holds] == ["det"] and holds[0].holder.permit_id == p.permit_id
        assert p.release()
        assert c.holds() == []
        # a session's hold: renew is a round trip
        q = c.semaphore("det").acquire()
        q.renew()
        q.release()


def test_acquire_many(addr):
    with semclient.Client(addr) as c, semclient.Client(addr) as w:
        c.create("m/a", 1)
        c.create("m/b", 2)
        with c.acquire_many({"m/a": 1, "m/b": 2}, timeout=5) as mp:
            assert len(mp) == 2 and mp["m/b"].n == 2 and mp[0].name == "m/a"
            assert mp.held and "m/a n=1" in repr(mp)
            with pytest.raises(semclient.WouldBlock):
                w.acquire_many(["m/a", ("m/b", 1)], timeout=0)
        assert not mp.held
        assert c.info("m/a").available == 1 and c.info("m/b").available == 2
        mp = w.acquire_many([c.semaphore("m/a"), ("m/b", 2)], timeout=1)
        mp.release()
        with pytest.raises(ValueError):
            c.acquire_many([], timeout=0)
        with pytest.raises(ValueError):
            c.acquire_many(["m/%d" % i for i in range(17)], timeout=0)
        with pytest.raises(TypeError):
            c.acquire_many([42], timeout=0)


def test_deadlock(addr):
    with semclient.Client(addr) as c, semclient.Client(addr) as w:
        c.create("dl/x", 1)
        c.create("dl/y", 1)
        px = c.semaphore("dl/x").acquire()
        py = w.semaphore("dl/y").acquire()
        got = []
        t = threading.Thread(target=lambda: got.append(c.semaphore("dl/y").acquire(timeout=10)))
        t.start()
        assert wait_for(lambda: c.info("dl/y").waiters_total == 1)
        with pytest.raises(semclient.Deadlock) as ei:
            w.semaphore("dl/x").acquire(timeout=5)
        assert ei.value.exit_code == 7 and "deadlock" in str(ei.value)
        py.release()
        t.join(10)
        assert got and got[0].held
        got[0].release()
        px.release()


def test_watch(addr):
    with semclient.Client(addr) as c, semclient.Client(addr) as w:
        with w.watch("wt/", prefix=True) as events:
            assert repr(events) == "<Watch wt/*>"
            c.create("wt/a", 1)
            p = c.semaphore("wt/a").acquire()
            p.release()
            kinds = []
            for ev in events:
                kinds.append((ev.kind, ev.name))
                if ev.kind == "release":
                    break
            assert kinds == [("create", "wt/a"), ("grant", "wt/a"), ("release", "wt/a")]
            assert events.get(timeout=0.05) is None
        assert "closed" in repr(events)
        assert list(events) == []
        # a watch of one name, read by get() with a timeout
        ev_list = []
        with c.semaphore("wt/a").watch() as one:
            c.set_limit("wt/a", 3)
            ev = one.get(timeout=5)
            ev_list.append(ev)
        assert ev_list[0].kind == "limit" and ev_list[0].limit == 3


def test_cluster_status_alone(addr):
    """A daemon that is no cluster node refuses the question clearly."""
    with semclient.Client(addr) as c:
        with pytest.raises(semclient.Error):
            c.cluster_status()
        assert c.ping() > 0


def test_errors_pickle(addr):
    with semclient.Client(addr) as c:
        with pytest.raises(semclient.NotFound) as ei:
            c.info("nope")
    e = pickle.loads(pickle.dumps(ei.value))
    assert type(e) is semclient.NotFound and e.code == ei.value.code and e.name == "nope"
    assert str(e) == "info nope: " + e.message


def test_env_address(semd, monkeypatch):
    monkeypatch.setenv("SEMD_SERVER", semd.unix)
    with semclient.Client() as c:
        assert c.address == semd.unix


def test_fork_child_needs_its_own(semd):
    """A client across fork(): the child's copy refuses calls (the handle
    belongs to the parent); a new client works."""
    with semclient.Client(semd.unix) as c:
        c.create("fk", 1)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                try:
                    c.ping()
                except semclient.NotSupported:
                    with semclient.Client(semd.unix) as c2:
                        with c2.semaphore("fk").acquire(timeout=5):
                            code = 0
            finally:
                os.write(w, bytes([code]))
                os._exit(code)
        os.close(w)
        assert os.read(r, 1) == b"\0"
        os.close(r)
        os.waitpid(pid, 0)
        assert c.info("fk").available == 1
