// End-to-end tests of the demo editor (www/editor) against the reference server (www/server),
// in each engine of www/engines.mjs (ENGINES=chromium,firefox,webkit; default wasm-pack.toml's
// [test] engines), with the scheduler in the page and in worker mode (EDITOR_MODES). Each test gets its own reference server and browser context (fresh
// IndexedDB and localStorage). Every wait is bounded. Screenshots go to artifacts/e2e/.
// The full-disk test needs an origin quota set through CDP: chromium only, and the output
// says so for the others. Exits non-zero if any test failed; the last line is the summary.
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { crc32, deflateSync } from "node:zlib";
import { enginesToRun, launch, unsupported } from "../../www/engines.mjs";
import { admin, buildEditor, ROOT, serve, startReferenceServer } from "../../www/harness.mjs";

const ARTIFACTS = join(ROOT, "artifacts", "e2e");
const READY_MS = 30_000;
/** The storage quota of the full-disk test, in bytes. */
const QUOTA_BYTES = 600_000;
const SYNC_MS = 30_000;

const print = (line) => console.log(line);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a truthy value or `timeoutMs` passes. */
async function waitFor(what, check, timeoutMs = SYNC_MS) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    last = await check();
    if (last) return last;
    await sleep(150);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

const adminState = (server) => admin(server, "/admin/state");

const snapshot = (page) => page.evaluate(() => window.canvasEditor.snapshot());

async function openEditor(context, statics, server, db) {
  const page = await context.newPage();
  page.onProblem((line) => print(`  ${line}`));
  const mode = MODE === "worker" ? "&mode=worker" : "";
  const url = `${statics.url}/www/editor/?server=${encodeURIComponent(server.url)}&db=${db}&admin=${server.adminToken}${mode}`;
  await page.goto(url);
  await page.waitForSelector("body[data-status=ready]", READY_MS);
  return page;
}

async function reload(page) {
  await page.reload();
  // The previous page's lease may still be held: the editor says so and retries.
  await page.waitForSelector("body[data-status=ready]", READY_MS);
}

async function setOffline(page, offline) {
  // The switch shows the server's fault only once the page has read it (after a load, the box
  // is the browser's default or its restored form state until then).
  await page.waitForSelector("body[data-offline]", 5_000);
  // A click right after a drag on the canvas can be lost (seen in WebKitGTK and Firefox): the
  // box changes at once when a click lands, so it is clicked again only while it has not.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    await page.check("#offline", offline);
    if ((await page.evaluate(() => document.querySelector("#offline").checked)) === offline) break;
    await sleep(100);
  }
  await page.waitForSelector(`body[data-offline=${offline}]`, 5_000);
}

async function tool(page, name) {
  await page.check(`input[name=tool][value=${name}]`);
}

/** Switches to `canvasId`'s tab. The tab bar is drawn again on every change, so a click can
 * land on a button replaced between press and release: clicked again until it is current. */
async function tab(page, canvasId) {
  const current = (id) => document.querySelector(`#tabs [data-canvas=${id}]`)?.classList.contains("current");
  for (let attempt = 0; attempt < 5; attempt += 1) {
    await page.click(`#tabs [data-canvas=${canvasId}]`);
    if (await page.evaluate(current, canvasId)) return;
    await sleep(100);
  }
  throw new Error(`the ${canvasId} tab did not become current`);
}

/** Clicks the edit button `selector` until `done(snapshot)` holds. WebKitGTK can lose a click
 * that follows a drag on the canvas (the canvas still holds the pointer): the edit is made in
 * the click's handler, synchronously, so a click that was handled shows at once and is never
 * repeated. */
async function clickEdit(page, selector, done) {
  for (let attempt = 0; attempt < 3; attempt += 1) {
    await page.click(selector);
    if (done(await snapshot(page))) return;
    await sleep(200);
    if (done(await snapshot(page))) return;
  }
  throw new Error(`a click on ${selector} made no edit`);
}

/** Drags on the canvas from (x0, y0) to (x1, y1), in canvas coordinates (800 × 500). */
function drag(page, x0, y0, x1, y1) {
  return page.drag("#canvas", [x0 / 800, y0 / 500], [x1 / 800, y1 / 500]);
}

