// The demo's non-interactive smoke mode (DEMO_SMOKE=1 node www/editor/demo.mjs): starts the
// reference server and the editor's static server, draws a shape in headless chromium and
// checks the server got it. The editor is compiled first; the package is already built.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { buildEditor, ROOT } from "../../www/harness.mjs";

buildEditor();
const run = spawnSync(process.execPath, [join(ROOT, "www", "editor", "demo.mjs")], {
  env: { ...process.env, DEMO_SMOKE: "1" },
  stdio: "inherit",
  timeout: 120_000,
});
const ok = run.status === 0;
console.log(`e2e demo smoke: ${ok ? 1 : 0} passed, ${ok ? 0 : 1} failed${run.error ? ` (${run.error.message})` : ""}`);
process.exit(ok ? 0 : 1);
