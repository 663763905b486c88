// SPDX-License-Identifier: BSD-2-Clause
// Real semd daemons for the tests, as tests/lib.sh starts them: private
// directories, HTTP on 127.0.0.1 port 0 (or a port chosen free below the
// ephemeral range for a cluster whose nodes must know each other), a ready
// file waited for with bounded retries, everything killed at exit.

import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The semd under test. */
export const SEMD = process.env.SEMD ?? "semd";
/** Where the daemons' files go (tests/js.sh keeps it to print the logs of a failure). */
export const TMP = process.env.SEMD_JS_TMP ?? mkdtempSync(join(tmpdir(), "semd-js-"));

// Every request the tests' clients make, and how it ended, in a log of
// the test file's own (tests/js.sh shows the logs' tails when a test fails).
const trace = join(TMP, `fetch-${process.pid}.log`);
const platformFetch = globalThis.fetch;
globalThis.fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const t0 = performance.now();
  const what = `${init?.method ?? "GET"} ${String(input)}`;
  appendFileSync(trace, `${new Date().toISOString()} > ${what}\n`);
  try {
    const r = await platformFetch(input, init);
    appendFileSync(trace, `${new Date().toISOString()} < ${r.status} ${what} (${Math.round(performance.now() - t0)} ms)\n`);
    return r;
  } catch (e) {
    appendFileSync(trace, `${new Date().toISOString()} ! ${what}: ${String(e)} (${Math.round(performance.now() - t0)} ms)\n`);
    throw e;
  }
};

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of live) p.kill("SIGKILL");
});

/** A promise that resolves after ms. */
export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls cond every 20 ms until it is true, for at most ms; false if it never was. */
export async function waitFor(cond: () => boolean | Promise<boolean>, ms = 10000): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if (await cond()) return true;
    } catch {
      // not yet
    }
    if (Date.now() > end) return false;
    await delay(20);
  }
}

/** How a daemon is started. */
export interface DaemonOptions {
  /** Its HTTP port (0: a free one; a restart keeps the one it had). */
  port?: number;
  /** --data-dir (durable). */
  dataDir?: string;
  /** Lines of a semd.conf given with --config. */
  config?: string[];
  /** More arguments. */
  args?: string[];
}

/** One semd with an HTTP listener. */
export class Daemon {
  readonly name: string;
  readonly opts: DaemonOptions;
  proc: ChildProcess | undefined;
  url = "";
  port = 0;
  private exited: Promise<void> = Promise.resolve();

  constructor(name: string, opts: DaemonOptions = {}) {
    this.name = name;
    this.opts = opts;
    this.port = opts.port ?? 0;
  }

  /** The log file. */
  get log(): string {
    return join(TMP, `${this.name}.log`);
  }

  /** Starts it and waits (10 s at most) for its ready file to name an http: address. */
  async start(): Promise<this> {
    const ready = join(TMP, `${this.name}.ready`);
    writeFileSync(ready, "");
    const args = ["--listen", `http:127.0.0.1:${this.port}`, "--ready-file", ready,
      "--acl", "anonymous * all"];
    if (this.opts.dataDir !== undefined) args.push("--data-dir", this.opts.dataDir);
    if (this.opts.config !== undefined) {
      const conf = join(TMP, `${this.name}.conf`);
      writeFileSync(conf, this.opts.config.join("\n") + "\n");
      args.push("--config", conf);
    }
    args.push(...(this.opts.args ?? []));
    appendFileSync(this.log, `---- ${SEMD} ${args.join(" ")}\n`);
    const fd = openSync(this.log, "a");
    const proc = spawn(SEMD, args, { stdio: ["ignore", fd, fd] });
    closeSync(fd);
    this.proc = proc;
    live.add(proc);
    this.exited = new Promise((resolve) => proc.once("exit", () => { live.delete(proc); resolve(); }));
    const ok = await waitFor(() => proc.exitCode === null && /^http:/m.test(readFileSync(ready, "utf8")), 10000);
    if (!ok) {
      const log = readFileSync(this.log, "utf8").split("\n").slice(-40).join("\n");
      proc.kill("SIGKILL");
      throw new Error(`semd ${this.name} did not become ready:\n${log}`);
    }
    const m = /^http:(.*):([0-9]+)$/m.exec(readFileSync(ready, "utf8"));
    if (m === null) throw new Error(`semd ${this.name}: no http: address in its ready file`);
    this.port = Number(m[2]);
    this.url = `http://${m[1]}:${m[2]}`;
    return this;
  }

