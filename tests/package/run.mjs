// The package as a user gets it: `npm pack` of this repository (after scripts/build, both
// targets), then fresh apps in a temporary directory outside the repository, each made from
// tests/package/apps/<name> and given the tarball with `npm install <tgz>` (with the app's
// own pinned dev dependencies, from the npm registry; npm's cache keeps repeat runs quick):
//   web-vite      the `web` entry (`import init, { Scheduler } from "canvas-scheduler"`),
//                 `npm run build` (tsc --noEmit, then a Vite production build), dist/ served
//                 on 127.0.0.1 and opened in headless Chromium;
//   bundler-vite  the `./bundler` entry (`canvas-scheduler/bundler`, the .wasm imported as an
//                 ES module) through Vite with vite-plugin-wasm, built and run the same way;
//   worker-vite   the `./worker` entry (`canvas-scheduler/worker`: the scheduler in a dedicated
//                 worker, a proxy on the page) with the package's own worker and with the
//                 app's own worker module (`serve()` from `canvas-scheduler/worker/serve` with
//                 a `compile` hook), both bundled by Vite's `new Worker(new URL(...))` handling;
//   types         `tsc --strict --noEmit` with moduleResolution `bundler` and with `node16`.
// A browser app enqueues one intent against its own reference server (www/server, 127.0.0.1,
// port 0); the test checks that enqueue resolved, the operation settled `applied`, and the
// server (GET /admin/state) applied it exactly once, in one request, with the shape it sent.
// The tarball's contents are checked first (tests/package/contents.mjs). Every failure is
// collected and named; the run exits 1 if there was any. Every step has a timeout.
// KEEP_PACKAGE_APPS=1 keeps the temporary directory (its path is printed).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import { launchChromium, startReferenceServer, admin } from "../../www/harness.mjs";
import { missingFiles, ROOT } from "./contents.mjs";

const APPS = join(ROOT, "tests", "package", "apps");
const INSTALL_FLAGS = ["--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];
const started = performance.now();
const seconds = (since) => ((performance.now() - since) / 1000).toFixed(1);
const say = (line) => console.log(`package: ${line}`);

/** Runs a command with a timeout; resolves to its stdout, rejects with its output's tail. */
function run(command, args, { cwd, timeoutMs }) {
  const since = performance.now();
  const shown = `${command} ${args.join(" ")}`;
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 64 << 20, env: { ...process.env, CI: "1" } },
      (error, stdout, stderr) => {
        if (error) {
          const why = error.killed ? `timed out after ${timeoutMs / 1000}s` : `exit ${error.code}`;
          const tail = `${stdout}\n${stderr}`.trim().split("\n").slice(-40).join("\n");
          reject(new Error(`${shown} (in ${cwd}): ${why}\n${tail}`));
          return;
        }
        say(`${shown}: ok in ${seconds(since)}s`);
        resolve(stdout);
      },
    );
  });
}

const CONTENT_TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
};

/** Serves `dir` statically on 127.0.0.1 (a free port); resolves to { url, close }. */
async function serveDir(dir) {
  const server = createServer(async (request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url, "http://x").pathname)).replace(/^\/+/, "");
    const file = join(dir, path === "" || path.endsWith("/") ? `${path}index.html` : path);
    try {
      if (path.split("/").includes("..") || !(await stat(file)).isFile()) throw new Error("not served");
      const type = CONTENT_TYPES[extname(file)] ?? "application/octet-stream";
      response.writeHead(200, { "content-type": type }).end(await readFile(file));
    } catch {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  await new Promise((ready, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", ready);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((closed) => (server.close(closed), server.closeAllConnections())),
  };
}

/** Copies tests/package/apps/<name> to <base>/<name> and installs the tarball into it. */
async function makeApp(base, name, tarball) {
  const dir = join(base, name);
  await cp(join(APPS, name), dir, { recursive: true });
  await run("npm", ["install", tarball, ...INSTALL_FLAGS], { cwd: dir, timeoutMs: 300_000 });
  const installed = JSON.parse(await readFile(join(dir, "node_modules", "canvas-scheduler", "package.json"), "utf8"));
  say(`${name}: canvas-scheduler ${installed.version} installed from ${tarball}`);
  return dir;
}

/**
 * Builds the app (npm run build: tsc, vite build), serves dist/, opens it in Chromium with a
 * fresh reference server's address, and checks what the page and the server report.
 */
async function buildAndRun(browser, dir, name, more = async () => {}) {
  await run("npm", ["run", "build"], { cwd: dir, timeoutMs: 180_000 });
  const server = await startReferenceServer();
  const statics = await serveDir(join(dir, "dist"));
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    page.on("console", (message) => say(`${name} page: ${message.text()}`));
    page.on("pageerror", (error) => say(`${name} page error: ${error.message}`));
    page.on("response", (response) => {
      if (response.status() >= 400) say(`${name} page: HTTP ${response.status()} ${response.url()}`);
    });
    await page.goto(`${statics.url}/?endpoint=${encodeURIComponent(server.url)}`, { timeout: 30_000 });
    await page.waitForSelector("body[data-status]", { timeout: 60_000 });
    const status = await page.getAttribute("body", "data-status");
    const result = JSON.parse(await page.textContent("#result"));
    assert.equal(status, "ok", `${name}: the page failed: ${JSON.stringify(result)}`);
    const { id, enqueued, settled } = result;
    assert.equal(enqueued, true, `${name}: enqueue resolved`);
    assert.equal(settled.type, "settled");
    assert.equal(settled.operationId, id);
    assert.equal(settled.outcome, "applied", `${name}: settled ${JSON.stringify(settled)}`);

    const state = await admin(server, "/admin/state");
    assert.equal(state.operations[id]?.applications, 1, `${name}: the server applied ${id} once`);
    assert.deepEqual(state.invariants.keysAppliedMoreThanOnce, [], `${name}: no key applied twice`);
    assert.deepEqual(state.invariants.operationsAppliedMoreThanOnce, [], `${name}: no operation applied twice`);
    const carrying = Object.entries(state.requests).filter(([, request]) => request.operationIds.includes(id));
    assert.equal(carrying.length, 1, `${name}: one request carried ${id}`);
    const [[requestId, request]] = carrying;
    assert.equal(settled.requestId, requestId, `${name}: settled by the request the server applied`);
    assert.deepEqual(state.canvases["canvas-1"]?.document.shapes.s1, { x: 10, y: 20, fill: "#336699" });
    say(
      `${name}: enqueue resolved, settled applied by request ${requestId} ` +
        `(${request.submits} submit(s), outcome ${request.outcome}), applied once on the server`,
    );
    await more(result, state);
  } finally {
    await context.close();
    await statics.close();
    await server.close();
  }
}

