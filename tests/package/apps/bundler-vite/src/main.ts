// The `bundler` entry: the .wasm is imported as an ES module (vite-plugin-wasm); no init().
import { Scheduler, type SchedulerEvent } from "canvas-scheduler/bundler";

// The reference server's address, from the page's query (?endpoint=http://127.0.0.1:PORT).
const endpoint = new URLSearchParams(location.search).get("endpoint") ?? "http://127.0.0.1:8080";
const result = document.getElementById("result")!;

try {
  const id = crypto.randomUUID();
  let settle!: (event: SchedulerEvent) => void;
  const settled = new Promise<SchedulerEvent>((resolve) => (settle = resolve));
  const scheduler = await Scheduler.open({
    database: "ledger:app",
    endpoint,
    onEvent: (event: SchedulerEvent) => {
      if (event.type === "settled" && event.operationId === id) settle(event);
    },
  });
  scheduler.start();
  // Resolves once the intent is durable in IndexedDB; the scheduler then sends it.
  await scheduler.enqueue({
    id,
    operationType: "shape.upsert",
    canvasIds: ["canvas-1"],
    payload: { shapeId: "s1", shape: { x: 10, y: 20, fill: "#336699" } },
  });
  result.textContent = JSON.stringify({ id, enqueued: true, settled: await settled });
  document.body.dataset.status = "ok";
} catch (error) {
  result.textContent = JSON.stringify({ error: String(error) });
  document.body.dataset.status = "error";
}
