// The `ts` blocks of the README (but its quick start, which tests/package/readme.mjs runs) and
// of the docs written for editors, as modules tsc can check: each block a file of its own,
// preceded by declarations of the names it assumes its reader has at hand.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fencedBlocks } from "./markdown.mjs";

/** The documents whose `ts` blocks are checked. */
export const SNIPPET_DOCUMENTS = ["README.md", "docs/guide.md", "docs/options.md", "docs/installing.md", "docs/worker-mode.md"];

/**
 * What the snippets assume their reader has at hand (an editor's own names, a scheduler): each
 * line is put before a snippet that uses the name without defining or importing it. (Not as
 * globals: the DOM has a `Scheduler` and a `scheduler` of its own.)
 */
const ASSUMED = {
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
function asModule(body) {
  const code = body.replace(/\/\/.*$/gm, "");
  const header = Object.entries(ASSUMED).filter(([name]) => {
    const uses = new RegExp(`(?<![.\\w$])${name}\\b`).test(code);
    const defines = new RegExp(`(import[^;]*[{,\\s]${name}[\\s,}]|(const|let|var|function|class|type|interface)\\s+${name}\\b)`).test(code);
    return uses && !defines;
  });
  return `${header.map(([, line]) => line).join("\n")}\n${body}export {};\n`;
}

/** Writes every checked block into `dir`; resolves to the files written. */
export async function writeSnippets(root, dir) {
  await mkdir(dir, { recursive: true });
  const files = [];
  for (const name of SNIPPET_DOCUMENTS) {
    let text = await readFile(join(root, name), "utf8");
    // The quick start is run on its own; its lines are kept (blank) so line numbers hold.
    if (name === "README.md") text = text.replace(/^## Quick start\n[\s\S]*?(?=^## )/m, (section) => section.replace(/[^\n]/g, ""));
    for (const { language, body, line } of fencedBlocks(text)) {
      if (language !== "ts") continue;
      const file = `${name.replace(/[/.]/g, "_")}_${String(line).padStart(4, "0")}.ts`;
      await writeFile(join(dir, file), `// ${name}, the block at line ${line}\n${asModule(body)}`);
      files.push(file);
    }
  }
  return files;
}
