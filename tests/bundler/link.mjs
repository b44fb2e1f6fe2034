// The bundler target, loaded as a bundler would load it (ES module integration of the .wasm,
// here node's --experimental-wasm-modules): every import the module names must be one the
// glue provides, and calls must cross both ways. IndexedDB does not exist in node, so only
// what needs no storage is called. Run by scripts/test after the build.
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
// Storage is reached through the snippets and the glue's imports; node has no IndexedDB,
// so both fail the way they fail in any environment without it: a coded error that says so
// in one line (not a JS stack spelled into the message).
const noStorage = (error) => {
  assert.equal(error.name, "CanvasSchedulerError");
  assert.equal(error.code, "storage_unavailable");
  assert.match(error.message, /NotSupportedError: IndexedDB is not available in this environment/);
  assert.doesNotMatch(error.message, /\n/);
  // The code is the error's `code`; the message does not say it again.
  assert.doesNotMatch(error.message, /storage_unavailable/);
  return true;
};
await assert.rejects(api.probeStorage("probe-link"), noStorage);
await assert.rejects(
  api.Scheduler.open({ database: "ledger", endpoint: "http://127.0.0.1:9/v1" }),
  noStorage,
);
console.log(`bundler link: ok in ${(performance.now() - started).toFixed(0)} ms`);
