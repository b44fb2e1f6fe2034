// Type-checked, never run: worker mode's proxy (`canvas-scheduler/worker`) has every method of
// the page's Scheduler, each returning the same type, so an app switches modes by its import.
import type { Scheduler as PageScheduler } from "canvas-scheduler";
import type { Scheduler as WorkerScheduler } from "canvas-scheduler/worker";
import type { WorkerHooks } from "canvas-scheduler/worker/serve";

type Same<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Method<S, K extends keyof S> = S[K] extends (...args: infer A) => infer R ? [A, R] : never;
/** The page's methods, with their parameters and return types, each the same in the proxy. */
type Mirrors<K extends keyof PageScheduler & keyof WorkerScheduler> = {
  [P in K]: Same<Method<PageScheduler, P>[1], Method<WorkerScheduler, P>[1]>;
};
type PageMethods = Exclude<keyof PageScheduler, "free" | typeof Symbol.dispose>;

/** Fails to compile when the proxy lacks one of the page's methods. */
export const everyMethod: PageMethods extends keyof WorkerScheduler ? true : false = true;

export const sameReturns: Mirrors<PageMethods & keyof WorkerScheduler> = {
  enqueue: true,
  enqueueMany: true,
  start: true,
  hold: true,
  resume: true,
  retryAllNow: true,
  settle: true,
  stop: true,
  claims: true,
  operation: true,
  known: true,
  explain: true,
  stats: true,
  flush: true,
  retry: true,
  discard: true,
  events: true,
  whenSaved: true,
  pending: true,
};

/** serve()'s `compile` and `participants` are handed the worker's scheduler, whose
 * synchronous reads answer inside them. */
export const hooksRead: WorkerHooks = {
  participants: (intent, scheduler) => (scheduler.explain(intent.id).reason === "ready" ? intent.canvasIds : []),
  coalesce: (older, newer, scheduler) => (scheduler.stats().leader ? newer.payload : older.payload),
  compile: (intent, requestId, scheduler) => ({
    payload: {
      requestId,
      pending: scheduler.pending().length,
      inFlight: scheduler.stats().inFlight,
      claimed: Object.keys(scheduler.claims()).length,
    },
    canvasIds: intent.canvasIds,
  }),
};
