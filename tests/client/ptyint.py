# SPDX-License-Identifier: BSD-2-Clause
"""tests/client/ptyint.py - `semctl run` on a real terminal gets a ^C.

  ptyint.py SEMCTL ADDR NAME DIR

Starts `semctl -s ADDR run NAME -- python3 CHILD` as the session leader of a
new pseudo-terminal (so semctl and its command are the terminal's
foreground process group), waits until the command is ready, types ^C on
the terminal, waits half a second, tells the command to stop, and prints
"sigints=N exit=M": how many SIGINTs the command saw (the terminal sends one
to the whole group; semctl must not forward another) and semctl's status.
"""
import os
import pty
import select
import sys
import time

CHILD = r"""
import os, signal, sys, time
d = sys.argv[1]
def h(sig, frame):
    with open(os.path.join(d, "sigints"), "a") as f:
        f.write("INT\n")
signal.signal(signal.SIGINT, h)
open(os.path.join(d, "ready"), "w").close()
end = time.monotonic() + 20
while time.monotonic() < end and not os.path.exists(os.path.join(d, "stop")):
    time.sleep(0.02)
sys.exit(7)
"""


def main():
    semctl, addr, name, d = sys.argv[1:5]
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(semctl, [semctl, "-s", addr, "run", name, "--", sys.executable, "-c", CHILD, d])
    out = b""

    def drain(seconds):
        nonlocal out
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
            if not r:
                break
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk

    end = time.monotonic() + 10
    while time.monotonic() < end and not os.path.exists(os.path.join(d, "ready")):
        drain(0.02)
    if not os.path.exists(os.path.join(d, "ready")):
        print("the command did not start: %r" % out)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        sys.exit(1)
    os.write(fd, b"\x03")
    drain(0.5)
    open(os.path.join(d, "stop"), "w").close()
    status = None
    end = time.monotonic() + 10
    while time.monotonic() < end:
        drain(0.05)
        p, st = os.waitpid(pid, os.WNOHANG)
        if p == pid:
            status = st
            break
    if status is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("semctl run did not exit: %r" % out)
        sys.exit(1)
    try:
        n = len(open(os.path.join(d, "sigints")).read().split())
    except OSError:
        n = 0
    print("sigints=%d exit=%d" % (n, os.waitstatus_to_exitcode(status)))


if __name__ == "__main__":
    main()
