#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/security/peer_attack.py - a local user at a cluster's raft peer ports
(issue 35), for tests/security/peers.sh. Loopback only; every wait bounded.

  peer_attack.py [--key FILE] [--old] [--id N] [--addr HOST:PORT] CMD ARGS...

How it connects: by default as any local user can, with libraft's own TCP
handshake (the id and address it claims); with --key FILE it proves the
peer key as a node does (semd's handshake: a nonce each way, HMAC-SHA256),
which only a holder of the key can - a peer that went bad. --old writes
messages as libraft 0.15 reads them (no version byte in the preamble), for
the daemon of before. --id N and --addr HOST:PORT: the node it says it is
(default: node 2, at 127.0.0.1:40002).

  append HOST:PORT TERM PREV PREV_TERM COMMIT LEN  one AppendEntries with
        one RAFT_COMMAND entry of LEN bytes (9: what no semd entry is)
  vote HOST:PORT TERM                              one RequestVote
  short HOST:PORT                                  an AppendEntries whose
        header is 1 byte long, then a heartbeat's worth of bytes
  disrupt SECONDS GAP SEMCTL ADDRS HOST:PORT...    every GAP s, a
        RequestVote with disrupt_leader, one term above the one the cluster
        says (semctl -s ADDRS cluster status), as node --id
  silent SECONDS N HOST:PORT...                    N connections to each
        port that say nothing, opened again as soon as one is closed

Prints what happened ("sent", "refused: ...") on stdout; exits 0 unless the
arguments are wrong.
"""
import argparse
import hashlib
import hmac
import os
import select
import socket
import struct
import sys
import time

HDR_ADDR = 256
HDR_MAGIC = b"semdpt\0\1"
KEY_MAGIC = b"semdpk\0\1"
AE, AER, RV, RVR = 1, 2, 3, 4


def hostport(s):
    h, p = s.rsplit(":", 1)
    return h, int(p)


def recv_exact(s, n, deadline):
    b = b""
    while len(b) < n:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        c = s.recv(n - len(b))
        if not c:
            raise ConnectionError("closed by the node")
        b += c
    return b


class Peer:
    def __init__(self, a, addr):
        self.a = a
        self.s = socket.create_connection(hostport(addr), timeout=3)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        me = (a.addr or "127.0.0.1:%d" % (40000 + a.id)).encode()
        if a.key is None:
            # libraft's handshake: protocol 1, our id, the address.
            pad = me + b"\0" * (-len(me) % 8)
            self.s.sendall(struct.pack("<QQQ", 1, a.id, len(pad)) + pad)
            return
        key = open(a.key, "rb").read()
        nc = os.urandom(32)
        self.s.sendall(KEY_MAGIC + nc)
        proof = recv_exact(self.s, 64, time.monotonic() + 3)
        ns = proof[:32]
        want = hmac.new(key, b"semd peer key 1 server" + nc + ns, hashlib.sha256).digest()
        if not hmac.compare_digest(want, proof[32:]):
            raise ConnectionError("the node does not prove the key")
        hdr = HDR_MAGIC + struct.pack(">Q", a.id) + me + b"\0" * (HDR_ADDR - len(me))
        mac = hmac.new(key, b"semd peer key 1 client" + nc + ns + hdr, hashlib.sha256).digest()
        self.s.sendall(hdr + mac)
        if recv_exact(self.s, 1, time.monotonic() + 3) != b"\x01":
            raise ConnectionError("header refused")

    def message(self, mtype, version, header, payload=b""):
        if self.a.old:
            version = 0
        pre = struct.pack("<QQ", mtype | version << 16, len(header))
        self.s.sendall(pre + header + payload)

    def closed_soon(self, secs=1.0):
        """True when the node ends the connection within secs."""
        self.s.settimeout(secs)
        try:
            return self.s.recv(1) == b""
        except socket.timeout:
            return False
        except OSError:
            return True


def append(a, addr, term, prev, prev_term, commit, length):
    p = Peer(a, addr)
    entry = bytes([9]) * length
    hdr = struct.pack("<QQQQQ", term, prev, prev_term, commit, 1)
    hdr += struct.pack("<QBBBBI", term, 1, 0, 0, 0, length) + struct.pack("<Q", 0)
    p.message(AE, 0, hdr, entry)
    return p


def vote(a, addr, term, disrupt=False, last=0, last_term=0):
    p = Peer(a, addr)
    hdr = struct.pack("<QQQQQ", term, a.id, last, last_term, 1 if disrupt else 0)
    p.message(RV, 2, hdr)
    return p


def short(a, addr):
    p = Peer(a, addr)
    p.s.sendall(struct.pack("<QQ", AE, 1) + b"\x06" + b"\0" * 63)
    return p


def cmd_one(a, fn, *args):
    try:
        p = fn(a, *args)
        print("sent; %s" % ("closed by the node" if p.closed_soon() else "connection kept"))
    except (OSError, ConnectionError) as e:
        print("refused: %s" % e)


def cluster_term(semctl, addrs):
    """The term the cluster says it is in (cluster status: anyone may ask)."""
    import json
    import subprocess
    try:
        out = subprocess.run([semctl, "-s", addrs, "--json", "cluster", "status"],
                             capture_output=True, text=True, timeout=3).stdout
        return int(json.loads(out).get("term", 0))
    except (subprocess.SubprocessError, ValueError, OSError):
        return 0


def disrupt(a, secs, gap, semctl, addrs, peers):
    """Every gap s, a RequestVote of the cluster's term + 1 to each node,
    with disrupt_leader and a log longer than anyone's, as node --id."""
    end = time.monotonic() + secs
    sent = refused = 0
    while time.monotonic() < end:
        term = cluster_term(semctl, addrs)
        for x in peers:
            try:
                p = vote(a, x, term + 1, disrupt=True, last=1 << 40, last_term=term + 1)
                sent += 1
                p.s.close()
            except (OSError, ConnectionError):
                refused += 1
        time.sleep(gap)
    print("disrupt: %d sent, %d refused" % (sent, refused))


def silent(a, secs, n, addrs):
    end = time.monotonic() + secs
    conns = {x: [] for x in addrs}
    opened = 0
    while time.monotonic() < end:
        for x in addrs:
            conns[x] = [s for s in conns[x] if s.fileno() >= 0]
            while len(conns[x]) < n and opened < 100000:
                try:
                    s = socket.create_connection(hostport(x), timeout=1)
                    s.setblocking(False)
                    conns[x].append(s)
                    opened += 1
                except OSError:
                    break
        socks = [s for v in conns.values() for s in v]
        r, _, _ = select.select(socks, [], [], 0.05) if socks else ([], [], [])
        for s in r:
            try:
                if s.recv(4096) == b"":
                    s.close()
            except OSError:
                s.close()
        time.sleep(0.01)
    for v in conns.values():
        for s in v:
            s.close()
    print("silent: %d connections opened" % opened)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--key")
    ap.add_argument("--old", action="store_true")
    ap.add_argument("--id", type=int, default=2)
    ap.add_argument("--addr")
    ap.add_argument("cmd")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    x = a.args
    if a.cmd == "append" and len(x) == 6:
        cmd_one(a, append, x[0], *[int(v) for v in x[1:]])
    elif a.cmd == "vote" and len(x) == 2:
        cmd_one(a, vote, x[0], int(x[1]))
    elif a.cmd == "short" and len(x) == 1:
        cmd_one(a, short, x[0])
    elif a.cmd == "disrupt" and len(x) >= 5:
        disrupt(a, float(x[0]), float(x[1]), x[2], x[3], x[4:])
    elif a.cmd == "silent" and len(x) >= 3:
        silent(a, float(x[0]), int(x[1]), x[2:])
    else:
        ap.error("unknown command or wrong arguments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
