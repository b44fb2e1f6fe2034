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
// Before that, and beside it: every relative link of README.md and docs/*.md points to a file
// and heading that exist (tests/package/markdown.mjs), and every other `ts` block of README.md
// and of the docs written for editors (DOC_SNIPPETS) type-checks against the installed package
// (tsc --strict, each block a module of its own, with the names it assumes declared before
// it: SNIPPET_NAMES below).
// KEEP_README_APP=1 keeps the temporary directory (its path is printed).
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

const MAX_LINES = 15;
/** The docs whose `ts` blocks are type-checked, beside README.md. */
const DOC_SNIPPETS = ["docs/guide.md", "docs/options.md", "docs/installing.md", "docs/worker-mode.md"];
/**
 * What the snippets assume their reader has at hand (an editor's own names, a scheduler): each
 * line is put before a snippet that uses the name without defining or importing it. (Not as
 * globals: the DOM has a `Scheduler` and a `scheduler` of its own.)
 */
const SNIPPET_NAMES = {
  Scheduler: 'import { Scheduler } from "canvas-scheduler";',
  SchedulerEvent: 'import type { SchedulerEvent } from "canvas-scheduler";',
  OperationIntent: 'import type { OperationIntent } from "canvas-scheduler";',
  scheduler: 'declare const scheduler: import("canvas-scheduler").Scheduler;',
  database: "declare const database: string;",
  endpoint: "declare const endpoint: string;",
  id: "declare const id: string;",
  page: "declare const page: string;",
  record: "declare const record: { id: string; x: number; y: number };",
  intent: 'declare const intent: import("canvas-scheduler").OperationIntent;',
  onEvent: 'declare function onEvent(event: import("canvas-scheduler").SchedulerEvent): void;',
  getToken: "declare function getToken(): Promise<string>;",
  rollBack: "declare function rollBack(operationId: string, canonical?: unknown): void;",
  change: "declare const change: { id: string }[];",
  toIntent: 'declare function toIntent(edit: { id: string }): import("canvas-scheduler").OperationIntent;',
  revert: "declare function revert(edit: { id: string }, code: string): void;",
};

/** A snippet as a module: the declarations of the names it uses but does not define, then it. */
function snippetModule(body) {
  const header = Object.entries(SNIPPET_NAMES).filter(([name]) => {
    const uses = new RegExp(`(?<![.\\w$])${name}\\b`).test(body.replace(/\/\/.*$/gm, ""));
    const defines = new RegExp(`(import[^;]*[{,\\s]${name}[\\s,}]|(const|let|var|function|class|type|interface)\\s+${name}\\b)`).test(body);
    return uses && !defines;
  });
  return `${header.map(([, line]) => line).join("\n")}\n${body}export {};\n`;
}
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

/** The "Quick start" section's fenced blocks, by language: exactly one js, one ts, one sh. */
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
  assert.match(blocks.sh, /^node server\.mjs\b/m, "quick start: the sh block runs `node server.mjs`");
  assert.match(blocks.sh, /\bnpx vite\b/, "quick start: the sh block runs `npx vite`");
  assert.match(blocks.sh, /src="\/main\.ts"/, "quick start: index.html loads /main.ts");
  return { server: blocks.js, page: blocks.ts, shell: blocks.sh };
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

/** Starts a child process; resolves once `ready()` resolves, rejects if it exits first. */
async function startProcess(name, command, args, cwd, ready, timeoutMs) {
  const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "1" } });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise((_, reject) =>
    child.once("exit", (code, signal) => reject(new Error(`${name} exited (${code ?? signal}) before it was ready:\n${output}`))),
  );
  exited.catch(() => {});
  const deadline = Date.now() + timeoutMs;
  const poll = (async () => {
    while (Date.now() < deadline) {
      if (await ready().catch(() => false)) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`${name} was not ready within ${timeoutMs / 1000}s:\n${output}`);
  })();
  try {
    await Promise.race([poll, exited]);
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  say(`${name} (pid ${child.pid}) is up`);
  return {
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const force = setTimeout(() => child.kill("SIGKILL"), 5_000);
        child.once("exit", () => (clearTimeout(force), resolve()));
        child.kill("SIGTERM");
      }),
  };
}

