//! The TypeScript declarations of the public API: options, intents, hooks, events, the plain
//! objects the inspection methods return, and the `Scheduler` class itself (generic over the
//! editor's operation kinds; `api/scheduler.rs` generates none). Written by hand, checked by
//! `tests/types/*.ts` under `tsc --strict` (no `any`); a browser test (`tests/web/
//! options_shape.rs`) compares the options and the methods declared here with the ones the
//! module reads and exports.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const _: &str = API_TYPES_TS;

/// The declarations, as the package's `.d.ts` holds them.
pub const API_TYPES_TS: &str = r#"
/**
 * JSON values, as the server and the ledger see them. An integer beyond ±(2^53 - 1) in what
 * the scheduler hands back (a server's `canonical` or error `details`), which a JS number
 * cannot hold exactly, is a string of its exact decimal digits ("12345678901234567890");
 * every other value, and the object around it, is as the server sent it.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * An intent's payload as an editor has it: a JSON value whose objects may be interfaces with
 * optional fields (a store's records, for example), so no cast is needed. What is not JSON is
 * refused at runtime with `invalid_intent` (a function, a class instance such as a Date or a
 * Map, a symbol, a bigint, NaN or Infinity, a cycle, a `__proto__` key); a field whose value is
 * `undefined` is left out, as `JSON.stringify` leaves it out.
 */
export type JsonInput = null | boolean | number | string | readonly JsonInput[] | object;

/** A reference to a blob kept beside the ledger (an upload's file). */
export interface BlobRef { id: string; size: number; mediaType: string; name?: string }

/**
 * What the editor asks for. `sequence` is assigned when absent. `Kind` is the union of the
 * editor's operation kinds when the scheduler is opened as `Scheduler.open<Kind>(...)`
 * (default: any string).
 */
export interface OperationIntent<Kind extends string = string> {
  id: string;
  operationType: Kind;
  canvasIds?: string[];
  dependencies?: string[];
  payload?: JsonInput;
  expectedVersions?: Record<string, number>;
  runId?: string;
  /**
   * Replaces the pending, not yet frozen intent with the same key (same kind, canvases and
   * principal) that nothing depends on; the replaced one settles `discarded`, error
   * `superseded` with `details.replacedBy`. A dependency on it waits for the replacement.
   * The replaced one is written without its payload (`payload: null`) in the transaction
   * that stores its replacement; enqueued again as it was, it is still the same intent. See
   * the `coalesce` option to merge diffs and `coalesceMs` to hold a drag back.
   */
  coalesceKey?: string;
  sequence?: number;
  /** An `asset.upload`'s file: stored in IndexedDB with the intent, sent as multipart. */
  blob?: Blob;
}

/** What `compile` returns: the body of the frozen request. */
export interface CompiledRequest {
  kind?: string;
  ownerCanvasId?: string;
  runId?: string;
  protocolVersion?: number;
  payload: Json;
  canvasIds: string[];
  expectedVersions?: Record<string, number>;
}

/** A frozen request as stored; its `id` is the idempotency key. */
export interface FrozenRequest {
  id: string;
  operationIds: string[];
  kind: string;
  ownerCanvasId?: string;
  runId?: string;
  protocolVersion: number;
  canvasIds: string[];
  expectedVersions: Record<string, number>;
  body: string;
  digest: string;
  principal?: string;
  phase: "frozen" | "dispatched" | "accepted" | "resolved";
  attempt: number;
  retryAt?: number;
  retryAction?: "submit" | "query";
  outcome?: "applied" | "rejected" | "discarded";
  error?: SafeError;
  canonical?: Json;
  blocked?: string;
}

/** Errors as stored and reported: bounded, never carrying credentials. */
export interface SafeError { code: string; message: string; details?: Json }

/** What a pluggable transport answers: the protocol v1 answer, optionally with the HTTP status
 * it stands for (default 200; 409 for `rejected`) and a retry delay. */
export interface TransportAnswer {
  outcome?: "applied" | "rejected" | "accepted";
  error?: string | SafeError;
  canonical?: Json;
  operations?: { operationId: string; outcome: "applied" | "rejected" | "accepted"; error?: string | SafeError; canonical?: Json }[];
  status?: number;
  retryAfterMs?: number;
  retryAfter?: string;
}

/** What `authorize` answers: only `allowed: true` lets the attempt go. */
export interface Authorization { allowed: boolean; reason?: string }

