// Several tabs on one ledger, end to end: the tabs page (www/tabs) in three
// pages of ONE browser context (so they share IndexedDB, BroadcastChannel and Web Locks), all
// on the same ledger, against the reference server (www/server) with mild faults on, in each
// engine of www/engines.mjs (ENGINES=chromium,firefox,webkit; default wasm-pack.toml's [test]
// engines; each engine's run is this script again, as a child process with TABS_ENGINE set).
// Every tab enqueues concurrently on 4 shared canvases. Mid-burst the leader tab is closed, then
// the next leader's renderer is crashed (CDP Page.crash; in firefox and webkit, which have no
// such command, the leader is closed instead and the output says so) while it has requests in
// flight; each time a replacement tab opens, so three stay alive (TABS_ROUNDS rounds of close + crash).
// Meanwhile every ~200 ms every live tab's stats() is sampled: at most one may say leader.
// Then, faults off, the live tabs settle, and from the server's admin state:
//   - every acknowledged operation (its enqueue promise resolved) applied exactly once, none
//     lost, no operation and no idempotency key applied twice;
//   - per-canvas order: for each tab and canvas, the tab's operations were applied in the order
//     the tab enqueued them; and on each canvas all operations in ledger sequence order, with
//     sequences unique across tabs (from the dispatching tab's view of the ledger);
//   - stats().leaderOwner converges to the leader's owner in every tab;
//   - each tab got a `settled` event for each of its acknowledged operations applied while it
//     was alive (whichever tab sent it); `leader_changed` events were seen and a takeover
//     followed every kill.
// Seeded: TABS_SEED=<n> replays the same choices (timing on a real browser still varies).
// TABS_COUNT=1 runs the same scenario with one tab at a time (each kill followed by a fresh
// tab), for a build without multi-tab support. TABS_PKG=<dir> serves the package's web build
// from <dir> instead of pkg/web (e.g. one built from a clean checkout of a commit).
// TABS_NO_LOCKS=1 (chromium only: it needs an init script) hides `navigator.locks` from every
// page (as in a browser without Web Locks):
// the fenced lease alone elects the leader, and a crashed leader is replaced once its lease
// lapses (tests/e2e/tabs_without_locks.mjs). Every loop and wait is bounded; the whole run is
// bounded by LIMIT_MS. Exits non-zero on any failed check; the last line is the summary.
import { spawnSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { join, normalize } from "node:path";
import { enginesToRun, launch, unsupported } from "../../www/engines.mjs";
import { admin, mulberry32, ROOT, startReferenceServer } from "../../www/harness.mjs";

const SEED = process.env.TABS_SEED !== undefined ? Number(process.env.TABS_SEED) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
const TABS = Math.max(1, Math.min(5, Number(process.env.TABS_COUNT ?? 3)));
const ROUNDS = Math.max(1, Math.min(5, Number(process.env.TABS_ROUNDS ?? 2)));
const PKG_DIR = process.env.TABS_PKG ?? join(ROOT, "pkg", "web");
const NO_LOCKS = process.env.TABS_NO_LOCKS === "1";
const LIMIT_MS = 115_000;
const READY_MS = 30_000;
const LEADER_WAIT_MS = 15_000;
const MIDFLIGHT_WAIT_MS = 3_000;
const DRAIN_MS = 40_000;
const SETTLE_MS = 20_000;
const CONVERGE_MS = 8_000;
const SAMPLE_MS = 200;
// A tab that died at time T must have seen `settled` for its operations applied before T - GRACE.
const GRACE_MS = 3_000;

const started = performance.now();
const print = (line) => console.log(line);
const say = (line) => print(`  ${line}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)}s`;

const random = mulberry32(SEED);
const between = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));