  /** Sends a signal. */
  signal(sig: NodeJS.Signals): void {
    this.proc?.kill(sig);
  }

  /** Kills it with sig (SIGTERM) and waits for its end (5 s, then SIGKILL). */
  async stop(sig: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const p = this.proc;
    if (p === undefined || p.exitCode !== null || p.signalCode !== null) return;
    p.kill(sig);
    const t = setTimeout(() => p.kill("SIGKILL"), 5000);
    await this.exited;
    clearTimeout(t);
  }

  /** Stopped, then started again on the same port (and data directory). */
  async restart(sig: NodeJS.Signals = "SIGTERM"): Promise<this> {
    await this.stop(sig);
    let last: unknown;
    for (let i = 0; i < 20; i++) {
      try {
        return await this.start();
      } catch (e) {
        last = e; // the port taken again at once by someone: rare; retry
        await delay(100);
      }
    }
    throw last;
  }
}

/** A private directory for a test, empty. */
export function testDir(name: string): string {
  const d = join(TMP, name);
  rmSync(d, { recursive: true, force: true });
  mkdirSync(d, { recursive: true });
  return d;
}

/** Whether a TCP port is free on 127.0.0.1 now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen({ port, host: "127.0.0.1", exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/**
 * The first of n consecutive ports free on 127.0.0.1 now, chosen at random
 * below the kernel's ephemeral range (tests/lib.sh t_port_base), so that no
 * client connection of a test running beside this one holds one of them.
 */
export async function portBase(n: number): Promise<number> {
  const lo = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
  const hi = Math.min(lo, 32768) - n;
  for (let tries = 0; tries < 200; tries++) {
    const base = 10000 + Math.floor(Math.random() * (hi - 10000));
    let ok = true;
    for (let p = base; p < base + n && ok; p++) ok = await portFree(p);
    if (ok) return base;
  }
  throw new Error(`no free block of ${n} ports`);
}

/** A three-node cluster on 127.0.0.1: node i's peer port base+i, its HTTP port base+10+i. */
export class Cluster {
  readonly nodes: Daemon[] = [];
  readonly urls: string[] = [];

  /** Starts the three nodes (each waited for) with http-nodes naming each one's URL. */
  static async start(name: string, extra: string[] = []): Promise<Cluster> {
    const c = new Cluster();
    const base = await portBase(15);
    const boot = [1, 2, 3].map((i) => `${i}=127.0.0.1:${base + i}`).join(",");
    const httpNodes = [1, 2, 3].map((i) => `${i}=http://127.0.0.1:${base + 10 + i}`).join(",");
    for (const i of [1, 2, 3]) c.urls.push(`http://127.0.0.1:${base + 10 + i}`);
    const dir = testDir(name);
    // The peers prove they share this key (semd refuses plain peers without one).
    const key = join(dir, "peer.key");
    writeFileSync(key, randomBytes(32), { mode: 0o600 });
    for (const i of [1, 2, 3]) {
      const d = new Daemon(`${name}-n${i}`, {
        port: base + 10 + i,
        dataDir: join(dir, `d${i}`),
        config: [`http-nodes ${httpNodes}`],
        args: ["--node-id", String(i), "--peer-listen", `tcp:127.0.0.1:${base + i}`,
          "--bootstrap", boot, "--peer-key", key, ...extra],
      });
      c.nodes.push(d);
    }
    await Promise.all(c.nodes.map((d) => d.start()));
    return c;
  }

  /** Stops every node still running. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((d) => d.stop()));
  }
}
