// What the package's defaults cost an editor, measured on the tldraw example in page mode, and a
// server that declines batches. Called by tests/examples/tldraw.mjs.
//
// `measureDefaults`: the same edits under three option presets of the example (`?options=`),
// each on a canvas of its own in a page of its own, beside the app without the scheduler, in
// the same run: `unbatched` (one operation a request, nothing held back: the defaults before
// batching and `coalesceMs` were on), `defaults` (only `database` and `endpoint` given) and
// `example` (the example's own options). Each creates `shapes` records in one change, until
// saved. Then, in rounds that visit the pages in a rotating order: the records dragged `moves`
// moves, one a frame, until saved after the last move, and one shape dragged 60 moves as a
// person drags, until saved; the main thread's CPU time a move (CDP ThreadTime; busy time,
// TaskDuration, beside it) over the app's in the same round, and the requests the server
// received for the canvas (distinct keys, and submits with repeats). The table gives medians;
// figures never fail the run, the accounting does.
//
// `declinedBatches`: the example with the package's defaults against a reference server started
// with batches off: the first batch is declined (422 `batch_not_supported`, nothing applied),
// every operation then goes alone, each applied once and in order, nothing lost.
import assert from "node:assert/strict";
import { admin, startReferenceServer } from "../../www/harness.mjs";
import {
  assertAccounting,
  assertServerHasEditorShapes,
  createShapes,
  drag,
  mainThread,
  openExample,
  say,
  whenSavedChecked,
} from "./tldraw-app.mjs";

const VIEWPORT = { viewport: { width: 1280, height: 800 } };
/** A drag as a person makes one: one shape, a move a frame. */
const PERSON_MOVES = 60;

/** Requests the server received for `canvas`: distinct keys, submits (with repeats), and how
 * many carried several operations. */
