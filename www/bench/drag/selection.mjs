// What a selection drag costs the page: RECORDS shapes (default 200 and 2 000) moved MOVES times
// (default 20), one move a frame, each move one `enqueueMany` of a tldraw-sized record per shape
// with the shape's coalesceKey, not awaited (www/bench/drag/drag.js `selection`), against the
// reference server (127.0.0.1). Modes, each in a fresh page, in a rotating order over
// SELECTION_ROUNDS rounds (default 2): "none" only builds the records (and writes each move's
// as JSON once, `JSON.stringify`); "idb" is the app writing them itself, one strict `readwrite`
// transaction a move (the floor of durable persistence);
// "page" is the package's Scheduler on the page, "worker" canvas-scheduler/worker; both with
// `coalesceMs: 0` and otherwise the defaults. SELECTION_MODES (default "page,worker") picks the
// measured modes among those two and two floors: "replay", page mode's own IndexedDB writes
// replayed by plain JS (recorded in an untimed page-mode drag first: each readwrite transaction
// the scheduler opened during a move, its puts as strings of the same lengths under the same
// keys, its deletes), the writes page mode cannot do without; and "post", the intents posted to
// a worker that only answers, resolved by its answer (one structured clone of the intents and a
// message each way: what worker mode cannot do without). The main thread's busy time (CDP
// Performance.getMetrics TaskDuration) from the first move until the last call resolved, per
// move; a mode's cost is (mode - none) per move, quoted as a ratio to idb's. Prints a table of
// medians; fails only when something is broken (an error, a refused intent), never for
// slowness; bounded by a watchdog.
//   node www/bench/drag/selection.mjs        (after scripts/build)
import { launchChromium, serve, startReferenceServer } from "../../harness.mjs";

const SIZES = (process.env.RECORDS ?? "200,2000").split(",").map(Number);
const MOVES = Number(process.env.MOVES ?? 20);
const ROUNDS = Number(process.env.SELECTION_ROUNDS ?? 2);
const MEASURED = (process.env.SELECTION_MODES ?? "page,worker").split(",");
for (const mode of MEASURED) if (!["page", "worker", "replay", "post"].includes(mode)) throw new Error(`SELECTION_MODES: unknown mode ${mode}`);
const MODES = ["none", "idb", ...MEASURED];
const WATCHDOG_MS = 120_000 * (MODES.length * ROUNDS + 1) * SIZES.length;
setTimeout(() => {
  console.error(`selection: FAILED: over its ${WATCHDOG_MS / 1000} s watchdog`);
  process.exit(1);
}, WATCHDOG_MS).unref();

const statics = await serve();
const server = await startReferenceServer();
const browser = await launchChromium();
const metric = (metrics, name) => metrics.find((m) => m.name === name)?.value ?? 0;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Page mode's IndexedDB writes during a drag of `records` (untimed), by move. */
async function recordPage(records) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${statics.url}/www/bench/drag/?server=${encodeURIComponent(server.url)}&db=record-${Date.now()}`);
    await page.waitForSelector("body[data-ready]", { state: "attached", timeout: 10_000 });
    await page.evaluate(() => window.drag.record() && window.drag.open("page"));
    await page.evaluate(({ records, moves }) => window.drag.selection(records, moves), { records, moves: MOVES });
    const log = await page.evaluate(() => window.drag.recorded());
    await page.evaluate(() => window.drag.finish());
    const during = log.filter((entry) => entry.move >= 0);
    const puts = during.flatMap((entry) => entry.writes.filter(([, length]) => length >= 0));
    const bytes = puts.reduce((sum, [, length]) => sum + length, 0);
    const deletes = during.reduce((sum, entry) => sum + entry.writes.length, 0) - puts.length;
    console.log(`  page mode wrote, a move: ${(during.length / MOVES).toFixed(1)} readwrite transactions, ${(puts.length / MOVES).toFixed(0)} puts (${(bytes / MOVES / 1024).toFixed(0)} KiB of JSON text), ${(deletes / MOVES).toFixed(0)} deletes`);
    return during;
  } finally {
    await context.close();
  }
}

async function measure(mode, records, log) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`${statics.url}/www/bench/drag/?server=${encodeURIComponent(server.url)}&db=selection-${mode}-${Date.now()}`);
    await page.waitForSelector("body[data-ready]", { state: "attached", timeout: 10_000 });
    if (mode === "replay") await page.evaluate((recorded) => window.drag.openReplay(recorded), log);
    else if (mode === "post") await page.evaluate(() => window.drag.openPost());
    else if (mode === "idb") await page.evaluate(() => window.drag.openOwn());
    else await page.evaluate((m) => window.drag.open(m), mode);
    const cdp = await context.newCDPSession(page);
    await cdp.send("Performance.enable", { timeDomain: "threadTicks" });
    const before = (await cdp.send("Performance.getMetrics")).metrics;
    await page.evaluate(({ records, moves }) => window.drag.selection(records, moves), { records, moves: MOVES });
    const after = (await cdp.send("Performance.getMetrics")).metrics;
    const done = await page.evaluate(() => window.drag.finish());
    if (done.counts?.refused > 0) throw new Error(`${mode}: ${done.counts.refused} intents refused`);
    if (errors.length > 0) throw new Error(`${mode}: page error: ${errors[0]}`);
    return ((metric(after, "TaskDuration") - metric(before, "TaskDuration")) * 1000) / MOVES;
  } finally {
    await context.close();
  }
}

let failed = false;
try {
  for (const records of SIZES) {
    const log = MODES.includes("replay") ? await recordPage(records) : [];
    const taken = Object.fromEntries(MODES.map((mode) => [mode, []]));
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = [...MODES.slice(round % MODES.length), ...MODES.slice(0, round % MODES.length)];
      for (const mode of order) taken[mode].push(await measure(mode, records, log));
    }
    const ms = Object.fromEntries(MODES.map((mode) => [mode, median(taken[mode])]));
    const floor = Math.max(ms.idb - ms.none, 0.01);
    console.log(`selection drag, ${records} records a move, ${MOVES} moves, medians of ${ROUNDS} rounds (main-thread task ms a move):`);
    console.log(`  none ${ms.none.toFixed(2)} ms; the app's own IndexedDB writes +${(ms.idb - ms.none).toFixed(2)} ms (the floor)`);
    for (const mode of MEASURED) {
      const over = ms[mode] - ms.none;
      const target = { page: "target <= 1x", worker: "target <= 0.25x", replay: "page mode's own writes, replayed", post: "posting the intents to a worker" }[mode];
      console.log(`  ${mode.padEnd(6)} +${over.toFixed(2)} ms = ${(over / floor).toFixed(2)}x the floor (${target}); rounds ${taken[mode].map((v) => (v - ms.none).toFixed(1)).join(", ")}`);
    }
  }
} catch (error) {
  console.error(`selection: FAILED: ${error?.stack ?? error}`);
  failed = true;
} finally {
  await browser.close();
  await server.close();
  await statics.close();
}
process.exit(failed ? 1 : 0);
