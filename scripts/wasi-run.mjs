// Cargo's runner for wasm32-wasip1 test binaries (scripts/wasi-test): runs one under node's
// WASI with the process's arguments and environment, and exits with its exit code. A binary
// that imports anything besides WASI (a browser test) is refused with exit code 3.
//
// Each WASI import is handed to the module wrapped in a plain JS function. node 20 gives its
// imports as bound native functions, and V8 11.3 calling those straight from wasm segfaults in
// some runs, deterministically for a given binary (in a KeyedLoadIC under the test harness's
// exit path, after every test had run). Measured on one build (2026-12-04, the binary CI saw
// crash): partial_enqueue crashed 6 of 6 single-threaded runs with the bound imports and 0 of
// 20 in either mode wrapped; fuzz_inputs with FUZZ_SEED 1–40 passed wrapped in both modes
// (seed 6 crashed unwrapped). scripts/wasi-node still retries a crash once, in the other mode.
import { readFile } from "node:fs/promises";
import { WASI } from "node:wasi";

const [file, ...args] = process.argv.slice(2);
const module = await WebAssembly.compile(await readFile(file));
const foreign = WebAssembly.Module.imports(module).filter((entry) => entry.module !== "wasi_snapshot_preview1");
if (foreign.length > 0) {
  const names = foreign.slice(0, 3).map((entry) => `${entry.module}.${entry.name}`);
  console.error(`${file}: not a WASI program (imports ${names.join(", ")})`);
  process.exit(3);
}
const wasi = new WASI({ version: "preview1", args: [file, ...args], env: process.env, returnOnExit: true });
const bound = wasi.getImportObject().wasi_snapshot_preview1;
const wrapped = {};
for (const [name, call] of Object.entries(bound)) {
  wrapped[name] = (...values) => call(...values);
}
const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wrapped });
process.exit(wasi.start(instance));
