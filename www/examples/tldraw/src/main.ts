//! tldraw with canvas-scheduler: every change of the user's document becomes intents
//! (src/intents.ts), stored in the ledger and sent to the server; the badge says what is saved
//! (src/saved.ts); images go up as `asset.upload` with the file as the intent's blob, and the
//! asset record names them by URL (src/assets.ts).
//! Query: ?endpoint=http://127.0.0.1:PORT&mode=page|worker|none|idb&canvas=ID
//! (&options=defaults|unbatched: the package's defaults, or batching and holds off, instead of
//! the example's options; the e2e test measures each).
//! (`none`: the same app without the scheduler, the baseline of the drag measure; `idb`: the
//! same app writing each change's records to IndexedDB itself, the floor of page-mode
//! persistence).
import { createElement } from "react";
import { createRoot } from "react-dom/client";
import { Tldraw, type Editor } from "tldraw";
import "tldraw/tldraw.css";
// tldraw's fonts, icons and translations bundled by Vite, not fetched from tldraw's CDN.
import { getAssetUrlsByImport } from "@tldraw/assets/imports.vite";
import { assetStore } from "./assets";
import { recordIntents } from "./intents";
import { SavedState, type SavedApi } from "./saved";
import { exampleOptions, openScheduler, type AppScheduler, type OptionsPreset } from "./scheduler";
import { openOwnStore } from "./own-store";

const query = new URLSearchParams(location.search);
const endpoint = query.get("endpoint") ?? "http://127.0.0.1:8080";
const mode = (query.get("mode") ?? "page") as "page" | "worker" | "none" | "idb";
const canvasId = query.get("canvas") ?? "tldraw-1";
const preset = (query.get("options") ?? "example") as OptionsPreset;
const assetUrls = getAssetUrlsByImport();
const saved = new SavedState(document.getElementById("badge")!);

let scheduler: AppScheduler | null = null;
/** The last enqueue call's promise: calls are made in change order and resolve in that order. */
let lastEnqueue: Promise<void> = Promise.resolve();
/** Chains `call` after the calls before it; resolves to nothing, so no chain of results grows. */
const after = (call: Promise<unknown>) => (lastEnqueue = Promise.all([lastEnqueue, call]).then(() => {}));
const enqueueFailures: string[] = [];
const enqueuedIds: string[] = [];
/** How each operation ended, from the `settled` events (read by the e2e test). */
const outcomes: Record<string, string> = {};

function enqueueMany(intents: Parameters<AppScheduler["enqueueMany"]>[0]) {
  if (!scheduler || intents.length === 0) return;
  const ids = intents.map((intent) => intent.id);
  const call = scheduler.enqueueMany(intents).then(
    () => (enqueuedIds.push(...ids), saved.enqueued(ids)),
    (error: Error & { code?: string }) => enqueueFailures.push(`${error.code ?? error.name}: ${error.message}`),
  );
  after(call);
}

/** Uploads enqueued (tldraw may call `upload` after `putExternalContent` resolves). */
let uploads = 0;

/** tldraw's asset store (src/assets.ts): the file goes in the ledger with its intent and is
 * sent as multipart; the asset record holds a URL, and this page shows its own copy. */
const assets = assetStore(endpoint, {
  async upload(id, file) {
    if (!scheduler) return;
    const call = scheduler.enqueue({ id, operationType: "asset.upload", canvasIds: [canvasId], payload: { name: file.name }, blob: file });
    after(call.catch(() => {}));
    await call;
    enqueuedIds.push(id);
    saved.enqueued([id]);
    uploads += 1;
  },
});

/** `idb` mode: the app's own writer of each change. */
let ownStore: ((entry: Parameters<typeof recordIntents>[0]) => void) | null = null;
/** Whether changes are enqueued (the e2e test turns it off for a round: the same page and the
 * same listener, without the scheduler's part of a move, is its baseline). */
let recording = true;

function onMount(editor: Editor) {
  if (ownStore) editor.store.listen(ownStore, { source: "user", scope: "document" });
  else if (mode !== "none") {
    editor.store.listen((entry) => recording && enqueueMany(recordIntents(entry, canvasId)), { source: "user", scope: "document" });
  }
  Object.assign(globalThis, {
    example: {
      editor,
      mode,
      saved,
      enqueueFailures,
      enqueuedIds,
      outcomes,
      get uploads() {
        return uploads;
      },
      get recording() {
        return recording;
      },
      set recording(on: boolean) {
        recording = on;
      },
      /** Waits for the enqueue calls made so far; answers every id enqueued (not taken by
       * the test's `enqueuedIds.splice`). */
      enqueued: async () => {
        await lastEnqueue;
        return [...enqueuedIds];
      },
      /** Waits for the enqueue calls made so far, then for `whenSaved()`; answers the ids it
       * waited for, which the server must have decided once it resolves. */
      whenSaved: async () => {
        await lastEnqueue;
        const ids = [...enqueuedIds];
        return { result: await saved.whenSaved(), ids };
      },
      stop: () => scheduler?.stop(),
      /** What the ledger knows of each id (`known`), and the synchronous views of one. */
      known: (ids: string[]) => scheduler?.known(ids),
      operation: (id: string) => scheduler?.operation(id),
      explain: (id: string) => scheduler?.explain(id),
      /** What the scheduler says now, for a test that timed out (or a curious user). */
      diagnose: () =>
        scheduler && {
          stats: scheduler.stats(),
          pending: scheduler.pending().length,
          first: scheduler.pending().slice(0, 3),
          claims: scheduler.claims(),
          enqueueFailures,
        },
    },
  });
  document.body.dataset.status = "ready";
}

try {
  if (mode === "idb") {
    ownStore = await openOwnStore(`own:${canvasId}`);
    saved.render();
  } else if (mode !== "none") {
    const options = exampleOptions(preset, endpoint, `ledger:${canvasId}`, (event) => {
      if (event.type === "settled") outcomes[event.operationId] = event.outcome;
      saved.onEvent(event);
    });
    scheduler = await openScheduler(mode, options);
    saved.attach(scheduler as unknown as SavedApi);
    // Nothing on pagehide: the scheduler pauses and resumes with the page by itself.
    scheduler.start();
  } else saved.render();
  createRoot(document.getElementById("app")!).render(createElement(Tldraw, { persistenceKey: canvasId, onMount, assets, assetUrls }));
} catch (error) {
  document.body.dataset.status = "error";
  document.body.dataset.error = String(error);
  throw error;
}
