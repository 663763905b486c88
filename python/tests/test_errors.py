# SPDX-License-Identifier: BSD-2-Clause
"""Bad input gives a clear exception, never a crash: wrong types, huge
counts, bad names and addresses, through the package and straight into the
C extension; the exceptions and semctl's exit codes."""
import asyncio
import math

import pytest

import semclient
from semclient import _semclient


def test_exit_codes():
    E = semclient
    assert [E.Timeout.exit_code, E.WouldBlock.exit_code, E.UsageError.exit_code,
            E.Unreachable.exit_code, E.PermissionDenied.exit_code, E.HoldLost.exit_code,
            E.NotFound.exit_code, E.Deadlock.exit_code] == [1, 1, 2, 3, 4, 5, 6, 7]
    for cls in (E.Timeout, E.WouldBlock, E.UsageError, E.Unreachable, E.PermissionDenied,
                E.HoldLost, E.NotFound, E.Exists, E.NotHolder, E.Invalid, E.Deadlock, E.Closed,
                E.SessionExpired, E.NoReply, E.Disconnected, E.Unavailable, E.TLSError):
        assert issubclass(cls, E.Error)
    assert issubclass(E.Timeout, TimeoutError) and issubclass(E.Unreachable, ConnectionError)
    assert issubclass(E.PermissionDenied, PermissionError) and issubclass(E.Invalid, ValueError)
    assert issubclass(E.SessionExpired, E.HoldLost) and issubclass(E.Closed, E.Unreachable)


def test_unreachable(tmp_path):
    with pytest.raises(semclient.Unreachable) as ei:
        semclient.Client("unix:%s/none.sock" % tmp_path, connect_timeout=1)
    assert ei.value.exit_code == 3 and "none.sock" in str(ei.value)
    with pytest.raises(semclient.BadAddress) as ei:
        semclient.Client("bogus:::address")
    assert ei.value.exit_code == 2 and isinstance(ei.value, ValueError)
    with pytest.raises(semclient.BadAddress):
        semclient.Client(",".join(["tcp:127.0.0.1:1"] * 10))


def test_async_unreachable(tmp_path):
    async def main():
        c = semclient.AsyncClient("unix:%s/none.sock" % tmp_path, connect_timeout=1)
        with pytest.raises(semclient.Closed):
            await c.info("x")
        with pytest.raises(semclient.Unreachable):
            await c.connect()
        c.close()
    asyncio.run(main())


@pytest.mark.parametrize("kw,exc", [
    (dict(lease=-1), ValueError), (dict(lease="10"), TypeError), (dict(lease=2 ** 40), ValueError),
    (dict(lease=float("nan")), ValueError), (dict(timeout=0), ValueError),
    (dict(timeout=-5), ValueError), (dict(name=3), TypeError), (dict(tls_ca=5), TypeError),
])
def test_client_options(semd, kw, exc):
    with pytest.raises(exc):
        semclient.Client(semd.unix, **kw)


def test_address_type():
    with pytest.raises(TypeError):
        semclient.Client(b"unix:/x")


def test_bad_arguments(semd):
    with semclient.Client(semd.unix) as c:
        c.create("bad", 2)
        sem = c.semaphore("bad")
        # the daemon's ranges (issue 34): n up to 2**30, weights 1 to 1000
        for n, exc in [(0, ValueError), (-1, ValueError), (2 ** 30 + 1, ValueError),
                       (2 ** 32 - 1, ValueError), (2 ** 200, ValueError), (1.5, TypeError),
                       ("1", TypeError), (None, TypeError), (True, TypeError)]:
            with pytest.raises(exc):
                sem.acquire(n, timeout=0)
        with pytest.raises(ValueError, match="from 1 to 1073741824"):
            sem.acquire(2 ** 32 - 1)
        # the largest count is the daemon's to refuse: more than the limit
        with pytest.raises(semclient.Invalid):
            sem.acquire(2 ** 30, timeout=0)
        with pytest.raises(ValueError, match="weight must be from 1 to 1000"):
            c.create("bad3", 2, share="key", weights={"a": 1001})
        with pytest.raises(ValueError, match="from 0 to 1073741824"):
            c.create("bad3", 2 ** 30 + 1)
        with pytest.raises(ValueError, match="rate period"):
            c.create("bad3", mode="rate", rate=(5, 86401))
        c.create("bad3", 2 ** 30, share="key", weights={"a": 1000})
        c.delete("bad3")
        for t, exc in [(-1, ValueError), ("5", TypeError), (float("nan"), ValueError),
                       (True, TypeError), ([], TypeError)]:
            with pytest.raises(exc):
                sem.acquire(1, timeout=t)
        with sem.acquire(timeout=math.inf):
            pass
        with sem.acquire(timeout=1e300):
            pass
        for name, exc in [("", semclient.Invalid), ("x" * 256, semclient.Invalid),
                          ("a\0b", ValueError), ("\udc80", UnicodeError), (b"bytes", TypeError),
                          (5, TypeError), (None, TypeError)]:
            with pytest.raises(exc):
                c.semaphore(name).acquire(timeout=0)
            with pytest.raises(exc):
                c.info(name)
        assert c.info("bad").available == 2       # nothing was taken by all that
        with pytest.raises(ValueError):
            c.create("bad2", 0)
        with pytest.raises(ValueError):
            c.create("bad2", 1, mode="weird")
        with pytest.raises(ValueError):
            c.create("bad2", 1, rate="fast")
        with pytest.raises(TypeError):
            c.validate("bad", "token")
        with pytest.raises(ValueError):
            c.validate("bad", -1)
        with pytest.raises(ValueError):
            c.validate("bad", 2 ** 64)
        assert c.validate("bad", 2 ** 64 - 1) is False
        with pytest.raises(semclient.NotFound):
            c.force_release("bad", 12345)
        with pytest.raises(ValueError):
            semclient.parse_duration("soon")
        assert semclient.parse_duration("1.5s") == 1.5


