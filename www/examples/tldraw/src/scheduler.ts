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
  known(ids: string[]): Promise<unknown[]>;
  operation(id: string): unknown;
  explain(id: string): unknown;
}

export type ExampleOptions = Omit<SchedulerOptions, "compile" | "participants" | "coalesce" | "transport">;

/** `example`: the example's options; `defaults`: only what must be given (the package's
 * defaults: batching on, `coalesceMs` 32); `unbatched`: one operation a request, nothing held
 * back (the defaults before they were an editor's). The e2e test measures each. */
export type OptionsPreset = "example" | "defaults" | "unbatched";

/** The example's options: what an editor should set (docs/options.md). */
export function exampleOptions(preset: OptionsPreset, endpoint: string, database: string, onEvent: (event: SchedulerEvent) => void): ExampleOptions {
  const given = { database, endpoint, onEvent };
  if (preset === "defaults") return given;
  if (preset === "unbatched") return { ...given, batch: { maxOperations: 1 }, coalesceMs: 0 };
  return {
    ...given,
    // A drag of thousands of records sends them in a few large requests. Batching (32
    // operations, 64 KiB) and `coalesceMs: 32` (a dragged record's update waits two frames
    // for the next one to replace it) are the package's defaults.
    batch: { maxOperations: 256, maxBytes: 262_144 },
    retry: { baseMs: 100, maxMs: 2_000 },
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
