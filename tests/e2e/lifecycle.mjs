// The page lifecycle, handled by the library itself (no stop() on pagehide in the page,
// www/lifecycle/), against the reference server, in Chromium with its back/forward cache on:
//   1. one tab, page mode and worker mode: work enqueued before leaving (some of it on the wire
//      when the page leaves) and after coming back is applied exactly once, and the scheduler
//      dispatches again after the restore, with no user code;
//   2. two tabs: while one is hidden in the back/forward cache the other takes over and
//      dispatches, and the hidden one is still restored from the cache (holding no Web Lock,
//      no BroadcastChannel and no transaction that the other tab's traffic would evict it
//      for), though it left with a request on the wire;
//   3. freeze and resume (Page Lifecycle API, driven by CDP Page.setWebLifecycleState): a frozen
//      leader hands over at once (well before its lease would lapse), and dispatches again or
//      follows after resume.
// A restore is proven three ways: the page's pageshow says persisted, its JS state survived
// (the same load id), and CDP reported no Page.backForwardCacheNotUsed for it.
//   4. Firefox and WebKit (through www/engines.mjs: WebDriver BiDi, plain WebDriver): the one-tab
//      round trip of 1 in page mode, where the engine's driver gives a back/forward cache round
//      trip at all: a plain page (www/lifecycle/plain.html) is tried first, and an engine that
//      loads even that one again says so in the output (no freeze there: no driver can). WebKit
//      restores the scheduler's page; Firefox keeps no page that has held a Web Lock in its
//      cache and loads it again, so there the test checks that the new page delivers the work.
// Every wait is bounded; exits non-zero on failure.
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import puppeteer from "puppeteer-core";
import { enginesToRun, launch, unsupported } from "../../www/engines.mjs";
import { admin, CHROMIUM_ARGS, chromiumPath, serve, startReferenceServer } from "../../www/harness.mjs";

