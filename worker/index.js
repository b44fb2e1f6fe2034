// @ts-check
// Worker mode, the page's side (`canvas-scheduler/worker`): a `Scheduler` with the API of the
// package's own, whose scheduler runs in a dedicated worker (./worker.js by default, or the
// app's own worker module calling `serve()` from ./serve.js). Calls are messages; `stats()`,
// `claims()`, `explain(id)` and `operation(id)` answer from a mirror the worker keeps up to
// date (./mirror.js); `onEvent` and the async hooks `headers`, `authorize`, `classifyError`
// run on the page. docs/worker-mode.md says what differs. The page's lifecycle is heard here
// (a worker has no page events) and told to the worker: `pagehide` and `freeze` pause its
// scheduler, `pageshow` from the back/forward cache and `resume` start it again. Persistent
// storage is asked here too: `navigator.storage.persist()` exists only in a Window.
import { Mirror } from "./mirror.js";
/** @import { WorkerSchedulerOptions } from "./index.js" */
/** @import { EnqueueManyOptions, OperationIntent, PendingOperation, SavedState, SchedulerEvent } from "../pkg/web/canvas_scheduler.js" */
/** @import { ErrorData, InMessage, OutMessage } from "./mirror.js" */

const ERROR_NAME = "CanvasSchedulerError";
/** @type {("headers" | "authorize" | "classifyError")[]} */
const PAGE_HOOKS = ["headers", "authorize", "classifyError"];
/** @type {("compile" | "participants" | "coalesce" | "transport")[]} */
const WORKER_ONLY = ["compile", "participants", "coalesce", "transport"];

/**
 * @param {string} code
 * @param {string} message
 */
function codedError(code, message) {
  const error = /** @type {Error & { code: string }} */ (new Error(message));
  error.name = ERROR_NAME;
  error.code = code;
  return error;
}

/**
 * An Error made again from what crossed: the same name, code and message.
 * @param {ErrorData} data
 */
function revive({ name, code, message, index, operationId }) {
  const error = /** @type {Error & { code?: string, index?: number, operationId?: string }} */ (new Error(message));
  error.name = name;
  if (code !== undefined) error.code = code;
  if (index !== undefined) error.index = index;
  if (operationId !== undefined) error.operationId = operationId;
  return error;
}

/** How long a new worker may take to load its module and say it is listening. */
const ALIVE_MS = 30_000;
const ENDED = "the scheduler's worker ended (terminated or crashed): open the scheduler again with Scheduler.open";

/** Worker mode needs no separate init: the worker loads the .wasm. Resolves at once. */
export default async function init() {}

/** A scheduler running in a dedicated worker; see `Scheduler.open`. */
export class Scheduler {
  /** @type {Worker} */
  #worker;
  /** @type {Map<number, { resolve: (value: any) => void, reject: (error: unknown) => void }>} */
  #calls = new Map(); // id -> { resolve, reject }
  #nextId = 1;
  #nextHold = 1;
  #mirror = new Mirror();
  /** @type {Record<string, (...args: any[]) => unknown>} */
  #hooks;
  /** @type {((event: SchedulerEvent) => void) | undefined} */
  #onEvent;
  /** @type {Error | null} */
  #ended = null; // the reason every call now rejects with
  #stopped = false;
  /** What the browser said of persistent storage, asked on the page (null: not yet, or no API). */
  /** @type {boolean | null} */
  #persisted = null;
  /** The page's lifecycle listeners, removed at the end. */
  /** @type {(() => void) | null} */
  #unlisten = null;

  /**
   * @param {symbol} token
   * @param {Worker} worker
   * @param {Record<string, (...args: any[]) => unknown>} hooks
   * @param {((event: SchedulerEvent) => void) | undefined} onEvent
   */
  constructor(token, worker, hooks, onEvent) {
    if (token !== PRIVATE) throw new TypeError("use Scheduler.open");
    this.#worker = worker;
    this.#hooks = hooks;
    this.#onEvent = onEvent;
  }

