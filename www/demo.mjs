// The main job until the demo editor exists: serves www/probe/ on 127.0.0.1, opens it in
// headless chromium, prints what the page did, and exits non-zero unless it succeeded.
// Run it through `npm run demo` (scripts/demo), which sets up and builds first.
import { launchChromium, ROOT, runPage, serve } from "./harness.mjs";

const started = performance.now();
const print = (line) => console.log(line);
const server = await serve();
let browser;
let status = "error";
try {
  browser = await launchChromium();
  print(`demo: serving ${ROOT} at ${server.url}; headless chromium ${browser.version()}`);
  status = await runPage(browser, server.url, "/www/probe/", print);
} catch (error) {
  print(`demo: ${error.message}`);
} finally {
  await browser?.close();
  await server.close();
}
const seconds = ((performance.now() - started) / 1000).toFixed(1);
print(`demo: ${status === "ok" ? "ok" : "FAILED"} in ${seconds}s`);
process.exit(status === "ok" ? 0 : 1);
