// Outages in a real browser: the outage page (www/outage/) in each engine
// of www/engines.mjs against the reference server's fault switches, with the retry curve scaled
// down (baseMs 100, maxMs 1 500, maxAttempts 5, deadLetterAfterMs 8 000) so that 20 s of fault
// is more than the attempt budget and the dead-letter time together: a client that counted
// outage failures would dead-letter within seconds. In every engine, four scenarios, each with
// its own server and browser context (at once, except in WebKit, whose driver takes one session
// at a time):
//   write   every submit 503 `Retry-After: 0`, queries answered (404), for 20 s;
//   full    every request 503 without Retry-After, for 20 s;
//   flap    down 2 s, up 0.5 s, for 20 s;
//   poison  one request refused 503 every time while edits on two other canvases succeed.
// The first three: nothing dead-letters, everything drains within one backoff step (plus
// slack) of recovery, applied once and in order per canvas, and (write, full) the submits, as
// the server saw them arrive, go at the network's pace only until the endpoint's failures are
// longer than bad luck makes them (at most 40 in a row, or maxMs), and once the fault is twice
// maxMs old each request's submits are at least maxMs apart. Poison: it alone
// dead-letters, no sooner than deadLetterAfterMs and within two steps of it (plus the time to
// tell its failures from bad luck: up to 40 in a row at the network's pace), naming the canvas
// it holds and how to release it; `pending()` and `whenSaved()` say so; `retry(id)` after the
// fault is lifted delivers it once.
// ENGINES=chromium,... picks engines; OUTAGES_ONLY=write,poison picks scenarios. Every wait is
// bounded, and so is the whole run. Exits 1 if a check failed.
import assert from "node:assert/strict";
import { enginesToRun, launch } from "../../www/engines.mjs";
import { admin, serve, startReferenceServer } from "../../www/harness.mjs";

