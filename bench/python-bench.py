#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench/python-bench.py - the Python package against redis-py and the C client.

    bench/python-bench.py -b BUILD_DIR [-d SECONDS] [-r REPS] [-o FILE]

One run, interleaved: a private semd (BUILD/semd, UNIX socket and TCP on
127.0.0.1) and a private redis-server (persistence off, a UNIX socket and a
loopback port), and for each transport (unix, tcp) and load (1 thread, 16
threads, 16 asyncio tasks) semclient and redis-py back to back, REPS rounds,
the median shown. One op is an acquire and its release, two round trips:

- semclient: ``with sem.acquire(): pass`` on one shared Client (threads) or
  ``async with sem.acquire(): pass`` on one AsyncClient (tasks), a name whose
  limit no load reaches (nobody waits);
- redis-py (Debian's python3-redis, no hiredis): the anchors' counting
  semaphore, two Lua scripts loaded once and called with EVALSHA: acquire
  ``if GET key < limit then INCR; return 1 else return 0`` (limit 10^9, so
  never refused), release ``DECR``; a shared redis.Redis (its connection pool
  gives each thread a connection) or redis.asyncio.Redis (tasks);
- C: semd-benchmark's down-up (its own wire client, one connection per
  load unit: -c 1 and -c 16, one thread), and the same loop in C over
  libsemclient (blocking semc_down/semc_up), the library the package wraps.

