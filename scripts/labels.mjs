#!/usr/bin/env node
// Labels that point outside the repository: the tracked text files must not cite a document
// readers cannot open. Flagged, anywhere in a line (prose, comments, declarations, strings):
//
//   - a bare spec label: an upper-case K, S, W, D or H and one or two digits ("K1", "(S13)",
//     "S9, S10", "K4:");
//   - "SPEC" as a word (SPEC.md, "SPEC §6") and the section sign "§";
//   - an issue number: "issue 37", "Issue 37:", "issues 37 and 38", "issue #36", "#36".
//
// What is allowed: test names. A test function may start with short IDs (`k7_s4_flush_…`,
// `issue37_…`, `i37_4_…`) that the "Test IDs" table at the end of docs/guarantees.md defines;
// each ID such a name starts with must be a row of that table, or the name is flagged too.
// Lines of scripts/labels.allow (`path<TAB>text<TAB>reason`) let through a text that matches a
// pattern above but is no label (each with its reason); a line there that lets nothing through
// any more is itself a finding.
//
//   node scripts/labels.mjs              check the tracked files (scripts/test runs this)
//   node scripts/labels.mjs --self-test  plants a label in a scratch repository and checks
//                                        that it is found, and that a clean file passes
//
// Prints `file:line: label: the line` for each finding and exits 1 when there is any.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const SELF = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Paths never read: this check and its allow-list (they spell the patterns out), dependencies,
 * lockfiles, and the test fixtures' recorded data. */
