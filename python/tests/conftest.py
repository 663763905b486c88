# SPDX-License-Identifier: BSD-2-Clause
"""Real semd daemons for the tests: the build tree's semd ($SEMD), on UNIX
sockets in a temporary directory and TCP on 127.0.0.1 (port 0, read back
from --ready-file), each killed when its test ends. tests/python.sh sets
$SEMD and puts the built package first on sys.path."""
from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import threading
import time
from typing import Callable, Dict, List, Optional

import pytest

SEMD = os.environ.get("SEMD", "semd")


def wait_for(cond: Callable[[], bool], timeout: float = 10.0, step: float = 0.01) -> bool:
    """Poll cond until it holds or timeout seconds pass (bounded)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


class Daemon:
    """One semd process."""

    def __init__(self, tmp: str, name: str, args: List[str]) -> None:
        self.dir = tmp
        self.name = name
        self.ready = os.path.join(tmp, name + ".ready")
        self.log = os.path.join(tmp, name + ".log")
        self.args = ["--ready-file", self.ready, "--acl", "anonymous * all"] + args
        self.proc: Optional[subprocess.Popen] = None
        self.unix = ""
        self.tcp = ""

    def start(self) -> "Daemon":
        if os.path.exists(self.ready):
            os.unlink(self.ready)
        env = dict(os.environ)
        # the ASan runtime preloaded into the interpreter is not the daemon's
        # (an ASan semd links its own statically)
        env.pop("LD_PRELOAD", None)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([SEMD] + self.args, stdout=log, stderr=log, env=env,
                                         preexec_fn=_die_with_parent)
        if not wait_for(lambda: os.path.exists(self.ready) and os.path.getsize(self.ready) > 0
                        or self.proc.poll() is not None, 10):
            self.stop()
            pytest.fail("semd %s not ready in 10 s:\n%s" % (self.name, self.tail()))
        if self.proc.poll() is not None:
            pytest.fail("semd %s exited:\n%s" % (self.name, self.tail()))
        for line in open(self.ready).read().split():
            if line.startswith("unix:") and not self.unix:
                self.unix = line
            if line.startswith("tcp:") and not self.tcp:
                self.tcp = line
        return self

    def stop(self, sig: int = signal.SIGKILL) -> None:
        p = self.proc
        if p is None or p.poll() is not None:
            return
        p.send_signal(sig)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n: int = 4000) -> str:
        try:
            return open(self.log, errors="replace").read()[-n:]
        except OSError:
            return ""


def _die_with_parent() -> None:
    # a test run killed by its timeout takes its daemons along (PR_SET_PDEATHSIG)
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except Exception:
        pass


class Daemons:
    """Starts daemons for a test and kills them after it."""

    def __init__(self, tmp: str) -> None:
        self.tmp = tmp
        self.all: List[Daemon] = []

    def start(self, name: str, *args: str, listen: bool = True) -> Daemon:
        a = list(args)
        if listen:
            a = ["--listen", "unix:" + os.path.join(self.tmp, name + ".sock"),
                 "--listen", "tcp:127.0.0.1:0"] + a
        d = Daemon(self.tmp, name, a)
        self.all.append(d)
        return d.start()

    def stop_all(self) -> None:
        for d in self.all:
            d.stop()


@pytest.fixture
def daemons(tmp_path, request):
    ds = Daemons(str(tmp_path))
    yield ds
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        for d in ds.all:
            print("---- %s ----\n%s" % (d.log, d.tail()))
    ds.stop_all()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    out = yield
    rep = out.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture
def semd(daemons) -> Daemon:
    """One daemon in memory, UNIX and TCP."""
    return daemons.start("semd")


@pytest.fixture(params=["unix", "tcp"])
def addr(request, semd) -> str:
    """The daemon's address, over each transport."""
    return semd.unix if request.param == "unix" else semd.tcp


def port_base(n: int) -> int:
    """The first of n consecutive TCP ports free on 127.0.0.1 now, chosen
    at random below the ephemeral range: tests/lib.sh's t_port_base, the
    shell tests' own choice ($SEMD_TOP: the source tree)."""
    top = os.environ.get("SEMD_TOP") or os.path.join(os.path.dirname(__file__), "..", "..")
    env = dict(os.environ, top_srcdir=top, top_builddir=os.path.dirname(os.path.abspath(SEMD)))
    r = subprocess.run(["sh", "-c", '. "$top_srcdir/tests/lib.sh" && t_port_base "$1"', "sh",
                        str(n)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60)
    if r.returncode != 0 or not r.stdout.strip().isdigit():
        pytest.fail("no free block of %d ports: %s" % (n, r.stderr.strip()))
    return int(r.stdout)


class Relay:
    """A TCP byte relay between clients and a daemon that the test can
    stall: connections stay open and nothing is forwarded (a network that
    stops delivering, the case the client-side lease is for)."""

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.addr = "tcp:127.0.0.1:%d" % self.port
        self.stalled = False
        self._cut = False
        self.pairs: Dict[socket.socket, socket.socket] = {}
        self._stop = False
        self._r, self._w = os.pipe()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop:
            if self._cut:
                self._cut = False
                for s in list(self.pairs):
                    if s in self.pairs:
                        self._drop(s, self.pairs[s])
            rl = [self.lsock, self._r] + ([] if self.stalled else list(self.pairs))
            r, _, _ = select.select(rl, [], [], 0.2)
            for s in r:
                if s is self._r:
                    os.read(self._r, 64)
                elif s is self.lsock:
                    c, _ = self.lsock.accept()
                    try:
                        d = socket.create_connection(("127.0.0.1", self.target), 5)
                    except OSError:
                        c.close()
                        continue
                    self.pairs[c], self.pairs[d] = d, c
                elif s in self.pairs:
                    try:
                        data = s.recv(65536)
                    except OSError:
                        data = b""
                    peer = self.pairs[s]
                    if not data:
                        self._drop(s, peer)
                        continue
                    try:
                        peer.sendall(data)
                    except OSError:
                        self._drop(s, peer)

    def _drop(self, a: socket.socket, b: socket.socket) -> None:
        self.pairs.pop(a, None)
        self.pairs.pop(b, None)
        a.close()
        b.close()

    def cut(self) -> None:
        """Close every relayed connection (new ones are accepted)."""
        self._cut = True
        os.write(self._w, b"x")

    def stall(self, on: bool = True) -> None:
        self.stalled = on
        os.write(self._w, b"x")

    def close(self) -> None:
        self._stop = True
        os.write(self._w, b"x")
        self._t.join(5)
        for s in list(self.pairs):
            s.close()
        self.lsock.close()
        os.close(self._r)
        os.close(self._w)


@pytest.fixture
def relay_to():
    made: List[Relay] = []

    def make(tcp_addr: str) -> Relay:
        r = Relay(int(tcp_addr.rsplit(":", 1)[1]))
        made.append(r)
        return r
    yield make
    for r in made:
        r.close()


@pytest.fixture(autouse=True)
def _no_leaked_handles(request):
    """Every test leaves no handle and no callback of the C extension behind
    (once its clients are closed and collected)."""
    import gc
    from semclient import _semclient
    gc.collect()
    before = _semclient._live()
    yield
    rep = getattr(request.node, "rep_call", None)
    if rep is None or not rep.passed:
        return      # a failure's traceback keeps its clients alive
    gc.collect()
    ok = wait_for(lambda: (gc.collect() or True) and
                  all(a <= b for a, b in zip(_semclient._live(), before)), 5)
    assert ok, "handles/callbacks alive: %s, before the test %s" % (_semclient._live(), before)