const print = (line) => console.log(`e2e outages: ${line}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const BUDGET_MS = 420_000;
setTimeout(() => {
  console.error(`e2e outages: FAILED: over its ${BUDGET_MS / 1000} s budget`);
  process.exit(1);
}, BUDGET_MS).unref();

const RETRY = { baseMs: 100, maxMs: 1_500, maxAttempts: 5, deadLetterAfterMs: 8_000 };
const FAULT_MS = 20_000;
/** Timing slack of a real browser: timers, the event loop, a loaded 2-core machine. */
const SLACK_MS = 4_000;
/** How far a submit may arrive ahead of its curve (the page's timer against the server's clock). */
const EARLY_MS = 150;
/** The longest run of failures the scheduler takes for bad luck (core::endpoint::MAX_RUN). */
const MAX_RUN = 40;
/** How long telling a poisoned request's failures from bad luck may take here: up to MAX_RUN
 * misses in a row at the network's pace, on a loaded machine. */
const JUDGE_MS = 4_000;

/** Opens the outage page on a fresh server and ledger in a fresh context. */
async function open(browser, statics, name) {
  const server = await startReferenceServer();
  const context = await browser.newContext();
  const page = await context.newPage();
  const query = new URLSearchParams({ server: server.url, db: `outage-${name}-${Date.now()}`, retry: JSON.stringify(RETRY) });
  await page.goto(`${statics.url}/www/outage/?${query}`);
  const status = await page.waitFor(`${name} page ready`, () => document.body?.dataset.status, undefined, 30_000);
  if (status !== "ready") throw new Error(`${name} page: ${await page.evaluate(() => document.body.dataset.error)}`);
  const close = async () => {
    await page.evaluate(() => window.outage.stop()).catch(() => {});
    await context.close().catch(() => {});
    await server.close().catch(() => {});
  };
  return { server, page, close };
}

const enqueue = (page, id, canvasId) => page.evaluate(([i, c]) => window.outage.enqueue(i, c), [id, canvasId]);
const events = (page) => page.evaluate(() => window.outage.events());
const faults = (server, partial) => admin(server, "/admin/faults", partial);

/** Awaits `whenSaved()` in the page, bounded; resolves with its answer and when it came. */
async function whenSaved(page, timeoutMs) {
  let timer;
  const answer = await Promise.race([
    page.evaluate(() => window.outage.whenSaved()),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`whenSaved() did not resolve within ${timeoutMs} ms`)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
  return { answer, at: Date.now() };
}

/** Every id applied exactly once, and each canvas's order on the server is enqueue order. */
async function assertAppliedInOrder(server, byCanvas) {
  const state = await admin(server, "/admin/state");
  assert.deepEqual(state.invariants.operationsAppliedMoreThanOnce, [], "nothing applied twice");
  for (const [canvasId, ids] of Object.entries(byCanvas)) {
    for (const id of ids) assert.equal(state.operations[id]?.applications, 1, `${id} applied once`);
    assert.deepEqual(state.canvases[canvasId]?.order, ids, `${canvasId} in enqueue order`);
  }
}

/**
 * A fault on for FAULT_MS while edits arrive on three canvases (one each at once, then one
 * every 2 s in turn), then off. Resolves with what the checks need.
 */
async function throughFault(browser, statics, name, on, off) {
  const { server, page, close } = await open(browser, statics, name);
  try {
    const byCanvas = { a: [], b: [], c: [] };
    const started = Date.now();
    await faults(server, on);
    for (const canvasId of ["a", "b", "c"]) {
      const id = `${name}-${canvasId}0`;
      await enqueue(page, id, canvasId);
      byCanvas[canvasId].push(id);
    }
    for (let i = 1; Date.now() - started < FAULT_MS - 2_000; i += 1) {
      await sleep(Math.max(0, started + i * 2_000 - Date.now()));
      const canvasId = ["a", "b", "c"][i % 3];
      const id = `${name}-${canvasId}${i}`;
      await enqueue(page, id, canvasId);
      byCanvas[canvasId].push(id);
    }
    await sleep(Math.max(0, started + FAULT_MS - Date.now()));
    await faults(server, off);
    const recoveredAt = Date.now();
    const saved = await whenSaved(page, RETRY.maxMs + SLACK_MS + 10_000);
    const seen = await events(page);
    const dead = seen.filter((event) => event.type === "dead_lettered");
    assert.deepEqual(dead, [], `${name}: nothing dead-letters through an outage`);
    assert.deepEqual(saved.answer.blocked, [], `${name}: nothing blocked`);
    const drainedMs = saved.at - recoveredAt;
    assert.ok(drainedMs <= RETRY.maxMs + SLACK_MS, `${name}: drained ${drainedMs} ms after recovery, over one step (${RETRY.maxMs} ms) + ${SLACK_MS} ms`);
    await assertAppliedInOrder(server, byCanvas);
    const { arrivals } = await admin(server, "/admin/submits");
    const during = Object.fromEntries(Object.entries(arrivals).map(([key, times]) => [key, times.filter((t) => t < recoveredAt)]));
    const most = Math.max(...Object.values(during).map((times) => times.length));
    const operations = Object.values(byCanvas).flat().length;
    return { server, during, drainedMs, most, operations, started };
  } finally {
    await close();
  }
}

/**
 * Through a fault from `from` (this machine's clock, as the server's arrivals): the
 * submits that came less than baseMs after their request's previous one are at most MAX_RUN in
 * all (bad luck until the failures are longer than it makes them, or last maxMs), and once the
 * fault is twice maxMs old (judged down within maxMs, then waits as long as it has been down)
 * each request's submits are at least maxMs apart. Returns how many went at that pace.
 */
function assertBacksOff(name, during, from) {
  let paced = 0;
  for (const [key, times] of Object.entries(during)) {
    for (let n = 1; n < times.length; n += 1) {
      const gap = times[n] - times[n - 1];
      if (gap < RETRY.baseMs) paced += 1;
      if (times[n - 1] >= from + 2 * RETRY.maxMs) {
        assert.ok(gap >= RETRY.maxMs - EARLY_MS, `${name}: ${key}'s submit ${n + 1} came ${gap} ms after the one before, ${times[n - 1] - from} ms into the fault: ${times.map((t) => t - from).join(",")}`);
      }
    }
  }
  assert.ok(paced <= MAX_RUN, `${name}: ${paced} submits at the network's pace, more than bad luck explains`);
  return paced;
}

