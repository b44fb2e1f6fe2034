// Worker mode (`?mode=worker`): the editor's own scheduler worker (README "Worker mode").
// `compile` runs here, so the canvas versions it puts in `expectedVersions` are kept here too:
// the page sends its confirmed canvases (before the ledger opens, and when a version changes
// there), and this worker applies each settled event itself, with the page's own model code,
// before the scheduler freezes the next request (serve's `onEvent` runs first). A copy sent
// from the page's `onEvent` would arrive up to 16 ms late, and a request frozen meanwhile
// would carry a stale version: the server would refuse it and the edit would be rolled back.
import type { Scheduler, SchedulerEvent } from "/pkg/web/canvas_scheduler.js";
import { serve } from "/worker/serve.js";
import { compileAgainst } from "./compile.js";
import { adoptCanonical, adoptCanvas, applySettledLocally, newState, type PendingOp } from "./model.js";

const state = newState([]);

addEventListener("message", ({ data }: MessageEvent) => {
  if (data?.t !== "editor:base" || typeof data.base !== "object" || data.base === null) return;
  // Versions only grow: a canvas older than what this worker knows is ignored.
  for (const [canvasId, canvas] of Object.entries(data.base)) adoptCanvas(state, canvasId, canvas);
});

/** What the page's `settled` does to the confirmed canvases, done here first. */
function onEvent(event: SchedulerEvent, scheduler: Scheduler): void {
  if (event.type !== "settled") return;
  const updated = adoptCanonical(state, event.canonical);
  if (event.outcome !== "applied" || updated.length > 0) return;
  const record = scheduler.operation(event.operationId);
  if (record === undefined || "compacted" in record) return;
  const { intent } = record;
  const canvasIds = intent.canvasIds ?? [];
  const op: PendingOp = {
    id: intent.id,
    kind: intent.operationType,
    canvasId: canvasIds[0] ?? "",
    canvasIds,
    payload: (intent.payload ?? null) as PendingOp["payload"],
    enqueued: true,
  };
  if (intent.runId !== undefined) op.runId = intent.runId;
  applySettledLocally(state, op, event.canonical);
}

void serve({ compile: compileAgainst(state), onEvent });
