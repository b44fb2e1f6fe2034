// Enqueue latency of several builds of the package in one page, interleaved with the raw
// 1-record transaction the performance issue measures against: on a shared, noisy machine two
// builds measured minutes apart differ by more than most changes do; measured turn by turn in
// one page they meet the same moments. Each build is its own module instance (its own URL).
// Bounded: `n` rounds and a deadline.
const names = new URL(location.href).searchParams.getAll("build");
const builds = {};
for (const name of names) {
  const module = await import(`./builds/${name}/canvas_scheduler.js`);
  await module.default();
  builds[name] = module;
}

const now = () => performance.now();

/** An editor's intent, as the browser benchmark's (www/bench/bench.js). */
const intent = (id, canvasId, i) => ({
  id,
  operationType: "shape.upsert",
  canvasIds: [canvasId],
  payload: { shapeId: `shape-${i}`, shape: { x: i % 1000, y: (i * 7) % 1000, fill: "#3366ff" } },
});

const rawRecord = (id, i) => ({ intent: { ...intent(id, `c${i % 100}`, i), sequence: i, dependencies: [], revision: 0 }, phase: "pending", blockers: [] });

function request(idbRequest) {
  return new Promise((resolve, reject) => {
    idbRequest.onsuccess = () => resolve(idbRequest.result);
    idbRequest.onerror = () => reject(idbRequest.error);
  });
}

/** The baseline: one readwrite transaction (strict durability) putting one record. */
function putOne(db, key, value) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction("records", "readwrite", { durability: "strict" });
    tx.objectStore("records").put(value, key);
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
  });
}

const transport = {
  submit: async () => ({ outcome: "rejected", error: "ab: unexpected send" }),
  query: async () => ({ status: 404 }),
};

function median(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

/** `n` rounds; in each, the baseline and one held enqueue per build, in a rotating order. */
window.ab = async ({ n, deadlineMs }) => {
  const stamp = Date.now();
  const open = indexedDB.open(`ab-raw-${stamp}`, 1);
  open.onupgradeneeded = () => open.result.createObjectStore("records");
  const db = await request(open);
  const schedulers = {};
  for (const name of names) {
    schedulers[name] = await builds[name].Scheduler.open({ database: `ab-${name}-${stamp}`, transport });
    schedulers[name].hold();
  }
  const kinds = ["raw", ...names];
  const samples = Object.fromEntries(kinds.map((kind) => [kind, []]));
  const deadline = now() + deadlineMs;
  try {
    for (let i = 0; i < n && now() < deadline; i++) {
      for (let k = 0; k < kinds.length; k++) {
        const kind = kinds[(k + i) % kinds.length];
        const t = now();
        if (kind === "raw") await putOne(db, `r-${i}`, rawRecord(`r-${i}`, i));
        else await schedulers[kind].enqueue(intent(`e-${i}`, `c${i % 10}`, i));
        samples[kind].push(now() - t);
      }
    }
  } finally {
    for (const name of names) schedulers[name].stop();
    db.close();
  }
  return Object.fromEntries(kinds.map((kind) => [kind, { p50Ms: median(samples[kind]), count: samples[kind].length }]));
};

/**
 * The `load` part (AB_PART=load): each build in `order`, one after another, sends a backlog of
 * `backlog` operations to the reference server at `endpoint` (concurrency 2, 20 canvases) while
 * `n` awaited enqueues run, each after the raw 1-record transaction; per build: the enqueue
 * p50, the raw p50 of the same moments, and the operations delivered per second meanwhile.
 */
window.abLoad = async ({ endpoint, backlog, n, deadlineMs, order }) => {
  const stamp = Date.now();
  const open = indexedDB.open(`ab-load-raw-${stamp}`, 1);
  open.onupgradeneeded = () => open.result.createObjectStore("records");
  const db = await request(open);
  const out = {};
  try {
    for (const name of order) {
      let settled = 0;
      const errors = [];
      const tag = `${name}-${stamp}`;
      const scheduler = await builds[name].Scheduler.open({
        database: `ab-load-${tag}`,
        endpoint,
        concurrency: 2,
        onEvent: (event) => {
          if (event.type === "settled") settled += 1;
          else if (["error", "blocked", "dead_lettered"].includes(event.type)) errors.push(event.type);
        },
      });
      const latencies = [];
      const raw = [];
      const deadline = now() + deadlineMs;
      let window = 0;
      let delivered = 0;
      try {
        const intents = [];
        for (let i = 0; i < backlog; i++) intents.push(intent(`${tag}-b-${i}`, `${tag}-c${i % 20}`, i));
        await scheduler.enqueueMany(intents);
        scheduler.start();
        const settledBefore = settled;
        const t0 = now();
        for (let i = 0; i < n && now() < deadline; i++) {
          let t = now();
          await putOne(db, `${tag}-r-${i}`, rawRecord(`${tag}-r-${i}`, i));
          raw.push(now() - t);
          t = now();
          await scheduler.enqueue(intent(`${tag}-e-${i}`, `${tag}-c${i % 20}`, i));
          latencies.push(now() - t);
        }
        window = now() - t0;
        delivered = settled - settledBefore;
      } finally {
        scheduler.stop();
      }
      out[name] = {
        p50Ms: median(latencies),
        rawP50Ms: median(raw),
        count: latencies.length,
        deliveredPerSec: (delivered / window) * 1000,
        errors: errors.length,
      };
    }
  } finally {
    db.close();
  }
  return out;
};

/**
 * The `pending` part (AB_PART=pending): for each build a held scheduler with `n` unsettled
 * operations on 20 canvases (as the browser benchmark's `pendingCost`), then `calls` rounds in
 * which each build's `pending()` is called once, in a rotating order; per build, the median.
 */
window.abPending = async ({ n, calls, deadlineMs }) => {
  const stamp = Date.now();
  const schedulers = {};
  const samples = Object.fromEntries(names.map((name) => [name, []]));
  try {
    for (const name of names) {
      const scheduler = await builds[name].Scheduler.open({ database: `ab-pending-${name}-${stamp}`, transport });
      schedulers[name] = scheduler;
      scheduler.hold();
      const intents = [];
      for (let i = 0; i < n; i++) intents.push({ id: `pending-${i}`, operationType: "record.put", canvasIds: [`c${i % 20}`], payload: { id: `shape:${i}`, x: i, y: i } });
      await scheduler.enqueueMany(intents);
    }
    const deadline = now() + deadlineMs;
    for (let i = 0; i < calls && now() < deadline; i++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(k + i) % names.length];
        const t = now();
        const listed = schedulers[name].pending().length;
        samples[name].push(now() - t);
        if (listed !== n) throw new Error(`${name}: pending() listed ${listed} of ${n}`);
      }
    }
  } finally {
    for (const scheduler of Object.values(schedulers)) scheduler.stop();
  }
  return Object.fromEntries(names.map((name) => [name, { medianMs: median(samples[name]), count: samples[name].length }]));
};

document.body.dataset.ready = "1";
