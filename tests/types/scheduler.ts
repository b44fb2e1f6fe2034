// Type-checked, never run (`tsc --noEmit --strict`): how a canvas editor uses the package.
// The declarations must be precise: each `@ts-expect-error` line below must stay an error.
import init, { Scheduler } from "canvas-scheduler";
import type {
  CanvasSchedulerError,
  ErrorCode,
  Explanation,
  FlushResult,
  LedgerEvent,
  OperationIntent,
  OperationRecord,
  SchedulerEvent,
  SchedulerOptions,
  SchedulerStats,
  TransportAnswer,
} from "canvas-scheduler";

type Shape = { x: number; y: number; fill: string };

export async function openEditorScheduler(token: () => Promise<string>): Promise<Scheduler> {
  await init();
  const options: SchedulerOptions = {
    database: "ledger:user-42",
    endpoint: "https://api.example/v1",
    principal: "user-42",
    concurrency: 2,
    leaseMs: 5000,
    retry: { baseMs: 500, maxMs: 30000, maxAttempts: 20 },
    headers: async () => ({ authorization: `Bearer ${await token()}` }),
    compile: (intent, requestId) => ({ payload: intent.payload ?? null, canvasIds: intent.canvasIds ?? [], kind: intent.operationType, runId: requestId }),
    participants: (intent) => intent.canvasIds ?? [],
    authorize: async ({ request, principal }) => ({ allowed: request.principal === principal }),
    classifyError: (error) => ({ retryable: error.code !== "validation_failed" }),
    batch: { maxOperations: 32, maxBytes: 65536 },
    onEvent: (event: SchedulerEvent) => {
      switch (event.type) {
        case "settled":
          if (event.outcome === "rejected") rollBack(event.operationId, event.canonical);
          break;
        case "blocked":
          console.warn(event.operationId, event.reason);
          break;
        case "dead_lettered":
          console.error(event.requestId, event.operationIds.length);
          break;
        case "error": {
          const code: ErrorCode = event.code;
          console.error(code, event.message);
          break;
        }
        case "leader_changed":
          console.info(event.leader, event.fence);
          break;
        case "quarantined":
          console.warn(event.store, event.key, event.reason);
          break;
      }
    },
  };
  const scheduler: Scheduler = await Scheduler.open(options);
  scheduler.start();
  return scheduler;
}

function rollBack(operationId: string, canonical: unknown): void {
  console.info("roll back", operationId, canonical);
}

export async function drawShape(scheduler: Scheduler, canvasId: string, shapeId: string, shape: Shape): Promise<void> {
  const intent: OperationIntent = {
    id: `op-${shapeId}-${Date.now()}`,
    operationType: "shape.upsert",
    canvasIds: [canvasId],
    payload: { shapeId, shape },
    expectedVersions: { [canvasId]: 3 },
  };
  try {
    await scheduler.enqueue(intent);
  } catch (error) {
    const coded = error as CanvasSchedulerError;
    if (coded.code === "storage_unavailable") await scheduler.resume();
    else throw error;
  }
}

export async function inspect(scheduler: Scheduler, id: string): Promise<string> {
  const release: () => void = scheduler.hold();
  release();
  await scheduler.enqueueMany([{ id: `${id}-up`, operationType: "asset.upload", blob: new Blob(["x"]) }]);
  const record: OperationRecord | undefined = scheduler.operation(id);
  const why: Explanation = scheduler.explain(id);
  const stats: SchedulerStats = scheduler.stats();
  const claims: Record<string, string> = scheduler.claims();
  const flushed: FlushResult = await scheduler.flush(id);
  await scheduler.retry(id);
  await scheduler.discard(id);
  const log: LedgerEvent[] = await scheduler.events({ after: 0, limit: 10 });
  await scheduler.settle();
  scheduler.stop();
  return `${record?.phase} ${why.reason} ${stats.idleReason} ${Object.keys(claims).length} ${flushed.started} ${log.length}`;
}

// @ts-expect-error an intent needs an operationType
export const missingKind: OperationIntent = { id: "a" };
// @ts-expect-error payloads are JSON, not functions
export const badPayload: OperationIntent = { id: "a", operationType: "x", payload: () => 1 };
// @ts-expect-error concurrency is a number
export const badOptions: SchedulerOptions = { database: "d", endpoint: "e", concurrency: "2" };
// @ts-expect-error explain returns an Explanation, not a string
export const badExplain = (s: Scheduler): string => s.explain("a");
// @ts-expect-error events are a closed union
export const badEvent: SchedulerEvent = { type: "exploded" };

/** A pluggable transport (W3): an in-page server for tests or a custom channel. */
export async function openWithOwnTransport(): Promise<Scheduler> {
  const applied = new Set<string>();
  const answer = (outcome: "applied"): TransportAnswer => ({ outcome, canonical: { ok: true } });
  return Scheduler.open({
    database: "ledger:test",
    transport: {
      submit: async (request) => {
        applied.add(request.id);
        return answer("applied");
      },
      query: (request) => (applied.has(request.id) ? answer("applied") : { status: 404 }),
    },
  });
}