/**
 * What `classifyError` answers for a failed attempt: `retryable: false` ends it as rejected,
 * `retryAt` (epoch ms) sets when it is tried again. Nothing (or `{}`) keeps the scheduler's
 * own decision.
 */
export interface ErrorPolicy { retryable?: boolean; retryAt?: number }

/**
 * Options of `Scheduler.open`. Only `database` is required (and `endpoint`, unless a
 * `transport` is given); any other key is refused with `invalid_options`, so a typo never
 * silently means a default. `Kind` is the union of the editor's operation kinds (see
 * `Scheduler`).
 */
export interface SchedulerOptions<Kind extends string = string> {
  /** IndexedDB database name: one ledger per user or workspace. Required. */
  database: string;
  /** The server's protocol v1 base URL: an absolute http(s) URL without credentials, query or
   * fragment. Required unless `transport` is given. */
  endpoint?: string;
  /** The host's own transport instead of `fetch` (tests, workers, custom channels). Default:
   * `fetch` to `endpoint`. */
  transport?: {
    submit: (request: FrozenRequest, signal: AbortSignal, blob?: Blob) => TransportAnswer | Promise<TransportAnswer>;
    query: (request: FrozenRequest, signal: AbortSignal) => TransportAnswer | Promise<TransportAnswer>;
  };
  /** The principal (user or session) requests are created and sent under; the server checks
   * it. Default: anonymous, a principal of its own (never a wildcard). */
  principal?: string;
  /**
   * This tab's name among the tabs of one ledger (1 to 256 characters). Default: a random
   * `tab-…` id for each open. Two live tabs of one ledger cannot share it: the second
   * `open` rejects with `owner_in_use`. `stats().owner` and `leaderOwner` report it.
   */
  owner?: string;
  /**
   * Ask the browser, once at open, to keep this origin's storage persistent
   * (`navigator.storage.persist()`), so that storage pressure cannot evict a ledger that
   * holds unsent work (default `true`; skipped when it already is). `open` never waits for
   * the answer; `stats().persisted` reports it. Chromium decides by itself, Firefox may ask
   * the user; `false` only reads whether it is.
   */
  persist?: boolean;
  /** Requests in flight at most (1 to 64, default 2). */
  concurrency?: number;
  /** How long the dispatching tab's lease lasts without renewal (ms, default 5000, at least
   * 1000): a tab that stopped renewing it is replaced after this long. */
  leaseMs?: number;
  /**
   * Per-attempt timeout (ms, 100 to 600000, default 30000): bounds `fetch`, and each of
   * `headers`, `authorize`, `classifyError` and a custom transport's `submit` / `query` (one
   * that has not settled by then ends the attempt unresolved with `hook_timeout`).
   */
  attemptTimeoutMs?: number;
  /**
   * Backoff between attempts: `baseMs · 2^attempt` (default 500), at most `maxMs` (default
   * 30000, or `baseMs` when larger). A request is dead-lettered (blocked, its canvases held
   * until `retry(id)` or `discard(id)`) after `maxAttempts` failed attempts (default 20) or
   * `deadLetterAfterMs` of failing (default 600000; 0: never by time).
   */
  retry?: { baseMs?: number; maxMs?: number; maxAttempts?: number; deadLetterAfterMs?: number };
  /**
   * Holds an intent with a `coalesceKey` back this long (0 to 1000 ms, default 32: two frames
   * at 60 Hz) before it may be sent, so that a newer one with its key replaces it first: a
   * drag sends its last position, not every one. Intents without a `coalesceKey` are never
   * held. A held operation keeps its place (later ones on its canvases
   * wait behind it); `explain(id).reason` is `"coalescing"` meanwhile, and `flush(id)` ends the
   * hold. Its write waits too, so the updates made during a hold share one transaction (a
   * replaced one is stored without its payload): its `enqueue` resolves once that write is
   * durable, up to `coalesceMs` later (an enqueue of anything not held writes at once, the
   * held ones with it). Enqueue a drag's updates without awaiting each.
   */
  coalesceMs?: number;
  /**
   * Request batching (on by default): ready operations of one kind on the same canvases share
   * one request (a body with `payload.operations`, one entry per operation, applied atomically
   * by the server), also in a burst that alternates canvases and with `compile` /
   * `participants` set, up to `maxOperations` (1 to 1000, default 32; 1 turns batching off)
   * and `maxBytes` of payload (default 65536). Every kind batches unless `kinds` names the ones
   * that may (1 to 64 exact operation types); `asset.upload` (a multipart body with its own
   * lane), `run.start` and `run.cancel` never do. A server that takes no batches declines one
   * (`rejected` with error code `batch_not_supported`, nothing applied): each of its operations
   * is then sent on its own, and no batch follows until the scheduler is opened again.
   */
  batch?: { maxOperations?: number; maxBytes?: number; kinds?: Kind[] };
  /** Largest payload accepted at enqueue, in JSON bytes (default 262144): a larger one is
   * refused with `payload_too_large`. */
  maxPayloadBytes?: number;
  /** Largest answer read from the server, in bytes (default 1048576, 1024 to 67108864): a
   * longer one is not read and the attempt is retried (`answer_too_large`). */
  maxAnswerBytes?: number;
  /** Entries kept in the event log that `events()` reads (default 1000). */
  eventLogLimit?: number;
  /**
   * Retention of settled history: a settled operation is compacted to a tombstone as it
   * settles (or within about a second), its request and blob deleted, so an open reads no
   * settled history. It stays whole in an archive that `known(ids)` reads while it is among the
   * newest `settled` (default 1000) and younger than `settledMs` (default 86400000, a day);
   * the archive is trimmed every 64 additions (every `settled` when fewer) and at each open.
   * At most `tombstones` (default 100000) tombstones stay, none older than `tombstoneMs`
   * (default 2592000000, 30 days); past that an id is forgotten and the same id enqueued
   * again is a new operation. Non-negative integers; `settled: 0` archives nothing.
   */
  retain?: { settled?: number; settledMs?: number; tombstones?: number; tombstoneMs?: number };
  /** Extra request headers (an auth token, say), asked before every send; may be async.
   * Default: none. What it returns is never stored or reported. */
  headers?: () => Record<string, string> | Promise<Record<string, string>>;
  /** Synchronous: turns an intent into the request body (default: its kind, payload,
   * canvases, run and expected versions as they are). It may read the scheduler: `stats`,
   * `operation`, `explain`, `claims` and `pending` answer from the step it runs in (the
   * operations before this one frozen or waiting, this one `ready`, `idleReason` none);
   * `hold` and `start`, which would change the ledger mid-step, throw `invalid_state`; the
   * methods that return promises run once the step is over. */
  compile?: (intent: StoredIntent<Kind>, requestId: string) => CompiledRequest;
  /** Synchronous: the canvases an intent touches (default: its canvasIds). May read the
   * scheduler, as `compile` may. */
  participants?: (intent: StoredIntent<Kind>) => string[];
  /** Synchronous: merges two intents with one `coalesceKey` when the newer replaces the
   * older (pending, not yet frozen): returns the payload the newer one carries, e.g. two
   * diffs added up. Without it the newer payload replaces the older as it is (absolute
   * updates). What it throws, or a payload over `maxPayloadBytes`, replaces nothing: both
   * are sent in order, and an `error` event with code `coalesce_failed` says why. The
   * replacement is still known by the intent as given (enqueued again, it is the same). May
   * read the scheduler, as `compile` may. */
  coalesce?: (older: StoredIntent<Kind>, newer: StoredIntent<Kind>) => Json;
  /** Asked before every send, with the request and the principal it was created under; may
   * be async. Default: every send allowed. Only `{allowed: boolean}` decides; any other
   * answer is a failed check (retried). A denial of a request the server may have is checked
   * with a query first. */
  authorize?: (context: { request: FrozenRequest; principal: string | null }) => Authorization | Promise<Authorization>;
  /** Decides what a failed attempt's error means (see `ErrorPolicy`); may be async. Default:
   * the protocol's statuses decide. */
  classifyError?: (error: SafeError) => ErrorPolicy | Promise<ErrorPolicy>;
  /** Receives every event; what it throws is swallowed, never reaching the scheduler. */
  onEvent?: (event: SchedulerEvent) => void;
}

