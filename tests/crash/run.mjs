// Crash test of the server half: the packed package in headless Chromium, 3
// tabs on one ledger (one sends, the others enqueue through it), sends CRASH_OPS (5,000)
// operations through 4 reference-server processes (www/server, an app on canvas-scheduler-server)
// on one Postgres database, behind a round-robin proxy, while one process is SIGKILLed every
// second (rotating) and restarted on a fresh port, and 3 % of new keys' answers are dropped
// after their commit (the reference server's dropAfterApplyRate: what a process dying between
// commit and answer does). Then, from the database: 0 lost, 0 applied twice, per-canvas order
// kept (tests/crash/checks.mjs).
//
//   node tests/crash/run.mjs        (after scripts/build: the tarball packs pkg/)
//
// Postgres: CSK_PG_URL or CANVAS_SCHEDULER_TEST_DB (scripts/test sets them), else a throw-away
// cluster (scripts/pg-cluster), stopped on every exit. Everything listens on 127.0.0.1; every
// loop is bounded in count and time; the whole run in LIMIT_MS. Exits 1 on any failed check.
import { randomBytes } from "node:crypto";
import { launchChromium } from "../../www/harness.mjs";
import { serveApp } from "./app.mjs";
import { Backends } from "./backends.mjs";
import { verdicts } from "./checks.mjs";
import { postgres } from "./cluster.mjs";
import { startProxy } from "./proxy.mjs";

const OPS = Number(process.env.CRASH_OPS ?? 5000);
const TABS = 3;
const PROCESSES = 4;
const KILL_EVERY_MS = 1000;
const MAX_KILLS = 400;
const LIMIT_MS = 360_000;
const READY_MS = 30_000;
const ENQUEUE_MS = 120_000;
const SAVED_MS = 240_000;
const DROP_AFTER_APPLY = 0.03;
const SEED = Number(process.env.CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));

