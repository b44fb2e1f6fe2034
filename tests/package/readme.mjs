// The README's quick start, run as written. Its three code blocks (the `js` server, the `ts`
// page, the `sh` lines that run them) are read from README.md's "Quick start" section and
// used verbatim, with one substitution: the server's port (its `.listen(PORT`, also named in
// the proxy line) becomes a free port, so parallel runs do not collide. Then, as a reader would:
//   - the packages as the README's Install section makes them: `npm pack` of this repository
//     (after scripts/build) and of server/, installed into a fresh app outside the repository
//     (`npm init -y`, then `npm install` of both tarballs, as tests/package/run.mjs does, and
//     `npm install -D vite` at the version the package test's apps pin). better-sqlite3 is
//     linked from server/node_modules, as tests/package/server.mjs does (its install script
//     would fetch or build a native binary);
//   - the two files written as the README names them, the `echo` lines run with bash;
//   - main.ts type-checked (tsc --strict, moduleResolution bundler) and server.mjs checked from
//     its JS (checkJs, strict) against the installed declarations;
//   - `node server.mjs` on 127.0.0.1 and Vite's dev server (`npx vite`: its binary, on
//     127.0.0.1 and a free port), the page opened in headless Chromium (www/harness.mjs).
// It checks what the README says: the console shows `whenSaved()` resolving to
// { settled: 1, blocked: [] }; app.sqlite holds one row, for one operation, with the kind the
// page enqueued; the kit stored one answer. Then a reload: one more edit, two rows, no key and
// no operation applied twice. The quick start's code must stay within 15 lines.
// Beside it: every relative link of README.md and docs/*.md points to a file and a heading
// that exist (tests/package/markdown.mjs), and every other `ts` block of the README and of the
// docs written for editors type-checks against the installed package (tests/package/snippets.mjs).
// Every step has a timeout. KEEP_README_APP=1 keeps the temporary directory (its path is printed).
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchChromium } from "../../www/harness.mjs";
import { ROOT } from "./contents.mjs";
import { brokenLinks, fencedBlocks } from "./markdown.mjs";
import { SNIPPET_DOCUMENTS, writeSnippets } from "./snippets.mjs";

const MAX_LINES = 15;
const INSTALL_FLAGS = ["--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];
const APPS = join(ROOT, "tests", "package", "apps");
const started = performance.now();
const seconds = (since) => ((performance.now() - since) / 1000).toFixed(1);
const say = (line) => console.log(`readme: ${line}`);

/** Runs a command with a timeout; resolves to its stdout, rejects with its output's tail. */
function run(command, args, { cwd, timeoutMs }) {
  const since = performance.now();
  const shown = `${command} ${args.join(" ")}`;
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 64 << 20, env: { ...process.env, CI: "1" } },
      (error, stdout, stderr) => {
        if (error) {
          const why = error.killed ? `timed out after ${timeoutMs / 1000}s` : `exit ${error.code}`;
          const tail = `${stdout}\n${stderr}`.trim().split("\n").slice(-40).join("\n");
          reject(new Error(`${shown} (in ${cwd}): ${why}\n${tail}`));
          return;
        }
        say(`${shown}: ok in ${seconds(since)}s`);
        resolve(stdout);
      },
    );
  });
}