/** What `onEvent` receives. */
export type SchedulerEvent =
  | { type: "settled"; operationId: string; requestId?: string; outcome: "applied" | "rejected" | "discarded"; error?: SafeError; canonical?: Json }
  | { type: "blocked"; operationId: string; requestId?: string; reason: string }
  | { type: "dead_lettered"; operationIds: string[]; requestId: string; error?: SafeError;
      /** The canvases it holds until released (`retry` or `discard`). */
      heldCanvasIds: string[]; release: ReleaseAction[] }
  | { type: "error"; code: ErrorCode; message: string }
  /** A write failed (once, as storage starts failing): `name` is the browser's error, e.g.
   * `QuotaExceededError`. Nothing is lost; an enqueue whose write failed was refused
   * (`storage_unavailable`) and left nothing behind. The scheduler tries storage again on its
   * own; `resume()` tries now. */
  | { type: "storage_failed"; name: string; message: string }
  /** A write succeeded after `storage_failed`: enqueues work again, delivery goes on. */
  | { type: "storage_recovered" }
  | { type: "leader_changed"; leader: boolean; owner?: string; fence?: number }
  | { type: "quarantined"; store: string; key: string; reason: string }
  /** The unsettled count changed (at most once per animation frame). */
  | { type: "pending"; count: number }
  /** The unsettled count reached zero: everything enqueued is settled. */
  | { type: "saved" };