/** `promise`, or a rejection after `ms`. */
function within(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, fail) => {
      timer = setTimeout(() => fail(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const FAULTS_OFF = { latencyMs: 0, dropAfterApplyRate: 0, serverErrorRate: 0, tooManyRate: 0, offline: false };

const failures = [];
const fail = (message) => {
  failures.push(message);
  say(`FAIL: ${message}`);
};

// ---- tabs ---------------------------------------------------------------------------------------

/** owner -> { owner, page, alive, openedAt, diedAt, how, acked, settled, leaderChanges, ... } */
const tabs = new Map();
const ackedAt = new Map(); // id -> when the test heard of its acknowledgement
const startedAt = Date.now();
let nextTab = 1;
const liveTabs = () => [...tabs.values()].filter((tab) => tab.alive);

async function openTab(context, statics, server, db) {
  const owner = `tab-${nextTab}`;
  nextTab += 1;
  const tab = {
    owner,
    page: null,
    alive: false,
    openedAt: Date.now(),
    diedAt: null,
    how: null,
    acked: new Set(),
    settled: new Map(), // from the binding: id -> outcome (the record of a tab that died)
    settledEvents: 0,
    leaderChanges: [],
    problems: [],
    enqueueErrors: [],
    final: null, // events() read at the end from a live tab
  };
  tabs.set(owner, tab);
  const page = await context.newPage();
  tab.page = page;
  // Failed fetches are expected (injected faults, aborted requests of a closing tab): not printed.
  page.onProblem((line) => say(`${owner} ${line}`));
  await page.expose("tabsAck", (id) => {
    tab.acked.add(id);
    ackedAt.set(id, Date.now());
  });
  await page.expose("tabsEvent", (event) => {
    if (event.type === "settled") {
      tab.settledEvents += 1;
      tab.settled.set(event.operationId, event.outcome);
    } else if (event.type === "leader_changed") {
      tab.leaderChanges.push(event);
    } else if (event.type === "enqueue_error") {
      tab.enqueueErrors.push(event);
    } else if (tab.problems.length < 50) {
      tab.problems.push(event);
    }
  });
  const query = new URLSearchParams({ server: server.url, db, seed: String(SEED), owner });
  if (TABS === 1) query.set("retryOpen", "1");
  await page.goto(`${statics.url}/www/tabs/?${query}`);
  const status = await page.waitFor(`${owner} ready`, () => document.body?.dataset.status, undefined, READY_MS);
  if (status !== "ready") {
    const error = await page.evaluate(() => document.body.dataset.error);
    throw new Error(`${owner}: Scheduler.open failed: ${error}`);
  }
  if (NO_LOCKS && (await page.evaluate(() => navigator.locks !== undefined))) {
    throw new Error(`${owner}: navigator.locks is still there`);
  }
  tab.alive = true;
  tab.readyAt = Date.now();
  say(`${owner} open (${tab.readyAt - tab.openedAt} ms) at ${elapsed()}`);
  return tab;
}

const stats = (tab, ms = 3000) => within(tab.page.evaluate(() => window.tabs.stats()), ms, `${tab.owner} stats()`);

/** Every live tab's stats (null where it did not answer). */
async function snapshot() {
  const alive = liveTabs();
  const all = await Promise.all(alive.map((tab) => stats(tab).catch(() => null)));
  return alive.map((tab, i) => ({ tab, stats: all[i] }));
}

/** The one live tab whose stats say leader, waiting (bounded) for there to be exactly one. */
async function findLeader(ms = LEADER_WAIT_MS) {
  const deadline = Date.now() + ms;
  for (let round = 0; round < 1000; round += 1) {
    const snap = await snapshot();
    const leaders = snap.filter((s) => s.stats?.leader === true);
    if (leaders.length === 1) return { tab: leaders[0].tab, stats: leaders[0].stats };
    if (Date.now() > deadline) return null;
    await sleep(50);
  }
  return null;
}

// ---- the leader sampler -------------------------------------------------------------------------

const sampler = {
  samples: 0,
  violations: [],
  noLeader: 0,
  leaderSeq: [], // distinct leaders in sampling order
  paused: false,
  stopped: false,
  current: Promise.resolve(),
  loop: null,
};

async function sampleOnce() {
  const snap = await snapshot();
  // A tab killed while this sample ran is left out (its reading predates its death).
  const live = snap.filter((s) => s.tab.alive && s.stats !== null);
  sampler.samples += 1;
  const leaders = live.filter((s) => s.stats.leader === true);
  if (leaders.length > 1) {
    sampler.violations.push(
      leaders.map((s) => ({ owner: s.tab.owner, at: s.stats.at, fence: s.stats.fence, leaderOwner: s.stats.leaderOwner })),
    );
  }
  if (leaders.length === 0) sampler.noLeader += 1;
  if (leaders.length === 1) {
    const owner = leaders[0].tab.owner;
    if (sampler.leaderSeq.at(-1)?.owner !== owner) sampler.leaderSeq.push({ owner, at: leaders[0].stats.at });
  }
}

function startSampler() {
  sampler.loop = (async () => {
    for (let round = 0; round < 2000 && !sampler.stopped; round += 1) {
      const t0 = Date.now();
      if (!sampler.paused) {
        sampler.current = sampleOnce().catch((error) => say(`sampler: ${error.message}`));
        await sampler.current;
      }
      await sleep(Math.max(10, SAMPLE_MS - (Date.now() - t0)));
    }
  })();
}

/** Pauses the sampler (after the sample under way) around a kill. */
async function withSamplerPaused(action) {
  sampler.paused = true;
  await sampler.current;
  try {
    return await action();
  } finally {
    sampler.paused = false;
  }
}

// ---- kills --------------------------------------------------------------------------------------

const kills = []; // { how, owner, at, midFlight, inFlight, takeoverMs, newLeader }

async function startRun(tab) {
  const options = { minGapMs: 40, maxGapMs: 200, manyRate: 0.3, maxOps: 1500 };
  await within(tab.page.evaluate((o) => window.tabs.run(o), options), 5000, `${tab.owner} run()`);
}

async function killLeader(wanted, world) {
  // No renderer crash outside chromium: the leader is closed instead (said once, at the start).
  const how = wanted === "crash" && !world.browser.can.crash ? "close" : wanted;
  const found = await findLeader();
  if (!found) {
    fail(`before the ${how}: no single leader among ${liveTabs().map((t) => t.owner).join(", ")} within ${LEADER_WAIT_MS} ms`);
    return;
  }
  const leader = found.tab;
  const kill = { how, owner: leader.owner, at: 0, midFlight: false, inFlight: 0, takeoverMs: null, newLeader: null };
  kills.push(kill);
  if (wanted === "crash") {
    // Mid-flight: wait (bounded) until the leader has a request in flight.
    const deadline = Date.now() + MIDFLIGHT_WAIT_MS;
    for (let i = 0; i < 500 && Date.now() < deadline; i += 1) {
      const s = await stats(leader).catch(() => null);
      if (s && s.inFlight > 0) {
        kill.midFlight = true;
        kill.inFlight = s.inFlight;
        break;
      }
      await sleep(15);
    }
  }
  const runBeforeUnload = how === "close" && random() < 0.5;
  await withSamplerPaused(async () => {
    leader.alive = false;
    leader.how = how === "close" ? (runBeforeUnload ? "closed (runBeforeUnload)" : "closed") : "crashed";
    kill.at = Date.now();
    kill.when = elapsed();
    leader.diedAt = kill.at;
    if (how === "close") {
      await within(leader.page.close({ runBeforeUnload }), 10_000, `${leader.owner} close`).catch((e) => fail(e.message));
    } else if (!(await leader.page.crash())) {
      fail(`${leader.owner}: Page.crash did not crash the renderer`);
    }
  });
  // One tab at a time (TABS_COUNT=1): the replacement is the only candidate, open it first.
  if (liveTabs().length === 0) {
    const tab = await openTab(world.context, world.statics, world.server, world.db);
    await startRun(tab);
  }
  const deadline = kill.at + LEADER_WAIT_MS;
  for (let i = 0; i < 2000 && Date.now() < deadline; i += 1) {
    const snap = await snapshot();
    const leaders = snap.filter((s) => s.stats?.leader === true);
    if (leaders.length >= 1) {
      kill.takeoverMs = Math.min(...leaders.map((s) => s.stats.at)) - kill.at;
      kill.newLeader = leaders.map((s) => s.tab.owner).join("+");
      break;
    }
    await sleep(25);
  }
  say(
    `${leader.how} leader ${leader.owner} at ${kill.when} (+${kill.at - startedAt} ms)` +
      (how === "crash" ? (kill.midFlight ? ` with ${kill.inFlight} in flight` : " (nothing in flight within 3 s)") : "") +
      `: ${kill.newLeader ? `${kill.newLeader} took over in ${kill.takeoverMs} ms` : "no takeover"}`,
  );
  if (kill.newLeader === null) fail(`no tab took over within ${LEADER_WAIT_MS} ms after ${leader.owner} was ${leader.how}`);
  // A replacement, so TABS stay alive.
  if (liveTabs().length < TABS) {
    const tab = await openTab(world.context, world.statics, world.server, world.db);
    await startRun(tab);
  }
}

// ---- the scenario -------------------------------------------------------------------------------

async function scenario(world) {
  const { server } = world;
  const latencyMs = between(20, 80);
  await admin(server, "/admin/faults", {
    seed: SEED,
    latencyMs,
    dropAfterApplyRate: 0.05,
    serverErrorRate: 0.03,
    tooManyRate: 0.02,
    retryAfterSeconds: 1,
  });
  say(`faults during the burst: latency ${latencyMs} ms, drop after apply 5%, 503 3%, 429 2% (Retry-After 1 s)`);

  // All tabs open at once: Scheduler.open must resolve in every one.
  const opened = await Promise.allSettled(Array.from({ length: TABS }, () => openTab(world.context, world.statics, world.server, world.db)));
  const refused = opened.filter((r) => r.status === "rejected");
  if (refused.length > 0) throw new Error(`${refused.length} of ${TABS} tabs could not open: ${refused.map((r) => r.reason.message).join("; ")}`);
  const first = await findLeader();
  if (!first) throw new Error(`no single leader among the ${TABS} tabs within ${LEADER_WAIT_MS} ms`);
  say(`first leader: ${first.tab.owner} (fence ${first.stats.fence})`);

  startSampler();
  await Promise.all(liveTabs().map(startRun));
  for (let round = 0; round < ROUNDS; round += 1) {
    await sleep(between(1500, 3000));
    await killLeader("close", world);
    await sleep(between(1500, 3000));
    await killLeader("crash", world);
  }
  await sleep(between(1000, 2000));
  const ends = await Promise.all(liveTabs().map((tab) => within(tab.page.evaluate(() => window.tabs.stopRun()), 10_000, `${tab.owner} stopRun()`)));
  say(`burst over at ${elapsed()} (${ends.length} live tabs stopped enqueueing)`);
  await admin(server, "/admin/faults", FAULTS_OFF);

  // ---- drain: every acknowledged id applied, the leader idle; then settle() in every tab.
  const anyLive = liveTabs()[0];
  const stored = await within(anyLive.page.evaluate(() => window.tabs.acked()), 5000, "acked()");
  for (const [owner, ids] of Object.entries(stored)) {
    const tab = tabs.get(owner);
    if (!tab) {
      fail(`localStorage holds acknowledgements of an unknown tab ${owner}`);
      continue;
    }
    for (const id of ids) tab.acked.add(id);
  }
  const acked = [...tabs.values()].flatMap((tab) => [...tab.acked]);
  const drainStarted = Date.now();
  let state;
  let leaderStats = null;
  let backlog = null; // acknowledged, not yet applied when the burst ended
  for (let i = 0; i < 1000; i += 1) {
    state = await admin(server, "/admin/state");
    backlog ??= acked.filter((id) => !state.operations[id]).length;
    const missing = acked.filter((id) => !state.operations[id]);
    const found = await findLeader(2000);
    leaderStats = found?.stats ?? null;
    if (missing.length === 0 && leaderStats && leaderStats.pending === 0 && leaderStats.inFlight === 0) break;
    if (Date.now() - drainStarted > DRAIN_MS) {
      const view = found ? await found.tab.page.evaluate((some) => window.tabs.ledger(some), missing.slice(0, 5)).catch(() => null) : null;
      fail(
        `not drained after ${DRAIN_MS} ms: ${missing.length} acknowledged not applied (e.g. ${JSON.stringify(view)}), ` +
          `leader stats ${JSON.stringify(leaderStats)}`,
      );
      break;
    }
    await sleep(250);
  }
  const drainMs = Date.now() - drainStarted;
  say(`drained a backlog of ${backlog} acknowledged operations in ${drainMs} ms (${((backlog * 1000) / Math.max(1, drainMs)).toFixed(1)}/s)`);
  const settles = await Promise.allSettled(liveTabs().map((tab) => within(tab.page.evaluate(() => window.tabs.settle()), SETTLE_MS, `${tab.owner} settle()`)));
  for (const r of settles) if (r.status === "rejected") fail(r.reason.message);
  state = await admin(server, "/admin/state");

  // ---- leaderOwner converges to the leader's owner in every tab.
  let converged = null;
  const convergeDeadline = Date.now() + CONVERGE_MS;
  let lastView = null;
  for (let i = 0; i < 400; i += 1) {
    const snap = await snapshot();
    const leaders = snap.filter((s) => s.stats?.leader === true);
    lastView = snap.map((s) => `${s.tab.owner}: leader ${s.stats?.leader} leaderOwner ${s.stats?.leaderOwner}`).join("; ");
    if (leaders.length === 1 && snap.every((s) => s.stats?.leaderOwner === leaders[0].tab.owner)) {
      converged = leaders[0].tab.owner;
      break;
    }
    if (Date.now() > convergeDeadline) break;
    await sleep(100);
  }
  if (converged === null) fail(`stats().leaderOwner did not converge on the leader within ${CONVERGE_MS} ms: ${lastView}`);
  else say(`leaderOwner converged: every live tab says ${converged}`);

  sampler.stopped = true;
  await sampler.loop;

  // ---- events: each live tab's own record (the binding's for the dead), bounded wait for late ones.
  const eventsDeadline = Date.now() + 5000;
  for (let i = 0; i < 50; i += 1) {
    for (const tab of liveTabs()) tab.final = await within(tab.page.evaluate(() => window.tabs.events()), 5000, `${tab.owner} events()`);
    const behind = liveTabs().some((tab) => {
      const seen = new Set(tab.final.settled.map(([id]) => id));
      return [...tab.acked].some((id) => !seen.has(id));
    });
    if (!behind || Date.now() > eventsDeadline) break;
    await sleep(250);
  }

  return check(state, converged);
}

// ---- checks -------------------------------------------------------------------------------------

async function check(state, leaderOwner) {
  const all = [...tabs.values()];
  const acked = all.flatMap((tab) => [...tab.acked]);
  const ackedSet = new Set(acked);
  const ownerOf = (id) => id.slice(0, id.lastIndexOf(":"));
  const indexOf = (id) => Number(id.slice(id.lastIndexOf(":") + 1));
  // A dead tab's enqueue count is not known: at least one more than the highest index seen.
  const enqueuedAtLeast = (owner) =>
    1 + Math.max(-1, ...[...tabs.get(owner).acked, ...Object.keys(state.operations)].filter((id) => ownerOf(id) === owner).map(indexOf));

  // Exactly once, none lost, nothing twice.
  const duplicates = new Set([
    ...state.invariants.operationsAppliedMoreThanOnce,
    ...Object.entries(state.operations).filter(([, op]) => op.applications > 1).map(([id]) => id),
  ]);
  const keysTwice = state.invariants.keysAppliedMoreThanOnce;
  const lost = acked.filter((id) => (state.operations[id]?.applications ?? 0) === 0);
  const notOnce = acked.filter((id) => state.operations[id]?.applications !== 1);
  const appliedIds = Object.keys(state.operations);
  const strangers = appliedIds.filter((id) => !tabs.has(ownerOf(id)) || !Number.isInteger(indexOf(id)));
  if (duplicates.size > 0) fail(`${duplicates.size} operations applied more than once: ${[...duplicates].slice(0, 10).join(", ")}`);
  if (keysTwice.length > 0) fail(`${keysTwice.length} idempotency keys applied more than once: ${keysTwice.slice(0, 10).join(", ")}`);
  if (lost.length > 0) fail(`${lost.length} acknowledged operations lost: ${lost.slice(0, 10).join(", ")}`);
  if (notOnce.length > lost.length) fail(`acknowledged operations not applied exactly once: ${notOnce.filter((id) => !lost.includes(id)).slice(0, 10).join(", ")}`);
  if (strangers.length > 0) fail(`the server applied operations no tab enqueued: ${strangers.slice(0, 10).join(", ")}`);
  if (acked.length === 0) fail("no operation was acknowledged");

  // Per-canvas order (1): each tab's operations on a canvas in the tab's enqueue order.
  const tabOrderFaults = [];
  for (const [canvasId, canvas] of Object.entries(state.canvases)) {
    const last = new Map();
    for (const id of canvas.order) {
      const owner = ownerOf(id);
      const index = indexOf(id);
      if (last.has(owner) && index <= last.get(owner)) tabOrderFaults.push({ canvasId, id, before: `${owner}:${last.get(owner)}` });
      last.set(owner, Math.max(index, last.get(owner) ?? -1));
    }
  }

  // Per-canvas order (2): all operations on a canvas in ledger sequence order, sequences
  // unique across the tabs' enqueues; from the dispatching tab's view of the ledger.
  const sequenceFaults = [];
  const leader = [...tabs.values()].find((tab) => tab.alive && tab.owner === leaderOwner) ?? liveTabs()[0];
  const ledger = await within(leader.page.evaluate((ids) => window.tabs.ledger(ids), appliedIds), 10_000, "ledger()");
  if (tabOrderFaults.length > 0) {
    // With what explains them: sequences, acknowledgement times, when the tab led.
    const detail = (id) => `${id} seq ${ledger[id]?.sequence} acked +${ackedAt.has(id) ? ackedAt.get(id) - startedAt : "?"} ms`;
    const led = (owner) => {
      const changes = tabs.get(owner)?.leaderChanges ?? [];
      return changes.map((e) => `${e.leader ? "leads" : `follows ${e.owner ?? "?"}`} from +${e.at - startedAt} ms`).join(", ");
    };
    fail(
      `${tabOrderFaults.length} per-tab canvas order faults: ${tabOrderFaults
        .slice(0, 10)
        .map(({ canvasId, id, before }) => `${canvasId}: ${detail(id)} applied after ${detail(before)} (${ownerOf(id)}: ${led(ownerOf(id))})`)
        .join("; ")}`,
    );
  }
  const unknown = appliedIds.filter((id) => !ledger[id]);
  if (unknown.length > 0) fail(`${unknown.length} applied operations unknown to ${leader.owner}'s ledger view: ${unknown.slice(0, 10).join(", ")}`);
  const bySequence = new Map();
  for (const id of appliedIds) {
    const sequence = ledger[id]?.sequence;
    if (sequence === undefined) continue;
    if (bySequence.has(sequence)) sequenceFaults.push(`sequence ${sequence} shared by ${bySequence.get(sequence)} and ${id}`);
    bySequence.set(sequence, id);
  }
  for (const [canvasId, canvas] of Object.entries(state.canvases)) {
    let previous = -Infinity;
    let previousId = null;
    for (const id of canvas.order) {
      const sequence = ledger[id]?.sequence;
      if (sequence === undefined) continue;
      if (sequence <= previous) sequenceFaults.push(`${canvasId}: ${id} (sequence ${sequence}) applied after ${previousId} (${previous})`);
      previous = sequence;
      previousId = id;
    }
  }
  if (sequenceFaults.length > 0) fail(`${sequenceFaults.length} sequence faults: ${sequenceFaults.slice(0, 10).join("; ")}`);
  const notResolved = acked.filter((id) => ledger[id] && ledger[id].phase !== "resolved");
  if (notResolved.length > 0) fail(`${notResolved.length} acknowledged operations not resolved in the ledger: ${JSON.stringify(notResolved.slice(0, 5).map((id) => [id, ledger[id]]))}`);

  // Settled events: each tab, for its own acknowledged operations applied while it was alive.
  const settledMissing = [];
  const settledWrong = [];
  let settledForeign = 0;
  let settledRepeated = 0;
  for (const tab of all) {
    const seen = tab.final ? new Map(tab.final.settled.map(([id, outcome, count]) => [id, { outcome, count }])) : new Map([...tab.settled].map(([id, outcome]) => [id, { outcome, count: 1 }]));
    for (const [id, { outcome, count }] of seen) {
      if (ownerOf(id) !== tab.owner) settledForeign += 1;
      if (count > 1) settledRepeated += 1;
      if (ackedSet.has(id) && ownerOf(id) === tab.owner && outcome !== "applied") settledWrong.push(`${tab.owner}: ${id} settled ${outcome}`);
    }
    for (const id of tab.acked) {
      const appliedAt = state.operations[id]?.applied?.[0]?.at;
      if (appliedAt === undefined) continue; // lost: counted above
      const due = tab.alive || appliedAt < tab.diedAt - GRACE_MS;
      if (due && !seen.has(id)) {
        // With what explains it: when and by which request it was applied, who led then.
        const application = state.operations[id].applied[0];
        const request = state.requests[application.requestId] ?? {};
        // Who led then: the sampled leaders and the takeovers seen after kills, by time.
        const timeline = [...sampler.leaderSeq, ...kills.filter((k) => k.newLeader).map((k) => ({ owner: k.newLeader, at: k.at + k.takeoverMs }))].sort((a, b) => a.at - b.at);
        const then = timeline.filter((l) => l.at <= appliedAt).at(-1);
        const leaderThen = then ? `${then.owner}, leading for ${appliedAt - then.at} ms or more` : "?";
        settledMissing.push(
          `${tab.owner}${tab.alive ? "" : ` (${tab.how} at +${tab.diedAt - startedAt} ms)`}: ${id} applied at +${appliedAt - startedAt} ms ` +
            `(request ${application.requestId}: ${request.submits} submits, ${request.queries} queries; leader then ${leaderThen}; acked +${ackedAt.has(id) ? ackedAt.get(id) - startedAt : "?"} ms)`,
        );
      }
    }
  }
  if (settledMissing.length > 0) fail(`${settledMissing.length} settled events missing: ${settledMissing.slice(0, 10).join("; ")}`);
  if (settledWrong.length > 0) fail(`${settledWrong.length} settled events with a wrong outcome: ${settledWrong.slice(0, 10).join("; ")}`);

  // Leadership: one leader per sample, leader_changed seen, a takeover after every kill.
  if (sampler.violations.length > 0) fail(`${sampler.violations.length} samples with more than one leader: ${JSON.stringify(sampler.violations.slice(0, 5))}`);
  const leaderEvents = all.flatMap((tab) => (tab.final ? tab.final.leaderChanges : tab.leaderChanges).map((e) => ({ ...e, tab: tab.owner })));
  const gained = leaderEvents.filter((e) => e.leader === true);
  if (leaderEvents.length === 0) fail("no leader_changed event was seen in any tab");
  for (const kill of kills) {
    const after = gained.filter((e) => e.at >= kill.at && e.tab !== kill.owner);
    if (after.length === 0) fail(`no leader_changed {leader: true} in another tab after ${kill.owner} was ${kill.how === "close" ? "closed" : "crashed"}`);
  }
  const wrongOwner = leaderEvents.filter((e) => e.owner !== undefined && e.leader === true && e.owner !== e.tab);
  if (wrongOwner.length > 0) fail(`leader_changed {leader: true} naming another owner: ${JSON.stringify(wrongOwner.slice(0, 5))}`);

  // Enqueue errors in tabs that stayed alive are bugs (a dying tab's may be cut short).
  for (const tab of all) {
    const errors = tab.final ? tab.final.enqueueErrors : tab.enqueueErrors;
    if (tab.alive && errors.length > 0) fail(`${tab.owner}: ${errors.length} enqueue errors: ${JSON.stringify(errors.slice(0, 3))}`);
    if (tab.alive && tab.acked.size === 0) fail(`${tab.owner}: nothing acknowledged`);
  }

  // ---- the counts.
  for (const tab of all) {
    const final = tab.final;
    const own = [...tab.acked];
    const settledOwn = final ? final.settled.filter(([id]) => ownerOf(id) === tab.owner).length : [...tab.settled.keys()].filter((id) => ownerOf(id) === tab.owner).length;
    const problems = final ? final.problems : tab.problems;
    say(
      `${tab.owner}: ${tab.alive ? "alive" : tab.how}, enqueued ${final ? final.enqueued : `>= ${enqueuedAtLeast(tab.owner)}`}, acknowledged ${own.length}, ` +
        `applied ${own.filter((id) => state.operations[id]).length}, applied (incl. unacknowledged) ${appliedIds.filter((id) => ownerOf(id) === tab.owner).length}, ` +
        `settled events for its own ${settledOwn}, leader_changed ${(final ? final.leaderChanges : tab.leaderChanges).length}` +
        (problems.length > 0 ? `, problems ${JSON.stringify(problems.slice(0, 3)).slice(0, 400)}` : ""),
    );
  }
  const faults = await admin(world.server, "/admin/faults");
  say(`server faults met: ${JSON.stringify(faults.counters)}`);
  say(`leaders in sampling order: ${sampler.leaderSeq.map((l) => `${l.owner} (+${l.at - startedAt} ms)`).join(" -> ")}; ${sampler.samples} samples, ${sampler.noLeader} without a leader, ${sampler.violations.length} with two or more`);
  say(`takeovers: ${kills.map((k) => `${k.how} ${k.owner} -> ${k.newLeader ?? "none"} ${k.takeoverMs ?? "?"} ms${k.how === "crash" ? (k.midFlight ? ` (${k.inFlight} in flight)` : " (not mid-flight)") : ""}`).join(", ")}`);
  const counts = {
    tabs: all.length,
    operations: acked.length,
    applied: appliedIds.length,
    requests: Object.keys(state.requests).length,
    duplicates: duplicates.size,
    keysAppliedTwice: keysTwice.length,
    lost: lost.length,
    tabOrderFaults: tabOrderFaults.length,
    sequenceFaults: sequenceFaults.length,
    settledMissing: settledMissing.length,
    settledForeign,
    settledRepeated,
    leaderChangedEvents: leaderEvents.length,
    leaderSamples: sampler.samples,
    twoLeaderSamples: sampler.violations.length,
    takeoverMs: kills.map((k) => k.takeoverMs),
  };
  say(`counts: ${JSON.stringify(counts)}`);
  return counts;
}

// ---- static files ------------------------------------------------------------------------------

const CONTENT_TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".wasm": "application/wasm", ".ts": "text/plain; charset=utf-8" };

/**
 * The tabs page and the built package on 127.0.0.1: like www/harness.mjs's serve(), but the
 * package may come from TABS_PKG. (A Playwright route cannot stand in for a server: chromium then
 * treats the page as public and refuses its fetches to the loopback reference server.)
 */
async function serveTabs() {
  const served = ["www/tabs/", "www/shared/", "pkg/web/"];
  // pkg/web/<name> comes from PKG_DIR.
  const fileOf = (path) => (path.startsWith("pkg/web/") ? join(PKG_DIR, path.slice("pkg/web/".length)) : join(ROOT, path.endsWith("/") ? `${path}index.html` : path));
  const server = createServer(async (request, response) => {
    let path = null;
    try {
      path = normalize(decodeURIComponent(new URL(request.url, "http://x").pathname)).replace(/^\/+/, "");
    } catch {
      path = null;
    }
    if (request.method !== "GET" || path === null || path.split("/").includes("..") || !served.some((dir) => path.startsWith(dir))) {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    const file = fileOf(path);
    try {
      const body = await readFile(file);
      const type = CONTENT_TYPES[file.slice(file.lastIndexOf("."))] ?? "application/octet-stream";
      response.writeHead(200, { "content-type": type, "cache-control": "no-store" }).end(body);
    } catch {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  await new Promise((ready, failed) => {
    server.once("error", failed);
    server.listen(0, "127.0.0.1", ready);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((closed) => {
        server.close(closed);
        server.closeAllConnections();
      }),
  };
}

// ---- runner -------------------------------------------------------------------------------------

// Without TABS_ENGINE: this script once per engine, each in its own process (the scenario's
// state is module-wide), every child bounded by its own LIMIT_MS.
if (process.env.TABS_ENGINE === undefined) {
  const engines = NO_LOCKS ? ["chromium"] : enginesToRun();
  if (NO_LOCKS) print(`e2e tabs: without Web Locks in chromium only: ${unsupported("firefox and webkit", "an init script that hides navigator.locks before the page's scripts run (WebDriver classic has none; not wired for BiDi)")}`);
  const results = engines.map((engine) => {
    const child = spawnSync(process.execPath, [process.argv[1]], { stdio: "inherit", env: { ...process.env, TABS_ENGINE: engine }, timeout: LIMIT_MS + 60_000 });
    return [engine, child.status === 0];
  });
  const failed = results.filter(([, ok]) => !ok).map(([engine]) => engine);
  print(`e2e tabs: ${results.length - failed.length} engines passed (${results.filter(([, ok]) => ok).map(([e]) => e).join(", ") || "none"}), ${failed.length} failed${failed.length ? ` (${failed.join(", ")})` : ""}`);
  process.exit(failed.length === 0 ? 0 : 1);
}

const ENGINE = process.env.TABS_ENGINE;
const REPLAY = `${NO_LOCKS ? "TABS_NO_LOCKS=1 " : ""}TABS_SEED=${SEED} ENGINES=${ENGINE} node tests/e2e/tabs.mjs`;
print(`e2e tabs (${ENGINE}): seed ${SEED}, ${TABS} tabs, ${ROUNDS} rounds${NO_LOCKS ? ", without Web Locks" : ""} (replay: ${REPLAY})`);
const statics = await serveTabs();
const browser = await launch(ENGINE);
const server = await startReferenceServer({ runApplyMs: 200 });
const context = await browser.newContext();
if (NO_LOCKS) {
  if (!context.raw) throw new Error(unsupported(ENGINE, "hiding navigator.locks (an init script)"));
  await context.raw.addInitScript(() => Object.defineProperty(Navigator.prototype, "locks", { configurable: true, get: () => undefined }));
}
if (!browser.can.crash) say(unsupported(ENGINE, "a renderer crash (CDP Page.crash): each crash round closes the leader instead"));
const world = { context, statics, server, browser, db: `tabs-${SEED}-${Date.now()}` };
print(`e2e tabs (${ENGINE}): ${browser.version}, pages from ${statics.url} (package ${PKG_DIR}), reference server ${server.url}`);
let counts = null;
try {
  let timer;
  counts = await Promise.race([
    scenario(world),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`test took over ${LIMIT_MS / 1000} s`)), LIMIT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
} catch (error) {
  fail(error.stack ?? String(error));
} finally {
  sampler.stopped = true;
  await context.close().catch(() => {});
  await browser.close().catch(() => {});
  await server.close().catch(() => {});
  await statics.close().catch(() => {});
}
const took = ((performance.now() - started) / 1000).toFixed(1);
if (failures.length === 0) {
  print(`ok 1 - ${ENGINE}: ${TABS} tabs on one ledger${NO_LOCKS ? " without Web Locks" : ""}: leader closed and ${browser.can.crash ? "crashed" : "closed again (no crash here)"} ${ROUNDS}x mid-burst, every acknowledged operation applied once, in order (${took}s)`);
} else {
  print(`not ok 1 - ${ENGINE}: ${TABS} tabs on one ledger: ${failures.length} failed checks (${took}s); replay: ${REPLAY}`);
}
const c = counts ?? {};
print(
  `e2e tabs (${ENGINE}): ${failures.length === 0 ? "1 passed, 0 failed" : "0 passed, 1 failed"} (seed ${SEED}, tabs ${c.tabs ?? "?"}, operations ${c.operations ?? "?"}, ` +
    `applied ${c.applied ?? "?"}, duplicates ${c.duplicates ?? "?"}, lost ${c.lost ?? "?"}, leader changes ${c.leaderChangedEvents ?? "?"}, ` +
    `takeovers ${c.takeoverMs ? c.takeoverMs.map((ms) => `${ms ?? "?"}ms`).join("/") : "?"}, ${failures.length} failed checks)`,
);
process.exit(failures.length === 0 ? 0 : 1);
