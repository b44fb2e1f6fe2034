// Worker mode (`canvas-scheduler/worker`): the same Scheduler API, run in a dedicated worker.
// The types are the package's own (the `web` entry's declarations).
import type {
  CompactedOperation, EnqueueManyOptions, EnqueueResult, Explanation, FlushResult, LedgerEvent, OperationIntent,
  OperationRecord, PendingOperation, SavedState, SchedulerOptions, SchedulerStats,
} from "../pkg/web/canvas_scheduler.js";

export type {
  Authorization, BlobRef, CanvasSchedulerError, CompactedOperation, CompiledRequest, EnqueueManyOptions, EnqueueResult,
  ErrorCode, ErrorPolicy, Explanation,
  FlushResult, FrozenRequest, Json, JsonInput, LedgerEvent, OperationIntent, OperationRecord, PendingOperation, SafeError,
  SavedState, StoredIntent,
  SchedulerEvent, SchedulerOptions, SchedulerStats, TransportAnswer,
} from "../pkg/web/canvas_scheduler.js";

/**
 * Options of worker mode's `Scheduler.open`: the page's options but the four functions that
 * cannot cross to a worker (`compile`, `participants`, `coalesce`, `transport`: give them to `serve()` in
 * your own worker module and pass that worker as `worker`). `onEvent` runs on the page;
 * `headers`, `authorize` and `classifyError` are asked of the page by the worker.
 */
export type WorkerSchedulerOptions = Omit<SchedulerOptions, "compile" | "participants" | "coalesce" | "transport"> & {
  /** A dedicated module worker that calls `serve()` (default: the package's own, no hooks). */
  worker?: Worker;
  compile?: never;
  participants?: never;
  coalesce?: never;
  transport?: never;
};

/** Worker mode needs no init (the worker loads the .wasm); kept so imports stay the same. */
export default function init(): Promise<void>;

/**
 * The scheduler in a dedicated worker, behind the API of the page's `Scheduler`. `stats()`,
 * `claims()`, `explain(id)` and `operation(id)` answer from the page's mirror of the worker's
 * state (README "Worker mode" says how fresh it is).
 */
export class Scheduler {
  private constructor();
  /** Stops the scheduler and ends its worker. */
  free(): void;
  [Symbol.dispose](): void;
  static open(options: WorkerSchedulerOptions): Promise<Scheduler>;
  claims(): Record<string, string>;
  discard(id: string): Promise<void>;
  /** Partial enqueue, as the page's: every valid intent stored, one result per intent. */
  enqueueMany(intents: OperationIntent[], options: EnqueueManyOptions & { atomic: false }): Promise<EnqueueResult[]>;
  /** All or none, as the page's. */
  enqueueMany(intents: OperationIntent[], options?: EnqueueManyOptions & { atomic?: true }): Promise<void>;
  /** Resolves once the intent is durable in the worker's ledger. */
  enqueue(intent: OperationIntent): Promise<void>;
  events(options: { after?: number; limit?: number } | undefined): Promise<LedgerEvent[]>;
  /** From the mirror; an id it does not hold yet throws `unknown_operation` and is fetched (see `sync`). */
  explain(id: string): Explanation;
  flush(id: string): Promise<FlushResult>;
  /** Posts the hold; it takes effect in the worker before any later call of this proxy. */
  hold(): () => void;
  /**
   * From the mirror, or `undefined` (an id it does not hold yet is fetched; see `sync`). A
   * compacted operation is answered with its tombstone only when the worker's scheduler has
   * it at hand, as on the page: tombstones live in IndexedDB, which a synchronous call cannot
   * read. For a certain answer, `await known([id])`.
   */
  operation(id: string): OperationRecord | CompactedOperation | undefined;
  /**
   * What the worker's ledger knows of each id, tombstones included, in order (as the page's
   * `known(ids)`): ask it after a reload before queuing an edit again.
   */
  known(ids: string[]): Promise<(OperationRecord | CompactedOperation | undefined)[]>;
  resume(): Promise<void>;
  retryAllNow(): Promise<void>;
  retry(id: string): Promise<void>;
  settle(): Promise<void>;
  /** Issue 37: resolves once every operation enqueued before it is settled or blocked. */
  whenSaved(): Promise<SavedState>;
  /** Issue 37: the unsettled operations, from the mirror. */
  pending(): PendingOperation[];
  start(): void;
  /** From the mirror. */
  stats(): SchedulerStats;
  /** Posts the stop; calls after it reject `scheduler_closed`, and the worker ends. */
  stop(): void;
  /** Worker mode only: resolves once the mirror is as fresh as the worker, tracking `ids` too. */
  sync(ids?: string[]): Promise<void>;
}