/** An intent as stored (and as the `compile` and `participants` hooks get it): its payload
 * is JSON, its sequence assigned, its file a reference to the blob kept beside the ledger. */
export interface StoredIntent<Kind extends string = string> {
  id: string; sequence: number; operationType: Kind; canvasIds: string[]; dependencies: string[];
  payload: Json; expectedVersions?: Record<string, number>; runId?: string; coalesceKey?: string;
  blob?: BlobRef; revision: number; principal?: string;
}

/** An operation as stored: its intent, where it stands, and how it ended. */
export interface OperationRecord<Kind extends string = string> {
  intent: StoredIntent<Kind>;
  phase: "pending" | "resolved";
  blockers: string[];
  requestId?: string;
  outcome?: { settlement: "applied" | "rejected" | "discarded"; requestId?: string; error?: SafeError; canonical?: Json; at: number };
}

/** A settled operation compacted by the retention policy: what `operation(id)` and `known`
 * answer for it while its tombstone stays. */
export interface CompactedOperation {
  id: string;
  compacted: true;
  outcome: "applied" | "rejected" | "discarded";
  settledAt: number;
  principal?: string;
  /** A coalesced intent replaced it (`outcome` is `"discarded"`): the operation that did, as
   * its record's `outcome.error.details.replacedBy` said before it was compacted. */
  replacedBy?: string;
}

/** Why an operation is where it is (`explain(id)`). */
export interface Explanation {
  operationId: string;
  state: "pending" | "in_flight" | "blocked" | "resolved";
  reason: string;
  canvasId?: string;
  requestId?: string;
  dependencyId?: string;
  dueAt?: number;
  attempt?: number;
  blockers: string[];
  /** When its request is blocked (e.g. a dead letter), the canvases that request holds. */
  heldCanvasIds?: string[];
  /** How the host releases them: `retry(id)` or `discard(id)` (with the user's consent). */
  release?: ReleaseAction[];
}

/** A host action that releases a blocked request's canvases. */
export type ReleaseAction = "retry" | "discard";

/** One unsettled operation, as `pending()` lists it. `reason` is
 * `explain(id).reason`; `canvasIds` are the operation's canvases. A blocked one whose request
 * holds canvases (a dead letter) also names them (`heldCanvasIds`) and how the host releases
 * them (`release`), as `explain(id)` does. */
export interface PendingOperation {
  id: string;
  state: "queued" | "in_flight" | "retrying" | "blocked";
  reason: string;
  attempt: number;
  nextAttemptAt?: number;
  canvasIds: string[];
  heldCanvasIds?: string[];
  release?: ReleaseAction[];
}

/** What `whenSaved()` resolves with: covered operations settled, and those blocked (dead
 * letters included) in sequence order. */
export interface SavedState { settled: number; blocked: string[] }

/** What `flush(id)` answers: whether it started, and why it is where it is. */
export interface FlushResult { started: boolean; explanation: Explanation }

/** Counters, why nothing is being sent (`idleReason`), and who dispatches. */
export interface SchedulerStats {
  scanned: number; claimed: number; raced: number; retried: number; sent: number; settled: number;
  passes: number; pending: number; inFlight: number; ready: number; retryScheduled: number;
  claimedCanvases: number;
  idleReason: null | "held" | "offline" | "not_leader" | "storage_unavailable" | "waiting_canvas"
    | "waiting_dependency" | "waiting_lane" | "retry_scheduled" | "no_work" | "not_started" | "stopped"
    /** The page is in the back/forward cache or frozen: this tab sends nothing and another
     * tab may dispatch; it joins again when the page is back. */
    | "paused";
  leader: boolean; owner: string; fence?: number;
  /** Retention: settled operations whole at hand (not compacted yet, and the archive's
   * newest of this session, at most `retain.settled`), and tombstones stored (counted just
   * after the open plus those written since, at most `retain.tombstones`). */
  settledKept: number; tombstones: number;
  /** The owner id of the tab that dispatches, when known (this tab's own while it leads). */
  leaderOwner: string | null;
  /** Whether the browser keeps this origin's storage persistent (see the `persist` option):
   * `null` until it answers, or where it has no `navigator.storage`. */
  persisted: boolean | null;
}

