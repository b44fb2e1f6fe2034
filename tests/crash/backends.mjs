// The server processes of the crash test: the reference server (www/server/server.mjs, an app on
// canvas-scheduler-server) on one Postgres database, each on 127.0.0.1 and a port of its own.
// `kill()` SIGKILLs the next live one in rotation, taking it out of the pool first (as a load
// balancer's health check would, a moment late: its in-flight requests still fail), and starts
// a replacement on a fresh port, which joins the pool once it prints {"listening": url} and has
// its faults set.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const SERVER = new URL("../../www/server/server.mjs", import.meta.url).pathname;
const START_MS = 20_000;

export class Backends {
  /**
   * @param {{ db: string, adminToken: string, faults: object, say: (line: string) => void }} options
   *   `faults`: posted to each process's /admin/faults before it joins the pool.
   */
  constructor({ db, adminToken, faults, say }) {
    this.db = db;
    this.adminToken = adminToken;
    this.faults = faults;
    this.say = say;
    /** @type {{ url: string, child: import("node:child_process").ChildProcess, n: number }[]} live, in the pool */
    this.pool = [];
    /** @type {Set<import("node:child_process").ChildProcess>} every child not yet exited */
    this.children = new Set();
    this.started = 0;
    this.kills = 0;
    this.restarts = [];
    this.rotation = 0;
    /** stderr lines of every process (bounded), shown when the test fails */
    this.log = [];
  }

  /** Starts one process; resolves once it listens (it is then in the pool). */
  async start() {
    const n = (this.started += 1);
    const since = performance.now();
    const child = spawn(
      process.execPath,
      [SERVER, "--port", "0", "--host", "127.0.0.1", "--db", this.db, "--admin-token", this.adminToken],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    this.children.add(child);
    child.once("exit", () => this.children.delete(child));
    createInterface({ input: child.stderr }).on("line", (line) => {
      if (this.log.length < 200) this.log.push(`server ${n}: ${line}`);
    });
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server ${n} printed no URL within ${START_MS} ms`)), START_MS);
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`server ${n} exited (${code ?? signal}) before listening`));
      });
      createInterface({ input: child.stdout }).once("line", (line) => {
        clearTimeout(timer);
        try {
          resolve(JSON.parse(line).listening);
        } catch {
          reject(new Error(`server ${n} printed ${line}`));
        }
      });
    });
    const response = await fetch(`${url}/admin/faults`, {
      method: "POST",
      headers: { "x-admin-token": this.adminToken, "content-type": "application/json" },
      body: JSON.stringify({ ...this.faults, seed: n }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`server ${n}: /admin/faults answered ${response.status}`);
    this.pool.push({ url, child, n });
    this.restarts.push(performance.now() - since);
    return url;
  }

  /**
   * SIGKILLs the next live process (never the last one) and starts its replacement, which
   * joins the pool when it listens. Resolves to the replacement's start (not awaited by the
   * caller's clock: kills go on every second whatever a start costs).
   */
  kill() {
    if (this.pool.length < 2) return null;
    const victim = this.pool[this.rotation % this.pool.length];
    this.rotation += 1;
    this.pool = this.pool.filter((b) => b !== victim);
    victim.child.kill("SIGKILL");
    this.kills += 1;
    return this.start();
  }

  /** SIGKILLs every process still running (any exit path). */
  stopAll() {
    for (const child of this.children) child.kill("SIGKILL");
    this.pool = [];
  }

  /** Restart times so far: median and max, ms. */
  startTimes() {
    const sorted = [...this.restarts].sort((a, b) => a - b);
    return { median: sorted[Math.floor(sorted.length / 2)] ?? 0, max: sorted.at(-1) ?? 0 };
  }
}
