// The drag workload of www/bench/drag/run.mjs: 60 updates a second to one shape, each an
// intent with the shape's coalesceKey, enqueued without waiting (as an editor's pointer
// handler does), while the scheduler sends. `window.drag.open(mode)` with mode "none" (the
// intents are only built), "page" (the package's Scheduler on this thread), "page-held" (the
// same, held: nothing is sent during the drag), "worker" (canvas-scheduler/worker), or
// "page-coalesce" / "worker-coalesce" (the same with `coalesceMs: 32`), then
// `run(ms)`. ?server=<reference server>&db=<ledger>.
import initPage, { Scheduler as PageScheduler } from "/pkg/web/canvas_scheduler.js";
import initWorker, { Scheduler as WorkerScheduler } from "/worker/index.js";

const query = new URLSearchParams(location.search);
const HZ = 60;

/** Opens the scheduler of `mode` (null for "none"); `settled` counts the settled events. */
async function open(mode, counts) {
  if (mode === "none") return null;
  const [init, Scheduler] = mode.startsWith("worker") ? [initWorker, WorkerScheduler] : [initPage, PageScheduler];
  await init();
  const scheduler = await Scheduler.open({
    database: query.get("db"),
    endpoint: query.get("server"),
    // "…-coalesce": each update held back two frames (the default), so the next replaces it
    // unwritten and unsent; the other modes hold nothing.
    coalesceMs: mode.endsWith("-coalesce") ? 32 : 0,
    onEvent: (event) => {
      if (event.type === "settled") counts[event.outcome] = (counts[event.outcome] ?? 0) + 1;
    },
  });
  scheduler.start();
  return scheduler;
}

