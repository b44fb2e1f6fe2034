// The tldraw example (www/examples/tldraw) as its end-to-end test drives it: packed, installed
// and built as a user gets it, served on 127.0.0.1, opened in a browser context, drawn on and
// dragged, and its saves checked against the reference server. tests/examples/tldraw.mjs is the
// scenario; this file is what it drives the app with.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, readFile, stat } from "node:fs/promises";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";
import { admin, ROOT } from "../../www/harness.mjs";

export const SAVE_TIMEOUT_MS = 180_000;
const INSTALL_FLAGS = ["--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];
const EXAMPLE = join(ROOT, "www", "examples", "tldraw");
export const say = (line) => console.log(`tldraw: ${line}`);
export const seconds = (since) => ((performance.now() - since) / 1000).toFixed(1);
/** Runs a command with a timeout; resolves to its stdout, rejects with its output's tail. */
function run(command, args, { cwd, timeoutMs }) {
  const since = performance.now();
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 64 << 20, env: { ...process.env, CI: "1" } }, (error, stdout, stderr) => {
      if (error) {
        const tail = `${stdout}\n${stderr}`.trim().split("\n").slice(-40).join("\n");
        reject(new Error(`${command} ${args.join(" ")}: ${error.killed ? "timed out" : `exit ${error.code}`}\n${tail}`));
        return;
      }
      say(`${command} ${args.join(" ")}: ok in ${seconds(since)}s`);
      resolve(stdout);
    });
  });
}

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".wasm": "application/wasm" };
/** Serves `dir` on 127.0.0.1 (a free port). */
export async function serveDir(dir) {
  const server = createServer(async (request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url, "http://x").pathname)).replace(/^\/+/, "");
    const file = join(dir, path === "" ? "index.html" : path);
    try {
      if (path.split("/").includes("..") || !(await stat(file)).isFile()) throw new Error("not served");
      response.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(await readFile(file));
    } catch {
      response.writeHead(404).end("not found\n");
    }
  });
  await new Promise((ready) => server.listen(0, "127.0.0.1", ready));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((done) => (server.close(done), server.closeAllConnections())) };
}

