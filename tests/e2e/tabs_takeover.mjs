// Takeover of the sending tab end-to-end, three tabs (pages of one browser context: one IndexedDB,
// one set of Web Locks, one BroadcastChannel) on one ledger against the reference server:
//   1. a frozen leader: the leading page's main thread is paused through CDP (Debugger.pause)
//      with requests in flight; another tab must steal the lock and take over once the lease
//      has gone unrenewed; when the frozen page resumes it must follow, not send;
//   2. a hidden leader hands over to a visible tab that asks (the visible tab is preferred);
// then every acknowledged operation is applied exactly once and none is lost.
// Every wait is bounded (the whole run too); prints the counts; exits non-zero on failure.
import assert from "node:assert/strict";
import { admin, launchChromium, serve, startReferenceServer } from "../../www/harness.mjs";

const print = (line) => console.log(line);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what, check, timeoutMs) {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await sleep(100);
  }
}

const leaderOf = async (tabs) => {
  const leading = [];
  for (const [name, page] of tabs) {
    const stats = await page.evaluate(() => window.takeover.stats()).catch(() => null);
    if (stats?.leader) leading.push(name);
  }
  return leading;
};

// The lease record as `page` reads it within `ms` ({ lease }), or { blocked } / { failed } (a
// transaction of a paused page blocks the read). Read in a transaction over every store: a
// paused page's readwrite transaction on any of them (the inbox, the operations) would block
// the reads and writes the rest of the test needs as surely as one on the lease.
const readLease = (page, ms) => page.evaluate((ms) => new Promise((done) => {
  const timer = setTimeout(() => done({ blocked: `${ms} ms` }), ms);
  const open = indexedDB.open(new URLSearchParams(location.search).get("db"));
  open.onsuccess = () => {
    const db = open.result;
    const get = db.transaction([...db.objectStoreNames], "readonly").objectStore("ledger_lease").get("lease");
    get.onsuccess = () => { clearTimeout(timer); db.close(); done({ lease: get.result ?? null, now: Date.now() }); };
    get.onerror = () => { clearTimeout(timer); db.close(); done({ failed: "read" }); };
  };
  open.onerror = () => { clearTimeout(timer); done({ failed: "open" }); };
}), ms);
const leaseReadable = async (page, ms) => "lease" in (await readLease(page, ms));

// `page.evaluate` has no timeout of its own: a tab that never answers (say, a follower's write
// held up by a paused tab) would hang the run, so the whole test has a budget.
const BUDGET_MS = 120_000;
setTimeout(() => {
  print(`tabs_takeover: FAILED: over its ${BUDGET_MS / 1000} s budget`);
  process.exit(1);
}, BUDGET_MS).unref();