/** One entry of the event log (`events()`). `dispatched` is logged when the request left (`fetch`
 * took it, or the host's transport function was called), never for an attempt that ended
 * before, as when `headers()` threw. */
export interface LedgerEvent {
  seq: number; at: number;
  kind: "claimed" | "reclaimed" | "dispatched" | "settled" | "retry_scheduled" | "blocked"
    | "dead_lettered" | "lease_acquired" | "lease_lost";
  requestId?: string; operationId?: string; attempt?: number; fence?: number; detail?: string;
}

/** Options of `enqueueMany`. */
export interface EnqueueManyOptions {
  /**
   * `true` (the default): all or none; one refused intent rejects the call and nothing is
   * stored. `false`: every valid intent is stored, in one transaction and in call order, and
   * the call resolves to one {@link EnqueueResult} per intent.
   */
  atomic?: boolean;
}

/**
 * What became of one intent of `enqueueMany(intents, { atomic: false })`: stored (or already
 * there as the same intent), or refused with the `code` a lone `enqueue` of it would get
 * (a refused intent changes nothing).
 */
export type EnqueueResult = { ok: true } | { ok: false; code: ErrorCode; message: string };

/** Blocks inference from what it wraps (as TypeScript's `NoInfer`, for older compilers too). */
type Declared<T> = [T][T extends unknown ? 0 : never];

/**
 * The offline-first operation scheduler for one ledger (one IndexedDB database).
 *
 * `Kind` names the editor's operation kinds (`"record.put" | "asset.upload"`, say):
 * `Scheduler.open<Kind>(options)` checks every intent's `operationType`, `batch.kinds`, and
 * types the intents the hooks get. Default: any string.
 *
 * The page's lifecycle is handled here: when the page is hidden in the back/forward cache or
 * frozen (`pagehide`, `freeze`) this tab stops dispatching and lets another tab of the ledger
 * take over (requests on the wire are aborted and asked about later, never sent twice), and
 * when it comes back (`pageshow` from the cache, `resume`) it joins again. Only `stop()` is
 * final.
 */