/** Code lines of a block: not blank, not only a comment. */
const codeLines = (block) => block.split("\n").filter((line) => line.trim() !== "" && !/^\s*\/\//.test(line));

async function main() {
  for (const target of ["web", "bundler"]) {
    await readFile(join(ROOT, "pkg", target, "canvas_scheduler.js")).catch(() => {
      throw new Error(`pkg/${target} is missing: run scripts/build (both targets) first`);
    });
  }
  const documents = ["README.md", ...(await readdir(join(ROOT, "docs"))).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)];
  const broken = documents.flatMap((name) => brokenLinks(join(ROOT, name), ROOT));
  assert.deepEqual(broken, [], `links that point nowhere:\n  ${broken.join("\n  ")}`);
  say(`links: every relative link of ${documents.join(", ")} resolves`);

  const readme = await readFile(join(ROOT, "README.md"), "utf8");
  const { server, page, shell } = quickStart(readme);
  const lines = codeLines(server).length + codeLines(page).length;
  assert.ok(lines <= MAX_LINES, `the quick start's code is ${lines} lines, more than ${MAX_LINES}`);
  say(`quick start: ${codeLines(server).length} lines of server, ${codeLines(page).length} of page (${lines} <= ${MAX_LINES})`);

  // The one substitution: the server's port, wherever the blocks name it.
  const port = /\.listen\((\d+)/.exec(server)?.[1];
  assert.ok(port, "quick start: the server block listens with .listen(PORT, ...)");
  assert.ok(shell.includes(`127.0.0.1:${port}`), `quick start: the proxy line names the server's port ${port}`);
  const kitPort = await freePort();
  const withPort = (text) => text.replace(new RegExp(`\\b${port}\\b`, "g"), String(kitPort));

  const base = await mkdtemp(join(tmpdir(), "canvas-scheduler-readme-"));
  say(`app in ${base}/my-editor`);
  const running = [];
  let browser;
  try {
    // Install: the two tarballs, as the README makes them.
    const packFlags = ["pack", "--json", "--ignore-scripts", "--pack-destination", base];
    const [client] = JSON.parse(await run("npm", packFlags, { cwd: ROOT, timeoutMs: 120_000 }));
    const [kitPack] = JSON.parse(await run("npm", packFlags, { cwd: join(ROOT, "server"), timeoutMs: 60_000 }));
    const app = join(base, "my-editor");
    await mkdir(app);
    await run("npm", ["init", "-y"], { cwd: app, timeoutMs: 60_000 });
    const flags = ["--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];
    const tarballs = [join(base, client.filename), join(base, kitPack.filename)];
    await run("npm", ["install", ...tarballs, ...flags], { cwd: app, timeoutMs: 300_000 });
    const apps = join(ROOT, "tests", "package", "apps");
    const vite = JSON.parse(await readFile(join(apps, "web-vite", "package.json"), "utf8")).devDependencies.vite;
    // And vite-plugin-wasm, which only the bundler entry's Vite configuration in
    // docs/installing.md imports (a snippet checked below).
    const plugin = JSON.parse(await readFile(join(apps, "bundler-vite", "package.json"), "utf8")).devDependencies["vite-plugin-wasm"];
    await run("npm", ["install", "-D", `vite@${vite}`, `vite-plugin-wasm@${plugin}`, ...flags], { cwd: app, timeoutMs: 300_000 });
    for (const dep of ["better-sqlite3", "bindings", "file-uri-to-path"]) {
      await symlink(join(ROOT, "server", "node_modules", dep), join(app, "node_modules", dep));
    }

    // The quick start's files, and its echo lines run as they are.
    await writeFile(join(app, "server.mjs"), withPort(server));
    await writeFile(join(app, "main.ts"), page);
    const echoes = withPort(shell)
      .split("\n")
      .filter((line) => line.startsWith("echo "));
    assert.ok(echoes.length >= 2, "quick start: the sh block writes index.html and vite.config.js with echo");
    await run("bash", ["-euc", echoes.join("\n")], { cwd: app, timeoutMs: 10_000 });

    // Both files type-check against the installed declarations.
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const strict = { strict: true, noEmit: true, skipLibCheck: false, target: "ES2022" };
    await writeFile(
      join(app, "tsconfig.page.json"),
      JSON.stringify({ compilerOptions: { ...strict, module: "ESNext", moduleResolution: "bundler", lib: ["ES2022", "DOM"], types: [] }, files: ["main.ts"] }),
    );
    await writeFile(join(app, "shims.d.ts"), 'declare module "better-sqlite3";\n');
    await writeFile(
      join(app, "tsconfig.server.json"),
      JSON.stringify({
        compilerOptions: { ...strict, allowJs: true, checkJs: true, module: "nodenext", moduleResolution: "nodenext", types: ["node"], typeRoots: [join(ROOT, "node_modules", "@types")] },
        files: ["server.mjs", "shims.d.ts"],
      }),
    );
    // Every other ts block of the README and the docs, each a module of its own.
    const snippets = [];
    for (const name of ["README.md", ...DOC_SNIPPETS]) {
      const text = name === "README.md" ? readme.replace(/^## Quick start\n[\s\S]*?(?=^## )/m, "") : await readFile(join(ROOT, name), "utf8");
      for (const { language, body, line } of fencedBlocks(text)) {
        if (language !== "ts") continue;
        const file = `${name.replace(/[/.]/g, "_")}_${String(line).padStart(4, "0")}.ts`;
        snippets.push(file);
        await mkdir(join(app, "snippets"), { recursive: true });
        await writeFile(join(app, "snippets", file), `// ${name}, the block at line ${line}\n${snippetModule(body)}`);
      }
    }
    assert.ok(snippets.length >= 6, `only ${snippets.length} ts blocks found in the README and the docs`);
    // skipLibCheck: the libraries' own declarations (Vite's want Node's) are not what is checked
    // here; the package's are, with main.ts above.
    await writeFile(
      join(app, "tsconfig.snippets.json"),
      JSON.stringify({ compilerOptions: { ...strict, skipLibCheck: true, module: "ESNext", moduleResolution: "bundler", lib: ["ES2022", "DOM"], types: [] }, include: ["snippets"] }),
    );
    for (const config of ["tsconfig.page.json", "tsconfig.server.json", "tsconfig.snippets.json"]) {
      await run(process.execPath, [tsc, "-p", config], { cwd: app, timeoutMs: 120_000 });
    }
    say(`type-checked: main.ts, server.mjs, and ${snippets.length} ts blocks of ${["README.md", ...DOC_SNIPPETS].join(", ")}`);

    // Run it: the kit, then Vite, both on 127.0.0.1.
    const kitUrl = `http://127.0.0.1:${kitPort}`;
    const kitUp = async () => (await fetch(`${kitUrl}/v1/requests/none`, { signal: AbortSignal.timeout(2_000) })).status === 404;
    running.push(await startProcess("node server.mjs", process.execPath, ["server.mjs"], app, kitUp, 30_000));
    const vitePort = await freePort();
    const pageUrl = `http://127.0.0.1:${vitePort}/`;
    const viteBin = join(app, "node_modules", "vite", "bin", "vite.js");
    const viteUp = async () => (await fetch(pageUrl, { signal: AbortSignal.timeout(2_000) })).ok;
    const viteArgs = [viteBin, "--host", "127.0.0.1", "--port", String(vitePort), "--strictPort"];
    running.push(await startProcess("npx vite", process.execPath, viteArgs, app, viteUp, 60_000));

    browser = await launchChromium();
    const context = await browser.newContext();
    const tab = await context.newPage();
    const errors = [];
    let submits = 0;
    let saved = [];
    let onSaved = () => {};
    tab.on("pageerror", (error) => errors.push(error.message));
    tab.on("request", (request) => {
      if (request.method() === "POST" && request.url().endsWith("/v1/requests")) submits += 1;
    });
    tab.on("console", async (message) => {
      say(`page: ${message.text()}`);
      const args = message.args();
      const value = args.length === 1 ? await args[0].jsonValue().catch(() => null) : null;
      if (value && typeof value === "object" && "settled" in value && "blocked" in value) {
        saved.push(value);
        onSaved();
      }
    });
    const whenSaved = (count, what) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${what}: no whenSaved() result in the console within 90s; page errors: ${errors.join("; ")}`)), 90_000);
        onSaved = () => {
          if (saved.length >= count) (clearTimeout(timer), resolve(saved[count - 1]));
        };
        onSaved();
      });

    const Database = createRequire(join(ROOT, "server", "package.json"))("better-sqlite3");
    const rows = () => {
      const db = new Database(join(app, "app.sqlite"), { readonly: true, fileMustExist: true });
      try {
        const edits = db.prepare("SELECT key, body FROM edits").all().map(({ key, body }) => ({ key, body: JSON.parse(body) }));
        const outcomes = db.prepare("SELECT key, state FROM csk_outcomes").all();
        return { edits, outcomes };
      } finally {
        db.close();
      }
    };
    const kind = /operationType: "([^"]+)"/.exec(page)?.[1];
    assert.ok(kind, "quick start: the page enqueues an operationType");

    await tab.goto(pageUrl, { timeout: 60_000 });
    const first = await whenSaved(1, "the first load");
    assert.deepEqual(first, { settled: 1, blocked: [] }, "whenSaved() resolves as the README's comment says");
    let state = rows();
    assert.equal(state.edits.length, 1, `app.sqlite holds one row: ${JSON.stringify(state.edits)}`);
    const [edit] = state.edits;
    assert.equal(edit.body.id, edit.key, "the row is the request under its idempotency key");
    assert.equal(edit.body.operationIds.length, 1, "one operation in the request");
    assert.equal(edit.body.kind, kind, "the request carries the kind the page enqueued");
    assert.deepEqual(state.outcomes, [{ key: edit.key, state: "done" }], "the kit stored one answer");
    say(`first load: saved ${JSON.stringify(first)}, one row (${edit.key}), ${submits} submit(s)`);

    // A reload enqueues one more edit; the first is never applied again.
    await tab.reload({ timeout: 60_000 });
    const second = await whenSaved(2, "the reload");
    assert.deepEqual(second.blocked, [], "nothing blocked after the reload");
    state = rows();
    assert.equal(state.edits.length, 2, `two rows after a reload: ${JSON.stringify(state.edits)}`);
    const operations = state.edits.flatMap(({ body }) => body.operationIds);
    assert.equal(new Set(operations).size, operations.length, `no operation applied twice: ${operations}`);
    assert.equal(new Set(state.edits.map(({ key }) => key)).size, 2, "two keys");
    assert.equal(state.outcomes.length, 2, "the kit stored two answers");
    assert.deepEqual(errors, [], "no page error");
    say(`reload: saved ${JSON.stringify(second)}, two rows, two operations, each once (${submits} submit(s) in all)`);
    await context.close();
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
