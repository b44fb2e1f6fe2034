// Reconcile after a drag: `known()` must answer every id the page enqueued at every moment,
// before, during and after the scheduler compacts what settled (an editor reconciles with it
// after a reload). Called by tests/examples/tldraw.mjs.
//
// The tldraw example in page mode with the package's defaults (batching 32 operations, 64 KiB;
// `coalesceMs` 32): `shapes` records created in one change, then dragged twice, `moves` moves a
// drag, one a frame (2,000 records and 2 x 9 moves: 38,000 intents, most of them replaced by a
// later one before they are sent). Then rounds, each asking `known(ids)` of every id enqueued:
// the first right after the last move's enqueue resolves, the next right after `whenSaved()`
// (these two also ask `operation(id)` and `explain(id)` of each), then one a second (the
// scheduler compacts the drag's settled versions in between) until nothing is pending and the
// count of settled operations kept whole has not changed since the round before (compaction
// done), at least one such round and none starting more than 20 s after the save. An id that
// `known()` did not know in any round is counted, and the caller fails the run on any; what the
// synchronous views did not know is printed beside it.
import { admin } from "../../www/harness.mjs";
import { assertAccounting, assertServerHasEditorShapes, createShapes, drag, openExample, say, whenSavedChecked } from "./tldraw-app.mjs";

/** Page side: one round over every id in `globalThis.reconcileIds`: one `known(ids)` call,
 * then (with `views`) `operation(id)` and `explain(id)` of each. Answers the ids each did not
 * know. */
const askEveryId = (page, views) =>
  page.evaluate(async (views) => {
    const { example, reconcileIds: ids } = globalThis;
    const started = performance.now();
    const missed = { known: [], operation: [], explain: [] };
    const answers = await example.known(ids);
    answers.forEach((answer, index) => answer === undefined && missed.known.push(ids[index]));
    for (const id of views ? ids : []) {
      if (example.operation(id) === undefined) missed.operation.push(id);
      try {
        example.explain(id);
      } catch (error) {
        if (error?.code !== "unknown_operation") throw error;
        missed.explain.push(id);
      }
    }
    const { pending, settledKept } = example.diagnose().stats;
    return { missed, ms: performance.now() - started, pending, settledKept };
  }, views);

/** The pause between two rounds, in which the scheduler compacts what settled. */
const GAP_MS = 1_000;
/** The last round starts at most this long after the drag was saved. */
const LIMIT_MS = 20_000;

export async function reconcileAfterDrag({ browser, statics, server }, { shapes, moves }) {
  const canvas = "tl-reconcile";
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const page = await openExample(context, statics, server, "page", canvas, "defaults");
    const started = performance.now();
    const ids = await createShapes(page, shapes, "rc");
    await drag(page, ids, moves);
    await drag(page, ids, moves);
    const enqueued = await page.evaluate(async () => (globalThis.reconcileIds = await globalThis.example.enqueued()).length);
    // Right after the drag, and right after it is saved: known(), operation() and explain()
    // (the synchronous views answer what the scheduler has at hand, which compaction empties
    // by design: "at hand" is this session's settled operations and at most 4,096 tombstones).
    // Then known() every GAP_MS while the scheduler compacts, until the count of settled
    // operations kept whole has stopped changing, or LIMIT_MS after the save (one at least).
    const rounds = [await askEveryId(page, true)];
    await whenSavedChecked(page, server, "reconcile");
    rounds.push(await askEveryId(page, true));
    const saved = performance.now();
    do {
      await new Promise((wait) => setTimeout(wait, GAP_MS));
      rounds.push(await askEveryId(page, false));
      const [before, now] = rounds.slice(-2);
      if (now.pending === 0 && now.settledKept === before.settledKept) break;
    } while (performance.now() - saved < LIMIT_MS);
    const missed = { known: new Set(), operation: new Set(), explain: new Set() };
    for (const round of rounds) for (const call of Object.keys(missed)) for (const id of round.missed[call]) missed[call].add(id);
    await assertServerHasEditorShapes(page, server, canvas, "reconcile");
    const order = await page.evaluate(() => globalThis.example.enqueued());
    const applied = assertAccounting(await admin(server, "/admin/state"), canvas, order);
    const outcomes = await page.evaluate(() => Object.values(globalThis.example.outcomes).reduce((counts, outcome) => ((counts[outcome] = (counts[outcome] ?? 0) + 1), counts), {}));
    const figures = {
      enqueued,
      unknownIds: missed.known.size,
      afterDrag: { operation: rounds[0].missed.operation.length, explain: rounds[0].missed.explain.length },
      missed: Object.fromEntries(Object.entries(missed).map(([call, set]) => [call, set.size])),
      applied,
      outcomes,
      seconds: (performance.now() - started) / 1000,
    };
    const described = rounds.map((round, index) => {
      const views = index < 2 ? `, operation ${round.missed.operation.length}, explain ${round.missed.explain.length}` : "";
      return `known ${round.missed.known.length}${views} unknown (${round.pending} pending, ${round.settledKept} settled kept whole, ${(round.ms / 1000).toFixed(1)} s)`;
    });
    say(
      `reconcile: ${shapes} records created and dragged twice (${moves} moves each): ${enqueued} intents (${JSON.stringify(outcomes)}), ` +
        `${applied} applied once each in order. Right after the drag: ${described[0]}; right after it was saved: ${described[1]}; ` +
        `then every ${GAP_MS / 1000} s while compacting: ${described.slice(2).join("; ")}. ${figures.unknownIds} ids unknown to known() at some moment; ` +
        `${figures.seconds.toFixed(1)} s in all`,
    );
    if (figures.unknownIds > 0) say(`reconcile: ids known() did not know, e.g. ${[...missed.known].slice(0, 3).join(", ")}`);
    return figures;
  } finally {
    await context.close();
  }
}
