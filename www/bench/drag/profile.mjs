// A CPU profile of the page's main thread while a selection of RECORDS shapes is dragged
// (MOVES moves, one a frame, each move one `enqueueMany` of RECORDS intents with a coalesceKey
// per shape, not awaited), in page or worker mode (PROFILE_MODE=page|worker), against the
// reference server; PROFILE_MODE=idb is the baseline: the page putting the same records into its
// own database, one strict `readwrite` transaction a move, not awaited; `none` only builds them.
// Prints the main thread's self time by function (top PROFILE_TOP), and the total. For names
// instead of wasm-function[N], profile a build whose wasm-opt ran with `-g`.
//   node www/bench/drag/profile.mjs      (after scripts/build)
import { launchChromium, serve, startReferenceServer } from "../../harness.mjs";

const RECORDS = Number(process.env.RECORDS ?? 200);
const MOVES = Number(process.env.MOVES ?? 60);
const MODE = process.env.PROFILE_MODE ?? "page";
const TOP = Number(process.env.PROFILE_TOP ?? 40);
setTimeout(() => {
  console.error("profile: over its 180 s watchdog");
  process.exit(1);
}, 180_000).unref();

const statics = await serve();
const server = await startReferenceServer();
const browser = await launchChromium();
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${statics.url}/www/bench/drag/?server=${encodeURIComponent(server.url)}&db=profile-${Date.now()}`);
  await page.waitForSelector("body[data-ready]", { state: "attached", timeout: 10_000 });
  const opened = { none: "none", idb: "idb", page: "page-coalesce", worker: "worker-coalesce" }[MODE];
  if (opened === undefined) throw new Error(`PROFILE_MODE: unknown mode ${MODE}`);
  await page.evaluate((mode) => (mode === "idb" ? window.drag.openOwn() : window.drag.open(mode)), opened);
  const cdp = await context.newCDPSession(page);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
  await cdp.send("Profiler.start");
  const { ms } = await page.evaluate(({ records, moves }) => window.drag.selection(records, moves), { records: RECORDS, moves: MOVES });
  const { profile } = await cdp.send("Profiler.stop");
  const self = new Map();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const dt = profile.timeDeltas;
  const counts = new Map();
  profile.samples.forEach((id, i) => counts.set(id, (counts.get(id) ?? 0) + (dt[i] ?? 0)));
  let total = 0;
  for (const [id, us] of counts) {
    const node = byId.get(id);
    const f = node.callFrame;
    const name = `${f.functionName || "(anon)"} ${f.url.split("/").slice(-2).join("/")}:${f.lineNumber}`;
    if (f.functionName === "(idle)" || f.functionName === "(program)") continue;
    total += us;
    self.set(name, (self.get(name) ?? 0) + us);
  }
  const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP);
  console.log(`profile ${MODE}: ${MOVES} moves of ${RECORDS} records in ${ms.toFixed(0)} ms; main thread busy (sampled, idle and program left out) ${(total / 1000).toFixed(1)} ms, ${(total / 1000 / MOVES).toFixed(2)} ms a move`);
  for (const [name, us] of rows) console.log(`${(us / 1000).toFixed(1).padStart(8)} ms  ${name}`);
} finally {
  await browser.close();
  await server.close();
  await statics.close();
}
