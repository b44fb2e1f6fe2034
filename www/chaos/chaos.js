// The page behind tests/e2e/chaos.mjs: runs the scheduler (session.js) in the page, or with
// ?worker=1 in a dedicated worker through the package's worker mode (/worker/), and exposes window.chaos: the session's methods
// (burst(n, pad), which enqueues n intents and resolves with the ids whose enqueue resolved;
// burstMany(n, pad), the same in one enqueueMany;
// flood(ms, max), which enqueues back to back for ms and resolves with {count, ms};
// stats(), ledger(ids), events(), resume(), enqueueAgain(id) and enqueueManyAgain(ids) for
// refused intents), acked(),
// and in worker mode killWorker(), which terminates the worker mid-work and resolves once a
// new one has opened the same ledger.
//
// Page parameters: ?server=<reference server URL>&db=<IndexedDB name>&seed=<n>&epoch=<k>[&worker=1]
// [&batch=<max edits a request>].
// The test gives every page load its own epoch (each new worker adds a suffix), so ids never
// repeat. Each acknowledged id is appended to localStorage (synchronously) and reported to the
// test through window.chaosAck when the test exposed it.
import initWorker, { Scheduler as WorkerScheduler } from "/worker/index.js";
import { openSession } from "./session.js";

const params = new URLSearchParams(location.search);
const options = {
  server: (params.get("server") ?? "").replace(/\/+$/, ""),
  database: params.get("db") ?? "chaos",
  seed: Number(params.get("seed") ?? "1") >>> 0,
  epoch: params.get("epoch") ?? "0",
  batch: Number(params.get("batch") ?? "0"),
};
const ACK_KEY = `chaos:${options.database}:acked`;
/** What window.chaos passes on to the session (session.js), in the page or in the worker. */
const SESSION_METHODS = ["burst", "burstMany", "flood", "stats", "ledger", "events", "resume", "enqueueAgain", "enqueueManyAgain", "stop"];

function ack(id) {
  const list = localStorage.getItem(ACK_KEY);
  localStorage.setItem(ACK_KEY, list ? `${list},${id}` : id);
  // The test's binding may be gone if the page is being killed: what matters is localStorage.
  Promise.resolve(window.chaosAck?.(id)).catch(() => {});
}

/**
 * A session whose scheduler runs in a dedicated worker through the package's worker mode
 * (`canvas-scheduler/worker`, served from /worker/): the page makes the worker from the
 * package's own worker module so that `kill()` can terminate it.
 */
async function startWorkerSession(epoch) {
  let worker = null;
  const api = {
    init: initWorker,
    Scheduler: WorkerScheduler,
    // A fresh worker per attempt: a refused open ends the worker it was given.
    worker: () => (worker = new Worker("/worker/worker.js", { type: "module" })),
  };
  const session = await openSession({ ...options, epoch, ack, api });
  return { ...session, kill: () => worker.terminate() };
}

let session = null;
let workers = 0;
document.body.dataset.phase = "module";

try {
  if (params.get("worker") === "1") {
    session = await startWorkerSession(`${options.epoch}w${workers}`);
  } else {
    // No stop() on pagehide: the scheduler lets the lease go itself when the page leaves.
    session = await openSession({ ...options, ack });
  }
  window.chaos = {
    // Looked up on every call: killWorker() replaces the session.
    ...Object.fromEntries(SESSION_METHODS.map((method) => [method, (...args) => session[method](...args)])),
    acked: () => (localStorage.getItem(ACK_KEY) ?? "").split(",").filter(Boolean),
    async killWorker() {
      session.kill();
      workers += 1;
      session = await startWorkerSession(`${options.epoch}w${workers}`);
    },
  };
  document.body.dataset.status = "ready";
} catch (error) {
  console.error(`chaos page: ${error?.code ?? ""} ${error?.message ?? error}`);
  document.body.dataset.status = "error";
}
