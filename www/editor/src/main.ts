// The demo canvas editor: every edit becomes an operation intent handed to canvas-scheduler,
// which keeps it in its IndexedDB ledger and delivers it to the reference server; the editor
// shows the result optimistically and rolls back what the server rejects.
//
// Page parameters: ?server=<reference server URL> (required), ?db=<IndexedDB name>,
// ?admin=<the reference server's admin token> (for its fault switches and state).

import init, { Scheduler as PageScheduler } from "/pkg/web/canvas_scheduler.js";
import type { OperationIntent, SafeError, SchedulerEvent } from "/pkg/web/canvas_scheduler.js";
import { Scheduler as WorkerScheduler } from "/worker/index.js";
import { ServerAdmin } from "./admin.js";
import { CanvasView, type Tool } from "./canvas-view.js";
import { compileAgainst } from "./compile.js";
import { LedgerPanel } from "./ledger-panel.js";
import { SavedBadge, type SavedView } from "./saved-badge.js";
import {
  addNotice,
  adoptCanonical,
  adoptCanvas,
  applySettledLocally,
  loadState,
  saveState,
  view,
  type CanvasState,
  type EditorState,
  type PendingOp,
} from "./model.js";

const CANVASES = ["canvas-a", "canvas-b", "canvas-c"];
const LEASE_MS = 1000;
/** How long a reload waits for the previous page's lease before giving up. */
const OPEN_DEADLINE_MS = 60_000;

const params = new URLSearchParams(location.search);
const server = (params.get("server") ?? "").replace(/\/+$/, "");
const database = params.get("db") ?? "canvas-editor-demo";
/**
 * `?mode=worker`: the scheduler runs in a dedicated worker (`canvas-scheduler/worker`, README
 * "Worker mode"), in this editor's own worker module (scheduler-worker.ts), where `compile`
 * runs; the page keeps the proxy. Otherwise in the page.
 */
const workerMode = params.get("mode") === "worker";
/** Either mode's Scheduler: the same API (tests/types/worker.ts checks it). */
type Scheduler = PageScheduler | WorkerScheduler;

const $ = <T extends HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`page lacks #${id}`);
  return el as T;
};

const state: EditorState = loadState(database, CANVASES);
let current = state.canvasIds[0] ?? "canvas-a";
let scheduler: Scheduler | null = null;
let release: (() => void) | null = null;
const admin = new ServerAdmin(server, params.get("admin") ?? "");
/** Files of uploads made before the ledger was open (enqueued with their intent). */
const blobs = new Map<string, Blob>();
/** Object URLs to show uploads that have not reached the server yet (this page only). */
const previews = new Map<string, string>();
/** Operations made on this page before the ledger was open. */
const madeHere = new Set<string>();

const canvasView = new CanvasView($<HTMLElement>("canvas") as unknown as SVGSVGElement, {
  draw: (shape) => {
    const shapeId = newId("shape");
    void submit({ kind: "shape.upsert", canvasId: current, payload: { shapeId, shape: { ...shape } } });
    canvasView.selected = shapeId;
  },
  move: (shapeId, x, y) => void submit({ kind: "shape.move", canvasId: current, payload: { shapeId, x, y } }),
  select: () => render(),
});
const badge = new SavedBadge($("saved"));
const panel = new LedgerPanel({
  stats: $("stats"),
  claims: $("claims"),
  operations: $("ops"),
  events: $("events"),
});

function newId(prefix: string): string {
  return `${prefix}-${crypto.randomUUID()}`;
}

function setStatus(status: "starting" | "waiting" | "ready" | "error", text: string): void {
  document.body.dataset.status = status;
  $("status").textContent = text;
}

/** Worker mode: the worker running the scheduler, which keeps its own copy of `state.base`. */
let schedulerWorker: Worker | null = null;
let postedVersions = "";

/**
 * Worker mode: sends the confirmed canvases to the scheduler's worker when a version changed
 * here (a reload's saved state, a re-read after a rejection); the worker applies settled
 * events itself, so `compile` there never waits for this page.
 */
