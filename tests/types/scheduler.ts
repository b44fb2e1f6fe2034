// Type-checked, never run: the Scheduler class's declarations say exactly what each method
// returns (a promise of the value, never a promise of a promise).
import type {
  Explanation,
  FlushResult,
  LedgerEvent,
  OperationRecord,
  ProbeReport,
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
  Same<Returns<"settle">, Promise<void>>,
  Same<Returns<"flush">, Promise<FlushResult>>,
  Same<Returns<"retry">, Promise<void>>,
  Same<Returns<"discard">, Promise<void>>,
  Same<Returns<"events">, Promise<LedgerEvent[]>>,
  Same<Returns<"start">, void>,
  Same<Returns<"hold">, () => void>,
  Same<Returns<"stop">, void>,
  Same<Returns<"claims">, Record<string, string>>,
  Same<Returns<"operation">, OperationRecord | undefined>,
  Same<Returns<"explain">, Explanation>,
  Same<Returns<"stats">, SchedulerStats>,
  Same<ReturnType<typeof probeStorage>, Promise<ProbeReport>>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];

/** What a caller of each async method gets after `await`. */
export async function settleAndRead(scheduler: Scheduler): Promise<number> {
  const flushed: FlushResult = await scheduler.flush("op-1");
  const events: LedgerEvent[] = await scheduler.events({ after: 0 });
  await scheduler.settle();
  return events.length + (flushed.started ? 1 : 0);
}
