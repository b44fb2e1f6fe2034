// The page behind tests/e2e/tabs.mjs: one of several tabs (pages of one browser
// context) on one ledger. It opens the scheduler on the reference server with its own `owner`,
// starts it, and exposes window.tabs:
//   run({minGapMs, maxGapMs, manyRate, maxOps})  enqueues shape.upsert intents on 4 shared
//       canvases until stopRun() (or maxOps), one enqueue or enqueueMany at a time, so this
//       tab's enqueue order is its counter order; resolves nothing (fire and forget);
//   stopRun()  stops the loop and resolves once the enqueue under way has finished;
//   stats()    scheduler.stats() plus `at` (Date.now() when read);
//   events()   what onEvent delivered here (settled ids, leader_changed, problems);
//   acked()    every tab's acknowledged ids, from localStorage (shared by the context's tabs);
//   ledger(ids), settle().
//
// Page parameters: ?server=<reference server URL>&db=<IndexedDB name>&seed=<n>&owner=<tab id>
// [&retryOpen=1]. Ids are `<owner>:<i>`; owners are unique per test run, so ids never repeat.
// retryOpen=1 retries Scheduler.open while it rejects `not_leader` (only for the one-tab mode
// of the test, against a build without multi-tab support): with several tabs, open must
// resolve in every tab.
// Each acknowledged id is appended to localStorage (synchronously) and reported to the test
// through window.tabsAck; settled and leader_changed events through window.tabsEvent.
import init, { Scheduler } from "/pkg/web/canvas_scheduler.js";
import { ledgerView } from "/www/shared/ledger_view.js";
import { mulberry32 } from "/www/shared/seeded.js";

const CANVASES = ["canvas-0", "canvas-1", "canvas-2", "canvas-3"];
const OPEN_DEADLINE_MS = 30_000;

const params = new URLSearchParams(location.search);
const server = (params.get("server") ?? "").replace(/\/+$/, "");
const database = params.get("db") ?? "tabs";
const seed = Number(params.get("seed") ?? "1") >>> 0;
const owner = params.get("owner") ?? "tab";
const retryOpen = params.get("retryOpen") === "1";
const ACK_PREFIX = `tabs:${database}:acked:`;
const ACK_KEY = `${ACK_PREFIX}${owner}`;

function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}
const random = mulberry32((seed ^ hash(owner)) >>> 0);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- events -----------------------------------------------------------------------------------

const counts = {};
const settled = new Map(); // operationId -> {outcome, count}
const leaderChanges = [];
const problems = [];
const enqueueErrors = [];

function report(event) {
  // The binding may be gone while the page is being killed.
  try {
    Promise.resolve(window.tabsEvent?.(event)).catch(() => {});
  } catch {
    // ignored
  }
}

function onEvent(event) {
  const at = Date.now();
  counts[event.type] = (counts[event.type] ?? 0) + 1;
  if (event.type === "settled") {
    const seen = settled.get(event.operationId);
    settled.set(event.operationId, { outcome: event.outcome, count: (seen?.count ?? 0) + 1 });
    report({ type: "settled", operationId: event.operationId, outcome: event.outcome, at });
  } else if (event.type === "leader_changed") {
    const change = { leader: event.leader, owner: event.owner, fence: event.fence, at };
    if (leaderChanges.length < 200) leaderChanges.push(change);
    report({ type: "leader_changed", ...change });
  } else if (event.type === "blocked" || event.type === "dead_lettered" || event.type === "error" || event.type === "quarantined") {
    if (problems.length < 50) problems.push({ ...event, at });
    report({ type: event.type, at, detail: JSON.stringify(event).slice(0, 400) });
  }
}

function ack(id) {
  const list = localStorage.getItem(ACK_KEY);
  localStorage.setItem(ACK_KEY, list ? `${list},${id}` : id);
  try {
    Promise.resolve(window.tabsAck?.(id)).catch(() => {});
  } catch {
    // ignored
  }
}

// ---- scheduler ----------------------------------------------------------------------------------

async function open() {
  const started = Date.now();
  for (;;) {
    try {
      return await Scheduler.open({
        database,
        endpoint: server,
        principal: "user-tabs",
        owner,
        leaseMs: 2000,
        concurrency: 2,
        retry: { baseMs: 50, maxMs: 1000, maxAttempts: 1000 },
        onEvent,
      });
    } catch (error) {
      if (!retryOpen || error?.code !== "not_leader" || Date.now() - started > OPEN_DEADLINE_MS) throw error;
      await sleep(100);
    }
  }
}

let scheduler = null;
let counter = 0;
let running = null; // the run loop's promise
let stopping = false;

function intent(canvasId) {
  const id = `${owner}:${counter}`;
  counter += 1;
  const shape = { kind: "rect", x: Math.floor(random() * 800), y: Math.floor(random() * 500), w: 10, h: 10, by: id };
  return { id, operationType: "shape.upsert", canvasIds: [canvasId], payload: { shapeId: `shape-${id}`, shape } };
}

async function loop({ minGapMs = 20, maxGapMs = 80, manyRate = 0.3, maxOps = 2000 }) {
  while (!stopping && counter < maxOps) {
    const many = random() < manyRate;
    const n = many ? 2 + Math.floor(random() * 3) : 1;
    const intents = [];
    for (let k = 0; k < n; k += 1) intents.push(intent(CANVASES[Math.floor(random() * CANVASES.length)]));
    try {
      if (many) await scheduler.enqueueMany(intents);
      else await scheduler.enqueue(intents[0]);
      for (const { id } of intents) ack(id);
    } catch (error) {
      const entry = { ids: intents.map((i) => i.id), code: error?.code ?? null, message: String(error?.message ?? error).slice(0, 300), at: Date.now() };
      if (enqueueErrors.length < 50) enqueueErrors.push(entry);
      report({ type: "enqueue_error", at: entry.at, detail: JSON.stringify(entry) });
    }
    await sleep(minGapMs + Math.floor(random() * (maxGapMs - minGapMs + 1)));
  }
}

function run(options = {}) {
  if (running) return false;
  stopping = false;
  running = loop(options).finally(() => {
    running = null;
  });
  return true;
}

async function stopRun() {
  stopping = true;
  if (running) await running;
  return counter;
}

/** Sequence and phase of each id this tab's view of the ledger knows (for the final checks). */
const ledger = (ids) => ledgerView(scheduler, ids);

function acked() {
  const out = {};
  for (let i = 0; i < localStorage.length; i += 1) {
    const key = localStorage.key(i);
    if (key?.startsWith(ACK_PREFIX)) out[key.slice(ACK_PREFIX.length)] = (localStorage.getItem(key) ?? "").split(",").filter(Boolean);
  }
  return out;
}

// No stop() on pagehide: the scheduler hands the ledger over itself when its page leaves.

try {
  await init();
  scheduler = await open();
  scheduler.start();
  window.tabs = {
    owner,
    run,
    stopRun,
    stats: () => ({ ...scheduler.stats(), at: Date.now() }),
    settle: async () => {
      await scheduler.settle();
      return true;
    },
    acked,
    ledger,
    events: () => ({
      counts,
      settled: [...settled].map(([id, { outcome, count }]) => [id, outcome, count]),
      leaderChanges,
      problems,
      enqueueErrors,
      enqueued: counter,
    }),
  };
  document.body.dataset.status = "ready";
} catch (error) {
  console.error(`tabs page ${owner}: ${error?.code ?? ""} ${error?.message ?? error}`);
  document.body.dataset.error = `${error?.code ?? ""} ${error?.message ?? error}`.slice(0, 300);
  document.body.dataset.status = "error";
}
