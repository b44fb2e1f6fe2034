// The `worker` entry: the scheduler runs in a dedicated worker, the page holds a proxy with
// the same API. First the package's own worker, then the app's own (src/scheduler.worker.ts,
// which gives the synchronous `compile` hook to serve()); Vite bundles both workers.
import init, { Scheduler, type SchedulerEvent } from "canvas-scheduler/worker";

// The reference server's address, from the page's query (?endpoint=http://127.0.0.1:PORT).
const endpoint = new URLSearchParams(location.search).get("endpoint") ?? "http://127.0.0.1:8080";
const result = document.getElementById("result")!;

/** Opens a scheduler, enqueues one shape and resolves to its settled event. */
async function roundTrip(database: string, canvasId: string, shapeId: string, worker?: Worker) {
  const id = crypto.randomUUID();
  let settle!: (event: SchedulerEvent) => void;
  const settled = new Promise<SchedulerEvent>((resolve) => (settle = resolve));
  const scheduler = await Scheduler.open({
    database,
    endpoint,
    worker,
    onEvent: (event: SchedulerEvent) => {
      if (event.type === "settled" && event.operationId === id) settle(event);
    },
  });
  scheduler.start();
  // Resolves once the intent is durable in IndexedDB (in the worker); the worker then sends it.
  await scheduler.enqueue({
    id,
    operationType: "shape.upsert",
    canvasIds: [canvasId],
    payload: { shapeId, shape: { x: 10, y: 20, fill: "#336699" } },
  });
  const event = await settled;
  // stats() and explain() answer synchronously from the page's mirror of the worker.
  const explained = scheduler.explain(id).state;
  const sent = scheduler.stats().sent;
  scheduler.stop();
  return { id, settled: event, explained, sent };
}

try {
  await init(); // nothing to load on the page in worker mode
  const own = await roundTrip("ledger:app", "canvas-1", "s1");
  const worker = new Worker(new URL("./scheduler.worker.ts", import.meta.url), { type: "module" });
  const custom = await roundTrip("ledger:app-custom", "canvas-2", "s2", worker);
  result.textContent = JSON.stringify({ ...own, enqueued: true, custom });
  document.body.dataset.status = "ok";
} catch (error) {
  result.textContent = JSON.stringify({ error: String(error) });
  document.body.dataset.status = "error";
}
