# SPDX-License-Identifier: BSD-2-Clause
"""tests/client/ptyrun.py - run a command on a pseudo-terminal.

  ptyrun.py SECONDS CMD [ARG...]

Runs CMD as the session leader of a new pseudo-terminal (its stdin, stdout
and stderr are the terminal), copies what it writes to our stdout as it
comes, and exits with its status (124 if it did not end within SECONDS:
it is then killed). For semctl's progress line, drawn only on a terminal.
"""
import os
import pty
import select
import signal
import sys
import time


def main():
    limit = float(sys.argv[1])
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(sys.argv[2], sys.argv[2:])
    end = time.monotonic() + limit
    status = None
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if data:
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
                continue
        done, st = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            status = st
            break
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        sys.exit(124)
    sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode")
             else (status >> 8))


main()
