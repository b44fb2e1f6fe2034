// One tab of the crash test (tests/crash/run.mjs): the packed canvas-scheduler, imported as a
// user imports it, on a ledger the other tabs of the browser context share (one of them sends,
// the others enqueue through it). Exposes window.crash:
//   run({count, burstMin, burstMax, gapMinMs, gapMaxMs})  enqueues `count` shape.upsert intents
//       (ids `<owner>:<i>`) on the CANVASES in bursts, one enqueueMany per burst, as an editor
//       flushing a gesture; resolves to what it enqueued: [[id, canvasId], …] in enqueue order;
//   saved()   whenSaved();  stats();  events() (counts and problems seen by onEvent);
//   ledger(ids)  known(ids) → {id: [sequence, phase, settlement]}.
// Page parameters: ?endpoint=<protocol URL>&db=<IndexedDB name>&owner=<tab id>&seed=<n>.
import init, { Scheduler } from "canvas-scheduler";

const CANVASES = Array.from({ length: 8 }, (_, i) => `canvas-${i}`);
const SHAPES_PER_CANVAS = 24;

const params = new URLSearchParams(location.search);
const endpoint = params.get("endpoint") ?? "";
const database = params.get("db") ?? "crash";
const owner = params.get("owner") ?? "tab";
let seed = Number(params.get("seed") ?? "1") >>> 0;
const random = () => {
  // mulberry32
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const counts = {};
const problems = [];
function onEvent(event) {
  counts[event.type] = (counts[event.type] ?? 0) + 1;
  if (["blocked", "dead_lettered", "error", "quarantined"].includes(event.type) && problems.length < 20) {
    problems.push(JSON.stringify(event).slice(0, 300));
  }
  if (event.type === "settled" && event.outcome !== "applied" && problems.length < 20) {
    problems.push(JSON.stringify(event).slice(0, 300));
  }
}

let counter = 0;
function intent() {
  const canvasId = CANVASES[Math.floor(random() * CANVASES.length)];
  const id = `${owner}:${counter}`;
  const shapeId = `s${Math.floor(random() * SHAPES_PER_CANVAS)}`;
  counter += 1;
  const shape = { kind: "rect", x: Math.floor(random() * 800), y: Math.floor(random() * 500), w: 10, h: 10, by: id };
  return { id, operationType: "shape.upsert", canvasIds: [canvasId], payload: { shapeId, shape } };
}

async function run({ count, burstMin = 5, burstMax = 40, gapMinMs = 20, gapMaxMs = 120 }) {
  const enqueued = [];
  while (enqueued.length < count) {
    const n = Math.min(count - enqueued.length, burstMin + Math.floor(random() * (burstMax - burstMin + 1)));
    const intents = Array.from({ length: n }, intent);
    await scheduler.enqueueMany(intents);
    for (const i of intents) enqueued.push([i.id, i.canvasIds[0]]);
    await sleep(gapMinMs + Math.floor(random() * (gapMaxMs - gapMinMs + 1)));
  }
  return enqueued;
}

async function ledger(ids) {
  const records = await scheduler.known(ids);
  const out = {};
  ids.forEach((id, i) => {
    const r = records[i];
    out[id] = !r ? null : "compacted" in r ? [null, "compacted", r.outcome] : [r.intent.sequence, r.phase, r.outcome?.settlement ?? null];
  });
  return out;
}

let scheduler;
try {
  await init();
  scheduler = await Scheduler.open({
    database,
    endpoint,
    principal: "user-crash",
    owner,
    concurrency: 4,
    retry: { baseMs: 100, maxMs: 2000, maxAttempts: 200 },
    batch: { maxOperations: 32 },
    // Every settled operation stays whole, so the final check reads each one's sequence.
    retain: { settled: 20000 },
    onEvent,
  });
  scheduler.start();
  window.crash = {
    run,
    saved: () => scheduler.whenSaved(),
    stats: () => scheduler.stats(),
    events: () => ({ counts, problems }),
    ledger,
  };
  document.body.dataset.status = "ready";
} catch (error) {
  document.body.dataset.error = `${error?.code ?? ""} ${error?.message ?? error}`.slice(0, 300);
  document.body.dataset.status = "error";
}
