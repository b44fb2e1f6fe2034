//! Opens the scheduler with the example's options, in the page (`canvas-scheduler`) or in a
//! dedicated worker (`canvas-scheduler/worker`: same API, the ledger and the sends off the
//! main thread). Both entries are loaded on demand, so a page loads only the one it uses.
import type { OperationIntent, SchedulerEvent, SchedulerOptions } from "canvas-scheduler";

/** What the example calls; the page's `Scheduler` and the worker's proxy both have it. */
export interface AppScheduler {
  enqueueMany(intents: OperationIntent[]): Promise<void>;
  enqueue(intent: OperationIntent): Promise<void>;
  start(): void;
  stop(): void;
  stats(): unknown;
  pending(): unknown[];
  claims(): Record<string, string>;
}

export type ExampleOptions = Omit<SchedulerOptions, "compile" | "participants" | "coalesce" | "transport">;

/** The example's options: what an editor should set (README, "Options for a canvas editor"). */
export function exampleOptions(endpoint: string, database: string, onEvent: (event: SchedulerEvent) => void): ExampleOptions {
  return {
    database,
    endpoint,
    batch: { maxOperations: 256, maxBytes: 262_144 },
    retry: { baseMs: 100, maxMs: 2_000 },
    // A dragged record's update waits two frames for the next one to replace it: a drag
    // writes and sends its last position, and its updates share their writes. In the page it
    // pays for no send and no transaction per move; in worker mode the page gets fewer
    // messages back.
    coalesceMs: 32,
    onEvent,
  };
}

export async function openScheduler(mode: "page" | "worker", options: ExampleOptions): Promise<AppScheduler> {
  if (mode === "worker") {
    const { default: init, Scheduler } = await import("canvas-scheduler/worker");
    await init();
    return (await Scheduler.open(options)) as unknown as AppScheduler;
  }
  const { default: init, Scheduler } = await import("canvas-scheduler");
  await init();
  return await Scheduler.open(options);
}
