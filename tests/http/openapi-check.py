# SPDX-License-Identifier: BSD-2-Clause
"""tests/http/openapi-check.py OPENAPI SEEN [--cover] - is every answer the
tests saw (SEEN: one JSON object a line, written by tests/http/hclient.py and
the hcurl of tests/http/lib.sh) one the OpenAPI document allows: its path
and method there, its status among the operation's, its JSON body valid by
the status's schema (JSON Schema 2020-12, python3-jsonschema)? With --cover,
also: every operation of the document was seen at least once."""

import json
import re
import sys

import jsonschema

doc = json.load(open(sys.argv[1]))
seen = [json.loads(line) for line in open(sys.argv[2]) if line.strip()]
cover = "--cover" in sys.argv[3:]
bad = 0


def fail(msg):
    global bad
    bad += 1
    if bad <= 30:
        print("openapi-check: " + msg)


# The document itself: an OpenAPI 3.1 document whose refs all resolve.
if doc.get("openapi") != "3.1.0":
    fail("not an OpenAPI 3.1.0 document")
text = json.dumps(doc)
for ref in set(re.findall(r'"\$ref": "#/components/(\w+)/(\w+)"', text)):
    if ref[1] not in doc["components"].get(ref[0], {}):
        fail("a $ref to a missing #/components/%s/%s" % ref)

routes = []
for path in doc["paths"]:
    rx = "^" + "/".join("[^/]+" if re.fullmatch(r"\{\w+\}", s) else re.escape(s)
                        for s in path.split("/")) + "$"
    routes.append((re.compile(rx), path))

validators = {}


def validator(schema):
    """A validator of schema, its refs resolved in the document."""
    key = json.dumps(schema, sort_keys=True)
    if key not in validators:
        root = dict(schema)
        root["components"] = doc["components"]
        validators[key] = jsonschema.Draft202012Validator(root)
    return validators[key]


used = set()
for rec in seen:
    method = rec["method"].lower()
    where = "%s %s -> %d" % (rec["method"], rec["path"], rec["status"])
    found = [p for rx, p in routes if rx.match(rec["path"])]
    if not found:
        # Answers to paths that are no resource: 404 problems, by design.
        if rec["status"] != 404:
            fail("%s: no such path in the document" % where)
        continue
    if method == "options":
        continue
    if method == "head":
        # HEAD is GET without its body (RFC 9110 9.3.2): the document
        # names GET; the answer's fields are GET's.
        method = "get"
    ops = [doc["paths"][p] for p in found if method in doc["paths"][p]]
    if not ops:
        if rec["status"] != 405:
            fail("%s: no such method there (and not answered 405)" % where)
        continue
    op = ops[0][method]
    used.add(op["operationId"])
    responses = op["responses"]
    resp = responses.get(str(rec["status"]), responses.get("default"))
    if resp is None:
        fail("%s: status not in the document" % where)
        continue
    if "$ref" in resp:
        resp = doc["components"]["responses"][resp["$ref"].rsplit("/", 1)[1]]
    content = resp.get("content")
    if rec["method"] == "HEAD":
        if rec["body"] is not None:
            fail("%s: a body in an answer to HEAD" % where)
        continue
    if rec["body"] is None:
        if content and any("json" in t for t in content) and \
                "json" in rec["type"]:
            fail("%s: a JSON body was expected" % where)
        continue
    if not content:
        fail("%s: a body where the document has none" % where)
        continue
    ctype = rec["type"].split(";")[0].strip()
    media = content.get(ctype)
    if media is None:
        fail("%s: content type %s not in the document (%s)" %
             (where, ctype, ", ".join(content)))
        continue
    errs = sorted(validator(media["schema"]).iter_errors(rec["body"]),
                  key=lambda e: list(e.path))
    for e in errs[:3]:
        fail("%s: %s at %s" % (where, e.message[:200],
                               "/".join(str(x) for x in e.path)))

if cover:
    for path, item in doc["paths"].items():
        for m, op in item.items():
            if isinstance(op, dict) and "operationId" in op and \
                    op["operationId"] not in used:
                fail("operation %s (%s %s) never seen" % (op["operationId"],
                                                          m.upper(), path))
print("openapi-check: %d answers, %d operations seen, %d problems" %
      (len(seen), len(used), bad))
sys.exit(1 if bad else 0)
