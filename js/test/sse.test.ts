// SPDX-License-Identifier: BSD-2-Clause
// The Server-Sent Events parser, as the HTML standard reads a stream: line
// ends of every kind, split anywhere, comments, multi-line data, ids.

import { test } from "node:test";
import assert from "node:assert/strict";
import { SseParser } from "semclient";

test("events split across chunks at every byte come out whole and in order", () => {
  const text = ": hello\r\nid: 7\r\nevent: grant\r\ndata: {\"a\":1}\r\n\r\nid: 8\nevent: release\ndata: x\ndata: y\n\n" +
    "id: 9\revent: ready\r\r";
  for (let cut = 0; cut <= text.length; cut++) {
    const p = new SseParser();
    const out = [...p.push(text.slice(0, cut)), ...p.push(text.slice(cut))];
    assert.deepEqual(out, [
      { event: "grant", data: "{\"a\":1}", id: "7" },
      { event: "release", data: "x\ny", id: "8" },
      { event: "ready", data: "", id: "9" },
    ], `cut at ${cut}`);
  }
});

test("a comment alone dispatches nothing; a field without a colon is a field with an empty value", () => {
  const p = new SseParser();
  assert.deepEqual(p.push(":keep-alive\n\n"), []);
  assert.deepEqual(p.push("data\n\n"), [{ event: "message", data: "", id: undefined }]);
  assert.deepEqual(p.push("data:no space\nretry: 10\nfoo: bar\n\n"), [{ event: "message", data: "no space", id: undefined }]);
});

test("an event not yet ended by its blank line waits for it", () => {
  const p = new SseParser();
  assert.deepEqual(p.push("id: 1\ndata: a\n"), []);
  assert.deepEqual(p.push("\n"), [{ event: "message", data: "a", id: "1" }]);
});

test("a line longer than the bound is refused", () => {
  const p = new SseParser(16);
  assert.throws(() => p.push("data: " + "x".repeat(32)), /longer than 16/);
});