/** Code lines of a block: not blank, not only a comment. */
const codeLines = (block) => block.split("\n").filter((line) => line.trim() !== "" && !/^\s*\/\//.test(line));

/**
 * The "Quick start" section's fenced blocks (exactly one js, one ts, one sh), checked for what
 * this test relies on, and the server's port.
 */
export function quickStart(readme) {
  const section = /^## Quick start\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1];
  assert.ok(section, 'README.md has no "## Quick start" section followed by another section');
  const blocks = {};
  for (const { language, body } of fencedBlocks(section)) {
    assert.ok(["js", "ts", "sh"].includes(language), `quick start: a \`${language}\` block (expected js, ts, sh)`);
    assert.ok(!(language in blocks), `quick start: more than one \`${language}\` block`);
    blocks[language] = body;
  }
  for (const language of ["js", "ts", "sh"]) assert.ok(language in blocks, `quick start: no \`${language}\` block`);
  for (const name of ["`server.mjs`", "`main.ts`"]) assert.ok(section.includes(name), `quick start: the text names ${name}`);
  const { js: server, ts: page, sh: shell } = blocks;
  assert.match(shell, /^node server\.mjs\b/m, "quick start: the sh block runs `node server.mjs`");
  assert.match(shell, /\bnpx vite\b/, "quick start: the sh block runs `npx vite`");
  assert.match(shell, /src="\/main\.ts"/, "quick start: index.html loads /main.ts");
  const port = /\.listen\((\d+)/.exec(server)?.[1];
  assert.ok(port, "quick start: the server block listens with .listen(PORT, ...)");
  assert.ok(shell.includes(`127.0.0.1:${port}`), `quick start: the proxy line names the server's port ${port}`);
  const kind = /operationType: "([^"]+)"/.exec(page)?.[1];
  assert.ok(kind, "quick start: the page enqueues an operationType");
  const lines = codeLines(server).length + codeLines(page).length;
  assert.ok(lines <= MAX_LINES, `the quick start's code is ${lines} lines, more than ${MAX_LINES}`);
  say(`quick start: ${codeLines(server).length} lines of server, ${codeLines(page).length} of page (${lines} <= ${MAX_LINES})`);
  return { server, page, shell, port, kind };
}

