#!/usr/bin/env node
// Makes a wasm-pack output directory's declarations stand alone: wasm-bindgen declares
// `[Symbol.dispose](): void` on every exported class, which exists only in TypeScript's
// `esnext.disposable` lib, so an app whose tsconfig `lib` lacks it (`["ES2022", "DOM"]`, as
// Vite's templates have) fails `tsc` on the package's .d.ts (TS2550) unless it skips lib
// checks. A `/// <reference lib="esnext.disposable" />` at the top brings that lib in with the
// declarations, as @types packages do. Idempotent.
//
// Usage: node scripts/declarations.mjs OUT_DIR   (a wasm-pack output directory)
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: declarations.mjs OUT_DIR");
  process.exit(2);
}
const path = join(dir, "canvas_scheduler.d.ts");
const text = readFileSync(path, "utf8");
const REFERENCE = '/// <reference lib="esnext.disposable" />\n';
if (!text.includes("Symbol.dispose")) {
  console.log(`${path}: no Symbol.dispose, unchanged`);
} else if (text.startsWith(REFERENCE)) {
  console.log(`${path}: already references esnext.disposable`);
} else {
  writeFileSync(path, REFERENCE + text);
  console.log(`${path}: references lib esnext.disposable (for [Symbol.dispose])`);
}