/** The engine of the test under way (screenshot names carry it). */
let ENGINE = "";
/** The mode of the test under way: "page" or "worker" (the scheduler in a dedicated worker). */
let MODE = "page";

async function screenshot(page, name) {
  const path = join(ARTIFACTS, `${ENGINE}-${name}.png`);
  await page.screenshot(path);
  return path;
}

/** The editor's view of every canvas equals the server's: versions, shapes, assets. */
function assertSameState(editor, server, canvasIds) {
  for (const id of canvasIds) {
    const mine = editor.canvases[id];
    const theirs = server.canvases[id] ?? { version: 0, document: { shapes: {}, assets: {} } };
    assert.equal(mine.version, theirs.version, `${id}: editor version ${mine.version}, server ${theirs.version}`);
    assert.deepEqual(mine.document.shapes, theirs.document.shapes, `${id}: shapes differ`);
    assert.deepEqual(
      Object.keys(mine.document.assets).sort(),
      Object.keys(theirs.document.assets ?? {}).sort(),
      `${id}: assets differ`,
    );
  }
}

function assertExactlyOnce(state) {
  assert.deepEqual(state.invariants.keysAppliedMoreThanOnce, [], "a key was applied more than once");
  assert.deepEqual(state.invariants.operationsAppliedMoreThanOnce, [], "an operation was applied more than once");
}

/** A small solid PNG (so the upload is a real image the page can show). */
function png(width, height, [r, g, b]) {
  const chunk = (type, data) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => [r, g, b]).flat())]);
  const pixels = deflateSync(Buffer.concat(Array.from({ length: height }, () => row)));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", pixels),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

// ---- the tests ----------------------------------------------------------------------------

async function drawOfflineReloadOnline({ page, server, say }) {
  // The editor asked the browser to keep its storage and shows the browser's answer.
  const { storagePersisted: persisted } = await waitFor("the storage mode", async () => {
    const s = await snapshot(page);
    return s.storagePersisted !== null ? s : null;
  }, 5000);
  // (WebKitGTK's MiniBrowser has no navigator.storage: never persisted there.)
  const hasStorageManager = await page.evaluate(() => navigator.storage !== undefined);
  assert.equal(persisted, hasStorageManager ? await page.evaluate(() => navigator.storage.persisted()) : false, "storagePersisted is the browser's answer");
  assert.match(await page.text("#storage-mode"), persisted ? /^storage: persistent$/ : /^storage: best-effort/);
  say(hasStorageManager ? `navigator.storage.persist(): ${persisted}` : "no navigator.storage (StorageManager) in this browser: best-effort");
  await setOffline(page, true);
  await tab(page, "canvas-a");
  await tool(page, "rect");
  await drag(page, 60, 60, 200, 160);
  await drag(page, 300, 80, 420, 200);
  await tab(page, "canvas-b");
  await tool(page, "circle");
  await drag(page, 400, 250, 520, 370);
  await tab(page, "canvas-a");
  await tool(page, "select");
  await drag(page, 120, 100, 220, 330); // moves the first rectangle by (100, 230)
  await page.fill("#colour", "#16a34a");
  await clickEdit(page, "#recolour", (s) => Object.values(s.canvases["canvas-a"].document.shapes).some((shape) => shape.colour === "#16a34a"));
  let editor = await snapshot(page);
  assert.equal(Object.keys(editor.canvases["canvas-a"].document.shapes).length, 2);
  assert.equal(Object.keys(editor.canvases["canvas-b"].document.shapes).length, 1);
  assert.equal(editor.pending, 5, "five edits wait in the ledger");
  await sleep(1000); // let the scheduler try (and fail) against the offline server
  let state = await adminState(server);
  assert.equal(Object.keys(state.canvases).length, 0, "nothing reached the offline server");
  say(`offline: 5 edits pending, server empty; ${await screenshot(page, "a-1-offline")}`);

  const before = editor.canvases;
  await reload(page);
  editor = await snapshot(page);
  assert.deepEqual(editor.canvases, before, "the reloaded editor shows the same optimistic canvases");
  assert.equal(editor.pending, 5, "the five edits survived the reload");
  say(`reloaded: ${editor.pending} edits still pending; ${await screenshot(page, "a-2-reloaded-offline")}`);

  await setOffline(page, false);
  editor = await waitFor("every edit to settle", async () => {
    const s = await snapshot(page);
    return s.pending === 0 ? s : null;
  });
  state = await adminState(server);
  assertSameState(editor, state, ["canvas-a", "canvas-b", "canvas-c"]);
  assertExactlyOnce(state);
  const moved = Object.values(state.canvases["canvas-a"].document.shapes).find((s) => s.x === 160);
  assert.ok(moved, "the moved rectangle is at x = 160 on the server");
  assert.equal(moved.colour, "#16a34a", "and recoloured");
  assert.equal(state.canvases["canvas-a"].version, 4);
  say(`online: server canvas-a v4, canvas-b v1, equal to the editor; ${await screenshot(page, "a-3-online")}`);
}