/** Every relative link of README.md and docs/*.md resolves. */
async function checkLinks() {
  const docs = (await readdir(join(ROOT, "docs"))).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`);
  const documents = ["README.md", ...docs];
  const broken = documents.flatMap((name) => brokenLinks(join(ROOT, name), ROOT));
  assert.deepEqual(broken, [], `links that point nowhere:\n  ${broken.join("\n  ")}`);
  say(`links: every relative link of ${documents.join(", ")} resolves`);
}

/** A port free on 127.0.0.1 just now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts a child process; resolves to { stop } once `ready()` is true, rejects if it exits first. */
async function startProcess(name, args, cwd, ready, timeoutMs) {
  const child = spawn(process.execPath, args, { cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "1" } });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise((_, reject) =>
    child.once("exit", (code, signal) => reject(new Error(`${name} exited (${code ?? signal}) before it was ready:\n${output}`))),
  );
  exited.catch(() => {});
  const polled = (async () => {
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; ) {
      if (await ready().catch(() => false)) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`${name} was not ready within ${timeoutMs / 1000}s:\n${output}`);
  })();
  try {
    await Promise.race([polled, exited]);
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  say(`${name} (pid ${child.pid}) is up`);
  return {
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const force = setTimeout(() => child.kill("SIGKILL"), 5_000);
        child.once("exit", () => (clearTimeout(force), resolve()));
        child.kill("SIGTERM");
      }),
  };
}

/** The fresh app, `<base>/my-editor`, with both tarballs and Vite installed. */
async function makeApp(base) {
  const pack = ["pack", "--json", "--ignore-scripts", "--pack-destination", base];
  const [client] = JSON.parse(await run("npm", pack, { cwd: ROOT, timeoutMs: 120_000 }));
  const [kit] = JSON.parse(await run("npm", pack, { cwd: join(ROOT, "server"), timeoutMs: 60_000 }));
  const app = join(base, "my-editor");
  await mkdir(app);
  await run("npm", ["init", "-y"], { cwd: app, timeoutMs: 60_000 });
  const tarballs = [join(base, client.filename), join(base, kit.filename)];
  await run("npm", ["install", ...tarballs, ...INSTALL_FLAGS], { cwd: app, timeoutMs: 300_000 });
  // And vite-plugin-wasm, which only the bundler entry's Vite configuration in
  // docs/installing.md imports (a snippet checked below). Pinned as the package test's apps are.
  const pinned = async (name, dep) => JSON.parse(await readFile(join(APPS, name, "package.json"), "utf8")).devDependencies[dep];
  const dev = [`vite@${await pinned("web-vite", "vite")}`, `vite-plugin-wasm@${await pinned("bundler-vite", "vite-plugin-wasm")}`];
  await run("npm", ["install", "-D", ...dev, ...INSTALL_FLAGS], { cwd: app, timeoutMs: 300_000 });
  // Linked last: a later `npm install` would prune it.
  for (const dep of ["better-sqlite3", "bindings", "file-uri-to-path"]) {
    await symlink(join(ROOT, "server", "node_modules", dep), join(app, "node_modules", dep));
  }
  return app;
}

/** main.ts, server.mjs and the docs' snippets, each with tsc against the installed package. */
async function typeCheck(app) {
  const strict = { strict: true, noEmit: true, skipLibCheck: false, target: "ES2022" };
  const browser = { module: "ESNext", moduleResolution: "bundler", lib: ["ES2022", "DOM"], types: [] };
  const node = { allowJs: true, checkJs: true, module: "nodenext", moduleResolution: "nodenext", types: ["node"], typeRoots: [join(ROOT, "node_modules", "@types")] };
  await writeFile(join(app, "shims.d.ts"), 'declare module "better-sqlite3";\n');
  const snippets = await writeSnippets(ROOT, join(app, "snippets"));
  assert.ok(snippets.length >= 6, `only ${snippets.length} ts blocks found in ${SNIPPET_DOCUMENTS.join(", ")}`);
  const configs = {
    "tsconfig.page.json": { compilerOptions: { ...strict, ...browser }, files: ["main.ts"] },
    "tsconfig.server.json": { compilerOptions: { ...strict, ...node }, files: ["server.mjs", "shims.d.ts"] },
    // skipLibCheck: the libraries' own declarations (Vite's want Node's) are not what is
    // checked here; the package's are, with main.ts.
    "tsconfig.snippets.json": { compilerOptions: { ...strict, ...browser, skipLibCheck: true }, include: ["snippets"] },
  };
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  for (const [name, config] of Object.entries(configs)) {
    await writeFile(join(app, name), JSON.stringify(config));
    await run(process.execPath, [tsc, "-p", name], { cwd: app, timeoutMs: 120_000 });
  }
  say(`type-checked: main.ts, server.mjs, and ${snippets.length} ts blocks of ${SNIPPET_DOCUMENTS.join(", ")}`);
}

/** What the quick start's server has written: its rows and the kit's stored answers. */
function stored(app) {
  const Database = createRequire(join(ROOT, "server", "package.json"))("better-sqlite3");
  const db = new Database(join(app, "app.sqlite"), { readonly: true, fileMustExist: true });
  try {
    const edits = db.prepare("SELECT key, body FROM edits").all().map(({ key, body }) => ({ key, body: JSON.parse(body) }));
    const outcomes = db.prepare("SELECT key, state, answer FROM csk_outcomes").all();
    return { edits, outcomes: outcomes.map(({ key, state, answer }) => ({ key, state, outcome: JSON.parse(answer ?? "null")?.outcome })) };
  } finally {
    db.close();
  }
}

/** Opens the page; resolves to { whenSaved(count), errors, submits(), close }. */
async function openPage(browser, url) {
  const context = await browser.newContext();
  const tab = await context.newPage();
  const errors = [];
  const saved = [];
  let submits = 0;
  let heard = () => {};
  tab.on("pageerror", (error) => errors.push(error.message));
  tab.on("request", (request) => {
    if (request.method() === "POST" && request.url().endsWith("/v1/requests")) submits += 1;
  });
  tab.on("console", async (message) => {
    say(`page: ${message.text()}`);
    const args = message.args();
    const value = args.length === 1 ? await args[0].jsonValue().catch(() => null) : null;
    if (value && typeof value === "object" && "settled" in value && "blocked" in value) (saved.push(value), heard());
  });
  /** The `count`th whenSaved() result the page logged (within 90 s). */
  const whenSaved = (count, what) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what}: no whenSaved() result in the console within 90s; page errors: ${errors.join("; ")}`)), 90_000);
      heard = () => {
        if (saved.length >= count) (clearTimeout(timer), resolve(saved[count - 1]));
      };
      heard();
    });
  await tab.goto(url, { timeout: 60_000 });
  return { whenSaved, errors, submits: () => submits, reload: () => tab.reload({ timeout: 60_000 }), close: () => context.close() };
}

