// The editor's state: per canvas the last document the server confirmed (`base`), plus the
// operations the user made that have not settled yet (`pending`). What the user sees is the
// base with the pending operations replayed on top (optimistic state); when an operation is
// rejected it is dropped and the server's canonical document replaces the base, which rolls
// the canvas back. The state is kept in localStorage so a reload shows the same canvas while
// the scheduler's ledger (IndexedDB) still holds the operations.

export type ShapeType = "rect" | "circle";

export interface Shape {
  type: ShapeType;
  x: number;
  y: number;
  w: number;
  h: number;
  colour: string;
}

export interface AssetInfo {
  size: number;
  contentType: string;
  name: string | null;
  /** Set on the optimistic entry of an upload that has not been applied yet. */
  pending?: boolean;
}

export interface CanvasDocument {
  shapes: Record<string, Shape>;
  assets: Record<string, AssetInfo>;
  runs: Record<string, string>;
}

export interface CanvasState {
  version: number;
  document: CanvasDocument;
}

/** An operation the editor made and has not seen settle (mirrors the scheduler's intent). */
export interface PendingOp {
  id: string;
  kind: string;
  /** The canvas the operation was made on (run.cancel names the run's canvas here only). */
  canvasId: string;
  canvasIds: string[];
  payload: Record<string, unknown> | null;
  runId?: string;
  /** An upload's file, described (the Blob itself lives in the scheduler's ledger). */
  upload?: { name: string; size: number; contentType: string };
  /** False until `enqueue` resolved (the operation is durable in the ledger). */
  enqueued: boolean;
  /** Set when the scheduler dead-lettered or blocked it, or storage refused to save it. */
  trouble?: string;
}

export interface Notice {
  at: number;
  level: "info" | "warning" | "error";
  text: string;
}

export interface EditorState {
  canvasIds: string[];
  base: Record<string, CanvasState>;
  pending: PendingOp[];
  notices: Notice[];
}

export const emptyDocument = (): CanvasDocument => ({ shapes: {}, assets: {}, runs: {} });

