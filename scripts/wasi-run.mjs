// Cargo's runner for wasm32-wasip1 test binaries (scripts/wasi-test): runs one under node's
// WASI with the process's arguments and environment, and exits with its exit code. A binary
// that imports anything besides WASI (a browser test) is refused with exit code 3.
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
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exit(wasi.start(instance));
