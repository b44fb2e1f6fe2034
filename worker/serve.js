// @ts-check
// Worker mode, the worker's side: runs the real Scheduler (the `web` target) in a dedicated
// worker for the proxy in ./index.js. `serve(hooks)` answers the proxy's messages; `hooks` are
// the functions that cannot cross from the page: the synchronous `compile(intent, requestId,
// scheduler)` and `participants(intent, scheduler)` (handed the worker's scheduler to read), a
// custom `transport`, and optionally `headers`, `authorize`, `classifyError` (else those are
// asked of the page, one message each way per call) and an `onEvent(event, scheduler)` of the
// worker's own (the page's `onEvent` hears every event too, after it).
//
// Protocol (every message is a plain object with `t`):
//   in:  open {options, pageHooks} · call {id, method, args} (method "watch": track the ids
//        args[0]) · hold {hold} · release {hold} · start · stop {id} · hookResult {id, value | error}
//        · lifecycle {state: "hidden" | "shown"} (the page left or froze, or came back: a worker
//        has no page events of its own, so the page's side tells it)
//   out: alive {lock} (held while the worker lives) · opened {state} · openFailed {error}
//        result {id, value | error, state}
//        event {event, state} · state {state} · hook {id, name, args} · batch {messages}: those
//        sent in one turn of the worker's event loop, in order
// `state` is the mirror's update (./mirror.js): stats, claims and the operations that changed.
// Errors cross as {name, code, message} and are made into Errors again by the page.
import init, { Scheduler } from "../pkg/web/canvas_scheduler.js";
import { strings, Tracker } from "./mirror.js";
/** @import { ErrorCode, SchedulerEvent, SchedulerOptions } from "../pkg/web/canvas_scheduler.js" */
/** @import { ErrorData, InMessage, OutMessage, Update } from "./mirror.js" */
/** @import { WorkerHooks } from "./serve.js" */
/**
 * This dedicated worker's global scope, as far as serve() uses it (the DOM lib, which the
 * page's side needs and which conflicts with the WebWorker lib, types `self` as a Window).
 * @typedef {{ postMessage(message: OutMessage): void, onmessage: ((event: MessageEvent<InMessage>) => unknown) | null, close(): void }} WorkerScope
 */

const WORKER_HOOKS = ["compile", "participants", "coalesce", "transport", "headers", "authorize", "classifyError", "onEvent"];
const PAGE_HOOKS = ["headers", "authorize", "classifyError"];
/** The Scheduler methods a `call` message may name. */
const CALLS = ["enqueue", "enqueueMany", "resume", "retryAllNow", "settle", "whenSaved", "flush", "retry", "discard", "events", "known"];
/** How often the worker compares its state with what the page last got (stats, claims, every unsettled tracked operation). */
const POLL_MS = 100;
/** How long an event or a state update may wait to travel with the next message. */
const EVENT_DELAY_MS = 16;

/**
 * A thrown value as the page will see it: name, code, message (and which intent, `index` and
 * `operationId`, when it names one).
 * @param {any} error
 * @returns {ErrorData}
 */
export function errorData(error) {
  if (error instanceof Error || (error && typeof error === "object")) {
    /** @type {ErrorData} */
    const data = { name: String(error.name ?? "Error"), code: error.code === undefined ? undefined : String(error.code), message: String(error.message ?? error) };
    // Which intent of an enqueue or enqueueMany was refused.
    if (typeof error.index === "number") data.index = error.index;
    if (typeof error.operationId === "string") data.operationId = error.operationId;
    return data;
  }
  return { name: "Error", code: undefined, message: String(error) };
}

/**
 * @param {string} code
 * @param {string} message
 */
function codedError(code, message) {
  const error = /** @type {Error & { code: string }} */ (new Error(message));
  error.name = "CanvasSchedulerError";
  error.code = code;
  return error;
}

/**
 * Serves the scheduler in this dedicated worker. Call it once, at the top level of the worker
 * module (`serve({ compile, participants })`). Resolves when the worker is listening.
 * @param {WorkerHooks & Record<string, unknown>} [hooks] checked here: any other key fails the open
 * @returns {Promise<void>}
 */
