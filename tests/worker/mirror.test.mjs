// Worker mode's mirror (worker/mirror.js), in node: what the worker tracks and sends, what the
// page keeps. Run by scripts/test (node --test tests/worker).
import assert from "node:assert/strict";
import { test } from "node:test";
import { Mirror, Tracker, settled } from "../../worker/mirror.js";

/** A scheduler as the Tracker sees it, answering from `records`. */
function schedulerOf(records) {
  return {
    stats: () => ({ pending: 0 }),
    claims: () => ({}),
    operation: (id) => records[id],
    explain: (id) => ({ operationId: id, state: records[id]?.phase ?? "compacted" }),
    pending: () => Object.entries(records).filter(([, r]) => r.phase === "pending")
      .map(([id]) => ({ id, state: "queued", reason: "ready", attempt: 0, canvasIds: [] })),
  };
}

const pending = { intent: { id: "a" }, phase: "pending", blockers: [] };
const resolved = { intent: { id: "b" }, phase: "resolved", blockers: [] };
const compacted = { id: "c", compacted: true, outcome: "applied", settledAt: 1 };

test("a resolved, compacted or unknown operation is settled; a pending one is not", () => {
  assert.equal(settled(pending), false);
  assert.equal(settled(resolved), true);
  assert.equal(settled(compacted), true);
  assert.equal(settled(undefined), true);
});

test("the poll leaves out what settled, compacted operations included", () => {
  const tracker = new Tracker();
  tracker.watch(["a", "b", "c", "d"]);
  tracker.update(schedulerOf({ a: pending, b: resolved, c: compacted }), ["a", "b", "c", "d"]);
  assert.deepEqual([...tracker.unsettled], ["a"]);
  assert.deepEqual(tracker.pollIds(), ["a"]);
});

test("ids that are not an array of strings are no ids", () => {
  const tracker = new Tracker();
  tracker.watch("a");
  tracker.watch(null);
  tracker.watch([1, "b", {}]);
  assert.deepEqual([...tracker.sent.keys()], ["b"]);
  assert.deepEqual(tracker.idsOf({ type: "dead_lettered", operationIds: "x" }), []);
});

test("the page's mirror drops settled entries first when it holds too many", () => {
  const mirror = new Mirror();
  /** @type {[string[], (0 | 1)[], string[]]} */
  const ops = [[], [], []];
  for (let i = 0; i < 10_001; i += 1) {
    ops[0].push(`p${i}`);
    ops[1].push(i === 0 ? 1 : 0);
    ops[2].push(JSON.stringify({ record: i === 0 ? compacted : pending }));
  }
  mirror.apply({ ops });
  assert.equal(mirror.ops.size, 10_000);
  assert.equal(mirror.ops.has("p0"), false, "the compacted entry went first");
});

test("an entry crosses as JSON text with its settled flag, and the page reads a copy of its own each time", () => {
  const tracker = new Tracker();
  const mirror = new Mirror();
  const update = tracker.update(schedulerOf({ a: pending, b: resolved }), ["a", "b"]);
  assert.deepEqual(update?.ops, [["a", "b"], [0, 1], [JSON.stringify({ record: pending, explanation: { operationId: "a", state: "pending" } }), update?.ops?.[2][1]]]);
  mirror.apply(update);
  const first = mirror.entry("a");
  assert.deepEqual(first?.record, pending);
  assert.deepEqual(first?.explanation, { operationId: "a", state: "pending" });
  if (first?.record && "phase" in first.record) first.record.phase = "resolved";
  assert.equal(/** @type {any} */ (mirror.entry("a")?.record)?.phase, "pending", "a caller's change stays in its copy");
  assert.equal(mirror.entry("z"), undefined);
  assert.equal(tracker.update(schedulerOf({ a: pending, b: resolved }), ["a", "b"])?.ops, undefined, "unchanged: not sent again");
});

test("pending() reaches the page's mirror when it changes, and only then", () => {
  const tracker = new Tracker();
  const mirror = new Mirror();
  const records = { a: pending };
  const first = tracker.update(schedulerOf(records), []);
  assert.deepEqual(JSON.parse(first?.pending ?? "null").map((/** @type {{ id: string }} */ entry) => entry.id), ["a"]);
  mirror.apply(first);
  assert.deepEqual(mirror.pending.map((entry) => entry.id), ["a"]);
  assert.equal(tracker.update(schedulerOf(records), [])?.pending, undefined, "unchanged: not sent again");
  mirror.apply(tracker.update(schedulerOf({ a: resolved }), []));
  assert.deepEqual(mirror.pending, []);
  assert.notEqual(mirror.pending, mirror.pending, "each read is the caller's own copy");
});
