//! The TypeScript declarations of the public API (SPEC §6): options, intents, hooks, events
//! and the plain objects the inspection methods return. Written by hand, checked by
//! `tests/types/*.ts` under `tsc --strict` (no `any`).

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const API_TYPES_TS: &str = r#"
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

/** What the editor asks for. `sequence` is assigned when absent. */
export interface OperationIntent {
  id: string;
  operationType: string;
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

/** The K3 authorization step's verdict. */
export interface Authorization { allowed: boolean; reason?: string }

/** The K4 error policy's verdict. */
export interface ErrorPolicy { retryable?: boolean; retryAt?: number }

/** Options of `Scheduler.open`. */
export interface SchedulerOptions {
  /** IndexedDB name: one ledger per user/workspace. */
  database: string;
  /** Protocol v1 base URL (optional with a pluggable `transport`). */
  endpoint?: string;
  /** W3: the host's own transport instead of `fetch` (tests, workers, custom channels). */
  transport?: {
    submit: (request: FrozenRequest, signal: AbortSignal, blob?: Blob) => TransportAnswer | Promise<TransportAnswer>;
    query: (request: FrozenRequest, signal: AbortSignal) => TransportAnswer | Promise<TransportAnswer>;
  };
  /** The principal requests are created and sent under (K3). Omitted: anonymous, a principal
   * of its own (never a wildcard). */
  principal?: string;
  /** Requests in flight at most (default 2). */
  concurrency?: number;
  /** Dispatcher lease (default 5000, at least 1000). */
  leaseMs?: number;
  /**
   * Per-attempt timeout (default 30000): bounds `fetch`, and each of `headers`, `authorize`,
   * `classifyError` and a custom transport's `submit` / `query` (one that has not settled by
   * then ends the attempt unresolved with `hook_timeout`).
   */
  attemptTimeoutMs?: number;
  retry?: { baseMs?: number; maxMs?: number; maxAttempts?: number; deadLetterAfterMs?: number };
  /**
   * Holds an intent with a `coalesceKey` back this long (0 to 1000 ms, default 0) before it
   * may be sent, so that a newer one with its key replaces it first: a drag sends its last
   * position, not every one. A held operation keeps its place (later ones on its canvases
   * wait behind it); `explain(id).reason` is `"coalescing"` meanwhile, and `flush(id)` ends the
   * hold. Its write waits too, so the updates made during a hold share one transaction (a
   * replaced one is stored without its payload): its `enqueue` resolves once that write is
   * durable, up to `coalesceMs` later (an enqueue of anything not held writes at once, the
   * held ones with it). Enqueue a drag's updates without awaiting each.
   */
  coalesceMs?: number;
  /**
   * Request batching (off by default): ready operations of one kind on the same
   * canvases share one request (SPEC §7's batch body), also in a burst that alternates
   * canvases and with `compile` / `participants` set, up to `maxOperations` (1 to 1000,
   * default 32) and `maxBytes` of payload (default 65536). Every kind batches unless `kinds`
   * names the ones that may (1 to 64 exact operation types); `asset.upload` (a multipart body
   * with its own lane), `run.start` and `run.cancel` never do.
   */
  batch?: { maxOperations?: number; maxBytes?: number; kinds?: string[] };
  /** Largest payload accepted at enqueue, in JSON bytes (default 262144). */
  maxPayloadBytes?: number;
  /** Largest answer read from the server, in bytes (default 1048576, 1024 to 67108864): a
   * longer one is not read and the attempt is retried (`answer_too_large`). */
  maxAnswerBytes?: number;
  /** Events kept in the log (default 1000). */
  eventLogLimit?: number;
  /**
   * Retention (SPEC §7): a settled operation is compacted to a tombstone as it settles (or
   * within about a second), its request and blob deleted, so an open reads no settled
   * history. It stays whole in an archive that `known(ids)` reads while it is among the
   * newest `settled` (default 1000) and younger than `settledMs` (default 86400000, a day);
   * the archive is trimmed every 64 additions (every `settled` when fewer) and at each open.
   * At most `tombstones` (default 100000) tombstones stay, none older than `tombstoneMs`
   * (default 2592000000, 30 days); past that an id is forgotten and the same id enqueued
   * again is a new operation. Non-negative integers; `settled: 0` archives nothing.
   */
  retain?: { settled?: number; settledMs?: number; tombstones?: number; tombstoneMs?: number };
  /** Asked before every send; may be async. */
  headers?: () => Record<string, string> | Promise<Record<string, string>>;
  /** Synchronous: turns an intent into the request body. It may read the scheduler: `stats`,
   * `operation`, `explain`, `claims` and `pending` answer from the step it runs in (the
   * operations before this one frozen or waiting, this one `ready`, `idleReason` none);
   * `hold` and `start`, which would change the ledger mid-step, throw `invalid_state`; the
   * methods that return promises run once the step is over. */
  compile?: (intent: StoredIntent, requestId: string) => CompiledRequest;
  /** Synchronous: the canvases an intent touches (default: its canvasIds). May read the
   * scheduler, as `compile` may. */
  participants?: (intent: StoredIntent) => string[];
  /** Synchronous: merges two intents with one `coalesceKey` when the newer replaces the
   * older (pending, not yet frozen): returns the payload the newer one carries, e.g. two
   * diffs added up. Without it the newer payload replaces the older as it is (absolute
   * updates). What it throws, or a payload over `maxPayloadBytes`, replaces nothing: both
   * are sent in order, and an `error` event with code `coalesce_failed` says why. The
   * replacement is still known by the intent as given (enqueued again, it is the same). May
   * read the scheduler, as `compile` may. */
  coalesce?: (older: StoredIntent, newer: StoredIntent) => Json;
  /** K3: runs before every send; may be async. Only `{allowed: boolean}` decides; any other
   * answer is a failed check (retried). A denial of a request the server may have is checked
   * with a query first. */
  authorize?: (context: { request: FrozenRequest; principal: string | null }) => Authorization | Promise<Authorization>;
  /** K4: may be async. */
  classifyError?: (error: SafeError) => ErrorPolicy | Promise<ErrorPolicy>;
  /** Receives every event; what it throws is swallowed (S17). */
  onEvent?: (event: SchedulerEvent) => void;
}

/** What `onEvent` receives. */
export type SchedulerEvent =
  | { type: "settled"; operationId: string; requestId?: string; outcome: "applied" | "rejected" | "discarded"; error?: SafeError; canonical?: Json }
  | { type: "blocked"; operationId: string; requestId?: string; reason: string }
  | { type: "dead_lettered"; operationIds: string[]; requestId: string; error?: SafeError;
      /** K1: the canvases it holds until released. */
      heldCanvasIds: string[]; release: ReleaseAction[] }
  | { type: "error"; code: ErrorCode; message: string }
  | { type: "leader_changed"; leader: boolean; owner?: string; fence?: number }
  | { type: "quarantined"; store: string; key: string; reason: string }
  /** Issue 37: the unsettled count changed (at most once per animation frame). */
  | { type: "pending"; count: number }
  /** Issue 37: the unsettled count reached zero. */
  | { type: "saved" };

/** An intent as stored (and as the `compile` and `participants` hooks get it): its payload
 * is JSON, its sequence assigned, its file a reference to the blob kept beside the ledger. */
export interface StoredIntent {
  id: string; sequence: number; operationType: string; canvasIds: string[]; dependencies: string[];
  payload: Json; expectedVersions?: Record<string, number>; runId?: string; coalesceKey?: string;
  blob?: BlobRef; revision: number; principal?: string;
}

/** An operation as stored (SPEC §1). */
export interface OperationRecord {
  intent: StoredIntent;
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

/** Why an operation is where it is (D3). */
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
  /** K1: when its request is blocked (e.g. a dead letter), the canvases that request holds. */
  heldCanvasIds?: string[];
  /** How the host releases them: `retry(id)` or `discard(id)` (with the user's consent). */
  release?: ReleaseAction[];
}

/** K1: a host action that releases a blocked request's canvases. */
export type ReleaseAction = "retry" | "discard";

/** One unsettled operation, as `pending()` lists it (issue 37). `reason` is
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

/** `flush(id)` (K7). */
export interface FlushResult { started: boolean; explanation: Explanation }

/** Counters and the idle reason (D2). */
export interface SchedulerStats {
  scanned: number; claimed: number; raced: number; retried: number; sent: number; settled: number;
  passes: number; pending: number; inFlight: number; ready: number; retryScheduled: number;
  claimedCanvases: number;
  idleReason: null | "held" | "offline" | "not_leader" | "storage_unavailable" | "waiting_canvas"
    | "waiting_dependency" | "waiting_lane" | "retry_scheduled" | "no_work" | "not_started" | "stopped";
  leader: boolean; owner: string; fence?: number;
  /** Retention: settled operations whole at hand (not compacted yet, and the archive's
   * newest of this session, at most `retain.settled`), and tombstones stored (counted just
   * after the open plus those written since, at most `retain.tombstones`). */
  settledKept: number; tombstones: number;
  /** W4: the owner id of the tab that dispatches, when known (this tab's own while it leads). */
  leaderOwner: string | null;
}

/** One entry of the event log (K6). `dispatched` is logged when the request left (`fetch`
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

export interface Scheduler {
  /**
   * Partial enqueue: stores every valid intent in one transaction, in the order given, and
   * resolves to one result per intent, in that order. An intent that depends on a refused one
   * is refused too (`unknown_dependency`). Rejects only when the whole call cannot be
   * stored (`scheduler_closed`, `storage_unavailable`), its options are bad
   * (`invalid_options`), or `intents` is not an array (`invalid_intent`).
   */
  enqueueMany(intents: OperationIntent[], options: EnqueueManyOptions & { atomic: false }): Promise<EnqueueResult[]>;
  /**
   * Adds several intents in one transaction; all or none. An intent refused is named by the
   * error's `index` and `operationId`. A failed write rejects as in `enqueue`.
   */
  enqueueMany(intents: OperationIntent[], options?: EnqueueManyOptions & { atomic?: true }): Promise<void>;
}
"#;