function skipped(path) {
  if (path === "scripts/labels.mjs" || path === "scripts/labels.allow") return true;
  if (path.split("/").includes("node_modules")) return true;
  if (/(^|\/)(package-lock\.json|Cargo\.lock|[^/]*\.lock)$/.test(path)) return true;
  if (/(^|\/)fixtures\//.test(path) && /\.(json|jsonl|sql|bin|dump)$/.test(path)) return true;
  return /\.(png|jpe?g|gif|ico|webp|wasm|gz|zip|woff2?|ttf|pdf)$/i.test(path);
}

// One ID of a test name: s1…, k1…, w1…, d1…, h1…, p7, i37, issue37, issue_37.
const ID = String.raw`(?:issue_?\d+|i\d+|[kswdhp]\d{1,2})`;
// A test name: one or more IDs, each followed by `_`, then the rest of the identifier (or an
// ellipsis, as docs write `w2_…`).
const TEST_NAME = new RegExp(String.raw`(?<![\w])((?:${ID}_)+)(?=[\w…])`, "g");
const ONE_ID = new RegExp(String.raw`(${ID})_`, "gy");
const LABELS = [
  { name: "spec label", re: /(?<![\w#&-])[KSWDH]\d{1,2}(?![\w])/g },
  { name: "SPEC", re: /\bSPEC\b/g },
  { name: "section sign", re: /§/g },
  { name: "issue number", re: /\b[Ii]ssues?\s*#?\d+/g },
  { name: "issue number", re: /(?<![\w&#/])#\d{1,2}(?![\w])/g },
];

/** The IDs the Test IDs table of docs/guarantees.md defines (its rows' first cells). */
function definedIds(root) {
  const path = join(root, "docs", "guarantees.md");
  if (!existsSync(path)) return { ids: new Set(), from: -1, to: -1 };
  const lines = readFileSync(path, "utf8").split("\n");
  const from = lines.findIndex((line) => /^## Test IDs\s*$/.test(line));
  const ids = new Set();
  let to = lines.length;
  if (from >= 0) {
    for (let i = from + 1; i < lines.length; i++) {
      if (/^## /.test(lines[i])) {
        to = i;
        break;
      }
      const row = /^\| `([a-z0-9_]+)` \|/.exec(lines[i]);
      if (row) ids.add(row[1]);
    }
  }
  return { ids, from, to };
}

/** `path<TAB>text<TAB>reason` lines of scripts/labels.allow. */
function allowList(root) {
  const path = join(root, "scripts", "labels.allow");
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .map((line, i) => ({ line, at: i + 1 }))
    .filter(({ line }) => line.trim() !== "" && !line.startsWith("#"))
    .map(({ line, at }) => {
      const [file, text, reason] = line.split("\t");
      return { file, text, reason, at, used: false };
    });
}

/** Every finding in the tracked text files under `root`: { file, line, label, text }. */
export function check(root) {
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter((path) => path !== "" && !skipped(path));
  const { ids, from, to } = definedIds(root);
  const allow = allowList(root);
  const findings = [];
  for (const file of files) {
    const full = join(root, file);
    if (!existsSync(full)) continue;
    const bytes = readFileSync(full);
    if (bytes.includes(0)) continue; // binary
    const lines = bytes.toString("utf8").split("\n");
    lines.forEach((text, index) => {
      // The Test IDs table defines the IDs; it names them, it does not cite them.
      if (file === "docs/guarantees.md" && index > from && index < to) return;
      let masked = text.replace(TEST_NAME, (prefix) => {
        for (const [, id] of prefix.matchAll(ONE_ID)) {
          if (!ids.has(id)) {
            findings.push({ file, line: index + 1, label: `test ID ${id}`, text });
          }
        }
        return " ".repeat(prefix.length);
      });
      for (const entry of allow) {
        if (entry.file !== file) continue;
        if (masked.includes(entry.text)) {
          entry.used = true;
          masked = masked.split(entry.text).join(" ".repeat(entry.text.length));
        }
      }
      for (const { name, re } of LABELS) {
        for (const match of masked.matchAll(re)) {
          findings.push({ file, line: index + 1, label: `${name} ${match[0]}`, text });
        }
      }
    });
  }
  for (const entry of allow) {
    if (!entry.used) {
      findings.push({
        file: "scripts/labels.allow",
        line: entry.at,
        label: `allow-list line lets nothing through (${entry.file}: ${entry.text})`,
        text: "",
      });
    }
  }
  if (ids.size === 0) {
    findings.push({
      file: "docs/guarantees.md",
      line: 0,
      label: "no Test IDs table found: every test ID would be undefined",
      text: "",
    });
  }
  return findings;
}

function report(findings) {
  for (const { file, line, label, text } of findings) {
    console.log(`${file}:${line}: ${label}${text ? `: ${text.trim().slice(0, 160)}` : ""}`);
  }
}

/** A scratch repository with a Test IDs table, a clean file and (when `plant`) a label. */
function scratch(files) {
  const dir = mkdtempSync(join(tmpdir(), "labels-self-test-"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const git = (...args) => execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  git("init", "-q");
  git("add", "-A");
  return dir;
}

function selfTest() {
  const table = [
    "# Guarantees",
    "",
    "## Test IDs",
    "",
    "| ID | the promise it names | section |",
    "| --- | --- | --- |",
    "| `k1` | dead letters | x |",
    "| `issue37` | saved state | x |",
    "| `issue_37` | maintenance | x |",
    "",
  ].join("\n");
  const clean = [
    "// Retries follow the endpoint's pace; see docs/guarantees.md.",
    "fn k1_a_poison_request_is_dead_lettered() {}",
    "fn issue37_when_saved_waits() {}",
    "fn k1_issue_37_two_ids_and_a_tail() {} // and every `k1_…` test",
    "const color = '#D4D4D4'; // <h1>H</h1>, p99, 0xD4",
    "",
  ].join("\n");
  const cases = [
    { name: "a clean tree passes", files: {}, expect: [] },
    { name: "a planted spec label fails", files: { "a.rs": "// Dead letters (K1).\n" }, expect: ["spec label K1"] },
    { name: "SPEC § fails", files: { "b.md": "As SPEC §6 says.\n" }, expect: ["SPEC SPEC", "section sign §"] },
    { name: "an issue number fails", files: { "c.d.ts": "/** Issue 37: saved. */\n" }, expect: ["issue number Issue 37"] },
    { name: "an undefined test ID fails", files: { "d.rs": "fn s13_storage() {}\n" }, expect: ["test ID s13"] },
  ];
  let failed = 0;
  for (const { name, files, expect } of cases) {
    const dir = scratch({ "docs/guarantees.md": table, "src/clean.rs": clean, ...files });
    try {
      const got = check(dir).map((f) => f.label);
      const ok = got.length === expect.length && expect.every((label, i) => got[i] === label);
      console.log(`${ok ? "ok" : "FAILED"}: ${name}${ok ? "" : ` (expected ${JSON.stringify(expect)}, got ${JSON.stringify(got)})`}`);
      if (!ok) failed++;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return failed === 0;
}

if (process.argv.includes("--self-test")) {
  process.exit(selfTest() ? 0 : 1);
} else if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const findings = check(SELF);
  report(findings);
  if (findings.length > 0) {
    console.log(`labels: ${findings.length} finding(s): say it in words or link the repository's docs`);
    process.exit(1);
  }
  console.log("labels: no label points outside the repository");
}
