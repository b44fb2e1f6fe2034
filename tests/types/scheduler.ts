// Type-checked, never run: the Scheduler class's declarations say exactly what each method
// returns (a promise of the value, never a promise of a promise).
import type {
  CompactedOperation,
  Explanation,
  FlushResult,
  LedgerEvent,
  OperationIntent,
  OperationRecord,
  PendingOperation,
  ProbeReport,
  SavedState,
  Scheduler,
  SchedulerStats,
} from "canvas-scheduler";
import { probeStorage } from "canvas-scheduler";

/** `true` only when A and B are the same type (not merely assignable). */
type Same<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Returns<K extends keyof Scheduler> = Scheduler[K] extends (...args: never[]) => infer R
  ? R
  : never;

export const returnTypes: [
  Same<ReturnType<typeof Scheduler.open>, Promise<Scheduler>>,
  Same<Returns<"enqueue">, Promise<void>>,
  Same<Returns<"enqueueMany">, Promise<void>>,
  Same<Returns<"resume">, Promise<void>>,
  Same<Returns<"retryAllNow">, Promise<void>>,
  Same<Returns<"settle">, Promise<void>>,
  Same<Returns<"flush">, Promise<FlushResult>>,
  Same<Returns<"retry">, Promise<void>>,
  Same<Returns<"discard">, Promise<void>>,
  Same<Returns<"events">, Promise<LedgerEvent[]>>,
  Same<Returns<"start">, void>,
  Same<Returns<"hold">, () => void>,
  Same<Returns<"stop">, void>,
  Same<Returns<"claims">, Record<string, string>>,
  Same<Returns<"operation">, OperationRecord | CompactedOperation | undefined>,
  Same<Returns<"known">, Promise<(OperationRecord | CompactedOperation | undefined)[]>>,
  Same<Returns<"explain">, Explanation>,
  Same<Returns<"stats">, SchedulerStats>,
  Same<ReturnType<typeof probeStorage>, Promise<ProbeReport>>,
  Same<Returns<"whenSaved">, Promise<SavedState>>,
  Same<Returns<"pending">, PendingOperation[]>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];

/** What a caller of each async method gets after `await`. */
export async function settleAndRead(scheduler: Scheduler): Promise<number> {
  const flushed: FlushResult = await scheduler.flush("op-1");
  const events: LedgerEvent[] = await scheduler.events({ after: 0 });
  await scheduler.settle();
  return events.length + (flushed.started ? 1 : 0);
}

/** A badge from `pending()` and the saved events; `whenSaved()` before leaving. */
export async function badge(scheduler: Scheduler): Promise<string> {
  const unsaved: PendingOperation[] = scheduler.pending();
  const blocked = unsaved.filter((entry) => entry.state === "blocked");
  const saved: SavedState = await scheduler.whenSaved();
  return `${unsaved.length} (${blocked.map((entry) => entry.canvasIds.join()).join()}) ${saved.settled} ${saved.blocked.length}`;
}

export function onEvent(event: import("canvas-scheduler").SchedulerEvent): number {
  if (event.type === "pending") return event.count;
  if (event.type === "saved") return 0;
  return -1;
}

/** Retention: a compacted operation is told apart by `compacted`. */
export async function settledBefore(scheduler: Scheduler, ids: string[]): Promise<string[]> {
  const known = await scheduler.known(ids);
  return known.map((record) => {
    if (record === undefined) return "unknown";
    if ("compacted" in record) return `${record.outcome} at ${record.settledAt}`;
    return record.phase;
  });
}

export const retained: Parameters<typeof Scheduler.open>[0] = {
  database: "ledger",
  endpoint: "https://api.example/v1",
  retain: { settled: 1000, settledMs: 86_400_000, tombstones: 100_000, tombstoneMs: 2_592_000_000 },
};

/** Batching every kind, or only the exact operation types named. */
export const batched: Parameters<typeof Scheduler.open>[0] = {
  database: "ledger",
  endpoint: "https://api.example/v1",
  batch: { maxOperations: 256, maxBytes: 262_144, kinds: ["record.put", "record.remove"] },
};
// @ts-expect-error batch.kinds is a list of operation types, not one
export const oneKind: Parameters<typeof Scheduler.open>[0] = { database: "d", batch: { kinds: "record.put" } };

/** A store's record as an editor declares it: an interface (no index signature) with optional
 * fields and nested objects. It is a payload as it is, with no `as unknown as Json`. */
interface ShapeRecord {
  readonly id: string;
  readonly typeName: "shape";
  x: number;
  y: number;
  opacity?: number;
  parentId: string | null;
  meta: { readonly [key: string]: unknown };
  props: { w: number; h: number; label?: string; points: readonly { x: number; y: number }[] };
}

export function recordIntent(record: ShapeRecord): OperationIntent {
  return { id: `put:${record.id}`, operationType: "record.put", canvasIds: [record.parentId ?? "page"], payload: record, coalesceKey: record.id };
}

/** `coalesce` merges a replaced intent's diff into its replacement. */
export const merging: Parameters<typeof Scheduler.open>[0] = {
  database: "d",
  coalesce: (older, newer) => ({
    dx: Number((older.payload as { dx: number }).dx) + Number((newer.payload as { dx: number }).dx),
  }),
};
