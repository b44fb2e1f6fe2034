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

document.body.dataset.ready = "1";
