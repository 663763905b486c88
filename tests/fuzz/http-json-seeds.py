# SPDX-License-Identifier: BSD-2-Clause
"""tests/fuzz/http-json-seeds.py DIR - write the seeds of fuzz_http_json
(tests/fuzz/fuzz_http_json.c) into DIR: a kind byte, a name, then a body
of JSON for each kind of request, and some semd.Reply messages (made with
the small protobuf writer below) for the replies' side. Its output is
committed in tests/fuzz/corpus/fuzz_http_json/."""

import os
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def seed(fname, kind, name, rest):
    name = name.encode()
    with open(os.path.join(out, fname), "wb") as f:
        f.write(bytes([kind, len(name)]) + name + rest)


def varint(v):
    b = b""
    while True:
        x = v & 0x7F
        v >>= 7
        if v:
            b += bytes([x | 0x80])
        else:
            return b + bytes([x])


def field(num, v):
    """A varint (int) or length-delimited (bytes/str) field."""
    if isinstance(v, int):
        return varint(num << 3) + varint(v)
    if isinstance(v, str):
        v = v.encode("utf-8", "surrogateescape")
    return varint(num << 3 | 2) + varint(len(v)) + v


bodies = [
    (0, "acquire", b'{"n":2,"lease_ms":30000,"timeout_ms":-1,"limit":4,'
     b'"priority":-3,"group":"g","replace":"r","client":"c","host":"h","pid":7}'),
    (0, "acquire-empty", b""),
    (1, "many", b'{"wants":[{"name":"a","n":1,"limit":2},{"name":"b"}],'
     b'"lease_ms":1000,"timeout_ms":5000,"priority":7}'),
    (2, "create", b'{"limit":5,"mode":"owned","rate":10,"rate_period_ms":1000,'
     b'"burst":20,"max_waiters":9,"share":"key","weights":{"a":2,"b":3},'
     b'"if_not_exists":true}'),
    (2, "create-signal", b'{"limit":2,"mode":"signal","initial":0}'),
    (3, "limit", b'{"limit":3}'),
    (4, "rate", b'{"rate":0}'),
    (5, "queue", b'{"max_waiters":4}'),
    (6, "up", b'{"n":1}'),
    (7, "renew", b'{"lease_ms":60000}'),
    (8, "member", b'{"node_id":"4","address":"127.0.0.1:7004"}'),
    (9, "transfer", b'{"node_id":2}'),
    (0, "bad-type", b'{"n":"two"}'),
    (0, "unknown", b'{"colour":1}'),
    (2, "deep", b'{"weights":{"a":[[[[[[[[1]]]]]]]]}}'),
]
for kind, name, body in bodies:
    seed("body-" + name, kind, "jobs/" + name, body)

holder = field(1, 5) + field(2, 1718000000000001) + field(3, 1) + \
    field(4, "semctl") + field(5, b"host-\xff") + field(6, 42) + \
    field(7, "uid:1000") + field(8, 1718000000000) + field(9, 1) + \
    field(10, 1718000030000)
waiter = field(1, 3) + field(2, 1) + field(3, "c") + field(6, "anonymous") + \
    field(7, 1) + field(9, 9) + field(20, "key")
info = field(1, "jobs/\u00e9") + field(2, 4) + field(3, 3) + field(6, holder) + \
    field(7, waiter) + field(9, 1) + field(10, 1) + field(13, 10) + \
    field(14, 1000) + field(15, 10) + field(16, 2500000000)
replies = {
    "info": field(1, 1) + field(6, info),
    "grant": field(1, 2) + field(3, "q") + field(5, field(1, 9) + field(2, 77) +
                                                  field(3, 1) + field(4, 1500)),
    "list": field(1, 3) + field(7, field(1, field(1, "a/b") + field(2, 1)) +
                                field(2, "a/b")),
    "stats": field(1, 4) + field(8, field(1, field(1, "wait_ms_le_8") +
                                               field(2, 3)) +
                                 field(1, field(1, "wait_count") + field(2, 3))),
    "event": field(1, 0) + field(14, field(1, 5) + field(2, "w") + field(3, 2) +
                                 field(4, 1) + field(6, 1) + field(7, 2) +
                                 field(21, 99)),
    "problem": field(1, 6) + field(2, 9) + field(3, b"x: \xfe bad bytes"),
}
for name, rep in replies.items():
    seed("reply-" + name, 0, "", rep)
