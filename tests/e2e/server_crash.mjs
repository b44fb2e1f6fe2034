// Server crashes, end to end (issue 39, item 7b): the package in headless Chromium (three tabs of
// the tabs page, www/tabs, on one ledger) sends CRASH_OPS (default 5,000) operations through a
// round-robin proxy on 127.0.0.1 to 4 reference-server processes sharing one Postgres database,
// while one process is SIGKILLed every second and started again. Then, from the server's admin
// state: every acknowledged operation applied exactly once (0 lost, 0 applied twice) and, on each
// canvas, each tab's operations in the order the tab enqueued them.
// Needs CANVAS_SCHEDULER_TEST_DB=postgres://… (a cluster whose user may create databases; the
// kit step of scripts/test starts one with scripts/pg-cluster); without it, says so and exits 0.
// Bounded: LIMIT_MS for the whole run, every wait has its own bound. The last line is the summary.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer, request as httpRequest } from "node:http";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { CHROMIUM_ARGS, chromiumPath, ROOT, serve } from "../../www/harness.mjs";
import { freshDatabase, testPostgres } from "../../www/server/testing/test-db.mjs";

const OPS = Math.max(30, Math.min(20_000, Number(process.env.CRASH_OPS ?? 5000)));
const PROCESSES = 4;
const TABS = 3;
const KILL_EVERY_MS = 1000;
const LIMIT_MS = 240_000;
const READY_MS = 30_000;

const started = performance.now();
const print = (line) => console.log(line);
const say = (line) => print(`  ${line}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)}s`;
const overTime = () => performance.now() - started > LIMIT_MS;

const cluster = testPostgres();
if (!cluster) {
  print("server_crash: skipped: set CANVAS_SCHEDULER_TEST_DB=postgres://… (scripts/pg-cluster starts a throw-away cluster)");
  print("0 passed, 0 failed, 1 skipped");
  process.exit(0);
}

const failures = [];
const fail = (message) => {
  failures.push(message);
  say(`FAIL: ${message}`);
};

// ---- 4 server processes on one database ---------------------------------------------------------

const db = await freshDatabase(cluster);
const adminToken = `admin-${randomBytes(16).toString("hex")}`;
const SERVER = join(ROOT, "www", "server", "server.mjs");

/** slot -> { child, url (null while down), starts } */
const slots = [];

function startProcess(slot) {
  const child = spawn(process.execPath, [SERVER, "--port", "0", "--host", "127.0.0.1", "--db", db, "--run-apply-ms", "200", "--admin-token", adminToken], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  slot.child = child;
  slot.url = null;
  slot.starts += 1;
  let out = "";
  child.stderr.on("data", () => {}); // a killed peer's half-done work is logged there; not ours to print
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("a server printed no URL within 15 s")), 15_000);
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const match = /\{"listening":"(http:[^"]+)"\}/.exec(out);
      if (match && slot.child === child && slot.url === null) {
        clearTimeout(timer);
        slot.url = new URL(match[1]);
        resolve();
      }
    });
    child.once("exit", () => {
      clearTimeout(timer);
      if (slot.child === child) slot.url = null;
      resolve();
    });
  });
}

for (let i = 0; i < PROCESSES; i += 1) slots.push({ child: null, url: null, starts: 0 });
await Promise.all(slots.map(startProcess));
say(`${PROCESSES} reference servers on one Postgres database at ${elapsed()}`);

// ---- the round-robin proxy ----------------------------------------------------------------------

let next = 0;
const proxied = { requests: 0, cut: 0 };
const proxy = createServer((req, res) => {
  const live = slots.filter((slot) => slot.url !== null);
  if (live.length === 0) {
    req.socket.destroy();
    return;
  }
  const target = live[next % live.length].url;
  next += 1;
  proxied.requests += 1;
  const upstream = httpRequest(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      answer.on("error", () => res.destroy());
    },
  );
  // A killed process: the client sees the connection cut, as it would with a real crash.
  upstream.on("error", () => {
    proxied.cut += 1;
    res.destroy();
  });
  req.pipe(upstream);
});
await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
const proxyUrl = `http://127.0.0.1:${proxy.address().port}`;

// ---- the killer ---------------------------------------------------------------------------------

let kills = 0;
let killing = true;
const killer = (async () => {
  for (let round = 0; killing && !overTime() && round < 1000; round += 1) {
    await sleep(KILL_EVERY_MS);
    if (!killing) break;
    const slot = slots[round % PROCESSES];
    slot.child.kill("SIGKILL");
    kills += 1;
    await new Promise((resolve) => (slot.child.exitCode !== null || slot.child.signalCode !== null ? resolve() : slot.child.once("exit", resolve)));
    await startProcess(slot).catch((error) => fail(`restart: ${error.message}`));
  }
})();