const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)}s`;
const say = (line) => console.log(`crash: ${line}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** `promise`, or a rejection after `ms`. */
const within = (promise, ms, what) => {
  let timer;
  return Promise.race([promise, new Promise((_, fail) => (timer = setTimeout(() => fail(new Error(`${what}: nothing within ${ms} ms`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
};

let pg = null;
let backends = null;
let app = null;
process.on("exit", () => {
  backends?.stopAll();
  pg?.stop();
  app?.remove();
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));
const watchdog = setTimeout(() => {
  say(`FAIL: the whole run took over ${LIMIT_MS / 1000} s`);
  process.exit(1);
}, LIMIT_MS);

/** Kills a process every KILL_EVERY_MS until `stop()`; bounded by MAX_KILLS. */
function killLoop() {
  let running = true;
  let skipped = 0;
  const starts = [];
  const loop = (async () => {
    for (let i = 0; i < MAX_KILLS && running; i += 1) {
      await sleep(KILL_EVERY_MS);
      if (!running) break;
      const start = backends.kill();
      if (start) starts.push(start.catch((error) => say(`restart failed: ${error.message}`)));
      else skipped += 1;
    }
  })();
  return {
    skipped: () => skipped,
    stop: async () => {
      running = false;
      await loop;
      await within(Promise.all(starts), 30_000, "restarts");
    },
  };
}

async function adminState(token) {
  const response = await fetch(`${backends.pool[0].url}/admin/state`, { headers: { "x-admin-token": token }, signal: AbortSignal.timeout(60_000) });
  if (!response.ok) throw new Error(`/admin/state: HTTP ${response.status}`);
  return response.json();
}

async function main() {
  say(`${OPS} operations, ${TABS} tabs, ${PROCESSES} server processes on Postgres, one SIGKILLed every ${KILL_EVERY_MS} ms; seed ${SEED}`);
  pg = await postgres(say);
  const adminToken = `admin-${randomBytes(16).toString("hex")}`;
  // Beside the kills, what a process dying between its commit and its answer does, made common:
  // 3 % of the submits that decide a new key commit, then drop the connection unanswered.
  backends = new Backends({ db: pg.url, adminToken, faults: { dropAfterApplyRate: DROP_AFTER_APPLY }, say });
  // One at a time: the first creates the schema, and a 2-core machine starts them no faster.
  for (let i = 0; i < PROCESSES; i += 1) await backends.start();
  const proxy = await startProxy(() => backends.pool.map((b) => b.url));
  app = await serveApp(say);
  const browser = await launchChromium();
  let killer = null;
  try {
    const context = await browser.newContext();
    const tabs = [];
    for (let k = 1; k <= TABS; k += 1) {
      const page = await context.newPage();
      page.on("pageerror", (error) => say(`tab-${k} page error: ${error.message}`));
      const query = new URLSearchParams({ endpoint: proxy.url, db: "crash-ledger", owner: `tab-${k}`, seed: String((SEED + k) >>> 0) });
      await page.goto(`${app.url}/?${query}`);
      await page.waitForSelector("body[data-status]", { timeout: READY_MS });
      const status = await page.getAttribute("body", "data-status");
      if (status !== "ready") throw new Error(`tab-${k}: ${await page.getAttribute("body", "data-error")}`);
      tabs.push({ owner: `tab-${k}`, page });
    }
    say(`${TABS} tabs open at ${elapsed()}, proxy ${proxy.url} over ${backends.pool.length} processes`);

    killer = killLoop();
    const t0 = performance.now();
    const shares = tabs.map((_, k) => Math.floor(OPS / TABS) + (k < OPS % TABS ? 1 : 0));
    const plans = new Map();
    const runs = tabs.map(async (tab, k) => plans.set(tab.owner, await tab.page.evaluate((count) => window.crash.run({ count }), shares[k])));
    await within(Promise.all(runs), ENQUEUE_MS, "enqueueing");
    const enqueueMs = performance.now() - t0;
    say(`${OPS} operations enqueued in ${(enqueueMs / 1000).toFixed(1)} s (${backends.kills} kills so far)`);

    // Wait for every tab's whenSaved(), reporting progress every 5 s.
    const saved = Promise.all(tabs.map((tab) => tab.page.evaluate(() => window.crash.saved())));
    let done = false;
    saved.finally(() => (done = true)).catch(() => {});
    const progress = (async () => {
      for (let i = 0; i < SAVED_MS / 5000 && !done; i += 1) {
        await sleep(5000);
        if (done) break;
        const stats = await tabs[0].page.evaluate(() => window.crash.stats()).catch(() => null);
        say(`${elapsed()}: pending ${stats?.pending} in flight ${stats?.inFlight} idle ${stats?.idleReason}; kills ${backends.kills}; proxy ${JSON.stringify(proxy.counts)} ${JSON.stringify(proxy.status)}`);
      }
    })();
    const savedStates = await within(saved, SAVED_MS, "whenSaved() in every tab").catch(async (error) => {
      const explain = await tabs[0].page.evaluate(() => JSON.stringify(window.crash.stats())).catch(() => "?");
      throw new Error(`${error.message}; stats ${explain}`);
    });
    const sendMs = performance.now() - t0;
    await progress;
    await killer.stop();
    say(`every tab saved at ${elapsed()} (${(sendMs / 1000).toFixed(1)} s after the first enqueue): ${JSON.stringify(savedStates)}`);

    const state = await adminState(adminToken);
    const ids = [...plans.values()].flat().map(([id]) => id);
    const ledger = await within(tabs[0].page.evaluate((all) => window.crash.ledger(all), ids), 60_000, "known(ids)");
    const { failures, figures } = verdicts({ state, plans, ledger });
    for (const tab of tabs) {
      const events = await tab.page.evaluate(() => window.crash.events());
      say(`${tab.owner}: events ${JSON.stringify(events.counts)}${events.problems.length ? ` problems ${events.problems.join(" | ")}` : ""}`);
    }
    const blocked = savedStates.flatMap((s) => s.blocked);
    if (blocked.length > 0) failures.push(`${blocked.length} operations blocked: ${blocked.slice(0, 8).join(", ")}`);
    const starts = backends.startTimes();
    say(
      `operations ${figures.operations}, applied once ${figures.applied}; requests (keys) ${figures.keys} (${(figures.operations / Math.max(1, figures.keysApplied)).toFixed(1)} operations a request); ` +
        `kills ${backends.kills} (skipped ${killer.skipped()}: fewer than 2 live), restart median ${starts.median.toFixed(0)} ms max ${starts.max.toFixed(0)} ms`,
    );
    say(
      `submits seen by the proxy ${proxy.counts.submits}, queries ${proxy.counts.queries}; 502 to the client ${proxy.counts.badGateway} (a process killed mid-request, ` +
        `or an answer dropped after its commit), resets mid-answer ${proxy.counts.resetMidAnswer}, refused connections skipped ${proxy.counts.refusedSkipped}; ` +
        `409 in progress ${proxy.status[409] ?? 0}, 404 never received ${proxy.status[404] ?? 0}`,
    );
    say(
      `duplicates refused: ${figures.repeatsFromStore} repeated submits and ${figures.queriesAnswered} queries of applied keys answered from the store, ` +
        `none applied again (the client asks before it resends)`,
    );
    say(`time: enqueue ${(enqueueMs / 1000).toFixed(1)} s, all saved ${(sendMs / 1000).toFixed(1)} s, whole run ${elapsed()}`);
    return failures;
  } finally {
    await killer?.stop().catch(() => {});
    await browser.close().catch(() => {});
    await app.close();
    await proxy.close();
  }
}

let failures;
try {
  failures = await main();
} catch (error) {
  failures = [`the run failed: ${error.stack ?? error}`];
}
if (failures.length > 0 && backends?.log.length) say(`server stderr:\n  ${backends.log.slice(-30).join("\n  ")}`);
backends?.stopAll();
pg?.stop();
clearTimeout(watchdog);
for (const failure of failures) say(`FAIL: ${failure}`);
say(failures.length === 0 ? `passed in ${elapsed()}` : `FAILED (${failures.length} checks) in ${elapsed()}`);
process.exit(failures.length === 0 ? 0 : 1);
