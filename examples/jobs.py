#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""examples/jobs.py - a distributed job limited through semd, in Python
(examples/jobs.c is the same in C).

W workers (processes here; they could as well run on W hosts) each do T
tasks; every task needs one permit of the shared semaphore NAME, whose
limit K caps how many tasks run at once across all workers (a database that
takes K connections, an API quota...). The fencing token of each permit is
what a worker hands to the protected resource, which can ask semd whether
it is still valid. With --asyncio the workers are tasks of one event loop
sharing one AsyncClient instead.

The parent only watches: each worker writes '+' to a pipe once it holds its
permit and '-' just before giving it back, so the parent can count how many
tasks are inside at any moment and check that it never exceeds K.

    jobs.py [-s ADDR] [-n NAME] [-w WORKERS] [-k LIMIT] [-t TASKS] [-d MS] [--asyncio]

Exit status: 0, 1 when a worker failed or the limit was exceeded, 2 for a
usage error, 3 when the server cannot be reached or refuses.
"""
import argparse
import asyncio
import os
import sys
import time

import semclient


def worker(args, wid, out):
    """One worker process: T tasks, each inside one permit."""
    with semclient.Client(args.server, name="jobs-worker-%d" % wid) as c:
        sem = c.semaphore(args.name)
        for _ in range(args.tasks):
            with sem.acquire(timeout=30) as permit:
                os.write(out, b"+")
                # the protected resource would check the token like this
                if not c.validate(args.name, permit.token):
                    print("worker %d: token %d not valid?" % (wid, permit.token),
                          file=sys.stderr)
                time.sleep(args.work_ms / 1000.0)
                permit.check()      # still ours? (raises HoldLost if not)
                os.write(out, b"-")


def run_processes(args):
    r, w = os.pipe()
    pids = []
    for i in range(args.workers):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            code = 0
            try:
                worker(args, i, w)
            except semclient.Error as e:
                print("jobs-worker-%d: %s" % (i, e), file=sys.stderr)
                code = 1
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(w)
    inside = most = entered = 0
    while True:     # ends when every worker has closed its end of the pipe
        data = os.read(r, 256)
        if not data:
            break
        for b in data:
            inside += 1 if b == ord("+") else -1
            entered += b == ord("+")
            most = max(most, inside)
    os.close(r)
    failed = sum(1 for pid in pids if os.waitpid(pid, 0)[1] != 0)
    return entered, most, failed


def run_tasks(args):
    state = {"inside": 0, "most": 0, "entered": 0}

    async def task(c, wid):
        sem = c.semaphore(args.name)
        for _ in range(args.tasks):
            async with sem.acquire(timeout=30) as permit:
                state["inside"] += 1
                state["entered"] += 1
                state["most"] = max(state["most"], state["inside"])
                if not await c.validate(args.name, permit.token):
                    print("task %d: token %d not valid?" % (wid, permit.token), file=sys.stderr)
                await asyncio.sleep(args.work_ms / 1000.0)
                state["inside"] -= 1

    async def main():
        async with semclient.AsyncClient(args.server, name="jobs-tasks") as c:
            res = await asyncio.gather(*(task(c, i) for i in range(args.workers)),
                                       return_exceptions=True)
        bad = [e for e in res if isinstance(e, BaseException)]
        for e in bad:
            print("jobs: %s" % e, file=sys.stderr)
        return len(bad)

    failed = asyncio.run(main())
    return state["entered"], state["most"], failed


def positive(s):
    v = int(s)
    if not 1 <= v <= 100000:
        raise argparse.ArgumentTypeError("a number from 1 to 100000")
    return v


def main():
    ap = argparse.ArgumentParser(description="A job whose workers share a limit through semd.")
    ap.add_argument("-s", dest="server", help="server address (default: $SEMD_SERVER)")
    ap.add_argument("-n", dest="name", default="examples/jobs")
    ap.add_argument("-w", dest="workers", type=positive, default=4)
    ap.add_argument("-k", dest="limit", type=positive, default=2)
    ap.add_argument("-t", dest="tasks", type=positive, default=5)
    ap.add_argument("-d", dest="work_ms", type=positive, default=20)
    ap.add_argument("--asyncio", action="store_true", help="tasks of one event loop")
    args = ap.parse_args()
    # the coordinator makes sure the semaphore exists with limit K
    try:
        with semclient.Client(args.server, name="jobs", connect_timeout=5) as c:
            c.create(args.name, args.limit, exist_ok=True)
            c.set_limit(args.name, args.limit)
    except semclient.Error as e:
        print("jobs: %s" % e, file=sys.stderr)
        return 3
    entered, most, failed = (run_tasks if args.asyncio else run_processes)(args)
    print("%d workers ran %d tasks, at most %d at once (limit %d)"
          % (args.workers, entered, most, args.limit))
    if failed or entered != args.workers * args.tasks:
        print("jobs: %d worker(s) failed" % failed, file=sys.stderr)
        return 1
    if most > args.limit:
        print("jobs: the limit was exceeded", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
