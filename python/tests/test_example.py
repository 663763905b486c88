# SPDX-License-Identifier: BSD-2-Clause
"""examples/jobs.py against the real semd: workers in separate processes
(or tasks of one loop) never exceed the shared limit, all their tasks run,
and nothing is held afterwards."""
import os
import subprocess
import sys

import semclient

TOP = os.environ.get("SEMD_TOP", os.path.join(os.path.dirname(__file__), "..", ".."))
JOBS = os.path.join(TOP, "examples", "jobs.py")


def jobs(*args):
    return subprocess.run([sys.executable, JOBS] + list(args), capture_output=True, text=True,
                          timeout=120)


def test_processes(semd):
    r = jobs("-s", semd.unix, "-n", "ex/a", "-w", "6", "-k", "2", "-t", "5", "-d", "20")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "6 workers ran 30 tasks, at most 2 at once (limit 2)\n"
    r = jobs("-s", semd.tcp, "-n", "ex/b", "-w", "4", "-k", "1", "-t", "4", "-d", "10")
    assert r.stdout == "4 workers ran 16 tasks, at most 1 at once (limit 1)\n", r.stderr
    with semclient.Client(semd.unix) as c:
        assert c.info("ex/a").available == 2 and c.info("ex/b").available == 1


def test_asyncio(semd):
    r = jobs("-s", semd.tcp, "-n", "ex/c", "-w", "8", "-k", "3", "-t", "5", "-d", "5",
             "--asyncio")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "8 workers ran 40 tasks, at most 3 at once (limit 3)\n"


def test_no_server(tmp_path):
    r = jobs("-s", "unix:%s/none.sock" % tmp_path)
    assert r.returncode == 3 and "none.sock" in r.stderr
    r = jobs("-w", "0")
    assert r.returncode == 2
