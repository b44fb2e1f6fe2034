// An app's own worker module for worker mode (tests/e2e/worker_mode.mjs): serves the scheduler
// with a synchronous `compile` hook, which cannot cross from the page. It marks each shape it
// compiles so the test can see on the server that the hook ran in the worker.
import { serve } from "/worker/serve.js";

serve({
  compile: (intent) => ({
    payload: { ...intent.payload, shape: { ...intent.payload.shape, compiledBy: "worker" } },
    canvasIds: intent.canvasIds,
  }),
});