const SCENARIOS = {
  async write(browser, statics) {
    const run = await throughFault(browser, statics, "write", { writeOutage: true, retryAfterSeconds: 0 }, { writeOutage: false });
    const paced = assertBacksOff("write", run.during, run.started);
    // 20 s: a few submits at the network's pace, then a curve that reaches 1.5 s (a submit
    // and its query each) within seconds: about 15 submits, not hundreds.
    assert.ok(run.most <= 25, `write: at most 25 submits of one request in 20 s, not ${run.most}`);
    return `${run.operations} operations, none dead-lettered, drained ${run.drainedMs} ms after recovery, at most ${run.most} submits of one request, ${paced} at the network's pace`;
  },
  async full(browser, statics) {
    const run = await throughFault(browser, statics, "full", { fullOutage: true }, { fullOutage: false });
    const paced = assertBacksOff("full", run.during, run.started);
    assert.ok(run.most <= 25, `full: at most 25 submits of one request in 20 s, not ${run.most}`);
    return `${run.operations} operations, none dead-lettered, drained ${run.drainedMs} ms after recovery, at most ${run.most} submits of one request, ${paced} at the network's pace`;
  },
  async flap(browser, statics) {
    const run = await throughFault(browser, statics, "flap", { flapDownMs: 2_000, flapUpMs: 500 }, { flapDownMs: 0, flapUpMs: 0 });
    // Each up phase is a verdict that may bring retries forward: bounded, not on one curve.
    assert.ok(run.most <= 40, `flap: at most 40 submits of one request in 20 s, not ${run.most}`);
    return `${run.operations} operations, none dead-lettered, drained ${run.drainedMs} ms after recovery, at most ${run.most} submits of one request`;
  },
  async poison(browser, statics) {
    const { server, page, close } = await open(browser, statics, "poison");
    try {
      const poisoned = "poison-p0";
      await faults(server, { poisonOperations: [poisoned] });
      const enqueuedAt = await enqueue(page, poisoned, "p");
      const byCanvas = { h1: [], h2: [] };
      let deadEvent = null;
      const limit = RETRY.deadLetterAfterMs + 2 * RETRY.maxMs + JUDGE_MS + SLACK_MS;
      for (let i = 1; Date.now() - enqueuedAt < limit + 2_000 && !deadEvent; i += 1) {
        await sleep(Math.max(0, enqueuedAt + i * 500 - Date.now()));
        const canvasId = i % 2 === 0 ? "h1" : "h2";
        await enqueue(page, `poison-${canvasId}-${i}`, canvasId);
        byCanvas[canvasId].push(`poison-${canvasId}-${i}`);
        deadEvent = (await events(page)).find((event) => event.type === "dead_lettered") ?? null;
      }
      assert.ok(deadEvent, `poison: no dead letter within ${limit + 2_000} ms`);
      assert.deepEqual(deadEvent.operationIds, [poisoned], "only the poisoned request dead-letters");
      const after = deadEvent.at - enqueuedAt;
      assert.ok(after >= RETRY.deadLetterAfterMs, `poison: dead-lettered after ${after} ms, before deadLetterAfterMs`);
      assert.ok(after <= limit, `poison: dead-lettered after ${after} ms, later than two steps past deadLetterAfterMs (+ the time to judge it, + slack)`);
      assert.deepEqual(deadEvent.heldCanvasIds, ["p"], "the event names the canvas it holds");
      assert.deepEqual([...deadEvent.release].sort(), ["discard", "retry"], "and how to release it");
      const pending = await page.evaluate(() => window.outage.pending());
      const entry = pending.find((operation) => operation.id === poisoned);
      assert.equal(entry?.state, "blocked", `pending() lists it blocked: ${JSON.stringify(pending)}`);
      assert.equal(entry?.reason, "dead_letter");
      assert.deepEqual(entry?.heldCanvasIds, ["p"], "pending() names the canvas it holds");
      assert.deepEqual([...(entry?.release ?? [])].sort(), ["discard", "retry"], "and how to release it");
      const saved = await whenSaved(page, 20_000);
      assert.deepEqual(saved.answer.blocked, [poisoned], "whenSaved() names the dead letter");
      await assertAppliedInOrder(server, byCanvas);
      const state = await admin(server, "/admin/state");
      assert.equal(state.operations[poisoned], undefined, "the poisoned request applied nothing");
      const healthy = Object.values(byCanvas).flat().length;
      // Released by the host once the cause is gone: delivered once.
      await faults(server, { poisonOperations: [] });
      await page.evaluate((id) => window.outage.retry(id), poisoned);
      const released = await whenSaved(page, 20_000);
      assert.deepEqual(released.answer.blocked, [], "nothing blocked after retry(id)");
      await assertAppliedInOrder(server, { p: [poisoned] });
      const dead = (await events(page)).filter((event) => event.type === "dead_lettered");
      assert.equal(dead.length, 1, "one dead letter in all");
      return `dead-lettered ${after} ms after enqueue (deadLetterAfterMs ${RETRY.deadLetterAfterMs}), ${healthy} healthy edits applied meanwhile, released by retry(id) and applied once`;
    } finally {
      await close();
    }
  },
};

const only = (process.env.OUTAGES_ONLY ?? "").split(",").filter(Boolean);
const names = Object.keys(SCENARIOS).filter((name) => only.length === 0 || only.includes(name));
const statics = await serve();
let passed = 0;
let failed = 0;
try {
  for (const engine of enginesToRun()) {
    const browser = await launch(engine);
    const started = Date.now();
    try {
      // WebKitWebDriver drives one session at a time: there the scenarios take turns.
      const results =
        engine === "webkit"
          ? await names.reduce(async (done, name) => [...(await done), ...(await Promise.allSettled([SCENARIOS[name](browser, statics)]))], [])
          : await Promise.allSettled(names.map((name) => SCENARIOS[name](browser, statics)));
      results.forEach((result, i) => {
        if (result.status === "fulfilled") {
          passed += 1;
          print(`ok - ${engine} ${names[i]}: ${result.value}`);
        } else {
          failed += 1;
          print(`not ok - ${engine} ${names[i]}: ${result.reason?.stack ?? result.reason}`);
        }
      });
    } finally {
      await browser.close().catch(() => {});
    }
    print(`${engine}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
} finally {
  await statics.close();
}
print(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