def test_c_extension_direct(semd):
    """The C layer checks what it is given too (the package is not the only
    caller): wrong counts of arguments, types, ranges."""
    h = _semclient.Handle(semd.unix)
    h.connect(5000)
    with pytest.raises(TypeError):
        h.down("x", 1, -1, 0)
    with pytest.raises(TypeError):
        h.down(1, 1, -1, 0, 0)
    with pytest.raises(OverflowError):
        h.down("x", 2 ** 32, -1, 0, 0)
    with pytest.raises(OverflowError):
        h.down("x", -1, -1, 0, 0)
    with pytest.raises(OverflowError):
        h.down("x", 1, 2 ** 63, 0, 0)
    with pytest.raises(TypeError):
        h.down("x", 1.0, -1, 0, 0)
    with pytest.raises(ValueError):
        h.down("x\0y", 1, -1, 0, 0)
    with pytest.raises(TypeError):
        h.down_async("x", 1, -1, 0, 0, "not callable")
    with pytest.raises(TypeError):
        h.watch("x", False, None)
    with pytest.raises(TypeError):
        h.down_multi([("a", 1, 0)], 0, 0)
    with pytest.raises(ValueError):
        h.down_multi((), 0, 0)
    with pytest.raises(TypeError):
        h.down_multi((("a", 1),), 0, 0)
    with pytest.raises(ValueError):
        h.create("x", 1, 7, False, 0, False, 0, 0, 0, False)
    with pytest.raises(TypeError):
        _semclient.Handle(address=5)
    with pytest.raises(TypeError):
        _semclient.Handle(on_event=3)
    with pytest.raises(semclient.BadAddress):
        _semclient.Handle(address="nope://")
    assert h.pending() == 0 and h.callbacks() == 0
    h.close()
    with pytest.raises(semclient.Closed):
        h.down("x", 1, -1, 0, 0)
    with pytest.raises(semclient.Closed):
        h.down_async("x", 1, -1, 0, 0, lambda *a: None)
    assert h.fd() == -1 and h.timeout() == -1 and h.closed
    with pytest.raises(semclient.Closed):
        h.address()


def test_callback_exceptions_do_not_crash(semd):
    """A Python callback that raises is reported (sys.unraisablehook), never
    propagated into the C library."""
    import sys
    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(u.exc_type)
    try:
        h = _semclient.Handle(semd.unix, keepalive_thread=False)
        h.connect(5000)
        h.create("cb", 1, 0, False, 0, False, 0, 0, 0, False)

        def boom(code, msg, value):
            raise RuntimeError("boom")
        h.down_async("cb", 1, -1, 0, 0, boom)
        for _ in range(200):
            h.poll(20)
            if seen:
                break
        assert seen == [RuntimeError]
        assert h.callbacks() == 0
        h.close()
    finally:
        sys.unraisablehook = old


def test_hostile_strings(semd):
    """Names and client names with every byte the daemon accepts come back
    as str (invalid UTF-8 never raises while decoding a reply)."""
    with semclient.Client(semd.unix, name="na\u00efve \u2603 \x01") as c:
        with pytest.raises(semclient.Invalid):      # zero-width: refused
            c.create("sn\u00f8w/\u200b", 1)
        with pytest.raises(semclient.Invalid):      # a control character
            c.create("sn\u00f8w/\x07", 1)
        name = "sn\u00f8w/\u2603"
        c.create(name, 1)
        with c.semaphore(name).acquire():
            info = c.info(name)
            assert info.name == name and info.holders[0].client_name.startswith("na")
        assert [s.name for s in c.list("sn")] == [name]
