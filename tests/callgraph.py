#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tests/callgraph.py - which file of the daemon calls which, from the compiler.

Every C file under daemon/ is compiled once more with gcc -fcallgraph-info
(at -O0, so that nothing is inlined away) and the call graph gcc writes is
read back: a call from a function of file A to a function defined in file B
is an edge A -> B. A call through a function pointer is no edge: that is how
a lower part is given something to call above it (struct sm_out, struct
semlog_host, struct feed, the core's wake callbacks), which the rules allow.

The rooms (doc/design.md): daemon/state/ the state machine, daemon/log/ the
replicated log under it, the rest of daemon/ the shell, above which stand
daemon/http/, the HTTP front door, and daemon/main.c, which ties them
together. The rules:
  1. no circle of calls between the files of daemon/state/, nor between
     those of daemon/log/, nor between those of the shell;
  2. the rooms call one way: main may call every room, the front door the
     shell, the log and the state, the shell the log and the state, the log
     the state; the state calls none, the log never calls the shell (it is
     handed struct semlog_host), the shell never calls the front door (it
     is handed struct config_door). daemon/logging.c, the log lines, calls
     no other file of the daemon: every room but the state may call it.
A circle inside the front door is printed, not refused.

libsemclient (client/) is read the same way, its floors (doc/design.md)
client/base/ (addresses, results, transports), client/session/ (the
session's bookkeeping), client/engine/ (the I/O engine) and client/api/
(the API): a floor calls only the floors below it, and no circle of calls
joins any two of client/'s files. semctl (cli/), on libsemclient's public
API, has no circle of calls between its files either.

Usage: tests/callgraph.py [--order] [--dot FILE] BUILD_DIR
BUILD_DIR is a configured and built tree (config.h and proto/semd.pb-c.h are
taken from it). --order prints each room's files by layer, lowest first (a
file calls only files of lower layers, or of its own circle). CALLGRAPH_CC
(default gcc) must be a gcc: clang has no -fcallgraph-info. Exits 1 when a
rule is broken, 2 when a file cannot be compiled or on a usage error.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOMS = (("daemon/state/", "state"), ("daemon/log/", "log"), ("daemon/http/", "http"),
         ("daemon/main.c", "main"), ("daemon/", "shell"))
MAY_CALL = {"main": {"http", "shell", "log", "state"}, "http": {"shell", "log", "state"},
            "shell": {"log", "state"}, "log": {"state"}, "state": set()}
# Rooms in which no circle of calls between files is allowed.
NO_CIRCLE = {"state", "log", "shell"}
# Leaves below the shell and the log alike: they call no file of the daemon.
LEAVES = {"daemon/logging.c"}
# libsemclient's floors, lowest first, and the floors each may call.
CLIENT_FLOORS = (("client/base/", "base"), ("client/session/", "session"),
                 ("client/engine/", "engine"), ("client/api/", "api"))
CLIENT_BELOW = {"base": set(), "session": {"base"}, "engine": {"session", "base"},
                "api": {"engine", "session", "base"}}
NODE = re.compile(r'^node: \{ title: "([^"]*)" label: "([^"\\]*)\\n([^"]*):(\d+):\d+"(.*)\}$')
EDGE = re.compile(r'^edge: \{ sourcename: "([^"]*)" targetname: "([^"]*)" '
                  r'label: "([^"]*):(\d+):\d+" \}$')


def room_of(path):
    """The room of a file under daemon/."""
    for prefix, room in ROOMS:
        if path.startswith(prefix):
            return room
    return None


def sources(top, folder="daemon"):
    """Every C file under folder (daemon/), relative to top."""
    out = []
    for d, _, files in os.walk(os.path.join(top, folder)):
        out += [os.path.relpath(os.path.join(d, f), top) for f in files if f.endswith(".c")]
    return sorted(out)


def pkg_cflags():
    """The libraries' include flags (most live in /usr/include anyway)."""
    if shutil.which("pkg-config") is None:
        return []
    r = subprocess.run(["pkg-config", "--cflags", "libevent", "libprotobuf-c", "openssl",
                        "raft", "libuv"], capture_output=True, text=True, check=False)
    return r.stdout.split() if r.returncode == 0 else []


def compile_one(job):
    """Compile one file for its call graph: (src, the .ci text or None, errors)."""
    top, build, tmp, src, cflags = job
    base = src.replace("/", "_")[:-2]
    cmd = [os.environ.get("CALLGRAPH_CC", "gcc"), "-c", "-O0", "-w", "-fcallgraph-info",
           "-I" + top, "-I" + build, "-D_GNU_SOURCE"] + cflags + \
        [os.path.join(top, src), "-o", os.path.join(tmp, base + ".o")]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        return src, None, r.stderr
    with open(os.path.join(tmp, base + ".ci"), encoding="utf-8") as f:
        return src, f.read(), None


def parse(top, text):
    """The functions a .ci file defines (name -> file) and its calls."""
    defs, calls = {}, []
    for line in text.splitlines():
        m = NODE.match(line)
        if m:
            title, name, path, _, rest = m.groups()
            rel = os.path.relpath(path, top)
            # A static function's title carries its file: not callable from others.
            if "ellipse" not in rest and ":" not in title and rel.endswith(".c"):
                defs[name] = rel
            continue
        m = EDGE.match(line)
        if m:
            caller, callee, _, lineno = m.groups()
            calls.append((caller.rsplit(":", 1)[-1], callee, int(lineno)))
    return defs, calls


def circles(nodes, edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def layers(files, edges, comps):
    """Each file's layer: 0 for one that calls no other, else one above its highest callee."""
    comp_of = {f: tuple(c) for c in comps for f in c}
    layer = {}

    def depth(f, seen):
        key = comp_of.get(f, (f,))
        if key[0] in layer:
            return layer[key[0]]
        if key in seen:
            return 0
        seen = seen | {key}
        d = 0
        for g in key:
            for h in edges.get(g, ()):
                if h in files and comp_of.get(h, (h,)) != key:
                    d = max(d, depth(h, seen) + 1)
        for g in key:
            layer[g] = d
        return d

    for f in files:
        depth(f, frozenset())
    return layer


def graph(top, build, srcs, cflags):
    """The calls between srcs' files: (edges, an example call of each edge),
    or None when a file does not compile (said)."""
    tmp = tempfile.mkdtemp(prefix="callgraph.")
    try:
        jobs = int(os.environ.get("LINT_JOBS", "2"))
        with ThreadPoolExecutor(max_workers=max(jobs, 1)) as ex:
            results = list(ex.map(compile_one, [(top, build, tmp, s, cflags) for s in srcs]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    defs, calls = {}, {}
    for src, text, err in results:
        if text is None:
            print(f"callgraph: {src} does not compile:\n{err}", file=sys.stderr)
            return None
        d, c = parse(top, text)
        defs.update(d)
        calls[src] = c
    edges, example = {}, {}
    for src in srcs:
        for caller, callee, lineno in calls[src]:
            dst = defs.get(callee)
            if dst is None or dst == src:
                continue
            edges.setdefault(src, set()).add(dst)
            example.setdefault((src, dst), f"{src}:{lineno} {caller}() -> {callee}()")
    return edges, example


def client_check(top, build, cflags, order, folder="client", floors=CLIENT_FLOORS):
    """libsemclient's rules (the module's doc), or semctl's (folder cli,
    floors ()): whether one is broken (None: a file does not compile)."""
    srcs = sources(top, folder)
    got = graph(top, build, srcs, cflags)
    if got is None:
        return None
    edges, example = got
    floor = {s: next((f for p, f in floors if s.startswith(p)), None) for s in srcs}
    print("callgraph: %s/, %d files, %d pairs of files with calls" % (
        folder, len(srcs), sum(len(v) for v in edges.values())))
    bad = False
    comps = circles(srcs, edges)
    for comp in comps:
        bad = True
        print("callgraph: CIRCLE (not allowed) in %s/, %d files: %s" % (
            folder, len(comp), " ".join(comp)))
        for a in comp:
            for b in sorted(edges.get(a, ())):
                if b in comp:
                    print("    " + example[(a, b)])
    for a in srcs:
        for b in sorted(edges.get(a, ()) if floors else ()):
            fa, fb = floor[a], floor[b]
            if fa is None or fb is None:
                bad = True
                print(f"callgraph: {folder}/ file on no floor: {a if fa is None else b}")
            elif fa != fb and fb not in CLIENT_BELOW[fa]:
                bad = True
                print(f"callgraph: CALL UP {folder}/ {fa} -> {fb}: " + example[(a, b)])
    if order:
        layer = layers(set(srcs), edges, comps)
        print(f"callgraph: {folder}/, by layer (a file calls only lower ones):")
        for n in sorted(set(layer.values())):
            print("    %2d  %s" % (n, " ".join(f[len(folder) + 1:] for f in srcs
                                            if layer[f] == n)))
    if not bad:
        print(f"callgraph: {folder}/: no circle" +
              (", each floor calls only the floors below it" if floors else ""))
    return bad


def main(argv):
    args = list(argv[1:])
    dot, order = None, False
    if "--dot" in args:
        i = args.index("--dot")
        if i + 1 >= len(args):
            print(__doc__.split("\n\n")[-1].strip(), file=sys.stderr)
            return 2
        dot = args[i + 1]
        del args[i:i + 2]
    if "--order" in args:
        args.remove("--order")
        order = True
    if len(args) != 1:
        print(__doc__.split("\n\n")[-1].strip(), file=sys.stderr)
        return 2
    top = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    build = os.path.abspath(args[0])
    if not os.path.exists(os.path.join(build, "proto", "semd.pb-c.h")):
        print(f"callgraph: {build} is not a built tree (no proto/semd.pb-c.h)", file=sys.stderr)
        return 2
    srcs = sources(top)
    cflags = pkg_cflags()
    got = graph(top, build, srcs, cflags)
    if got is None:
        return 2
    edges, example = got
    count = {}
    for s in srcs:
        count[room_of(s)] = count.get(room_of(s), 0) + 1
    print("callgraph: %d files (%s), %d pairs of files with calls" % (
        len(srcs), ", ".join(f"{r} {count.get(r, 0)}" for _, r in ROOMS),
        sum(len(v) for v in edges.values())))
    bad = False
    comps = circles(srcs, edges)
    for comp in comps:
        rooms = sorted({room_of(f) for f in comp})
        fatal = bool(NO_CIRCLE & set(rooms)) or len(rooms) > 1
        bad = bad or fatal
        print("callgraph: %s in %s, %d files: %s" % (
            "CIRCLE (not allowed)" if fatal else "circle", "+".join(rooms), len(comp),
            " ".join(comp)))
        for a in comp:
            for b in sorted(edges.get(a, ())):
                if b in comp:
                    print("    " + example[(a, b)])
    for a in srcs:
        for b in sorted(edges.get(a, ())):
            ra, rb = room_of(a), room_of(b)
            if ra == rb or rb in MAY_CALL[ra] or (b in LEAVES and ra != "state"):
                continue
            bad = True
            print(f"callgraph: BACK-CALL {ra} -> {rb}: " + example[(a, b)])
    if order:
        for _, room in ROOMS:
            files = [s for s in srcs if room_of(s) == room]
            layer = layers(set(files), edges, comps)
            print(f"callgraph: {room}, by layer (a file calls only lower ones):")
            for n in sorted(set(layer.values())):
                print("    %2d  %s" % (n, " ".join(os.path.basename(f) for f in files
                                                if layer[f] == n)))
    if dot:
        with open(dot, "w", encoding="utf-8") as f:
            f.write("digraph daemon {\n")
            for a in srcs:
                for b in sorted(edges.get(a, ())):
                    f.write(f'\t"{a}" -> "{b}";\n')
            f.write("}\n")
    for folder, floors in (("client", CLIENT_FLOORS), ("cli", ())):
        broken = client_check(top, build, cflags, order, folder, floors)
        if broken is None:
            return 2
        bad = broken or bad
    print("callgraph: " + ("the rules are broken (above)" if bad else
                           "no circle in daemon/state/, daemon/log/ nor the shell, "
                           "the rooms call one way"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