export function serve(hooks = {}) {
  const unknown = Object.keys(hooks).filter((key) => !WORKER_HOOKS.includes(key));
  /** @type {Scheduler | null} */
  let scheduler = null;
  /** @type {Map<number, () => void>} */
  const holds = new Map(); // the page's hold id -> release function
  /** @type {Map<number, { resolve: (value: unknown) => void, reject: (error: unknown) => void }>} */
  const hookCalls = new Map(); // id -> { resolve, reject }
  let nextHook = 1;
  /** @type {InMessage[]} */
  const queued = []; // messages that arrived while opening
  let opening = false;
  const tracker = new Tracker();
  /** @type {number | null} */
  let pollTimer = null;

  // Messages go out in order, gathered into one `batch` per flush: a call's result (and a
  // hook's question) at the next turn of the worker's event loop, events and state updates
  // within EVENT_DELAY_MS, so that the page runs one task, not several, for an enqueue's
  // result and the events around it (each task the page runs costs it ~0.2 ms). The mirror's
  // update for the whole batch is taken once, at the flush, and goes first: every message of
  // the batch then finds the page's mirror at least as new as itself (a drag of 2,000 records
  // settles 2,000 replaced operations a move; an update per event cost the worker 2 ms each).
  /** @type {OutMessage[]} */
  let outbox = [];
  /** The operations the messages in `outbox` name, for the batch's update. */
  const named = new Set();
  let wantsUpdate = false;
  let forCall = false;
  let polling = false;
  /** @type {number | null} */
  let timer = null;
  let urgent = false;
  const flush = () => {
    clearTimeout(/** @type {number | undefined} */ (timer));
    timer = null;
    urgent = false;
    const messages = outbox;
    outbox = [];
    if (wantsUpdate && scheduler) {
      const update = tracker.update(scheduler, [...named], !forCall, polling);
      if (update) messages.unshift({ t: "state", state: update });
    }
    named.clear();
    wantsUpdate = false;
    forCall = false;
    polling = false;
    if (messages.length === 1) /** @type {WorkerScope} */ (self).postMessage(messages[0]);
    else if (messages.length > 1) /** @type {WorkerScope} */ (self).postMessage({ t: "batch", messages });
  };
  /**
   * Queues a message; `ids`: it wants the mirror's update for these (and stats, claims and
   * pending), taken at the flush.
   * @param {OutMessage} message
   * @param {string[]} [ids]
   */
  const post = (message, ids) => {
    outbox.push(message);
    if (ids) {
      for (const id of ids) named.add(id);
      wantsUpdate = true;
      if (message.t !== "event") forCall = true;
    }
    const now = message.t !== "event" && message.t !== "state";
    if (now && !urgent) {
      clearTimeout(/** @type {number | undefined} */ (timer));
      urgent = true;
      timer = setTimeout(flush, 0);
    } else if (timer === null) {
      timer = setTimeout(flush, EVENT_DELAY_MS);
    }
  };

  // Every update goes out through `flush`: one taken earlier and sent after a newer one
  // would set the page's mirror back.
  const poll = () => {
    polling = true;
    post({ t: "state" }, []);
  };

  /**
   * @param {string} name
   * @returns {(...args: unknown[]) => Promise<unknown>}
   */
  const askPage = (name) => (...args) =>
    new Promise((resolve, reject) => {
      const id = nextHook;
      nextHook += 1;
      hookCalls.set(id, { resolve, reject });
      post({ t: "hook", id, name, args });
    });

  /** @param {Extract<InMessage, { t: "open" }>} message */
  async function open({ options, pageHooks }) {
    if (unknown.length > 0) {
      throw codedError("invalid_options", `serve() takes the hooks ${WORKER_HOOKS.join(", ")}; not ${unknown.join(", ")}`);
    }
    const both = pageHooks.filter((name) => typeof hooks[name] === "function");
    if (both.length > 0) {
      throw codedError("invalid_options", `${both.join(", ")} given both to Scheduler.open on the page and to serve() in the worker: give each hook once`);
    }
    /** @type {SchedulerOptions & Record<string, unknown>} */
    const full = { ...options };
    for (const name of WORKER_HOOKS) if (hooks[name] !== undefined) full[name] = hooks[name];
    // `compile`, `participants` and `coalesce` are handed the worker's scheduler last: its synchronous
    // reads answer there, from the step the hook runs in (a hook here cannot reach it else).
    const { compile, participants, coalesce } = hooks;
    const ours = () => /** @type {Scheduler} */ (scheduler);
    if (typeof compile === "function") full.compile = (intent, requestId) => compile(intent, requestId, ours());
    if (typeof participants === "function") full.participants = (intent) => participants(intent, ours());
    if (typeof coalesce === "function") full.coalesce = (older, newer) => coalesce(older, newer, ours());
    for (const name of pageHooks) if (PAGE_HOOKS.includes(name)) full[name] = askPage(name);
    /** @type {SchedulerEvent[]} */
    const pending = [];
    full.onEvent = (event) => {
      if (!scheduler) {
        pending.push(event);
        return;
      }
      // The worker's own onEvent first, before anything else runs in the worker (state that
      // `compile` reads is up to date for the next request), then the page's.
      try {
        hooks.onEvent?.(event, scheduler);
      } catch {
        // What onEvent throws is ignored.
      }
      post({ t: "event", event }, tracker.idsOf(event));
    };
    await init();
    scheduler = await Scheduler.open(full);
    polling = true;
    post({ t: "opened" }, []);
    for (const event of pending) full.onEvent(event);
    pollTimer = setInterval(poll, POLL_MS);
  }

  /** @param {Extract<InMessage, { t: "call" }>} message */
  async function call({ id, method, args }) {
    if (method === "watch") {
      tracker.watch(/** @type {unknown[]} */ (args[0]));
      post({ t: "result", id, value: undefined }, strings(args[0]));
      return;
    }
    if (!CALLS.includes(method) || !Array.isArray(args)) {
      post({ t: "result", id, error: errorData(codedError("internal_error", `the worker has no call ${String(method)}`)) });
      return;
    }
    tracker.watch(tracker.idsOfCall(method, args));
    try {
      const value = await /** @type {any} */ (scheduler)[method](...args);
      post({ t: "result", id, value }, tracker.idsOfCall(method, args));
    } catch (error) {
      post({ t: "result", id, error: errorData(error) }, tracker.idsOfCall(method, args));
    }
  }

  /**
   * A synchronous method's failure reaches the page's onEvent as an `error` event.
   * @param {() => void} action
   */
  function synchronous(action) {
    try {
      action();
    } catch (error) {
      const { code, message } = errorData(error);
      post({ t: "event", event: { type: "error", code: /** @type {ErrorCode} */ (code ?? "internal_error"), message } }, []);
    }
    post({ t: "state" }, []);
  }

  /**
   * Runs once the scheduler is open (`scheduler` is set).
   * @param {InMessage} data
   */
  function handle(data) {
    switch (data.t) {
      case "call":
        return call(data);
      case "start":
        return synchronous(() => /** @type {Scheduler} */ (scheduler).start());
      case "hold":
        return synchronous(() => holds.set(data.hold, /** @type {Scheduler} */ (scheduler).hold()));
      case "release": {
        const release = holds.get(data.hold);
        holds.delete(data.hold);
        return release && synchronous(release);
      }
      case "lifecycle":
        // Not in the declarations: worker mode's own call (the page's side hears the page).
        /** @type {Scheduler & { pageLifecycle(state: string): void }} */ (scheduler).pageLifecycle(data.state);
        post({ t: "state" }, []);
        return undefined;
      case "stop":
        clearInterval(/** @type {number | undefined} */ (pollTimer));
        /** @type {Scheduler} */ (scheduler).stop();
        polling = true;
        post({ t: "result", id: data.id, value: undefined }, []);
        return undefined;
      default:
        return undefined;
    }
  }

  /** @type {WorkerScope} */ (self).onmessage = async ({ data }) => {
    if (data.t === "hookResult") {
      const waiting = hookCalls.get(data.id);
      hookCalls.delete(data.id);
      if (!waiting) return;
      if (data.error) waiting.reject(Object.assign(new Error(data.error.message), { name: data.error.name }));
      else waiting.resolve(data.value);
      return;
    }
    if (data.t === "open") {
      opening = true;
      try {
        await open(data);
      } catch (error) {
        post({ t: "openFailed", error: errorData(error) });
        flush();
        /** @type {WorkerScope} */ (self).close();
        return;
      }
      opening = false;
      for (const message of queued.splice(0)) handle(message);
      return;
    }
    if (opening || !scheduler) queued.push(data);
    else handle(data);
  };

  // Liveness: the page learns that this worker ended (terminated, crashed, closed) when it is
  // granted the lock this worker holds for as long as it lives.
  const lock = `canvas-scheduler-worker:${crypto.randomUUID()}`;
  return new Promise((listening) => {
    navigator.locks.request(lock, () => {
      post({ t: "alive", lock });
      listening();
      return new Promise(() => {});
    });
  });
}
