// The browser benchmark runner (`npm run bench` → scripts/bench, after the web build): starts
// the reference server (www/server) on 127.0.0.1 with a throw-away SQLite file, serves
// www/bench/ and pkg/ on 127.0.0.1, runs the measurements of www/bench/bench.js in headless
// chromium (playwright-core, Debian's /usr/bin/chromium), prints each figure beside its
// baseline with the ratio, and stops everything. It fails only when something is broken (an
// error, a rejected operation, no progress at all), never because the machine is slow: each
// measurement has a count and a time budget and reports what it got.
import { execFileSync, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { extname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { CHROMIUM_ARGS, chromiumPath } from "../harness.mjs";

const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const SERVED = ["www/bench/", "pkg/web/", "worker/"];
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".wasm": "application/wasm" };
/** The whole run's budget; past it everything is stopped and the run fails. */
const WATCHDOG_MS = 22 * 60_000;
/** The gzipped .wasm budget (wasm-pack.toml [size], read through scripts/manifest). */
const SIZE_BUDGET = Number(execFileSync(join(ROOT, "scripts", "manifest"), ["gzip-budget"], { encoding: "utf8" }).trim());

/** Sizes and time budgets (ms) of each measurement. */
/** The stores `Scheduler.open` reads (`src/web/store/load.rs`), for the raw open beside it. */
const LOAD_STORES = ["ledger_lease", "operations", "operation_pages", "requests", "events", "quarantine"];

const PLAN = {
  raw: { singles: 1000, batches: 100, batchSize: 100, deadlineMs: 30_000 },
  enqueue: { n: 1000, deadlineMs: 30_000 },
  // 9. While sending: a backlog that keeps concurrency 2 busy for the whole measurement.
  load: { backlog: 2000, n: 300, rateMs: 3000, deadlineMs: 60_000 },
  // 9a. The same with the package's defaults while it drains 600 operations from a server
  // that answers each request after 30 ms: answers land through the measurement, each with
  // its own write, which an enqueue's transaction queues behind.
  load30: { backlog: 600, n: 300, rateMs: 1000, deadlineMs: 60_000, concurrency: null, serverDelayMs: 30 },
  // 9b. A tab that does not dispatch enqueues beside the one that does (the shared inbox).
  follower: { backlog: 2000, n: 200, rateMs: 2000, deadlineMs: 90_000 },
  instant: { n: 5000, chunk: 500, concurrency: 8, canvases: 100, deadlineMs: 60_000 },
  e2e: { n: 1000, chunk: 500, canvases: 4, deadlineMs: 60_000 },
  fetchLoop: { n: 1000, canvases: 4, deadlineMs: 60_000 },
  // No batching (the scheduler at concurrency 2) on 20 canvases against the loop at
  // concurrency 2, and on one canvas (one request at a time) against the loop at
  // concurrency 1; 400 operations each, at every server delay.
  canvasSpread: { n: 400, chunk: 400, deadlineMs: 60_000 },
  // The empty ledger is measured first and last: the first timed open of a run can pay a
  // warm-up; the baseline is the faster of the two (both printed).
  history: { sizes: (process.env.BENCH_HISTORY_SIZES ?? "0,10000,100000,0").split(",").map(Number), chunk: 2000, deadlineMs: 240_000 },
  // 11. 20 000 operations applied, then stop() at once or after a minute of quiet, and
  // 100 000 then stop() at once; the reopen against an empty ledger's (measured first and
  // last, the faster is the baseline), and the origin's storage per operation.
  burst: { runs: [{ n: 0 }, { n: 20_000, quietMs: 0 }, { n: 20_000, quietMs: 60_000 }, { n: 100_000, quietMs: 0 }, { n: 0 }], chunk: 500, deadlineMs: 240_000 },
  // 12. The durability 2x2: client strict or relaxed (every readwrite transaction of the page), the
  // server's commits flushed or not; each cell in a fresh page, no server delay.
  matrix: { n: 400, chunk: 400, canvases: 20, deadlineMs: 60_000, load: { backlog: 2000, n: 200, rateMs: 2000, deadlineMs: 40_000 } },
  // 10. 200 sends (after the first 50) with 250 and with 10 000 pending, on one canvas and on 20.
  scale: { sizes: [250, 10_000], canvases: [1, 20], warm: 50, measured: 200, chunk: 1000, deadlineMs: 60_000 },
  start: [
    { n: 10_000, chunk: 1000, deadlineMs: 60_000 },
    { n: 100_000, chunk: 5000, deadlineMs: 150_000 },
    // As an editor streams edits: one enqueue per turn, each its own record until folded.
    { n: 10_000, chunk: 1, deadlineMs: 60_000, streamed: true },
  ],
};

/**
 * The bench page is cross-origin isolated: `performance.now()` then steps by 5 µs instead of
 * 100 µs, so sub-millisecond latencies are figures rather than multiples of 0.1 ms. (The
 * reference server answers with `access-control-allow-origin: *`, which require-corp accepts.)
 */
const ISOLATED = { "cross-origin-opener-policy": "same-origin", "cross-origin-embedder-policy": "require-corp" };

function serveStatic() {
  const server = createServer(async (request, response) => {
    let file = null;
    try {
      const path = normalize(decodeURIComponent(new URL(request.url, "http://x").pathname)).replace(/^\/+/, "");
      if (request.method === "GET" && !path.split("/").includes("..") && SERVED.some((dir) => path.startsWith(dir))) {
        file = join(ROOT, path.endsWith("/") ? `${path}index.html` : path);
      }
      if (file === null || !(await stat(file)).isFile()) throw new Error("not served");
      const body = await readFile(file);
      response.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "cache-control": "no-store", ...ISOLATED }).end(body);
    } catch {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  return new Promise((ready, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () =>
      ready({
        url: `http://127.0.0.1:${server.address().port}`,
        close: () => new Promise((closed) => { server.close(closed); server.closeAllConnections(); }),
      }),
    );
  });
}

/** The reference server's admin token (its faults set the server's delay). */
const ADMIN_TOKEN = `bench-${process.pid}`;

/**
 * `BENCH_SERVER_DELAY_MS=0,30` (the default): the server's delay before each protocol request,
 * in ms; the end-to-end part runs once at each, the fetch loop measured again at each.
 */
/**
 * `BENCH_KEEP_AHEAD=8,16`: the keeping loop again with that many requests frozen or in flight
 * (more than the in-flight bound allows), so that each transaction carries more freezes and
 * answers.
 */
const KEEP_AHEAD = (process.env.BENCH_KEEP_AHEAD ?? "").split(",").filter(Boolean).map((d) => {
  const n = Number(d);
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error(`BENCH_KEEP_AHEAD: ${d} is not a count from 1 to 64`);
  return n;
});
/**
 * `BENCH_E2E_ROUNDS=5`: the end-to-end spread (each against the fetch loop measured just
 * before it, beside the plain JS loops) that many times in a row, then each ratio's median.
 */
const E2E_ROUNDS = (() => {
  const n = Number(process.env.BENCH_E2E_ROUNDS ?? 1);
  if (!Number.isInteger(n) || n < 1 || n > 15) throw new Error(`BENCH_E2E_ROUNDS: ${process.env.BENCH_E2E_ROUNDS} is not a count from 1 to 15`);
  return n;
})();
const spreadRatios = {};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/**
 * `BENCH_KEEP_WITHOUT=events,requestRewrite,events+meta`: the keeping loop again without each
 * listed part of what the scheduler keeps (`+` joins parts left out together; bench.js,
 * durableLoop's `without`), to see what each costs.
 */
const KEEP_PARTS = ["freezeRewrite", "answerRewrite", "requestRewrite", "events", "meta", "archive"];
const KEEP_WITHOUT = (process.env.BENCH_KEEP_WITHOUT ?? "").split(",").filter(Boolean).map((entry) => {
  const parts = entry.split("+");
  for (const part of parts) if (!KEEP_PARTS.includes(part)) throw new Error(`BENCH_KEEP_WITHOUT: ${part} is not one of ${KEEP_PARTS.join(", ")}`);
  return parts;
});
const SERVER_DELAYS_MS = (process.env.BENCH_SERVER_DELAY_MS ?? "0,30").split(",").map((d) => {
  const ms = Number(d);
  if (!Number.isInteger(ms) || ms < 0 || ms > 1000) throw new Error(`BENCH_SERVER_DELAY_MS: ${d} is not a delay in ms (0 to 1000)`);
  return ms;
});

/** Sets the reference server's delay before each protocol request (its admin faults). */
async function setServerDelay(url, latencyMs) {
  const reply = await fetch(new URL("/admin/faults", url), {
    method: "POST",
    headers: { "content-type": "application/json", "x-admin-token": ADMIN_TOKEN },
    body: JSON.stringify({ latencyMs }),
  });
  if (!reply.ok) throw new Error(`server delay ${latencyMs} ms: ${reply.status} ${await reply.text()}`);
}

/** Starts `node www/server/server.mjs` on 127.0.0.1 (SQLite in `dir`, commits flushed unless
 * `fsync` is false); resolves to { url, stop }. */
async function startReferenceServer(dir, { fsync = true } = {}) {
  const db = join(dir, fsync ? "server.sqlite" : "server-nofsync.sqlite");
  const child = spawn(process.execPath, [join(ROOT, "www/server/server.mjs"), "--port", "0", "--host", "127.0.0.1", "--db", db, "--admin-token", ADMIN_TOKEN, "--fsync", fsync ? "on" : "off"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise((done) => child.once("exit", done));
  const url = await new Promise((ready, fail) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error("reference server did not start within 20 s")), 20_000);
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const line = out.split("\n").find((l) => l.includes("listening"));
      if (line) {
        clearTimeout(timer);
        ready(JSON.parse(line).listening);
      }
    });
    child.once("exit", (code) => fail(new Error(`reference server exited (${code})`)));
  });
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await Promise.race([exited, new Promise((done) => setTimeout(done, 5000))]);
    },
  };
}

