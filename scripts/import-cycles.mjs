#!/usr/bin/env node
// Import circles among source files: walks the `use` declarations of every Rust crate root
// below (`crate::`, `super::`, `self::` and child-module paths, each resolved to the deepest
// module file it names: an item re-exported by a `mod.rs` counts as that `mod.rs`), and the
// relative `import … from` / `export … from` lines of the JavaScript below; prints each
// strongly connected component of more than one file, and exits 1 when one is not covered
// by a line of scripts/import-cycles.allow, or when a line there covers no circle any more
// (a circle that went away takes its line with it).
//
//   node scripts/import-cycles.mjs            check (scripts/test runs this)
//   node scripts/import-cycles.mjs --edges    also print the edges inside each circle
//
// Like the prototype it ports, it reads `use` lines only: a path written out in code
// (`crate::a::f()`) is not an edge, and an inline `#[cfg(test)] mod tests { … }` block and
// everything after it is left out.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, normalize, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const RUST_ROOTS = ["src", "core/src", "testing/src"];
const JS_ROOTS = ["src", "worker", "server/src"];
const ALLOW = join(ROOT, "scripts", "import-cycles.allow");

/** Every file below `dir` (relative to ROOT) whose name passes `keep`, as ROOT-relative paths. */
function walk(dir, keep) {
  const found = [];
  const visit = (at) => {
    for (const entry of readdirSync(join(ROOT, at), { withFileTypes: true })) {
      const path = `${at}/${entry.name}`;
      if (entry.isDirectory() && entry.name !== "node_modules") visit(path);
      else if (entry.isFile() && keep(entry.name)) found.push(path);
    }
  };
  if (existsSync(join(ROOT, dir))) visit(dir);
  return found.sort();
}

// ---- Rust: a crate root's module paths, and its `use` trees.

/** Module path ("a::b") → file, for the crate rooted at `root` (lib.rs/main.rs/mod.rs = its dir). */
function rustModules(root) {
  const modules = new Map();
  for (const file of walk(root, (name) => name.endsWith(".rs"))) {
    const parts = file.slice(root.length + 1, -3).split("/");
    if (["mod", "lib", "main"].includes(parts[parts.length - 1])) parts.pop();
    modules.set(parts.join("::"), file);
  }
  return modules;
}