async function requestsFor(server, canvas) {
  const requests = Object.values((await admin(server, "/admin/state")).requests).filter((request) => request.canvasIds.includes(canvas));
  return {
    keys: requests.length,
    submits: requests.reduce((sum, request) => sum + request.submits, 0),
    batches: requests.filter((request) => request.operationIds.length > 1).length,
    declined: requests.filter((request) => request.outcome === "rejected" && request.operationIds.length > 1).length,
  };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Opens the example with `preset` on a canvas of its own and creates `shapes` records in one
 * change; with the scheduler, waits until saved. */
async function openPreset({ browser, statics, server }, preset, shapes) {
  const canvas = `tl-${preset}`;
  const context = await browser.newContext(VIEWPORT);
  const page = await openExample(context, statics, server, preset === "none" ? "none" : "page", canvas, preset === "none" ? "example" : preset);
  const createdAt = performance.now();
  const ids = await createShapes(page, shapes, preset);
  const saves = preset !== "none";
  if (saves) await whenSavedChecked(page, server, `${preset} create`);
  const createMs = performance.now() - createdAt;
  return { preset, canvas, context, page, ids, saves, createMs, createRequests: saves ? (await requestsFor(server, canvas)).keys : 0, rounds: [] };
}

/** One round of one preset: the records dragged `moves` moves, then one shape dragged as a
 * person drags; each until saved, with its requests and main-thread time. */
async function measureRound({ server }, one, moves) {
  const { page, context, canvas } = one;
  const requests = async () => (one.saves ? await requestsFor(server, canvas) : { keys: 0, submits: 0 });
  const saved = async (what) => (one.saves ? await whenSavedChecked(page, server, `${one.preset} ${what}`) : 0);
  const before = await requests();
  const dragged = await mainThread(context, page, () => drag(page, one.ids, moves));
  const dragDrainMs = await saved("drag");
  const afterDrag = await requests();
  await drag(page, one.ids.slice(0, 1), 5); // the one shape selected, as a person's drag begins
  await saved("select");
  const beforePerson = await requests();
  const person = await mainThread(context, page, () => drag(page, one.ids.slice(0, 1), PERSON_MOVES));
  const personDrainMs = await saved("one-shape drag");
  const afterPerson = await requests();
  one.rounds.push({
    dragRequests: afterDrag.keys - before.keys,
    dragSubmits: afterDrag.submits - before.submits,
    dragTaskPerMove: dragged.task / moves,
    dragCpuPerMove: dragged.cpu / moves,
    dragDrainMs,
    personRequests: afterPerson.keys - beforePerson.keys,
    personCpuPerMove: person.cpu / PERSON_MOVES,
    personDrainMs,
  });
}

/**
 * Measures the presets, and the app without the scheduler (`none`) as their baseline, in
 * `rounds` rounds, each in a rotating order; prints the medians, one row a preset, and checks
 * each preset's canvas on the server (as the editor shows it, each operation once, in order).
 * Resolves to the rows.
 */
export async function measureDefaults(run, { shapes, moves, rounds = 3, presets = ["unbatched", "defaults", "example"] }) {
  const all = [];
  try {
    for (const preset of ["none", ...presets]) all.push(await openPreset(run, preset, shapes));
    for (let round = 0; round < rounds; round++) {
      for (const one of [...all.slice(round % all.length), ...all.slice(0, round % all.length)]) await measureRound(run, one, moves);
    }
    const of = (one, key) => median(one.rounds.map((r) => r[key]));
    const [plain, ...measured] = all;
    say(`options presets, page mode, ${shapes} records, medians of ${rounds} rounds (the app without the scheduler: ${of(plain, "dragCpuPerMove").toFixed(1)} ms CPU a move of them all, ${of(plain, "personCpuPerMove").toFixed(2)} ms a move of one):`);
    say(`  preset     | create: s, requests | ${shapes} x ${moves} moves: requests (submits), CPU ms/move over the app (busy), saved after s | one shape x ${PERSON_MOVES}: requests, CPU ms/move over the app, saved after s`);
    const rows = [];
    for (const one of measured) {
      const row = {
        preset: one.preset,
        createMs: one.createMs,
        createRequests: one.createRequests,
        dragRequests: of(one, "dragRequests"),
        dragSubmits: of(one, "dragSubmits"),
        dragCpuOver: median(one.rounds.map((r, i) => r.dragCpuPerMove - plain.rounds[i].dragCpuPerMove)),
        dragTaskOver: median(one.rounds.map((r, i) => r.dragTaskPerMove - plain.rounds[i].dragTaskPerMove)),
        dragDrainMs: of(one, "dragDrainMs"),
        personRequests: of(one, "personRequests"),
        personCpuOver: median(one.rounds.map((r, i) => r.personCpuPerMove - plain.rounds[i].personCpuPerMove)),
        personDrainMs: of(one, "personDrainMs"),
      };
      rows.push(row);
      say(
        `  ${row.preset.padEnd(10)} | ${(row.createMs / 1000).toFixed(2)} s, ${row.createRequests} | ${row.dragRequests} (${row.dragSubmits}), ` +
          `${row.dragCpuOver.toFixed(1)} ms (${row.dragTaskOver.toFixed(1)}), ${(row.dragDrainMs / 1000).toFixed(2)} s | ${row.personRequests}, ` +
          `${row.personCpuOver.toFixed(2)} ms, ${(row.personDrainMs / 1000).toFixed(2)} s`,
      );
      const order = await one.page.evaluate(() => globalThis.example.enqueued());
      await assertServerHasEditorShapes(one.page, run.server, one.canvas, `${one.preset} after its drags`);
      assertAccounting(await admin(run.server, "/admin/state"), one.canvas, order);
    }
    return rows;
  } finally {
    for (const one of all) await one.context.close();
  }
}

/** The package's defaults against a server that takes no batches. */
export async function declinedBatches({ browser, statics }, { shapes, moves }) {
  const server = await startReferenceServer({ batches: false });
  const context = await browser.newContext(VIEWPORT);
  const canvas = "tl-no-batches";
  try {
    const started = performance.now();
    const page = await openExample(context, statics, server, "page", canvas, "defaults");
    const ids = await createShapes(page, shapes, "nb");
    await drag(page, ids, moves);
    await whenSavedChecked(page, server, "no batches");
    const order = await page.evaluate(() => globalThis.example.enqueued());
    await assertServerHasEditorShapes(page, server, canvas, "no batches");
    const state = await admin(server, "/admin/state");
    const applied = assertAccounting(state, canvas, order);
    const requests = await requestsFor(server, canvas);
    // One canvas: one request in flight at a time, so the first batch is the only one.
    assert.equal(requests.declined, 1, `one batch declined (${JSON.stringify(requests)})`);
    assert.equal(requests.batches, 1, "no batch after the decline");
    const outcomes = await page.evaluate(() => globalThis.example.outcomes);
    const rejected = Object.entries(outcomes).filter(([, outcome]) => outcome === "rejected");
    assert.deepEqual(rejected, [], "no operation rejected");
    say(
      `a server without batches: ${order.length} operations (${shapes} created, ${moves} moves), 1 batch declined, ` +
        `then ${requests.keys - 1} requests of one operation; ${applied} applied once each in order, in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  } finally {
    await context.close();
    await server.close();
  }
}
