// Reconcile after a drag: `known()` must answer every id the page enqueued at every moment,
// before, during and after the scheduler compacts what settled (an editor reconciles with it
// after a reload). Called by tests/examples/tldraw.mjs.
//
// The tldraw example in page mode with the package's defaults (batching 32 operations, 64 KiB;
// `coalesceMs` 32): `shapes` records created in one change, then dragged twice, `moves` moves a
// drag, one a frame (2,000 records and 2 x 9 moves: 38,000 intents, most of them replaced by a
// later one before they are sent). From right after the last move's enqueue resolves until the
// scheduler's compaction of the drag is done (nothing pending, its count of settled operations
// kept whole unchanged for 1.5 s; at most 90 s), a `known(ids)` of every id is always in
// flight, and every id is asked of `operation(id)` and `explain(id)` at each turn of the event
// loop. An id that any of them did not know at some moment is counted; the caller fails the
// run on any.
import { admin } from "../../www/harness.mjs";
import { assertAccounting, assertServerHasEditorShapes, createShapes, drag, openExample, say, whenSavedChecked } from "./tldraw-app.mjs";

/**
 * Page side: asks about every id in `globalThis.reconcileIds` until the scheduler has nothing
 * pending and its count of settled operations kept whole has not changed for `quietMs` (its
 * compaction is done), or `limitMs` passed. A `known(ids)` call is always in flight (the next
 * one starts as one answers); between turns of the event loop, every id is asked of
 * `operation(id)` and `explain(id)` (a sweep). Answers the ids each did not know at some
 * moment, and how often each asked.
 */
const askUntilCompacted = (page, { quietMs, limitMs }) =>
  page.evaluate(
    async ({ quietMs, limitMs }) => {
      const { example, reconcileIds: ids } = globalThis;
      const started = performance.now();
      const missed = { known: new Set(), operation: new Set(), explain: new Set() };
      const counts = { known: 0, sweeps: 0, firstKnownMs: 0, firstPending: example.diagnose().stats.pending };
      let asking = null;
      const ask = () =>
        (asking = example.known(ids).then((answers) => {
          if (counts.known === 0) counts.firstKnownMs = performance.now() - started;
          counts.known += 1;
          answers.forEach((answer, index) => answer === undefined && missed.known.add(ids[index]));
          asking = null;
        }));
      let kept = -1;
      let still = performance.now();
      ask();
      while (performance.now() - started < limitMs) {
        for (const id of ids) {
          if (example.operation(id) === undefined) missed.operation.add(id);
          try {
            example.explain(id);
          } catch (error) {
            if (error?.code !== "unknown_operation") throw error;
            missed.explain.add(id);
          }
        }
        counts.sweeps += 1;
        const { pending, settledKept } = example.diagnose().stats;
        if (pending > 0 || settledKept !== kept) [kept, still] = [settledKept, performance.now()];
        else if (performance.now() - still >= quietMs && asking === null) break;
        if (asking === null) ask();
        await new Promise((turn) => setTimeout(turn, 0));
      }
      await asking;
      return {
        missed: Object.fromEntries(Object.entries(missed).map(([call, set]) => [call, [...set]])),
        ...counts,
        ms: performance.now() - started,
        settledKept: kept,
      };
    },
    { quietMs, limitMs },
  );

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
    const asked = await askUntilCompacted(page, { quietMs: 1_500, limitMs: 90_000 });
    const missed = asked.missed;
    await whenSavedChecked(page, server, "reconcile");
    await assertServerHasEditorShapes(page, server, canvas, "reconcile");
    const order = await page.evaluate(() => globalThis.example.enqueued());
    const applied = assertAccounting(await admin(server, "/admin/state"), canvas, order);
    const outcomes = await page.evaluate(() => Object.values(globalThis.example.outcomes).reduce((counts, outcome) => ((counts[outcome] = (counts[outcome] ?? 0) + 1), counts), {}));
    const figures = {
      enqueued,
      unknownIds: new Set([...missed.known, ...missed.operation, ...missed.explain]).size,
      missed: Object.fromEntries(Object.entries(missed).map(([call, list]) => [call, list.length])),
      applied,
      outcomes,
      seconds: (performance.now() - started) / 1000,
    };
    say(
      `reconcile: ${shapes} records created and dragged twice (${moves} moves each): ${enqueued} intents (${JSON.stringify(outcomes)}), ` +
        `${applied} applied once each in order; from right after the drag (${asked.firstPending} pending) until compaction was done ` +
        `(${(asked.ms / 1000).toFixed(1)} s, ${asked.settledKept} settled kept whole): ${asked.known} known() calls of every id (the first answered in ` +
        `${(asked.firstKnownMs / 1000).toFixed(1)} s), ${asked.sweeps} sweeps of operation() and explain(); ${figures.unknownIds} ids unknown at some moment ` +
        `(known ${figures.missed.known}, operation ${figures.missed.operation}, explain ${figures.missed.explain}); ${figures.seconds.toFixed(1)} s in all`,
    );
    if (figures.unknownIds > 0) {
      const sample = [...missed.known, ...missed.operation, ...missed.explain].slice(0, 3);
      say(`reconcile: unknown ids, e.g. ${sample.join(", ")}`);
    }
    return figures;
  } finally {
    await context.close();
  }
}
