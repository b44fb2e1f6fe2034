// The worker mode test page (tests/e2e/worker_mode.mjs): imports the package's worker entry
// as served from the repository (/worker/index.js) and exposes `window.wm` for the test to
// drive. ?server=<reference server>&db=<ledger name>.
import init, { Scheduler } from "/worker/index.js";

const query = new URLSearchParams(location.search);
const events = [];
const headerCalls = { count: 0 };
const authorizeCalls = []; // the operation ids of each request the page's authorize hook saw

/** A thrown value as plain data the test can compare. */
const failure = (error) => ({ isError: error instanceof Error, name: error?.name, code: error?.code, message: error?.message, index: error?.index, operationId: error?.operationId });

window.wm = {
  events,
  headerCalls,
  authorizeCalls,
  scheduler: null,
  worker: null,
  /**
   * Opens worker mode. `custom`: the page makes the worker itself (and keeps it as `wm.worker`):
   * "hooks" is www/worker/hooks.worker.js (a compile hook in the worker), "default" the
   * package's own worker module; otherwise the proxy makes its own.
   */
  async open({ custom, start = true, extra = {} } = {}) {
    await init();
    const modules = { hooks: "./hooks.worker.js", default: "/worker/worker.js" };
    const worker = custom ? new Worker(new URL(modules[custom], import.meta.url), { type: "module" }) : undefined;
    this.worker = worker ?? null;
    const started = Date.now();
    for (;;) {
      try {
        this.scheduler = await Scheduler.open({
          database: query.get("db"),
          endpoint: query.get("server"),
          leaseMs: 1000,
          retry: { baseMs: 50, maxMs: 200, maxAttempts: 3 },
          onEvent: (event) => events.push(event),
          headers: async () => {
            headerCalls.count += 1;
            return { "x-from-page": "1" };
          },
          authorize: async ({ request }) => {
            authorizeCalls.push(request.operationIds);
            return { allowed: true };
          },
          ...(worker ? { worker } : {}),
          ...extra,
        });
        break;
      } catch (error) {
        if (error?.code !== "not_leader" || Date.now() - started > 15_000) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    if (start) this.scheduler.start();
    return this.scheduler.stats();
  },
  /** Resolves to what `Scheduler.open(options)` rejected with, or "opened"; `module`: a worker module to pass. */
  async openFails(options, module) {
    try {
      const worker = module ? { worker: new Worker(new URL(module, import.meta.url), { type: "module" }) } : {};
      const scheduler = await Scheduler.open({ database: query.get("db"), endpoint: query.get("server"), ...options, ...worker });
      scheduler.stop();
      return "opened";
    } catch (error) {
      return failure(error);
    }
  },
  /** Resolves to "ok" or to what the promise rejected with. */
  async outcome(promise) {
    try {
      await promise;
      return "ok";
    } catch (error) {
      return failure(error);
    }
  },
  /** What a synchronous call threw, or "ok". */
  thrown(action) {
    try {
      action();
      return "ok";
    } catch (error) {
      return failure(error);
    }
  },
  /** The settled event of `id`, once it arrived. */
  settled(id) {
    return events.find((event) => event.type === "settled" && event.operationId === id) ?? null;
  },
};
document.body.dataset.ready = "1";
