// A hostile network in front of the reference server, for the hostile-environment page
// (www/hostile/, tests/e2e/hostile.mjs, `npm run hostile`). Two servers on 127.0.0.1:
//
// - the front, the scheduler's `endpoint` origin: `/<case>/requests...` meets that case's
//   script of misbehaviours (one entry per protocol request, in order), then is forwarded to
//   the reference server as `/requests...`;
// - elsewhere, another origin, which answers `{"outcome":"applied"}` to anything and records
//   every request it receives, so a followed redirect (and the credentials it carried) shows.
//
// The page drives it through `/_hostile/*` on the front: set a case's script, read what a case
// met and what elsewhere received, and ask the reference server how often an operation was
// applied (the front holds the admin token; the page never sees it).
import { createServer } from "node:http";

const BODY_LIMIT = 4 << 20;

/** Reads a request body, at most BODY_LIMIT bytes. */
function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > BODY_LIMIT) {
        reject(new Error("body too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function cors(res) {
  res.setHeader("access-control-allow-origin", "*");
  res.setHeader("access-control-allow-methods", "GET, POST, OPTIONS");
  res.setHeader("access-control-allow-headers", "*");
  res.setHeader("access-control-expose-headers", "retry-after");
  res.setHeader("access-control-max-age", "600");
}

function json(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

async function listen(handler) {
  const server = createServer((req, res) => {
    handler(req, res).catch((error) => {
      if (!res.headersSent) json(res, 500, { error: String(error?.message ?? error) });
      else res.destroy();
    });
  });
  await new Promise((ready, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", ready);
  });
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

/**
 * Starts the front and elsewhere. `upstream` is the reference server ({ url }) and
 * `adminToken` its admin token (sent as `x-admin-token` to `/admin/*`).
 * Resolves to { url, elsewhereUrl, close }.
 */
export async function startHostileFront({ upstream, adminToken }) {
  /** @type {Map<string, object[]>} the misbehaviours still to come, per case */
  const scripts = new Map();
  /** @type {Map<string, {method: string, path: string, met: string}[]>} */
  const seen = new Map();
  /** @type {{method: string, path: string, headers: Record<string, string>, bytes: number}[]} */
  const elsewhereLog = [];

  const elsewhere = await listen(async (req, res) => {
    cors(res);
    const body = await readBody(req);
    if (req.method === "OPTIONS") return res.writeHead(204).end();
    elsewhereLog.push({ method: req.method, path: req.url, headers: { ...req.headers }, bytes: body.length });
    json(res, 200, { outcome: "applied" });
  });

  async function adminGet(path) {
    const response = await fetch(`${upstream.url}${path}`, {
      headers: adminToken ? { "x-admin-token": adminToken } : {},
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
    return response.json();
  }

  async function control(req, res, path, query) {
    const name = query.get("case") ?? "";
    if (req.method === "POST" && path === "/_hostile/script") {
      const script = JSON.parse((await readBody(req)).toString("utf8"));
      if (!Array.isArray(script)) return json(res, 400, { error: "a script is an array" });
      scripts.set(name, script);
      return json(res, 200, { case: name, steps: script.length });
    }
    if (path === "/_hostile/seen") return json(res, 200, seen.get(name) ?? []);
    if (path === "/_hostile/elsewhere") {
      return json(res, 200, elsewhereLog.filter((entry) => entry.path.startsWith(`/${name}/`)));
    }
    if (path === "/_hostile/applied") {
      const state = await adminGet("/admin/state");
      const id = query.get("operationId") ?? "";
      return json(res, 200, { applications: state.operations?.[id]?.applications ?? 0 });
    }
    return json(res, 404, { error: `no control route ${path}` });
  }

  async function forward(req, res, rest, body) {
    const headers = {};
    for (const [key, value] of Object.entries(req.headers)) {
      if (!["host", "connection", "content-length", "origin"].includes(key)) headers[key] = value;
    }
    const response = await fetch(`${upstream.url}${rest}`, {
      method: req.method,
      headers,
      body: req.method === "GET" ? undefined : body,
      signal: AbortSignal.timeout(20_000),
    });
    const answer = Buffer.from(await response.arrayBuffer());
    const out = { "content-type": response.headers.get("content-type") ?? "application/json" };
    const retryAfter = response.headers.get("retry-after");
    if (retryAfter) out["retry-after"] = retryAfter;
    res.writeHead(response.status, out).end(answer);
  }

  const front = await listen(async (req, res) => {
    cors(res);
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (req.method === "OPTIONS") {
      req.resume();
      return res.writeHead(204).end();
    }
    if (url.pathname.startsWith("/_hostile/")) return control(req, res, url.pathname, url.searchParams);
    const match = /^\/([a-z0-9_-]+)(\/requests(?:\/.*)?)$/.exec(url.pathname);
    if (!match) {
      req.resume();
      return json(res, 404, { error: "no such case route" });
    }
    const [, name, rest] = match;
    const body = await readBody(req);
    const step = scripts.get(name)?.shift() ?? { forward: true };
    const log = seen.get(name) ?? [];
    seen.set(name, log);
    log.push({ method: req.method, path: rest, met: step.forward ? "forwarded" : `${step.status}` });
    if (step.forward) return forward(req, res, rest + url.search, body);
    const headers = { ...(step.headers ?? {}) };
    if (step.redirectElsewhere) headers.location = `${elsewhere.url}/${name}${rest}`;
    res.writeHead(step.status, headers).end(step.body ?? "");
  });

  return {
    url: front.url,
    elsewhereUrl: elsewhere.url,
    close: async () => {
      for (const { server } of [front, elsewhere]) {
        await new Promise((closed) => {
          server.close(closed);
          server.closeAllConnections();
        });
      }
    },
  };
}