export function newState(canvasIds: string[]): EditorState {
  const base: Record<string, CanvasState> = {};
  for (const id of canvasIds) base[id] = { version: 0, document: emptyDocument() };
  return { canvasIds, base, pending: [], notices: [] };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function copyDocument(document: CanvasDocument): CanvasDocument {
  return structuredClone(document);
}

/** Reads a document as the server sends it, filling in missing parts. */
export function readDocument(value: unknown): CanvasDocument {
  const document = emptyDocument();
  if (!isObject(value)) return document;
  if (isObject(value.shapes)) document.shapes = value.shapes as Record<string, Shape>;
  if (isObject(value.assets)) document.assets = value.assets as Record<string, AssetInfo>;
  if (isObject(value.runs)) document.runs = value.runs as Record<string, string>;
  return document;
}

/** Replays one pending operation onto a document the caller owns. */
function replay(document: CanvasDocument, op: PendingOp, canvasId: string): void {
  const payload = op.payload ?? {};
  const shapeId = typeof payload.shapeId === "string" ? payload.shapeId : "";
  const current = document.shapes[shapeId];
  switch (op.kind) {
    case "shape.upsert":
      if (op.canvasId === canvasId) document.shapes[shapeId] = payload.shape as Shape;
      break;
    case "shape.move":
      if (op.canvasId === canvasId && current) {
        document.shapes[shapeId] = { ...current, x: Number(payload.x), y: Number(payload.y) };
      }
      break;
    case "shape.recolour":
      if (op.canvasId === canvasId && current) {
        document.shapes[shapeId] = { ...current, colour: String(payload.colour) };
      }
      break;
    case "shape.delete":
      if (op.canvasId === canvasId) delete document.shapes[shapeId];
      break;
    case "asset.upload":
      if (op.canvasIds.includes(canvasId) && op.upload) {
        document.assets[`pending:${op.id}`] = {
          size: op.upload.size,
          contentType: op.upload.contentType,
          name: op.upload.name,
          pending: true,
        };
      }
      break;
    case "run.start":
      if (op.canvasId === canvasId && op.runId) document.runs[op.runId] = "starting";
      break;
    case "run.cancel":
      if (op.runId && document.runs[op.runId] !== undefined && document.runs[op.runId] !== "completed") {
        document.runs[op.runId] = "cancelling";
      }
      break;
  }
}

/** What the user sees on `canvasId`: the confirmed base with the pending operations on top. */
export function view(state: EditorState, canvasId: string): CanvasState {
  const base = state.base[canvasId] ?? { version: 0, document: emptyDocument() };
  const document = copyDocument(base.document);
  for (const op of state.pending) replay(document, op, canvasId);
  return { version: base.version, document };
}

/** Takes a canvas state from the server if it is at least as new as what the editor knows
 * (not when the server left a big document out: `documentOmitted`). */
export function adoptCanvas(state: EditorState, canvasId: string, value: unknown): boolean {
  if (!isObject(value) || typeof value.version !== "number" || !isObject(value.document)) return false;
  const known = state.base[canvasId];
  if (known && known.version > value.version) return false;
  if (!state.canvasIds.includes(canvasId)) state.canvasIds.push(canvasId);
  state.base[canvasId] = { version: value.version, document: readDocument(value.document) };
  return true;
}

/**
 * Applies a `canonical` from a settled operation: either whole canvases
 * (`{canvases: {id: {version, document}}}`, the request-level form) or one shape edit
 * (`{canvasId, version, shapeId, shape}`, the per-operation form of shape kinds).
 * Returns the canvases it updated.
 */
export function adoptCanonical(state: EditorState, canonical: unknown): string[] {
  if (!isObject(canonical)) return [];
  const updated: string[] = [];
  if (isObject(canonical.canvases)) {
    for (const [canvasId, value] of Object.entries(canonical.canvases)) {
      if (adoptCanvas(state, canvasId, value)) updated.push(canvasId);
    }
    return updated;
  }
  const { canvasId, version, shapeId } = canonical;
  if (typeof canvasId === "string" && typeof version === "number" && typeof shapeId === "string") {
    const known = state.base[canvasId] ?? { version: 0, document: emptyDocument() };
    if (version < known.version) return [];
    const document = copyDocument(known.document);
    if (isObject(canonical.shape)) document.shapes[shapeId] = canonical.shape as unknown as Shape;
    else delete document.shapes[shapeId];
    state.base[canvasId] = { version, document };
    updated.push(canvasId);
  }
  return updated;
}

/**
 * Applies an operation's settlement to the base where the canonical form leaves it implicit:
 * an applied upload or run changes the canvas by one version the editor can replay itself.
 */
export function applySettledLocally(state: EditorState, op: PendingOp, canonical: unknown): void {
  const canvasIds = op.kind === "run.cancel" ? [] : op.canvasIds;
  for (const canvasId of canvasIds) {
    const known = state.base[canvasId] ?? { version: 0, document: emptyDocument() };
    const document = copyDocument(known.document);
    if (op.kind === "asset.upload" && isObject(canonical) && typeof canonical.assetId === "string") {
      document.assets[canonical.assetId] = {
        size: Number(canonical.size ?? op.upload?.size ?? 0),
        contentType: String(canonical.contentType ?? op.upload?.contentType ?? ""),
        name: op.upload?.name ?? null,
      };
    } else if (op.kind === "run.start" && op.runId) {
      document.runs[op.runId] = "completed";
    } else {
      replay(document, op, canvasId);
    }
    state.base[canvasId] = { version: known.version + 1, document };
  }
}

export function addNotice(state: EditorState, level: Notice["level"], text: string): void {
  state.notices.unshift({ at: Date.now(), level, text });
  state.notices.length = Math.min(state.notices.length, 20);
}

const storageKey = (database: string) => `canvas-editor:${database}`;

export function loadState(database: string, canvasIds: string[]): EditorState {
  const state = newState(canvasIds);
  try {
    const raw = localStorage.getItem(storageKey(database));
    if (!raw) return state;
    const saved = JSON.parse(raw) as Partial<EditorState>;
    for (const id of saved.canvasIds ?? []) if (!state.canvasIds.includes(id)) state.canvasIds.push(id);
    for (const [id, value] of Object.entries(saved.base ?? {})) adoptCanvas(state, id, value);
    state.pending = Array.isArray(saved.pending) ? saved.pending : [];
    state.notices = Array.isArray(saved.notices) ? saved.notices : [];
  } catch (error) {
    addNotice(state, "warning", `saved editor state unreadable, starting empty: ${String(error)}`);
  }
  return state;
}

export function saveState(database: string, state: EditorState): void {
  try {
    localStorage.setItem(storageKey(database), JSON.stringify(state));
  } catch {
    // Best effort: the ledger still holds every operation; only the optimistic view is lost.
  }
}
