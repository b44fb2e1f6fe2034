// The browser benchmark page: each measurement is a function on `window.bench` that the runner
// (www/bench/run.mjs) calls with page.evaluate and bounded arguments. Every loop is bounded in
// count and in time (a `deadlineMs` budget); a measurement that runs out of time returns what
// it got with `timedOut: true`. Baselines are plain IndexedDB and plain fetch in this page.
import init, { Scheduler } from "../../pkg/web/canvas_scheduler.js";

const wasm = await init();

const now = () => performance.now();

/** Runs `action` and adds how long it took (ms) to `samples`. */
async function timed(samples, action) {
  const t = now();
  await action();
  samples.push(now() - t);
}

/** The p-th percentile (0..1) of `samples` (milliseconds). */
function percentile(samples, p) {
  if (samples.length === 0) return null;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

/** An intent like an editor's: one shape upsert on one canvas. */
function shapeIntent(id, canvasId, i) {
  return {
    id,
    operationType: "shape.upsert",
    canvasIds: [canvasId],
    payload: { shapeId: `shape-${i}`, shape: { x: i % 1000, y: (i * 7) % 1000, fill: "#3366ff" } },
  };
}

/** A record of about the size and shape of a stored pending operation. */
function rawRecord(id, i) {
  return {
    intent: { ...shapeIntent(id, `c${i % 100}`, i), sequence: i, dependencies: [], revision: 0 },
    phase: "pending",
    blockers: [],
  };
}

function request(idbRequest) {
  return new Promise((resolve, reject) => {
    idbRequest.onsuccess = () => resolve(idbRequest.result);
    idbRequest.onerror = () => reject(idbRequest.error);
  });
}

function openRawDb(name) {
  const open = indexedDB.open(name, 1);
  open.onupgradeneeded = () => {
    open.result.createObjectStore("records");
    open.result.createObjectStore("lease");
  };
  return request(open);
}

/** One readwrite transaction with strict durability (as the ledger's) putting `records`. */
function putAll(db, records) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction("records", "readwrite", { durability: "strict" });
    const store = tx.objectStore("records");
    for (const [key, value] of records) store.put(value, key);
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
  });
}

/**
 * A fenced write as the ledger does it: one readwrite transaction over the lease and the
 * records, reading the lease and putting the record (the read's answer is not awaited).
 */
function fencedPut(db, key, value) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(["lease", "records"], "readwrite", { durability: "strict" });
    tx.objectStore("lease").get("lease");
    tx.objectStore("records").put(value, key);
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
  });
}

/**
 * Group commit in plain JS, as leniently as durability allows: `put(key, value)` resolves once
 * a strict transaction carrying the record has committed; one transaction at a time, each
 * carrying every record waiting when it is issued (a lease read first, as the ledger's fenced
 * write), issued after the microtasks of the turn that asked for it. What a client that makes
 * each enqueue durable before it resolves can reach.
 */
function groupCommitter(db) {
  let waiting = [];
  let writing = false;
  const flush = () => {
    if (writing || waiting.length === 0) return;
    const batch = waiting;
    waiting = [];
    writing = true;
    const tx = db.transaction(["lease", "records"], "readwrite", { durability: "strict" });
    tx.objectStore("lease").get("lease");
    const store = tx.objectStore("records");
    for (const { key, value } of batch) store.put(value, key);
    const end = (error) => {
      writing = false;
      for (const { resolve, reject } of batch) (error ? reject(error) : resolve());
      flush();
    };
    tx.oncomplete = () => end(null);
    tx.onabort = () => end(tx.error ?? new Error("transaction aborted"));
  };
  let soon = false;
  return (key, value) =>
    new Promise((resolve, reject) => {
      waiting.push({ key, value, resolve, reject });
      // After the turn's other microtasks: every lane resumed by the last commit joins.
      if (!soon) {
        soon = true;
        queueMicrotask(() => {
          soon = false;
          flush();
        });
      }
    });
}

/**
 * 1. Raw IndexedDB: single-record transactions, single-record transactions in the shape of
 * the ledger's fenced write (lease read + record put, two stores), and `batchSize`-record
 * transactions.
 */
async function rawIdb({ singles, batches, batchSize, deadlineMs }) {
  const db = await openRawDb(`bench-raw-${Date.now()}`);
  try {
    await new Promise((resolve, reject) => {
      const tx = db.transaction("lease", "readwrite");
      tx.objectStore("lease").put(JSON.stringify({ owner: "bench", fence: 1, expiresAt: 0 }), "lease");
      tx.oncomplete = () => resolve();
      tx.onabort = () => reject(tx.error);
    });
    // Interleaved, so that both kinds meet the same moments of the machine and the store.
    const fenced = [];
    const latencies = [];
    let deadline = now() + (deadlineMs * 2) / 3;
    for (let i = 0; i < singles && now() < deadline; i++) {
      await timed(latencies, () => putAll(db, [[`s-${i}`, rawRecord(`s-${i}`, i)]]));
      await timed(fenced, () => fencedPut(db, `f-${i}`, rawRecord(`f-${i}`, i)));
    }
    const singleMs = latencies.reduce((sum, ms) => sum + ms, 0);
    deadline = now() + deadlineMs / 3;
    let batchRecords = 0;
    const batchStart = now();
    for (let b = 0; b < batches && now() < deadline; b++) {
      const records = [];
      for (let j = 0; j < batchSize; j++) {
        const i = b * batchSize + j;
        records.push([`b-${i}`, rawRecord(`b-${i}`, i)]);
      }
      await putAll(db, records);
      batchRecords += batchSize;
    }
    const batchMs = now() - batchStart;
    return {
      singleCount: latencies.length,
      singleRecordsPerSec: (latencies.length / singleMs) * 1000,
      singleP50Ms: percentile(latencies, 0.5),
      singleP99Ms: percentile(latencies, 0.99),
      fencedCount: fenced.length,
      fencedP50Ms: percentile(fenced, 0.5),
      fencedP99Ms: percentile(fenced, 0.99),
      batchRecords,
      batchRecordsPerSec: (batchRecords / batchMs) * 1000,
    };
  } finally {
    db.close();
  }
}