const print = (line) => console.log(`lifecycle: ${line}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what, check, timeoutMs = 20_000) {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await sleep(100);
  }
}

const BUDGET_MS = 170_000;
setTimeout(() => {
  console.error(`lifecycle: FAILED: over its ${BUDGET_MS / 1000} s budget`);
  process.exit(1);
}, BUDGET_MS).unref();

const statics = await serve();
const server = await startReferenceServer({ runApplyMs: 100 });
// Playwright turns the back/forward cache off by default (--disable-back-forward-cache).
const browser = await chromium.launch({
  executablePath: chromiumPath(),
  headless: true,
  args: CHROMIUM_ARGS,
  ignoreDefaultArgs: ["--disable-back-forward-cache"],
});
const failures = [];
const run = async (name, test) => {
  const started = Date.now();
  try {
    await test();
    print(`ok: ${name} (${Date.now() - started} ms)`);
  } catch (error) {
    failures.push(`${name}: ${error?.stack ?? error}`);
    print(`FAILED: ${name}: ${error?.message ?? error}`);
  }
};

let runs = 0;
/** A tab of ledger `db` in `context`, with a CDP session recording cache misses. */
async function openTab(context, { db, owner, mode = "page", leaseMs = 2000 }) {
  const page = await context.newPage();
  page.on("console", (message) => {
    // A query answered 404 (a request the server never got: it is sent again) is logged by
    // the browser as a failed resource; not a problem.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) print(`${owner}: ${message.text()}`);
  });
  page.on("pageerror", (error) => print(`${owner}: page error ${error.message}`));
  const cdp = await context.newCDPSession(page);
  const notUsed = [];
  cdp.on("Page.backForwardCacheNotUsed", (event) => notUsed.push(event));
  await cdp.send("Page.enable");
  const url = `${statics.url}/www/lifecycle/?server=${encodeURIComponent(server.url)}&db=${db}&owner=${owner}&mode=${mode}&leaseMs=${leaseMs}`;
  await page.goto(url);
  await page.waitForSelector("body[data-status]", { timeout: 30_000 });
  assert.equal(await page.getAttribute("body", "data-status"), "ready", `${owner} opened`);
  return { page, cdp, notUsed, owner, loadId: await page.evaluate(() => window.life.loadId) };
}

const stats = (tab) => tab.page.evaluate(() => window.life.stats());
const heard = (tab) => tab.page.evaluate(() => window.life.heard());
const enqueue = (tab, ids, canvas) => tab.page.evaluate(([ids, canvas]) => window.life.enqueue(ids, canvas), [ids, canvas]);

/** Leaves for another page and comes back with the back button; asserts a cache restore. */
async function roundTrip(tab, whileAway = async () => {}) {
  const shownBefore = (await heard(tab)).lifecycle.filter((e) => e === "pageshow:true").length;
  await tab.page.goto(`${statics.url}/www/lifecycle/away.html`);
  await whileAway();
  await tab.page.goBack({ waitUntil: "commit" });
  await tab.page.waitForFunction(() => window.life !== undefined, null, { timeout: 10_000 });
  const restored = await tab.page.evaluate(() => ({
    loadId: window.life.loadId,
    notRestored: performance.getEntriesByType("navigation")[0]?.notRestoredReasons ?? null,
  }));
  const shows = (await heard(tab)).lifecycle.filter((e) => e === "pageshow:true").length;
  assert.equal(tab.notUsed.length, 0, `${tab.owner}: not restored from the back/forward cache: ${JSON.stringify(tab.notUsed)} ${JSON.stringify(restored.notRestored)}`);
  assert.equal(restored.loadId, tab.loadId, `${tab.owner}: the page was loaded again, not restored`);
  assert.equal(shows, shownBefore + 1, `${tab.owner}: no pageshow with persisted: true`);
}

/** Every id applied exactly once on the server, and each of `heardIds` (default: all) settled
 * once in the onEvent of one of `tabs`. */
async function appliedOnce(ids, tabs, heardIds = ids) {
  await until(`${ids.length} operations applied`, async () => {
    const state = await admin(server, "/admin/state");
    return ids.every((id) => state.operations[id]);
  });
  const state = await admin(server, "/admin/state");
  for (const id of ids) assert.equal(state.operations[id].applications, 1, `${id} applied ${state.operations[id].applications} times`);
  assert.deepEqual(state.invariants.keysAppliedMoreThanOnce, [], "no request applied twice");
  await until("every operation settled in its tab", async () => {
    const settled = {};
    for (const tab of tabs) Object.assign(settled, (await heard(tab)).settled);
    return heardIds.every((id) => settled[id] !== undefined);
  });
  for (const tab of tabs) {
    for (const [id, count] of Object.entries((await heard(tab)).settled)) assert.equal(count, 1, `${tab.owner} heard ${id} settle ${count} times`);
  }
}

/** One tab: some work on the wire when the page leaves, more after it comes back. */
async function oneTab(mode) {
  runs += 1;
  const context = await browser.newContext();
  try {
    const tab = await openTab(context, { db: `life-one-${mode}-${runs}`, owner: `one-${mode}-${runs}`, mode });
    const before = Array.from({ length: 6 }, (_, i) => `${tab.owner}:before-${i}`);
    await enqueue(tab, before.slice(0, 3), "canvas-a");
    await until("the first work applied", async () => {
      const state = await admin(server, "/admin/state");
      return before.slice(0, 3).every((id) => state.operations[id]);
    });
    // The next requests wait 800 ms at the server: they are on the wire when the page leaves.
    await admin(server, "/admin/faults", { latencyMs: 800 });
    await enqueue(tab, before.slice(3), "canvas-b");
    await until("a request on the wire", async () => (await stats(tab)).inFlight > 0, 5_000);
    await roundTrip(tab, async () => {
      await admin(server, "/admin/faults", { latencyMs: 0 });
      await sleep(1_000);
    });
    await until("the restored tab leads again", async () => {
      const s = await stats(tab);
      return s.leader && s.idleReason !== "paused";
    });
    const after = [`${tab.owner}:after-0`, `${tab.owner}:after-1`];
    await enqueue(tab, after, "canvas-a");
    await appliedOnce([...before, ...after], [tab]);
    const lifecycle = (await heard(tab)).lifecycle;
    print(`${mode} mode: page events ${lifecycle.join(", ")}; ${before.length + after.length} operations applied once`);
  } finally {
    await context.close();
  }
}

/** Two tabs: the hidden one's dispatch goes to the other, and it is still restored. */
async function twoTabs() {
  runs += 1;
  const context = await browser.newContext();
  try {
    const db = `life-two-${runs}`;
    const a = await openTab(context, { db, owner: `a-${runs}` });
    await until("tab a leads", async () => (await stats(a)).leader);
    const b = await openTab(context, { db, owner: `b-${runs}` });
    const early = [`${a.owner}:0`, `${b.owner}:0`];
    // a's request waits 300 ms at the server: on the wire when a leaves, so a pauses with the
    // attempt's log unwritten (the pause writes nothing, and aborts any batch it was writing:
    // a transaction a kept open in the cache would get it evicted once b writes).
    await admin(server, "/admin/faults", { latencyMs: 300 });
    await enqueue(a, [early[0]], "canvas-a");
    await enqueue(b, [early[1]], "canvas-b");
    await until("a request of a on the wire", async () => (await stats(a)).inFlight > 0, 5_000);
    let takeoverMs = null;
    const away = [`${b.owner}:away-0`, `${b.owner}:away-1`];
    await roundTrip(a, async () => {
      await admin(server, "/admin/faults", { latencyMs: 0 });
      takeoverMs = await until("tab b takes over while a is hidden", async () => (await stats(b)).leader, 5_000);
      // b enqueues, dispatches and relays on the channel while a sits in the cache.
      await enqueue(b, away, "canvas-a");
      // a's own first operation settles in a, which hears it once it is back.
      await appliedOnce([...early, ...away], [b], [early[1], ...away]);
    });
    const later = [`${a.owner}:back-0`, `${b.owner}:back-0`];
    await until("tab a rejoins, following", async () => {
      const s = await stats(a);
      return s.idleReason !== "paused" && s.leaderOwner === b.owner;
    });
    await enqueue(a, [later[0]], "canvas-b");
    await enqueue(b, [later[1]], "canvas-a");
    await appliedOnce([...early, ...away, ...later], [a, b]);
    const leaders = [await stats(a), await stats(b)].filter((s) => s.leader).length;
    assert.equal(leaders, 1, "one tab dispatches");
    print(`two tabs: b took over ${takeoverMs} ms after a left; a restored from the cache and follows`);
  } finally {
    await context.close();
  }
}

/** Freeze and resume: a frozen leader hands over at once; after resume it works again.
 * Through puppeteer-core: Playwright keeps its pages visible (focus emulation), and Chromium
 * freezes only a hidden page, so Page.setWebLifecycleState has no effect on them. */
async function freezeResume() {
  runs += 1;
  const browser = await puppeteer.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
  const open = async (owner) => {
    const page = await browser.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") print(`${owner}: ${message.text()}`);
    });
    await page.goto(`${statics.url}/www/lifecycle/?server=${encodeURIComponent(server.url)}&db=${db}&owner=${owner}&leaseMs=10000`);
    await page.waitForSelector("body[data-status]", { timeout: 30_000 });
    assert.equal(await page.evaluate(() => document.body.dataset.status), "ready", `${owner} opened`);
    return { page, cdp: await page.createCDPSession(), owner };
  };
  const db = `life-freeze-${runs}`;
  try {
    // A 10 s lease: a takeover within 3 s is the frozen tab handing over, not its lease lapsing.
    const a = await open(`fa-${runs}`);
    await until("tab a leads", async () => (await stats(a)).leader);
    const b = await open(`fb-${runs}`);
    await enqueue(a, [`${a.owner}:0`], "canvas-a");
    await appliedOnce([`${a.owner}:0`], [a]);
    await a.cdp.send("Page.setWebLifecycleState", { state: "frozen" });
    const takeoverMs = await until("tab b takes over from the frozen tab", async () => (await stats(b)).leader, 3_000);
    const during = [`${b.owner}:during-0`, `${b.owner}:during-1`];
    await enqueue(b, during, "canvas-b");
    await appliedOnce([`${a.owner}:0`, ...during], [b], during);
    await a.cdp.send("Page.setWebLifecycleState", { state: "active" });
    await until("tab a resumes, following", async () => {
      const s = await stats(a);
      return s.idleReason !== "paused" && s.leaderOwner === b.owner;
    });
    const after = [`${a.owner}:after-0`];
    await enqueue(a, after, "canvas-a");
    await appliedOnce([`${a.owner}:0`, ...during, ...after], [a, b]);
    const events = (await heard(a)).lifecycle;
    assert.ok(events.includes("freeze") && events.includes("resume"), `freeze and resume reached the page: ${events}`);
    // Alone: frozen and resumed, the tab leads and dispatches again.
    await b.page.close();
    await until("tab a leads alone", async () => (await stats(a)).leader);
    await a.cdp.send("Page.setWebLifecycleState", { state: "frozen" });
    await sleep(300);
    await a.cdp.send("Page.setWebLifecycleState", { state: "active" });
    await until("tab a leads again after a resume", async () => {
      const s = await stats(a);
      return s.leader && s.idleReason !== "paused";
    });
    await enqueue(a, [`${a.owner}:alone`], "canvas-b");
    await appliedOnce([`${a.owner}:alone`], [a]);
    print(`freeze: b took over ${takeoverMs} ms after a froze (lease 10 s); a resumed as follower, then as leader alone (${events.join(", ")})`);
  } finally {
    await browser.close();
  }
}

/** Away and back through history.back() (every driver can evaluate); whether `page` was
 * restored from the cache: the same load id, and a pageshow with persisted: true. */
async function backAndForth(page) {
  const before = await page.evaluate(() => ({ id: window.loadId, shows: window.shows.length }));
  await page.goto(`${statics.url}/www/lifecycle/away.html`);
  await sleep(500);
  await page.evaluate(() => {
    setTimeout(() => history.back(), 50);
    return true;
  });
  await page.waitFor("the page back", () => typeof window.loadId === "string" && document.body.dataset.status === "ready", undefined, 15_000);
  const after = await page.evaluate(() => ({ id: window.loadId, shows: window.shows }));
  return after.id === before.id && after.shows.length === before.shows + 1 && after.shows.at(-1) === true;
}

/** The one-tab round trip in another engine, where its driver gives one. */
async function otherEngine(engine) {
  const browser = await launch(engine);
  try {
    const context = await browser.newContext();
    const plain = await context.newPage();
    await plain.goto(`${statics.url}/www/lifecycle/plain.html`);
    if (!(await backAndForth(plain))) {
      print(unsupported(`${engine} ${browser.version}`, "a back/forward cache round trip under its driver: even a plain page is loaded again"));
      return;
    }
    // A page of its own (Firefox's driver loses track of a page's navigations after a
    // history traversal it did not start).
    const page = await context.newPage();
    page.onProblem((line) => print(`${engine}: ${line}`));
    runs += 1;
    const owner = `${engine}-${runs}`;
    await page.goto(`${statics.url}/www/lifecycle/?server=${encodeURIComponent(server.url)}&db=life-${owner}&owner=${owner}`);
    await page.waitFor("the lifecycle page", () => document.body.dataset.status, undefined, 30_000);
    assert.equal(await page.evaluate(() => document.body.dataset.status), "ready");
    const before = [`${owner}:before-0`, `${owner}:before-1`];
    await page.evaluate((ids) => window.life.enqueue(ids, "canvas-a"), before);
    const restored = await backAndForth(page);
    if (!restored) {
      // Firefox keeps no page that has held a Web Lock (its decision is taken before
      // pagehide, where the scheduler lets its locks go): the page is loaded again, and the
      // new page's scheduler must deliver what the old one left.
      print(`${engine} ${browser.version}: the scheduler's page is loaded again on the way back, not restored from the cache (a plain page is restored)`);
    }
    await until("the restored tab leads again", async () => {
      const s = await page.evaluate(() => window.life.stats());
      return s.leader && s.idleReason !== "paused";
    });
    const after = [`${owner}:after-0`];
    await page.evaluate((ids) => window.life.enqueue(ids, "canvas-b"), after);
    await until(`${engine}: every operation applied`, async () => {
      const state = await admin(server, "/admin/state");
      return [...before, ...after].every((id) => state.operations[id]);
    });
    const state = await admin(server, "/admin/state");
    for (const id of [...before, ...after]) assert.equal(state.operations[id].applications, 1, `${id} applied more than once`);
    const heard = await page.evaluate(() => window.life.heard());
    for (const [id, count] of Object.entries(heard.settled)) assert.equal(count, 1, `${id} settled ${count} times`);
    print(`${engine} ${browser.version}: ${restored ? "restored from the back/forward cache" : "loaded again"} (${heard.lifecycle.join(", ")}); 3 operations applied once`);
  } finally {
    await browser.close();
  }
}

const chromiumToo = enginesToRun().includes("chromium");
try {
  if (chromiumToo) {
    await run("one tab, page mode: back/forward cache round trip", () => oneTab("page"));
    await run("one tab, worker mode: back/forward cache round trip", () => oneTab("worker"));
    await run("two tabs: the other takes over while one is in the cache", twoTabs);
    await run("freeze and resume (CDP Page.setWebLifecycleState)", freezeResume);
  }
  for (const engine of enginesToRun().filter((e) => e !== "chromium")) {
    await run(`${engine}: back/forward cache round trip`, () => otherEngine(engine));
  }
} finally {
  await browser.close();
  await server.close();
  await statics.close();
}
if (failures.length > 0) {
  console.error(failures.join("\n"));
  process.exit(1);
}
print(`${(chromiumToo ? 4 : 0) + enginesToRun().filter((e) => e !== "chromium").length} passed, 0 failed`);