function postBase(): void {
  if (!schedulerWorker) return;
  const versions = JSON.stringify(Object.entries(state.base).map(([id, canvas]) => [id, canvas.version]));
  if (versions === postedVersions) return;
  postedVersions = versions;
  schedulerWorker.postMessage({ t: "editor:base", base: state.base });
}

const save = () => {
  saveState(database, state);
  postBase();
};

// ---- operations -------------------------------------------------------------------------

interface NewOp {
  kind: string;
  canvasId: string;
  payload: Record<string, unknown> | null;
  canvasIds?: string[];
  runId?: string;
  blob?: File;
}

/** Records an edit optimistically, then hands it to the scheduler (durable when it resolves). */
async function submit(input: NewOp): Promise<void> {
  const op: PendingOp = {
    id: newId("op"),
    kind: input.kind,
    canvasId: input.canvasId,
    canvasIds: input.canvasIds ?? [input.canvasId],
    payload: input.payload,
    enqueued: false,
  };
  if (input.runId !== undefined) op.runId = input.runId;
  if (input.blob) {
    op.upload = { name: input.blob.name, size: input.blob.size, contentType: input.blob.type || "application/octet-stream" };
    blobs.set(op.id, input.blob);
    previews.set(op.id, URL.createObjectURL(input.blob));
  }
  state.pending.push(op);
  madeHere.add(op.id);
  save();
  render();
  if (scheduler) await enqueue(scheduler, op);
}

function intentOf(op: PendingOp): OperationIntent {
  const intent: OperationIntent = {
    id: op.id,
    operationType: op.kind,
    canvasIds: op.canvasIds,
    payload: op.payload,
  };
  if (op.runId !== undefined) intent.runId = op.runId;
  const blob = blobs.get(op.id);
  if (blob) intent.blob = blob;
  return intent;
}

/** The `trouble` of an edit that could not be saved because storage failed. */
const STORAGE_TROUBLE = "storage_unavailable";
let storageFailed = false;

async function enqueue(target: Scheduler, op: PendingOp): Promise<void> {
  try {
    await target.enqueue(intentOf(op));
    op.enqueued = true;
    if (op.trouble === STORAGE_TROUBLE) delete op.trouble;
    blobs.delete(op.id);
  } catch (error) {
    if (codeOf(error) === "storage_unavailable") {
      // A full disk or quota: the edit stays on this page, unsaved, until "Retry saving".
      op.trouble = STORAGE_TROUBLE;
      storageTrouble(messageOf(error));
    } else {
      state.pending = state.pending.filter((p) => p.id !== op.id);
      addNotice(state, "error", `Could not queue ${describe(op)}: ${codeOf(error)} ${messageOf(error)}`);
    }
  }
  save();
  render();
}

/** Storage refused a write: says so once, and offers "Retry saving" until it succeeds. */
function storageTrouble(message: string): void {
  if (!storageFailed) {
    addNotice(
      state,
      "error",
      `Storage is full or unavailable (${message}). Edits stay on this page but are not saved: free some disk space, then press “Retry saving” (or reload).`,
    );
  }
  storageFailed = true;
}

/**
 * "Retry saving": the scheduler writes again (`resume()`), then every edit storage refused
 * is enqueued again as it was (an intent already in the ledger resolves once durable; it is
 * never added twice).
 */
async function retrySaving(target: Scheduler): Promise<void> {
  try {
    await target.resume();
  } catch (error) {
    addNotice(state, "error", `Still cannot save: ${codeOf(error)} ${messageOf(error)}`);
    render();
    return;
  }
  storageFailed = false;
  const unsaved = state.pending.filter((op) => !op.enqueued && op.trouble === STORAGE_TROUBLE);
  for (const op of unsaved) await enqueue(target, op);
  if (!storageFailed) addNotice(state, "info", `Storage works again: ${unsaved.length} kept edit(s) saved.`);
  save();
  render();
}

function describe(op: PendingOp): string {
  const payload = op.payload ?? {};
  const target = typeof payload.shapeId === "string" ? ` ${payload.shapeId.slice(0, 14)}` : op.runId ? ` ${op.runId.slice(0, 12)}` : "";
  return `${op.kind}${target} on ${op.canvasId}`;
}

