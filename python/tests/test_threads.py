# SPDX-License-Identifier: BSD-2-Clause
"""Threads sharing one Client: their waits run in parallel (the GIL is
released in the library), the limit holds, close() wakes a blocked one."""
import threading
import time

import pytest

import semclient
from conftest import wait_for


@pytest.mark.parametrize("lease", [None, 5])
def test_threads_share_a_client(addr, lease):
    limit, threads, rounds = 3, 16, 40
    with semclient.Client(addr, lease=lease) as c:
        c.create("th", limit)
        sem = c.semaphore("th")
        inside, most, errors, tokens = [0], [0], [], []
        lock = threading.Lock()

        def work():
            try:
                for _ in range(rounds):
                    with sem.acquire(timeout=30) as p:
                        with lock:
                            inside[0] += 1
                            most[0] = max(most[0], inside[0])
                            tokens.append(p.token)
                        time.sleep(0.0005)
                        with lock:
                            inside[0] -= 1
            except Exception as e:   # reported below
                errors.append(e)

        ts = [threading.Thread(target=work) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert not any(t.is_alive() for t in ts)
        assert errors == []
        assert len(tokens) == threads * rounds and len(set(tokens)) == len(tokens)
        assert 1 <= most[0] <= limit
        info = c.info("th")
        assert info.available == limit and info.holders_total == 0
        assert c.holding == 0 and c._debug()["pending"] == 0


def test_waits_overlap(semd):
    """Threads blocked in acquire() leave the GIL: while two wait in the
    daemon's line, this thread goes on running Python and making calls."""
    with semclient.Client(semd.unix) as c:
        c.create("ov", 1)
        holder = c.semaphore("ov").acquire()
        got = []

        def wait():
            with c.semaphore("ov").acquire(timeout=30) as p:
                got.append(p.token)
        ts = [threading.Thread(target=wait) for _ in range(2)]
        for t in ts:
            t.start()
        # both queued at once: the second could not have sent its acquire
        # if the first held the GIL while it waited
        assert wait_for(lambda: c.info("ov").waiters_total == 2, 10)
        assert sum(range(100000)) > 0 and c.ping() > 0
        holder.release()
        for t in ts:
            t.join(30)
        assert len(got) == 2 and got[0] != got[1]


def test_close_wakes_blocked_thread(semd):
    c = semclient.Client(semd.unix)
    c.create("cl", 1)
    p = c.semaphore("cl").acquire()
    other = semclient.Client(semd.unix)
    got = []

    def wait():
        try:
            other.semaphore("cl").acquire()      # for ever
            got.append("granted")
        except semclient.Error as e:
            got.append(e)
    t = threading.Thread(target=wait)
    t.start()
    assert wait_for(lambda: c.info("cl").waiters_total == 1)
    other.close()
    t.join(10)
    assert not t.is_alive()
    assert len(got) == 1 and isinstance(got[0], semclient.Closed), got
    assert wait_for(lambda: c.info("cl").waiters_total == 0)
    p.release()
    c.close()


def test_close_releases_held(semd):
    with semclient.Client(semd.unix) as w:
        c = semclient.Client(semd.tcp, lease=30)
        c.create("rel", 2)
        c.semaphore("rel").acquire(2)
        assert w.info("rel").available == 0
        c.close()
        # over TCP with a lease the session outlives its connection: close
        # gives the permits back first
        assert w.info("rel").available == 2
