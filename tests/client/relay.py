# SPDX-License-Identifier: BSD-2-Clause
"""tests/client/relay.py - a TCP relay on loopback between a client and semd
that a test can stall (stop forwarding both ways, connections kept open),
resume, cut (close every relayed connection) and block (refuse new
connections until unblocked).

As a module: Relay(target_port).start(); r.stall(); r.resume(); r.cut();
r.block(); r.unblock(); r.bytes_up (client -> daemon bytes). As a program:
  relay.py serve TARGET_PORT PORTFILE CTLSOCK   (listens on 127.0.0.1:0)
  relay.py ctl CTLSOCK stall|resume|cut|block|unblock|bytes|quit
the ctl command waits until the relay has done it and prints its answer.
"""
import os
import socket
import sys
import threading


class Relay:
    def __init__(self, target_port, port=0):
        self.target = target_port
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", port))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        self.lock = threading.Lock()
        self.flowing = threading.Event()
        self.flowing.set()
        self.blocked = False
        self.pairs = []
        self.bytes_up = 0

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            with self.lock:
                blocked = self.blocked
            if blocked:
                c.close()
                continue
            try:
                u = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                c.close()
                continue
            for s in (c, u):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.pairs.append((c, u))
            threading.Thread(target=self._pump, args=(c, u, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, False), daemon=True).start()

    def _pump(self, a, b, up):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                # stalled: hold the bytes, as a network partition would
                self.flowing.wait()
                if up:
                    with self.lock:
                        self.bytes_up += len(d)
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stall(self):
        self.flowing.clear()

    def resume(self):
        self.flowing.set()

    def cut(self):
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for c, u in pairs:
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def block(self):
        with self.lock:
            self.blocked = True

    def unblock(self):
        with self.lock:
            self.blocked = False

    def up(self):
        with self.lock:
            return self.bytes_up


def serve(target, portfile, ctl):
    r = Relay(target).start()
    cs = socket.socket(socket.AF_UNIX)
    cs.bind(ctl)
    cs.listen(4)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(r.port))
    os.rename(portfile + ".tmp", portfile)
    while True:
        k, _ = cs.accept()
        cmd = k.makefile().readline().strip()
        ans = "ok"
        if cmd == "stall":
            r.stall()
        elif cmd == "resume":
            r.resume()
        elif cmd == "cut":
            r.cut()
        elif cmd == "block":
            r.block()
        elif cmd == "unblock":
            r.unblock()
        elif cmd == "bytes":
            ans = str(r.up())
        elif cmd == "quit":
            k.sendall(b"ok\n")
            return
        else:
            ans = "unknown command"
        k.sendall((ans + "\n").encode())
        k.close()


def ctl(path, cmd):
    k = socket.socket(socket.AF_UNIX)
    k.settimeout(10)
    k.connect(path)
    k.sendall((cmd + "\n").encode())
    print(k.makefile().readline().strip())


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 4 and sys.argv[1] == "ctl":
        ctl(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
