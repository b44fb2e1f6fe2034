// A full disk in a real browser: the origin's storage quota set through CDP
// (Storage.overrideQuotaForOrigin, before the page first opens its storage) to 3 MB, the
// chaos page (www/chaos) enqueueing edits of incompressible text while the reference server
// is down (its `offline` fault). No test calls resume(). Two tests, each with its own server,
// browser context and ledger:
//   1. a write too big for what is left: ten 60 KB edits, then a paste of twelve 250 KB edits
//      in one enqueueMany, refused (`storage_unavailable`) while smaller writes still fit. The
//      scheduler tries storage again on its own and says `storage_recovered`; with the server
//      back, every acknowledged edit is delivered at the same quota; once the quota is lifted,
//      the refused paste is enqueued again and delivered.
//   2. the origin filled up (the setup): 60 KB edits until one is refused. What is left
//      may hold a lease renewal but not the next freeze (past the quota Chromium refuses every
//      write, even a few hundred bytes), so delivery stalls: with the server back, the test
//      waits 15 s and reports what was delivered meanwhile. Once the quota is lifted, every
//      acknowledged edit is delivered with no app code at all (no resume(), no enqueue), and
//      enqueues work again.
// Both: every acknowledged edit applied exactly once, none lost, none of the refused ones ever
// reached the server, `storage_failed` (named QuotaExceededError) and `storage_recovered` seen.
// Chromium only: no other engine here sets an origin's quota (the output says so).
// Every wait is bounded, and so is the whole run. Exits 1 if a check failed.
import assert from "node:assert/strict";
import { enginesToRun, launch, unsupported } from "../../www/engines.mjs";
import { admin, serve, startReferenceServer } from "../../www/harness.mjs";

