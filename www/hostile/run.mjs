// Runs the hostile-environment page (www/hostile/) in headless Chromium against the reference
// server behind the hostile front (front.mjs), all on 127.0.0.1, prints one line per case and
// saves a screenshot. Used by tests/e2e/hostile.mjs and `npm run hostile`
// (HOSTILE_KEEP=1: keep the servers up afterwards and print the page's address for a person).
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { launchChromium, ROOT, serve, startReferenceServer } from "../harness.mjs";
import { startHostileFront } from "./front.mjs";

const PAGE_BUDGET_MS = 180_000;

/** Runs every case (or HOSTILE_ONLY=a,b); resolves to { results, ok }. */
export async function runHostilePage({ print = console.log, keep = false } = {}) {
  const server = await startReferenceServer();
  const front = await startHostileFront({ upstream: server, adminToken: server.adminToken });
  const site = await serve();
  const browser = await launchChromium();
  const only = process.env.HOSTILE_ONLY ? `&only=${encodeURIComponent(process.env.HOSTILE_ONLY)}` : "";
  const address = `${site.url}/www/hostile/?front=${encodeURIComponent(front.url)}${only}`;
  try {
    const page = await browser.newPage();
    page.on("pageerror", (error) => print(`page error: ${error.message}`));
    await page.goto(address);
    await page.waitForSelector("body[data-status]", { timeout: PAGE_BUDGET_MS });
    const results = await page.evaluate(() => window.hostileResults);
    const dir = join(ROOT, "artifacts", "e2e");
    await mkdir(dir, { recursive: true });
    await page.screenshot({ path: join(dir, "hostile.png"), fullPage: true });
    for (const r of results) {
      print(`${r.ok ? "ok  " : "FAIL"} ${r.name}: ${r.observed}${r.ms === undefined ? "" : ` (${r.ms} ms)`}`);
    }
    print(`screenshot: ${join(dir, "hostile.png")}`);
    return { results, ok: results.length > 0 && results.every((r) => r.ok) };
  } finally {
    await browser.close();
    if (keep) {
      print(`the page, for a person: ${address} (Ctrl-C to stop)`);
      await new Promise(() => {});
    }
    await site.close();
    await front.close();
    await server.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { ok } = await runHostilePage({ keep: process.env.HOSTILE_KEEP === "1" });
  process.exit(ok ? 0 : 1);
}