/** A transport that must never be called (the scheduler is held or never started). */
const unusedTransport = {
  submit: async () => ({ outcome: "rejected", error: "bench: unexpected send" }),
  query: async () => ({ status: 404 }),
};

/** A transport that answers `applied` at once, in the page. */
const applyingTransport = {
  submit: async () => ({ outcome: "applied" }),
  query: async () => ({ outcome: "applied" }),
};

/** The next chunk of a fill: intents `count` .. min(n, count + chunk) - 1, made by `make(i)`. */
function nextChunk(count, n, chunk, make) {
  const intents = [];
  for (let i = count; i < Math.min(n, count + chunk); i++) intents.push(make(i));
  return intents;
}

/**
 * 11. `pending()` and `stats()` with `n` unsettled operations (held, nothing sent), each the
 * median of `calls` calls; the baseline is the floor of any list of them: the same number of
 * plain objects with the same fields built in JS from an array of ids, in the same page.
 */
async function pendingCost({ n, calls }) {
  const scheduler = await Scheduler.open({ database: `bench-pending-${Date.now()}`, transport: unusedTransport });
  try {
    scheduler.hold();
    const intents = [];
    for (let i = 0; i < n; i++) intents.push({ id: `pending-${i}`, operationType: "record.put", canvasIds: [`c${i % 20}`], payload: { id: `shape:${i}`, x: i, y: i } });
    await scheduler.enqueueMany(intents);
    const ids = intents.map((intent) => intent.id);
    const median = (run) => {
      const times = [];
      for (let i = 0; i < calls; i++) {
        const start = now();
        run();
        times.push(now() - start);
      }
      times.sort((a, b) => a - b);
      return times[times.length >> 1];
    };
    let listed = 0;
    const pendingMs = median(() => (listed = scheduler.pending().length));
    const statsMs = median(() => scheduler.stats().pending);
    const floorMs = median(() =>
      ids.map((id, i) => ({ id, state: "queued", reason: "held", attempt: 0, canvasIds: [`c${i % 20}`], sequence: i })).length,
    );
    return { n, listed, pendingMs, statsMs, floorMs };
  } finally {
    scheduler.stop();
  }
}

/**
 * 2. Durable `enqueue` latency: N sequential awaits on a held scheduler, interleaved with the
 * two raw baselines (a 1-record transaction, and the ledger's fenced-write shape) in a raw
 * database of this page, so that all three meet the same moments of a shared machine.
 */
async function enqueueLatency({ n, deadlineMs, database = `bench-enqueue-${Date.now()}`, tombstones = 0 }) {
  const scheduler = await Scheduler.open({ database, transport: unusedTransport });
  const release = scheduler.hold();
  const db = await openRawDb(`bench-enqueue-raw-${Date.now()}`);
  try {
    // On a ledger with history: measured once the tombstones are counted after the
    // load, as an editor meets it a moment after opening.
    const counted = now() + 10_000;
    while (scheduler.stats().tombstones < tombstones && now() < counted) await new Promise((resolve) => setTimeout(resolve, 20));
    const latencies = [];
    const raw = [];
    const fenced = [];
    const deadline = now() + deadlineMs;
    for (let i = 0; i < n && now() < deadline; i++) {
      await timed(raw, () => putAll(db, [[`s-${i}`, rawRecord(`s-${i}`, i)]]));
      await timed(fenced, () => fencedPut(db, `f-${i}`, rawRecord(`f-${i}`, i)));
      await timed(latencies, () => scheduler.enqueue(shapeIntent(`e-${i}`, `c${i % 10}`, i)));
    }
    return {
      count: latencies.length,
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      rawP50Ms: percentile(raw, 0.5),
      rawP99Ms: percentile(raw, 0.99),
      fencedP50Ms: percentile(fenced, 0.5),
      timedOut: latencies.length < n,
    };
  } finally {
    db.close();
    release();
    scheduler.stop();
  }
}

/**
 * Enqueues `intents` in chunks of `chunk` (one enqueueMany each), starts the scheduler and
 * waits until every operation is settled or the deadline passes. Times enqueue and dispatch.
 */
async function runScheduler(options, intents, chunk, deadlineMs, Impl = Scheduler) {
  const outcomes = { applied: 0, rejected: 0, discarded: 0 };
  const errors = [];
  let wake = () => {};
  const scheduler = await Impl.open({
    ...options,
    onEvent: (event) => {
      if (event.type === "settled") {
        outcomes[event.outcome] += 1;
        if (event.outcome !== "applied" && errors.length < 5) errors.push(event.error ?? event.outcome);
        wake();
      } else if ((event.type === "error" || event.type === "blocked" || event.type === "dead_lettered") && errors.length < 5) {
        errors.push(event);
      }
    },
  });
  try {
    const deadline = now() + deadlineMs;
    const t0 = now();
    let enqueued = 0;
    for (let i = 0; i < intents.length && now() < deadline; i += chunk) {
      await scheduler.enqueueMany(intents.slice(i, i + chunk));
      enqueued = Math.min(intents.length, i + chunk);
    }
    const t1 = now();
    scheduler.start();
    const settledCount = () => outcomes.applied + outcomes.rejected + outcomes.discarded;
    while (settledCount() < enqueued && now() < deadline && errors.length === 0) {
      await new Promise((resolve) => {
        wake = resolve;
        setTimeout(resolve, 250);
      });
    }
    const t2 = now();
    const stats = scheduler.stats();
    return {
      enqueued,
      applied: outcomes.applied,
      rejected: outcomes.rejected,
      errors: errors.map((e) => JSON.stringify(e).slice(0, 300)),
      enqueueMs: t1 - t0,
      dispatchMs: t2 - t1,
      totalMs: t2 - t0,
      opsPerSec: (outcomes.applied / (t2 - t0)) * 1000,
      dispatchOpsPerSec: (outcomes.applied / (t2 - t1)) * 1000,
      sent: stats.sent,
      timedOut: settledCount() < intents.length,
    };
  } finally {
    scheduler.stop();
  }
}