export class Scheduler<Kind extends string = string> {
  private constructor();
  /** Stops the scheduler (as `stop()`) and frees its memory. */
  free(): void;
  [Symbol.dispose](): void;
  /**
   * Opens the ledger and joins its tabs: this tab dispatches when no other does, and
   * otherwise enqueues through the shared inbox until it is elected. Rejects with
   * `invalid_options`, `invalid_concurrency`, `storage_unavailable`, or `owner_in_use` when
   * another open tab of this ledger has the same `owner`.
   */
  static open<Kind extends string = string>(options: SchedulerOptions<Declared<Kind>>): Promise<Scheduler<Kind>>;
  /**
   * Adds one intent; resolves once it is durable. When the write fails (a full disk or
   * quota) it rejects `storage_unavailable`: call `resume()`, then enqueue the same intent
   * again, which resolves once it is durable (an unchanged intent is never added twice).
   */
  enqueue(intent: OperationIntent<Kind>): Promise<void>;
  /**
   * Partial enqueue: stores every valid intent in one transaction, in the order given, and
   * resolves to one result per intent, in that order. An intent that depends on a refused one
   * is refused too (`unknown_dependency`). Rejects only when the whole call cannot be
   * stored (`scheduler_closed`, `storage_unavailable`), its options are bad
   * (`invalid_options`), or `intents` is not an array (`invalid_intent`).
   */
  enqueueMany(intents: OperationIntent<Kind>[], options: EnqueueManyOptions & { atomic: false }): Promise<EnqueueResult[]>;
  /**
   * Adds several intents in one transaction; all or none. An intent refused is named by the
   * error's `index` and `operationId`. A failed write rejects as in `enqueue`.
   */
  enqueueMany(intents: OperationIntent<Kind>[], options?: EnqueueManyOptions & { atomic?: true }): Promise<void>;
  /**
   * Starts dispatching (recovering interrupted work first): now if this tab is the
   * dispatching one, else as soon as it is elected. Inside `compile` or `participants` it
   * throws `invalid_state` (it would change the ledger mid-step).
   */
  start(): void;
  /**
   * Holds new work while this tab dispatches; returns the release function (calling it
   * twice is harmless). Inside `compile` or `participants` it throws `invalid_state` (it
   * would change the ledger mid-step); a release called there takes effect after the step.
   */
  hold(): () => void;
  /** Writes again after a storage failure (a full disk, a closed connection), then sends
   * what waits. */
  resume(): Promise<void>;
  /**
   * "Retry now": every backoff starts again and every scheduled retry is due now, waits the
   * server asked for included (in the dispatching tab). Blocked requests stay blocked:
   * `resume()` is for a renewed login, `retry(id)` for a dead letter.
   */
  retryAllNow(): Promise<void>;
  /**
   * Resolves once no attempt is in flight in the dispatching tab (each request on the wire
   * has its answer recorded). Operations waiting for a retry, a canvas, a dependency, a
   * hold, the network or a blocked request are not waited for: `stats().pending` and
   * `idleReason` say whether anything is left to send.
   */
  settle(): Promise<void>;
  /**
   * Resolves once every operation enqueued before the call is settled (applied, rejected,
   * discarded) or blocked (dead letters included), never while one of them may still be
   * sent. It waits across a pause of the page; `stop()` rejects it with `scheduler_closed`.
   */
  whenSaved(): Promise<SavedState>;
  /** The unsettled operations in sequence order, for a badge: O(unsettled), no storage
   * read. Answers inside `compile` and `participants` too. */
  pending(): PendingOperation[];
  /**
   * Final: aborts in-flight fetches (each is asked about later, never sent twice), hands the
   * ledger to another tab, and never starts again; later answers change nothing. Not needed
   * on `pagehide`: the scheduler pauses and resumes with the page by itself.
   */
  stop(): void;
  /** Canvas id → the request holding it (empty in a tab that does not dispatch). Answers
   * inside `compile` and `participants` too. */
  claims(): Record<string, string>;
  /**
   * The operation record, or `undefined`. Answers inside `compile` and `participants` too.
   *
   * A settled operation is compacted as it settles (`retain`). It is answered whole (from
   * the archive) or with its tombstone, the `CompactedOperation`, as `known(ids)` gives it,
   * only while the scheduler has it at hand: settled in this session, or looked up by
   * `known(ids)` or by an enqueue of its id. Otherwise this answers `undefined`, though the
   * ledger may know the id: settled history lives in IndexedDB, which this synchronous call
   * cannot read, and opening a ledger reads none of it. For a certain answer,
   * `await known([id])`.
   */
  operation(id: string): OperationRecord<Kind> | CompactedOperation | undefined;
  /**
   * What the ledger knows of each id, settled history included (looked up in IndexedDB):
   * the record (an archived one while `retain` keeps it whole), a `CompactedOperation`, or
   * `undefined` (never stored, or its tombstone is gone), in order. After a reload, a host
   * asks this before queuing an edit again.
   */
  known(ids: string[]): Promise<(OperationRecord<Kind> | CompactedOperation | undefined)[]>;
  /** Why the operation is where it is; an unknown id throws `unknown_operation`. Answers
   * inside `compile` and `participants` too. */
  explain(id: string): Explanation;
  /** Counters, the idle reason, who dispatches (`leader`, `leaderOwner`) and whether storage
   * is persistent (`persisted`). Answers inside `compile` and `participants` too
   * (`idleReason` none: the scheduler is busy there). */
  stats(): SchedulerStats;
  /** Runs that operation now if it can be claimed, otherwise says why. */
  flush(id: string): Promise<FlushResult>;
  /** Sends a dead-lettered or blocked operation again, with its same frozen request (the same
   * idempotency key). One blocked `dependency_discarded` is then sent without its
   * dependency: the host decided. */
  retry(id: string): Promise<void>;
  /** Resolves the operation as discarded; its dependents, and intents enqueued later that
   * depend on it, are blocked `dependency_discarded` until discarded or retried. */
  discard(id: string): Promise<void>;
  /** The event log: entries with `seq > after` (default 0), at most `limit` (default 100, at
   * most 1000), read from IndexedDB when asked (an open reads none of the log). */
  events(options?: { after?: number; limit?: number }): Promise<LedgerEvent[]>;
}
"#;
