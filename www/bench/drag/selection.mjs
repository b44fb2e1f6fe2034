// What a selection drag costs the page: RECORDS shapes (default 200 and 2 000) moved MOVES times
// (default 20), one move a frame, each move one `enqueueMany` of a tldraw-sized record per shape
// with the shape's coalesceKey, not awaited (www/bench/drag/drag.js `selection`), against the
// reference server (127.0.0.1). Modes, each in a fresh page, in a rotating order over
// SELECTION_ROUNDS rounds (default 2): "none" only builds the records; "idb" is the app writing
// them itself, one strict `readwrite` transaction a move (the floor of durable persistence);
// "page" is the package's Scheduler on the page, "worker" canvas-scheduler/worker; both with the
// defaults. The main thread's busy time (CDP Performance.getMetrics TaskDuration) from the first
// move until the last call resolved, per move; a mode's cost is (mode - none) per move, quoted
// as a ratio to idb's. Prints a table of medians; fails only when something is broken (an error,
// a refused intent), never for slowness; bounded by a watchdog.
//   node www/bench/drag/selection.mjs        (after scripts/build)
import { launchChromium, serve, startReferenceServer } from "../../harness.mjs";

const SIZES = (process.env.RECORDS ?? "200,2000").split(",").map(Number);
const MOVES = Number(process.env.MOVES ?? 20);
const ROUNDS = Number(process.env.SELECTION_ROUNDS ?? 2);
const MODES = ["none", "idb", "page", "worker"];
const WATCHDOG_MS = 600_000;
setTimeout(() => {
  console.error(`selection: FAILED: over its ${WATCHDOG_MS / 1000} s watchdog`);
  process.exit(1);
}, WATCHDOG_MS).unref();

const statics = await serve();
const server = await startReferenceServer();
const browser = await launchChromium();
const metric = (metrics, name) => metrics.find((m) => m.name === name)?.value ?? 0;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function measure(mode, records) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`${statics.url}/www/bench/drag/?server=${encodeURIComponent(server.url)}&db=selection-${mode}-${Date.now()}`);
    await page.waitForSelector("body[data-ready]", { state: "attached", timeout: 10_000 });
    const opened = { none: "none", idb: "idb", page: "page", worker: "worker" }[mode];
    await page.evaluate((m) => (m === "idb" ? window.drag.openOwn() : window.drag.open(m)), opened);
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
    const taken = Object.fromEntries(MODES.map((mode) => [mode, []]));
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = [...MODES.slice(round % MODES.length), ...MODES.slice(0, round % MODES.length)];
      for (const mode of order) taken[mode].push(await measure(mode, records));
    }
    const ms = Object.fromEntries(MODES.map((mode) => [mode, median(taken[mode])]));
    const floor = Math.max(ms.idb - ms.none, 0.01);
    console.log(`selection drag, ${records} records a move, ${MOVES} moves, medians of ${ROUNDS} rounds (main-thread task ms a move):`);
    console.log(`  none ${ms.none.toFixed(2)} ms; the app's own IndexedDB writes +${(ms.idb - ms.none).toFixed(2)} ms (the floor)`);
    for (const mode of ["page", "worker"]) {
      const over = ms[mode] - ms.none;
      const target = mode === "page" ? 1.0 : 0.25;
      console.log(`  ${mode.padEnd(6)} +${over.toFixed(2)} ms = ${(over / floor).toFixed(2)}x the floor (target <= ${target}x); rounds ${taken[mode].map((v) => (v - ms.none).toFixed(1)).join(", ")}`);
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