/** 3. Durable operations/s with an in-page transport that answers `applied` at once. */
async function throughputInstant({ n, chunk, concurrency, canvases, batch, run = 1, deadlineMs }) {
  const intents = [];
  for (let i = 0; i < n; i++) intents.push(shapeIntent(`t-${i}`, `c${Math.floor(i / run) % canvases}`, i));
  const transport = applyingTransport;
  const options = { database: `bench-instant-${batch ? "b" : "n"}-${Date.now()}`, transport, concurrency };
  // Without `batch`: one operation a request (batching is on by default).
  options.batch = batch ?? { maxOperations: 1 };
  return runScheduler(options, intents, chunk, deadlineMs);
}

/**
 * 4. End to end against the reference server at concurrency 2, with or without `batch`.
 * Operations come in runs of `run` on the same canvas (of `canvases`), as an editor dragging
 * a shape produces them: consecutive operations on one canvas are what a batch may carry.
 */
async function endToEnd({ endpoint, n, chunk, canvases, run, batch, deadlineMs, tag, concurrency = 2, worker = false }) {
  const intents = [];
  for (let i = 0; i < n; i++) intents.push(shapeIntent(`${tag}-${i}`, `${tag}-c${Math.floor(i / run) % canvases}`, i));
  const options = { database: `bench-${tag}-${Date.now()}`, endpoint, concurrency };
  // Without `batch`: one operation a request (batching is on by default).
  options.batch = batch ?? { maxOperations: 1 };
  // Worker mode (README): the same API with the scheduler in a dedicated worker.
  const Impl = worker ? (await import("../../worker/index.js")).Scheduler : Scheduler;
  return runScheduler(options, intents, chunk, deadlineMs, Impl);
}

/**
 * 4. Baseline: a plain fetch loop at `concurrency` (2 unless given) posting one protocol v1
 * request each.
 */
async function fetchLoop({ endpoint, n, canvases, deadlineMs, tag, concurrency = 2 }) {
  const deadline = now() + deadlineMs;
  let next = 0;
  let applied = 0;
  const failures = [];
  const worker = async () => {
    while (next < n && now() < deadline && failures.length === 0) {
      const i = next++;
      const id = `${tag}-req-${i}`;
      const canvasId = `${tag}-c${i % canvases}`;
      const intent = shapeIntent(`${tag}-op-${i}`, canvasId, i);
      const body = {
        id,
        operationIds: [intent.id],
        kind: "shape.upsert",
        ownerCanvasId: canvasId,
        protocolVersion: 1,
        payload: intent.payload,
        canvasIds: [canvasId],
        expectedVersions: {},
      };
      const response = await fetch(`${endpoint}/requests`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": id },
        body: JSON.stringify(body),
      });
      const answer = await response.json();
      if (response.status === 200 && answer.outcome === "applied") applied += 1;
      else failures.push(`${response.status} ${JSON.stringify(answer).slice(0, 200)}`);
    }
  };
  const t0 = now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const ms = now() - t0;
  return { applied, failures, ms, opsPerSec: (applied / ms) * 1000, timedOut: applied < n };
}

/**
 * 4. Baseline with the scheduler's durability, in plain JS (no module): what any client that
 * keeps the in-flight bound, canvas order and durability pays, written as leniently as they allow.
 * - The `n` intents are written in one strict transaction (an `enqueueMany`).
 * - Each request is frozen (body and key, in a strict transaction that reads the lease record
 *   first, as the fence) before it is sent, up to `concurrency` frozen ahead of the free slots.
 * - A request claims its canvas from its freeze until its answer. Operations are frozen in
 *   sequence: one whose canvas is claimed waits, and those after it (with 20 canvases and 4
 *   requests out, rarely).
 * - An answer frees its slot for the next frozen request in the same turn, and its canvas for
 *   the next freeze. It is written in the next transaction with the next freezes (relaxed when
 *   that holds no freeze).
 * - A transaction is issued as soon as there is something to write, up to `outstanding` (2
 *   unless given) at once: the next one is issued while one commits, and the browser runs them
 *   in order. Nothing else is kept: no event log, no retries, no recovery.
 * - `keep: true`: it also keeps what the scheduler keeps, as the scheduler stores it: each
 *   frozen request as a record of its own (its members and the body's text), each operation
 *   rewritten with its request at the freeze and with its outcome at the answer, the request
 *   rewritten with the answer's text (its canonical state), a page of the transaction's events
 *   and the ledger's counters in every transaction, and the settled ones moved to an archive
 *   (their records deleted) at most every 250 ms, as the scheduler compacts while it works.
 * - `ahead`: how many requests may be frozen or in flight at once (2 × `concurrency` unless
 *   given): a deeper window writes more freezes, and answers, per transaction.
 * - `without` (with `keep`): parts of what the scheduler keeps left out, to see what each
 *   costs: "freezeRewrite" (the operation rewritten at its freeze), "answerRewrite" (at its
 *   answer), "requestRewrite" (the answer written as a small record of its own instead of the
 *   request rewritten whole), "events", "meta" (the counters), "archive".
 */
