// What `npm pack` puts in the tarball, checked against what the package's modules import.
// From every file package.json points at (`exports`, `types`, `module`), it follows each
// relative import of a .js module (static and dynamic `import`, `export ... from`, and
// `new URL("...", import.meta.url)`, the way the web glue finds its .wasm and worker mode's
// proxy its worker module, `new Worker(new URL("./worker.js", import.meta.url))`), and each relative
// import of a .d.ts, recursively (the glue imports its JS snippets, which may import
// others), and names every such file the tarball lacks. A bare import (another package) is
// named too: the package has no dependencies, so a user's bundler could not resolve it.
//
// Run as a script (`node tests/package/contents.mjs`, by scripts/test after the build) it
// lists the tarball with `npm pack --dry-run --json` and exits 1 if anything is missing;
// tests/package/run.mjs calls `missingFiles` on the tarball it packs.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Repository root. */
export const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));

const JS_PATTERNS = [
  // import x from "s"; import { a } from "s"; export { a } from "s"; export * from "s"
  /\b(?:import|export)\s[^;'"`]*?\bfrom\s*(["'])([^"']+)\1/g,
  // import "s";
  /\bimport\s*(["'])([^"']+)\1/g,
  // import("s")
  /\bimport\(\s*(["'])([^"']+)\1\s*\)/g,
  // new URL("s", import.meta.url)
  /\bnew\s+URL\(\s*(["'])([^"']+)\1\s*,\s*import\.meta\.url\s*\)/g,
];
const DTS_PATTERNS = [
  /\b(?:import|export)\s[^;'"`]*?\bfrom\s*(["'])([^"']+)\1/g,
  /\bimport\(\s*(["'])([^"']+)\1\s*\)/g,
  /\/\/\/\s*<reference\s+path=(["'])([^"']+)\1/g,
];

/**
 * What a module's text names: `{ specifier, url }` per distinct import, `url` true for a
 * `new URL(..., import.meta.url)` argument (always relative to the module, "./" or not).
 */
function specifiers(path, text) {
  const declaration = path.endsWith(".d.ts");
  const patterns = declaration ? DTS_PATTERNS : JS_PATTERNS;
  const found = new Map();
  patterns.forEach((pattern, index) => {
    const url = !declaration && index === 3;
    for (const match of text.matchAll(pattern)) found.set(match[2], (found.get(match[2]) ?? false) || url);
  });
  return [...found].map(([specifier, url]) => ({ specifier, url }));
}

/** Every file path (relative, no "./") package.json's `exports`, `types` and `module` name. */
export function entryFiles(manifest) {
  const entries = new Set();
  const visit = (value) => {
    if (typeof value === "string") entries.add(normalize(value).replace(/^\.\//, ""));
    else if (value && typeof value === "object") Object.values(value).forEach(visit);
  };
  visit(manifest.exports);
  visit(manifest.types);
  visit(manifest.module);
  visit(manifest.main);
  return [...entries].filter((path) => !path.includes("*"));
}

/**
 * The problems with a tarball holding `files` (paths relative to the package root, as npm pack
 * lists them), reading module texts from `root`: one line per entry or imported file the
 * tarball lacks, and per bare import. Empty when the package is whole.
 */
export function missingFiles(files, root = ROOT) {
  const packed = new Set(files);
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const problems = [];
  const seen = new Set();
  const queue = entryFiles(manifest).map((path) => ({ path, from: "package.json" }));
  while (queue.length > 0) {
    const { path, from } = queue.shift();
    if (seen.has(path)) continue;
    seen.add(path);
    if (!packed.has(path)) {
      problems.push(`${path} (imported by ${from}) is not in the tarball`);
      continue;
    }
    if (!path.endsWith(".js") && !path.endsWith(".d.ts")) continue;
    const text = readFileSync(join(root, path), "utf8");
    for (const { specifier, url } of specifiers(path, text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(specifier)) continue; // a URL, not a file
      if (!url && !specifier.startsWith("./") && !specifier.startsWith("../")) {
        problems.push(`${path} imports the package "${specifier}", which is not a dependency`);
        continue;
      }
      let target = normalize(join(dirname(path), specifier));
      // A .d.ts names its imports without an extension, or with the .js the module has.
      if (path.endsWith(".d.ts")) target = declarationOf(root, target);
      queue.push({ path: target, from: path });
    }
  }
  return { problems, checked: [...seen].sort() };
}

/** The declaration file a .d.ts import of `target` means. */
function declarationOf(root, target) {
  const stem = target.replace(/\.(js|mjs|d\.ts)$/, "");
  for (const candidate of [`${stem}.d.ts`, join(stem, "index.d.ts")]) {
    if (existsSync(join(root, candidate))) return candidate;
  }
  return `${stem}.d.ts`;
}

/** The files `npm pack --dry-run --json` would put in the tarball of `root`. */
export function dryRunFiles(root = ROOT) {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: root,
    encoding: "utf8",
    timeout: 120_000,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return JSON.parse(out)[0].files.map((file) => file.path);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const files = dryRunFiles();
  const { problems, checked } = missingFiles(files);
  if (problems.length > 0) {
    console.error(`npm pack --dry-run: the tarball (${files.length} files) lacks what the package imports:`);
    for (const problem of problems) console.error(`  ${problem}`);
    process.exit(1);
  }
  console.log(`npm pack --dry-run: ${files.length} files; all ${checked.length} entry and imported files are in it`);
}
