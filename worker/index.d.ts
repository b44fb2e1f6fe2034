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
export type WorkerSchedulerOptions<Kind extends string = string> = Omit<SchedulerOptions<Kind>, "compile" | "participants" | "coalesce" | "transport"> & {
  /** A dedicated module worker that calls `serve()` (default: the package's own, no hooks). */
  worker?: Worker;
  compile?: never;
  participants?: never;
  coalesce?: never;
  transport?: never;
};

/** Blocks inference from what it wraps (as TypeScript's `NoInfer`, for older compilers too). */
type Declared<T> = [T][T extends unknown ? 0 : never];

/** Worker mode needs no init (the worker loads the .wasm); kept so imports stay the same. */
export default function init(): Promise<void>;

/**
 * The scheduler in a dedicated worker, behind the API of the page's `Scheduler` (`Kind`: the
 * editor's operation kinds, as there). `stats()`, `claims()`, `explain(id)` and
 * `operation(id)` answer from the page's mirror of the worker's state (docs/worker-mode.md
 * says how fresh it is). The page's lifecycle is handled here too: when the page is hidden in
 * the back/forward cache or frozen, the worker's scheduler pauses (another tab may take
 * over), and when the page comes back it joins again; `persist` is asked on the page (a
 * worker cannot ask), and `stats().persisted` is the page's answer.
 */
export class Scheduler<Kind extends string = string> {
  private constructor();
  /** Stops the scheduler and ends its worker. */
  free(): void;
  [Symbol.dispose](): void;
  static open<Kind extends string = string>(options: WorkerSchedulerOptions<Declared<Kind>>): Promise<Scheduler<Kind>>;
  claims(): Record<string, string>;
  discard(id: string): Promise<void>;
  /** Partial enqueue, as the page's: every valid intent stored, one result per intent. */
  enqueueMany(intents: OperationIntent<Kind>[], options: EnqueueManyOptions & { atomic: false }): Promise<EnqueueResult[]>;
  /** All or none, as the page's. */
  enqueueMany(intents: OperationIntent<Kind>[], options?: EnqueueManyOptions & { atomic?: true }): Promise<void>;
  /** Resolves once the intent is durable in the worker's ledger. */
  enqueue(intent: OperationIntent<Kind>): Promise<void>;
  /** The event log: entries with `seq > after` (default 0), at most `limit` (default 100). */
  events(options?: { after?: number; limit?: number }): Promise<LedgerEvent[]>;
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
  operation(id: string): OperationRecord<Kind> | CompactedOperation | undefined;
  /**
   * What the worker's ledger knows of each id, tombstones included, in order (as the page's
   * `known(ids)`): ask it after a reload before queuing an edit again.
   */
  known(ids: string[]): Promise<(OperationRecord<Kind> | CompactedOperation | undefined)[]>;
  resume(): Promise<void>;
  retryAllNow(): Promise<void>;
  retry(id: string): Promise<void>;
  settle(): Promise<void>;
  /** Resolves once every operation enqueued before it is settled or blocked. */
  whenSaved(): Promise<SavedState>;
  /** The unsettled operations, from the mirror. */
  pending(): PendingOperation[];
  start(): void;
  /** From the mirror; `persisted` is the page's answer once it has one. */
  stats(): SchedulerStats;
  /** Final: posts the stop; calls after it reject `scheduler_closed`, and the worker ends.
   * Not needed on `pagehide`: the scheduler pauses and resumes with the page by itself. */
  stop(): void;
  /** Worker mode only: resolves once the mirror is as fresh as the worker, tracking `ids` too. */
  sync(ids?: string[]): Promise<void>;
}