/** Packs the repository, copies the example and installs the tarball and its dependencies. */
export async function buildExample(base) {
  const packed = JSON.parse(await run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", base], { cwd: ROOT, timeoutMs: 120_000 }))[0];
  const dir = join(base, "tldraw");
  await cp(EXAMPLE, dir, { recursive: true, filter: (source) => !/[/\\](node_modules|dist)$/.test(source) });
  await run("npm", ["install", join(base, packed.filename), ...INSTALL_FLAGS], { cwd: dir, timeoutMs: 300_000 });
  await run("npm", ["run", "build"], { cwd: dir, timeoutMs: 180_000 });
  return join(dir, "dist");
}

/** Opens the example in `mode` on `canvas` (with the options `preset`: the example's, the
 * package's `defaults`, or `unbatched`); resolves once the editor is mounted. */
export async function openExample(context, statics, server, mode, canvas, preset = "example") {
  const page = await context.newPage();
  page.on("pageerror", (error) => say(`${mode} page error: ${error.message}`));
  page.on("console", (message) => message.type() === "error" && say(`${mode} page console: ${message.text()}`));
  await page.goto(`${statics.url}/?endpoint=${encodeURIComponent(server.url)}&mode=${mode}&canvas=${canvas}&options=${preset}`);
  await page.waitForSelector("body[data-status]", { timeout: 60_000 });
  assert.equal(await page.getAttribute("body", "data-status"), "ready", await page.getAttribute("body", "data-error"));
  return page;
}

/** Page side: draws a rectangle and drops an image (a 4x4 PNG) on the canvas. */
export async function drawShapeAndImage(page) {
  await page.evaluate(() => void globalThis.example.editor.createShape({ type: "geo", x: 10, y: 10, props: { w: 80, h: 60 } }));
  await page.evaluate(async () => {
    const canvas = new OffscreenCanvas(4, 4);
    canvas.getContext("2d").fillRect(0, 0, 4, 4);
    const file = new File([await canvas.convertToBlob({ type: "image/png" })], "dot.png", { type: "image/png" });
    await globalThis.example.editor.putExternalContent({ type: "files", files: [file], point: { x: 200, y: 200 } });
  });
}

/**
 * Page side: drops a photo on the canvas at `point`: a PNG of `width` x `height` noisy pixels
 * from a seeded generator (noise does not compress: about 4 bytes a pixel), the same bytes on
 * every run of one browser. Answers its size, SHA-256 (hex) and name.
 */
export const dropPhoto = (page, point, { width = 880, height = 660, seed = 61 } = {}) =>
  page.evaluate(
    async ({ point, width, height, seed }) => {
      let state = seed >>> 0;
      const next = () => {
        state = (state + 0x6d2b79f5) >>> 0;
        let t = state;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return (t ^ (t >>> 14)) >>> 0;
      };
      const canvas = new OffscreenCanvas(width, height);
      const context = canvas.getContext("2d");
      const pixels = context.createImageData(width, height);
      for (let i = 0; i < pixels.data.length; i += 4) {
        const v = next();
        pixels.data.set([v & 255, (v >>> 8) & 255, (v >>> 16) & 255, 255], i);
      }
      context.putImageData(pixels, 0, 0);
      const blob = await canvas.convertToBlob({ type: "image/png" });
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", await blob.arrayBuffer()));
      const sha256 = [...digest].map((byte) => byte.toString(16).padStart(2, "0")).join("");
      const file = new File([blob], "photo.png", { type: "image/png" });
      await globalThis.example.editor.putExternalContent({ type: "files", files: [file], point });
      return { size: blob.size, sha256, name: file.name };
    },
    { point, width, height, seed },
  );

/** Page side: each image shape, its asset's `src` and whether its image has loaded. */
export const imagesShown = (page) =>
  page.evaluate(() => {
    const { editor } = globalThis.example;
    return editor
      .getCurrentPageShapes()
      .filter((shape) => shape.type === "image")
      .map((shape) => {
        const asset = shape.props.assetId ? editor.getAsset(shape.props.assetId) : undefined;
        const container = document.getElementById(shape.id) ?? document.querySelector(`[data-shape-id="${shape.id}"]`);
        const loaded = [...(container?.querySelectorAll("img") ?? [])].filter((img) => img.complete && img.naturalWidth > 0);
        return { shapeId: shape.id, assetId: asset?.id ?? null, src: asset?.props.src ?? null, shown: loaded.length > 0, width: loaded[0]?.naturalWidth ?? 0 };
      });
  });

/** Waits (at most `ms`) until `check()` answers something truthy; resolves to it. */
export async function waitFor(what, check, ms = 30_000) {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((wait) => setTimeout(wait, 200));
  }
}

/** Page side: creates `count` geo shapes in one change; answers their ids. */
export const createShapes = (page, count, prefix) =>
  page.evaluate(
    ({ count, prefix }) => {
      const { editor } = globalThis.example;
      const shapes = Array.from({ length: count }, (_, i) => ({
        id: `shape:${prefix}-${i}`,
        type: "geo",
        x: (i % 50) * 40,
        y: Math.floor(i / 50) * 40,
        props: { w: 30, h: 30 },
      }));
      editor.run(() => editor.createShapes(shapes));
      return shapes.map((shape) => shape.id);
    },
    { count, prefix },
  );

/** Page side: selects `ids` and moves them `moves` times by (5, 3), one move a frame. */
export const drag = (page, ids, moves) =>
  page.evaluate(
    async ({ ids, moves }) => {
      const { editor } = globalThis.example;
      editor.select(...ids);
      const frame = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
      await frame();
      for (let move = 0; move < moves; move++) {
        editor.nudgeShapes(ids, { x: 5, y: 3 });
        await frame();
      }
    },
    { ids, moves },
  );

/** The main thread's time (ms) during `body`, from the page's CDP Performance metrics:
 * `task`, its busy time (TaskDuration: wall time in tasks, preemption included) and `cpu`,
 * its CPU time (ThreadTime). */
export async function mainThread(context, page, body) {
  const cdp = await context.newCDPSession(page);
  await cdp.send("Performance.enable");
  const read = async () => Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map((metric) => [metric.name, metric.value]));
  const before = await read();
  const result = await body();
  const after = await read();
  await cdp.detach();
  return { ...result, task: (after.TaskDuration - before.TaskDuration) * 1000, cpu: (after.ThreadTime - before.ThreadTime) * 1000 };
}