const codeOf = (error: unknown) => String((error as { code?: unknown } | null)?.code ?? "error");
const messageOf = (error: unknown) => String((error as { message?: unknown } | null)?.message ?? error);

function versionsOf(canvasIds: string[]): string {
  return canvasIds.map((id) => `${id} v${state.base[id]?.version ?? 0}`).join(", ");
}

/** An operation settled (event, or found resolved in the ledger after a reload). */
function settled(operationId: string, outcome: string, error: SafeError | undefined, canonical: unknown): void {
  const index = state.pending.findIndex((op) => op.id === operationId);
  if (index < 0) {
    adoptCanonical(state, canonical);
    return;
  }
  const op = state.pending.splice(index, 1)[0] as PendingOp;
  const preview = previews.get(op.id);
  if (preview) {
    URL.revokeObjectURL(preview);
    previews.delete(op.id);
  }
  if (outcome === "applied") {
    if (adoptCanonical(state, canonical).length === 0) applySettledLocally(state, op, canonical);
  } else if (outcome === "rejected") {
    const code = error?.code ?? "rejected";
    const updated = adoptCanonical(state, canonical);
    if (updated.length > 0) {
      addNotice(
        state,
        "warning",
        `Rejected by the server (${code}): ${describe(op)}. Rolled back to the server's canonical state (${versionsOf(updated)}).`,
      );
    } else if (code === "run_cancelled") {
      addNotice(state, "info", `Run ${op.runId ?? ""} was cancelled before it started.`);
    } else {
      addNotice(state, "warning", `Rejected by the server (${code}): ${describe(op)}. Rolled back; re-reading the canvas.`);
      void resync(op.canvasIds);
    }
  } else {
    addNotice(state, "info", `Discarded ${describe(op)}.`);
  }
}

/** Fallback when a rejection carried no canonical state: read the canvases from the server. */
async function resync(canvasIds: string[]): Promise<void> {
  try {
    const canvases = await admin.canvases();
    for (const id of canvasIds) {
      const canvas = canvases[id] as { version: number; document: unknown } | undefined;
      adoptCanvas(state, id, canvas ?? { version: 0, document: {} });
    }
  } catch (error) {
    addNotice(state, "error", `Could not re-read ${canvasIds.join(", ")}: ${messageOf(error)}`);
  }
  save();
  render();
}

function onEvent(event: SchedulerEvent): void {
  switch (event.type) {
    case "settled":
      settled(event.operationId, event.outcome, event.error, event.canonical);
      break;
    case "blocked": {
      const op = state.pending.find((p) => p.id === event.operationId);
      if (op) op.trouble = event.reason;
      addNotice(state, "warning", `Blocked (${event.reason}): ${op ? describe(op) : event.operationId}`);
      break;
    }
    case "dead_lettered":
      for (const id of event.operationIds) {
        const op = state.pending.find((p) => p.id === id);
        if (op) op.trouble = "dead_letter";
      }
      addNotice(
        state,
        "error",
        `Dead-lettered (${event.error?.code ?? "unknown"}): ${event.operationIds.length} operation(s), holding ${event.heldCanvasIds.join(", ")}. Retry or discard them (the saved badge or the ledger panel).`,
      );
      break;
    case "error":
      if (event.code === "storage_unavailable") storageTrouble(event.message);
      else addNotice(state, "error", `Scheduler error ${event.code}: ${event.message}`);
      break;
    case "leader_changed":
      // During open, boot() sets the status once the editor is ready.
      if (!scheduler) break;
      setStatus(
        "ready",
        event.leader
          ? `Ledger "${database}" open; this tab sends for every tab to ${server}`
          : `Ledger "${database}" open; tab ${event.owner ?? "(another)"} sends, this tab queues through it`,
      );
      break;
    case "quarantined":
      addNotice(state, "warning", `A corrupt ledger record was quarantined (${event.store}/${event.key}): ${event.reason}`);
      break;
  }
  save();
  scheduleRender();
}