/** A fresh page on the bench, ready (the package loaded); page errors are printed. */
async function benchPage(context, baseUrl) {
  const page = await context.newPage();
  page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") console.error(`page: ${message.text()}`);
  });
  await page.goto(`${baseUrl}/www/bench/`);
  await page.waitForSelector("body[data-ready]", { timeout: 30_000 });
  return page;
}

/**
 * `BENCH_ONLY=enqueue,start` runs only those parts (of raw, enqueue, load30, load, follower, pending, instant, e2e, start, history, scale, burst, matrix), for
 * a quick look at one figure while working on it; the raw baselines always run.
 */
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(",")) : null;
const want = (part) => ONLY === null || ONLY.has(part);

const call = (page, name, args) => page.evaluate(([n, a]) => window.bench[n](a), [name, args]);

const fmt = (x, digits = 0) => (x === null || x === undefined || Number.isNaN(x) ? "n/a" : x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const rows = [];
function figure(name, value, unit, baseline, baselineUnit, ratio, note = "") {
  rows.push({ name, value, unit, baseline, baselineUnit, ratio, note });
  console.log(`${name}: ${value} ${unit} | baseline ${baseline} ${baselineUnit} | ratio ${fmt(ratio, 3)}${note ? ` | ${note}` : ""}`);
}

const problems = [];
function expect(condition, message) {
  if (!condition) problems.push(message);
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), "canvas-scheduler-bench-"));
  const stops = [async () => rm(dir, { recursive: true, force: true })];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch((e) => console.error(`cleanup: ${e.message}`));
    stops.length = 0;
  };
  const watchdog = setTimeout(async () => {
    console.error(`bench: over the ${WATCHDOG_MS / 60_000}-minute budget, stopping`);
    await stopAll();
    process.exit(1);
  }, WATCHDOG_MS);
  try {
    const wasmPath = join(ROOT, "pkg/web/canvas_scheduler_bg.wasm");
    const wasmBytes = await readFile(wasmPath);
    // As scripts/build measures it: `gzip -9` of the built file.
    const gz = execFileSync("gzip", ["-9", "-c", wasmPath], { maxBuffer: 64 << 20 }).length;

    const server = await startReferenceServer(dir);
    stops.push(server.stop);
    const statics = await serveStatic();
    stops.push(statics.close);
    const browser = await chromium.launch({
      executablePath: chromiumPath(),
      headless: true,
      args: [...CHROMIUM_ARGS, "--enable-precise-memory-info", "--js-flags=--expose-gc"],
    });
    stops.push(() => browser.close());
    const context = await browser.newContext();
    console.log(`bench: chromium ${browser.version()}, reference server ${server.url}, pages ${statics.url}`);

    let page = await benchPage(context, statics.url);
    const isolated = await page.evaluate(() => self.crossOriginIsolated);
    console.log(`bench: page cross-origin isolated: ${isolated} (performance.now() resolution ${isolated ? "5 µs" : "100 µs"})`);

    // 1. Raw IndexedDB baselines.
    const raw = await call(page, "rawIdb", PLAN.raw);
    expect(raw.singleCount > 0 && raw.batchRecords > 0, "raw IndexedDB wrote nothing");
    figure("raw IndexedDB, 1-record transactions", fmt(raw.singleRecordsPerSec), "records/s", "-", "", null, `${raw.singleCount} txns, p50 ${fmt(raw.singleP50Ms, 2)} ms, p99 ${fmt(raw.singleP99Ms, 2)} ms`);
    figure("raw IndexedDB, 1-record transactions with a lease read (the ledger's fenced write)", fmt(raw.fencedP50Ms, 2), "ms p50", fmt(raw.singleP50Ms, 2), "ms (raw 1-record txn p50)", raw.fencedP50Ms / raw.singleP50Ms, `${raw.fencedCount} txns, p99 ${fmt(raw.fencedP99Ms, 2)} ms`);
    figure("raw IndexedDB, 100-record transactions", fmt(raw.batchRecordsPerSec), "records/s", "-", "", null, `${raw.batchRecords} records`);

    // 2. enqueue latency.
    if (want("enqueue")) {
      const enq = await call(page, "enqueueLatency", PLAN.enqueue);
      expect(enq.count > 0, "no enqueue completed");
      // Against the raw transactions interleaved with the enqueues (same moments of the machine).
      figure("enqueue latency p50 (held)", fmt(enq.p50Ms, 3), "ms", fmt(enq.rawP50Ms, 3), "ms (raw 1-record txn p50, interleaved)", enq.p50Ms / enq.rawP50Ms, `p99 ${fmt(enq.p99Ms, 2)} ms, ${enq.count} enqueues`);
      figure("enqueue latency p50 (held) against the fenced write's shape", fmt(enq.p50Ms, 3), "ms", fmt(enq.fencedP50Ms, 3), "ms (raw lease read + put p50, interleaved)", enq.p50Ms / enq.fencedP50Ms, "what the scheduler adds beyond the transaction it must write");
      figure("enqueue latency p99 (held)", fmt(enq.p99Ms, 2), "ms", fmt(enq.rawP99Ms, 2), "ms (raw 1-record txn p99, interleaved)", enq.p99Ms / enq.rawP99Ms);
    }

    // 11. pending() for a badge: O(unsettled), against building the same list in JS.
    if (want("pending")) {
      for (const n of [200, 2000]) {
        const cost = await call(page, "pendingCost", { n, calls: 31 });
        expect(cost.listed === n, `pending() listed ${cost.listed} of ${n}`);
        figure(`pending() with ${fmt(n)} unsettled operations`, fmt(cost.pendingMs, 3), "ms", fmt(cost.floorMs, 3), "ms (the same list built in JS)", cost.pendingMs / cost.floorMs,
          `median of 31 calls; stats() ${fmt(cost.statsMs, 4)} ms (its pending count needs no list)`);
      }
    }

    // 9a. enqueue while the scheduler drains 600 operations from a server 30 ms away.
    if (want("load30")) {
      const { serverDelayMs, ...plan } = PLAN.load30;
      await setServerDelay(server.url, serverDelayMs);
      try {
        const load = await call(page, "enqueueWhileSending", { endpoint: server.url, tag: `load30${Date.now()}`, ...plan });
        expect(load.count > 0 && load.errors.length === 0, `enqueue while draining, server 30 ms: ${JSON.stringify(load)}`);
        figure(`enqueue latency p50 while draining ${plan.backlog} (server ${serverDelayMs} ms, defaults)`, fmt(load.p50Ms, 3), "ms", fmt(load.rawP50Ms, 3), "ms (raw 1-record txn p50, interleaved)", load.p50Ms / load.rawP50Ms,
          `p99 ${fmt(load.p99Ms, 2)} ms against the raw p99 ${fmt(load.rawP99Ms, 2)} ms (${fmt(load.p99Ms / load.rawP99Ms, 2)}x); ${load.count} enqueues, ${load.busy} of them with a send in flight; targets: p50 <= 1.5x, p99 <= 2x the raw`);
      } finally {
        await setServerDelay(server.url, 0);
      }
    }

    // 9. enqueue while the scheduler sends at full speed (reference server, concurrency 2).
    if (want("load")) {
      const load = await call(page, "enqueueWhileSending", { endpoint: server.url, tag: `load${Date.now()}`, ...PLAN.load });
      expect(load.count > 0 && load.errors.length === 0, `enqueue while sending: ${JSON.stringify(load)}`);
      figure("enqueue latency p50 while sending (concurrency 2, defaults)", fmt(load.p50Ms, 3), "ms", fmt(load.rawP50Ms, 3), "ms (raw 1-record txn p50, interleaved)", load.p50Ms / load.rawP50Ms,
        `p99 ${fmt(load.p99Ms, 2)} ms against the raw p99 ${fmt(load.rawP99Ms, 2)} ms (${fmt(load.p99Ms / load.rawP99Ms, 2)}x); ${load.count} enqueues, ${load.busy} of them with a send in flight; targets: p50 <= 1.5x, p99 <= 2x the raw`);
      figure("enqueue rate while sending", fmt(load.enqueuePerSec), "enqueues/s", fmt(load.deliveredPerSec), "ops/s delivered meanwhile", load.enqueuePerSec / Math.max(load.deliveredPerSec, 1e-9),
        `awaited back to back for ${fmt(PLAN.load.rateMs)} ms; target >= 10x`);
      figure(`enqueue rate while sending, ${load.outstanding} outstanding`, fmt(load.manyPerSec), "enqueues/s", fmt(load.deliveredManyPerSec), "ops/s delivered meanwhile", load.manyPerSec / Math.max(load.deliveredManyPerSec, 1e-9),
        `${load.outstanding} enqueues in flight at once for ${fmt(PLAN.load.rateMs)} ms; ${fmt(load.pendingAtEnd)} pending at the end; target >= 25x`);
      // What a plain-JS group commit with the same durability reaches in the same conditions
      // (bench.js, groupCommitter): the ceiling of any client that makes each enqueue durable.
      figure(`plain JS group commit while the scheduler sends, ${load.outstanding} outstanding`, fmt(load.plainPerSec), "puts/s", fmt(load.deliveredPlainPerSec), "ops/s delivered meanwhile", load.plainPerSec / Math.max(load.deliveredPlainPerSec, 1e-9),
        `strict, a lease read and the waiting records per transaction, one at a time; the scheduler's rate above is ${fmt(load.manyPerSec / Math.max(load.plainPerSec, 1e-9), 2)}x this`);
    }

    // 9b. Enqueue from a tab that does not dispatch, through the shared inbox (the intake store
    // outside the fence), beside the dispatching tab's own in the same run.
    if (want("follower")) {
      const f = await call(page, "followerEnqueue", { endpoint: server.url, tag: `fol${Date.now()}`, ...PLAN.follower });
      expect(f.count > 0 && f.errors.length === 0 && f.followedSettled === f.followed, `follower enqueue: ${JSON.stringify(f)}`);
      figure("enqueue p50 from a tab that does not dispatch, while the leader sends", fmt(f.followerP50Ms, 3), "ms", fmt(f.rawP50Ms, 3), "ms (raw 1-record txn p50, interleaved)", f.followerP50Ms / f.rawP50Ms,
        `p99 ${fmt(f.followerP99Ms, 2)} ms (${fmt(f.followerP99Ms / f.rawP99Ms, 2)}x the raw ${fmt(f.rawP99Ms, 2)}); the leader's own enqueue in the same rounds: p50 ${fmt(f.leaderP50Ms, 3)} ms (${fmt(f.leaderP50Ms / f.rawP50Ms, 2)}x), p99 ${fmt(f.leaderP99Ms, 2)} ms (${fmt(f.leaderP99Ms / f.rawP99Ms, 2)}x); ${f.count} rounds`);
      figure(`enqueue rate from a tab that does not dispatch, ${f.outstanding} outstanding`, fmt(f.followerManyPerSec), "enqueues/s", fmt(f.deliveredFollowerManyPerSec), "ops/s delivered meanwhile", f.followerManyPerSec / Math.max(f.deliveredFollowerManyPerSec, 1e-9),
        `the leader's own, the ${fmt(PLAN.follower.rateMs)} ms before: ${fmt(f.leaderManyPerSec)} enqueues/s, ${fmt(f.leaderManyPerSec / Math.max(f.deliveredLeaderManyPerSec, 1e-9), 1)}x its delivery; ${f.followedSettled} of ${f.followed} follower enqueues applied`);
    }

    // 3. Durable ops/s with an instant in-page transport.
    if (want("instant")) {
      const inst = await call(page, "throughputInstant", PLAN.instant);
      expect(inst.applied > 0 && inst.rejected === 0 && inst.errors.length === 0, `instant transport: ${JSON.stringify(inst)}`);
      figure("durable ops/s, instant transport (enqueue + dispatch)", fmt(inst.opsPerSec), "ops/s", fmt(raw.batchRecordsPerSec), "records/s (raw 100-record txns)", inst.opsPerSec / raw.batchRecordsPerSec,
        `${inst.applied}/${inst.enqueued} applied; enqueue ${fmt(inst.enqueueMs)} ms, dispatch ${fmt(inst.dispatchMs)} ms (${fmt(inst.dispatchOpsPerSec)} ops/s), ${inst.sent} sends${inst.timedOut ? ", TIMED OUT" : ""}`);
      // With request batching, operations in runs of 32 per canvas (as a drag produces them:
      // consecutive operations on one canvas are what a batch may carry).
      const batched = await call(page, "throughputInstant", { ...PLAN.instant, run: 32, batch: { maxOperations: 32, maxBytes: 65536 } });
      expect(batched.applied > 0 && batched.rejected === 0 && batched.errors.length === 0, `instant transport, batching: ${JSON.stringify(batched)}`);
      figure("durable ops/s, instant transport, batching 32/64 KiB, runs of 32", fmt(batched.opsPerSec), "ops/s", fmt(raw.batchRecordsPerSec), "records/s (raw 100-record txns)", batched.opsPerSec / raw.batchRecordsPerSec,
        `${batched.applied}/${batched.enqueued} applied; enqueue ${fmt(batched.enqueueMs)} ms, dispatch ${fmt(batched.dispatchMs)} ms (${fmt(batched.dispatchOpsPerSec)} ops/s), ${batched.sent} sends${batched.timedOut ? ", TIMED OUT" : ""}`);
    }

    // 4. End to end against the reference server, concurrency 2.
    for (const delay of want("e2e") ? SERVER_DELAYS_MS : []) {
      await setServerDelay(server.url, delay);
      const at = `, server delay ${delay} ms`;
      const loop = await call(page, "fetchLoop", { endpoint: server.url, tag: `loop${delay}x${Date.now()}`, ...PLAN.fetchLoop });
      expect(loop.applied > 0 && loop.failures.length === 0, `fetch loop: ${JSON.stringify(loop.failures)}`);
      figure(`plain fetch loop, concurrency 2${at}`, fmt(loop.opsPerSec), "ops/s", "-", "", null, `${loop.applied} requests in ${fmt(loop.ms)} ms${loop.timedOut ? ", TIMED OUT" : ""}`);
      // The end-to-end targets, each against the loop at its concurrency measured just before.
      const spread = [
        ["20 canvases, concurrency 2", 20, 2, delay >= 30 ? 0.95 : 0.8],
        ["one canvas", 1, 1, 0.9],
      ];
      for (const [label, canvases, concurrency, target] of spread) for (let round = 0; round < E2E_ROUNDS; round += 1) {
        const tag = `s${delay}c${canvases}r${round}x${Date.now()}`;
        const ratios = (spreadRatios[`${label}${at}`] ??= { target, scheduler: [], lean: [], keeping: [], without: {} });
        const base = await call(page, "fetchLoop", { endpoint: server.url, tag: `l${tag}`, ...PLAN.canvasSpread, canvases, concurrency });
        expect(base.applied > 0 && base.failures.length === 0, `fetch loop: ${JSON.stringify(base.failures)}`);
        const e2e = await call(page, "endToEnd", { endpoint: server.url, batch: null, run: 1, tag: `e${tag}`, ...PLAN.canvasSpread, canvases });
        expect(e2e.applied > 0 && e2e.rejected === 0 && e2e.errors.length === 0, `end to end ${label}: ${JSON.stringify(e2e)}`);
        ratios.scheduler.push(e2e.opsPerSec / base.opsPerSec);
        figure(`end-to-end ops/s without batching, ${label}${at}${E2E_ROUNDS > 1 ? `, round ${round + 1}` : ""}`, fmt(e2e.opsPerSec), "ops/s", fmt(base.opsPerSec), `ops/s (plain fetch loop, concurrency ${concurrency})`, e2e.opsPerSec / base.opsPerSec,
          `target >= ${target}; ${e2e.applied}/${e2e.enqueued} applied in ${e2e.sent} requests, enqueue ${fmt(e2e.enqueueMs)} ms${e2e.timedOut || base.timedOut ? ", TIMED OUT" : ""}`);
        // What the same durability costs without the scheduler: the floor a client keeping
        // the in-flight bound, canvas order and durability can reach on this page (bench.js,
        // durableLoop). With one transaction at a time, as the scheduler commits, and with the next
        // issued while one commits (relaxed durability allows it).
        for (const [outstanding, how] of [[1, "one commit at a time"], [2, "commits overlapping"]]) {
          const floor = await call(page, "durableLoop", { endpoint: server.url, tag: `d${outstanding}${tag}`, ...PLAN.canvasSpread, canvases, concurrency, outstanding });
          expect(floor.applied > 0 && floor.failures.length === 0, `durable loop: ${JSON.stringify(floor.failures)}`);
          if (outstanding === 1) ratios.lean.push(floor.opsPerSec / base.opsPerSec);
          figure(`plain JS loop with the scheduler's durability, ${how}, ${label}${at}`, fmt(floor.opsPerSec), "ops/s", fmt(base.opsPerSec), `ops/s (plain fetch loop, concurrency ${concurrency})`, floor.opsPerSec / base.opsPerSec,
            `the scheduler end to end is ${fmt(e2e.opsPerSec / floor.opsPerSec, 2)}x this loop${floor.timedOut ? ", TIMED OUT" : ""}`);
        }
        // The same loop keeping what the scheduler keeps (records, answers with their canonical
        // state, events, the archive): what storing it costs, without the module.
        const keeping = async (ahead) => {
          const run = await call(page, "durableLoop", { endpoint: server.url, tag: `k${ahead ?? ""}${tag}`, ...PLAN.canvasSpread, canvases, concurrency, outstanding: 1, keep: true, ...(ahead ? { ahead } : {}) });
          expect(run.applied > 0 && run.failures.length === 0, `durable loop keeping the scheduler's records${ahead ? `, ${ahead} ahead` : ""}: ${JSON.stringify(run.failures)}`);
          return run;
        };
        const kept = await keeping(null);
        ratios.keeping.push(kept.opsPerSec / base.opsPerSec);
        for (const [n, parts] of KEEP_WITHOUT.entries()) {
          const name = parts.join("+");
          const lighter = await call(page, "durableLoop", { endpoint: server.url, tag: `kw${n}${tag}`, ...PLAN.canvasSpread, canvases, concurrency, outstanding: 1, keep: true, without: parts });
          expect(lighter.applied > 0 && lighter.failures.length === 0, `durable loop keeping the scheduler's records without ${name}: ${JSON.stringify(lighter.failures)}`);
          (ratios.without[name] ??= []).push(lighter.opsPerSec / base.opsPerSec);
          figure(`plain JS loop keeping what the scheduler keeps without ${name}, ${label}${at}`, fmt(lighter.opsPerSec), "ops/s", fmt(base.opsPerSec), `ops/s (plain fetch loop, concurrency ${concurrency})`, lighter.opsPerSec / base.opsPerSec,
            `${fmt(lighter.opsPerSec / kept.opsPerSec, 2)}x the keeping loop with it${lighter.timedOut ? ", TIMED OUT" : ""}`);
        }
        figure(`plain JS loop keeping what the scheduler keeps, one commit at a time, ${label}${at}`, fmt(kept.opsPerSec), "ops/s", fmt(base.opsPerSec), `ops/s (plain fetch loop, concurrency ${concurrency})`, kept.opsPerSec / base.opsPerSec,
          `the scheduler end to end is ${fmt(e2e.opsPerSec / kept.opsPerSec, 2)}x this loop; ${kept.transactions} transactions${kept.timedOut ? ", TIMED OUT" : ""}`);
        for (const ahead of round === 0 ? KEEP_AHEAD : []) {
          const deeper = await keeping(ahead);
          figure(`plain JS loop keeping what the scheduler keeps, ${ahead} frozen or in flight, ${label}${at}`, fmt(deeper.opsPerSec), "ops/s", fmt(base.opsPerSec), `ops/s (plain fetch loop, concurrency ${concurrency})`, deeper.opsPerSec / base.opsPerSec,
            `${fmt(deeper.opsPerSec / kept.opsPerSec, 2)}x the keeping loop above; ${deeper.transactions} transactions${deeper.timedOut ? ", TIMED OUT" : ""}`);
        }
        // Worker mode (README): the same run with the scheduler in a dedicated worker.
        if (canvases > 1 && round === 0) {
          const inWorker = await call(page, "endToEnd", { endpoint: server.url, batch: null, run: 1, tag: `w${tag}`, ...PLAN.canvasSpread, canvases, worker: true });
          expect(inWorker.applied > 0 && inWorker.rejected === 0 && inWorker.errors.length === 0, `end to end in worker mode ${label}: ${JSON.stringify(inWorker)}`);
          figure(`end-to-end ops/s without batching, worker mode, ${label}${at}`, fmt(inWorker.opsPerSec), "ops/s", fmt(base.opsPerSec), `ops/s (plain fetch loop, concurrency ${concurrency})`, inWorker.opsPerSec / base.opsPerSec,
            `the scheduler in a dedicated worker (canvas-scheduler/worker); ${fmt(inWorker.opsPerSec / e2e.opsPerSec, 2)}x the page's figure above${inWorker.timedOut ? ", TIMED OUT" : ""}`);
        }
      }
      // With BENCH_E2E_ROUNDS > 1: each ratio's median over the rounds, with their range.
      for (const [name, r] of E2E_ROUNDS > 1 ? Object.entries(spreadRatios).filter(([n]) => n.endsWith(at)) : []) {
        const range = (xs) => `${fmt(Math.min(...xs), 3)}–${fmt(Math.max(...xs), 3)}`;
        figure(`end to end without batching, ${name}, median of ${E2E_ROUNDS} rounds`, fmt(median(r.scheduler), 3), "of the fetch loop", fmt(median(r.keeping), 3), "of the fetch loop (plain JS loop keeping what the scheduler keeps)", median(r.scheduler) / median(r.keeping),
          `target >= ${r.target}; the scheduler ${range(r.scheduler)}, the plain loop with its durability ${fmt(median(r.lean), 3)} (${range(r.lean)}), keeping its records ${range(r.keeping)}` +
            Object.entries(r.without).map(([part, xs]) => `; keeping them without ${part} ${fmt(median(xs), 3)} (${range(xs)})`).join(""));
      }
      const batch = { maxOperations: 32, maxBytes: 65536 };
      const cases = [
        ["without batching, canvases interleaved", null, 1],
        ["without batching, runs of 32 per canvas", null, 32],
        ["with batching 32/64 KiB, runs of 32 per canvas", batch, 32],
        ["with batching 32/64 KiB, canvases interleaved", batch, 1],
      ];
      for (const [label, batch, run] of cases) {
        const e2e = await call(page, "endToEnd", { endpoint: server.url, batch, run, tag: `e2e${delay}${batch ? "b" : "n"}${run}x${Date.now()}`, ...PLAN.e2e });
        expect(e2e.applied > 0 && e2e.rejected === 0 && e2e.errors.length === 0, `end to end ${label}: ${JSON.stringify(e2e)}`);
        figure(`end-to-end ops/s ${label}${at}`, fmt(e2e.opsPerSec), "ops/s", fmt(loop.opsPerSec), "ops/s (plain fetch loop)", e2e.opsPerSec / loop.opsPerSec,
          `${e2e.applied}/${e2e.enqueued} applied in ${e2e.sent} requests; enqueue ${fmt(e2e.enqueueMs)} ms, dispatch ${fmt(e2e.dispatchMs)} ms (${fmt(e2e.dispatchOpsPerSec)} ops/s)${e2e.timedOut ? ", TIMED OUT" : ""}`);
      }
    }
    // 10. Scale: the time and the scanning per send, flat from 250 to 10 000 pending.
    if (want("scale")) {
      for (const canvases of PLAN.scale.canvases) {
        const runs = [];
        for (const pending of PLAN.scale.sizes) runs.push(await call(page, "sendScale", { ...PLAN.scale, pending, canvases }));
        for (const r of runs) expect(!r.timedOut, `scale: ${r.pending} pending on ${canvases} canvases timed out: ${JSON.stringify(r)}`);
        const [first, last] = [runs[0], runs[runs.length - 1]];
        figure(`time per send, ${fmt(last.pending)} pending on ${canvases} canvas(es), instant transport`, fmt(last.msPerSend, 3), "ms", fmt(first.msPerSend, 3), `ms (${fmt(first.pending)} pending, same run)`, last.msPerSend / first.msPerSend,
          `${last.settled} and ${first.settled} sends after the first ${PLAN.scale.warm} (which took ${fmt(last.firstMs)} and ${fmt(first.firstMs)} ms and scanned ${fmt(last.firstScanned)} and ${fmt(first.firstScanned)}: the release looks at each waiting operation at most once); operations scanned per send ${fmt(last.scannedPerSend, 2)} against ${fmt(first.scannedPerSend, 2)}; target: flat`);
      }
    }

    await page.close();

    // 5 and 6. start() of big ledgers on a fresh page; heap per pending operation.
    for (const plan of want("start") ? PLAN.start : []) {
      const database = `bench-start-${plan.n}-${Date.now()}`;
      page = await benchPage(context, statics.url);
      const filled = await call(page, "fill", { database, ...plan });
      await page.close();
      expect(filled.count > 0, `fill ${plan.n}: nothing written`);
      page = await benchPage(context, statics.url);
      const started = await call(page, "openStart", { database });
      expect(started.leaseWaits === 0, `start ${plan.n}: the timed open waited for the lease ${started.leaseWaits} times`);
      await page.close();
      page = await benchPage(context, statics.url);
      const base = await call(page, "rawGetAll", { database });
      await page.close();
      expect(started.pending === filled.count && base.count === filled.count, `start ${plan.n}: pending ${started.pending}, getAll ${base.count}, filled ${filled.count}`);
      figure(`Scheduler.open + start(), ${fmt(filled.count)} pending${plan.streamed ? ", enqueued one per turn" : ""}`, fmt(started.totalMs), "ms", fmt(base.ms), `ms (raw getAll of the operation stores: ${fmt(base.records)} records)`, started.totalMs / base.ms,
        `open ${fmt(started.openMs)} ms + start ${fmt(started.startMs, 1)} ms; filled in ${fmt(filled.ms / 1000, 1)} s${filled.timedOut ? ` (of ${fmt(plan.n)}: fill budget reached)` : ""}`);
      if (plan.n === 10_000 && !plan.streamed) {
        const perOp = (started.jsHeapDelta + started.wasmMemoryDelta) / started.pending;
        figure("memory per pending operation (10 000 pending)", fmt(perOp), "bytes", "-", "", null,
          `JS heap +${fmt(started.jsHeapDelta)} B (${started.heapMethod}) + wasm linear memory +${fmt(started.wasmMemoryDelta)} B (grows in 64 KiB pages, never shrinks; ${fmt(started.wasmMemoryAfter)} B after)`);
      }
    }

    // 8. History: reopen time and storage against settled (compacted) history.
    if (want("history")) {
      const reopened = [];
      for (const n of PLAN.history.sizes) {
        const database = `bench-history-${n}-${Date.now()}`;
        page = await benchPage(context, statics.url);
        const filled = await call(page, "fillSettled", { database, n, ...PLAN.history });
        await page.close();
        expect(filled.count === n && filled.tombstones + filled.kept === n && filled.kept <= 1, `history ${n}: ${JSON.stringify(filled)}`);
        page = await benchPage(context, statics.url);
        const started = await call(page, "openStart", { database });
        await page.close();
        expect(started.pending === 0 && started.leaseWaits === 0, `history ${n}: reopen ${JSON.stringify(started)}`);
        page = await benchPage(context, statics.url);
        started.raw = await call(page, "rawOpen", { database, stores: LOAD_STORES });
        await page.close();
        // Then enqueues on that ledger, held, awaited one at a time: a new id is looked up
        // among the tombstones only when a page may hold it.
        page = await benchPage(context, statics.url);
        const enqueued = await call(page, "enqueueLatency", { database, tombstones: filled.tombstones, n: 200, deadlineMs: 30_000 });
        await page.close();
        reopened.push({ n, filled, started, enqueued });
      }
      const empties = reopened.filter((r) => r.n === 0).map((r) => r.started.totalMs);
      const empty = Math.min(...empties);
      for (const { n, filled, started, enqueued } of reopened) {
        figure(`Scheduler.open + start(), ${fmt(n)} settled (compacted) operations`, fmt(started.totalMs, 1), "ms", fmt(empty, 1), `ms (empty ledger, same run: the faster of ${empties.map((ms) => fmt(ms, 1)).join(" and ")})`, started.totalMs / empty,
          `open ${fmt(started.openMs, 1)} ms + start ${fmt(started.startMs, 1)} ms; the platform's part: indexedDB.open ${fmt(started.raw.openMs, 1)} ms, with a getAll of each store the load reads ${fmt(started.raw.totalMs, 1)} ms (${fmt(started.raw.records)} records); target <= 1.5 at 100 000`);
        const emptyEnqueue = reopened.find((r) => r.n === 0)?.enqueued;
        if (n > 0 && emptyEnqueue) {
          figure(`enqueue p50, held, ${fmt(n)} compacted operations in the ledger`, fmt(enqueued.p50Ms, 3), "ms", fmt(emptyEnqueue.p50Ms, 3), "ms (the same on the empty ledger, same run)", enqueued.p50Ms / emptyEnqueue.p50Ms,
            `p99 ${fmt(enqueued.p99Ms, 2)} ms against ${fmt(emptyEnqueue.p99Ms, 2)} ms; raw 1-record txn p50 ${fmt(enqueued.rawP50Ms, 3)} / ${fmt(emptyEnqueue.rawP50Ms, 3)} ms; ${enqueued.count} enqueues`);
        }
        if (n > 0) {
          figure(`storage per compacted operation (${fmt(n)})`, fmt(filled.bytes / n, 1), "bytes", "100", "bytes (target)", filled.bytes / n / 100,
            `navigator.storage.estimate() usage +${fmt(filled.bytes)} B over the fill; ${fmt(filled.tombstones)} tombstones, ${fmt(filled.kept)} kept whole; filled in ${fmt(filled.ms / 1000, 1)} s`);
        }
      }
    }

    // 11. A burst, then the tab closed at once: the reopen reads what retention left whole.
    if (want("burst")) {
      const reopened = [];
      for (const { n, quietMs = 0 } of PLAN.burst.runs) {
        const database = `bench-burst-${n}-${quietMs}-${Date.now()}`;
        page = await benchPage(context, statics.url);
        const filled = await call(page, "fillBurst", { database, n, quietMs, chunk: PLAN.burst.chunk, deadlineMs: PLAN.burst.deadlineMs });
        await page.close();
        expect(filled.count === n && filled.pending === 0, `burst ${n}: ${JSON.stringify(filled)}`);
        page = await benchPage(context, statics.url);
        const started = await call(page, "openStart", { database });
        await page.close();
        expect(started.pending === 0 && started.leaseWaits === 0, `burst ${n}: reopen ${JSON.stringify(started)}`);
        page = await benchPage(context, statics.url);
        started.raw = await call(page, "rawOpen", { database, stores: LOAD_STORES });
        await page.close();
        page = await benchPage(context, statics.url);
        const read = await call(page, "rawStores", { database, stores: ["operations", "operation_pages", "requests", "events"] });
        await page.close();
        reopened.push({ n, quietMs, filled, started, read });
      }
      const empties = reopened.filter((r) => r.n === 0).map((r) => r.started.totalMs);
      const empty = Math.min(...empties);
      for (const { n, quietMs, filled, started, read } of reopened.filter((r) => r.n > 0)) {
        const split = Object.entries(read).map(([store, { ms, count }]) => `${store} ${fmt(count)} in ${fmt(ms, 1)} ms`).join(", ");
        figure(`Scheduler.open + start() after ${fmt(n)} applied, stopped ${quietMs ? `after ${fmt(quietMs / 1000)} s of quiet` : "at once"}`, fmt(started.totalMs, 1), "ms", fmt(empty, 1), `ms (empty ledger, same run: the faster of ${empties.map((ms) => fmt(ms, 1)).join(" and ")})`, started.totalMs / empty,
          `${fmt(filled.kept)} settled kept whole and ${fmt(filled.tombstones)} tombstones at stop, storage ${fmt(filled.bytes / n, 1)} B per operation (the archive's ${fmt(filled.kept)} whole included); sent in ${fmt(filled.ms / 1000, 1)} s (${fmt(n / (filled.ms / 1000))} ops/s); raw getAll of what the open reads: ${split}; the platform's part: indexedDB.open ${fmt(started.raw.openMs, 1)} ms, with a getAll of each store the load reads ${fmt(started.raw.totalMs, 1)} ms; target <= 1.5`);
      }
    }

    // 12. The durability matrix: what bounds each figure.
    if (want("matrix")) await durabilityMatrix(statics.url, server, dir, stops);

    // 7. Size.
    figure("gzipped .wasm (gzip -9)", fmt(gz), "bytes", fmt(SIZE_BUDGET), "bytes (budget, wasm-pack.toml)", gz / SIZE_BUDGET, `${fmt(wasmBytes.length)} bytes raw`);
  } finally {
    clearTimeout(watchdog);
    await stopAll();
  }
  console.log(`\nBENCH_JSON ${JSON.stringify(rows)}`);
  if (problems.length > 0) {
    for (const p of problems) console.error(`bench: BROKEN: ${p}`);
    process.exit(1);
  }
}

