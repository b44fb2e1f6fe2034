// Type-checked against the installed package, never run: every entry resolves to its
// declarations, and the declarations are precise (each @ts-expect-error must be an error).
import init, { Scheduler, type SchedulerEvent } from "canvas-scheduler";
import { Scheduler as BundlerScheduler } from "canvas-scheduler/bundler";
import initWorker, {
  Scheduler as WorkerScheduler,
  type CompactedOperation,
  type OperationRecord,
  type SchedulerStats,
} from "canvas-scheduler/worker";
import { serve } from "canvas-scheduler/worker/serve";

export async function open(endpoint: string): Promise<Scheduler> {
  await init();
  const scheduler = await Scheduler.open({
    database: "ledger:app",
    endpoint,
    onEvent: (event: SchedulerEvent) => {
      if (event.type === "settled") console.log(event.operationId, event.outcome);
    },
  });
  scheduler.start();
  await scheduler.enqueue({
    id: crypto.randomUUID(),
    operationType: "shape.upsert",
    canvasIds: ["canvas-1"],
    payload: { shapeId: "s1", shape: { x: 10, y: 20, fill: "#336699" } },
  });
  // @ts-expect-error an intent's id is a string
  await scheduler.enqueue({ id: 1, operationType: "shape.upsert" });
  return scheduler;
}

export async function openBundler(endpoint: string): Promise<BundlerScheduler> {
  const scheduler = await BundlerScheduler.open({ database: "ledger:app", endpoint });
  // @ts-expect-error a database name is a string
  await BundlerScheduler.open({ database: 42, endpoint });
  return scheduler;
}

export async function openWorker(endpoint: string): Promise<WorkerScheduler> {
  await initWorker();
  const scheduler = await WorkerScheduler.open({ database: "ledger:app", endpoint, onEvent: (event: SchedulerEvent) => void event });
  const release: () => void = scheduler.hold();
  release();
  const stats: SchedulerStats = scheduler.stats();
  const record = scheduler.operation("x");
  // A compacted operation (retention) is told apart by `compacted`, as on the page.
  console.log(stats.idleReason, scheduler.explain("x").state, record && ("compacted" in record ? record.outcome : record.phase));
  const known: (OperationRecord | CompactedOperation | undefined)[] = await scheduler.known(["x"]);
  console.log(known.length);
  await scheduler.sync(["x"]);
  // @ts-expect-error compile cannot cross to a worker: it goes to serve() in the worker
  await WorkerScheduler.open({ database: "ledger:app", endpoint, compile: () => ({ payload: null, canvasIds: [] }) });
  serve({ participants: (intent) => intent.canvasIds ?? [] });
  // The worker's own onEvent (state that compile reads), given the worker's scheduler.
  serve({ onEvent: (event, inWorker) => void (event.type === "settled" && inWorker.stats()) });
  // @ts-expect-error the worker's onEvent gets a SchedulerEvent
  serve({ onEvent: (event: number) => void event });
  return scheduler;
}
