// Worker mode, inside the worker (`canvas-scheduler/worker/serve`).
import type { CompiledRequest, Json, Scheduler, SchedulerEvent, SchedulerOptions, StoredIntent } from "../pkg/web/canvas_scheduler.js";

/** The hooks that run in the worker: the synchronous ones, a custom transport, and any async
 * one. `Kind`: the editor's operation kinds, as for `Scheduler.open<Kind>` on the page. */
export type WorkerHooks<Kind extends string = string> = Pick<SchedulerOptions<Kind>, "transport" | "headers" | "authorize" | "classifyError"> & {
  /**
   * Synchronous: turns an intent into the request body. `scheduler` is the worker's own: its
   * synchronous reads (`stats`, `operation`, `explain`, `claims`, `pending`) answer from the
   * step the hook runs in; `hold` and `start` throw `invalid_state` there, and the methods
   * that return promises run once the step is over.
   */
  compile?: (intent: StoredIntent<Kind>, requestId: string, scheduler: Scheduler<Kind>) => CompiledRequest;
  /** Synchronous: the canvases an intent touches (default: its canvasIds). `scheduler` as for
   * `compile`. */
  participants?: (intent: StoredIntent<Kind>, scheduler: Scheduler<Kind>) => string[];
  /** Synchronous: the payload a replacement carries when it replaces an older intent with its
   * `coalesceKey` (see the page's `coalesce` option). `scheduler` as for `compile`. */
  coalesce?: (older: StoredIntent<Kind>, newer: StoredIntent<Kind>, scheduler: Scheduler<Kind>) => Json;
  /**
   * Hears each event in the worker, before the page's `onEvent` and before the worker runs
   * anything else: state that `compile` reads, kept here, is current for the next request.
   * `scheduler` is the worker's own (its methods may be called, as from any hook).
   */
  onEvent?: (event: SchedulerEvent, scheduler: Scheduler<Kind>) => void;
};

/**
 * Serves the scheduler to the page's `Scheduler.open({ worker })`. Call it once at the top
 * level of a dedicated module worker. A hook given here must not also be given on the page
 * (`onEvent` excepted: the worker's and the page's both hear every event).
 */
export function serve<Kind extends string = string>(hooks?: WorkerHooks<Kind>): Promise<void>;