async function conflictRollsBack({ page, server, say }) {
  await tab(page, "canvas-a");
  await tool(page, "rect");
  await page.fill("#colour", "#2563eb");
  await drag(page, 100, 100, 250, 200);
  await waitFor("the rectangle to settle", async () => (await snapshot(page)).pending === 0);
  let state = await adminState(server);
  assert.equal(state.canvases["canvas-a"].version, 1);
  const [shapeId] = Object.keys(state.canvases["canvas-a"].document.shapes);

  // A second client edits canvas-a directly: version 1 → 2.
  const other = {
    id: "second-client-request-1",
    operationIds: ["second-client-op-1"],
    kind: "shape.upsert",
    ownerCanvasId: "canvas-a",
    protocolVersion: 1,
    payload: { shapeId: "from-the-other-client", shape: { type: "circle", x: 500, y: 250, w: 120, h: 120, colour: "#dc2626" } },
    canvasIds: ["canvas-a"],
    expectedVersions: { "canvas-a": 1 },
  };
  const response = await fetch(`${server.url}/requests`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": other.id },
    body: JSON.stringify(other),
    signal: AbortSignal.timeout(5000),
  });
  assert.equal(response.status, 200, "the second client's edit is applied");

  // The editor still believes canvas-a is at version 1: its recolour is refused.
  await tool(page, "select");
  await drag(page, 150, 150, 150, 150); // a click selects the rectangle
  await page.fill("#colour", "#f59e0b");
  // The server holds its answer while the optimistic state is read: on loopback the refusal
  // and the rollback could otherwise land before the snapshot (a CI run saw exactly that).
  await admin(server, "/admin/faults", { latencyMs: 2000 });
  try {
    await clickEdit(page, "#recolour", (s) => s.canvases["canvas-a"].document.shapes[shapeId]?.colour === "#f59e0b");
    const optimistic = await snapshot(page);
    assert.equal(optimistic.canvases["canvas-a"].document.shapes[shapeId].colour, "#f59e0b", "recoloured optimistically");
  } finally {
    await admin(server, "/admin/faults", { latencyMs: 0 });
  }
  const editor = await waitFor("the recolour to settle", async () => {
    const s = await snapshot(page);
    return s.pending === 0 ? s : null;
  });
  state = await adminState(server);
  assert.equal(state.canvases["canvas-a"].version, 2, "the refused edit changed nothing on the server");
  assert.equal(editor.canvases["canvas-a"].document.shapes[shapeId].colour, "#2563eb", "rolled back to the server's colour");
  assert.ok(editor.canvases["canvas-a"].document.shapes["from-the-other-client"], "the other client's shape is shown");
  assertSameState(editor, state, ["canvas-a"]);
  await page.waitForSelector("#notices .notice.warning", 5000);
  const notice = await page.text("#notices .notice.warning");
  assert.match(notice, /version_conflict/, "a visible notice names the conflict");
  assert.match(notice, /Rolled back/);
  const source = /canonical state/.test(notice) ? "the settled event's canonical" : "a re-read of the server";
  say(`conflict: notice "${notice.trim()}" (state from ${source}); ${await screenshot(page, "b-conflict-rolled-back")}`);
}

