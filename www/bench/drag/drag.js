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
  /** Waits until nothing is in flight; resolves with the counts and the scheduler's stats. */
  async finish() {
    if (!this.scheduler) return { counts: this.counts };
    this.release?.();
    await this.scheduler.settle();
    const stats = this.scheduler.stats();
    this.scheduler.stop();
    return { counts: this.counts, sent: stats.sent, settled: stats.settled };
  },
};
document.body.dataset.ready = "1";
