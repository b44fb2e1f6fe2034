// Worker mode, inside the worker (`canvas-scheduler/worker/serve`).
import type { SchedulerOptions } from "../pkg/web/canvas_scheduler.js";

/** The hooks that run in the worker: the synchronous ones, a custom transport, and any async one. */
export type WorkerHooks = Pick<SchedulerOptions, "compile" | "participants" | "transport" | "headers" | "authorize" | "classifyError">;

/**
 * Serves the scheduler to the page's `Scheduler.open({ worker })`. Call it once at the top
 * level of a dedicated module worker. A hook given here must not also be given on the page.
 */
export function serve(hooks?: WorkerHooks): Promise<void>;
