// Type-checked, never run: `tsc --noEmit --strict -p tsconfig.json` resolves "canvas-scheduler"
// through package.json's `exports` to the built declarations in pkg/web, as a user would.
import init, { probeStorage } from "canvas-scheduler";
import type {
  CanvasSchedulerError,
  ErrorCode,
  ProbeRecord,
  ProbeReport,
} from "canvas-scheduler";

/** Loads the module, probes storage and returns the nonce that was read back. */
export async function probeOnce(databaseName: string): Promise<string> {
  await init();
  const report: ProbeReport = await probeStorage(databaseName);
  const read: ProbeRecord = report.read;
  const sameRecord: boolean =
    read.key === report.written.key && read.nonce === report.written.nonce;
  const took: number = report.elapsedMs + report.schemaVersion;
  return `${report.database}/${report.store}: ${sameRecord} in ${took}`;
}

/** Narrows an unknown rejection to the package's coded error. */
export function codeOf(error: unknown): ErrorCode | undefined {
  if (error instanceof Error && error.name === "CanvasSchedulerError") {
    return (error as CanvasSchedulerError).code;
  }
  return undefined;
}

/** Which intent of an `enqueueMany` a refusal names: its index and id, when it names one. */
export function refusedIntent(error: CanvasSchedulerError): string | undefined {
  const index: number | undefined = error.index;
  const id: string | undefined = error.operationId;
  return index === undefined ? undefined : `intent ${index}${id === undefined ? "" : ` (${id})`}`;
}

export const knownCodes: readonly ErrorCode[] = [
  "invalid_database_name",
  "storage_unavailable",
  "storage_write_failed",
  "storage_read_failed",
  "probe_mismatch",
  "internal_error",
];

// The declarations are precise, not `any`: each line below must be a type error.
// @ts-expect-error ErrorCode is a union of known codes, not any string
export const unknownCode: ErrorCode = "no_such_code";
// @ts-expect-error probeStorage takes the database name as a string
export const badArgument = () => probeStorage(42);
// @ts-expect-error the report resolves to a ProbeReport, not a string
export const badResult = async (): Promise<string> => probeStorage("db");
// @ts-expect-error ProbeReport has no such field
export const badField = (report: ProbeReport) => report.missing;

/** Partial enqueue: `{ atomic: false }` resolves to a result per intent;
 * without it (or with `{ atomic: true }`) `enqueueMany` stays all-or-none, `Promise<void>`. */
export async function enqueueWhatFits(
  scheduler: import("canvas-scheduler").Scheduler,
  intents: import("canvas-scheduler").OperationIntent[],
): Promise<string[]> {
  const results: import("canvas-scheduler").EnqueueResult[] = await scheduler.enqueueMany(intents, { atomic: false });
  const atomic: void = await scheduler.enqueueMany(intents);
  const alsoAtomic: void = await scheduler.enqueueMany(intents, { atomic: true });
  void [atomic, alsoAtomic];
  return results.map((result, at) => (result.ok ? `${at} stored` : `${at} refused: ${result.code} (${result.message})`));
}
// @ts-expect-error the all-or-none form resolves to nothing, not to results
export const noResults = async (scheduler: import("canvas-scheduler").Scheduler): Promise<unknown[]> => scheduler.enqueueMany([]);
// @ts-expect-error atomic is a boolean
export const badAtomic = (scheduler: import("canvas-scheduler").Scheduler) => scheduler.enqueueMany([], { atomic: "no" });
// @ts-expect-error enqueueMany takes no other option
export const badOption = (scheduler: import("canvas-scheduler").Scheduler) => scheduler.enqueueMany([], { partial: true });