// ---- opening the ledger -----------------------------------------------------------------

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Opens the ledger; after a reload the previous page may hold the lease for up to LEASE_MS. */
async function openScheduler(): Promise<Scheduler> {
  const started = Date.now();
  for (let attempt = 1; ; attempt += 1) {
    try {
      const options = {
        database,
        endpoint: server,
        concurrency: 2,
        leaseMs: LEASE_MS,
        attemptTimeoutMs: 10_000,
        // Short delays so a demo recovers quickly once back online. An outage never
        // dead-letters; an operation the server keeps refusing while others succeed does
        // after 100 such failures over at least the default 10 minutes.
        retry: { baseMs: 250, maxMs: 2_000, maxAttempts: 100 },
        onEvent,
      };
      if (!workerMode) return await PageScheduler.open({ ...options, compile: compileAgainst(state) });
      // A fresh worker per attempt (a refused open ends the worker it was given), told the
      // confirmed canvases before it opens the ledger.
      schedulerWorker = new Worker(new URL("./scheduler-worker.js", import.meta.url), { type: "module", name: "editor-scheduler" });
      postedVersions = "";
      postBase();
      return await WorkerScheduler.open({ ...options, worker: schedulerWorker });
    } catch (error) {
      if (codeOf(error) !== "not_leader" || Date.now() - started > OPEN_DEADLINE_MS) throw error;
      setStatus("waiting", `Waiting for the other tab to release the ledger (attempt ${attempt})…`);
      await sleep(300);
    }
  }
}

/**
 * After a reload: settle what the ledger resolved while no page listened; enqueue edits made
 * while waiting, and those the last page kept but never got into the ledger (it died first,
 * or storage refused them). `known(ids)` answers every id the ledger holds whole or as a
 * tombstone (settled, then compacted by the retention policy), so an edit it does not know
 * was never stored, hence never sent: queuing it again cannot apply it twice. (Past the
 * tombstone horizon — 30 days or 100 000 compactions by default — an id is forgotten; this
 * page keeps its unsaved edits for minutes, not weeks.) An upload among them is dropped: its
 * file was only in the page that made it.
 */
async function reconcile(target: Scheduler): Promise<void> {
  let lost = 0;
  let requeued = 0;
  const pending = [...state.pending];
  const known = await target.known(pending.map((op) => op.id));
  for (const [at, op] of pending.entries()) {
    const record = known[at];
    if (record && "compacted" in record) {
      op.enqueued = true;
      settled(op.id, record.outcome, undefined, undefined);
    } else if (record) {
      op.enqueued = true;
      if (record.phase === "resolved" && record.outcome) {
        settled(op.id, record.outcome.settlement, record.outcome.error, record.outcome.canonical);
      } else if (record.blockers.length > 0) {
        op.trouble = record.blockers[0] ?? "blocked";
      }
    } else if (madeHere.has(op.id)) {
      await enqueue(target, op);
    } else if (!target.stats().leader) {
      await requeueFromFollower(target, op);
    } else if (op.upload) {
      state.pending = state.pending.filter((p) => p.id !== op.id);
      lost += 1;
    } else {
      delete op.trouble;
      await enqueue(target, op);
      requeued += 1;
    }
  }
  if (requeued > 0) addNotice(state, "info", `${requeued} edit(s) the last page had not saved yet were queued again.`);
  if (lost > 0) addNotice(state, "warning", `${lost} upload(s) never reached the ledger before the last reload and were dropped (the file was only in that page).`);
  save();
}

/**
 * Another tab dispatches, so this tab cannot read the ledger: it enqueues the edit again. That
 * is harmless when the ledger has it (an identical intent is skipped; an upload whose file this
 * page no longer holds is refused `duplicate_operation`), and it makes this tab hear the outcome.
 */
