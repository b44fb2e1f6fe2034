// An app's own worker module for worker mode (tests/e2e/worker_mode.mjs): serves the scheduler
// with synchronous `compile` and `coalesce` hooks, which cannot cross from the page. It marks each shape it
// compiles so the test can see on the server that the hook ran in the worker, and what the
// worker's scheduler answered the hooks' reads (reads work inside hooks).
import { serve } from "/worker/serve.js";

/** What `participants` read, by operation id, for `compile` to send along. */
const seen = new Map();

/** Reads the scheduler the hook was handed: each read's answer, or the code it threw. */
function read(scheduler, intent) {
  const code = (f) => {
    try {
      return f();
    } catch (error) {
      return `threw ${error?.code ?? error}`;
    }
  };
  return {
    reason: code(() => scheduler.explain(intent.id).reason),
    pending: code(() => scheduler.pending().some((entry) => entry.id === intent.id)),
    record: code(() => scheduler.operation(intent.id)?.intent.id === intent.id),
    leader: code(() => scheduler.stats().leader),
    claims: code(() => typeof scheduler.claims() === "object"),
    hold: code(() => scheduler.hold() && "held"),
  };
}

serve({
  // Merges a replaced intent into its replacement: counts the merges and
  // says where they ran, for the test to see on the server.
  coalesce: (older, newer, scheduler) => ({
    ...newer.payload,
    shape: {
      ...newer.payload.shape,
      coalescedIn: "worker",
      merges: (older.payload.shape.merges ?? 0) + 1,
      olderWasPending: scheduler.explain(older.id).state === "pending",
    },
  }),
  participants: (intent, scheduler) => {
    seen.set(intent.id, read(scheduler, intent));
    return intent.canvasIds;
  },
  compile: (intent, requestId, scheduler) => ({
    payload: {
      ...intent.payload,
      shape: {
        ...intent.payload.shape,
        compiledBy: "worker",
        readInCompile: read(scheduler, intent),
        readInParticipants: seen.get(intent.id) ?? null,
      },
    },
    canvasIds: intent.canvasIds,
  }),
});
