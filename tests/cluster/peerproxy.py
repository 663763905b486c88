#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A fault-injecting proxy in front of each raft node's peer port.

    peerproxy.py CONTROL LISTEN=TARGET [LISTEN=TARGET ...]

Each LISTEN (HOST:PORT, the address the cluster's configuration gives for a
node) forwards to TARGET (the node's peer-bind). libraft's TCP transport
opens one connection per direction and starts each with a handshake: a
64-bit protocol version and the sender's 64-bit node id (little-endian), so
the proxy knows both ends of every connection: the sender, and the node
its LISTEN stands for.

CONTROL is a file, polled every 20 ms: whitespace-separated node ids cut
off from the others (no connection from or to them; those open are
closed, new ones refused). An empty file heals the network. Loopback only;
it runs until killed.
"""
import asyncio
import os
import struct
import sys

blocked = set()
conns = []          # (sender, target_node, writer_a, writer_b)


def node_of(listen_index):
    return listen_index + 1


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except OSError:
            pass


async def serve(listen, target, node):
    thost, tport = target.rsplit(":", 1)

    async def handle(reader, writer):
        try:
            head = await asyncio.wait_for(reader.readexactly(16), 5)
        except (asyncio.IncompleteReadError, asyncio.TimeoutError, OSError):
            writer.close()
            return
        sender = struct.unpack("<QQ", head)[1]
        if sender in blocked or node in blocked:
            writer.close()
            return
        try:
            tr, tw = await asyncio.open_connection(thost, int(tport))
        except OSError:
            writer.close()
            return
        tw.write(head)
        entry = (sender, node, writer, tw)
        conns.append(entry)
        await asyncio.gather(pipe(reader, tw), pipe(tr, writer))
        if entry in conns:
            conns.remove(entry)

    host, port = listen.rsplit(":", 1)
    server = await asyncio.start_server(handle, host, int(port))
    async with server:
        await server.serve_forever()


async def control(path):
    global blocked
    while True:
        try:
            with open(path) as f:
                ids = {int(x) for x in f.read().split()}
        except (OSError, ValueError):
            ids = set()
        if ids != blocked:
            blocked = ids
            for c in list(conns):
                if c[0] in blocked or c[1] in blocked:
                    for w in (c[2], c[3]):
                        try:
                            w.transport.abort()
                        except OSError:
                            pass
                    conns.remove(c)
        await asyncio.sleep(0.02)


async def main():
    path = sys.argv[1]
    tasks = [control(path)]
    for i, spec in enumerate(sys.argv[2:]):
        listen, target = spec.split("=")
        tasks.append(serve(listen, target, node_of(i)))
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        os._exit(0)
