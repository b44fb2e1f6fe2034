// The editor's `compile` hook, shared by both modes: in the page (page mode), and in the
// scheduler's worker (worker mode, scheduler-worker.ts), each over its own copy of the
// confirmed canvases.
import type { CompiledRequest, StoredIntent } from "/pkg/web/canvas_scheduler.js";
import type { EditorState } from "./model.js";

/**
 * The request body, built when the scheduler freezes the request — that is, once every earlier
 * operation on the canvas has settled (canvas claims), so the known version in `state.base`
 * is the version this edit was made against. A shape edit carries it as `expectedVersions`: if
 * another client changed the canvas meanwhile, the server refuses the edit and the editor
 * rolls back.
 */
export function compileAgainst(state: Pick<EditorState, "base">): (intent: StoredIntent) => CompiledRequest {
  return (intent) => {
    const canvasIds = [...new Set(intent.canvasIds ?? [])].sort();
    const expectedVersions: Record<string, number> = {};
    if (intent.operationType.startsWith("shape.")) {
      for (const canvasId of canvasIds) expectedVersions[canvasId] = state.base[canvasId]?.version ?? 0;
    }
    const compiled: CompiledRequest = {
      kind: intent.operationType,
      protocolVersion: 1,
      payload: intent.payload ?? null,
      canvasIds,
      expectedVersions,
    };
    if (canvasIds.length === 1 && canvasIds[0] !== undefined) compiled.ownerCanvasId = canvasIds[0];
    if (intent.runId !== undefined) compiled.runId = intent.runId;
    return compiled;
  };
}
