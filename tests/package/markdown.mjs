// Reading the repository's Markdown for tests/package/readme.mjs: fenced code blocks, and the
// relative links of a document checked against the files and headings they point to (anchors
// as GitHub makes them from headings).
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";

/** The fenced code blocks of `text`: { language, body, line } in order (line: 1-based, of the fence). */
export function fencedBlocks(text) {
  const blocks = [];
  const lines = text.split("\n");
  for (let at = 0; at < lines.length; at += 1) {
    const open = /^```(\w*)\s*$/.exec(lines[at]);
    if (!open) continue;
    const end = lines.findIndex((line, i) => i > at && line === "```");
    if (end < 0) throw new Error(`line ${at + 1}: a code block that never closes`);
    blocks.push({ language: open[1], body: lines.slice(at + 1, end).join("\n") + "\n", line: at + 1 });
    at = end;
  }
  return blocks;
}

/** Text outside code blocks, with the blocks' lines blanked (line numbers kept). */
function prose(text) {
  let inside = false;
  return text
    .split("\n")
    .map((line) => {
      if (/^```/.test(line)) inside = !inside;
      return inside || /^```/.test(line) ? "" : line;
    })
    .join("\n");
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors of a Markdown file's headings (a repeated heading gets -1, -2, …). */
export function anchors(text) {
  const seen = new Map();
  const found = new Set();
  for (const [, heading] of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

/**
 * Every relative link of the Markdown file `file` (absolute path) that points nowhere: a file
 * or directory that does not exist under `root`, or a `#anchor` no heading of its target
 * makes. Resolves to "file:line: link (why)" strings.
 */
export function brokenLinks(file, root) {
  const text = readFileSync(file, "utf8");
  const broken = [];
  prose(text)
    .split("\n")
    .forEach((line, index) => {
      for (const [, target] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
        const [path, anchor] = target.split("#");
        const resolved = path === "" ? file : join(dirname(file), decodeURIComponent(path));
        const where = `${relative(root, file)}:${index + 1}: ${target}`;
        if (!existsSync(resolved)) {
          broken.push(`${where} (no such file)`);
        } else if (anchor !== undefined) {
          if (statSync(resolved).isDirectory() || !resolved.endsWith(".md")) broken.push(`${where} (an anchor on a non-Markdown target)`);
          else if (!anchors(readFileSync(resolved, "utf8")).has(anchor)) broken.push(`${where} (no such heading)`);
        }
      }
    });
  return broken;
}