async function requeueFromFollower(target: Scheduler, op: PendingOp): Promise<void> {
  try {
    await target.enqueue(intentOf(op));
  } catch (error) {
    if (codeOf(error) !== "duplicate_operation") {
      state.pending = state.pending.filter((p) => p.id !== op.id);
      addNotice(state, "error", `Could not queue ${describe(op)}: ${codeOf(error)} ${messageOf(error)}`);
      return;
    }
  }
  op.enqueued = true;
  const [record] = await target.known([op.id]);
  if (record && "compacted" in record) {
    settled(op.id, record.outcome, undefined, undefined);
  } else if (record?.phase === "resolved" && record.outcome) {
    settled(op.id, record.outcome.settlement, record.outcome.error, record.outcome.canonical);
  }
}

/** Whether the browser keeps this origin's storage under disk pressure (null: not known yet). */
let storagePersisted: boolean | null = null;

/** Asks the browser to keep the ledger (an evicted ledger loses unsent work), and shows the answer. */
async function askToPersist(): Promise<void> {
  try {
    storagePersisted = (await navigator.storage?.persisted?.()) || (await navigator.storage?.persist?.()) || false;
  } catch {
    storagePersisted = false;
  }
  $("storage-mode").textContent = storagePersisted
    ? "storage: persistent"
    : "storage: best-effort (the browser may evict it when the disk is short of space)";
}

async function boot(): Promise<void> {
  if (!server) {
    setStatus("error", "No reference server: open this page as /www/editor/?server=http://127.0.0.1:PORT");
    return;
  }
  void askToPersist();
  setStatus("starting", "Loading canvas-scheduler…");
  render();
  void refreshFaults();
  await init();
  const opened = await openScheduler();
  await reconcile(opened);
  scheduler = opened;
  if (localStorage.getItem(`canvas-editor:${database}:hold`) === "1") {
    release = opened.hold();
    ($("hold") as HTMLInputElement).checked = true;
  }
  opened.start();
  const leader = opened.stats().leaderOwner;
  setStatus(
    "ready",
    opened.stats().leader || leader === null
      ? `Ledger "${database}" open; sending to ${server}`
      : `Ledger "${database}" open; tab ${leader} sends, this tab queues through it`,
  );
  render();
}

// No stop() on pagehide: the scheduler pauses when the page leaves (handing the ledger to
// another tab at once) and starts again if the page comes back from the back/forward cache.

// ---- controls -----------------------------------------------------------------------------

/** Bumped by every read and change of the fault switches. A read's answer is shown only if it
 * is the newest one asked for and no change is on its way: a periodic read can be answered
 * after a change, or before one sent earlier lands, and would put the old switches back. */
let faultsAsked = 0;
let faultsChanging = 0;

async function refreshFaults(): Promise<void> {
  const asked = ++faultsAsked;
  try {
    const { config, counters } = await admin.faults();
    if (asked !== faultsAsked || faultsChanging > 0) return;
    ($("offline") as HTMLInputElement).checked = config.offline;
    ($("latency") as HTMLInputElement).value = String(config.latencyMs);
    ($("drop") as HTMLInputElement).value = String(config.dropAfterApplyRate);
    ($("errors") as HTMLInputElement).value = String(config.serverErrorRate);
    ($("toomany") as HTMLInputElement).value = String(config.tooManyRate);
    $("fault-counters").textContent =
      `server counters: ${counters.serverErrors} × 503, ${counters.tooMany} × 429, ` +
      `${counters.dropped} answers dropped, ${counters.offlineDestroyed} connections refused offline`;
    document.body.dataset.offline = String(config.offline);
  } catch (error) {
    $("fault-counters").textContent = `fault switches unavailable: ${messageOf(error)}`;
  }
}

async function setFaults(changes: Parameters<ServerAdmin["setFaults"]>[0]): Promise<void> {
  faultsAsked += 1;
  faultsChanging += 1;
  try {
    await admin.setFaults(changes);
  } catch (error) {
    addNotice(state, "error", `Could not set faults: ${messageOf(error)}`);
  } finally {
    faultsChanging -= 1;
  }
  await refreshFaults();
  render();
}

$("retry-storage").addEventListener("click", () => {
  if (scheduler) void retrySaving(scheduler);
});