// ---- three tabs ---------------------------------------------------------------------------------

const statics = await serve();
const browser = await chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_ARGS, headless: true });
const context = await browser.newContext();
const ledger = `crash-${Date.now()}`;
const pages = [];
for (let i = 0; i < TABS; i += 1) {
  const page = await context.newPage();
  const owner = `crash-${i}`;
  const query = new URLSearchParams({ server: proxyUrl, db: ledger, seed: String(7 + i), owner });
  await page.goto(`${statics.url}/www/tabs/?${query}`);
  await page.waitForFunction(() => document.body?.dataset.status, undefined, { timeout: READY_MS });
  const status = await page.evaluate(() => document.body.dataset.status);
  if (status !== "ready") throw new Error(`${owner}: ${await page.evaluate(() => document.body.dataset.error)}`);
  pages.push({ page, owner });
}
say(`${TABS} tabs open at ${elapsed()}; sending ${OPS} operations through ${proxyUrl}`);

const perTab = Math.ceil(OPS / TABS);
await Promise.all(pages.map(({ page }) => page.evaluate((maxOps) => window.tabs.run({ minGapMs: 0, maxGapMs: 4, manyRate: 0.5, maxOps }), perTab)));
// Wait (bounded) for the tabs to have enqueued everything, then for the ledger to drain.
for (let i = 0; i < 10_000 && !overTime(); i += 1) {
  const counts = await Promise.all(pages.map(({ page }) => page.evaluate(() => window.tabs.events().enqueued)));
  if (counts.every((n) => n >= perTab)) break;
  await sleep(250);
}
await Promise.all(pages.map(({ page }) => page.evaluate(() => window.tabs.stopRun())));
say(`enqueued at ${elapsed()}; ${kills} kills so far`);
const drained = await Promise.race([
  Promise.all(pages.map(({ page }) => page.evaluate(() => window.tabs.settle()))).then(() => true),
  sleep(Math.max(5_000, LIMIT_MS - (performance.now() - started))).then(() => false),
]);
killing = false;
await killer;
if (!drained) fail(`the tabs did not settle within ${LIMIT_MS / 1000} s`);
say(`settled at ${elapsed()}: ${kills} processes killed, ${proxied.requests} requests proxied, ${proxied.cut} cut by a kill`);

// ---- checks -------------------------------------------------------------------------------------

const acked = Object.values(await pages[0].page.evaluate(() => window.tabs.acked())).flat();
const live = slots.find((slot) => slot.url !== null) ?? (await startProcess(slots[0]), slots[0]);
const response = await fetch(new URL("/admin/state", live.url), { headers: { "x-admin-token": adminToken } });
const state = await response.json();
const lost = acked.filter((id) => (state.operations[id]?.applications ?? 0) === 0);
const twice = [...state.invariants.operationsAppliedMoreThanOnce, ...state.invariants.keysAppliedMoreThanOnce];
if (acked.length < OPS) fail(`only ${acked.length} of ${OPS} operations were acknowledged`);
if (lost.length > 0) fail(`${lost.length} acknowledged operations never applied: ${lost.slice(0, 5).join(", ")}`);
if (twice.length > 0) fail(`applied more than once: ${twice.slice(0, 5).join(", ")}`);
let orderChecked = 0;
for (const [canvasId, canvas] of Object.entries(state.canvases)) {
  const last = new Map(); // owner -> counter of its last operation on this canvas
  for (const id of canvas.order) {
    const [owner, n] = id.split(":");
    const counter = Number(n);
    if (last.has(owner) && counter < last.get(owner)) {
      fail(`${canvasId}: ${id} applied after ${owner}:${last.get(owner)}`);
      break;
    }
    last.set(owner, counter);
    orderChecked += 1;
  }
}
say(`${acked.length} acknowledged, ${lost.length} lost, ${twice.length} applied twice; order checked on ${orderChecked} applications`);

await browser.close();
await statics.close?.();
proxy.close();
proxy.closeAllConnections();
for (const slot of slots) slot.child.kill("SIGTERM");
await sleep(200);
print(`server_crash: ${OPS} operations, ${TABS} tabs, ${PROCESSES} processes, ${kills} SIGKILLs, ${elapsed()}`);
print(`${failures.length === 0 ? 1 : 0} passed, ${failures.length === 0 ? 0 : 1} failed`);
process.exit(failures.length === 0 ? 0 : 1);
