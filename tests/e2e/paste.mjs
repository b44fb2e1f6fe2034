// A paste: 10 000 intents in one `enqueueMany` on 50 canvases, with the package's default
// options, against the reference server (www/server, SQLite), in each engine of www/engines.mjs.
// Every intent must be applied exactly once, in enqueue order per canvas; the time from the call
// to `whenSaved()` is printed beside the target (10 s). A figure is a measurement, not a verdict:
// the run fails on lost, duplicated or reordered work, or on a drain over three times the target.
// PASTE_COUNT and PASTE_CANVASES change the paste. Every wait is bounded, and so is the run.
import assert from "node:assert/strict";
import { enginesToRun, launch } from "../../www/engines.mjs";
import { admin, serve, startReferenceServer } from "../../www/harness.mjs";

const print = (line) => console.log(`e2e paste: ${line}`);
const BUDGET_MS = 600_000;
setTimeout(() => {
  console.error(`e2e paste: FAILED: over its ${BUDGET_MS / 1000} s budget`);
  process.exit(1);
}, BUDGET_MS).unref();

const COUNT = Number(process.env.PASTE_COUNT ?? 10_000);
const CANVASES = Number(process.env.PASTE_CANVASES ?? 50);
const TARGET_MS = 10_000;
const SLACK = 3;
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

async function paste(browser, statics, engine) {
  const server = await startReferenceServer();
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    const query = new URLSearchParams({ server: server.url, db: `paste-${engine}-${Date.now()}`, retry: "{}" });
    await page.goto(`${statics.url}/www/outage/?${query}`);
    const status = await page.waitFor("page ready", () => document.body?.dataset.status, undefined, 30_000);
    if (status !== "ready") throw new Error(`page: ${await page.evaluate(() => document.body.dataset.error)}`);
    const list = Array.from({ length: COUNT }, (_, i) => [`p${i}`, `c${i % CANVASES}`]);
    const figures = await page.evaluate(async (list) => {
      const started = Date.now();
      const durable = await window.outage.paste(list);
      await window.outage.whenSaved();
      return { acknowledgedMs: durable - started, drainedMs: Date.now() - started };
    }, list);
    const state = await admin(server, "/admin/state");
    assert.deepEqual(state.invariants.operationsAppliedMoreThanOnce, [], "nothing applied twice");
    for (const [id] of list) assert.equal(state.operations[id]?.applications, 1, `${id} applied once`);
    for (let c = 0; c < CANVASES; c += 1) {
      const order = list.filter(([, canvasId]) => canvasId === `c${c}`).map(([id]) => id);
      assert.deepEqual(state.canvases[`c${c}`]?.order, order, `c${c} in enqueue order`);
    }
    const requests = Object.keys(state.requests).length;
    const line =
      `${COUNT} intents on ${CANVASES} canvases: acknowledged in ${seconds(figures.acknowledgedMs)}, ` +
      `on the server in ${seconds(figures.drainedMs)} (target ${seconds(TARGET_MS)}) in ${requests} requests`;
    assert.ok(figures.drainedMs <= SLACK * TARGET_MS, `far beyond the target: ${line}`);
    return line;
  } finally {
    await page.evaluate(() => window.outage?.stop()).catch(() => {});
    await context.close().catch(() => {});
    await server.close().catch(() => {});
  }
}

const statics = await serve();
let failed = 0;
try {
  for (const engine of enginesToRun()) {
    const browser = await launch(engine);
    try {
      print(`ok - ${engine}: ${await paste(browser, statics, engine)}`);
    } catch (error) {
      print(`not ok - ${engine}: ${error?.stack ?? error}`);
      failed += 1;
    } finally {
      await browser.close().catch(() => {});
    }
  }
} finally {
  await statics.close();
}
process.exit(failed === 0 ? 0 : 1);