window.drag = {
  /** Opens `mode`'s scheduler, resolves once it is ready (the measurement starts after). */
  async open(mode) {
    this.counts = { enqueued: 0, refused: 0 };
    this.scheduler = await open(mode, this.counts);
    // "page-held": the page's scheduler held, so it only makes each update durable and sends
    // nothing: the A/B that splits an update's cost from the sending's.
    this.release = mode === "page-held" ? this.scheduler.hold() : null;
    return true;
  },
  /** Drags for `ms`: one update every 1000/60 ms. Resolves with the counts once the last enqueue resolved. */
  async run(ms) {
    const { scheduler, counts } = this;
    const waits = [];
    let n = 0;
    const started = performance.now();
    await new Promise((done) => {
      const timer = setInterval(() => {
        if (performance.now() - started >= ms) {
          clearInterval(timer);
          done();
          return;
        }
        n += 1;
        const intent = {
          id: `drag-${crypto.randomUUID()}`,
          operationType: "shape.upsert",
          canvasIds: ["canvas-1"],
          coalesceKey: "drag:shape-1",
          payload: { shapeId: "shape-1", shape: { kind: "rect", x: n, y: n / 2, w: 40, h: 30 } },
        };
        if (scheduler) {
          waits.push(scheduler.enqueue(intent).then(() => (counts.enqueued += 1), () => (counts.refused += 1)));
        } else {
          waits.push(JSON.stringify(intent).length);
        }
      }, 1000 / HZ);
    });
    await Promise.all(waits);
    return { updates: n, ms: performance.now() - started };
  },
  /** The app's own persistence instead of a scheduler (mode "idb" of a selection drag): each
   * `enqueueMany` puts the intents' payloads into the page's own database, one strict
   * `readwrite` transaction a call, resolved once it commits. */
  async openOwn() {
    this.counts = { enqueued: 0, refused: 0 };
    const request = indexedDB.open(`own-${Date.now()}`, 1);
    request.onupgradeneeded = () => request.result.createObjectStore("records", { keyPath: "id" });
    const db = await new Promise((resolve, reject) => {
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    this.scheduler = {
      enqueueMany(intents) {
        const tx = db.transaction("records", "readwrite", { durability: "strict" });
        const store = tx.objectStore("records");
        for (const intent of intents) store.put(intent.payload);
        return new Promise((resolve, reject) => {
          tx.oncomplete = resolve;
          tx.onerror = () => reject(tx.error);
        });
      },
    };
    this.own = db;
    return true;
  },
  /** Worker mode's floor (mode "post" of a selection drag): each `enqueueMany` posts the
   * intents to a worker that only answers (www/bench/drag/echo.worker.js), resolved by the
   * answer: a structured clone of the intents and one message each way, nothing else. */
  async openPost() {
    this.counts = { enqueued: 0, refused: 0 };
    const worker = new Worker(new URL("./echo.worker.js", import.meta.url));
    const waiting = new Map();
    worker.onmessage = ({ data }) => {
      waiting.get(data)?.();
      waiting.delete(data);
    };
    let next = 0;
    this.scheduler = {
      enqueueMany(intents) {
        next += 1;
        const id = next;
        return new Promise((resolve) => {
          waiting.set(id, resolve);
          worker.postMessage({ id, intents });
        });
      },
    };
    this.own = worker;
    return true;
  },
  /** Records this page's IndexedDB writes (before `open`): each readwrite transaction the
   * scheduler opens, with the move it opened in and its puts and deletes (a put's value as
   * its JSON length: the ledger's records are strings). `recorded()` returns them by move. */
  record() {
    const log = [];
    this.log = log;
    this.move = 0;
    const tx = IDBDatabase.prototype.transaction;
    const entries = new WeakMap();
    IDBDatabase.prototype.transaction = function (names, mode, options) {
      const made = tx.call(this, names, mode, options);
      if (mode === "readwrite") {
        const entry = { move: window.drag.move, stores: [...(typeof names === "string" ? [names] : names)], writes: [] };
        log.push(entry);
        entries.set(made, entry);
      }
      return made;
    };
    for (const op of ["put", "delete"]) {
      const original = IDBObjectStore.prototype[op];
      IDBObjectStore.prototype[op] = function (...args) {
        const entry = entries.get(this.transaction);
        if (entry && op === "put") entry.writes.push([this.name, typeof args[0] === "string" ? args[0].length : JSON.stringify(args[0]).length, args[1]]);
        if (entry && op === "delete") entry.writes.push([this.name, -1, args[0] instanceof IDBKeyRange ? null : args[0]]);
        return original.apply(this, args);
      };
    }
    return true;
  },
  recorded() {
    return this.log.filter((entry) => entry.writes.length > 0);
  },
  /** Replays `log` (from `recorded()`) as the app's own writes: each move's enqueueMany runs
   * that move's transactions (strict readwrite, the same stores, puts of strings of the same
   * lengths under the same keys, the same deletes), resolved once they commit. */
  async openReplay(log) {
    this.counts = { enqueued: 0, refused: 0 };
    const names = [...new Set(log.flatMap((entry) => entry.stores))];
    const request = indexedDB.open(`replay-${Date.now()}`, 1);
    request.onupgradeneeded = () => names.forEach((name) => request.result.createObjectStore(name));
    const db = await new Promise((resolve, reject) => {
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    const texts = new Map();
    for (const entry of log) for (const [, length] of entry.writes) if (length >= 0 && !texts.has(length)) texts.set(length, "x".repeat(length));
    let move = 0;
    const commit = (entry) => {
      const t = db.transaction(entry.stores, "readwrite", { durability: "strict" });
      for (const [store, length, key] of entry.writes) {
        if (key === null || key === undefined) continue;
        if (length >= 0) t.objectStore(store).put(texts.get(length), key);
        else t.objectStore(store).delete(key);
      }
      return new Promise((resolve, reject) => {
        t.oncomplete = resolve;
        t.onerror = () => reject(t.error);
      });
    };
    this.scheduler = {
      enqueueMany() {
        const mine = log.filter((entry) => entry.move === move);
        move += 1;
        return Promise.all(mine.map(commit));
      },
    };
    this.own = db;
    return true;
  },
  /** A selection of `records` shapes dragged `moves` times, one move a frame: each move one
   * `enqueueMany` of a tldraw-sized record per shape, each with its shape's coalesceKey, not
   * awaited (as an editor's store listener does). Resolves once the last call resolved. */
  async selection(records, moves) {
    const { scheduler, counts } = this;
    const started = performance.now();
    const calls = [];
    for (let move = 0; move < moves; move += 1) {
      this.move = move;
      const intents = [];
      for (let r = 0; r < records; r += 1) {
        intents.push({
          id: `m${move}-r${r}-${crypto.randomUUID()}`,
          operationType: "shape.upsert",
          canvasIds: ["canvas-1"],
          coalesceKey: `shape-${r}`,
          payload: {
            id: `shape:${r}`, typeName: "shape", type: "geo", x: 10 + move, y: 20 + r, rotation: 0,
            isLocked: false, opacity: 1, parentId: "page:page", index: `a${r}`, meta: {},
            props: { w: 100, h: 80, geo: "rectangle", color: "black", fill: "none", dash: "draw", size: "m", text: "" },
          },
        });
      }
      if (scheduler) {
        calls.push(scheduler.enqueueMany(intents).then(() => (counts.enqueued += intents.length), () => (counts.refused += intents.length)));
      } else {
        calls.push(JSON.stringify(intents).length);
      }
      await new Promise((frame) => requestAnimationFrame(frame));
    }
    await Promise.all(calls);
    this.move = -1; // what is written after the drag is not the drag's
    return { moves, ms: performance.now() - started };
  },
  /** Waits until nothing is in flight; resolves with the counts and the scheduler's stats. */
  async finish() {
    if (!this.scheduler || this.own) return { counts: this.counts };
    this.release?.();
    await this.scheduler.settle();
    const stats = this.scheduler.stats();
    this.scheduler.stop();
    return { counts: this.counts, sent: stats.sent, settled: stats.settled };
  },
};
document.body.dataset.ready = "1";
