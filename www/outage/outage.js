// The page behind tests/e2e/outages.mjs and tests/e2e/flaky.mjs: one scheduler
// on the reference server, with the retry (and batch) options the test gives, and
// window.outage:
//   enqueue(id, canvasId)  enqueues one shape edit; resolves once durable;
//   paste(list)            enqueues [[id, canvasId], ...] in one enqueueMany (a paste);
//   whenSaved()            the scheduler's whenSaved();
//   pending(), explain(id), retry(id) as the scheduler answers them;
//   events()               every event but `pending`, each with `at` (Date.now() when it came);
//   stop()                 stops the scheduler.
// Page parameters: ?server=<endpoint>&db=<IndexedDB name>&retry=<JSON of the retry option>
// [&batch=<JSON of the batch option>].
import init, { Scheduler } from "/pkg/web/canvas_scheduler.js";

const params = new URLSearchParams(location.search);
const events = [];

try {
  await init();
  const scheduler = await Scheduler.open({
    database: params.get("db") ?? "outage",
    endpoint: (params.get("server") ?? "").replace(/\/+$/, ""),
    retry: JSON.parse(params.get("retry") ?? "{}"),
    ...(params.has("batch") ? { batch: JSON.parse(params.get("batch")) } : {}),
    onEvent: (event) => {
      if (event.type !== "pending" && events.length < 10_000) events.push({ ...event, at: Date.now() });
    },
  });
  scheduler.start();
  window.outage = {
    async enqueue(id, canvasId) {
      const payload = { shapeId: `shape-${id}`, shape: { kind: "rect", x: 1, y: 2, w: 10, h: 10, by: id } };
      await scheduler.enqueue({ id, operationType: "shape.upsert", canvasIds: [canvasId], payload });
      return Date.now();
    },
    async paste(list) {
      const intents = list.map(([id, canvasId]) => ({
        id,
        operationType: "shape.upsert",
        canvasIds: [canvasId],
        payload: { shapeId: `shape-${id}`, shape: { kind: "rect", x: 1, y: 2, w: 10, h: 10, by: id } },
      }));
      await scheduler.enqueueMany(intents);
      return Date.now();
    },
    whenSaved: () => scheduler.whenSaved(),
    pending: () => scheduler.pending(),
    explain: (id) => scheduler.explain(id),
    retry: (id) => scheduler.retry(id),
    events: () => events,
    stop: () => scheduler.stop(),
  };
  document.body.dataset.status = "ready";
} catch (error) {
  console.error(`outage page: ${error?.code ?? ""} ${error?.message ?? error}`);
  document.body.dataset.status = "error";
  document.body.dataset.error = `${error?.code ?? ""} ${error?.message ?? error}`;
}
