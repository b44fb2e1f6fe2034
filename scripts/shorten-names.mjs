#!/usr/bin/env node
// Shortens the names the .wasm and its wasm-bindgen glue use to talk to each other, as a JS
// minifier shortens identifiers: `__wbg_keys_105f5c0857898f84` becomes `$a` in the module's
// import section and in the glue alike. Each such name carries 16 hex digits of hash that
// gzip cannot compress (about 2.6 KB gzipped of the .wasm, and as much again of the glue).
//
// Renamed: imports named `__wbg…`/`__wbindgen…`, and function exports named `__wbg…`,
// `__wbindgen…` or `wasm_bindgen_…` (closure adapters). The API's own exports
// (`scheduler_enqueue`, `probeStorage`, …) keep their names. Every renamed import must be
// found in the glue, and no new name may already be there: otherwise this stops and changes
// nothing.
//
// Usage: node scripts/shorten-names.mjs OUT_DIR   (a wasm-pack output directory)
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: shorten-names.mjs OUT_DIR");
  process.exit(2);
}
const wasmPath = join(dir, "canvas_scheduler_bg.wasm");
const bytes = readFileSync(wasmPath);

function readLeb(at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) return [value, at];
  }
}

function leb(value) {
  const out = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return Buffer.from(out);
}

function name(text) {
  const encoded = Buffer.from(text, "utf8");
  return Buffer.concat([leb(encoded.length), encoded]);
}

// `$` and letters: valid in JS identifiers and in wasm names, and not what wasm-bindgen or
// the glue's own identifiers look like (checked below).
const LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
function shortName(index) {
  let text = "";
  let rest = index;
  do {
    text = LETTERS[rest % LETTERS.length] + text;
    rest = Math.floor(rest / LETTERS.length) - 1;
  } while (rest >= 0);
  return `$${text}`;
}

const renames = new Map();
const imported = new Set();
function rename(old) {
  if (!renames.has(old)) renames.set(old, shortName(renames.size));
  return renames.get(old);
}

// A name as the binary format writes it: its length, then its UTF-8 bytes.
function readName(at) {
  const [length, start] = readLeb(at);
  return [bytes.subarray(start, start + length), start + length];
}

// The name an import or export gets: glue-internal ones are shortened, the API's are kept.
function newName(section, field, kind) {
  if (section === IMPORTS && /^__wbg|^__wbindgen/.test(field)) {
    imported.add(field);
    return rename(field);
  }
  if (section === EXPORTS && kind === 0 && /^__wbg|^__wbindgen|^wasm_bindgen_/.test(field)) {
    return rename(field);
  }
  return field;
}

// Rewrites the import or export section's entries (module name for imports, field name,
// then a kind byte and an index, which only function imports have here); every other
// section is copied as is.
const IMPORTS = 2;
const EXPORTS = 7;
function rewriteSection(section, start, end) {
  const parts = [];
  let [count, at] = readLeb(start);
  parts.push(leb(count));
  for (let i = 0; i < count; i++) {
    if (section === IMPORTS) {
      let module;
      [module, at] = readName(at);
      parts.push(leb(module.length), module);
    }
    let field;
    [field, at] = readName(at);
    const descStart = at;
    const kind = bytes[at++];
    const text = field.toString("utf8");
    if (section === IMPORTS && kind !== 0) {
      throw new Error(`import ${text} is not a function (kind ${kind})`);
    }
    [, at] = readLeb(at);
    parts.push(name(newName(section, text, kind)), bytes.subarray(descStart, at));
  }
  if (at !== end) throw new Error(`section ${section} has trailing bytes`);
  return Buffer.concat(parts);
}

if (bytes.readUInt32LE(0) !== 0x6d736100) throw new Error(`${wasmPath} is not a wasm module`);
const out = [bytes.subarray(0, 8)];
let at = 8;
while (at < bytes.length) {
  const id = bytes[at];
  const [size, start] = readLeb(at + 1);
  const end = start + size;
  if (id === IMPORTS || id === EXPORTS) {
    const body = rewriteSection(id, start, end);
    out.push(Buffer.from([id]), leb(body.length), body);
  } else {
    out.push(bytes.subarray(at, end));
  }
  at = end;
}
if (renames.size === 0) {
  console.log(`shorten-names: ${dir}: nothing to shorten (already done?)`);
  process.exit(0);
}

// The glue: every .js and .d.ts beside the module (snippets never name these).
const glue = readdirSync(dir)
  .filter((file) => file.endsWith(".js") || file.endsWith(".d.ts"))
  .map((file) => ({ path: join(dir, file), text: readFileSync(join(dir, file), "utf8") }));
const escape = (text) => text.replace(/[$]/g, "\\$");
const token = (names) =>
  new RegExp(`(?<![\\w$])(${names.map(escape).join("|")})(?![\\w$])`, "g");
const taken = glue.filter(({ text }) => token([...renames.values()]).test(text));
if (taken.length > 0) throw new Error(`a short name is already used in ${taken[0].path}`);
const found = new Set();
const pattern = token([...renames.keys()].sort((a, b) => b.length - a.length));
for (const file of glue) {
  file.text = file.text.replace(pattern, (old) => {
    found.add(old);
    return renames.get(old);
  });
}
const missing = [...imported].filter((old) => !found.has(old));
if (missing.length > 0) throw new Error(`the glue does not provide ${missing.join(", ")}`);

for (const file of glue) writeFileSync(file.path, file.text);
const shortened = Buffer.concat(out);
writeFileSync(wasmPath, shortened);
console.log(
  `shorten-names: ${dir}: ${renames.size} names, ${bytes.length} -> ${shortened.length} bytes`,
);