async function durableLoop({ endpoint, n, canvases, deadlineMs, tag, concurrency = 2, outstanding = 2, keep = false, ahead = 2 * concurrency, without = [] }) {
  const leaves = new Set(without);
  const name = `durable-${tag}-${Date.now()}`;
  const open = indexedDB.open(name, 1);
  const stores = keep ? ["lease", "ops", "requests", "events", "meta", "archive"] : ["lease", "ops", "requests"];
  open.onupgradeneeded = () => {
    for (const store of stores) open.result.createObjectStore(store);
  };
  const db = await request(open);
  const deadline = now() + deadlineMs;
  const failures = [];
  let eventSeq = 0;
  let compactedAt = now();
  const toArchive = [];
  const frozenAt = new Map();
  const ops = [];
  for (let i = 0; i < n; i++) ops.push(shapeIntent(`${tag}-op-${i}`, `${tag}-c${i % canvases}`, i));
  let transactions = 0;
  /** One transaction: the lease read (the fence), then the puts; resolves when complete. */
  const write = (puts, durability) =>
    new Promise((resolve, reject) => {
      transactions += 1;
      const tx = db.transaction(stores, "readwrite", { durability });
      tx.objectStore("lease").get("lease").onsuccess = () => {
        for (const [store, key, value] of puts) {
          if (value === undefined) tx.objectStore(store).delete(key);
          else tx.objectStore(store).put(value, key);
        }
      };
      tx.oncomplete = resolve;
      tx.onerror = tx.onabort = () => reject(tx.error);
    });
  const t0 = now();
  await write(
    [["lease", "lease", JSON.stringify({ holder: tag, until: Date.now() + 60_000 })], ...ops.map((op, i) => ["ops", op.id, JSON.stringify({ intent: op, sequence: i, phase: "pending" })])],
    "strict",
  );
  let next = 0; // the next operation to freeze (taken in sequence order)
  const claimed = new Set(); // canvases of frozen or in-flight requests
  const ready = []; // frozen, durable, unsent
  const answers = []; // answered, not yet written
  let freezing = 0; // frozen in transactions not yet complete
  let inflight = 0;
  let writing = 0;
  let applied = 0;
  let finish;
  const done = new Promise((resolve) => (finish = resolve));
  const bodyOf = (i) => {
    const op = ops[i];
    const canvasId = op.canvasIds[0];
    return { id: `${tag}-req-${i}`, operationIds: [op.id], kind: op.operationType, ownerCanvasId: canvasId, protocolVersion: 1, payload: op.payload, canvasIds: [canvasId], expectedVersions: {} };
  };
  const send = () => {
    while (inflight < concurrency && ready.length > 0) {
      const body = ready.shift();
      inflight += 1;
      fetch(`${endpoint}/requests`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": body.id }, body: JSON.stringify(body) })
        .then(async (response) => {
          const answer = await response.json();
          if (response.status === 200 && answer.outcome === "applied") applied += 1;
          else failures.push(`${response.status} ${JSON.stringify(answer).slice(0, 200)}`);
          inflight -= 1;
          // Released with the answer: the next request on the canvas is frozen in the
          // transaction that writes this answer (as the scheduler's group commit does).
          claimed.delete(body.canvasIds[0]);
          answers.push(keep ? { ...body, answer } : body);
          send();
          pump();
        })
        .catch((error) => {
          failures.push(String(error));
          finish();
        });
    }
  };
  const sequenceOf = (id) => Number(id.slice(id.lastIndexOf("-") + 1));
  const operation = (body, more) => JSON.stringify({ intent: { ...ops[sequenceOf(body.operationIds[0])], sequence: sequenceOf(body.operationIds[0]) + 1, dependencies: [], expectedVersions: {}, revision: 0 }, phase: "pending", blockers: [], requestId: body.id, ...more });
  const requestRecord = (body, more) => JSON.stringify({ id: body.id, operationIds: body.operationIds, kind: body.kind, ownerCanvasId: body.ownerCanvasId, protocolVersion: 1, canvasIds: body.canvasIds, expectedVersions: {}, body: JSON.stringify(body), digest: "0".repeat(64), revisions: [0], phase: "frozen", attempt: 0, frozenAt: frozenAt.get(body.id), ...more });
  // What the scheduler keeps (`keep`), as it stores it.
  const keepPuts = (puts, frozen, settled) => {
    const events = [];
    for (const body of frozen) {
      frozenAt.set(body.id, Date.now());
      puts.push(["requests", body.id, requestRecord(body, {})]);
      if (!leaves.has("freezeRewrite")) puts.push(["ops", body.operationIds[0], operation(body, {})]);
    }
    for (const body of settled) {
      const outcome = { settlement: "applied", requestId: body.id, at: Date.now() };
      // `answerRecord`: the answer in a small record of its own, the frozen request left as written.
      if (leaves.has("requestRewrite")) puts.push(["requests", `${body.id}/answer`, JSON.stringify({ phase: "dispatched", attempt: 1, outcome: "applied", canonical: body.answer.canonical })]);
      else puts.push(["requests", body.id, requestRecord(body, { phase: "dispatched", attempt: 1, outcome: "applied", canonical: body.answer.canonical })]);
      if (!leaves.has("answerRewrite")) puts.push(["ops", body.operationIds[0], operation(body, { phase: "resolved", outcome })]);
      if (!leaves.has("events")) events.push({ seq: ++eventSeq, at: Date.now(), kind: "sent", requestId: body.id, attempt: 1 }, { seq: ++eventSeq, at: Date.now(), kind: "settled", requestId: body.id, operationId: body.operationIds[0] });
      if (!leaves.has("archive")) toArchive.push([body, outcome]);
    }
    if (now() - compactedAt >= 250 && toArchive.length > 0) {
      compactedAt = now();
      for (const [body, outcome] of toArchive.splice(0)) {
        puts.push(["archive", body.operationIds[0], operation(body, { phase: "resolved", outcome })], ["ops", body.operationIds[0], undefined], ["requests", body.id, undefined]);
      }
    }
    if (events.length > 0) puts.push(["events", events[0].seq, JSON.stringify(events)]);
    if (!leaves.has("meta")) puts.push(["meta", "meta", JSON.stringify({ lastSequence: n, lastEventSeq: eventSeq })]);
  };
  // Issues a transaction when there is something to write: answers, or room for freezes.
  const pump = () => {
    if (failures.length > 0 || now() > deadline) return finish();
    if (applied === n) return finish();
    while (writing < outstanding) {
      const frozen = [];
      while (next < n && inflight + ready.length + freezing + frozen.length < ahead && !claimed.has(ops[next].canvasIds[0])) {
        claimed.add(ops[next].canvasIds[0]);
        frozen.push(bodyOf(next));
        next += 1;
      }
      const settled = answers.splice(0);
      if (frozen.length === 0 && settled.length === 0) return;
      const puts = [];
      if (keep) keepPuts(puts, frozen, settled);
      else {
        for (const body of frozen) puts.push(["requests", body.id, JSON.stringify({ body, key: body.id, state: "frozen" })], ["ops", body.operationIds[0], JSON.stringify({ phase: "frozen", request: body.id })]);
        for (const body of settled) puts.push(["requests", body.id, JSON.stringify({ state: "answered" })], ["ops", body.operationIds[0], JSON.stringify({ phase: "settled", outcome: "applied" })]);
      }
      writing += 1;
      freezing += frozen.length;
      write(puts, frozen.length > 0 ? "strict" : "relaxed").then(
        () => {
          writing -= 1;
          freezing -= frozen.length;
          ready.push(...frozen);
          send();
          pump();
        },
        (error) => {
          failures.push(String(error));
          finish();
        },
      );
    }
  };
  pump();
  await done;
  const ms = now() - t0;
  db.close();
  indexedDB.deleteDatabase(name);
  return { applied, failures, ms, opsPerSec: (applied / ms) * 1000, transactions, timedOut: applied < n };
}

/**
 * 5. Fills a ledger with `n` pending operations (held, never started), then stops. The lease
 * is the shortest allowed: stop() does not give it up, so the next page waits for it to expire.
 */
async function fill({ database, n, chunk, deadlineMs }) {
  const scheduler = await Scheduler.open({ database, transport: unusedTransport, leaseMs: FILL_LEASE_MS });
  const release = scheduler.hold();
  try {
    const deadline = now() + deadlineMs;
    const t0 = now();
    let count = 0;
    while (count < n && now() < deadline) {
      const intents = nextChunk(count, n, chunk, (i) => shapeIntent(`f-${i}`, `c${i % 100}`, i));
      await scheduler.enqueueMany(intents);
      count += intents.length;
    }
    return { count, ms: now() - t0, timedOut: count < n };
  } finally {
    release();
    scheduler.stop();
  }
}

const FILL_LEASE_MS = 1000;

/** Opens `options`, retrying (bounded) while the previous page's lease has not expired. */
async function openWhenFree(options) {
  const deadline = now() + 5 * FILL_LEASE_MS;
  let waits = 0;
  for (;;) {
    try {
      return { scheduler: await Scheduler.open(options), waits };
    } catch (error) {
      if (error?.code !== "not_leader" || now() > deadline) throw error;
      waits += 1;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function heapBytes() {
  globalThis.gc?.();
  return performance.memory?.usedJSHeapSize ?? null;
}

/**
 * 5 and 6. On a fresh page: Scheduler.open + start() of an existing ledger (held, so nothing is
 * sent), with the JS heap (performance.memory, precise, after gc) and the wasm linear memory
 * before and after.
 */
async function openStart({ database }) {
  // Wait out the filling page's lease first, so that the timed open is one clean open.
  await new Promise((resolve) => setTimeout(resolve, FILL_LEASE_MS + 200));
  const heapBefore = heapBytes();
  const wasmBefore = wasm.memory.buffer.byteLength;
  const t0 = now();
  const { scheduler, waits } = await openWhenFree({ database, transport: unusedTransport });
  const t1 = now();
  const release = scheduler.hold();
  scheduler.start();
  const t2 = now();
  const stats = scheduler.stats();
  // Collected twice, a task turn apart: the records a load read (the pages' byte arrays) are
  // freed by the collection after the one that finds their requests garbage; measured after
  // one they add ~2.5 MB per 10 000 operations that the next collection frees.
  heapBytes();
  await new Promise((resolve) => setTimeout(resolve, 100));
  const heapAfter = heapBytes();
  const wasmAfter = wasm.memory.buffer.byteLength;
  release();
  scheduler.stop();
  return {
    openMs: t1 - t0,
    startMs: t2 - t1,
    totalMs: t2 - t0,
    pending: stats.pending,
    leaseWaits: waits,
    heapMethod: globalThis.gc ? "performance.memory.usedJSHeapSize (precise) after gc()" : "performance.memory.usedJSHeapSize (no gc)",
    jsHeapDelta: heapBefore === null ? null : heapAfter - heapBefore,
    wasmMemoryDelta: wasmAfter - wasmBefore,
    wasmMemoryAfter: wasmAfter,
  };
}

/**
 * 5. Baseline: a raw getAll of the stores holding the ledger's operations as they are stored
 * (`operations`: one record each; `operation_pages`: the ones never rewritten, many a record).
 */
async function rawGetAll({ database }) {
  const t0 = now();
  const db = await request(indexedDB.open(database));
  try {
    const tx = db.transaction(["operations", "operation_pages"], "readonly");
    const [records, pages] = await Promise.all([
      request(tx.objectStore("operations").getAll()),
      request(tx.objectStore("operation_pages").getAll()),
    ]);
    const paged = pages.reduce((sum, page) => sum + page.ids.length, 0);
    return { ms: now() - t0, count: records.length + paged, records: records.length + pages.length };
  } finally {
    db.close();
  }
}

/**
 * 11. What an open reads, store by store: a raw `getAll` of each store the load reads, timed
 * one after another in one read-only transaction each (the split of a reopen's time).
 */
async function rawStores({ database, stores }) {
  const db = await request(indexedDB.open(database));
  try {
    const out = {};
    for (const name of stores) {
      const t0 = now();
      const records = await request(db.transaction([name], "readonly").objectStore(name).getAll());
      out[name] = { ms: now() - t0, count: records.length };
    }
    return out;
  } finally {
    db.close();
  }
}

/**
 * 5, 8 and 11. The platform's part of a reopen: on a fresh page, after the same wait as
 * `openStart`, `indexedDB.open` of the ledger and one read-only transaction over `stores` with
 * a `getAll` of each (an open reads no more than this), timed as one.
 */
async function rawOpen({ database, stores }) {
  await new Promise((resolve) => setTimeout(resolve, FILL_LEASE_MS + 200));
  const t0 = now();
  const db = await request(indexedDB.open(database));
  const t1 = now();
  try {
    const tx = db.transaction(stores, "readonly");
    const counts = await Promise.all(stores.map((name) => request(tx.objectStore(name).getAll()).then((all) => all.length)));
    return { openMs: t1 - t0, totalMs: now() - t0, records: counts.reduce((a, b) => a + b, 0) };
  } finally {
    db.close();
  }
}

/**
 * 8. History (retention): sends `n` operations through an in-page transport that applies them
 * at once, with a policy that keeps none whole (each is compacted to a tombstone as it
 * settles), and measures the origin's storage before and after (navigator.storage.estimate()).
 */
async function fillSettled({ database, n, chunk, deadlineMs }) {
  const before = (await navigator.storage.estimate()).usage;
  const transport = applyingTransport;
  const scheduler = await Scheduler.open({
    database, transport, leaseMs: FILL_LEASE_MS, concurrency: 8,
    batch: { maxOperations: 32, maxBytes: 65536 }, retain: { settled: 0 },
  });
  try {
    scheduler.start();
    const deadline = now() + deadlineMs;
    const t0 = now();
    let count = 0;
    while (count < n && now() < deadline) {
      const intents = nextChunk(count, n, chunk, (i) => shapeIntent(`h-${i}`, `c${Math.floor(i / 32) % 100}`, i));
      await scheduler.enqueueMany(intents);
      count += intents.length;
      await scheduler.settle();
    }
    // Retention keeps the operation holding the ledger's highest sequence whole (the next
    // sequence is derived from it at load): all but that one become tombstones.
    while (scheduler.stats().tombstones + scheduler.stats().settledKept < count && now() < deadline) {
      await scheduler.settle();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const stats = scheduler.stats();
    const after = (await navigator.storage.estimate()).usage;
    return { count, ms: now() - t0, tombstones: stats.tombstones, kept: stats.settledKept, bytes: after - before, timedOut: count < n };
  } finally {
    scheduler.stop();
  }
}

/**
 * 11. A burst, then the tab closed at once: `n` operations through an in-page
 * transport that applies them at once, with the default options (retention included:
 * 1 000 settled kept whole), `settle()`, then `stop()` `quietMs` later (0: at once). What the
 * next open reads is what retention compacted while the burst went on.
 */
async function fillBurst({ database, n, chunk, quietMs, deadlineMs }) {
  const before = (await navigator.storage.estimate()).usage;
  const transport = applyingTransport;
  const scheduler = await Scheduler.open({ database, transport, leaseMs: FILL_LEASE_MS });
  try {
    scheduler.start();
    const deadline = now() + deadlineMs;
    const t0 = now();
    let count = 0;
    while (count < n && now() < deadline) {
      const intents = nextChunk(count, n, chunk, (i) => shapeIntent(`u-${i}`, `c${i % 20}`, i));
      await scheduler.enqueueMany(intents);
      count += intents.length;
      while (scheduler.stats().pending > chunk && now() < deadline) await scheduler.settle();
    }
    while (scheduler.stats().pending > 0 && now() < deadline) await scheduler.settle();
    const ms = now() - t0;
    if (quietMs > 0) await new Promise((resolve) => setTimeout(resolve, quietMs));
    const stats = scheduler.stats();
    const bytes = (await navigator.storage.estimate()).usage - before;
    return { count, ms, kept: stats.settledKept, tombstones: stats.tombstones, pending: stats.pending, bytes, timedOut: count < n };
  } finally {
    scheduler.stop();
  }
}

/**
 * `outstanding` lanes calling `step(i)` back to back for `rateMs` (and not past `deadline`):
 * the calls made, the ms taken, and how far `delivered()` moved meanwhile.
 */
async function runLanes({ outstanding, rateMs, deadline, delivered }, step) {
  const before = delivered();
  const t = now();
  let calls = 0;
  const lane = async () => {
    while (now() - t < rateMs && now() < deadline) {
      const i = calls;
      calls += 1;
      await step(i);
    }
  };
  await Promise.all(Array.from({ length: outstanding }, lane));
  return { calls, ms: now() - t, delivered: delivered() - before };
}

/**
 * 9. `enqueue` while the scheduler sends at full speed: the reference server at
 * concurrency 2, default options, a backlog of `backlog` operations already dispatching. Then
 * `n` sequential awaited enqueues, each interleaved with the raw 1-record transaction of
 * measurement 2 in a raw database of this page (the same moments of a shared machine); then,
 * for `rateMs`, enqueues awaited back to back, counted beside the operations settled meanwhile
 * (the delivery rate); then for `rateMs` again with `outstanding` enqueues in flight at once.
 */
async function enqueueWhileSending({ endpoint, backlog, n, rateMs, outstanding = 16, deadlineMs, tag, concurrency = 2 }) {
  let settled = 0;
  const errors = [];
  const scheduler = await Scheduler.open({
    database: `bench-${tag}-${Date.now()}`,
    endpoint,
    // `null`: the package's default.
    ...(concurrency === null ? {} : { concurrency }),
    onEvent: (event) => {
      if (event.type === "settled") settled += 1;
      else if ((event.type === "error" || event.type === "blocked" || event.type === "dead_lettered") && errors.length < 5) errors.push(JSON.stringify(event).slice(0, 300));
    },
  });
  const db = await openRawDb(`bench-${tag}-raw-${Date.now()}`);
  const deadline = now() + deadlineMs;
  try {
    const intents = [];
    for (let i = 0; i < backlog; i++) intents.push(shapeIntent(`${tag}-b-${i}`, `${tag}-c${i % 20}`, i));
    await scheduler.enqueueMany(intents);
    scheduler.start();
    const latencies = [];
    const raw = [];
    let busy = 0;
    for (let i = 0; i < n && now() < deadline; i++) {
      if (scheduler.stats().inFlight > 0) busy += 1;
      await timed(raw, () => putAll(db, [[`s-${i}`, rawRecord(`s-${i}`, i)]]));
      await timed(latencies, () => scheduler.enqueue(shapeIntent(`${tag}-e-${i}`, `${tag}-c${i % 20}`, i)));
    }
    const settledBefore = settled;
    const t0 = now();
    let enqueued = 0;
    while (now() - t0 < rateMs && now() < deadline) {
      await scheduler.enqueue(shapeIntent(`${tag}-r-${enqueued}`, `${tag}-c${enqueued % 20}`, enqueued));
      enqueued += 1;
    }
    const ms = now() - t0;
    const delivered = settled - settledBefore;
    // The same with `outstanding` enqueues in flight at once (group commit), counted
    // beside the operations delivered meanwhile.
    const inLanes = (step) => runLanes({ outstanding, rateMs, deadline, delivered: () => settled }, step);
    const many = await inLanes((i) => scheduler.enqueue(shapeIntent(`${tag}-m-${i}`, `${tag}-c${i % 20}`, i)));
    // The ceiling beside it: the same `outstanding` lanes through a plain-JS group commit
    // (groupCommitter) into the raw database, while the scheduler goes on sending its backlog.
    const put = groupCommitter(db);
    const plain = await inLanes((i) => put(`g-${i}`, rawRecord(`g-${i}`, i)));
    return {
      outstanding,
      plainPerSec: (plain.calls / plain.ms) * 1000,
      deliveredPlainPerSec: (plain.delivered / plain.ms) * 1000,
      manyPerSec: (many.calls / many.ms) * 1000,
      deliveredManyPerSec: (many.delivered / many.ms) * 1000,
      count: latencies.length,
      busy,
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      rawP50Ms: percentile(raw, 0.5),
      rawP99Ms: percentile(raw, 0.99),
      enqueuePerSec: (enqueued / ms) * 1000,
      deliveredPerSec: (delivered / ms) * 1000,
      pendingAtEnd: scheduler.stats().pending,
      errors,
      timedOut: latencies.length < n,
    };
  } finally {
    db.close();
    scheduler.stop();
  }
}

/**
 * 9b. Enqueue from a tab that does not dispatch, beside the tab that does: two schedulers
 * of one ledger in this page (`owner` "lead" opened first takes the Web Lock and dispatches;
 * "follow" writes its enqueues to the shared inbox, the intake store outside the fence, and the
 * leader adopts them). A backlog of `backlog` operations keeps the leader's concurrency 2
 * busy. Then `n` rounds of: a raw 1-record transaction, an awaited enqueue by the leader, an
 * awaited enqueue by the follower (the same moments of a shared machine for all three); then
 * `outstanding` lanes of the leader's enqueues for `rateMs`, and the same of the follower's,
 * each counted beside the operations delivered meanwhile. Every follower enqueue must reach
 * the server: the run waits (bounded by `deadlineMs`) until the leader settled all of them.
 */
async function followerEnqueue({ endpoint, backlog, n, rateMs, outstanding = 16, deadlineMs, tag }) {
  const settledIds = new Set();
  const errors = [];
  const database = `bench-${tag}-${Date.now()}`;
  const onEvent = (event) => {
    if (event.type === "settled") settledIds.add(event.operationId);
    else if ((event.type === "error" || event.type === "blocked" || event.type === "dead_lettered") && errors.length < 5) errors.push(JSON.stringify(event).slice(0, 300));
  };
  const lead = await Scheduler.open({ database, endpoint, concurrency: 2, owner: "lead", onEvent });
  const follow = await Scheduler.open({ database, endpoint, concurrency: 2, owner: "follow" });
  const db = await openRawDb(`bench-${tag}-raw-${Date.now()}`);
  const deadline = now() + deadlineMs;
  const followed = [];
  try {
    if (!lead.stats().leader || follow.stats().leader) throw new Error(`expected "lead" to dispatch and "follow" to follow: ${JSON.stringify([lead.stats().leaderOwner, follow.stats().leaderOwner])}`);
    const intents = [];
    for (let i = 0; i < backlog; i++) intents.push(shapeIntent(`${tag}-b-${i}`, `${tag}-c${i % 20}`, i));
    await lead.enqueueMany(intents);
    lead.start();
    const raw = [];
    const leader = [];
    const follower = [];
    for (let i = 0; i < n && now() < deadline; i++) {
      await timed(raw, () => putAll(db, [[`s-${i}`, rawRecord(`s-${i}`, i)]]));
      await timed(leader, () => lead.enqueue(shapeIntent(`${tag}-l-${i}`, `${tag}-c${i % 20}`, i)));
      const id = `${tag}-f-${i}`;
      followed.push(id);
      await timed(follower, () => follow.enqueue(shapeIntent(id, `${tag}-c${i % 20}`, i)));
    }
    const inLanes = (step) => runLanes({ outstanding, rateMs, deadline, delivered: () => settledIds.size }, step);
    const leaderMany = await inLanes((i) => lead.enqueue(shapeIntent(`${tag}-lm-${i}`, `${tag}-c${i % 20}`, i)));
    const followerMany = await inLanes((i) => {
      const id = `${tag}-fm-${i}`;
      followed.push(id);
      return follow.enqueue(shapeIntent(id, `${tag}-c${i % 20}`, i));
    });
    // What the follower enqueued reaches the server: adopted and settled by the leader.
    while (now() < deadline && followed.some((id) => !settledIds.has(id))) await new Promise((r) => setTimeout(r, 50));
    return {
      outstanding,
      count: follower.length,
      rawP50Ms: percentile(raw, 0.5),
      rawP99Ms: percentile(raw, 0.99),
      leaderP50Ms: percentile(leader, 0.5),
      leaderP99Ms: percentile(leader, 0.99),
      followerP50Ms: percentile(follower, 0.5),
      followerP99Ms: percentile(follower, 0.99),
      leaderManyPerSec: (leaderMany.calls / leaderMany.ms) * 1000,
      deliveredLeaderManyPerSec: (leaderMany.delivered / leaderMany.ms) * 1000,
      followerManyPerSec: (followerMany.calls / followerMany.ms) * 1000,
      deliveredFollowerManyPerSec: (followerMany.delivered / followerMany.ms) * 1000,
      followed: followed.length,
      followedSettled: followed.filter((id) => settledIds.has(id)).length,
      errors,
    };
  } finally {
    db.close();
    follow.stop();
    lead.stop();
  }
}

/**
 * 10. Scale: what one send costs as the queue grows. `pending` operations on
 * `canvases` canvases are made durable while the scheduler is held; then it is released with
 * an in-page transport that answers `applied` at once; after the first `warm` sends, the next
 * `measured` are timed, with `stats().scanned` (operations examined to find ready work) per
 * send.
 */
async function sendScale({ pending, warm, measured, canvases, chunk, deadlineMs }) {
  const transport = applyingTransport;
  let settled = 0;
  let wake = () => {};
  const scheduler = await Scheduler.open({
    database: `bench-scale-${pending}-${canvases}-${Date.now()}`,
    transport,
    concurrency: 2,
    onEvent: (event) => {
      if (event.type === "settled") {
        settled += 1;
        wake();
      }
    },
  });
  try {
    const deadline = now() + deadlineMs;
    const release = scheduler.hold();
    scheduler.start();
    for (let i = 0; i < pending && now() < deadline; i += chunk) {
      const intents = [];
      for (let k = i; k < Math.min(pending, i + chunk); k++) intents.push(shapeIntent(`scale-${k}`, `c${k % canvases}`, k));
      await scheduler.enqueueMany(intents);
    }
    const held = scheduler.stats();
    const until = async (count) => {
      while (settled < count && now() < deadline) {
        await new Promise((resolve) => {
          wake = resolve;
          setTimeout(resolve, 250);
        });
      }
    };
    // The release examines every pending operation once (each finds its canvas's queue); the
    // `warm` sends after it are left out, so the window shows the cost that repeats per send.
    const t0 = now();
    release();
    await until(warm);
    const firstMs = now() - t0;
    const before = scheduler.stats();
    const firstScanned = before.scanned - held.scanned;
    const from = settled;
    const t1 = now();
    await until(warm + measured);
    const ms = now() - t1;
    const after = scheduler.stats();
    const sends = after.sent - before.sent;
    return {
      pending: held.pending,
      firstMs,
      firstScanned,
      settled: settled - from,
      ms,
      msPerSend: ms / Math.max(1, settled - from),
      scannedPerSend: (after.scanned - before.scanned) / Math.max(1, sends),
      timedOut: settled < warm + measured,
    };
  } finally {
    scheduler.stop();
  }
}

/**
 * 12. The durability matrix: from now on, every readwrite transaction this page
 * opens, the scheduler's and the raw baselines' alike, commits with `durability` ("strict" or
 * "relaxed") whatever its caller asked. Answers a counter of the transactions it changed, so
 * the runner can check the scheduler's went through it.
 */
function forceDurability(durability) {
  if (durability !== "strict" && durability !== "relaxed") throw new Error(`durability: ${durability}`);
  const transaction = IDBDatabase.prototype.transaction;
  const counted = { forced: 0 };
  IDBDatabase.prototype.transaction = function (stores, mode, options) {
    if (mode !== "readwrite") return transaction.call(this, stores, mode, options);
    counted.forced += 1;
    return transaction.call(this, stores, mode, { ...options, durability });
  };
  globalThis.benchForced = counted;
  return durability;
}

window.bench = { pendingCost, forceDurability, forced: () => globalThis.benchForced?.forced ?? 0, rawOpen, rawIdb, enqueueLatency, enqueueWhileSending, followerEnqueue, throughputInstant, endToEnd, fetchLoop, durableLoop, fill, openStart, rawGetAll, fillSettled, fillBurst, rawStores, sendScale };
document.body.dataset.ready = "1";
