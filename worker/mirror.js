// @ts-check
// Worker mode's mirror of the scheduler's state, so the page answers `stats()`, `claims()`,
// `explain(id)` and `operation(id)` synchronously. The worker's `Tracker` computes what changed
// since the page's last update; the page's `Mirror` applies the updates and answers from them.
//
// An update is `{ stats?, claims?, pending?, ops?: [ids, settled, jsons] }`, each part present
// only when it changed; `ops` lists the operations in three arrays of the same length, their ids,
// whether each is settled (1) or not (0), and `jsons[i]` the entry of `ids[i]`, `{ record, explanation }` or
// `{ record, error }`, as JSON text (the worker writes it anyway to see what changed), and
// `pending` is `pending()`'s JSON text. Text crosses `postMessage` as one copy where an object
// graph is cloned field by field, and the page parses an entry only when `operation(id)` or
// `explain(id)` asks for it, `pending` only when `pending()` does: a drag of 2,000 records
// names 4,000 entries a move and changes a 2,000-item `pending()`, which the page mostly never
// reads. Three arrays, not an object keyed by id: an object of 2,000 ids cost the page's
// structured clone 11.6 ms against 3.6 ms for the arrays (both ways, measured in Chromium).
// Records and
// explanations come out of the module through JSON (the `OperationRecord` and `Explanation`
// declarations say their shape), so the text holds
// all they hold. Which operations: every id a call through the proxy
// named (enqueue, flush, explain, ...) or an event named (settled, blocked, dead_lettered), and
// the ids the page asked to watch. At most `LIMIT` ids are kept; past that the resolved ones
// are dropped oldest first (a resolved operation no longer changes, and asking for it again
// fetches it again).
/**
 * @import { CompactedOperation, Explanation, OperationRecord, PendingOperation, Scheduler, SchedulerEvent, SchedulerOptions, SchedulerStats }
 *   from "../pkg/web/canvas_scheduler.js"
 */

/**
 * A thrown value as it crosses between the worker and the page.
 * @typedef {{ name: string, code?: string, message: string, index?: number, operationId?: string }} ErrorData
 */
/**
 * What `operation(id)` answers. A tombstone has no `phase`: reading it gives undefined.
 * @typedef {OperationRecord | (CompactedOperation & { phase?: undefined })} EntryRecord
 */
/**
 * One operation in an update: its record and its explanation, or the error `explain(id)` threw.
 * @typedef {{ record: EntryRecord | undefined, explanation: Explanation, error?: undefined }
 *   | { record: EntryRecord | undefined, error: ErrorData, explanation?: undefined }} Entry
 */
/**
 * An update of the mirror; each part present only when it changed.
 * @typedef {{ stats?: SchedulerStats, claims?: Record<string, string>, pending?: string, ops?: [string[], (0 | 1)[], string[]] }} Update
 */
/**
 * An entry as it crosses: whether its operation is settled (1) or not (0), and the entry as JSON.
 * @typedef {[0 | 1, string]} SentEntry
 */
/**
 * The messages between the page (./index.js) and the worker (./serve.js), as ./serve.js
 * describes them. What the worker gets:
 * @typedef {{ t: "open", options: SchedulerOptions, pageHooks: string[] }
 *   | { t: "lifecycle", state: "hidden" | "shown" }
 *   | { t: "call", id: number, method: string, args: unknown[] }
 *   | { t: "hold", hold: number }
 *   | { t: "release", hold: number }
 *   | { t: "start" }
 *   | { t: "stop", id: number }
 *   | { t: "hookResult", id: number, value?: unknown, error?: { name: string, message: string } }} InMessage
 */
/**
 * What the page gets:
 * @typedef {{ t: "alive", lock: string }
 *   | { t: "opened", state?: Update }
 *   | { t: "openFailed", error: ErrorData }
 *   | { t: "result", id: number, value?: unknown, error?: ErrorData, state?: Update }
 *   | { t: "event", event: SchedulerEvent, state?: Update }
 *   | { t: "state", state?: Update }
 *   | { t: "hook", id: number, name: string, args: unknown[], state?: undefined }
 *   | { t: "batch", messages: OutMessage[] }} OutMessage
 */

