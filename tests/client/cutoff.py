# SPDX-License-Identifier: BSD-2-Clause
"""tests/client/cutoff.py - a `semctl run` holder is cut off from semd (its
TCP connection goes through a relay that stops forwarding, the connection
kept open) while a second client waits for the permit over UNIX. The
holder's command must be dead before the daemon grants the permit to the
second client, and that grant must come about one lease after the cut.

  cutoff.py SEMCTL UNIX_ADDR TCP_ADDR [--runs N] [--lease MS] [--grace MS]
            [--ignore-term]

Each run: A = semctl run over the relay (lease, grace), its command a shell
that records its pid and execs sleep (with --ignore-term it ignores SIGTERM,
so that only SIGKILL ends it); B = semctl down over UNIX, queued behind A.
The relay is stalled at a random point of A's ping cycle. The command's
death is seen through a pidfd (exact), B's grant time is the daemon's own
(info: since_ms). Prints each run and min/median/max of the margin between
the last moment the command was seen alive and the grant; exits 1 if a
grant surely came before the death (allowing for the two clocks'
resolution), or later than lease + slack after the cut.
"""
import argparse
import json
import os
import random
import select
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relay import Relay  # noqa: E402

# The daemon's grant time is a whole millisecond of its own wall clock (its
# monotonic clock plus the wall-clock offset it read at start, both cut to
# the millisecond): up to 2 ms before the instant on ours.
RES_MS = 2


def wait_for(cond, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.01)
    return None


def info(semctl, unix, name):
    p = subprocess.run([semctl, "-s", unix, "--json", "info", name],
                       capture_output=True, text=True, timeout=10)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {}


def one_run(a, i, tmp):
    name = "cutoff/%d/%d" % (os.getpid(), i)
    pidfile = os.path.join(tmp, "pid%d" % i)
    tcp_port = int(a.tcp.rsplit(":", 1)[1])
    relay = Relay(tcp_port).start()
    trap = "trap '' TERM; " if a.ignore_term else ""
    A = subprocess.Popen([a.semctl, "-s", "tcp:127.0.0.1:%d" % relay.port, "run", name,
                          "--lease", "%dms" % a.lease, "--grace", "%dms" % a.grace, "--",
                          "sh", "-c", trap + "echo $$ > %s.tmp && mv %s.tmp %s; exec sleep 60"
                          % (pidfile, pidfile, pidfile)],
                         stderr=subprocess.PIPE, text=True)
    B = None
    try:
        if not wait_for(lambda: os.path.exists(pidfile), 10):
            return None, "the holder's command did not start"
        pid = int(open(pidfile).read())
        pfd = os.pidfd_open(pid)
        B = subprocess.Popen([a.semctl, "-s", a.unix, "--json", "down", name,
                              "--timeout", "30s", "--lease", "60s"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not wait_for(lambda: len(info(a.semctl, a.unix, name).get("waiters", [])) == 1, 10):
            return None, "the second client did not queue"
        # anywhere in the holder's ping cycle (a ping every third of the lease)
        time.sleep(random.uniform(0, a.lease / 3000.0))
        relay.stall()
        t_cut = time.time()
        # When it died, as a window on our clock: alive at t_alive (the
        # start of the last look that found it alive), dead by t_dead.
        end = time.monotonic() + a.lease * 3 / 1000.0 + 5
        r = []
        t_alive = t_cut
        while not r and time.monotonic() < end:
            t_look = time.time()
            r, _, _ = select.select([pfd], [], [], 0.002)
            if not r:
                t_alive = t_look
        t_dead = time.time()
        os.close(pfd)
        if not r:
            return None, "the holder's command is still alive"
        try:
            out, err = B.communicate(timeout=a.lease * 3 / 1000.0 + 10)
        except subprocess.TimeoutExpired:
            return None, "the second client was not granted"
        if B.returncode != 0:
            return None, "the second client failed: %s" % err.strip()
        try:
            rc = A.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None, "semctl run did not exit"
        if rc != 5:
            return None, "semctl run exited %d, not 5" % rc
        holders = info(a.semctl, a.unix, name).get("holders", [])
        if len(holders) != 1:
            return None, "want one holder after the grant, got %d" % len(holders)
        t_grant = holders[0]["since_ms"] / 1000.0
        # margin: from the last moment the command was seen alive to the
        # grant (the daemon's millisecond, on its own wall clock: RES_MS
        # allows for both clocks' resolution)
        return {"cut_to_dead": (t_dead - t_cut) * 1000, "cut_to_grant": (t_grant - t_cut) * 1000,
                "margin": (t_grant - t_alive) * 1000}, None
    finally:
        relay.cut()
        relay.resume()
        for p in (A, B):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run([a.semctl, "-s", a.unix, "delete", name, "--force"],
                       capture_output=True, timeout=10)


def summary(label, xs):
    return "%-14s min %7.1f  median %7.1f  max %7.1f ms" % (
        label, min(xs), statistics.median(xs), max(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("semctl")
    ap.add_argument("unix")
    ap.add_argument("tcp")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--lease", type=int, default=1000)
    ap.add_argument("--grace", type=int, default=200)
    ap.add_argument("--ignore-term", action="store_true")
    a = ap.parse_args()
    bad = 0
    res = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.runs):
            m, why = one_run(a, i, tmp)
            if m is None:
                print("run %d: FAILED: %s" % (i, why))
                bad += 1
                continue
            # the grant surely before the death: a failure; a grant within
            # a second of the lease's end is on time (a loaded machine's
            # timers and scheduling are late, never early)
            ok = m["margin"] > -RES_MS and m["cut_to_grant"] <= a.lease + max(50, a.lease / 20) + 1000
            bad += 0 if ok else 1
            print("run %2d: cut->dead %6.1f  cut->grant %6.1f  margin %6.1f ms%s" % (
                i, m["cut_to_dead"], m["cut_to_grant"], m["margin"], "" if ok else "  BAD"))
            res.append(m)
    if res:
        print("%d runs, lease %d ms, grace %d ms%s:" % (
            len(res), a.lease, a.grace, ", command ignores SIGTERM" if a.ignore_term else ""))
        print(summary("cut -> dead", [m["cut_to_dead"] for m in res]))
        print(summary("cut -> grant", [m["cut_to_grant"] for m in res]))
        print(summary("dead -> grant", [m["margin"] for m in res]))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