/**
 * Waits (at most 120 s) until the scheduler's count of settled operations kept whole has
 * stopped falling for 1.5 s: its compaction of what was settled is done. Resolves to the time
 * taken, the count, and (merged by `mainThread`) the main thread's CPU meanwhile.
 */
export async function maintenanceDone(page) {
  const started = performance.now();
  const kept = () => page.evaluate(() => globalThis.example.diagnose().stats.settledKept);
  let last = await kept();
  let still = performance.now();
  while (performance.now() - started < 120_000 && performance.now() - still < 1_500) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = await kept();
    if (now !== last) [last, still] = [now, performance.now()];
  }
  return { ms: still - started, kept: last };
}

/** Main-thread busy time (ms) of `body`. */
export const mainThreadMs = async (context, page, body) => (await mainThread(context, page, body)).task;

export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
/**
 * Calls the page's `whenSaved()` (bounded), then checks at once that the server has decided
 * every operation it waited for: applied there, or settled `discarded`/`rejected` on the page.
 * Resolves to the milliseconds it took.
 */
export async function whenSavedChecked(page, server, what) {
  const since = performance.now();
  const { ids } = await page
    .evaluate((ms) => Promise.race([
      globalThis.example.whenSaved(),
      new Promise((_, fail) => setTimeout(() => fail(new Error(`whenSaved() did not resolve in ${ms} ms`)), ms)),
    ]), SAVE_TIMEOUT_MS)
    .catch(async (error) => {
      const state = await page.evaluate(() => globalThis.example.diagnose()).catch((e) => `diagnose failed: ${e}`);
      say(`${what}: the scheduler then: ${JSON.stringify(state)}`);
      throw error;
    });
  const took = performance.now() - since;
  const state = await admin(server, "/admin/state");
  const outcomes = await page.evaluate(() => globalThis.example.outcomes);
  const early = ids.filter((id) => state.operations[id]?.applications !== 1 && !["discarded", "rejected"].includes(outcomes[id]));
  assert.deepEqual(early.slice(0, 5), [], `${what}: whenSaved() resolved before the server applied ${early.length} of ${ids.length}`);
  return took;
}

/** The editor's shapes as records, by id. */
export const editorShapes = (page) =>
  page.evaluate(() => Object.fromEntries(globalThis.example.editor.getCurrentPageShapes().map((shape) => [shape.id, shape])));

/** Waits (bounded) until the server's canvas holds exactly the editor's shapes (or `shapes`). */
export async function assertServerHasEditorShapes(page, server, canvas, what, shapes) {
  const deadline = performance.now() + SAVE_TIMEOUT_MS;
  let want, have;
  for (;;) {
    want = shapes ?? (await editorShapes(page));
    const records = (await admin(server, "/admin/state")).canvases[canvas]?.document.records ?? {};
    have = Object.fromEntries(Object.entries(records).filter(([, record]) => record.typeName === "shape"));
    try {
      assert.deepEqual(have, want);
      return;
    } catch (error) {
      if (performance.now() > deadline) {
        const missing = Object.keys(want).filter((id) => !(id in have)).length;
        throw new Error(`${what}: the server's ${canvas} differs from the editor (${missing} missing of ${Object.keys(want).length}): ${error.message.slice(0, 400)}`);
      }
      await new Promise((wait) => setTimeout(wait, 250));
    }
  }
}

/** Server accounting: nothing applied twice, and each canvas applies in the page's order. */
export function assertAccounting(state, canvas, order) {
  assert.deepEqual(state.invariants.keysAppliedMoreThanOnce, [], "no key applied twice");
  assert.deepEqual(state.invariants.operationsAppliedMoreThanOnce, [], "no operation applied twice");
  const position = new Map(order.map((id, index) => [id, index]));
  const history = [...state.canvases[canvas].history].sort((a, b) => a.version - b.version);
  let last = -1;
  let applied = 0;
  for (const { operationIds, version } of history) {
    for (const id of operationIds) {
      const at = position.get(id);
      assert.ok(at !== undefined, `${canvas} v${version}: ${id} was never enqueued by the page`);
      assert.ok(at > last, `${canvas} v${version}: ${id} applied after a later operation (order ${at} after ${last})`);
      last = at;
      applied++;
    }
  }
  return applied;
}

export const target = (label, figure, ok) => say(`${label}: ${figure}  [${ok ? "met" : "MISSED"}]`);
