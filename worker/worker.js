// @ts-check
// Worker mode's default worker module: the scheduler with no worker-side hooks. An app that
// needs `compile`, `participants` or a custom `transport` writes its own worker module calling
// `serve({ ... })` from canvas-scheduler/worker/serve and passes it as `options.worker`.
import { serve } from "./serve.js";

serve();
