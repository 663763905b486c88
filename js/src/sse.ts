// SPDX-License-Identifier: BSD-2-Clause
// Server-Sent Events read from a response's byte stream, as the HTML
// standard's EventSource parses them (its "event stream interpretation").

/** One dispatched event. */
export interface SseEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/** A line-by-line parser: push text, take the events completed so far. */
export class SseParser {
  private buf = "";
  private event = "";
  private data: string[] = [];
  private id: string | undefined;
  private sawCR = false;
  private first = true;
  /** The largest line kept while waiting for its end (a hostile server). */
  readonly maxLine: number;

  constructor(maxLine = 1 << 20) {
    this.maxLine = maxLine;
  }

  /** Takes text; returns the events it completed, in order. */
  push(text: string): SseEvent[] {
    if (this.first && text.length > 0) {
      this.first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const out: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10 && this.sawCR && i === start && this.buf === "") {
        // the LF of a CRLF whose CR ended the previous line
        this.sawCR = false;
        start = i + 1;
        continue;
      }
      this.sawCR = false;
      if (c === 10 || c === 13) {
        const line = this.buf + text.slice(start, i);
        this.buf = "";
        this.sawCR = c === 13;
        start = i + 1;
        this.line(line, out);
      }
    }
    this.buf += text.slice(start);
    if (this.buf.length > this.maxLine) throw new Error(`event stream: a line longer than ${this.maxLine}`);
    return out;
  }

  // One line: a field, a comment, or the blank line that dispatches.
  private line(line: string, out: SseEvent[]): void {
    if (line === "") {
      if (this.data.length > 0 || this.event !== "") {
        out.push({ event: this.event || "message", data: this.data.join("\n"), id: this.id });
      }
      this.event = "";
      this.data = [];
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ":" a comment (keep-alive)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    switch (field) {
      case "event": this.event = value; break;
      case "data": this.data.push(value); break;
      case "id": if (!value.includes("\0")) this.id = value; break;
      default: break; // retry and unknown fields: nothing for us
    }
  }
}
