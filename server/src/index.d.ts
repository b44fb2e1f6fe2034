// Type declarations for canvas-scheduler-server (hand-written; checked by test/types.test.mjs's tsc run).

export type Outcome = 'applied' | 'rejected' | 'accepted';

/** What `apply` returns: the answer stored under the key and sent to every repeat. */
export interface ApplyResult {
  outcome: Outcome;
  error?: { code: string; message: string; details?: unknown };
  canonical?: unknown;
  operations?: Array<{ operationId: string; outcome: Outcome; canonical?: unknown; error?: object }>;
  /** 409 for a rejected conflict; any other rejection is answered 422. Not stored in the body. */
  status?: 409 | 422;
  [field: string]: unknown;
}

/** A statement of a `plan`: SQL in the store's dialect (`$1` on Postgres, `?` on SQLite). */
export interface PlannedStatement {
  text: string;
  values?: unknown[];
}

/** What `plan` returns: the answer, and the statements that write the request's effects. */
export interface PlanResult extends ApplyResult {
  statements?: PlannedStatement[];
}

/** What a store's `writeOnce` receives: the checked answer, its text and the statements. */
export interface Planned {
  status: number;
  answer: unknown;
  /** The answer's JSON text: stored as it is and sent to every repeat. */
  text: string;
  statements: PlannedStatement[];
}

/** A decided answer as the kit gives it to a store to write: `text` is what the store keeps. */
export interface DecidedAnswer {
  status: number;
  answer: unknown;
  /** The answer's JSON text, sent with this response: every repeat must get these bytes. */
  text: string;
}

/** One submit as `apply` sees it. No request header or credential is passed or stored. */
export interface SubmitRequest {
  key: string;
  principal: string;
  body: Record<string, unknown>;
  blob: { bytes: Uint8Array; type: string; size: number; sha256: string } | null;
  digest: string;
  /** What the app passed to `kit.decide` as `context` (undefined through `handle`). */
  context?: unknown;
}

/** What `kit.decide` and `kit.lookup` give. */
export type Decision =
  | {
      state: 'done';
      status: number;
      answer: ApplyResult;
      /** The answer's JSON text as first sent: a repeat must be answered with these bytes. */
      text: string;
      fresh: boolean;
    }
  | { state: 'busy' }
  | { state: 'reused' };

export interface Limits {
  /** Bytes of the JSON request (default 1 MiB). */
  maxBodyBytes: number;
  /** Operations in one batch body (default 256). */
  maxBatch: number;
  /** Bytes of an upload's blob (default 16 MiB). */
  maxBlobBytes: number;
}

export interface StoredRow {
  state: 'pending' | 'done';
  digest: string;
  /** A pending claim's lease end (ms since the epoch): past it, its holder is taken as dead. */
  lease_until?: number;
  status?: number;
  /** The stored answer's JSON text, given back byte for byte (what the kit answers with). */
  text?: string;
  /** The stored answer as a value, for a store that kept no text (the kit then writes it out). */
  answer?: unknown;
}

/** The engine interface both stores implement. `Tx` is what `apply` receives. */
export interface Store<Tx = unknown> {
  init(): Promise<void>;
  claim(args: { principal: string; key: string; digest: string; now: number; leaseMs: number }): Promise<
    { state: 'claimed'; token: number } | StoredRow
  >;
  commit(
    args: { principal: string; key: string; token: number; now: number },
    fn: (tx: Tx) => Promise<DecidedAnswer>,
  ): Promise<{ state: 'lost' } | StoredRow>;
  /** Replaces a stored `accepted` answer with fn's (null: no change), in one locked transaction. */
  settle(
    args: { principal: string; key: string; now: number },
    fn: (tx: Tx, answer: ApplyResult) => Promise<DecidedAnswer | null>,
  ): Promise<{ state: 'settled' | 'unchanged'; row: StoredRow | null }>;
  /**
   * Optional: claim, apply and settle in one transaction (both engines have it; Postgres holds
   * the key with a transaction-scoped advisory lock). Used instead of claim + commit.
   */
  applyOnce?(
    args: { principal: string; key: string; digest: string; now: number; leaseMs: number },
    fn: (tx: Tx) => Promise<DecidedAnswer>,
  ): Promise<StoredRow>;
  release(args: { principal: string; key: string; token: number }): Promise<void>;
  /**
   * Optional (both engines have it; `plan` needs it): the outcome and the plan's statements
   * committed together, once per key. `fresh` when this call wrote them.
   */
  writeOnce?(
    args: { principal: string; key: string; digest: string; now: number; leaseMs: number },
    planned: Planned,
  ): Promise<StoredRow & { fresh?: boolean }>;
  get(args: { principal: string; key: string }): Promise<StoredRow | null>;
  purge(args: { before: number; limit: number }): Promise<number>;
  close(): Promise<void>;
}