$("offline").addEventListener("change", (event) => {
  const offline = (event.target as HTMLInputElement).checked;
  void setFaults({ offline });
});

$("hold").addEventListener("change", (event) => {
  const held = (event.target as HTMLInputElement).checked;
  localStorage.setItem(`canvas-editor:${database}:hold`, held ? "1" : "0");
  if (held && scheduler && !release) release = scheduler.hold();
  if (!held && release) {
    release();
    release = null;
  }
  render();
});

$("apply-faults").addEventListener("click", () => {
  const number = (id: string) => Number(($(id) as HTMLInputElement).value) || 0;
  void setFaults({
    latencyMs: number("latency"),
    dropAfterApplyRate: number("drop"),
    serverErrorRate: number("errors"),
    tooManyRate: number("toomany"),
  });
});

for (const input of document.querySelectorAll<HTMLInputElement>("input[name=tool]")) {
  input.addEventListener("change", () => {
    canvasView.tool = input.value as Tool;
    render();
  });
}

$("colour").addEventListener("input", (event) => {
  canvasView.colour = (event.target as HTMLInputElement).value;
});

$("recolour").addEventListener("click", () => {
  const shapeId = canvasView.selected;
  if (shapeId === null) return;
  void submit({ kind: "shape.recolour", canvasId: current, payload: { shapeId, colour: canvasView.colour } });
});

$("delete").addEventListener("click", () => {
  const shapeId = canvasView.selected;
  if (shapeId === null) return;
  canvasView.selected = null;
  void submit({ kind: "shape.delete", canvasId: current, payload: { shapeId } });
});

$("upload").addEventListener("change", (event) => {
  const input = event.target as HTMLInputElement;
  for (const file of Array.from(input.files ?? [])) {
    void submit({ kind: "asset.upload", canvasId: current, payload: { name: file.name }, blob: file });
  }
  input.value = "";
});

$("run-start").addEventListener("click", () => {
  const runId = newId("run");
  void submit({ kind: "run.start", canvasId: current, payload: { runId }, runId });
});

$("runs").addEventListener("click", (event) => {
  const runId = (event.target as HTMLElement).closest("[data-cancel-run]")?.getAttribute("data-cancel-run");
  if (!runId) return;
  // No canvas: a cancel must not wait behind the run's own claim on the canvas.
  void submit({ kind: "run.cancel", canvasId: current, canvasIds: [], payload: { runId }, runId });
});

$("tabs").addEventListener("click", (event) => {
  const canvasId = (event.target as HTMLElement).closest("[data-canvas]")?.getAttribute("data-canvas");
  if (!canvasId) return;
  current = canvasId;
  canvasView.selected = null;
  render();
});

/** The ledger panel's and the saved badge's buttons: flush, retry or discard an operation. */
function onOperationButton(event: Event): void {
  const button = (event.target as HTMLElement).closest("button[data-action]");
  const id = button?.getAttribute("data-op");
  const action = button?.getAttribute("data-action");
  if (!scheduler || !id || !action) return;
  const target = scheduler;
  const run = async () => {
    try {
      if (action === "flush") {
        const result = await target.flush(id);
        if (!result.started) addNotice(state, "info", `flush: not started (${result.explanation.reason})`);
      } else if (action === "retry") {
        await target.retry(id);
        const op = state.pending.find((p) => p.id === id);
        if (op) delete op.trouble;
      } else if (action === "discard") {
        await target.discard(id);
      }
    } catch (error) {
      addNotice(state, "error", `${action} failed: ${codeOf(error)} ${messageOf(error)}`);
    }
    save();
    render();
  };
  void run();
}
$("ops").addEventListener("click", onOperationButton);
$("saved").addEventListener("click", onOperationButton);

// ---- rendering ----------------------------------------------------------------------------

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

let renderQueued = false;
function scheduleRender(): void {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    render();
  });
}

