// Type-checked, never run: `Scheduler<Kind>` names an editor's operation kinds, so a typo in
// an `operationType` or in `batch.kinds` fails to compile, and the hooks get typed intents.
// Left out, `Kind` is any string (and is never narrowed from the options by inference).
import { Scheduler } from "canvas-scheduler";
import type { OperationIntent, OperationRecord, StoredIntent } from "canvas-scheduler";
import { Scheduler as WorkerScheduler } from "canvas-scheduler/worker";
import { serve } from "canvas-scheduler/worker/serve";

type Same<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

type EditorKind = "record.put" | "record.remove" | "asset.upload";

/** The kinds given explicitly: intents, `batch.kinds` and the hooks' intents are checked. */
export async function typedKinds(): Promise<number> {
  const scheduler = await Scheduler.open<EditorKind>({
    database: "ledger",
    endpoint: "https://api.example/v1",
    batch: { kinds: ["record.put", "record.remove"] },
    compile: (intent, requestId) => {
      const kind: EditorKind = intent.operationType;
      return { kind, payload: { requestId }, canvasIds: intent.canvasIds };
    },
  });
  await scheduler.enqueue({ id: "a", operationType: "record.put", canvasIds: ["page"] });
  // @ts-expect-error "record.putt" is not one of the editor's kinds
  await scheduler.enqueue({ id: "b", operationType: "record.putt" });
  // @ts-expect-error enqueueMany checks each intent's kind too
  await scheduler.enqueueMany([{ id: "c", operationType: "shape.move" }]);
  const record = scheduler.operation("a");
  const kind: EditorKind | undefined = record && "intent" in record ? record.intent.operationType : undefined;
  return kind === undefined ? 0 : 1;
}

// @ts-expect-error batch.kinds names only the editor's kinds
export const badBatchKind = () => Scheduler.open<EditorKind>({ database: "d", batch: { kinds: ["record.putt"] } });

/** Without `Kind`, `batch.kinds` does not narrow the scheduler to the kinds it names. */
export async function untyped(): Promise<boolean> {
  const scheduler = await Scheduler.open({ database: "d", endpoint: "https://api.example/v1", batch: { kinds: ["record.put"] } });
  await scheduler.enqueue({ id: "a", operationType: "anything.else" });
  const same: Same<typeof scheduler, Scheduler<string>> = true;
  return same;
}

/** The kinds taken from where the scheduler goes. */
export async function fromContext(): Promise<Scheduler<EditorKind>> {
  const scheduler: Scheduler<EditorKind> = await Scheduler.open({ database: "d", endpoint: "https://api.example/v1" });
  return scheduler;
}

/** What the editor builds and what the hooks get carry the same kinds. */
export const typedIntent: OperationIntent<EditorKind> = { id: "x", operationType: "asset.upload" };
export const kindOfStored = (intent: StoredIntent<EditorKind>): EditorKind => intent.operationType;
export const kindOfRecord = (record: OperationRecord<EditorKind>): EditorKind => record.intent.operationType;
// @ts-expect-error an intent's kind is one of the editor's
export const badIntent: OperationIntent<EditorKind> = { id: "x", operationType: "asset.uplaod" };

/** Worker mode: the proxy and serve() take the same kinds. */
export async function workerKinds(): Promise<void> {
  const scheduler = await WorkerScheduler.open<EditorKind>({ database: "d", endpoint: "https://api.example/v1" });
  await scheduler.enqueue({ id: "a", operationType: "record.remove" });
  // @ts-expect-error not one of the editor's kinds
  await scheduler.enqueue({ id: "b", operationType: "record.delete" });
  await serve<EditorKind>({
    compile: (intent, requestId) => ({ kind: intent.operationType satisfies EditorKind, payload: requestId, canvasIds: intent.canvasIds }),
  });
}