interface KitOptionsBase<Tx> {
  store: Store<Tx>;
  /**
   * Scopes keys; null or undefined answers 401. Default: one principal, "anonymous". Through
   * `toNodeHandler` the Request carries the method, URL and headers; its body is the kit's.
   */
  principal?(request: Request): string | null | undefined | Promise<string | null | undefined>;
  limits?: Partial<Limits>;
  /**
   * How long a key's holder may stay silent (default 30 s): on Postgres, a submit's transaction
   * left idle longer (apply awaiting something else) is ended by the database, so nothing it wrote
   * commits; a claim row (`store.claim`) whose holder died is taken over after it.
   */
  leaseMs?: number;
  /** How long outcomes are kept (default 30 days). */
  retentionMs?: number;
  now?(): number;
  onError?(error: unknown): void;
}

/** Exactly one of `apply` and `plan`. */
export type KitOptions<Tx = unknown> = KitOptionsBase<Tx> &
  (
    | {
        /** The app's domain writes, inside the transaction that stores the outcome. */
        apply(request: SubmitRequest, tx: Tx): ApplyResult | Promise<ApplyResult>;
        plan?: never;
      }
    | {
        /**
         * The answer and the statements that write it, decided without the database: on
         * Postgres the kit writes them with the outcome without reading the key first (on a pool
         * in pg's pipeline mode, BEGIN, the outcome, the statements and COMMIT in one write: one
         * round trip, where `apply` costs three). It runs before the key is looked up,
         * so it must have no effect of its own: for a key already applied it runs again and its
         * result is dropped. A statement that fails fails the request (500, nothing committed).
         */
        plan(request: SubmitRequest): PlanResult | Promise<PlanResult>;
        apply?: never;
      }
  );

export interface Kit {
  handle(request: Request): Promise<Response>;
  /**
   * The submit path without HTTP, for an app that reads and checks the request itself: claims the
   * key, runs `apply` (with `context`), stores and answers as `handle` does. `fresh` is true when
   * this call's apply decided the key; `busy` is 409; `reused` is a key sent with another digest.
   */
  decide(submitted: {
    principal: string;
    key: string;
    digest: string;
    body: Record<string, unknown>;
    blob?: unknown;
    context?: unknown;
  }): Promise<Decision>;
  /**
   * The stored outcome of a key: done, busy (in progress), or null (never received, or claimed
   * by a process that died before committing and whose lease ran out: nothing was applied).
   */
  lookup(key: { principal: string; key: string }): Promise<Decision | null>;
  init(): Promise<void>;
  /** Deletes at most `limit` (default 1000) outcomes older than the retention period. */
  purge(options?: { limit?: number }): Promise<number>;
  /**
   * Completes an `accepted` outcome once: `fn` runs with the key's row locked, only while the
   * stored answer is still `accepted`; its writes and the answer it returns (null: no change)
   * commit together. Resolves true when this call changed the stored outcome.
   */
  settle<T = unknown>(
    key: { principal: string; key: string },
    fn: (tx: T, answer: ApplyResult) => ApplyResult | null | Promise<ApplyResult | null>,
  ): Promise<boolean>;
  close(): Promise<void>;
}

export function createKit<Tx>(options: KitOptions<Tx>): Kit;
/** An open better-sqlite3 Database (typed loosely so the kit needs no @types package). */
export type SqliteDatabase = any;
/** A pg Pool; `apply` receives one of its clients inside BEGIN … COMMIT. */
export type PgPool = any;
export type PgClient = any;
export function sqliteStore(options: { db: SqliteDatabase }): Store<SqliteDatabase>;
export function postgresStore(options: { pool: PgPool; table?: string }): Store<PgClient>;
export function toNodeHandler(
  handle: (request: Request) => Promise<Response>,
): (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void;
export const DEFAULT_LIMITS: Readonly<Limits>;
export const PROTOCOL_VERSION: 1;
export function canonicalJson(value: unknown): string;
