// Shared by the demo and the end-to-end tests: a static server on 127.0.0.1 for the probe
// page, the demo editor and the built package; the editor's TypeScript build; the reference
// server (www/server) on 127.0.0.1; and Debian's chromium (path from wasm-pack.toml) driven by
// playwright-core. Nothing here downloads a browser.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { createServer } from "node:http";
import { extname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

/** Repository root. */
export const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

/** Only these directories (relative to ROOT, URL = path) are served. */
const SERVED = ["www/probe/", "www/editor/", "www/chaos/", "www/outage/", "www/tabs/", "www/lifecycle/", "www/hostile/", "www/shared/", "www/worker/", "www/bench/drag/", "pkg/", "worker/"];

const CONTENT_TYPES = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".ts": "text/plain; charset=utf-8",
};

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Maps a request path to a served file under ROOT, or null. */
function servedFile(urlPath) {
  let path;
  try {
    path = normalize(decodeURIComponent(urlPath)).replace(/^\/+/, "");
  } catch {
    return null;
  }
  if (path.split("/").includes("..") || !SERVED.some((dir) => path.startsWith(dir))) {
    return null;
  }
  return join(ROOT, path.endsWith("/") ? `${path}index.html` : path);
}

/** Starts the static server on 127.0.0.1 (`port`, default a free one); resolves to { url, close }. */
export async function serve({ port: wanted = 0 } = {}) {
  const server = createServer(async (request, response) => {
    const file = request.method === "GET" ? servedFile(new URL(request.url, "http://x").pathname) : null;
    try {
      if (file === null || !(await stat(file)).isFile()) throw new Error("not served");
      const body = await readFile(file);
      const type = CONTENT_TYPES[extname(file)] ?? "application/octet-stream";
      // `no-store` keeps a page out of Chromium's back/forward cache: the lifecycle test's
      // pages, which must be able to enter it, are revalidated instead (`no-cache`).
      const cache = file.startsWith(join(ROOT, "www", "lifecycle")) ? "no-cache" : "no-store";
      response.writeHead(200, { "content-type": type, "cache-control": cache }).end(body);
    } catch {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  await new Promise((ready, fail) => {
    server.once("error", fail);
    server.listen(wanted, "127.0.0.1", ready);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((closed) => {
        server.close(closed);
        server.closeAllConnections();
      }),
  };
}

/** Compiles the demo editor (www/editor/src/*.ts → www/editor/build/*.js) with the project's tsc. */
export function buildEditor() {
  const tsc = join(ROOT, "node_modules", ".bin", "tsc");
  execFileSync(tsc, ["-p", join(ROOT, "www", "editor")], { stdio: "inherit", timeout: 120_000 });
}

/**
 * Starts the reference server (www/server) on 127.0.0.1 with a fresh SQLite file in a
 * temporary directory (or `db`: a path or a postgres:// URL; `batches: false`, a server that
 * declines batches); resolves to its RunningServer plus
 * `dir`, and `close()` also removes the directory it made. With CANVAS_SCHEDULER_TEST_DB=
 * postgres://… (and no `db`) it gets a fresh database on that cluster instead.
 */
export async function startReferenceServer({ port = 0, runApplyMs = 300, db, batches = true } = {}) {
  const { startServer } = await import("./server/server.mjs");
  if (!db) {
    const { freshDatabase, testPostgres } = await import("./server/testing/test-db.mjs");
    const cluster = testPostgres();
    if (cluster) db = await freshDatabase(cluster);
  }
  const dir = db ? null : await mkdtemp(join(tmpdir(), "canvas-scheduler-server-"));
  // A fresh admin token per server: `admin()` sends it, pages get it from the page's URL.
  const adminToken = `admin-${randomBytes(16).toString("hex")}`;
  const server = await startServer({ db: db ?? join(dir, "server.sqlite"), port, host: "127.0.0.1", runApplyMs, adminToken, batches });
  return {
    ...server,
    adminToken,
    dir,
    close: async () => {
      await server.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The chromium binary named by wasm-pack.toml's [test] chromium. */
export function chromiumPath() {
  const manifest = join(ROOT, "scripts", "manifest");
  return execFileSync("python3", [manifest, "chromium"], { encoding: "utf8" }).trim();
}

/** Launches headless chromium with a fresh profile. */
export function launchChromium() {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
}

/**
 * Opens `path` (e.g. "/www/probe/") and waits for <body data-status>; forwards the page's
 * console and failures to `print`. Resolves to the status ("ok" or "error").
 */
export async function runPage(browser, baseUrl, path, print, timeoutMs = 30_000) {
  const page = await browser.newPage();
  page.on("console", (message) => print(`page: ${message.text()}`));
  page.on("pageerror", (error) => print(`page error: ${error.message}`));
  page.on("response", (response) => {
    if (response.status() >= 400) print(`page: HTTP ${response.status()} ${response.url()}`);
  });
  try {
    await page.goto(`${baseUrl}${path}`);
    await page.waitForSelector("body[data-status]", { timeout: timeoutMs });
    return await page.getAttribute("body", "data-status");
  } finally {
    await page.close();
  }
}

/**
 * Calls the reference server's admin API: GET `path`, or POST `body` as JSON. Rejects on a
 * non-2xx answer; bounded by a 10 s timeout.
 */
export async function admin(server, path, body) {
  const response = await fetch(`${server.url}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: {
      "x-admin-token": server.adminToken,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${JSON.stringify(json)}`);
  return json;
}

export { mulberry32 } from "./shared/seeded.js";
