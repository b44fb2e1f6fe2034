// The crash test's verdicts, from the server's /admin/state (one snapshot of the Postgres
// database) and the ledger's view of every operation (known(ids) in one tab):
//   - every enqueued operation applied exactly once (none lost, none twice, none unknown),
//     every idempotency key applied at most once;
//   - per canvas, the operations applied in the order they were enqueued on it: ledger sequence
//     order, and each tab's own enqueue order;
//   - every operation settled `applied` in the ledger.

/**
 * @param {{ state: any, plans: Map<string, [string, string][]>, ledger: Record<string, [number|null, string, string|null] | null> }} input
 * @returns {{ failures: string[], figures: Record<string, number> }}
 */
export function verdicts({ state, plans, ledger }) {
  const failures = [];
  const fail = (what, list) => {
    if (list.length > 0) failures.push(`${list.length} ${what}: ${list.slice(0, 8).map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join("; ")}`);
  };
  const enqueued = [...plans.values()].flat();
  const known = new Set(enqueued.map(([id]) => id));
  const applications = (id) => state.operations[id]?.applications ?? 0;

  fail("operations lost (never applied)", enqueued.filter(([id]) => applications(id) === 0).map(([id]) => id));
  fail("operations applied more than once", enqueued.filter(([id]) => applications(id) > 1).map(([id]) => `${id} x${applications(id)}`));
  fail("operations applied that no tab enqueued", Object.keys(state.operations).filter((id) => !known.has(id)));
  fail("idempotency keys applied more than once", state.invariants.keysAppliedMoreThanOnce);
  fail("operations the server counts as applied twice", state.invariants.operationsAppliedMoreThanOnce);

  // Per canvas: exactly the canvas's operations, in ledger sequence order.
  const sequence = (id) => ledger[id]?.[0] ?? null;
  fail("operations without a sequence in the ledger", enqueued.filter(([id]) => sequence(id) === null).map(([id]) => `${id}: ${JSON.stringify(ledger[id])}`));
  const byCanvas = new Map();
  for (const [id, canvasId] of enqueued) (byCanvas.get(canvasId) ?? byCanvas.set(canvasId, []).get(canvasId)).push(id);
  const orderFaults = [];
  for (const [canvasId, ids] of byCanvas) {
    const expected = [...ids].sort((a, b) => sequence(a) - sequence(b));
    const applied = state.canvases[canvasId]?.order ?? [];
    const at = expected.findIndex((id, i) => applied[i] !== id);
    if (at !== -1 || applied.length !== expected.length) {
      orderFaults.push(`${canvasId}: ${applied.length} applied / ${expected.length} enqueued, first difference at ${at}: applied ${applied[at]} (seq ${sequence(applied[at])}), expected ${expected[at]} (seq ${sequence(expected[at])})`);
    }
  }
  fail("canvases whose applied order is not their enqueue (sequence) order", orderFaults);
  // Each tab's enqueue order is its sequence order (one ledger, sequences increasing).
  const tabFaults = [];
  for (const [owner, plan] of plans) {
    for (let i = 1; i < plan.length; i += 1) {
      if (!(sequence(plan[i][0]) > sequence(plan[i - 1][0]))) tabFaults.push(`${owner}: ${plan[i][0]} seq ${sequence(plan[i][0])} after ${plan[i - 1][0]} seq ${sequence(plan[i - 1][0])}`);
    }
  }
  fail("enqueues whose sequence does not follow the tab's enqueue order", tabFaults);
  fail("operations not settled applied in the ledger", enqueued.filter(([id]) => ledger[id]?.[1] !== "resolved" || ledger[id]?.[2] !== "applied").map(([id]) => `${id}: ${JSON.stringify(ledger[id])}`));

  const requests = Object.values(state.requests);
  const sum = (f) => requests.reduce((n, r) => n + f(r), 0);
  return {
    failures,
    figures: {
      operations: enqueued.length,
      applied: enqueued.filter(([id]) => applications(id) === 1).length,
      keys: requests.length,
      keysApplied: requests.filter((r) => r.outcome === "applied").length,
      submitsAnswered: sum((r) => r.submits),
      repeatsFromStore: sum((r) => r.submits - 1),
      queriesAnswered: sum((r) => r.queries),
    },
  };
}
