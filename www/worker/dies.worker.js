// A worker that ends while the scheduler is being opened (tests/e2e/worker_mode.mjs): it serves,
// then closes itself when the page's `open` message arrives; `Scheduler.open` must reject.
import { serve } from "/worker/serve.js";

serve();
const served = self.onmessage;
self.onmessage = (event) => (event.data.t === "open" ? self.close() : served(event));
