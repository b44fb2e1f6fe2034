// An app's worker module that gives `headers` to serve() (tests/e2e/worker_mode.mjs): opening it
// with a page-side `headers` too must be refused (a hook is given once).
import { serve } from "/worker/serve.js";

serve({ headers: () => ({ "x-from-worker": "1" }) });
