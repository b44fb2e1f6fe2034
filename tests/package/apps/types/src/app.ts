// Type-checked against the installed package, never run: both entries resolve to their
// declarations, and the declarations are precise (each @ts-expect-error must be an error).
import init, { Scheduler, type SchedulerEvent } from "canvas-scheduler";
import { Scheduler as BundlerScheduler } from "canvas-scheduler/bundler";

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
