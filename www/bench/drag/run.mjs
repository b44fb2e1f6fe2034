// Main-thread cost of a drag in page mode and in worker mode:
// 60 coalesced updates a second to one shape for DRAG_SECONDS (default 10) while the scheduler
// sends to the reference server (127.0.0.1). Each mode runs in a fresh page; the page's
// main-thread time is read from CDP (Performance.getMetrics: TaskDuration, ScriptDuration)
// just before and after the drag. "none" builds the same intents and calls no scheduler: the
// baseline; "page-held" is page mode held (nothing sent during the drag), the A/B that splits
// an update's own cost from the sending's; "page-coalesce" and "worker-coalesce" add
// `coalesceMs: 32` (each update held two frames, so the next replaces it unwritten
// and unsent). DRAG_MODES (comma-separated) picks modes; "none" always runs.
// Per update = (mode − none) / updates. Prints a table; fails only when something is
// broken (an error, a refused enqueue), never for slowness; bounded by a watchdog.
//   node www/bench/drag/run.mjs        (after scripts/build web)
import { launchChromium, serve, startReferenceServer } from "../../harness.mjs";

const SECONDS = Number(process.env.DRAG_SECONDS ?? 10);
const ROUNDS = Number(process.env.DRAG_ROUNDS ?? 1);
const ALL_MODES = ["none", "page", "page-held", "page-coalesce", "worker", "worker-coalesce"];
const DRAG_MODES = process.env.DRAG_MODES
  ? ["none", ...process.env.DRAG_MODES.split(",").filter((mode) => mode !== "none")]
  : ALL_MODES;
for (const mode of DRAG_MODES) if (!ALL_MODES.includes(mode)) throw new Error(`DRAG_MODES: unknown mode ${mode}`);
const WATCHDOG_MS = (SECONDS * DRAG_MODES.length * ROUNDS + 60) * 1000 * 2;
setTimeout(() => {
  console.error(`drag: FAILED: over its ${WATCHDOG_MS / 1000} s watchdog`);
  process.exit(1);
}, WATCHDOG_MS).unref();

const statics = await serve();
const server = await startReferenceServer();
const browser = await launchChromium();
const metric = (metrics, name) => metrics.find((m) => m.name === name)?.value ?? 0;

async function measure(mode) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    page.on("pageerror", (error) => console.error(`drag ${mode}: page error: ${error.message}`));
    await page.goto(`${statics.url}/www/bench/drag/?server=${encodeURIComponent(server.url)}&db=drag-${mode}-${Date.now()}`);
    await page.waitForSelector("body[data-ready]", { state: "attached", timeout: 10_000 });
    const cdp = await context.newCDPSession(page);
    await cdp.send("Performance.enable", { timeDomain: "threadTicks" });
    await page.evaluate((mode) => window.drag.open(mode), mode);
    const before = (await cdp.send("Performance.getMetrics")).metrics;
    const { updates, ms } = await page.evaluate((ms) => window.drag.run(ms), SECONDS * 1000);
    const after = (await cdp.send("Performance.getMetrics")).metrics;
    const done = await page.evaluate(() => window.drag.finish());
    if (done.counts?.refused > 0) throw new Error(`${mode}: ${done.counts.refused} enqueues refused`);
    const task = (metric(after, "TaskDuration") - metric(before, "TaskDuration")) * 1000;
    const script = (metric(after, "ScriptDuration") - metric(before, "ScriptDuration")) * 1000;
    return { mode, updates, ms, task, script, sent: done.sent, settled: done.settled };
  } finally {
    await context.close();
  }
}

let failed = false;
try {
  const rows = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const mode of DRAG_MODES) rows.push(await measure(mode));
  }
  const base = rows.filter((r) => r.mode === "none");
  const baseTask = base.reduce((sum, r) => sum + r.task / r.updates, 0) / base.length;
  const baseScript = base.reduce((sum, r) => sum + r.script / r.updates, 0) / base.length;
  console.log(`drag: ${SECONDS} s at 60 Hz, coalesceKey per shape, default options, main-thread time per update (CDP, thread ticks)`);
  console.log("mode          updates  task ms/update  ratio to none  script ms/update  scheduler's task ms/update  sent requests");
  for (const r of rows) {
    const perTask = r.task / r.updates;
    const perScript = r.script / r.updates;
    const own = r.mode === "none" ? "-" : (perTask - baseTask).toFixed(3);
    console.log(
      `${r.mode.padEnd(13)} ${String(r.updates).padStart(7)}  ${perTask.toFixed(3).padStart(14)}  ${(perTask / baseTask).toFixed(2).padStart(13)}  ${perScript.toFixed(3).padStart(16)}  ${own.padStart(26)}  ${String(r.sent ?? "-").padStart(13)}`,
    );
  }
  console.log("drag: targets: the scheduler's task ms/update <= 0.5 in worker mode, <= 1.5 in page mode (…-coalesce: coalesceMs: 32)");
  console.log(`drag: baseline (none) ${baseTask.toFixed(3)} ms task, ${baseScript.toFixed(3)} ms script per update`);
} catch (error) {
  failed = true;
  console.error(`drag: FAILED: ${error.stack ?? error}`);
} finally {
  await browser.close();
  await server.close();
  await statics.close();
}
process.exit(failed ? 1 : 0);