/**
 * The durability 2x2: the figures that sending and enqueueing are judged by, in a Chromium profile
 * on disk, with the client's readwrite transactions all `strict` or all `relaxed` (the page's
 * IndexedDB forced either way, the raw baselines too) and the reference server's commits
 * flushed (`--fsync on`, as shipped) or not. A factor "bounds" a figure when removing its
 * flush improves the figure by more than BOUND_GAIN (geometric mean over the other factor's
 * two settings).
 */
async function durabilityMatrix(baseUrl, flushing, dir, stops) {
  const unflushed = await startReferenceServer(dir, { fsync: false });
  stops.push(unflushed.stop);
  // A profile on disk: the other parts run in a fresh browser context, which Chromium keeps in
  // memory (IndexedDB included), so there no commit reaches the disk, strict or relaxed.
  const context = await chromium.launchPersistentContext(join(dir, "matrix-profile"), { executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
  stops.push(() => context.close());
  await setServerDelay(flushing.url, 0);
  const runs = [];
  // Each cell twice, in the order ABCD DCBA: a drift of the machine over the run (or the
  // profile's first writes) weighs on every cell alike.
  const order = [["strict", "on"], ["strict", "off"], ["relaxed", "on"], ["relaxed", "off"]];
  for (const [client, fsync] of [...order, ...[...order].reverse()]) {
    const server = fsync === "on" ? flushing : unflushed;
    const page = await benchPage(context, baseUrl);
    await call(page, "forceDurability", client);
    const tag = `m${client[0]}${fsync}x${Date.now()}`;
    const plan = PLAN.matrix;
    const loop = await call(page, "fetchLoop", { endpoint: server.url, tag: `l${tag}`, n: plan.n, canvases: plan.canvases, concurrency: 2, deadlineMs: plan.deadlineMs });
    const e2e = await call(page, "endToEnd", { endpoint: server.url, batch: null, run: 1, tag: `e${tag}`, n: plan.n, chunk: plan.chunk, canvases: plan.canvases, deadlineMs: plan.deadlineMs });
    const load = await call(page, "enqueueWhileSending", { endpoint: server.url, tag: `w${tag}`, ...plan.load });
    const forced = await page.evaluate(() => window.bench.forced());
    await page.close();
    expect(loop.failures.length === 0 && e2e.rejected === 0 && e2e.errors.length === 0 && load.errors.length === 0, `matrix ${client}/${fsync}: ${JSON.stringify({ loop: loop.failures, e2e: e2e.errors, load: load.errors })}`);
    expect(forced > plan.n / 10, `matrix ${client}/${fsync}: only ${forced} readwrite transactions went through the forced durability`);
    const cell = `client ${client}, server fsync ${fsync}`;
    figure(`matrix (${cell}): end-to-end ops/s, 20 canvases, concurrency 2, no batching`, fmt(e2e.opsPerSec), "ops/s", fmt(loop.opsPerSec), "ops/s (plain fetch loop, concurrency 2)", e2e.opsPerSec / loop.opsPerSec, `${forced} readwrite transactions forced ${client}`);
    figure(`matrix (${cell}): enqueue p50 while sending`, fmt(load.p50Ms, 3), "ms", fmt(load.rawP50Ms, 3), `ms (raw 1-record ${client} txn p50)`, load.p50Ms / load.rawP50Ms, `p99 ${fmt(load.p99Ms, 2)} against ${fmt(load.rawP99Ms, 2)} ms (${fmt(load.p99Ms / load.rawP99Ms, 2)}x)`);
    figure(`matrix (${cell}): enqueue rate, ${load.outstanding} outstanding`, fmt(load.manyPerSec), "enqueues/s", fmt(load.deliveredManyPerSec), "ops/s delivered meanwhile", load.manyPerSec / Math.max(load.deliveredManyPerSec, 1e-9));
    runs.push({ client, fsync, loop, e2e, load });
  }
  await unflushed.stop();
  await context.close();
  // Each figure: its value in each cell, which way is better, and what it is named in the table.
  const measures = [
    ["plain fetch loop, ops/s", (c) => c.loop.opsPerSec, +1],
    ["scheduler end to end, ops/s", (c) => c.e2e.opsPerSec, +1],
    ["raw 1-record transaction p50, ms", (c) => c.load.rawP50Ms, -1],
    ["enqueue p50 while sending, ms", (c) => c.load.p50Ms, -1],
    ["enqueue p99 while sending, ms", (c) => c.load.p99Ms, -1],
    ["enqueues/s, 16 outstanding", (c) => c.load.manyPerSec, +1],
    ["ops/s delivered meanwhile", (c) => c.load.deliveredManyPerSec, +1],
  ];
  // A cell's value of a figure: the mean of its two runs.
  const at = (client, fsync) => runs.filter((c) => c.client === client && c.fsync === fsync);
  const mean = (value) => (cell) => cell.reduce((sum, one) => sum + value(one), 0) / cell.length;
  const gain = (one, better, pairs) => {
    const value = mean(one);
    return Math.sqrt(pairs.map(([from, to]) => (value(to) / value(from)) ** better).reduce((a, b) => a * b, 1));
  };
  console.log(`\ndurability matrix (a Chromium profile on disk; client strict | relaxed, server fsync on | off; no server delay; the mean of each cell's two runs):`);
  console.log(`  ${"figure".padEnd(36)} ${order.map(([c, f]) => `${c}/${f}`.padStart(11)).join(" ")}   relaxing the client   fsync off   bound by`);
  for (const [name, value, better] of measures) {
    const client = gain(value, better, [[at("strict", "on"), at("relaxed", "on")], [at("strict", "off"), at("relaxed", "off")]]);
    const server = gain(value, better, [[at("strict", "on"), at("strict", "off")], [at("relaxed", "on"), at("relaxed", "off")]]);
    const bounds = [client > BOUND_GAIN && "the client's commit", server > BOUND_GAIN && "the server's flush"].filter(Boolean);
    const named = bounds.length > 0 ? bounds.join(" and ") : `neither flush (both within ${fmt((BOUND_GAIN - 1) * 100)} %): the scheduler's own work, the wire and the server's handler`;
    const values = order.map(([c, f]) => mean(value)(at(c, f))).map((v) => fmt(v, v < 10 ? 2 : 0).padStart(11));
    console.log(`  ${name.padEnd(36)} ${values.join(" ")}   ${`x${fmt(client, 2)}`.padStart(19)}   ${`x${fmt(server, 2)}`.padStart(9)}   ${named}`);
    rows.push({ name: `matrix bound: ${name}`, value: named, unit: "", baseline: "-", baselineUnit: "", ratio: null, note: `relaxing the client x${fmt(client, 2)}, fsync off x${fmt(server, 2)}` });
  }
}
/** The improvement above which a flush is said to bound a figure (the matrix). */
const BOUND_GAIN = 1.15;

main().catch((error) => {
  console.error(`bench: ${error.stack ?? error}`);
  process.exit(1);
});
