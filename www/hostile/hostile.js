// The hostile-environment page: each case puts the scheduler in front of a broken or hostile
// network or host (www/hostile/front.mjs) and shows, in a table, what a careful user expects
// and what happened. Run by tests/e2e/hostile.mjs and `npm run hostile`.
// URL: /www/hostile/?front=<the front's URL>
import init, { Scheduler } from "/pkg/web/canvas_scheduler.js";

const params = new URLSearchParams(location.search);
const FRONT = params.get("front");
const RUN = `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
const DAY_MS = 86_400_000;
const FAST_RETRY = { baseMs: 50, maxMs: 300, maxAttempts: 50 };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function control(path, body) {
  const response = await fetch(`${FRONT}/_hostile/${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}
const setScript = (name, steps) => control(`script?case=${name}`, steps);
const seen = (name) => control(`seen?case=${name}`);
const elsewhere = (name) => control(`elsewhere?case=${name}`);
const applied = async (id) => (await control(`applied?operationId=${encodeURIComponent(id)}`)).applications;

/** Polls `check` (sync or async) every 50 ms until it returns truthy or `ms` pass. */
async function waitFor(check, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) return value;
    await sleep(50);
  }
}

/** Settles within `ms` or says it did not: a promise that never settles is a finding here. */
function within(promise, ms) {
  return Promise.race([
    promise.then(
      (value) => ({ settled: "resolved", value }),
      (error) => ({ settled: "rejected", code: error?.code ?? String(error) }),
    ),
    sleep(ms).then(() => ({ settled: "never" })),
  ]);
}

const upsert = (id, canvasId) => ({
  id,
  operationType: "shape.upsert",
  canvasIds: [canvasId],
  payload: { shapeId: `shape-${id}`, shape: { kind: "rect", x: 1, y: 2, w: 3, h: 4 } },
});

/** Opens a scheduler on the case's own endpoint, retrying while a stopped holder's lease lapses. */
async function open(name, options = {}, database = `hostile-${RUN}-${name}`) {
  const started = Date.now();
  for (;;) {
    try {
      return await Scheduler.open({ database, endpoint: `${FRONT}/${name}`, retry: FAST_RETRY, ...options });
    } catch (error) {
      if (error?.code !== "not_leader" || Date.now() - started > 10_000) throw error;
      await sleep(100);
    }
  }
}