function render(): void {
  const shown: CanvasState = view(state, current);
  canvasView.show(shown.document);
  $("tabs").innerHTML = state.canvasIds
    .map((id) => {
      const waiting = state.pending.filter((op) => op.canvasIds.includes(id)).length;
      return `<button data-canvas="${escape(id)}" class="${id === current ? "current" : ""}">${escape(id)} · v${state.base[id]?.version ?? 0}${waiting ? ` · ${waiting} unsent` : ""}</button>`;
    })
    .join("");
  $("canvas-title").textContent = `${current} — server version ${shown.version}, ${Object.keys(shown.document.shapes).length} shape(s)`;
  $("assets").innerHTML =
    Object.entries(shown.document.assets)
      .map(([assetId, asset]) => {
        const opId = assetId.startsWith("pending:") ? assetId.slice("pending:".length) : null;
        const src = opId ? previews.get(opId) : admin.assetUrl(assetId);
        const image = src && asset.contentType.startsWith("image/") ? `<img src="${escape(src)}" alt="">` : "";
        return `<li class="asset${asset.pending ? " pending" : ""}" data-asset-id="${escape(assetId)}">${image}<span>${escape(asset.name ?? assetId)} (${asset.size} B)${asset.pending ? " — waiting to upload" : ""}</span></li>`;
      })
      .join("") || "<li><em>no assets</em></li>";
  $("runs").innerHTML =
    Object.entries(shown.document.runs)
      .map(([runId, status]) => {
        const cancel = status === "starting" ? ` <button data-cancel-run="${escape(runId)}">cancel</button>` : "";
        return `<li data-run-id="${escape(runId)}">${escape(runId.slice(0, 12))}… <b>${escape(status)}</b>${cancel}</li>`;
      })
      .join("") || "<li><em>no runs</em></li>";
  $("notices").innerHTML = state.notices
    .map((n) => `<li class="notice ${n.level}">${new Date(n.at).toLocaleTimeString()} ${escape(n.text)}</li>`)
    .join("");
  $("retry-storage").hidden = !storageFailed;
  ($("recolour") as HTMLButtonElement).disabled = canvasView.selected === null;
  ($("delete") as HTMLButtonElement).disabled = canvasView.selected === null;
  panel.refresh(scheduler, state.pending);
  // Edits the ledger does not list yet (storage refused them, or their enqueue is on its
  // way): in worker mode the mirror may list one before its enqueue resolves here.
  const listed = scheduler ? scheduler.pending() : [];
  const inLedger = new Set(listed.map((op) => op.id));
  const outside = state.pending.filter((op) => !op.enqueued && !inLedger.has(op.id)).length;
  badge.update(listed, outside, storageFailed ? STORAGE_TROUBLE : null);
}

setInterval(() => {
  render();
}, 500);
setInterval(() => void refreshFaults(), 2000);

// For the end-to-end tests and the curious: the editor's state as plain JSON.
declare global {
  interface Window {
    canvasEditor: {
      snapshot(): {
        ready: boolean;
        current: string;
        canvases: Record<string, CanvasState>;
        pending: number;
        /** Edits storage refused, kept on the page until "Retry saving". */
        unsaved: number;
        /** Edits handed to the scheduler whose `enqueue` has not resolved yet (not yet durable). */
        saving: number;
        /** What `navigator.storage.persist()` answered (null until it did). */
        storagePersisted: boolean | null;
        categories: Record<string, number>;
        notices: string[];
        /** The saved badge: "All changes saved", "Saving… N" or "N not saved (why)". */
        saved: SavedView;
      };
    };
  }
}
window.canvasEditor = {
  snapshot: () => ({
    ready: scheduler !== null,
    current,
    canvases: Object.fromEntries(state.canvasIds.map((id) => [id, view(state, id)])),
    pending: state.pending.length,
    unsaved: state.pending.filter((op) => op.trouble === STORAGE_TROUBLE).length,
    saving: state.pending.filter((op) => !op.enqueued && op.trouble === undefined).length,
    storagePersisted,
    categories: { ...panel.counts },
    notices: state.notices.map((n) => n.text),
    saved: badge.view,
  }),
};

boot().catch((error: unknown) => {
  setStatus("error", `Could not open the ledger: ${codeOf(error)} ${messageOf(error)}`);
  console.error(error);
});
