#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""cluster-failover.py - leader failover of a 3-node semd cluster under a
light load: how long after the leader is killed (SIGKILL) clients are
granted again.

Starts its own 3 nodes on 127.0.0.1 (data directories in a fresh
semd-failover.* under /var/tmp: the log is fsynced), then RUNS times:
  - failover-probe runs C client threads, each with the cluster's three
    addresses, repeating down + up (libsemclient's failover: the next
    address, a Redirect to the leader);
  - after WARM seconds the leader (from `semctl cluster status`) gets
    SIGKILL;
  - measured from the kill: `first` = the first grant that arrives
    afterwards, whatever its request; `first_ok` = the first grant of a
    down sent after the kill (etcd-failover.py's measure); `all_ok` = when
    every client has had one; `elected` = when a survivor first names a new
    leader (status polled every 20 ms);
  - the killed node is restarted on its data directory and the cluster is
    left to settle before the next run.
Only processes this script started are signalled, by PID.

usage: cluster-failover.py -b BUILDDIR [-n RUNS] [-c CLIENTS] [-w WARM_S]
                           [-e ELECTION_MS] [-p BASE_PORT] [-o OUTFILE]
                           [--peer-tls]
Ports: node n (1..3) serves clients on BASE+n, peers on BASE+10+n.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


class Node:
    def __init__(self, n, a, ddir, boot):
        self.n = n
        self.cport = a.port + n
        self.pport = a.port + 10 + n
        self.ddir = ddir
        self.boot = boot
        self.a = a
        self.proc = None

    def addr(self):
        return "tcp:127.0.0.1:%d" % self.cport

    def tls_args(self):
        """With --peer-tls: this node's certificate, key and the CA; else a
        peer key the nodes share (a semd that predates it: nothing)."""
        d = self.ddir
        if not self.a.peer_tls:
            key = os.path.join(d, "peer.key")
            help_ = subprocess.run([os.path.join(self.a.build, "semd"), "--help"],
                                   capture_output=True, text=True)
            if "--peer-key" not in help_.stdout + help_.stderr:
                return []
            if not os.path.exists(key):
                fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.write(fd, os.urandom(32))
                os.close(fd)
            return ["--peer-key", key]
        return ["--peer-tls-cert", os.path.join(d, "t%d.pem" % self.n),
                "--peer-tls-key", os.path.join(d, "t%d.key" % self.n),
                "--peer-tls-ca", os.path.join(d, "ca.pem")]

    def start(self):
        log = open(os.path.join(self.ddir, "n%d.log" % self.n), "ab")
        ready = os.path.join(self.ddir, "r%d" % self.n)
        if os.path.exists(ready):
            os.unlink(ready)
        self.proc = subprocess.Popen(
            [os.path.join(self.a.build, "semd"), "--data-dir",
             os.path.join(self.ddir, "d%d" % self.n), "--node-id", str(self.n),
             "--peer-listen", "tcp:127.0.0.1:%d" % self.pport,
             "--bootstrap", self.boot, "--listen", self.addr(),
             "--acl", "anonymous * all", "--ready-file", ready,
             "--election-timeout", "%dms" % self.a.election] + self.tls_args(),
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        t_end = time.monotonic() + 15
        while not os.path.exists(ready):
            if time.monotonic() > t_end or self.proc.poll() is not None:
                raise RuntimeError("node %d did not start" % self.n)
            time.sleep(0.02)


def make_certs(ddir):
    """A CA of its own and an EC P-256 certificate per node (IP SAN 127.0.0.1)."""
    def ssl(*args):
        subprocess.run(["openssl"] + list(args), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    def j(f):
        return os.path.join(ddir, f)
    ssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", j("ca.key"), "-out", j("ca.pem"), "-days", "1",
        "-subj", "/CN=failover-ca")
    with open(j("san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    for n in (1, 2, 3):
        ssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", j("t%d.key" % n), "-out", j("t%d.csr" % n), "-subj", "/CN=node%d" % n)
        ssl("x509", "-req", "-in", j("t%d.csr" % n), "-CA", j("ca.pem"), "-CAkey",
            j("ca.key"), "-CAcreateserial", "-out", j("t%d.pem" % n), "-days", "1",
            "-extfile", j("san.ext"))


def status(a, node):
    """The node's cluster status (dict), or None."""
    try:
        out = subprocess.run(
            [os.path.join(a.build, "semctl"), "-s", node.addr(),
             "cluster", "status", "--json"],
            capture_output=True, timeout=2, check=False).stdout
        return json.loads(out)
    except (subprocess.TimeoutExpired, ValueError):
        return None


def settled(a, nodes, timeout=30):
    """Wait until every node names the same leader and has applied the log."""
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        st = [status(a, m) for m in nodes]
        if all(s and s.get("ok") for s in st):
            leaders = {s["leader_id"] for s in st}
            applied = [s["applied_index"] for s in st]
            if len(leaders) == 1 and 0 not in leaders and max(applied) - min(applied) <= 2:
                return nodes[st[0]["leader_id"] - 1]
        time.sleep(0.1)
    raise RuntimeError("the cluster did not settle")


def one_run(a, nodes, i):
    leader = settled(a, nodes)
    addrs = ",".join(m.addr() for m in nodes)
    probe = subprocess.Popen(
        [os.path.join(a.build, "failover-probe"), "-s", addrs, "-c", str(a.clients),
         "-d", str(int(a.warm + 8)), "-T", "1000"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(a.warm)
    t_kill = time.time_ns()
    leader.proc.send_signal(signal.SIGKILL)
    leader.proc.wait()
    elected = None
    t_end = time.monotonic() + 5
    while elected is None and time.monotonic() < t_end:
        for m in nodes:
            if m is leader:
                continue
            s = status(a, m)
            if s and s.get("ok") and s["leader_id"] not in (0, leader.n):
                elected = (time.time_ns() - t_kill) / 1e6
                break
        else:
            time.sleep(0.02)
    out, _ = probe.communicate(timeout=60)
    first = first_ok = None
    per_client = {}
    before = errors = 0
    for line in out.splitlines():
        f = line.split()
        c, send, recv = int(f[1]), int(f[2]), int(f[3])
        if f[0] == "E":
            errors += 1
            continue
        if recv < t_kill:
            if recv > t_kill - a.warm * 1e9 / 2:
                before += 1
            continue
        ms = (recv - t_kill) / 1e6
        first = ms if first is None else min(first, ms)
        if send > t_kill:
            first_ok = ms if first_ok is None else min(first_ok, ms)
            per_client[c] = min(per_client.get(c, ms), ms)
    all_ok = max(per_client.values()) if len(per_client) == a.clients else None
    leader.start()
    print("run %d: killed node %d, elected %s ms, first grant %s ms, first_ok %s ms"
          % (i + 1, leader.n, fmt(elected), fmt(first), fmt(first_ok)), file=sys.stderr)
    return {"killed": leader.n, "elected": elected, "first": first, "first_ok": first_ok,
            "all_ok": all_ok, "rate": before / (a.warm / 2), "errors": errors}


def fmt(v):
    return "%6.0f" % v if v is not None else "     -"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--build", required=True, help="build directory (semd, semctl, failover-probe)")
    ap.add_argument("-n", "--runs", type=int, default=20)
    ap.add_argument("-c", "--clients", type=int, default=4)
    ap.add_argument("-w", "--warm", type=float, default=3.0)
    ap.add_argument("-e", "--election", type=int, default=500, help="election-timeout (ms)")
    ap.add_argument("-p", "--port", type=int, default=29180)
    ap.add_argument("-o", "--out")
    ap.add_argument("--peer-tls", action="store_true",
                    help="peer traffic in mutual TLS (certificates made here)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    ddir = tempfile.mkdtemp(prefix="semd-failover.", dir="/var/tmp")
    boot = ",".join("%d=127.0.0.1:%d" % (n, a.port + 10 + n) for n in (1, 2, 3))
    if a.peer_tls:
        make_certs(ddir)
    nodes = [Node(n, a, ddir, boot) for n in (1, 2, 3)]
    runs = []
    try:
        for m in nodes:
            m.start()
        for i in range(a.runs):
            runs.append(one_run(a, nodes, i))
    finally:
        for m in nodes:
            if m.proc and m.proc.poll() is None:
                m.proc.send_signal(signal.SIGTERM)
                try:
                    m.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    m.proc.kill()
        shutil.rmtree(ddir, ignore_errors=True)
    lines = ["# semd 3-node failover: leader SIGKILLed under %d clients (down+up), "
             "election-timeout %d ms%s, %s" % (a.clients, a.election,
                                             ", peer TLS" if a.peer_tls else "",
                                             time.strftime("%Y-%m-%d %H:%M:%S")),
             "# times in ms from the kill; first = first grant after it, first_ok = first "
             "grant of a down sent after it, all_ok = every client has had one",
             "%-4s %-6s %8s %8s %8s %8s %10s %6s" % ("run", "killed", "elected", "first",
                                                    "first_ok", "all_ok", "acq/s", "errors")]
    for i, r in enumerate(runs):
        lines.append("%-4d %-6d %8s %8s %8s %8s %10.0f %6d" % (
            i + 1, r["killed"], fmt(r["elected"]), fmt(r["first"]), fmt(r["first_ok"]),
            fmt(r["all_ok"]), r["rate"], r["errors"]))
    for k in ("elected", "first", "first_ok", "all_ok"):
        v = sorted(r[k] for r in runs if r[k] is not None)
        if v:
            lines.append("# %-9s min %6.0f  median %6.0f  max %6.0f  (n=%d of %d)" % (
                k, v[0], statistics.median(v), v[-1], len(v), len(runs)))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