  /**
   * Starts the worker (`options.worker`, or the package's own) and opens the scheduler there.
   * Rejects as the page's `Scheduler.open` does, and with `invalid_options` for what cannot
   * cross to a worker.
   * @param {WorkerSchedulerOptions} options
   */
  static async open(options) {
    if (options === null || typeof options !== "object") throw codedError("invalid_options", "Scheduler.open takes an options object");
    const { worker: given, onEvent, ...rest } = options;
    for (const name of WORKER_ONLY) {
      if (rest[name] !== undefined) {
        throw codedError(
          "invalid_options",
          `${name} cannot cross to the scheduler's worker: give it to serve({ ${name} }) in your own worker module and pass that Worker as options.worker (docs/worker-mode.md)`,
        );
      }
    }
    if (onEvent !== undefined && typeof onEvent !== "function") throw codedError("invalid_options", "onEvent must be a function");
    if (given !== undefined && !(typeof Worker !== "undefined" && given instanceof Worker)) {
      throw codedError("invalid_options", "options.worker must be a Worker running serve() from canvas-scheduler/worker/serve");
    }
    /** @type {Record<string, (...args: any[]) => unknown>} */
    const hooks = {};
    for (const name of PAGE_HOOKS) {
      if (rest[name] === undefined) continue;
      if (typeof rest[name] !== "function") throw codedError("invalid_options", `${name} must be a function`);
      hooks[name] = rest[name];
      delete rest[name];
    }
    const worker = given ?? new Worker(new URL("./worker.js", import.meta.url), { type: "module", name: "canvas-scheduler" });
    const scheduler = new Scheduler(PRIVATE, worker, hooks, onEvent);
    try {
      await scheduler.#connect(rest, Object.keys(hooks));
    } catch (error) {
      worker.terminate();
      throw error;
    }
    scheduler.#listen();
    scheduler.#askPersistence(rest.persist !== false);
    return scheduler;
  }

