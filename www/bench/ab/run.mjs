// Enqueue latency A/B of builds of the web package (www/bench/ab/ab.js), for changes smaller
// than this machine's noise between runs. Not part of any test; it reports, never judges.
//
//   node www/bench/ab/run.mjs NAME=DIR [NAME=DIR ...]
//
// Each DIR is a `wasm-pack build --target web` output (pkg/web of a checkout: for an earlier
// revision, `git worktree add /tmp/old REV && (cd /tmp/old && bash scripts/build web)`).
// Serves them on 127.0.0.1 with cross-origin isolation (5 µs timers), runs AB_RUNS runs
// (default 3) of AB_ROUNDS rounds (default 1 000) in headless chromium, and prints each
// build's p50 and its ratio to the raw 1-record transaction of the same rounds.
//
// AB_PART=load measures under load instead: against the reference server (www/server,
// 127.0.0.1, a fresh SQLite file), each build in turn (the order rotating from run to run)
// sends a backlog of AB_BACKLOG operations (default 2 000) at concurrency 2 while AB_ROUNDS
// awaited enqueues (default 300) run, each after the raw 1-record transaction; printed per
// build: the enqueue p50, its ratio to the raw p50 of the same moments, and the operations
// delivered per second meanwhile.
//
// AB_PART=pending measures `pending()`: each build holds AB_PENDING unsettled operations
// (default 200,2000: one measurement each), then AB_ROUNDS rounds (default 101) call each
// build's `pending()` once, in a rotating order; printed per build: the median.
import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { CHROMIUM_ARGS, chromiumPath, startReferenceServer } from "../../harness.mjs";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".wasm": "application/wasm" };
const PART = process.env.AB_PART ?? "held";
if (!["held", "load", "pending"].includes(PART)) throw new Error(`AB_PART is held, load or pending, not ${PART}`);
const RUNS = Number(process.env.AB_RUNS ?? 3);
const ROUNDS = Number(process.env.AB_ROUNDS ?? { load: 300, pending: 101 }[PART] ?? 1000);
const PENDING = (process.env.AB_PENDING ?? "200,2000").split(",").map(Number);
const BACKLOG = Number(process.env.AB_BACKLOG ?? 2000);

const builds = new Map();
for (const arg of process.argv.slice(2)) {
  const [name, dir] = arg.split("=");
  if (!/^[\w-]+$/.test(name ?? "") || !dir) throw new Error(`expected NAME=DIR, got ${arg}`);
  builds.set(name, resolve(dir));
}
if (builds.size === 0) throw new Error("usage: node www/bench/ab/run.mjs NAME=DIR [NAME=DIR ...]");

/** The page's files, and /builds/NAME/... from each build's directory; nothing else. */
function fileFor(urlPath) {
  const path = normalize(decodeURIComponent(urlPath)).replace(/^\/+/, "");
  if (path.split("/").includes("..")) return null;
  const build = /^builds\/([\w-]+)\/(.+)$/.exec(path);
  if (build) return builds.has(build[1]) ? join(builds.get(build[1]), build[2]) : null;
  return ["", "index.html", "ab.js"].includes(path) ? join(HERE, path || "index.html") : null;
}

const server = createServer(async (req, res) => {
  const file = fileFor(new URL(req.url, "http://x").pathname);
  try {
    if (file === null || !(await stat(file)).isFile()) throw new Error("not served");
    res.writeHead(200, {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "cross-origin-opener-policy": "same-origin",
      "cross-origin-embedder-policy": "require-corp",
    });
    res.end(await readFile(file));
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((ready) => server.listen(0, "127.0.0.1", ready));
const watchdog = setTimeout(() => {
  console.error("ab: over 10 minutes, stopping");
  process.exit(1);
}, 10 * 60_000);

const browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
try {
  const page = await browser.newPage();
  page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
  const query = [...builds.keys()].map((name) => `build=${encodeURIComponent(name)}`).join("&");
  await page.goto(`http://127.0.0.1:${server.address().port}/?${query}`);
  await page.waitForSelector("body[data-ready]", { state: "attached", timeout: 60_000 });
  if (PART === "load") await load(page);
  else if (PART === "pending") {
    for (let run = 1; run <= RUNS; run++) {
      for (const n of PENDING) {
        const result = await page.evaluate((plan) => window.abPending(plan), { n, calls: ROUNDS, deadlineMs: 120_000 });
        const cells = [...builds.keys()].map((name) => `${name} ${result[name].medianMs.toFixed(3)} ms`);
        console.log(`run ${run}: pending() of ${n}: ${cells.join(" | ")} | ${result[[...builds.keys()][0]].count} rounds`);
      }
    }
  } else {
    for (let run = 1; run <= RUNS; run++) {
      const result = await page.evaluate((plan) => window.ab(plan), { n: ROUNDS, deadlineMs: 120_000 });
      const raw = result.raw.p50Ms;
      const cells = [...builds.keys()].map((name) => `${name} ${result[name].p50Ms.toFixed(3)} ms (${(result[name].p50Ms / raw).toFixed(3)})`);
      console.log(`run ${run}: raw 1-record txn ${raw.toFixed(3)} ms | ${cells.join(" | ")} | ${result.raw.count} rounds`);
    }
  }
} finally {
  clearTimeout(watchdog);
  await browser.close();
  server.close();
}

/** AB_PART=load: the builds in turn against one reference server, the order rotating. */
async function load(page) {
  const reference = await startReferenceServer({ runApplyMs: 200 });
  try {
    const names = [...builds.keys()];
    for (let run = 1; run <= RUNS; run++) {
      const order = names.map((_, at) => names[(at + run - 1) % names.length]);
      const plan = { endpoint: reference.url, backlog: BACKLOG, n: ROUNDS, deadlineMs: 120_000, order };
      const result = await page.evaluate((given) => window.abLoad(given), plan);
      const cells = order.map((name) => {
        const r = result[name];
        const errors = r.errors > 0 ? `, ${r.errors} errors` : "";
        return `${name} ${r.p50Ms.toFixed(3)} ms (${(r.p50Ms / r.rawP50Ms).toFixed(3)} of raw ${r.rawP50Ms.toFixed(3)}), ${r.deliveredPerSec.toFixed(0)} delivered/s, ${r.count} rounds${errors}`;
      });
      console.log(`run ${run} (load): ${cells.join(" | ")}`);
    }
  } finally {
    await reference.close();
  }
}