async function uploadSurvivesReload({ page, server, say }) {
  const image = png(24, 16, [220, 38, 38]);
  await setOffline(page, true);
  await tab(page, "canvas-a");
  await page.setFile("#upload", { name: "red.png", mimeType: "image/png", buffer: image });
  await page.waitForSelector("#assets .asset.pending", 5000);
  // Durable before the reload, as the editor shows it (an edit still being saved when the page
  // goes is queued again from the page's own copy; an upload's file cannot be).
  const saved = await waitFor("the upload to be saved in the ledger", async () => {
    const s = await snapshot(page);
    return s.saving === 0 ? s : null;
  });
  assert.equal(saved.unsaved, 0, `the upload was stored (notices: ${saved.notices.join(" | ")})`);
  say(`upload queued offline; ${await screenshot(page, "c-1-upload-offline")}`);

  await reload(page);
  let editor = await snapshot(page);
  assert.equal(editor.pending, 1, "the upload is still in the ledger after the reload");
  await page.waitForSelector("#assets .asset.pending", 5000);

  await setOffline(page, false);
  editor = await waitFor("the upload to settle", async () => {
    const s = await snapshot(page);
    return s.pending === 0 ? s : null;
  });
  const state = await adminState(server);
  const assets = Object.entries(state.canvases["canvas-a"].document.assets);
  assert.equal(assets.length, 1, "the server lists one asset on canvas-a");
  const [assetId, asset] = assets[0];
  assert.equal(asset.size, image.length, "the whole file arrived");
  assert.equal(asset.contentType, "image/png");
  assert.equal(asset.name, "red.png");
  assertSameState(editor, state, ["canvas-a"]);
  assertExactlyOnce(state);
  const stored = await fetch(`${server.url}/assets/${assetId}`, { signal: AbortSignal.timeout(5000) });
  assert.deepEqual(Buffer.from(await stored.arrayBuffer()), image, "the stored bytes are the file's");
  const width = await waitFor("the uploaded image to show", () =>
    page.evaluate((id) => document.querySelector(`[data-asset-id="${id}"] img`)?.naturalWidth ?? 0, assetId),
  10_000);
  assert.equal(width, 24);
  say(`uploaded after reload: ${assetId} (${asset.size} B) on the server and shown; ${await screenshot(page, "c-2-upload-applied")}`);
}

/** Before the editor opens: the origin's storage quota, enforced by the browser (CDP). */
async function smallQuota({ context, statics }) {
  const cdp = await context.raw.newCDPSession(await context.raw.newPage());
  await cdp.send("Storage.overrideQuotaForOrigin", { origin: statics.url, quotaSize: QUOTA_BYTES });
  return { liftQuota: () => cdp.send("Storage.overrideQuotaForOrigin", { origin: statics.url }) };
}

async function storageFullKeepsEdits({ page, server, say, liftQuota }) {
  await tab(page, "canvas-b");
  await tool(page, "rect");
  await drag(page, 60, 60, 160, 140);
  // An upload bigger than the quota: its file cannot be stored.
  const bytes = randomBytes(QUOTA_BYTES + 200_000);
  await page.setFile("#upload", { name: "big.bin", mimeType: "application/octet-stream", buffer: bytes });
  await page.waitForSelector("#retry-storage:not([hidden])", 10_000);
  let editor = await snapshot(page);
  assert.equal(editor.unsaved, 1, "the refused upload is kept on the page, unsaved");
  const notice = editor.notices.find((text) => text.startsWith("Storage is full or unavailable"));
  assert.ok(notice, "a notice says storage is full");
  assert.match(notice, /QuotaExceededError: the storage quota is used up/, "the notice names the browser's error");
  await page.waitForSelector("#assets .asset.pending", 5000);
  say(`quota ${QUOTA_BYTES} B: the ${bytes.length} B upload refused and kept; ${await screenshot(page, "d-1-storage-full")}`);

  await liftQuota();
  await page.click("#retry-storage");
  editor = await waitFor("the kept upload to be saved and settle", async () => {
    const s = await snapshot(page);
    return s.pending === 0 ? s : null;
  });
  assert.equal(editor.unsaved, 0);
  assert.equal(await page.evaluate(() => document.querySelector("#retry-storage").hidden), true, "no retry offered once saved");
  assert.ok(editor.notices.some((text) => text.startsWith("Storage works again: 1 kept edit(s) saved")), "the notice says it was saved");
  const state = await adminState(server);
  const assets = Object.values(state.canvases["canvas-b"].document.assets);
  assert.equal(assets.length, 1, "the server lists the upload");
  assert.equal(assets[0].size, bytes.length, "the whole file arrived");
  assert.equal(Object.keys(state.canvases["canvas-b"].document.shapes).length, 1, "the shape drawn before");
  assertSameState(editor, state, ["canvas-b"]);
  assertExactlyOnce(state);
  say(`after Retry saving: the upload (${assets[0].size} B) and the shape on the server, once each; ${await screenshot(page, "d-2-storage-retried")}`);
}

