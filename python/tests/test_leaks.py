# SPDX-License-Identifier: BSD-2-Clause
"""Nothing leaks: thousands of acquires, releases, cancelled waits, watches
and clients leave the C heap (glibc mallinfo2), the Python heap
(tracemalloc) and the extension's count of handles and callbacks where
they were. Skipped under ASan, whose allocator mallinfo does not see."""
import asyncio
import ctypes
import gc
import os
import tracemalloc

import pytest

import semclient
from semclient import _semclient

ASAN = "asan" in os.environ.get("LD_PRELOAD", "")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def c_heap():
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _Mallinfo2
    mi = libc.mallinfo2()
    return mi.uordblks + mi.hblkhd


def rounds(fn, n):
    for _ in range(n):
        fn()
    gc.collect()


@pytest.mark.skipif(ASAN, reason="mallinfo2 does not see ASan's allocator")
def test_sync_ops_do_not_grow_the_heap(semd):
    with semclient.Client(semd.unix, lease=10) as c:
        c.create("lk", 2)
        sem = c.semaphore("lk")

        def once():
            with sem.acquire():
                pass
            assert sem.try_acquire(2).release()
            c.info("lk")
            try:
                c.info("missing")
            except semclient.NotFound:
                pass
        rounds(once, 300)       # warm up: caches, free lists, arenas
        tracemalloc.start()
        py0, c0 = tracemalloc.get_traced_memory()[0], c_heap()
        rounds(once, 2000)
        py1, c1 = tracemalloc.get_traced_memory()[0], c_heap()
        tracemalloc.stop()
        # 2000 rounds: a leak of one small block a round is 64 KiB or more
        assert c1 - c0 < 64 * 1024, "C heap grew %d bytes" % (c1 - c0)
        assert py1 - py0 < 64 * 1024, "Python heap grew %d bytes" % (py1 - py0)


@pytest.mark.skipif(ASAN, reason="mallinfo2 does not see ASan's allocator")
def test_async_cancel_does_not_grow_the_heap(semd):
    async def main():
        async with semclient.AsyncClient(semd.unix) as c, \
                semclient.AsyncClient(semd.unix) as h:
            await c.create("alk", 1)
            hold = await h.semaphore("alk").acquire()

            async def once():
                t = asyncio.ensure_future(c.semaphore("alk").acquire())
                await asyncio.sleep(0)
                await asyncio.sleep(0)
                t.cancel()
                try:
                    await t
                except asyncio.CancelledError:
                    pass
                p = await h.semaphore("alk2", limit=1).acquire()
                await p.release()
            for _ in range(200):
                await once()
            gc.collect()
            c0 = c_heap()
            for _ in range(1500):
                await once()
            gc.collect()
            grew = c_heap() - c0
            await hold.release()
            assert (await c.info("alk")).waiters_total == 0
            assert c._debug()["callbacks"] == 0
            return grew
    grew = asyncio.run(main())
    assert grew < 64 * 1024, "C heap grew %d bytes" % grew


@pytest.mark.skipif(ASAN, reason="mallinfo2 does not see ASan's allocator")
def test_clients_and_watches_are_freed(semd):
    def once():
        with semclient.Client(semd.unix, lease=5) as c:
            with c.watch("w/", prefix=True):
                c.create("w/x", 1, exist_ok=True)
    for _ in range(30):
        once()
    gc.collect()
    c0 = c_heap()
    for _ in range(200):
        once()
    gc.collect()
    assert c_heap() - c0 < 128 * 1024
    assert _semclient._live()[1] == 0


def test_live_counts(semd):
    """The extension's own count of handles and callbacks (ASan too)."""
    gc.collect()
    base = _semclient._live()
    c = semclient.Client(semd.unix)
    a = semclient.AsyncClient(semd.unix)
    assert _semclient._live()[0] == base[0] + 2
    c.close()
    a.close()
    del c, a
    gc.collect()
    assert _semclient._live() == base
