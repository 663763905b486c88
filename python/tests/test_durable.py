# SPDX-License-Identifier: BSD-2-Clause
"""The durable daemon (--data-dir) restarted under Python clients, and a
3-node cluster whose leader is killed while a Python holder and a Python
waiter are active."""
import asyncio
import signal
import threading
import time


import pytest

import semclient
from conftest import port_base, wait_for


def test_restart_keeps_holds(daemons, tmp_path):
    port = port_base(1)
    addr = "tcp:127.0.0.1:%d" % port
    data = str(tmp_path / "data")
    d = daemons.start("durable", "--data-dir", data, "--listen", addr, listen=False)
    with semclient.Client(addr, lease=10) as c:
        c.create("jobs", 2)
        p = c.semaphore("jobs").acquire()
        det = c.semaphore("jobs", lease=30).acquire()
        d.stop(signal.SIGTERM)
        d.start()
        info = c.info("jobs")      # the library resumed the session
        assert (info.limit, info.holders_total) == (2, 2)
        assert p.held and not p.lost.is_set() and c.session.resumed
        det.renew(20)
        p.renew()
        assert p.release() and det.release()
        assert c.info("jobs").available == 2
    # and the name itself survived a second restart
    d.stop(signal.SIGTERM)
    d.start()
    with semclient.Client(addr) as c:
        assert c.info("jobs").limit == 2


def test_restart_async(daemons, tmp_path):
    port = port_base(1)
    addr = "tcp:127.0.0.1:%d" % port
    d = daemons.start("adur", "--data-dir", str(tmp_path / "data"), "--listen", addr,
                      listen=False)

    async def main():
        async with semclient.AsyncClient(addr, lease=10) as c:
            await c.create("aj", 1)
            p = await c.semaphore("aj").acquire()
            await asyncio.get_running_loop().run_in_executor(None, d.stop, signal.SIGTERM)
            await asyncio.get_running_loop().run_in_executor(None, d.start)
            info = await c.info("aj")
            assert info.holders_total == 1 and p.held
            assert await p.release()
            assert (await c.info("aj")).available == 1
    asyncio.run(asyncio.wait_for(main(), 60))


def _set_limit(addr, name, limit):
    """Change the limit from a client of its own (one made before a
    restart would see its connection lost)."""
    with semclient.Client(addr) as c:
        c.set_limit(name, limit)


@pytest.mark.parametrize("before", [True, False], ids=["event-before", "no-event-before"])
def test_watch_resumes_across_a_restart(daemons, tmp_path, before):
    """A watch with resume=True gets after a restart of a durable daemon
    what was made while it was away, without a gap event or a repeat,
    whether an event came before the restart or none did (then it resumes
    after the daemon's last revision when it began)."""
    addr = "tcp:127.0.0.1:%d" % port_base(1)
    d = daemons.start("wdur", "--data-dir", str(tmp_path / "data"), "--listen", addr,
                      listen=False)
    with semclient.Client(addr, lease=10) as w:
        w.create("wr", 1)
        with w.watch("wr", resume=True) as events:
            last = 0
            if before:
                _set_limit(addr, "wr", 2)
                last = events.get(timeout=10).revision
            d.stop(signal.SIGTERM)
            d.start()
            _set_limit(addr, "wr", 3)   # before the watcher is back, maybe
            for limit in (3, 4):
                ev = events.get(timeout=10)
                assert ev is not None and (ev.kind, ev.limit) == ("limit", limit), ev
                assert ev.revision > last
                last = ev.revision
                if limit == 3:
                    _set_limit(addr, "wr", 4)


def test_async_watch_resumes_across_a_restart(daemons, tmp_path):
    """The same for an AsyncWatch that saw no event before the restart."""
    addr = "tcp:127.0.0.1:%d" % port_base(1)
    d = daemons.start("awdur", "--data-dir", str(tmp_path / "data"), "--listen", addr,
                      listen=False)

    async def main():
        async with semclient.AsyncClient(addr, lease=10) as w:
            await w.create("ar", 1)
            async with w.watch("ar", resume=True) as events:
                run = asyncio.get_running_loop().run_in_executor
                await run(None, d.stop, signal.SIGTERM)
                await run(None, d.start)
                await run(None, _set_limit, addr, "ar", 3)
                ev = await events.__anext__()
                assert (ev.kind, ev.limit) == ("limit", 3), ev
    asyncio.run(asyncio.wait_for(main(), 60))


class Cluster:
    def __init__(self, daemons, tmp_path):
        base = port_base(14)
        boot = ",".join("%d=127.0.0.1:%d" % (i, base + i) for i in (1, 2, 3))
        self.addrs = ",".join("tcp:127.0.0.1:%d" % (base + 10 + i) for i in (1, 2, 3))
        self.nodes = {}
        # The peers prove a shared key (semd(8), CLUSTERS).
        key = tmp_path / "peer.key"
        key.write_bytes(b"a peer key for the python tests!")
        key.chmod(0o600)
        for i in (1, 2, 3):
            self.nodes[i] = daemons.start(
                "n%d" % i, "--data-dir", str(tmp_path / ("d%d" % i)), "--node-id", str(i),
                "--peer-key", str(key),
                "--peer-listen", "tcp:127.0.0.1:%d" % (base + i),
                "--listen", "tcp:127.0.0.1:%d" % (base + 10 + i), "--bootstrap", boot,
                listen=False)

    def leader(self, c):
        found = []

        def have():
            try:
                st = c.cluster_status()
            except semclient.Error:
                return False
            if st.leader_id and self.nodes[st.leader_id].alive:
                found.append(st.leader_id)
                return True
            return False
        assert wait_for(have, 20, 0.05), "no leader elected"
        return found[-1]


def test_cluster_failover(daemons, tmp_path):
    """The leader is killed while a Python holder holds the only permit and
    a Python waiter (asyncio, in its own thread) waits for it: the holder
    keeps its hold (its session resumes on the new leader), gives it back,
    and the waiter gets it with a larger fencing token."""
    cl = Cluster(daemons, tmp_path)
    with semclient.Client(cl.addrs) as status:
        leader = cl.leader(status)
        st = status.cluster_status()
        assert st.state in ("leader", "follower") and len(st.nodes) == 3
        holder = semclient.Client(cl.addrs, lease=5, name="holder")
        holder.create("c", 1)
        p = holder.semaphore("c").acquire()
        got, errs = [], []

        async def waiter():
            async with semclient.AsyncClient(cl.addrs, lease=5, name="waiter") as w:
                async with w.semaphore("c").acquire(timeout=60) as q:
                    got.append(q.token)
                    assert await w.validate("c", q.token)

        def run_waiter():
            try:
                asyncio.run(waiter())
            except BaseException as e:
                errs.append(e)
        t = threading.Thread(target=run_waiter)
        t.start()
        assert wait_for(lambda: holder.info("c").waiters_total == 1, 15), errs
        cl.nodes[leader].stop(signal.SIGKILL)
        t0 = time.monotonic()
        # the holder rides the failover out: a round trip on the new leader
        assert wait_for(lambda: _renews(p), 25, 0.1), "the holder's session did not come back"
        assert not p.lost.is_set() and p.held
        assert got == [] and errs == []     # not granted while the holder holds it
        assert p.release()
        t.join(60)
        assert not t.is_alive()
        assert errs == [] and len(got) == 1 and got[0] > p.token
        assert time.monotonic() - t0 < 60
        assert wait_for(lambda: holder.info("c").available == 1, 10)
        holder.close()
        new = cl.leader(status)
        assert new != leader


def _renews(p):
    try:
        p.renew()
        return True
    except semclient.Unreachable:
        return False
