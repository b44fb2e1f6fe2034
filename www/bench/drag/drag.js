// The drag workload of www/bench/drag/run.mjs: 60 updates a second to one shape, each an
// intent with the shape's coalesceKey, enqueued without waiting (as an editor's pointer
// handler does), while the scheduler sends. `window.drag.open(mode)` with mode "none" (the
// intents are only built), "page" (the package's Scheduler on this thread), "page-held" (the
// same, held: nothing is sent during the drag), "worker" (canvas-scheduler/worker), or
// "page-coalesce" / "worker-coalesce" (the same with `coalesceMs: 32`), then
// `run(ms)`. ?server=<reference server>&db=<ledger>.
import initPage, { Scheduler as PageScheduler } from "/pkg/web/canvas_scheduler.js";
import initWorker, { Scheduler as WorkerScheduler } from "/worker/index.js";

const query = new URLSearchParams(location.search);
const HZ = 60;

/** Opens the scheduler of `mode` (null for "none"); `settled` counts the settled events. */
async function open(mode, counts) {
  if (mode === "none") return null;
  const [init, Scheduler] = mode.startsWith("worker") ? [initWorker, WorkerScheduler] : [initPage, PageScheduler];
  await init();
  const scheduler = await Scheduler.open({
    database: query.get("db"),
    endpoint: query.get("server"),
    // "…-coalesce": each update held back two frames (the default), so the next replaces it
    // unwritten and unsent; the other modes hold nothing.
    coalesceMs: mode.endsWith("-coalesce") ? 32 : 0,
    onEvent: (event) => {
      if (event.type === "settled") counts[event.outcome] = (counts[event.outcome] ?? 0) + 1;
    },
  });
  scheduler.start();
  return scheduler;
}

window.drag = {
  /** Opens `mode`'s scheduler, resolves once it is ready (the measurement starts after). */
  async open(mode) {
    this.counts = { enqueued: 0, refused: 0 };
    this.scheduler = await open(mode, this.counts);
    // "page-held": the page's scheduler held, so it only makes each update durable and sends
    // nothing: the A/B that splits an update's cost from the sending's.
    this.release = mode === "page-held" ? this.scheduler.hold() : null;
    return true;
  },
  /** Drags for `ms`: one update every 1000/60 ms. Resolves with the counts once the last enqueue resolved. */
  async run(ms) {
    const { scheduler, counts } = this;
    const waits = [];
    let n = 0;
    const started = performance.now();
    await new Promise((done) => {
      const timer = setInterval(() => {
        if (performance.now() - started >= ms) {
          clearInterval(timer);
          done();
          return;
        }
        n += 1;
        const intent = {
          id: `drag-${crypto.randomUUID()}`,
          operationType: "shape.upsert",
          canvasIds: ["canvas-1"],
          coalesceKey: "drag:shape-1",
          payload: { shapeId: "shape-1", shape: { kind: "rect", x: n, y: n / 2, w: 40, h: 30 } },
        };
        if (scheduler) {
          waits.push(scheduler.enqueue(intent).then(() => (counts.enqueued += 1), () => (counts.refused += 1)));
        } else {
          waits.push(JSON.stringify(intent).length);
        }
      }, 1000 / HZ);
    });
    await Promise.all(waits);
    return { updates: n, ms: performance.now() - started };
  },
  /** The app's own persistence instead of a scheduler (mode "idb" of a selection drag): each
   * `enqueueMany` puts the intents' payloads into the page's own database, one strict
   * `readwrite` transaction a call, resolved once it commits. */
  async openOwn() {
    this.counts = { enqueued: 0, refused: 0 };
    const request = indexedDB.open(`own-${Date.now()}`, 1);
    request.onupgradeneeded = () => request.result.createObjectStore("records", { keyPath: "id" });
    const db = await new Promise((resolve, reject) => {
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    this.scheduler = {
      enqueueMany(intents) {
        const tx = db.transaction("records", "readwrite", { durability: "strict" });
        const store = tx.objectStore("records");
        for (const intent of intents) store.put(intent.payload);
        return new Promise((resolve, reject) => {
          tx.oncomplete = resolve;
          tx.onerror = () => reject(tx.error);
        });
      },
    };
    this.own = db;
    return true;
  },
  /** A selection of `records` shapes dragged `moves` times, one move a frame: each move one
   * `enqueueMany` of a tldraw-sized record per shape, each with its shape's coalesceKey, not
   * awaited (as an editor's store listener does). Resolves once the last call resolved. */
  async selection(records, moves) {
    const { scheduler, counts } = this;
    const started = performance.now();
    const calls = [];
    for (let move = 0; move < moves; move += 1) {
      const intents = [];
      for (let r = 0; r < records; r += 1) {
        intents.push({
          id: `m${move}-r${r}-${crypto.randomUUID()}`,
          operationType: "shape.upsert",
          canvasIds: ["canvas-1"],
          coalesceKey: `shape-${r}`,
          payload: {
            id: `shape:${r}`, typeName: "shape", type: "geo", x: 10 + move, y: 20 + r, rotation: 0,
            isLocked: false, opacity: 1, parentId: "page:page", index: `a${r}`, meta: {},
            props: { w: 100, h: 80, geo: "rectangle", color: "black", fill: "none", dash: "draw", size: "m", text: "" },
          },
        });
      }
      if (scheduler) {
        calls.push(scheduler.enqueueMany(intents).then(() => (counts.enqueued += intents.length), () => (counts.refused += intents.length)));
      } else {
        calls.push(JSON.stringify(intents).length);
      }
      await new Promise((frame) => requestAnimationFrame(frame));
    }
    await Promise.all(calls);
    return { moves, ms: performance.now() - started };
  },
  /** Waits until nothing is in flight; resolves with the counts and the scheduler's stats. */
  async finish() {
    if (!this.scheduler || this.own) return { counts: this.counts };
    this.release?.();
    await this.scheduler.settle();
    const stats = this.scheduler.stats();
    this.scheduler.stop();
    return { counts: this.counts, sent: stats.sent, settled: stats.settled };
  },
};
document.body.dataset.ready = "1";
