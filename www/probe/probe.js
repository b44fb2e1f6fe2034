// The probe page: loads the package's web target, stores and reads a record through
// probeStorage(), and says what it did in #log and on the console. When it is done,
// <body data-status> is "ok" or "error" (the demo and e2e tests wait for it).
// ?db=<name> picks the IndexedDB database (default "canvas-scheduler-demo").
import init, { probeStorage } from "../../pkg/web/canvas_scheduler.js";

const log = document.getElementById("log");
const database = new URLSearchParams(location.search).get("db") ?? "canvas-scheduler-demo";

function say(line) {
  log.textContent += `${line}\n`;
  console.log(line);
}

async function run() {
  await init();
  say("loaded canvas-scheduler (web target) and instantiated its .wasm");
  const report = await probeStorage(database);
  say(`opened IndexedDB database "${report.database}" at schema v${report.schemaVersion}`);
  say(`wrote ${JSON.stringify(report.written)} to store "${report.store}" (strict durability)`);
  say(`read back ${JSON.stringify(report.read)} in a new readonly transaction`);
  const same = JSON.stringify(report.read) === JSON.stringify(report.written);
  say(`${same ? "identical" : "DIFFERENT"}; open + write + read took ${report.elapsedMs} ms`);
  return same;
}

try {
  document.body.dataset.status = (await run()) ? "ok" : "error";
} catch (error) {
  say(`error ${error?.code ?? "(no code)"}: ${error?.message ?? error}`);
  document.body.dataset.status = "error";
}
