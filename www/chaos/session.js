// The scheduler side of the chaos page (tests/e2e/chaos.mjs): opens the scheduler on the
// reference server, retrying while a killed holder's lease lapses, and enqueues shape.upsert
// intents across 4 canvases. The same code drives the package's Scheduler on the page and, in
// worker mode, the `canvas-scheduler/worker` proxy (`api`) with the scheduler in a worker.
import init, { Scheduler } from "/pkg/web/canvas_scheduler.js";
import { ledgerView } from "/www/shared/ledger_view.js";
import { mulberry32 } from "/www/shared/seeded.js";

const CANVASES = ["canvas-0", "canvas-1", "canvas-2", "canvas-3"];
const OPEN_DEADLINE_MS = 30_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Where opening got to, for the test to say when the page never becomes ready. */
const phase = (name) => void (document.body.dataset.phase = name);

/** `n` random characters from 64: text the store cannot compress away. */
function noise(n) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const bytes = new Uint8Array(n);
  // getRandomValues fills at most 65 536 bytes a call.
  for (let at = 0; at < n; at += 65_536) crypto.getRandomValues(bytes.subarray(at, at + 65_536));
  let out = "";
  for (const byte of bytes) out += alphabet[byte & 63];
  return out;
}

/**
 * Opens and starts the scheduler. `ack(id)` is called once the enqueue of `id` resolved.
 * Ids are op-<epoch>-<i>: every page load and every worker gets an epoch of its own. `api`:
 * `{ init, Scheduler, worker }` of worker mode (default: the package's page Scheduler). `batch`
 * > 1 batches up to that many edits a request.
 */
export async function openSession({ server, database, seed, epoch, ack, batch = 0, api = { init, Scheduler } }) {
  const random = mulberry32((seed ^ Math.imul(Number.parseInt(epoch, 36) + 1, 0x9e3779b1)) >>> 0);
  const events = { settled: 0, blocked: 0, dead_lettered: 0, error: 0, quarantined: 0, leader_changed: 0 };
  const problems = [];
  /** `storage_failed` and `storage_recovered`, in order, with the time the page heard each. */
  const storage = [];
  const onEvent = (event) => {
    events[event.type] = (events[event.type] ?? 0) + 1;
    if (event.type === "storage_failed" || event.type === "storage_recovered") storage.push({ ...event, at: Date.now() });
    if (event.type === "blocked" || event.type === "dead_lettered" || event.type === "error" || event.type === "quarantined") {
      if (problems.length < 50) problems.push(event);
    }
  };
  phase("init");
  await api.init();
  const started = Date.now();
  let scheduler;
  for (let attempt = 1; ; attempt += 1) {
    try {
      phase(`open ${attempt}`);
      scheduler = await api.Scheduler.open({
        ...(api.worker ? { worker: api.worker() } : {}),
        database,
        endpoint: server,
        leaseMs: 1000,
        retry: { baseMs: 50, maxMs: 1000, maxAttempts: 1000 },
        // `batch` 0 or 1: one operation a request (batching is on by default).
        batch: { maxOperations: Math.max(batch, 1), maxBytes: 65_536 },
        // Every settled operation kept whole: the final check reads each one's sequence (a
        // compacted one keeps only its outcome).
        retain: { settled: 1_000_000 },
        onEvent,
      });
      break;
    } catch (error) {
      if (error?.code !== "not_leader" || Date.now() - started > OPEN_DEADLINE_MS) throw error;
      await sleep(100);
    }
  }
  phase("start");
  scheduler.start();
  let counter = 0;
  const refused = new Map(); // id -> the intent whose enqueue was refused
  /** A new shape edit on a random canvas, with `pad` characters of incompressible text. */
  const newIntent = (pad) => {
    const id = `op-${epoch}-${counter}`;
    counter += 1;
    const canvasId = CANVASES[Math.floor(random() * CANVASES.length)];
    const shape = { kind: "rect", x: Math.floor(random() * 800), y: Math.floor(random() * 500), w: 10, h: 10, by: id };
    const payload = { shapeId: `shape-${id}`, shape };
    if (pad > 0) payload.pad = noise(pad);
    return { id, operationType: "shape.upsert", canvasIds: [canvasId], payload };
  };
  /** Enqueues one new shape edit on a random canvas; resolves with its id once durable. */
  const enqueueOne = async (pad) => {
    const intent = newIntent(pad);
    const { id } = intent;
    try {
      await scheduler.enqueue(intent);
    } catch (error) {
      refused.set(id, intent);
      if (error instanceof Error) error.operationId = id;
      throw error;
    }
    ack(id);
    return id;
  };
  return {
    /**
     * Enqueues `n` intents one after another; resolves with the ids whose enqueue resolved.
     * `pad` adds that many characters of incompressible text to each payload.
     */
    async burst(n, pad = 0) {
      const acked = [];
      for (let k = 0; k < n; k += 1) acked.push(await enqueueOne(pad));
      return acked;
    },
    /**
     * Enqueues one intent after another, each as soon as the last resolved, for `ms` or until
     * `max` were acknowledged; resolves with how many and how long that took.
     */
    /**
     * Enqueues `n` new intents in one `enqueueMany` (one transaction); resolves with their ids
     * once durable. A refusal carries `operationIds`, and each may be enqueued again.
     */
    async burstMany(n, pad = 0) {
      const intents = Array.from({ length: n }, () => newIntent(pad));
      try {
        await scheduler.enqueueMany(intents);
      } catch (error) {
        for (const intent of intents) refused.set(intent.id, intent);
        if (error instanceof Error) error.operationIds = intents.map((intent) => intent.id);
        throw error;
      }
      for (const intent of intents) ack(intent.id);
      return intents.map((intent) => intent.id);
    },
    async flood(ms, max) {
      const started = performance.now();
      let count = 0;
      while (count < max && performance.now() - started < ms) {
        await enqueueOne(0);
        count += 1;
      }
      return { count, ms: performance.now() - started };
    },
    stats: () => scheduler.stats(),
    /** In worker mode the mirror is first brought up to date with `ids` (`sync`). */
    async ledger(ids) {
      await scheduler.sync?.(ids);
      return ledgerView(scheduler, ids);
    },
    events: () => ({ events, problems, storage }),
    resume: () => scheduler.resume(),
    /** Enqueues a refused intent again, unchanged (same id and content), as docs/guide.md ("Storage") says. */
    async enqueueAgain(id) {
      await scheduler.enqueue(refused.get(id));
      ack(id);
    },
    /** Enqueues refused intents again, unchanged, in one `enqueueMany`. */
    async enqueueManyAgain(ids) {
      await scheduler.enqueueMany(ids.map((id) => refused.get(id)));
      for (const id of ids) ack(id);
    },
    stop: () => scheduler.stop(),
  };
}