const LIMIT = 10_000;
/** Unsettled operations a poll refreshes at most (in turn, when there are more). */
const POLL_BATCH = 100;
/** How stale the page's `pending()` may get while events stream in (polls refresh it too). */
const PENDING_MS = 100;
/** While events stream in, `pending()` takes at most this share of the worker's time (it walks
 * every unsettled operation: 2,000 unsettled records cost it tens of milliseconds). */
const PENDING_SHARE = 0.1;

/**
 * The strings among `values` (none when it is not an array: it came from the page).
 * @param {unknown} values
 * @returns {string[]}
 */
export const strings = (values) => (Array.isArray(values) ? values.filter((value) => typeof value === "string") : []);

/**
 * Whether an operation no longer changes: resolved, compacted to its tombstone, or unknown.
 * @param {EntryRecord | undefined} record
 */
export const settled = (record) => record === undefined || "compacted" in record || record.phase === "resolved";

/** The worker's side: remembers what the page has and computes the difference. */
export class Tracker {
  constructor() {
    /** @type {Map<string, string | null>} */
    this.sent = new Map(); // id -> the JSON of what the page has (null: must be sent)
    /** @type {Set<string>} */
    this.unsettled = new Set();
    /** @type {string | null} */
    this.stats = null;
    /** @type {string | null} */
    this.claims = null;
    /** @type {string | null} */
    this.pending = null;
    /** When `pending()` was last taken (Date.now()), and how long it took. */
    this.pendingAt = 0;
    this.pendingCost = 0;
    this.cursor = 0;
    /** The size past which `trim` walks again. */
    this.trimAt = LIMIT;
  }

  /** The unsettled operations this poll refreshes: all, or the next POLL_BATCH of them. */
  pollIds() {
    const all = [...this.unsettled];
    if (all.length <= POLL_BATCH) return all;
    const start = this.cursor % all.length;
    this.cursor = start + POLL_BATCH;
    return [...all.slice(start, start + POLL_BATCH), ...all.slice(0, Math.max(0, start + POLL_BATCH - all.length))];
  }

  /**
   * Ids an event names.
   * @param {{ type?: string, operationIds?: unknown[], operationId?: unknown } | undefined} event
   */
  idsOf(event) {
    if (event?.type === "dead_lettered") return strings(event.operationIds ?? []);
    return strings([event?.operationId]);
  }

  /**
   * Ids a proxied call names.
   * @param {string} method
   * @param {any[]} args what the page sent
   */
  idsOfCall(method, args) {
    if (method === "enqueue") return strings([args[0]?.id]);
    if (method === "enqueueMany") return Array.isArray(args[0]) ? strings(args[0].map((intent) => intent?.id)) : [];
    if (["flush", "retry", "discard", "explain", "operation"].includes(method)) return strings([args[0]]);
    return [];
  }

  /**
   * Starts tracking `ids`; each is sent in full with the next update.
   * @param {unknown[]} ids
   */
  watch(ids) {
    for (const id of strings(ids)) {
      this.sent.delete(id);
      this.sent.set(id, null);
      this.unsettled.add(id);
    }
    this.trim();
  }

  /** Drops resolved ids, oldest first, down to LIMIT, once the map has grown a tenth of LIMIT
   * past where the last trim left it: the walk past the unsettled ids at its head is paid once
   * per LIMIT / 10 new ids, not once per id (1.5 s of a 2,000-record drag's 10 s). */
  trim() {
    if (this.sent.size <= this.trimAt) return;
    for (const id of this.sent.keys()) {
      if (this.sent.size <= LIMIT) break;
      if (!this.unsettled.has(id)) this.sent.delete(id);
    }
    this.trimAt = Math.max(LIMIT, this.sent.size) + LIMIT / 10;
  }