const CASES = [
  {
    name: "retry_after",
    what: "a 503 with Retry-After: 10000000000000",
    expected: "the retry is due within a day; later enqueues still resolve and are delivered",
    async run() {
      await setScript(this.name, [{ status: 503, headers: { "retry-after": "10000000000000" } }]);
      const s = await open(this.name);
      s.start();
      await s.enqueue(upsert(`${RUN}-ra-1`, "c1"));
      const explanation = await waitFor(() => {
        const e = s.explain(`${RUN}-ra-1`);
        return e?.reason === "retry_scheduled" ? e : null;
      }, 5_000);
      const ahead = explanation?.dueAt === undefined ? NaN : explanation.dueAt - Date.now();
      const second = await within(s.enqueue(upsert(`${RUN}-ra-2`, "c2")), 5_000);
      const count = await waitFor(async () => (await applied(`${RUN}-ra-2`)) === 1, 10_000);
      s.stop();
      return {
        ok: Number.isFinite(ahead) && ahead <= DAY_MS + 60_000 && second.settled === "resolved" && count === true,
        observed: `retry due in ${Number.isFinite(ahead) ? `${(ahead / 3_600_000).toFixed(1)} h` : "?"}; next enqueue ${second.settled}${second.code ? ` (${second.code})` : ""}; delivered: ${count === true}`,
      };
    },
  },
  {
    name: "redirect_307",
    what: "a 307 to another origin, with an API key in headers()",
    expected: "nothing reaches the other origin; the request is retried and applied once at the real server",
    async run() {
      const hop = { status: 307, redirectElsewhere: true };
      await setScript(this.name, [hop, hop]);
      const s = await open(this.name, { headers: () => ({ "x-api-key": "hostile-307-secret" }) });
      s.start();
      const id = `${RUN}-r7-1`;
      await s.enqueue(upsert(id, "c1"));
      const done = await waitFor(async () => (await applied(id)) === 1, 15_000);
      const leaked = await elsewhere(this.name);
      s.stop();
      return {
        ok: done === true && leaked.length === 0,
        observed: `requests at the other origin: ${leaked.length}; applied at the real server: ${await applied(id)}`,
      };
    },
  },
  {
    name: "redirect_303",
    what: "a 303 to another origin that answers {\"outcome\":\"applied\"}",
    expected: "never settled applied by the other origin; applied once at the real server",
    async run() {
      await setScript(this.name, [{ status: 303, redirectElsewhere: true }]);
      const settled = [];
      const s = await open(this.name, { onEvent: (e) => e.type === "settled" && settled.push(e) });
      s.start();
      const id = `${RUN}-r3-1`;
      await s.enqueue(upsert(id, "c1"));
      await waitFor(() => settled.length > 0, 15_000);
      const count = await applied(id);
      const reached = await elsewhere(this.name);
      s.stop();
      return {
        ok: settled.length > 0 && count === 1 && reached.length === 0,
        observed: `settled ${settled[0]?.outcome ?? "never"}; applied at the real server: ${count}; requests at the other origin: ${reached.length}`,
      };
    },
  },
  {
    name: "proxy_400",
    what: "a proxy's HTML 400 (header too large)",
    expected: "dead-lettered with the status in its error, not rejected; retry(id) delivers it once the path is fixed",
    async run() {
      const html = "<html><body><h1>400 Bad Request</h1>Request Header Or Cookie Too Large</body></html>";
      await setScript(this.name, [{ status: 400, headers: { "content-type": "text/html" }, body: html }]);
      const events = [];
      const s = await open(this.name, { onEvent: (e) => events.push(e) });
      s.start();
      const id = `${RUN}-p4-1`;
      await s.enqueue(upsert(id, "c1"));
      const dead = await waitFor(() => events.find((e) => e.type === "dead_lettered" || e.type === "settled"), 10_000);
      const retried = dead?.type === "dead_lettered" ? await within(s.retry(id), 5_000) : null;
      const count = retried ? await waitFor(async () => (await applied(id)) === 1, 10_000) : false;
      s.stop();
      const rejected = events.some((e) => e.type === "settled" && e.outcome === "rejected");
      return {
        ok: dead?.type === "dead_lettered" && /400/.test(JSON.stringify(dead.error ?? {})) && !rejected && count === true,
        observed: `${dead ? `${dead.type}${dead.outcome ? ` ${dead.outcome}` : ""} (${dead.error?.code ?? "-"}: ${(dead.error?.message ?? "").slice(0, 60)})` : "nothing"}; after retry(id) applied: ${count === true}`,
      };
    },
  },
  {
    name: "principal",
    what: "alice's ledger opened with no principal and another user's headers()",
    expected: "alice's operation is not sent; explain says other_principal",
    async run() {
      const database = `hostile-${RUN}-${this.name}`;
      const alice = await open(this.name, { principal: "alice", leaseMs: 1000, headers: () => ({ "x-user": "alice" }) }, database);
      alice.hold();
      const id = `${RUN}-pr-1`;
      await alice.enqueue(upsert(id, "c1"));
      alice.stop();
      const other = await open(this.name, { leaseMs: 1000, headers: () => ({ "x-user": "mallory" }) }, database);
      other.start();
      await sleep(1_500);
      const explanation = other.explain(id);
      const sent = (await seen(this.name)).length;
      other.stop();
      const says = explanation.reason === "other_principal" || explanation.blockers.includes("other_principal");
      return {
        ok: says && sent === 0,
        observed: `explain: ${explanation.state} / ${explanation.reason} [${explanation.blockers.join(", ")}]; requests sent: ${sent}`,
      };
    },
  },
  {
    name: "headers_hang",
    what: "a headers() hook that never settles (once)",
    expected: "the attempt times out, frees its canvas, and both operations on that canvas are delivered",
    async run() {
      let calls = 0;
      const s = await open(this.name, {
        attemptTimeoutMs: 1000,
        headers: () => (++calls === 1 ? new Promise(() => {}) : { "x-ok": "1" }),
      });
      s.start();
      const first = `${RUN}-hh-1`;
      const second = `${RUN}-hh-2`;
      await s.enqueue(upsert(first, "c1"));
      await s.enqueue(upsert(second, "c1"));
      const done = await waitFor(async () => (await applied(first)) === 1 && (await applied(second)) === 1, 15_000);
      const state = s.explain(first);
      s.stop();
      return { ok: done === true, observed: `both delivered: ${done === true}; first is ${state.state} / ${state.reason}` };
    },
  },
  {
    name: "host_values",
    what: "an intent whose canvasIds[0] getter throws; a revoked Proxy as the intent",
    expected: "enqueue rejects invalid_intent at once; nothing is stored",
    async run() {
      const s = await open(this.name);
      s.hold();
      const canvasIds = [];
      Object.defineProperty(canvasIds, 0, { get() { throw new Error("getter boom"); }, enumerable: true, configurable: true });
      const getter = await within(s.enqueue({ id: `${RUN}-hv-1`, operationType: "shape.upsert", canvasIds, payload: {} }), 3_000);
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      const revoked = await within(s.enqueue(proxy), 3_000);
      const pending = s.stats().pending;
      s.stop();
      return {
        ok: getter.code === "invalid_intent" && revoked.code === "invalid_intent" && pending === 0,
        observed: `getter: ${getter.settled} ${getter.code ?? ""}; revoked Proxy: ${revoked.settled} ${revoked.code ?? ""}; pending: ${pending}`,
      };
    },
  },
  {
    name: "hook_reentry",
    what: "compile and onEvent hooks that call stats() and explain() back",
    expected: "no trap: inside compile the reads answer; the operation is sent; onEvent's calls answer",
    async run() {
      let scheduler;
      const inCompile = [];
      const inEvent = [];
      const attempt = (log, call) => {
        try {
          call();
          log.push("answered");
        } catch (error) {
          log.push(error?.code ? `code ${error.code}` : `threw ${error}`);
        }
      };
      const s = await open(this.name, {
        compile: (intent) => {
          attempt(inCompile, () => scheduler.stats());
          attempt(inCompile, () => scheduler.explain(intent.id));
          return { kind: intent.operationType, payload: intent.payload, canvasIds: intent.canvasIds };
        },
        // Events during open (leader_changed) come before `scheduler` is assigned.
        onEvent: () => scheduler && attempt(inEvent, () => scheduler.stats().sent),
      });
      scheduler = s;
      s.start();
      const id = `${RUN}-hr-1`;
      await s.enqueue(upsert(id, "c1"));
      // The server counts the operation before the answer reaches the client, so the
      // settled event (and the onEvent call inside it) can come after `applied` reads 1.
      const done = await waitFor(async () => inEvent.length > 0 && (await applied(id)) === 1, 10_000);
      s.stop();
      return {
        ok: done === true && inCompile.length > 0 && inCompile.every((e) => e === "answered") && inEvent.length > 0 && inEvent.every((e) => e === "answered"),
        observed: `applied and settled: ${done === true}; inside compile: ${[...new Set(inCompile)].join(", ") || "none"}; inside onEvent: ${[...new Set(inEvent)].join(", ") || "none"}`,
      };
    },
  },
];

function render(results) {
  const rows = results
    .map(
      (r) =>
        `<tr class="${r.ok ? "ok" : "fail"}"><td>${r.ok ? "✔" : "✘"}</td><td><code>${r.name}</code></td><td>${escape(r.what)}</td><td>${escape(r.expected)}</td><td>${escape(r.observed)}</td></tr>`,
    )
    .join("");
  document.querySelector("#results").innerHTML = rows;
}

function escape(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

async function main() {
  await init();
  const only = params.get("only")?.split(",");
  const results = [];
  for (const c of CASES) {
    if (only && !only.includes(c.name)) continue;
    const started = performance.now();
    let result;
    try {
      result = await c.run();
    } catch (error) {
      result = { ok: false, observed: `threw ${error?.code ?? ""} ${error?.message ?? error}` };
    }
    results.push({ name: c.name, what: c.what, expected: c.expected, ms: Math.round(performance.now() - started), ...result });
    render(results);
  }
  window.hostileResults = results;
  document.body.dataset.status = results.every((r) => r.ok) ? "ok" : "failed";
}

main().catch((error) => {
  window.hostileResults = [{ name: "page", ok: false, observed: String(error?.stack ?? error) }];
  document.body.dataset.status = "error";
});