const statics = await serve();
const browser = await launchChromium();
const server = await startReferenceServer({ runApplyMs: 200 });
const started = Date.now();
let failed = false;
try {
  const context = await browser.newContext();
  const db = `takeover-${Date.now()}`;
  const tabs = new Map();
  for (const name of ["a", "b", "c"]) {
    const page = await context.newPage();
    page.on("pageerror", (error) => print(`page ${name} error: ${error.message}`));
    await page.goto(`${statics.url}/www/tabs/takeover.html?server=${encodeURIComponent(server.url)}&db=${db}&owner=${name}`);
    await page.waitForSelector("body[data-ready]", { state: "attached", timeout: 15_000 });
    await page.evaluate(() => window.takeover.open());
    tabs.set(name, page);
  }
  const acked = new Set();
  const enqueue = async (name, prefix, count) => {
    for (const id of await tabs.get(name).evaluate(([p, n]) => window.takeover.enqueue(p, n), [prefix, count])) acked.add(id);
  };
  assert.deepEqual(await leaderOf(tabs), ["a"], "the first tab leads");

  // 1. Freeze the leader with requests in flight (the server answers slowly).
  await admin(server, "/admin/faults", { latencyMs: 150 });
  await Promise.all([enqueue("a", "a1", 20), enqueue("b", "b1", 20), enqueue("c", "c1", 20)]);
  await until("the leader to have requests in flight", async () => (await tabs.get("a").evaluate(() => window.takeover.stats())).inFlight > 0, 10_000);
  const inFlightAtFreeze = (await tabs.get("a").evaluate(() => window.takeover.stats())).inFlight;
  const cdp = await context.newCDPSession(tabs.get("a"));
  // Chrome does not freeze a page that holds a Web Lock (Page.setWebLifecycleState changes
  // nothing here), so the leader is frozen the way a debugger or a stalled main thread does it.
  // A page paused inside an IndexedDB transaction keeps it open, and every other tab's reads of
  // those stores wait until it resumes: no tab can take over, and no follower can write its
  // inbox, then (a browser limit, not the scheduler's). So the freeze is retried until another
  // tab can read every store.
  const others = new Map([...tabs].filter(([name]) => name !== "a"));
  await cdp.send("Debugger.enable");
  let pauses = 0;
  for (;;) {
    // An idle page pauses only when its next callback runs, which may be inside a
    // transaction: the lease is read once the pause has landed, not when it was asked for.
    const paused = new Promise((resolve) => cdp.once("Debugger.paused", () => resolve(true)));
    await cdp.send("Debugger.pause");
    pauses += 1;
    if (!(await Promise.race([paused, sleep(3_000).then(() => false)]))) throw new Error("Debugger.pause did not land within 3 s");
    if (await leaseReadable(others.get("b"), 500)) break;
    if (pauses >= 10) throw new Error("every pause landed inside an IndexedDB transaction");
    await cdp.send("Debugger.resume");
    await sleep(30);
  }
  if (pauses > 1) print(`paused ${pauses} times: the earlier pauses landed inside an IndexedDB transaction`);
  const frozenAt = Date.now();
  const takeoverMs = await until("another tab to take over from the frozen leader", async () => (await leaderOf(others)).length === 1, 15_000).catch(async (error) => {
    for (const [name, page] of others) print(`${name} lease: ${JSON.stringify(await readLease(page, 2000))}; locks ${JSON.stringify(await page.evaluate(() => navigator.locks.query()))}`);
    for (const [name, page] of others) print(`${name}: ${JSON.stringify(await page.evaluate(() => window.takeover.stats()))} ${JSON.stringify((await page.evaluate(() => window.takeover.events())).slice(-3))}`);
    throw error;
  });
  const [successor] = await leaderOf(others);
  await Promise.all([enqueue("b", "b2", 10), enqueue("c", "c2", 10)]);
  await cdp.send("Debugger.resume");
  const resumedAt = Date.now();
  await until("the resumed tab to follow", async () => !(await tabs.get("a").evaluate(() => window.takeover.stats())).leader, 10_000);
  const aEvents = await tabs.get("a").evaluate(() => window.takeover.events());
  assert.ok(aEvents.some((e) => e.type === "leader_changed" && e.leader === false), "the resumed tab heard it lost the lead");
  await enqueue("a", "a2", 10); // through the inbox now
  print(`frozen leader (${inFlightAtFreeze} requests in flight): ${successor} took over ${takeoverMs} ms after the freeze (leaseMs 1000); a followed ${Date.now() - resumedAt} ms after resuming (frozen ${resumedAt - frozenAt} ms)`);

  // 2. The leader becomes hidden; a visible follower asks and gets the lead.
  await admin(server, "/admin/faults", { latencyMs: 0 });
  await until("the successor to drain", async () => (await tabs.get(successor).evaluate(() => window.takeover.stats())).inFlight === 0 &&
    (await tabs.get(successor).evaluate(() => window.takeover.stats())).pending === 0, 30_000);
  await tabs.get(successor).evaluate(() => window.takeover.hide());
  await tabs.get("a").evaluate(() => window.takeover.show());
  const handoverMs = await until("the visible tab a to lead", async () => (await leaderOf(tabs)).join() === "a", 10_000);
  await enqueue(successor, "s3", 10);
  await enqueue("a", "a3", 10);
  print(`handover: hidden ${successor} handed the lead to visible a in ${handoverMs} ms`);

  // Everything acknowledged applied exactly once.
  const ids = [...acked];
  await until("every acknowledged operation applied", async () => {
    const state = await admin(server, "/admin/state");
    return ids.every((id) => state.operations[id]);
  }, 30_000);
  await sleep(500);
  const state = await admin(server, "/admin/state");
  const twice = Object.entries(state.operations).filter(([, op]) => op.applications > 1).map(([id]) => id);
  const lost = ids.filter((id) => !state.operations[id]);
  const leaders = await leaderOf(tabs);
  print(`tabs_takeover: ${ids.length} acknowledged, ${Object.keys(state.operations).length} applied, ${twice.length} twice, ${lost.length} lost, leaders now [${leaders}]`);
  assert.deepEqual(twice, [], "no operation applied twice");
  assert.deepEqual(state.invariants.operationsAppliedMoreThanOnce, []);
  assert.deepEqual(lost, [], "nothing acknowledged lost");
  assert.equal(leaders.length, 1, "one leader at the end");
  await context.close();
} catch (error) {
  failed = true;
  print(`FAILED: ${error.stack ?? error}`);
} finally {
  await server.close();
  await browser.close();
  await statics.close();
}
print(`tabs_takeover: ${failed ? "FAILED" : "passed"} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(failed ? 1 : 0);