/** The page saves one edit, then one more after a reload; each reaches the server once. */
async function drive(browser, url, app, kind) {
  const page = await openPage(browser, url);
  try {
    const first = await page.whenSaved(1, "the first load");
    assert.deepEqual(first, { settled: 1, blocked: [] }, "whenSaved() resolves as the README's comment says");
    let state = stored(app);
    assert.equal(state.edits.length, 1, `app.sqlite holds one row: ${JSON.stringify(state.edits)}`);
    const [edit] = state.edits;
    assert.equal(edit.body.id, edit.key, "the row is the request under its idempotency key");
    assert.equal(edit.body.operationIds.length, 1, "one operation in the request");
    assert.equal(edit.body.kind, kind, "the request carries the kind the page enqueued");
    assert.deepEqual(state.outcomes, [{ key: edit.key, state: "done", outcome: "applied" }], "the kit stored one answer: applied");
    say(`first load: saved ${JSON.stringify(first)}, one row (${edit.key}), ${page.submits()} submit(s)`);

    await page.reload();
    const second = await page.whenSaved(2, "the reload");
    assert.deepEqual(second.blocked, [], "nothing blocked after the reload");
    state = stored(app);
    assert.equal(state.edits.length, 2, `two rows after a reload: ${JSON.stringify(state.edits)}`);
    const operations = state.edits.flatMap(({ body }) => body.operationIds);
    assert.equal(new Set(operations).size, operations.length, `no operation applied twice: ${operations}`);
    assert.equal(new Set(state.edits.map(({ key }) => key)).size, 2, "two keys");
    assert.deepEqual(state.outcomes.map(({ outcome }) => outcome), ["applied", "applied"], "the kit stored two answers: applied");
    assert.deepEqual(page.errors, [], "no page error");
    say(`reload: saved ${JSON.stringify(second)}, two rows, two operations, each once (${page.submits()} submit(s) in all)`);
  } finally {
    await page.close();
  }
}

async function main() {
  for (const target of ["web", "bundler"]) {
    await readFile(join(ROOT, "pkg", target, "canvas_scheduler.js")).catch(() => {
      throw new Error(`pkg/${target} is missing: run scripts/build (both targets) first`);
    });
  }
  await checkLinks();
  const { server, page, shell, port, kind } = quickStart(await readFile(join(ROOT, "README.md"), "utf8"));
  // The one substitution: the server's port, wherever the blocks name it.
  const kitPort = await freePort();
  const withPort = (text) => text.replace(new RegExp(`\\b${port}\\b`, "g"), String(kitPort));

  const base = await mkdtemp(join(tmpdir(), "canvas-scheduler-readme-"));
  say(`app in ${base}/my-editor`);
  const running = [];
  let browser;
  try {
    const app = await makeApp(base);
    await writeFile(join(app, "server.mjs"), withPort(server));
    await writeFile(join(app, "main.ts"), page);
    const echoes = withPort(shell)
      .split("\n")
      .filter((line) => line.startsWith("echo "));
    assert.ok(echoes.length >= 2, "quick start: the sh block writes index.html and vite.config.js with echo");
    await run("bash", ["-euc", echoes.join("\n")], { cwd: app, timeoutMs: 10_000 });
    await typeCheck(app);

    // `node server.mjs & npx vite`, both on 127.0.0.1.
    const kitUp = async () => (await fetch(`http://127.0.0.1:${kitPort}/v1/requests/none`, { signal: AbortSignal.timeout(2_000) })).status === 404;
    running.push(await startProcess("node server.mjs", ["server.mjs"], app, kitUp, 30_000));
    const vitePort = await freePort();
    const url = `http://127.0.0.1:${vitePort}/`;
    const viteUp = async () => (await fetch(url, { signal: AbortSignal.timeout(2_000) })).ok;
    const vite = [join(app, "node_modules", "vite", "bin", "vite.js"), "--host", "127.0.0.1", "--port", String(vitePort), "--strictPort"];
    running.push(await startProcess("npx vite", vite, app, viteUp, 60_000));

    browser = await launchChromium();
    await drive(browser, url, app, kind);
  } finally {
    await browser?.close();
    for (const child of running.reverse()) await child.stop();
    if (process.env.KEEP_README_APP === "1") say(`kept ${base}`);
    else await rm(base, { recursive: true, force: true });
  }
}

try {
  await main();
  say(`passed in ${seconds(started)}s`);
} catch (error) {
  console.error(`readme: FAILED after ${seconds(started)}s: ${error.stack ?? error}`);
  process.exit(1);
}