/** Tokens of a use tree: identifiers (raw ones unprefixed), `::`, braces, commas, `*`. */
function tokens(text) {
  return text.match(/r#\w+|\w+|::|[{},*]/g)?.map((t) => t.replace(/^r#/, "")) ?? [];
}

/** Every path a use tree names (`a::{b, c::{self, d}}` → a::b, a::c, a::c::d), `as` dropped. */
function expand(list) {
  let at = 0;
  const tree = (prefix, nested) => {
    const path = [...prefix];
    const out = [];
    let first = true;
    while (at < list.length) {
      const token = list[at];
      if (token === "{") {
        at += 1;
        while (at < list.length && list[at] !== "}") {
          out.push(...tree(path, true));
          if (list[at] === ",") at += 1;
        }
        at += 1;
        return out;
      }
      if (token === "," || token === "}") break;
      at += 1;
      if (token === "::" || token === "*") continue;
      if (token === "as") {
        at += 1; // the alias
        continue;
      }
      // `{self, …}`: the module the braces follow (a leading `self::` stays, for the caller).
      if (!(token === "self" && nested && first)) path.push(token);
      first = false;
    }
    out.push(path);
    return out;
  };
  const all = [];
  while (at < list.length) {
    all.push(...tree([], false));
    at += 1; // a stray `,` or `}`
  }
  return all;
}

const USE = /^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?use[ \t]+([^;]+);/gm;

/** The files a Rust file's `use` declarations reach inside its own crate. */
function rustEdges(root, modules, module, file) {
  let text = readFileSync(join(ROOT, file), "utf8");
  text = text.split(/#\[cfg\(test\)\]\s*mod tests\s*\{/)[0];
  text = text.replace(/\/\/[^\n]*/g, "");
  const here = module === "" ? [] : module.split("::");
  const targets = new Set();
  for (const match of text.matchAll(USE)) {
    for (const path of expand(tokens(match[1]))) {
      let target;
      if (path[0] === "crate") target = path.slice(1);
      else if (path[0] === "super") {
        target = here.slice(0, -1);
        let rest = path.slice(1);
        while (rest[0] === "super") {
          target = target.slice(0, -1);
          rest = rest.slice(1);
        }
        target = [...target, ...rest];
      } else if (path[0] === "self") target = [...here, ...path.slice(1)];
      else if (modules.has([...here, path[0]].join("::"))) target = [...here, ...path];
      else continue; // another crate, std, or an item in scope
      for (let n = target.length; n >= 0; n -= 1) {
        const found = modules.get(target.slice(0, n).join("::"));
        if (found !== undefined) {
          if (found !== file) targets.add(found);
          break;
        }
      }
    }
  }
  return targets;
}

// ---- JavaScript: relative static imports and re-exports.

const IMPORT = /^[ \t]*(?:import|export)\b[^;'"]*?\bfrom[ \t]*["']([^"']+)["']|^[ \t]*import[ \t]*["']([^"']+)["']/gm;

function jsEdges(file, known) {
  const targets = new Set();
  for (const match of readFileSync(join(ROOT, file), "utf8").matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2];
    if (!specifier.startsWith(".")) continue;
    const target = normalize(join(dirname(file), specifier));
    if (known.has(target) && target !== file) targets.add(target);
  }
  return targets;
}

// ---- The graph and its strongly connected components (Tarjan, iterative).

function graph() {
  const edges = new Map();
  for (const root of RUST_ROOTS) {
    const modules = rustModules(root);
    for (const [module, file] of modules) edges.set(file, rustEdges(root, modules, module, file));
  }
  const js = JS_ROOTS.flatMap((root) => walk(root, (name) => /\.m?js$/.test(name)));
  const known = new Set(js);
  for (const file of js) edges.set(file, jsEdges(file, known));
  return edges;
}

function circles(edges) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let next = 0;
  for (const start of edges.keys()) {
    if (index.has(start)) continue;
    const work = [[start, [...edges.get(start)], 0]];
    index.set(start, next);
    low.set(start, next);
    next += 1;
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const [node, out] = frame;
      if (frame[2] < out.length) {
        const to = out[frame[2]];
        frame[2] += 1;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next);
          next += 1;
          stack.push(to);
          onStack.add(to);
          work.push([to, [...(edges.get(to) ?? [])], 0]);
        } else if (onStack.has(to)) {
          low.set(node, Math.min(low.get(node), index.get(to)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(node)));
      }
      if (low.get(node) === index.get(node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== node);
        if (component.length > 1) found.push(component.sort());
      }
    }
  }
  return found.sort((a, b) => b.length - a.length || a[0].localeCompare(b[0]));
}

/** The allow-list: one circle a line (its files, space-separated); `#` starts a comment. */
function allowed() {
  if (!existsSync(ALLOW)) return [];
  return readFileSync(ALLOW, "utf8")
    .split("\n")
    .map((line, at) => ({ line: at + 1, files: line.replace(/#.*/, "").trim().split(/\s+/).filter(Boolean) }))
    .filter((entry) => entry.files.length > 0);
}

const edges = graph();
const found = circles(edges);
const allow = allowed();
const covering = (circle) => allow.find((entry) => circle.every((file) => entry.files.includes(file)));
let failed = false;
for (const circle of found) {
  const entry = covering(circle);
  console.log(`${entry ? "allowed" : "NEW    "} ${circle.length} ${circle.join(" ")}`);
  if (!entry) failed = true;
  if (process.argv.includes("--edges") || !entry) {
    for (const from of circle) {
      for (const to of [...edges.get(from)].sort()) if (circle.includes(to)) console.log(`    ${from} -> ${to}`);
    }
  }
}
for (const entry of allow) {
  if (!found.some((circle) => circle.every((file) => entry.files.includes(file)))) {
    console.log(`stale   ${relative(ROOT, ALLOW)}:${entry.line} covers no circle now: delete the line`);
    failed = true;
  }
}
const edgeCount = [...edges.values()].reduce((sum, out) => sum + out.size, 0);
console.log(`files ${edges.size}, edges ${edgeCount}, circles ${found.length} (${found.filter((c) => !covering(c)).length} not allowed)`);
if (failed) {
  console.log("A new circle: break it (a mod.rs declares and re-exports; nothing a child uses is defined in it).");
  process.exit(1);
}