  /** Tells the worker when the page leaves or freezes, and when it comes back. */
  #listen() {
    if (typeof document === "undefined") return;
    /** @param {"hidden" | "shown"} state */
    const tell = (state) => {
      if (this.#stopped || this.#ended) return;
      try {
        this.#worker.postMessage({ t: "lifecycle", state });
      } catch {
        // The worker is gone: the lock watch ends the proxy.
      }
    };
    const hidden = () => tell("hidden");
    const shown = () => tell("shown");
    const restored = (/** @type {PageTransitionEvent} */ event) => {
      if (event.persisted) shown();
    };
    addEventListener("pagehide", hidden);
    addEventListener("pageshow", restored);
    document.addEventListener("freeze", hidden);
    document.addEventListener("resume", shown);
    this.#unlisten = () => {
      removeEventListener("pagehide", hidden);
      removeEventListener("pageshow", restored);
      document.removeEventListener("freeze", hidden);
      document.removeEventListener("resume", shown);
    };
  }

  /**
   * Asks for persistent storage once (with `ask`; else only reads whether it is), without
   * waiting: `stats().persisted` reports the answer once there is one.
   * @param {boolean} ask
   */
  async #askPersistence(ask) {
    try {
      const storage = typeof navigator === "undefined" ? undefined : navigator.storage;
      if (typeof storage?.persisted !== "function") return;
      let persisted = await storage.persisted();
      if (!persisted && ask && typeof storage.persist === "function") persisted = await storage.persist();
      if (typeof persisted === "boolean") this.#persisted = persisted;
    } catch {
      // No answer: stats() says what the worker knows.
    }
  }

  /**
   * Waits for the worker, then opens; resolves once the scheduler is open there.
   * @param {Omit<WorkerSchedulerOptions, "worker" | "onEvent">} options
   * @param {string[]} pageHooks
   * @returns {Promise<void>}
   */
  #connect(options, pageHooks) {
    return new Promise((resolve, reject) => {
      let opened = false;
      const fail = (/** @type {Error} */ error) => {
        clearTimeout(silent);
        if (!opened) reject(error);
        this.#end(error);
      };
      const silent = setTimeout(
        () => fail(codedError("invalid_options", `the scheduler's worker did not answer within ${ALIVE_MS / 1000} s: its module must call serve() from canvas-scheduler/worker/serve`)),
        ALIVE_MS,
      );
      this.#worker.onerror = (event) => {
        if (opened) return; // reported by the browser as usual; the worker goes on
        event.preventDefault?.();
        fail(codedError("internal_error", `the scheduler's worker failed to start: ${event.message ?? "error"}`));
      };
      this.#worker.onmessageerror = () => fail(codedError("internal_error", "a message from the scheduler's worker could not be read"));
      const handle = (/** @type {OutMessage} */ data) => {
        switch (data.t) {
          case "batch":
            data.messages.forEach(handle);
            return;
          case "alive":
            clearTimeout(silent);
            navigator.locks.request(data.lock, () => fail(codedError("scheduler_closed", ENDED)));
            try {
              this.#worker.postMessage({ t: "open", options, pageHooks });
            } catch (/** @type {any} */ error) {
              fail(codedError("invalid_options", `the options cannot be sent to the scheduler's worker (${error?.message}): only plain data crosses, hooks as docs/worker-mode.md says`));
            }
            return;
          case "opened":
            opened = true;
            this.#mirror.apply(data.state);
            resolve();
            return;
          case "openFailed":
            fail(revive(data.error));
            return;
          default:
            this.#receive(data);
        }
      };
      this.#worker.onmessage = ({ data }) => handle(data);
    });
  }

  /** @param {Exclude<OutMessage, { t: "batch" | "alive" | "opened" | "openFailed" }>} data */
  #receive(data) {
    this.#mirror.apply(data.state);
    switch (data.t) {
      case "result": {
        const call = this.#calls.get(data.id);
        this.#calls.delete(data.id);
        if (!call) return;
        if (data.error) call.reject(revive(data.error));
        else call.resolve(data.value);
        return;
      }
      case "event":
        try {
          this.#onEvent?.(data.event);
        } catch {
          // What onEvent throws is ignored.
        }
        return;
      case "hook":
        this.#answerHook(data);
        return;
      default:
    }
  }

  /** @param {{ id: number, name: string, args: unknown[] }} hook */
  async #answerHook({ id, name, args }) {
    let answer;
    try {
      answer = { t: "hookResult", id, value: await this.#hooks[name](...args) };
    } catch (/** @type {any} */ error) {
      answer = { t: "hookResult", id, error: { name: String(error?.name ?? "Error"), message: String(error?.message ?? error) } };
    }
    try {
      this.#worker.postMessage(answer);
    } catch (/** @type {any} */ error) {
      this.#worker.postMessage({ t: "hookResult", id, error: { name: "DataCloneError", message: `${name} returned what cannot be sent to the worker: ${error?.message}` } });
    }
  }

  /**
   * The worker ended: every pending and later call rejects with `error`.
   * @param {Error} error
   */
  #end(error) {
    if (this.#ended) return;
    this.#ended = error;
    this.#unlisten?.();
    for (const call of this.#calls.values()) call.reject(error);
    this.#calls.clear();
    this.#worker.terminate();
  }

  /** @param {InMessage} message */
  #post(message) {
    if (this.#ended) throw this.#ended;
    try {
      this.#worker.postMessage(message);
    } catch (/** @type {any} */ error) {
      throw codedError("invalid_intent", `the argument cannot be sent to the scheduler's worker: ${error?.message}`);
    }
  }

  /**
   * @param {string} method
   * @param {...unknown} args
   */
  #call(method, ...args) {
    return new Promise((resolve, reject) => {
      if (this.#ended) {
        reject(this.#ended);
        return;
      }
      const id = this.#nextId;
      this.#nextId += 1;
      this.#calls.set(id, { resolve, reject });
      try {
        this.#post({ t: "call", id, method, args });
      } catch (error) {
        this.#calls.delete(id);
        reject(error);
      }
    });
  }

  #closed() {
    if (this.#stopped) throw codedError("scheduler_closed", "the scheduler was stopped");
    if (this.#ended) throw this.#ended;
  }

  /** @param {OperationIntent} intent */
  enqueue(intent) {
    return this.#call("enqueue", intent);
  }

  /**
   * The worker's scheduler checks the options as the page's does; what cannot be sent to it
   * (a function, a Proxy) is refused here with the same code.
   * @param {OperationIntent[]} intents
   * @param {EnqueueManyOptions} [options]
   * @returns {Promise<any>}
   */
  enqueueMany(intents, options) {
    if (options === undefined) return this.#call("enqueueMany", intents);
    let sent;
    try {
      sent = structuredClone(options);
    } catch (/** @type {any} */ error) {
      return Promise.reject(codedError("invalid_options", `enqueueMany: the options cannot be sent to the scheduler's worker: ${error?.message}`));
    }
    return this.#call("enqueueMany", intents, sent);
  }

  start() {
    this.#closed();
    this.#post({ t: "start" });
  }

  hold() {
    this.#closed();
    const hold = this.#nextHold;
    this.#nextHold += 1;
    this.#post({ t: "hold", hold });
    let released = false;
    return () => {
      if (released || this.#ended) return;
      released = true;
      this.#post({ t: "release", hold });
    };
  }

  resume() {
    return this.#call("resume");
  }

  retryAllNow() {
    return this.#call("retryAllNow");
  }

  settle() {
    return this.#call("settle");
  }

  /**
   * Answered by the worker's scheduler.
   * @returns {Promise<SavedState>}
   */
  whenSaved() {
    return this.#call("whenSaved");
  }

  /**
   * From the mirror (as fresh as its last update).
   * @returns {PendingOperation[]}
   */
  pending() {
    return this.#mirror.pending;
  }

  stop() {
    if (this.#stopped || this.#ended) return;
    this.#stopped = true;
    if (this.#mirror.stats) this.#mirror.stats = { ...this.#mirror.stats, idleReason: "stopped" };
    const id = this.#nextId;
    this.#nextId += 1;
    this.#calls.set(id, {
      resolve: () => this.#end(codedError("scheduler_closed", "the scheduler was stopped")),
      reject: () => {},
    });
    this.#post({ t: "stop", id });
  }

  claims() {
    return structuredClone(this.#mirror.claims);
  }

  /** @param {string} id */
  operation(id) {
    // The mirror's entry is a fresh parse: the caller's copy.
    return this.#entry(id)?.record;
  }

  /** @param {string} id */
  explain(id) {
    const entry = this.#entry(id);
    if (!entry) {
      throw codedError(
        "unknown_operation",
        `operation ${id} is not in this page's mirror of the worker yet: it is being fetched; await scheduler.sync() and ask again`,
      );
    }
    if (entry.error) throw revive(entry.error);
    return entry.explanation;
  }

  /**
   * The mirror's entry for `id`; a miss asks the worker to send it.
   * @param {string} id
   */
  #entry(id) {
    const entry = this.#mirror.entry(id);
    if (!entry && typeof id === "string" && !this.#ended) this.#call("watch", [id]).catch(() => {});
    return entry;
  }

  stats() {
    const stats = structuredClone(this.#mirror.stats);
    if (stats && this.#persisted !== null) stats.persisted = this.#persisted;
    return stats;
  }

  /** @param {string} id */
  flush(id) {
    return this.#call("flush", id);
  }

  /** @param {string} id */
  retry(id) {
    return this.#call("retry", id);
  }

  /** @param {string} id */
  discard(id) {
    return this.#call("discard", id);
  }

  /** @param {{ after?: number, limit?: number }} [options] */
  events(options) {
    return this.#call("events", options);
  }

  /**
   * Asked of the worker's ledger (tombstones included), as the page's `known(ids)`.
   * @param {string[]} ids
   */
  known(ids) {
    return this.#call("known", ids);
  }

  /**
   * Worker mode only: resolves once the mirror holds the worker's state as of now, with `ids`
   * (optional) tracked from then on, so `explain`/`operation` answer for them.
   * @param {string[]} [ids]
   */
  sync(ids = []) {
    if (!Array.isArray(ids)) return Promise.reject(codedError("invalid_intent", "sync(ids): ids must be an array of operation ids"));
    if (this.#stopped) return Promise.resolve();
    return this.#call("watch", ids);
  }

  /** Stops the scheduler and ends the worker. */
  free() {
    this.stop();
  }

  [Symbol.dispose]() {
    this.free();
  }
}

const PRIVATE = Symbol("Scheduler.open");