const print = (line) => console.log(`e2e quota: ${line}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const BUDGET_MS = 240_000;
setTimeout(() => {
  console.error(`e2e quota: FAILED: over its ${BUDGET_MS / 1000} s budget`);
  process.exit(1);
}, BUDGET_MS).unref();

const QUOTA_BYTES = 3_000_000;
/** Characters of incompressible text in an edit. */
const SMALL = 60_000;
/** Test 1: edits before the paste, and the paste: intents of `BIG` characters (3.0 MB in all). */
const EDITS = 10;
const PASTE = 12;
const BIG = 250_000;
const AT_QUOTA_MS = 15_000;
const DRAIN_MS = 90_000;
const OFFLINE = { offline: true };
const ONLINE = { offline: false, latencyMs: 0, dropAfterApplyRate: 0, serverErrorRate: 0, tooManyRate: 0 };

/** The chaos page on a fresh ledger, the quota set before it opens its storage. */
async function open(context, statics, server, name) {
  const cdp = await context.raw.newCDPSession(await context.raw.newPage());
  await cdp.send("Storage.overrideQuotaForOrigin", { origin: statics.url, quotaSize: QUOTA_BYTES });
  const page = await context.newPage();
  page.onProblem((line) => print(`  ${line}`));
  const query = new URLSearchParams({ server: server.url, db: `quota-${name}-${Date.now()}`, seed: "7", epoch: name });
  await page.goto(`${statics.url}/www/chaos/?${query}`);
  const status = await page.waitFor(`${name}: the chaos page`, () => document.body?.dataset.status, undefined, 40_000);
  if (status !== "ready") throw new Error(`${name}: chaos page status ${status}`);
  return { page, liftQuota: () => cdp.send("Storage.overrideQuotaForOrigin", { origin: statics.url }) };
}

/** One edit of `pad` characters: { id } once durable, or { id, code, message } if refused. */
const enqueue = (page, pad) =>
  page.evaluate(async (n) => {
    try {
      const [id] = await window.chaos.burst(1, n);
      return { id };
    } catch (error) {
      return { id: error.operationId, code: error.code, message: error.message };
    }
  }, pad);

const usage = (page) => page.evaluate(async () => (await navigator.storage.estimate()).usage ?? 0);
const storageEvents = async (page) => (await page.evaluate(() => window.chaos.events())).storage;
const applied = async (server) => (await admin(server, "/admin/state")).operations;

/** Waits (bounded) until every id in `acked` is applied and nothing is pending. */
async function delivered(page, server, acked, what) {
  const deadline = Date.now() + DRAIN_MS;
  for (;;) {
    const operations = await applied(server);
    const stats = await page.evaluate(() => window.chaos.stats());
    const missing = acked.filter((id) => !operations[id]);
    if (missing.length === 0 && stats.pending === 0) return operations;
    if (Date.now() > deadline) {
      throw new Error(`${what}: ${missing.length} of ${acked.length} acknowledged edits not applied after ${DRAIN_MS / 1000} s; stats ${JSON.stringify(stats)}`);
    }
    await sleep(250);
  }
}

/** Exactly once each, and none of the refused ones. */
function assertClean(operations, acked, refused) {
  for (const id of acked) assert.equal(operations[id]?.applications, 1, `${id} applied once`);
  for (const id of refused) assert.equal(operations[id], undefined, `refused ${id} never reached the server`);
  const twice = Object.entries(operations).filter(([, op]) => op.applications > 1);
  assert.deepEqual(twice, [], "nothing applied twice");
}

/** storage_failed (QuotaExceededError) came, then storage_recovered, and that is the last word. */
function assertRecovered(events) {
  const failed = events.filter((e) => e.type === "storage_failed");
  assert.ok(failed.length >= 1, "storage_failed was said");
  assert.ok(failed.every((e) => e.name === "QuotaExceededError"), `named: ${JSON.stringify(failed)}`);
  assert.equal(events[0].type, "storage_failed");
  assert.equal(events.at(-1).type, "storage_recovered", "storage works again");
}

/** Test 1: a write too big for what is left; delivery goes on at the same quota. */
async function tooBig({ context, statics, server, say }) {
  await admin(server, "/admin/faults", OFFLINE);
  const { page, liftQuota } = await open(context, statics, server, "big");
  const acked = [];
  for (let i = 0; i < EDITS; i += 1) {
    const result = await enqueue(page, SMALL);
    assert.equal(result.code, undefined, `edit ${i} fits: ${result.message}`);
    acked.push(result.id);
  }
  // A paste: one enqueueMany (one transaction) bigger than what is left.
  const refused = await page.evaluate(
    ([n, pad]) => window.chaos.burstMany(n, pad).then(() => null, (error) => ({ code: error.code, ids: error.operationIds, message: error.message })),
    [PASTE, BIG],
  );
  assert.ok(refused, "the quota never refused the paste");
  assert.equal(refused.code, "storage_unavailable", refused.message);
  const left = await usage(page);
  say(`${acked.length} edits acknowledged, then a paste of ${PASTE} × ${BIG} characters refused at ${left} bytes used of ${QUOTA_BYTES}: ${refused.message}`);
  assert.ok(left < QUOTA_BYTES - 1_000_000, "smaller writes still fit");
  // With no app code the scheduler tries storage again (a lease renewal fits): it recovers.
  const deadline = Date.now() + 20_000;
  while ((await storageEvents(page)).at(-1)?.type !== "storage_recovered" && Date.now() < deadline) await sleep(200);
  assertRecovered(await storageEvents(page));
  await admin(server, "/admin/faults", ONLINE);
  const started = Date.now();
  const operations = await delivered(page, server, acked, "at the same quota");
  say(`server back: all ${acked.length} delivered in ${((Date.now() - started) / 1000).toFixed(1)} s at ${QUOTA_BYTES} bytes, no resume()`);
  assertClean(operations, acked, refused.ids);
  // Space comes back: the refused paste, enqueued again, is stored and delivered.
  await liftQuota();
  const again = await page.evaluate((ids) => window.chaos.enqueueManyAgain(ids).then(() => null, (e) => e.code), refused.ids);
  assert.equal(again, null, "the refused paste enqueued again once the quota is lifted");
  const all = [...acked, ...refused.ids];
  assertClean(await delivered(page, server, all, "after the quota was lifted"), all, []);
  assertRecovered(await storageEvents(page));
  return `${acked.length} delivered at the quota, the refused paste of ${PASTE} after it was lifted; storage events ${JSON.stringify((await storageEvents(page)).map((e) => e.type))}`;
}

/** Test 2: the origin filled up; delivery waits for space, with no app code. */
async function overQuota({ context, statics, server, say }) {
  await admin(server, "/admin/faults", OFFLINE);
  const { page, liftQuota } = await open(context, statics, server, "over");
  const acked = [];
  const refused = [];
  for (let i = 0; i < 200 && refused.length === 0; i += 1) {
    const result = await enqueue(page, SMALL);
    if (result.code) refused.push(result);
    else acked.push(result.id);
  }
  assert.equal(refused.length, 1, "the quota never refused an edit");
  assert.equal(refused[0].code, "storage_unavailable", refused[0].message);

  say(`${acked.length} edits acknowledged, then refused (${refused.length}) at ${await usage(page)} bytes used of ${QUOTA_BYTES}: ${refused[0].message}`);
  await admin(server, "/admin/faults", ONLINE);
  await sleep(AT_QUOTA_MS);
  const whileOver = await applied(server);
  const atQuota = acked.filter((id) => whileOver[id]).length;
  const events = await storageEvents(page);
  say(`server back for ${AT_QUOTA_MS / 1000} s at the quota: ${atQuota} of ${acked.length} delivered, ${await usage(page)} bytes used; storage events ${JSON.stringify(events.map((e) => e.type))}`);
  assert.equal(events[0]?.type, "storage_failed", "storage_failed was said");
  assert.equal(events[0].name, "QuotaExceededError");
  // Space comes back: no resume(), no enqueue: the scheduler's own try writes, and it delivers.
  await liftQuota();
  const started = Date.now();
  const operations = await delivered(page, server, acked, "after the quota was lifted");
  say(`quota lifted: all ${acked.length} delivered ${((Date.now() - started) / 1000).toFixed(1)} s later, no app code`);
  assertRecovered(await storageEvents(page));
  assertClean(operations, acked, refused.map((r) => r.id));
  const after = await enqueue(page, SMALL);
  assert.equal(after.code, undefined, "enqueue works again");
  const all = [...acked, after.id];
  assertClean(await delivered(page, server, all, "the new edit"), all, refused.map((r) => r.id));
  return `${acked.length} acknowledged, ${atQuota} delivered at the quota, all once it was lifted, 0 lost, 0 refused sent`;
}

const TESTS = [
  ["a write too big for what is left: delivered at the same quota, no resume()", tooBig],
  ["the origin filled up: delivered once space returns, no app code", overQuota],
];

const statics = await serve();
let passed = 0;
let failed = 0;
try {
  for (const engine of enginesToRun()) {
    if (engine !== "chromium") {
      for (const [name] of TESTS) print(`ok - ${engine} ${name} # SKIP ${unsupported(engine, "an origin quota set through CDP (Storage.overrideQuotaForOrigin)")}`);
      continue;
    }
    const browser = await launch(engine);
    try {
      for (const [name, test] of TESTS) {
        const started = Date.now();
        const server = await startReferenceServer({ runApplyMs: 200 });
        const context = await browser.newContext();
        try {
          const result = await test({ context, statics, server, say: (line) => print(`  ${line}`) });
          passed += 1;
          print(`ok - ${engine} ${name} (${((Date.now() - started) / 1000).toFixed(1)} s): ${result}`);
        } catch (error) {
          failed += 1;
          print(`not ok - ${engine} ${name}: ${error.stack ?? error}`);
        } finally {
          await context.close().catch(() => {});
          await server.close().catch(() => {});
        }
      }
    } finally {
      await browser.close();
    }
  }
} finally {
  await statics.close();
}
print(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