  /**
   * The update for the page: stats and claims, the operations in `named`, and, with `poll`, the
   * tracked ones not yet resolved (`pollIds`). Undefined when nothing changed. `pending()` costs
   * a walk of every unsettled operation, so an update for events (a burst of 2,000 `settled`
   * events, say) takes it again only once `PENDING_MS` passed since the last and at most
   * `PENDING_SHARE` of the time: calls and polls always take it.
   * @param {Scheduler} scheduler
   * @param {string[]} named
   * @param {boolean} [forEvent]
   * @param {boolean} [poll]
   * @returns {Update | undefined}
   */
  update(scheduler, named, forEvent = false, poll = named.length === 0) {
    /** @type {Update} */
    const update = {};
    const stats = scheduler.stats();
    const statsJson = JSON.stringify(stats);
    if (statsJson !== this.stats) {
      this.stats = statsJson;
      update.stats = stats;
    }
    const claims = scheduler.claims();
    const claimsJson = JSON.stringify(claims);
    if (claimsJson !== this.claims) {
      this.claims = claimsJson;
      update.claims = claims;
    }
    const now = Date.now();
    const wait = Math.max(PENDING_MS, this.pendingCost / PENDING_SHARE);
    if (!forEvent || Math.abs(now - this.pendingAt) >= wait) {
      this.pendingAt = now;
      const pending = scheduler.pending();
      this.pendingCost = Date.now() - now;
      const pendingJson = JSON.stringify(pending);
      if (pendingJson !== this.pending) {
        this.pending = pendingJson;
        update.pending = pendingJson;
      }
    }
    const ids = poll ? [...new Set([...named, ...this.pollIds()])] : named;
    /** @type {[string[], (0 | 1)[], string[]]} */
    const ops = [[], [], []];
    for (const id of ids) {
      if (!this.sent.has(id)) this.watch([id]);
      /** @type {EntryRecord | undefined} */
      const record = scheduler.operation(id);
      let entry;
      try {
        entry = { record, explanation: scheduler.explain(id) };
      } catch (/** @type {any} */ error) {
        entry = { record, error: { name: String(error?.name ?? "Error"), code: error?.code, message: String(error?.message ?? error) } };
      }
      const json = JSON.stringify(entry);
      const done = settled(record);
      if (done) this.unsettled.delete(id);
      else this.unsettled.add(id);
      if (json === this.sent.get(id)) continue;
      this.sent.set(id, json);
      ops[0].push(id);
      ops[1].push(done ? 1 : 0);
      ops[2].push(json);
    }
    if (ops[0].length > 0) update.ops = ops;
    return Object.keys(update).length > 0 ? update : undefined;
  }
}

/** The page's side: the latest state the worker sent. */
export class Mirror {
  constructor() {
    /** @type {SchedulerStats | null} */
    this.stats = null;
    /** @type {Record<string, string>} */
    this.claims = {};
    /** `pending()` as JSON text, parsed only when asked for. */
    this.pendingText = "[]";
    /** @type {Map<string, SentEntry>} */
    this.ops = new Map();
  }

  /** @param {Update | undefined} update */
  apply(update) {
    if (!update) return;
    if (update.stats) this.stats = update.stats;
    if (update.claims) this.claims = update.claims;
    if (update.pending !== undefined) this.pendingText = update.pending;
    const [ids, done, jsons] = update.ops ?? [[], [], []];
    for (let at = 0; at < ids.length; at += 1) {
      this.ops.delete(ids[at]);
      this.ops.set(ids[at], [done[at], jsons[at]]);
    }
    if (this.ops.size > LIMIT) {
      for (const [id, [done]] of this.ops) {
        if (this.ops.size <= LIMIT) break;
        if (done === 1) this.ops.delete(id);
      }
    }
  }

  /**
   * `pending()` as the worker last sent it, a copy of the caller's own (parsed at each call).
   * @returns {PendingOperation[]}
   */
  get pending() {
    return JSON.parse(this.pendingText);
  }

  /**
   * The entry for `id`, a copy of its own (parsed at each call), or undefined when the worker
   * has not sent it.
   * @param {string} id
   * @returns {Entry | undefined}
   */
  entry(id) {
    const sent = this.ops.get(id);
    return sent === undefined ? undefined : JSON.parse(sent[1]);
  }
}
