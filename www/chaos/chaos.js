// The page behind tests/e2e/chaos.mjs: runs the scheduler (session.js) in the page, or with
// ?worker=1 in a dedicated worker (worker.js), and exposes window.chaos: the session's methods
// (burst(n, pad), which enqueues n intents and resolves with the ids whose enqueue resolved;
// stats(), ledger(ids), events(), resume(), enqueueAgain(id) for a refused intent), acked(),
// and in worker mode killWorker(), which terminates the worker mid-work and resolves once a
// new one has opened the same ledger.
//
// Page parameters: ?server=<reference server URL>&db=<IndexedDB name>&seed=<n>&epoch=<k>[&worker=1].
// The test gives every page load its own epoch (each new worker adds a suffix), so ids never
// repeat. Each acknowledged id is appended to localStorage (synchronously) and reported to the
// test through window.chaosAck when the test exposed it.
import { openSession } from "./session.js";

const params = new URLSearchParams(location.search);
const options = {
  server: (params.get("server") ?? "").replace(/\/+$/, ""),
  database: params.get("db") ?? "chaos",
  seed: Number(params.get("seed") ?? "1") >>> 0,
  epoch: params.get("epoch") ?? "0",
};
const ACK_KEY = `chaos:${options.database}:acked`;
/** What window.chaos passes on to the session (session.js), in the page or in the worker. */
const SESSION_METHODS = ["burst", "stats", "ledger", "events", "resume", "enqueueAgain", "stop"];

function ack(id) {
  const list = localStorage.getItem(ACK_KEY);
  localStorage.setItem(ACK_KEY, list ? `${list},${id}` : id);
  // The test's binding may be gone if the page is being killed: what matters is localStorage.
  Promise.resolve(window.chaosAck?.(id)).catch(() => {});
}

/** The session in a dedicated worker: the same methods, each a message and its answer. */
class WorkerSession {
  static async start(epoch) {
    const session = new WorkerSession(new Worker(new URL("./worker.js", import.meta.url), { type: "module" }));
    await session.opened({ ...options, epoch });
    return session;
  }

  constructor(worker) {
    this.worker = worker;
    this.calls = new Map();
    this.nextCall = 0;
    this.waiting = null;
    worker.onmessage = ({ data }) => {
      if (data.type === "ack") ack(data.id);
      else if (data.type === "ready") this.waiting?.resolve();
      else if (data.type === "failed") this.waiting?.reject(new Error(data.message));
      else if (data.type === "result") {
        const call = this.calls.get(data.id);
        this.calls.delete(data.id);
        if (data.error !== undefined) call?.reject(new Error(data.error));
        else call?.resolve(data.value);
      }
    };
    worker.onerror = (event) => this.waiting?.reject(new Error(`worker: ${event.message}`));
  }

  opened(params) {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.worker.postMessage({ type: "open", params });
    });
  }

  call(method, ...args) {
    return new Promise((resolve, reject) => {
      const id = this.nextCall++;
      this.calls.set(id, { resolve, reject });
      this.worker.postMessage({ type: "call", id, method, args });
    });
  }

  /** Ends the worker at once; calls still waiting for an answer reject. */
  kill() {
    this.worker.terminate();
    for (const call of this.calls.values()) call.reject(new Error("worker terminated"));
    this.calls.clear();
  }

}
for (const method of SESSION_METHODS) {
  WorkerSession.prototype[method] = function (...args) {
    return this.call(method, ...args);
  };
}

let session = null;
let workers = 0;

try {
  if (params.get("worker") === "1") {
    session = await WorkerSession.start(`${options.epoch}w${workers}`);
  } else {
    session = await openSession({ ...options, ack });
    // Frees the lease at once so the next page need not wait for it to lapse.
    addEventListener("pagehide", () => session.stop());
  }
  window.chaos = {
    // Looked up on every call: killWorker() replaces the session.
    ...Object.fromEntries(SESSION_METHODS.map((method) => [method, (...args) => session[method](...args)])),
    acked: () => (localStorage.getItem(ACK_KEY) ?? "").split(",").filter(Boolean),
    async killWorker() {
      session.kill();
      workers += 1;
      session = await WorkerSession.start(`${options.epoch}w${workers}`);
    },
  };
  document.body.dataset.status = "ready";
} catch (error) {
  console.error(`chaos page: ${error?.code ?? ""} ${error?.message ?? error}`);
  document.body.dataset.status = "error";
}
