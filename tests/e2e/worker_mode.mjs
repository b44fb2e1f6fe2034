// Worker mode end-to-end: the package's `canvas-scheduler/worker` proxy, as
// served from the repository (worker/), in headless Chromium against the reference server.
// Each test gets a fresh browser context and ledger; the page is www/worker/ (window.wm).
//   durable enqueue (reload right after it resolves, reopen: applied exactly once), onEvent,
//   error codes and names, blob upload (same bytes), hold/release, settle, stop, flush, retry,
//   discard, explain/stats/claims from the mirror, a custom worker with a compile hook and the
//   page's headers hook, refused options, a partial enqueueMany, and a terminated worker.
// WORKER_MODE_ONLY=<text> runs the tests whose name contains it. Every wait is bounded, the
// whole run too; prints "N passed, N failed"; exits 1 on a failure.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { admin, launchChromium, serve, startReferenceServer } from "../../www/harness.mjs";

const say = (line) => console.log(`worker_mode: ${line}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const BUDGET_MS = 180_000;
setTimeout(() => {
  console.error(`worker_mode: FAILED: over its ${BUDGET_MS / 1000} s budget`);
  process.exit(1);
}, BUDGET_MS).unref();

async function until(what, check, timeoutMs = 10_000) {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await sleep(50);
  }
}

const shape = (id, canvasId = "canvas-1", extra = {}) => ({
  id,
  operationType: "shape.upsert",
  canvasIds: [canvasId],
  payload: { shapeId: `s-${id}`, shape: { x: 1, y: 2, fill: "#123456", ...extra } },
});

let counter = 0;
const unique = (prefix) => `${prefix}-${Date.now().toString(36)}-${(counter += 1)}`;

const statics = await serve();
const server = await startReferenceServer();
const browser = await launchChromium();
const appliedOnce = async (id) => {
  const state = await admin(server, "/admin/state");
  assert.equal(state.operations[id]?.applications, 1, `the server applied ${id} exactly once`);
  assert.deepEqual(state.invariants.operationsAppliedMoreThanOnce, []);
  return state;
};

/** A fresh context and page on a fresh ledger; `body(page, db)`. */
async function withPage(body) {
  const context = await browser.newContext();
  const db = unique("wm");
  try {
    const page = await context.newPage();
    page.on("pageerror", (error) => say(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error") say(`page console: ${message.text()}`);
    });
    const goto = async () => {
      await page.goto(`${statics.url}/www/worker/?server=${encodeURIComponent(server.url)}&db=${db}`);
      await page.waitForSelector("body[data-ready]", { state: "attached", timeout: 10_000 });
    };
    await goto();
    await body(page, goto);
  } finally {
    await context.close();
  }
}
const open = (page, options) => page.evaluate((options) => window.wm.open(options), options);
const settledEvent = (page, id) => until(`${id} settled`, () => page.evaluate((id) => window.wm.settled(id), id));

const tests = [
  ["enqueue resolves when durable: the worker killed and the page reloaded as it resolves; each op applied once", async () => {
    await withPage(async (page, goto) => {
      await open(page, { custom: "default", start: false });
      const ids = [1, 2, 3, 4, 5].map(() => unique("durable"));
      // In the task the last enqueue resolves in: terminate the worker (nothing it had not
      // written survives) and reload the page; no stop(), no pagehide handling.
      const navigated = page.waitForNavigation({ timeout: 10_000 });
      // Handled here too, so that a failure before it is awaited fails this test, not the run.
      navigated.catch(() => {});
      await page
        .evaluate(async (intents) => {
          for (const intent of intents) await window.wm.scheduler.enqueue(intent);
          window.wm.worker.terminate();
          location.reload();
        }, ids.map((id) => shape(id)))
        // The reload may destroy the page's context before the call's answer leaves it.
        .catch((error) => {
          if (!/context was destroyed|navigat/i.test(String(error?.message ?? error))) throw error;
        });
      await navigated;
      await goto();
      await open(page, { start: false });
      const before = await page.evaluate(async (ids) => {
        await window.wm.scheduler.sync(ids);
        return ids.map((id) => window.wm.scheduler.operation(id)?.phase ?? "missing");
      }, ids);
      assert.deepEqual(before, ids.map(() => "pending"), "the reopened ledger holds every acknowledged operation");
      assert.deepEqual(Object.keys((await admin(server, "/admin/state")).operations).filter((id) => ids.includes(id)), [], "not sent before start()");
      await page.evaluate(() => window.wm.scheduler.start());
      for (const id of ids) {
        assert.equal((await settledEvent(page, id)).outcome, "applied");
        await appliedOnce(id);
      }
    });
  }],
  ["onEvent gets the events; explain, operation, stats and claims answer from the mirror; events(), resume(), retryAllNow(), known()", async () => {
    await withPage(async (page) => {
      await open(page);
      const id = unique("events");
      await page.evaluate((intent) => window.wm.scheduler.enqueue(intent), shape(id));
      const settled = await settledEvent(page, id);
      assert.equal(settled.outcome, "applied");
      assert.match(settled.requestId, /./);
      const seen = await page.evaluate(async (id) => {
        const s = window.wm.scheduler;
        const now = { explain: s.explain(id), record: s.operation(id), stats: s.stats(), types: window.wm.events.map((e) => e.type) };
        await s.resume(); // nothing failed: resolves
        await s.retryAllNow(); // nothing waits for a retry: resolves
        const known = await s.known([id, "never-enqueued"]);
        return { ...now, known, log: await s.events({ limit: 1000 }) };
      }, id);
      assert.equal(seen.known.length, 2, "known(ids) answers each id, in order");
      assert.equal(seen.known[0]?.intent?.id, id, "known(): the worker's ledger holds the settled operation");
      assert.equal(seen.known[0]?.outcome?.settlement, "applied");
      assert.ok(seen.known[1] == null, `known(): an id never enqueued is undefined, got ${JSON.stringify(seen.known[1])}`);
      assert.ok(seen.log.some((entry) => entry.requestId === settled.requestId), `events() names ${settled.requestId}: ${JSON.stringify(seen.log.slice(-5))}`);
      assert.ok(seen.log.every((entry, i) => i === 0 || entry.seq > seen.log[i - 1].seq), "events() in seq order");
      assert.ok(seen.types.includes("leader_changed"), `events: ${seen.types}`);
      assert.equal(seen.explain.state, "resolved", "the mirror is as fresh as the settled event");
      assert.equal(seen.record.outcome.settlement, "applied");
      assert.equal(seen.stats.leader, true);
      assert.ok(seen.stats.settled >= 1, `stats.settled ${seen.stats.settled}`);
      // The claim goes once the request's settlement is written: the worker's 100 ms poll
      // brings that to the mirror with no call made.
      await until("the mirror's claims to empty", () => page.evaluate(() => Object.keys(window.wm.scheduler.claims()).length === 0));
      await appliedOnce(id);
    });
  }],
  ["errors keep their name, code and intent: invalid_intent, duplicate_operation, unknown_operation", async () => {
    await withPage(async (page) => {
      await open(page, { start: false });
      const id = unique("dup");
      const got = await page.evaluate(async ({ good, changed }) => {
        const { wm } = window;
        await wm.scheduler.enqueue(good);
        return {
          invalid: await wm.outcome(wm.scheduler.enqueue({ id: "bad id!", operationType: "shape.upsert" })),
          duplicate: await wm.outcome(wm.scheduler.enqueue(changed)),
          unknown: await wm.outcome(wm.scheduler.flush("no-such-op")),
          again: await wm.outcome(wm.scheduler.enqueue(good)),
          many: await wm.outcome(wm.scheduler.enqueueMany([good, { id: "bad id!", operationType: "shape.upsert" }])),
        };
      }, { good: shape(id), changed: shape(id, "canvas-2") });
      assert.equal(got.many.code, "invalid_intent", JSON.stringify(got.many));
      assert.equal(got.many.index, 1, `enqueueMany names the intent it refused: ${JSON.stringify(got.many)}`);
      assert.equal(got.many.operationId, "bad id!");
      assert.equal(got.duplicate.index, 0);
      assert.equal(got.duplicate.operationId, id);
      for (const [what, code] of [["invalid", "invalid_intent"], ["duplicate", "duplicate_operation"], ["unknown", "unknown_operation"]]) {
        assert.equal(got[what].isError, true, `${what} is an Error`);
        assert.equal(got[what].name, "CanvasSchedulerError", `${what}: ${JSON.stringify(got[what])}`);
        assert.equal(got[what].code, code, `${what}: ${JSON.stringify(got[what])}`);
        assert.match(got[what].message, /./);
      }
      assert.equal(got.again, "ok", "the same intent again resolves (not added twice)");
    });
  }],
  ["enqueueMany with { atomic: false }: the valid intents stored, a result each; the default all or none; bad options refused", async () => {
    await withPage(async (page) => {
      await open(page, { start: false, extra: { maxPayloadBytes: 1024 } });
      const [a, big, b] = [unique("pa"), unique("pbig"), unique("pb")];
      const got = await page.evaluate(async (intents) => {
        const { wm } = window;
        const s = wm.scheduler;
        const atomic = await wm.outcome(s.enqueueMany(intents));
        const afterAtomic = await s.known(intents.map((intent) => intent.id));
        const badOptions = await Promise.all([{ atomic: "yes" }, { atomic: false, extra: 1 }, { atomic: () => false }]
          .map((options) => wm.outcome(s.enqueueMany(intents, options))));
        const afterBad = await s.known(intents.map((intent) => intent.id));
        const results = await s.enqueueMany(intents, { atomic: false });
        await s.sync(intents.map((intent) => intent.id));
        const stored = intents.map((intent) => s.operation(intent.id)?.intent.sequence ?? null);
        return { atomic, afterAtomic, badOptions, afterBad, results, stored, pending: s.stats().pending };
      }, [
        shape(a),
        { ...shape(big), payload: { image: "x".repeat(2048) } },
        { id: "bad id!", operationType: "shape.upsert" },
        { ...shape(b, "canvas-2"), dependencies: [a] },
      ]);
      assert.equal(got.atomic.code, "payload_too_large", JSON.stringify(got.atomic));
      assert.equal(got.atomic.index, 1);
      assert.ok(got.afterAtomic.every((known) => known == null), `the default stored nothing: ${JSON.stringify(got.afterAtomic)}`);
      for (const refused of got.badOptions) {
        assert.equal(refused.code, "invalid_options", JSON.stringify(refused));
        assert.equal(refused.name, "CanvasSchedulerError");
      }
      assert.ok(got.afterBad.every((known) => known == null), `bad options stored nothing: ${JSON.stringify(got.afterBad)}`);
      assert.deepEqual(got.results.map((result) => (result.ok ? "ok" : result.code)), ["ok", "payload_too_large", "invalid_intent", "ok"]);
      for (const result of got.results.filter((result) => !result.ok)) assert.match(result.message, /./);
      assert.deepEqual(got.stored, [1, null, null, 2], "stored in order, sequences as if the refused were absent");
      assert.equal(got.pending, 2);
    });
  }],
  ["an asset.upload's Blob crosses to the worker and arrives with the same bytes", async () => {
    await withPage(async (page) => {
      await open(page);
      const id = unique("upload");
      const bytes = [...randomBytes(3000)];
      await page.evaluate(({ id, bytes }) => window.wm.scheduler.enqueue({
        id, operationType: "asset.upload", canvasIds: ["canvas-up"], payload: { name: "noise.bin" },
        blob: new Blob([new Uint8Array(bytes)], { type: "application/octet-stream" }),
      }), { id, bytes });
      assert.equal((await settledEvent(page, id)).outcome, "applied");
      const state = await appliedOnce(id);
      const assets = Object.entries(state.canvases["canvas-up"].document.assets);
      assert.equal(assets.length, 1);
      const [assetId, asset] = assets[0];
      assert.equal(asset.size, bytes.length);
      const stored = await fetch(`${server.url}/assets/${assetId}`, { signal: AbortSignal.timeout(5000) });
      assert.deepEqual([...new Uint8Array(await stored.arrayBuffer())], bytes, "the stored bytes are the blob's");
    });
  }],
  ["hold() holds new work from the next message on; its release sends; enqueueMany; settle() waits", async () => {
    await withPage(async (page) => {
      await open(page);
      const id = unique("held");
      const held = await page.evaluate(async (intent) => {
        const s = window.wm.scheduler;
        window.release = s.hold();
        await s.enqueue(intent);
        await new Promise((resolve) => setTimeout(resolve, 400));
        return { stats: s.stats(), explain: s.explain(intent.id) };
      }, shape(id));
      assert.equal(held.stats.idleReason, "held", JSON.stringify(held.stats));
      assert.equal(held.explain.state, "pending");
      assert.equal((await admin(server, "/admin/state")).operations[id], undefined, "nothing sent while held");
      const ids = [unique("settle"), unique("settle")];
      const after = await page.evaluate(async (intents) => {
        const s = window.wm.scheduler;
        window.release();
        window.release(); // twice is harmless
        await s.enqueueMany(intents);
        await s.settle();
        return s.stats();
      }, ids.map((i) => shape(i, "canvas-s")));
      assert.equal(after.inFlight, 0, "settle() resolved with nothing in flight");
      await settledEvent(page, id);
      for (const each of [id, ...ids]) {
        await settledEvent(page, each);
        await appliedOnce(each);
      }
    });
  }],
  ["whenSaved() waits in the worker until applied; pending() comes through the mirror", async () => {
    await withPage(async (page) => {
      await open(page);
      const id = unique("saved");
      const seen = await page.evaluate(async (intent) => {
        const s = window.wm.scheduler;
        const release = s.hold();
        await s.enqueue(intent);
        await s.sync([intent.id]);
        const pending = s.pending();
        let saved;
        const waiting = s.whenSaved().then((v) => (saved = v));
        await new Promise((resolve) => setTimeout(resolve, 300));
        const early = saved;
        release();
        await waiting;
        await s.sync();
        return { pending, early, saved, after: s.pending() };
      }, shape(id, "canvas-w"));
      assert.deepEqual(seen.pending.map((e) => [e.id, e.state, e.canvasIds.join()]), [[id, "queued", "canvas-w"]], JSON.stringify(seen.pending));
      assert.equal(seen.early, undefined, "not saved while held");
      assert.deepEqual(seen.saved, { settled: 1, blocked: [] });
      await appliedOnce(id);
      assert.deepEqual(seen.after, []);
    });
  }],
  ["flush, discard and retry go through the worker", async () => {
    await withPage(async (page) => {
      await open(page); // retry: at most 3 attempts, 50-200 ms apart
      const [kept, dropped, dead] = [unique("flush"), unique("discard"), unique("dead")];
      const flushed = await page.evaluate(async ({ a, b }) => {
        const s = window.wm.scheduler;
        const release = s.hold();
        await s.enqueue(a);
        await s.enqueue(b);
        await s.discard(b.id);
        const result = await s.flush(a.id);
        release();
        return { result, discarded: s.explain(b.id), record: s.operation(b.id) };
      }, { a: shape(kept, "canvas-f"), b: shape(dropped, "canvas-g") });
      assert.equal(typeof flushed.result.started, "boolean");
      assert.equal(flushed.result.explanation.operationId, kept);
      assert.equal(flushed.discarded.state, "resolved");
      assert.equal(flushed.record.outcome.settlement, "discarded");
      assert.equal((await settledEvent(page, dropped)).outcome, "discarded");
      assert.equal((await settledEvent(page, kept)).outcome, "applied");

      // A proxy's HTML 400 dead-letters the request at once (poison, where a 503 outage
      // never dead-letters).
      await admin(server, "/admin/faults", { proxyRefusal: true });
      try {
        await page.evaluate((intent) => window.wm.scheduler.enqueue(intent), shape(dead, "canvas-d"));
        await until("dead_lettered", () => page.evaluate((id) => window.wm.events.some((e) => e.type === "dead_lettered" && e.operationIds.includes(id)), dead));
      } finally {
        await admin(server, "/admin/faults", { proxyRefusal: false });
      }
      const reason = await page.evaluate((id) => window.wm.scheduler.explain(id).reason, dead);
      assert.equal(reason, "dead_letter");
      await page.evaluate((id) => window.wm.scheduler.retry(id), dead);
      assert.equal((await settledEvent(page, dead)).outcome, "applied");
      await appliedOnce(dead);
    });
  }],
  ["stop() is final: later calls reject scheduler_closed, start() throws it, stats say stopped", async () => {
    await withPage(async (page) => {
      await open(page);
      const got = await page.evaluate(async (intent) => {
        const { wm } = window;
        wm.scheduler.stop();
        return {
          stats: wm.scheduler.stats(),
          enqueue: await wm.outcome(wm.scheduler.enqueue(intent)),
          start: wm.thrown(() => wm.scheduler.start()),
          later: await wm.outcome(new Promise((resolve) => setTimeout(resolve, 200)).then(() => wm.scheduler.settle())),
        };
      }, shape(unique("stopped")));
      assert.equal(got.stats.idleReason, "stopped");
      assert.equal(got.enqueue.code, "scheduler_closed", JSON.stringify(got.enqueue));
      assert.equal(got.start.code, "scheduler_closed");
      assert.equal(got.later.code, "scheduler_closed");
      assert.equal(got.later.name, "CanvasSchedulerError");
      // The ledger is free again: the same page opens a new worker on it at once.
      await open(page);
    });
  }],
  ["a custom worker: compile and participants run in the worker and read its scheduler, headers and authorize are asked of the page", async () => {
    await withPage(async (page) => {
      await open(page, { custom: "hooks" });
      const id = unique("compiled");
      await page.evaluate((intent) => window.wm.scheduler.enqueue(intent), shape(id, "canvas-c"));
      assert.equal((await settledEvent(page, id)).outcome, "applied");
      const state = await appliedOnce(id);
      assert.equal(state.canvases["canvas-c"].document.shapes[`s-${id}`].compiledBy, "worker");
      // The hooks read the worker's scheduler mid-step; hold is refused there.
      const sent = state.canvases["canvas-c"].document.shapes[`s-${id}`];
      for (const hook of ["readInCompile", "readInParticipants"]) {
        assert.deepEqual(sent[hook], { reason: "ready", pending: true, record: true, leader: true, claims: true, hold: "threw invalid_state" }, hook);
      }
      assert.ok((await page.evaluate(() => window.wm.headerCalls.count)) >= 1, "the page's headers hook was asked");
      const authorized = await page.evaluate(() => window.wm.authorizeCalls);
      assert.ok(authorized.some((ids) => ids.includes(id)), `the page's authorize hook saw the request: ${JSON.stringify(authorized)}`);
      // The worker's coalesce hook merges three intents of one key into the
      // last, in one enqueueMany; the replaced ones keep no payload.
      const drags = [1, 2, 3].map((x) => ({ ...shape(unique("drag"), "canvas-d", { x }), coalesceKey: "drag:d" }));
      for (const drag of drags) drag.payload.shapeId = "s-dragged";
      await page.evaluate((intents) => window.wm.scheduler.enqueueMany(intents), drags);
      assert.equal((await settledEvent(page, drags[2].id)).outcome, "applied");
      const dragged = (await appliedOnce(drags[2].id)).canvases["canvas-d"].document.shapes["s-dragged"];
      assert.deepEqual([dragged.x, dragged.merges, dragged.coalescedIn, dragged.olderWasPending], [3, 2, "worker", true]);
      const replaced = await page.evaluate((id) => window.wm.scheduler.operation(id), drags[0].id);
      assert.equal(replaced?.intent.payload, null, JSON.stringify(replaced));
    });
  }],
  ["what cannot cross to a worker is refused with invalid_options", async () => {
    await withPage(async (page) => {
      const got = await page.evaluate(async () => ({
        compile: await window.wm.openFails({ compile: () => ({ payload: null, canvasIds: [] }) }),
        participants: await window.wm.openFails({ participants: () => [] }),
        coalesce: await window.wm.openFails({ coalesce: () => null }),
        transport: await window.wm.openFails({ transport: { submit() {}, query() {} } }),
        clone: await window.wm.openFails({ retry: { baseMs: () => 1 } }),
        twice: await window.wm.openFails({ headers: async () => ({}) }, "./headers.worker.js"),
      }));
      for (const [what, error] of Object.entries(got)) {
        assert.equal(error.code, "invalid_options", `${what}: ${JSON.stringify(error)}`);
        assert.equal(error.name, "CanvasSchedulerError");
      }
      assert.match(got.compile.message, /serve\(\{ compile \}\)/);
      assert.match(got.twice.message, /headers given both/);
    });
  }],
  ["a terminated worker: pending calls reject scheduler_closed, as does an open it ends; opening again works", async () => {
    await withPage(async (page) => {
      await open(page, { custom: "hooks" });
      const got = await page.evaluate(async (intent) => {
        const { wm } = window;
        await wm.scheduler.settle();
        const pending = wm.outcome(wm.scheduler.flush("anything"));
        wm.worker.terminate();
        const first = await pending;
        return { first, later: await wm.outcome(wm.scheduler.enqueue(intent)) };
      }, shape(unique("dead-worker")));
      assert.equal(got.first.code, "scheduler_closed", JSON.stringify(got.first));
      assert.match(got.first.message, /worker ended/);
      assert.equal(got.later.code, "scheduler_closed");
      const during = await page.evaluate(() => window.wm.openFails({}, "./dies.worker.js"));
      assert.equal(during.code, "scheduler_closed", `a worker that ends during open: ${JSON.stringify(during)}`);
      await open(page);
      const id = unique("reopened");
      await page.evaluate((intent) => window.wm.scheduler.enqueue(intent), shape(id));
      assert.equal((await settledEvent(page, id)).outcome, "applied");
    });
  }],
];

let passed = 0;
let failed = 0;
try {
  for (const [name, body] of tests) {
    if (process.env.WORKER_MODE_ONLY && !name.includes(process.env.WORKER_MODE_ONLY)) continue;
    const started = Date.now();
    try {
      await body();
      passed += 1;
      say(`ok ${name} (${Date.now() - started} ms)`);
    } catch (error) {
      failed += 1;
      console.error(`worker_mode: FAILED ${name}: ${error.stack ?? error}`);
    }
  }
} finally {
  await browser.close();
  await server.close();
  await statics.close();
}
console.log(`worker_mode: ${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
