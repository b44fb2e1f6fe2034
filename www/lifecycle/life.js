// The page behind tests/e2e/lifecycle.mjs: one tab of a ledger on the reference server, as a
// host writes it when the library handles the page's lifecycle: it opens and starts the
// scheduler and never calls stop() (nothing on pagehide, no unload handler, so the page may
// enter the back/forward cache). Exposes window.life:
//   enqueue(ids, canvasId)  enqueueMany of shape.upsert intents; resolves true once durable;
//   stats()                 scheduler.stats();
//   heard()                 what this page heard: settled counts by id, leader changes,
//                           problems, and its pageshow/pagehide/freeze/resume events in order;
//   loadId                  random per load (the same after a back/forward cache restore);
//   whenSaved()             scheduler.whenSaved().
// Parameters: ?server=<reference server URL>&db=<IndexedDB name>&owner=<tab id>
// [&mode=worker] [&leaseMs=<ms>].
const params = new URLSearchParams(location.search);
const server = (params.get("server") ?? "").replace(/\/+$/, "");
const database = params.get("db") ?? "lifecycle";
const owner = params.get("owner") ?? undefined;
const mode = params.get("mode") ?? "page";
const leaseMs = Number(params.get("leaseMs") ?? "2000");

const settled = new Map();
const leaderChanges = [];
const problems = [];
const lifecycle = [];
// As www/lifecycle/plain.html: what a restore keeps (the test compares them across a round trip).
window.loadId = crypto.randomUUID();
window.shows = [];
addEventListener("pageshow", (event) => window.shows.push(event.persisted));
for (const [target, name] of [[window, "pageshow"], [window, "pagehide"], [document, "freeze"], [document, "resume"]]) {
  target.addEventListener(name, (event) => lifecycle.push(event.persisted === undefined ? name : `${name}:${event.persisted}`));
}

function onEvent(event) {
  if (event.type === "settled") settled.set(event.operationId, (settled.get(event.operationId) ?? 0) + 1);
  else if (event.type === "leader_changed") leaderChanges.push({ leader: event.leader, owner: event.owner, at: Date.now() });
  else if (event.type !== "pending" && event.type !== "saved") problems.push(JSON.stringify(event).slice(0, 300));
}

try {
  const module = mode === "worker" ? await import("/worker/index.js") : await import("/pkg/web/canvas_scheduler.js");
  await module.default();
  const scheduler = await module.Scheduler.open({
    database,
    endpoint: server,
    owner,
    leaseMs,
    retry: { baseMs: 50, maxMs: 500 },
    onEvent,
  });
  scheduler.start();
  window.life = {
    loadId: window.loadId,
    mode,
    enqueue: async (ids, canvasId) => {
      await scheduler.enqueueMany(
        ids.map((id) => ({
          id,
          operationType: "shape.upsert",
          canvasIds: [canvasId],
          payload: { shapeId: `shape-${id}`, shape: { kind: "rect", x: 1, y: 2, w: 3, h: 4, by: id } },
        })),
      );
      return true;
    },
    stats: () => scheduler.stats(),
    heard: () => ({ settled: Object.fromEntries(settled), leaderChanges, problems, lifecycle }),
    whenSaved: () => scheduler.whenSaved(),
  };
  document.body.dataset.status = "ready";
} catch (error) {
  console.error(`lifecycle page: ${error?.code ?? ""} ${error?.message ?? error}`);
  document.body.dataset.status = "error";
}