async function unsavedEditQueuedAfterReload({ page, server, say }) {
  await tab(page, "canvas-c");
  await tool(page, "rect");
  await drag(page, 100, 100, 200, 180);
  await waitFor("the first shape to settle", async () => ((await snapshot(page)).pending === 0 ? true : null));
  // The page dies between keeping an edit (localStorage) and its durable enqueue: from here
  // the scheduler of this page never gets it.
  await page.evaluate(async (module) => {
    const { Scheduler } = await import(module);
    Scheduler.prototype.enqueue = () => new Promise(() => {});
  }, MODE === "worker" ? "/worker/index.js" : "/pkg/web/canvas_scheduler.js");
  await drag(page, 300, 100, 400, 180);
  let editor = await snapshot(page);
  assert.equal(editor.pending, 1, "the second shape is kept on the page, not yet in the ledger");
  say(`a shape kept on the page but never enqueued; ${await screenshot(page, "e-1-unsaved-before-reload")}`);

  await reload(page);
  editor = await waitFor("the kept shape to be queued again and settle", async () => {
    const s = await snapshot(page);
    return s.pending === 0 ? s : null;
  });
  assert.ok(editor.notices.includes("1 edit(s) the last page had not saved yet were queued again."), "a notice says so");
  const state = await adminState(server);
  assert.equal(Object.keys(state.canvases["canvas-c"].document.shapes).length, 2, "both shapes on the server");
  assertSameState(editor, state, ["canvas-c"]);
  assertExactlyOnce(state);
  say(`after the reload both shapes are on the server, once each; ${await screenshot(page, "e-2-unsaved-requeued")}`);
}

/** Whether leaving the page now would ask first (a cancelable `beforeunload` is prevented). */
const leavingAsks = (page) =>
  page.evaluate(() => {
    const event = new Event("beforeunload", { cancelable: true });
    dispatchEvent(event);
    return event.defaultPrevented;
  });

async function savedBadge({ page, server, say }) {
  const badge = async () => (await snapshot(page)).saved;
  assert.equal((await badge()).state, "saved", "a fresh editor has nothing unsaved");
  assert.equal(await leavingAsks(page), false, "leaving asks nothing while everything is saved");

  // Offline: the edit waits, the badge says it is being saved, and leaving asks first.
  await setOffline(page, true);
  await tab(page, "canvas-a");
  await tool(page, "rect");
  await drag(page, 100, 100, 200, 180);
  const saving = await waitFor("the badge to say Saving…", async () => ((await badge()).state === "saving" ? badge() : null));
  assert.match(saving.text, /^Saving… 1/);
  assert.equal(await leavingAsks(page), true, "leaving asks while an edit is unsaved");
  say(`offline: "${saving.text}"; ${await screenshot(page, "f-1-saving")}`);
  await setOffline(page, false);
  await waitFor("All changes saved", async () => ((await badge()).state === "saved" ? true : null));
  assert.equal(await leavingAsks(page), false);

  // A proxy refuses the next edit (an HTML 400): a dead letter. The badge names the canvas it
  // holds and offers retry and discard; retry, once the proxy is fixed, saves it.
  await admin(server, "/admin/faults", { proxyRefusal: true });
  await drag(page, 300, 100, 400, 180);
  const stuck = await waitFor("the badge to say 1 not saved", async () => ((await badge()).state === "not_saved" ? badge() : null));
  assert.equal(stuck.text, "1 not saved (dead_letter)");
  assert.equal(stuck.held.length, 1, JSON.stringify(stuck));
  assert.deepEqual(stuck.held[0].canvasIds, ["canvas-a"], "it names the canvas it holds");
  assert.deepEqual([...stuck.held[0].release].sort(), ["discard", "retry"], "and how to release it");
  assert.equal(await leavingAsks(page), true);
  say(`a dead letter: "${stuck.text}", holds ${stuck.held[0].canvasIds}; ${await screenshot(page, "f-2-dead-letter")}`);
  await admin(server, "/admin/faults", { proxyRefusal: false });
  await page.click("#saved button[data-action=retry]");
  const editor = await waitFor("All changes saved after retry", async () => {
    const s = await snapshot(page);
    return s.saved.state === "saved" && s.pending === 0 ? s : null;
  });
  const state = await adminState(server);
  assert.equal(Object.keys(state.canvases["canvas-a"].document.shapes).length, 2, "both shapes on the server");
  assertSameState(editor, state, ["canvas-a"]);
  assertExactlyOnce(state);
  say(`retried: "${editor.saved.text}"; ${await screenshot(page, "f-3-saved")}`);
}

