// The bundler target, loaded as a bundler would load it (ES module integration of the .wasm,
// here node's --experimental-wasm-modules): every import the module names must be one the
// glue provides, and calls must cross both ways. It checks what scripts/build's name
// shortening rewrote in this target's module and glue; IndexedDB does not exist in node, so
// only what needs no storage is called. Run by scripts/test after the build.
import assert from "node:assert/strict";

const started = performance.now();
const api = await import(new URL("../../pkg/bundler/canvas_scheduler.js", import.meta.url));
assert.deepEqual(Object.keys(api).sort(), ["Scheduler", "probeStorage"]);

// Options are checked in wasm before storage is touched: a JS object in, an Error out.
await assert.rejects(api.Scheduler.open({ database: "ledger" }), (error) => {
  assert.equal(error.name, "CanvasSchedulerError");
  assert.equal(error.code, "invalid_options");
  assert.match(error.message, /endpoint/);
  return true;
});
// Storage is reached through the snippets and the renamed imports; node has no IndexedDB,
// so the probe fails the way it fails in any environment without it.
await assert.rejects(api.probeStorage("probe-link"), (error) => {
  assert.equal(error.name, "CanvasSchedulerError");
  assert.equal(error.code, "storage_unavailable");
  return true;
});
console.log(`bundler link: ok in ${(performance.now() - started).toFixed(0)} ms`);
