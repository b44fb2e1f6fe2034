// The browser app of the crash test, as a user ships it: `npm pack` of this repository (it needs
// pkg/ from scripts/build), unpacked as node_modules/canvas-scheduler beside the page in
// tests/crash/page/, which imports "canvas-scheduler" through an import map (the package's "."
// export). Served by a static server on 127.0.0.1.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";

const ROOT = new URL("../..", import.meta.url).pathname;
const PAGE = new URL("./page/", import.meta.url).pathname;
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".wasm": "application/wasm", ".json": "application/json" };

/**
 * Packs and unpacks the package, and serves the page with it.
 * @param {(line: string) => void} say
 * @returns {Promise<{ url: string, close: () => Promise<void>, remove: () => void }>}
 */
export async function serveApp(say) {
  try {
    statSync(join(ROOT, "pkg", "web", "canvas_scheduler.js"));
  } catch {
    throw new Error("pkg/web is missing: run scripts/build first");
  }
  const dir = mkdtempSync(join(tmpdir(), "crash-app-"));
  const packed = JSON.parse(
    execFileSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", dir], { cwd: ROOT, encoding: "utf8", timeout: 120_000 }),
  )[0];
  const modules = join(dir, "node_modules", "canvas-scheduler");
  mkdirSync(modules, { recursive: true });
  execFileSync("tar", ["-xzf", join(dir, packed.filename), "-C", modules, "--strip-components=1"], { timeout: 60_000 });
  say(`${packed.filename}: ${packed.entryCount} files, ${packed.size} bytes, unpacked as node_modules/canvas-scheduler`);

  /** URL path → file: /node_modules/canvas-scheduler/… from the tarball, the rest from page/. */
  const fileOf = (urlPath) => {
    const path = normalize(decodeURIComponent(urlPath)).replace(/^\/+/, "");
    if (path.split("/").includes("..")) return null;
    if (path.startsWith("node_modules/canvas-scheduler/")) return join(dir, path);
    return join(PAGE, path === "" ? "index.html" : path);
  };
  const server = createServer(async (req, res) => {
    try {
      const file = fileOf(new URL(req.url ?? "/", "http://x").pathname);
      if (!file || !(await stat(file)).isFile()) throw new Error("not served");
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "cache-control": "no-store" });
      res.end(await readFile(file));
    } catch {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  await new Promise((ready, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", ready);
  });
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  const remove = () => rmSync(dir, { recursive: true, force: true });
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise((closed) => {
        server.close(() => closed(undefined));
        server.closeAllConnections();
      });
      remove();
    },
    // Synchronous, for an exit handler.
    remove,
  };
}
