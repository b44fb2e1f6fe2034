// The page behind tests/e2e/chaos.mjs: opens the scheduler on the reference server, retrying
// while a killed page's lease lapses, and exposes window.chaos.burst(n), which enqueues n
// shape.upsert intents across 4 canvases and resolves with the ids whose enqueue resolved.
//
// Page parameters: ?server=<reference server URL>&db=<IndexedDB name>&seed=<n>&epoch=<k>.
// Ids are op-<epoch>-<i>: the test gives every page load its own epoch, so ids never repeat.
// Each acknowledged id is appended to localStorage (synchronously) and reported to the test
// through window.chaosAck when the test exposed it.
import init, { Scheduler } from "/pkg/web/canvas_scheduler.js";
import { mulberry32 } from "/www/shared/seeded.js";

const CANVASES = ["canvas-0", "canvas-1", "canvas-2", "canvas-3"];
const OPEN_DEADLINE_MS = 30_000;

const params = new URLSearchParams(location.search);
const server = (params.get("server") ?? "").replace(/\/+$/, "");
const database = params.get("db") ?? "chaos";
const seed = Number(params.get("seed") ?? "1") >>> 0;
const epoch = params.get("epoch") ?? "0";
const ACK_KEY = `chaos:${database}:acked`;

const random = mulberry32((seed ^ Math.imul(Number(epoch) + 1, 0x9e3779b1)) >>> 0);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const events = { settled: 0, blocked: 0, dead_lettered: 0, error: 0, quarantined: 0, leader_changed: 0 };
const problems = [];

function onEvent(event) {
  events[event.type] = (events[event.type] ?? 0) + 1;
  if (event.type === "blocked" || event.type === "dead_lettered" || event.type === "error" || event.type === "quarantined") {
    if (problems.length < 50) problems.push(event);
  }
}

function ack(id) {
  const list = localStorage.getItem(ACK_KEY);
  localStorage.setItem(ACK_KEY, list ? `${list},${id}` : id);
  // The test's binding may be gone if the page is being killed: what matters is localStorage.
  Promise.resolve(window.chaosAck?.(id)).catch(() => {});
}

async function open() {
  const started = Date.now();
  for (;;) {
    try {
      return await Scheduler.open({
        database,
        endpoint: server,
        leaseMs: 1000,
        retry: { baseMs: 50, maxMs: 1000, maxAttempts: 1000 },
        onEvent,
      });
    } catch (error) {
      if (error?.code !== "not_leader" || Date.now() - started > OPEN_DEADLINE_MS) throw error;
      await sleep(100);
    }
  }
}

let counter = 0;
let scheduler = null;

async function burst(n) {
  const acked = [];
  for (let k = 0; k < n; k += 1) {
    const i = counter;
    counter += 1;
    const id = `op-${epoch}-${i}`;
    const canvasId = CANVASES[Math.floor(random() * CANVASES.length)];
    const shape = { kind: "rect", x: Math.floor(random() * 800), y: Math.floor(random() * 500), w: 10, h: 10, by: id };
    await scheduler.enqueue({
      id,
      operationType: "shape.upsert",
      canvasIds: [canvasId],
      payload: { shapeId: `shape-${id}`, shape },
    });
    acked.push(id);
    ack(id);
  }
  return acked;
}

/** Sequence and phase of each id the ledger knows (for the final checks). */
function ledger(ids) {
  const out = {};
  for (const id of ids) {
    const record = scheduler.operation(id);
    out[id] = record
      ? { sequence: record.intent.sequence, phase: record.phase, blockers: record.blockers, explain: record.phase === "pending" ? scheduler.explain(id) : undefined }
      : null;
  }
  return out;
}

addEventListener("pagehide", () => {
  // Frees the lease at once so the next page need not wait for it to lapse.
  scheduler?.stop();
});

try {
  await init();
  scheduler = await open();
  scheduler.start();
  window.chaos = {
    burst,
    stats: () => scheduler.stats(),
    acked: () => (localStorage.getItem(ACK_KEY) ?? "").split(",").filter(Boolean),
    ledger,
    events: () => ({ events, problems }),
  };
  document.body.dataset.status = "ready";
} catch (error) {
  console.error(`chaos page: ${error?.code ?? ""} ${error?.message ?? error}`);
  document.body.dataset.status = "error";
}