// [name, test, prepare, what the engine's driver must be able to do]
const TESTS = [
  ["draw offline, reload, go online: server state equals editor state", drawOfflineReloadOnline],
  ["a conflict from a second client is rolled back with a visible notice", conflictRollsBack],
  ["an upload survives a reload", uploadSurvivesReload],
  ["a full disk: an edit it refused is kept and saved by Retry saving", storageFullKeepsEdits, smallQuota, "quota"],
  ["an edit kept on the page but never enqueued is queued again after a reload", unsavedEditQueuedAfterReload],
  ["the saved badge: Saving… offline, a dead letter names its canvas and retry saves it, beforeunload asks while unsaved", savedBadge],
];
const NEEDS = { quota: "an origin quota set through CDP (Storage.overrideQuotaForOrigin)" };

// ---- runner -------------------------------------------------------------------------------

const ENGINES = enginesToRun();
// EDITOR_TESTS=1,3 runs only those tests (numbered as in TESTS).
const ONLY = (process.env.EDITOR_TESTS ?? "").split(",").filter(Boolean).map(Number);
// EDITOR_MODES=worker runs only that mode: "page" (the scheduler in the page) and "worker"
// (worker mode, the editor's own scheduler worker).
const MODES = (process.env.EDITOR_MODES ?? "page,worker").split(",").filter(Boolean);
await mkdir(ARTIFACTS, { recursive: true });
print("e2e editor: compiling www/editor (tsc -p www/editor)");
buildEditor();
const statics = await serve();
let passed = 0;
let failed = 0;
let number = 0;
try {
  for (const engine of ENGINES) {
    ENGINE = engine;
    const browser = await launch(engine);
    print(`e2e editor: ${engine} ${browser.version}, pages from ${statics.url}, screenshots in ${ARTIFACTS}`);
    try {
      for (const mode of MODES) for (const [index, [name, test, prepare, needs]] of TESTS.entries()) {
        if (ONLY.length > 0 && !ONLY.includes(index + 1)) continue;
        MODE = mode;
        number += 1;
        const title = `${engine}, ${mode} mode: ${name}`;
        if (needs && !browser.can[needs]) {
          print(`ok ${number} - ${title} # SKIP ${unsupported(engine, NEEDS[needs])}`);
          continue;
        }
        const started = performance.now();
        const server = await startReferenceServer({ runApplyMs: 200 });
        const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
        const say = (line) => print(`  ${line}`);
        let page;
        try {
          const prepared = prepare ? await prepare({ context, statics }) : {};
          page = await openEditor(context, statics, server, `e2e-${index}-${Date.now()}`);
          // A test that hangs despite its bounded waits still ends.
          await Promise.race([
            test({ page, server, say, ...prepared }),
            sleep(120_000).then(() => {
              throw new Error("test took over 120 s");
            }),
          ]);
          passed += 1;
          print(`ok ${number} - ${title} (${((performance.now() - started) / 1000).toFixed(1)}s)`);
        } catch (error) {
          failed += 1;
          print(`not ok ${number} - ${title}: ${error.stack ?? error}`);
          if (page) await screenshot(page, `failed-${index + 1}`).catch(() => {});
        } finally {
          await context.close().catch(() => {});
          await server.close();
        }
      }
    } finally {
      await browser.close();
    }
  }
} finally {
  await statics.close();
}
print(`e2e editor: screenshots in ${ARTIFACTS}`);
print(`e2e editor: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