The ratios: semclient over redis-py in every cell (the issue's target: 2 or
more), and the package's time per op at 1 thread over the C clients' (target:
2 or less over semd-benchmark's). The machine is shared: read the ratios of one
run, not absolute figures.
"""
import argparse
import asyncio
import importlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ACQUIRE_LUA = """
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n < tonumber(ARGV[1]) then
  redis.call('INCR', KEYS[1])
  return 1
end
return 0
"""
RELEASE_LUA = "return redis.call('DECR', KEYS[1])"
REDIS_LIMIT = 10 ** 9
SEMD_LIMIT = 100000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_file(path, proc, seconds=10.0, nonempty=True):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if os.path.exists(path) and (not nonempty or os.path.getsize(path) > 0):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.02)
    return False


# --- the loads -------------------------------------------------------------------

def threads_run(nthreads, make_op, seconds):
    """ops/s of nthreads threads each running its op for seconds."""
    counts = [0] * nthreads
    start = threading.Barrier(nthreads + 1)
    stop = [False]

    def run(i):
        op = make_op()
        start.wait()
        n = 0
        while not stop[0]:
            op()
            n += 1
        counts[i] = n
    ts = [threading.Thread(target=run, args=(i,)) for i in range(nthreads)]
    for t in ts:
        t.start()
    start.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    time.sleep(seconds)
    stop[0] = True
    for t in ts:
        t.join()
    ops = sum(counts)
    return ops / (time.perf_counter() - t0), (time.process_time() - c0) / max(ops, 1) * 1e6


def tasks_run(ntasks, make_client, op, seconds):
    """ops/s of ntasks asyncio tasks on one client."""
    async def main():
        client = await make_client()
        stop = [False]
        counts = [0] * ntasks

        async def run(i):
            n = 0
            while not stop[0]:
                await op(client)
                n += 1
            counts[i] = n
        tasks = [asyncio.ensure_future(run(i)) for i in range(ntasks)]
        await asyncio.sleep(0.2)            # warm-up
        base = sum(counts)
        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.sleep(seconds)
        stop[0] = True
        await asyncio.gather(*tasks)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        ops = sum(counts) - base
        await close(client)
        return ops / elapsed, cpu / max(ops, 1) * 1e6

    async def close(client):
        if hasattr(client, "aclose"):
            await client.aclose()
        else:
            await client.close()
    return asyncio.run(main())


def semd_threads(addr, n, seconds):
    import semclient
    c = semclient.Client(addr, name="py-bench")
    sem = c.semaphore("bench/py", limit=SEMD_LIMIT)

    def make_op():
        def op():
            with sem.acquire():
                pass
        return op
    threads_run(n, make_op, 0.2)        # warm-up
    r = threads_run(n, make_op, seconds)
    c.close()
    return r


def semd_tasks(addr, n, seconds):
    import semclient

    async def make():
        c = semclient.AsyncClient(addr, name="py-bench")
        await c.connect()
        c._bench_sem = c.semaphore("bench/py", limit=SEMD_LIMIT)
        return c

    async def op(c):
        async with c._bench_sem.acquire():
            pass
    return tasks_run(n, make, op, seconds)


def redis_kwargs(addr):
    if addr.startswith("unix:"):
        return {"unix_socket_path": addr[5:]}
    host, port = addr[4:].rsplit(":", 1)
    return {"host": host, "port": int(port)}


def redis_threads(addr, n, seconds):
    import redis
    r = redis.Redis(max_connections=n + 4, **redis_kwargs(addr))
    acq, rel = r.script_load(ACQUIRE_LUA), r.script_load(RELEASE_LUA)

    def make_op():
        def op():
            while not r.evalsha(acq, 1, "bench:py", REDIS_LIMIT):
                pass
            r.evalsha(rel, 1, "bench:py")
        return op
    threads_run(n, make_op, 0.2)
    res = threads_run(n, make_op, seconds)
    r.close()
    return res


def redis_tasks(addr, n, seconds):
    import redis.asyncio as aredis

    async def make():
        r = aredis.Redis(max_connections=n + 4, **redis_kwargs(addr))
        r._bench = (await r.script_load(ACQUIRE_LUA), await r.script_load(RELEASE_LUA))
        return r

    async def op(r):
        acq, rel = r._bench
        while not await r.evalsha(acq, 1, "bench:py", REDIS_LIMIT):
            pass
        await r.evalsha(rel, 1, "bench:py")
    return tasks_run(n, make, op, seconds)


def semd_benchmark(build, addr, conns, seconds):
    out = subprocess.run([os.path.join(build, "semd-benchmark"), "-s", addr, "-c", str(conns),
                          "-P", "1", "-d", str(seconds), "--warmup", "0.2", "-t", "down-up",
                          "--threads", "1", "--json"], capture_output=True, text=True,
                         timeout=seconds * 4 + 30)
    r = json.loads(out.stdout)["results"][0]
    return r["ops_per_sec"], r["client_cpu_ns_per_round_trip"] * r["round_trips_per_op"] / 1000.0


C_LOOP = r"""
#include <semclient.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* clib ADDR SECONDS: blocking down+up on one handle; prints ops/s and CPU us/op */
int main(int argc, char **argv)
{
	struct semc *c = semc_new();
	struct semc_grant g;
	double t0, end, secs = atof(argv[2]);
	clock_t k0;
	long n = 0;

	semc_set_address(c, argv[1]);
	if (semc_connect(c, 5000) != 0 ||
	    semc_create(c, "bench/c", 100000, SEMC_MODE_OWNED, 1) != 0)
		return 1;
	for (end = now() + 0.2; now() < end;)
		if (semc_down(c, "bench/c", 1, -1, 0, &g) != 0 || semc_up(c, "bench/c", 0, g.permit_id, NULL) != 0)
			return 1;
	k0 = clock();
	for (t0 = now(), end = t0 + secs; now() < end; n++)
		if (semc_down(c, "bench/c", 1, -1, 0, &g) != 0 || semc_up(c, "bench/c", 0, g.permit_id, NULL) != 0)
			return 1;
	printf("%.0f %.2f\n", n / (now() - t0), (double)(clock() - k0) / CLOCKS_PER_SEC / n * 1e6);
	semc_free(c);
	return 0;
}
"""


def build_c_loop(build, top, tmp):
    src, exe = os.path.join(tmp, "clib.c"), os.path.join(tmp, "clib")
    with open(src, "w") as f:
        f.write(C_LOOP)
    libdir = os.path.join(build, "client", ".libs")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-o", exe, src,
                    "-I" + os.path.join(top, "client"), "-L" + libdir, "-lsemclient",
                    "-Wl,-rpath," + libdir], check=True)
    return exe


def c_loop(exe, addr, seconds):
    out = subprocess.run([exe, addr, str(seconds)], capture_output=True, text=True,
                         timeout=seconds * 4 + 30, check=True)
    ops, cpu = out.stdout.split()
    return float(ops), float(cpu)


# --- the run ---------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-b", "--build", required=True, help="build tree (semd, semd-benchmark, "
                    "python/lib from make python)")
    ap.add_argument("-d", "--seconds", type=float, default=2.0)
    ap.add_argument("-r", "--reps", type=int, default=3)
    ap.add_argument("-o", "--out", help="also write the table to this file")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    sys.path.insert(0, os.path.join(build, "python", "lib"))
    for mod in ("semclient", "redis"):      # there, or say so before starting anything
        importlib.import_module(mod)

    tmp = tempfile.mkdtemp(prefix="py-bench.")
    procs = []
    try:
        ready = os.path.join(tmp, "semd.ready")
        semd = subprocess.Popen([os.path.join(build, "semd"), "--listen",
                                 "unix:" + os.path.join(tmp, "semd.sock"), "--listen",
                                 "tcp:127.0.0.1:0", "--ready-file", ready, "--acl",
                                 "anonymous * all"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        procs.append(semd)
        if not wait_file(ready, semd):
            sys.exit("semd did not start")
        lines = open(ready).read().split()
        semd_addr = {"unix": [a for a in lines if a.startswith("unix:")][0],
                     "tcp": [a for a in lines if a.startswith("tcp:")][0]}
        rport, rsock = free_port(), os.path.join(tmp, "redis.sock")
        redis_srv = subprocess.Popen(["redis-server", "--port", str(rport), "--bind",
                                      "127.0.0.1", "--unixsocket", rsock, "--save", "",
                                      "--appendonly", "no", "--dir", tmp],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(redis_srv)
        if not wait_file(rsock, redis_srv, nonempty=False):
            sys.exit("redis-server did not start")
        redis_addr = {"unix": "unix:" + rsock, "tcp": "tcp:127.0.0.1:%d" % rport}
        exe = build_c_loop(build, top, tmp)

        loads = [("1 thread", "threads", 1), ("16 threads", "threads", 16),
                 ("16 tasks", "tasks", 16)]
        res = {}
        secs = args.seconds
        for rep in range(args.reps):
            for tr in ("unix", "tcp"):
                for label, kind, n in loads:
                    if kind == "threads":
                        s = semd_threads(semd_addr[tr], n, secs)
                        r = redis_threads(redis_addr[tr], n, secs)
                    else:
                        s = semd_tasks(semd_addr[tr], n, secs)
                        r = redis_tasks(redis_addr[tr], n, secs)
                    res.setdefault((tr, label, "semclient"), []).append(s)
                    res.setdefault((tr, label, "redis-py"), []).append(r)
                    print("round %d %s %-10s semclient %7.0f op/s %5.1f us cpu/op   "
                          "redis-py %7.0f op/s %5.1f us cpu/op" % ((rep + 1, tr, label) + s + r),
                          file=sys.stderr)
                for conns in (1, 16):
                    res.setdefault((tr, conns, "sbm"), []).append(
                        semd_benchmark(build, semd_addr[tr], conns, secs))
                res.setdefault((tr, 1, "clib"), []).append(c_loop(exe, semd_addr[tr], secs))

        def med(key, i):
            return statistics.median(v[i] for v in res[key])
        out = ["semclient (Python) vs redis-py (Lua semaphore) vs C; op = acquire + release"
               " (2 round trips); median of %d interleaved rounds of %.1f s; cpu: the client"
               " process's CPU time per op" % (args.reps, secs), "",
               "| tr | load | semclient op/s | redis-py op/s | ratio | semclient cpu us/op |"
               " redis-py cpu us/op | ratio | semd-benchmark op/s (same conns) |",
               "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for tr in ("unix", "tcp"):
            for label, kind, n in loads:
                so, sc = med((tr, label, "semclient"), 0), med((tr, label, "semclient"), 1)
                ro, rc = med((tr, label, "redis-py"), 0), med((tr, label, "redis-py"), 1)
                out.append("| %s | %s | %.0f | %.0f | %.2fx | %.1f | %.1f | %.2fx | %.0f |"
                           % (tr, label, so, ro, so / ro, sc, rc, rc / sc,
                              med((tr, n, "sbm"), 0)))
        out += ["", "At 1 thread, the Python layer against the C clients (wall and client CPU"
                " time per op):", "",
                "| tr | semclient us/op | libsemclient C us/op | semd-benchmark us/op |"
                " py / libsemclient | py / semd-benchmark | cpu: semclient | libsemclient |"
                " semd-benchmark | py / libsemclient | py / semd-benchmark |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for tr in ("unix", "tcp"):
            py, cl = 1e6 / med((tr, "1 thread", "semclient"), 0), 1e6 / med((tr, 1, "clib"), 0)
            sb = 1e6 / med((tr, 1, "sbm"), 0)
            pc, cc = med((tr, "1 thread", "semclient"), 1), med((tr, 1, "clib"), 1)
            sc = med((tr, 1, "sbm"), 1)
            out.append("| %s | %.1f | %.1f | %.1f | %.2fx | %.2fx | %.1f | %.1f | %.1f | %.2fx |"
                       " %.2fx |" % (tr, py, cl, sb, py / cl, py / sb, pc, cc, sc, pc / cc,
                                     pc / sc))
        text = "\n".join(out) + "\n"
        print(text)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