/** Type-checks the types app with each tsconfig.<resolution>.json. */
async function typeCheck(dir) {
  for (const resolution of ["bundler", "node16"]) {
    await run(join(dir, "node_modules", ".bin", "tsc"), ["--strict", "--noEmit", "-p", `tsconfig.${resolution}.json`], {
      cwd: dir,
      timeoutMs: 120_000,
    });
    say(`types: tsc --strict --noEmit, moduleResolution ${resolution}: 0 errors`);
  }
}

const failures = [];
/** Runs one named check; a failure is recorded and the run goes on. */
async function check(name, body) {
  const since = performance.now();
  try {
    await body();
    say(`${name}: ok in ${seconds(since)}s`);
  } catch (error) {
    failures.push(name);
    console.error(`package: FAILED ${name} after ${seconds(since)}s: ${error.stack ?? error}`);
  }
}

for (const target of ["web", "bundler"]) {
  const glue = join(ROOT, "pkg", target, "canvas_scheduler.js");
  if (!(await stat(glue).catch(() => null))) {
    console.error(`package: ${glue} is missing: run scripts/build (both targets) first`);
    process.exit(1);
  }
}

const base = await mkdtemp(join(tmpdir(), "canvas-scheduler-package-"));
say(`apps in ${base}`);
let browser;
try {
  const packed = JSON.parse(
    await run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", base], { cwd: ROOT, timeoutMs: 120_000 }),
  )[0];
  const tarball = join(base, packed.filename);
  say(`${packed.filename}: ${packed.entryCount} files, ${packed.size} bytes`);
  await check("tarball holds every file the package imports", async () => {
    const { problems, checked } = missingFiles(packed.files.map((file) => file.path));
    if (problems.length > 0) throw new Error(`the tarball lacks:\n  ${problems.join("\n  ")}`);
    say(`all ${checked.length} entry and imported files are in the tarball`);
  });

  browser = await launchChromium();
  await check("web-vite (web entry, Vite production build)", async () => {
    await buildAndRun(browser, await makeApp(base, "web-vite", tarball), "web-vite");
  });
  await check("bundler-vite (bundler entry, Vite + vite-plugin-wasm)", async () => {
    await buildAndRun(browser, await makeApp(base, "bundler-vite", tarball), "bundler-vite");
  });
  await check("worker-vite (worker entry: the package's worker and the app's own, Vite production build)", async () => {
    await buildAndRun(browser, await makeApp(base, "worker-vite", tarball), "worker-vite", async (result, state) => {
      assert.equal(result.explained, "resolved", "worker-vite: explain() from the mirror after the settled event");
      assert.ok(result.sent >= 1, `worker-vite: stats().sent from the mirror is ${result.sent}`);
      const { id, settled } = result.custom;
      assert.equal(settled.operationId, id);
      assert.equal(settled.outcome, "applied", `worker-vite: the app's worker: settled ${JSON.stringify(settled)}`);
      assert.equal(state.operations[id]?.applications, 1, `worker-vite: the server applied ${id} once`);
      assert.deepEqual(
        state.canvases["canvas-2"]?.document.shapes.s2,
        { x: 10, y: 20, fill: "#336699", compiledBy: "worker" },
        "worker-vite: the app's worker compiled the request (serve({ compile }))",
      );
      say("worker-vite: the app's own worker (serve({ compile })) compiled and sent its intent, applied once");
    });
  });
  await check("types (tsc --strict, bundler and node16)", async () => {
    await typeCheck(await makeApp(base, "types", tarball));
  });
} finally {
  await browser?.close();
  if (process.env.KEEP_PACKAGE_APPS === "1") say(`kept ${base}`);
  else await rm(base, { recursive: true, force: true });
}

if (failures.length > 0) {
  console.error(`package: ${failures.length} failed (${failures.join("; ")}) in ${seconds(started)}s`);
  process.exit(1);
}
say(`all passed in ${seconds(started)}s`);
