// Type-checked, never run: every option `Scheduler.open` reads is declared (the browser test
// tests/web/options_shape.rs compares the two lists), an option it does not read is refused,
// optional arguments are optional, and the page's lifecycle and storage persistence show in
// `stats()`.
import type { SchedulerOptions, SchedulerStats, Scheduler } from "canvas-scheduler";
import type { WorkerSchedulerOptions } from "canvas-scheduler/worker";

/** Every option, each with a value of its declared type. */
export const everyOption: Required<SchedulerOptions> = {
  database: "ledger",
  endpoint: "https://api.example/v1",
  transport: { submit: () => ({ outcome: "applied" }), query: () => ({ outcome: "applied" }) },
  principal: "user-1",
  owner: "tab-main",
  persist: false,
  concurrency: 2,
  leaseMs: 5_000,
  attemptTimeoutMs: 30_000,
  retry: { baseMs: 500, maxMs: 30_000, maxAttempts: 20, deadLetterAfterMs: 600_000 },
  coalesceMs: 0,
  batch: { maxOperations: 32, maxBytes: 65_536, kinds: ["record.put"] },
  maxPayloadBytes: 262_144,
  maxAnswerBytes: 1_048_576,
  eventLogLimit: 1_000,
  retain: { settled: 1_000, settledMs: 86_400_000, tombstones: 100_000, tombstoneMs: 2_592_000_000 },
  headers: () => ({ authorization: "Bearer token" }),
  compile: (intent) => ({ payload: intent.payload, canvasIds: intent.canvasIds }),
  participants: (intent) => intent.canvasIds,
  coalesce: (_older, newer) => newer.payload,
  authorize: () => ({ allowed: true }),
  classifyError: () => ({}),
  onEvent: () => {},
};

/** Several tabs with names of their own, and no persistence request. */
export const named: SchedulerOptions = { database: "ledger", endpoint: "https://api.example/v1", owner: "tab-2", persist: false };
/** Worker mode takes the same data options. */
export const namedWorker: WorkerSchedulerOptions = { database: "ledger", endpoint: "https://api.example/v1", owner: "tab-2", persist: true };

// @ts-expect-error an option the runtime does not read (a typo of `owner`)
export const typo: SchedulerOptions = { database: "ledger", ownr: "tab-1" };
// @ts-expect-error persist is a boolean
export const persistWord: SchedulerOptions = { database: "ledger", persist: "yes" };
// @ts-expect-error owner is a string
export const numericOwner: SchedulerOptions = { database: "ledger", owner: 2 };
// @ts-expect-error database is required
export const noDatabase: SchedulerOptions = { endpoint: "https://api.example/v1" };

/** `events()` takes its options or nothing. */
export async function eventLog(scheduler: Scheduler): Promise<number> {
  const all = await scheduler.events();
  const later = await scheduler.events({ after: 10 });
  return all.length + later.length;
}
// @ts-expect-error events takes { after, limit }, not a number
export const badEvents = (scheduler: Scheduler) => scheduler.events(10);

/** What the browser granted, and a tab paused with its page. */
export function storageBadge(stats: SchedulerStats): string {
  const persisted: boolean | null = stats.persisted;
  const paused = stats.idleReason === "paused";
  return `${persisted === null ? "unknown" : persisted ? "persistent" : "best effort"}${paused ? ", paused" : ""}`;
}
// @ts-expect-error `persisted` is a boolean or null, never undefined
export const persistedMissing = (stats: SchedulerStats): undefined => stats.persisted;
