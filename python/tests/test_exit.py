# SPDX-License-Identifier: BSD-2-Clause
"""An interpreter that exits with clients open (a keepalive thread running,
a daemon thread blocked in an acquire (it gets Closed), an AsyncClient left behind by
asyncio.run, a callback closing its own client) exits cleanly, and the
daemon gets the permits back."""
import subprocess
import sys

import semclient
from conftest import wait_for

SCRIPT = r"""
import asyncio, sys, threading, semclient
addr = sys.argv[1]
c = semclient.Client(addr, lease=5)
c.create("ex", 1)
held = c.semaphore("ex").acquire()
other = semclient.Client(addr)

def blocked():
    try:
        other.semaphore("ex").acquire()
    except semclient.Closed:    # at exit the clients are closed: told so
        pass
t = threading.Thread(target=blocked, daemon=True)
t.start()
while c.info("ex").waiters_total != 1:
    pass

async def leave_one_open():
    a = semclient.AsyncClient(addr, lease=5)
    await a.connect()
    await a.semaphore("ex2", limit=1).acquire()
asyncio.run(leave_one_open())

# a client closed by a callback of its own library thread
d = semclient.Client(addr, lease=5, on_lost=lambda p: d.close())
p = d.semaphore("ex3", limit=1).acquire()
c.force_release("ex3", p.permit_id)
p.lost.wait(10)
print("exiting", flush=True)
"""


def test_exit_with_clients_open(semd, tmp_path):
    r = subprocess.run([sys.executable, "-c", SCRIPT, semd.unix], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "exiting\n"
    assert "Traceback" not in r.stderr and "Fatal" not in r.stderr, r.stderr
    with semclient.Client(semd.unix) as c:
        assert wait_for(lambda: c.info("ex").available == 1 and
                        c.info("ex").waiters_total == 0, 10)
