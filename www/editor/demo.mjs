// The main job (`npm run demo` → scripts/demo, which builds the package and the editor first):
// starts the reference server and a static server for the editor, both on 127.0.0.1, prints
// the page address and runs until Ctrl-C.
//
//   DEMO_PORT=8080 DEMO_SERVER_PORT=8081   fixed ports (default: free ones)
//   DEMO_RUN_APPLY_MS=4000                 how long a run stays cancellable (default 4000)
//   DEMO_DB=postgres://user@host:port/db   the reference server on Postgres (default: SQLite in
//                                          a temporary directory; scripts/demo's DEMO_DB=pg-cluster
//                                          starts a throw-away cluster and sets this)
//   DEMO_SMOKE=1                           non-interactive: open the editor in headless chromium,
//                                          draw a shape, check the server got it, exit 0 or 1
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { admin, launchChromium, ROOT, serve, startReferenceServer } from "../harness.mjs";

const env = process.env;
const smoke = env.DEMO_SMOKE === "1";
const print = (line) => console.log(line);
const portOf = (name) => {
  const value = Number(env[name] ?? 0);
  if (!Number.isInteger(value) || value < 0 || value > 65535) throw new Error(`${name} must be a port number`);
  return value;
};

const reference = await startReferenceServer({
  port: portOf("DEMO_SERVER_PORT"),
  runApplyMs: Number(env.DEMO_RUN_APPLY_MS ?? (smoke ? 300 : 4000)),
  db: env.DEMO_DB || undefined,
});
const statics = await serve({ port: portOf("DEMO_PORT") });
const database = smoke ? `demo-smoke-${Date.now()}` : `canvas-editor-${reference.port}`;
const page = `${statics.url}/www/editor/?server=${encodeURIComponent(reference.url)}&db=${database}&admin=${reference.adminToken}`;

const storage = reference.dir ? `SQLite in ${reference.dir}` : `Postgres, ${env.DEMO_DB.replace(/\/\/[^@/]*@/, "//…@")}`;
print(`demo: reference server (protocol v1 on the server kit, ${storage}): ${reference.url}`);
print(`demo: admin state: curl -H 'x-admin-token: ${reference.adminToken}' ${reference.url}/admin/state`);
print(`demo: static server for ${ROOT}/www/editor and pkg/: ${statics.url}`);
print(`demo: open the editor at ${page}`);

async function closeAll() {
  await statics.close();
  await reference.close();
}

if (!smoke) {
  print("demo: running; press Ctrl-C to stop");
  const stop = async (signal) => {
    print(`demo: ${signal}, stopping`);
    await closeAll();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
} else {
  const started = performance.now();
  const artifacts = join(ROOT, "artifacts", "demo");
  await mkdir(artifacts, { recursive: true });
  let ok = false;
  let browser;
  try {
    browser = await launchChromium();
    const tab = await browser.newPage();
    tab.on("pageerror", (error) => print(`page error: ${error.message}`));
    tab.on("console", (message) => {
      if (message.type() === "error") print(`page console: ${message.text()}`);
    });
    await tab.goto(page, { timeout: 15_000 });
    await tab.waitForSelector("body[data-status=ready]", { timeout: 30_000 });
    const box = await tab.locator("#canvas").boundingBox();
    if (!box) throw new Error("no canvas on the page");
    await tab.mouse.move(box.x + 100, box.y + 100);
    await tab.mouse.down();
    await tab.mouse.move(box.x + 220, box.y + 180, { steps: 4 });
    await tab.mouse.up();
    const deadline = Date.now() + 15_000;
    let document;
    while (Date.now() < deadline) {
      const state = await admin(reference, "/admin/state");
      document = state.canvases?.["canvas-a"]?.document;
      if (document && Object.keys(document.shapes).length === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const shapes = Object.values(document?.shapes ?? {});
    if (shapes.length !== 1) throw new Error(`the server has ${shapes.length} shapes on canvas-a, expected 1`);
    // The server applied it; the editor learns so from the settled event (a moment later on a
    // busy machine): compare once nothing is pending there.
    let editor = await tab.evaluate(() => window.canvasEditor.snapshot());
    while (editor.pending > 0 && Date.now() < deadline + 10_000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      editor = await tab.evaluate(() => window.canvasEditor.snapshot());
    }
    const same = JSON.stringify(editor.canvases["canvas-a"].document.shapes) === JSON.stringify(document.shapes);
    await tab.screenshot({ path: join(artifacts, "smoke.png"), fullPage: true });
    print(`demo smoke: drew a ${shapes[0].type} at (${shapes[0].x}, ${shapes[0].y}); server has it; editor ${same ? "agrees" : "DIFFERS"}`);
    print(`demo smoke: screenshot ${join(artifacts, "smoke.png")}`);
    ok = same;
  } catch (error) {
    print(`demo smoke: ${error.message}`);
  } finally {
    await browser?.close();
    await closeAll();
  }
  print(`demo smoke: ${ok ? "ok" : "FAILED"} in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  process.exit(ok ? 0 : 1);
}
