// A round-robin HTTP proxy on 127.0.0.1 in front of the crash test's server processes, as a load
// balancer: each request goes to the next backend of the live pool. A backend that refuses the
// connection (it was just killed; nothing reached it) is skipped for the next one; a backend that
// dies with the request in flight answers the client 502 (or, once the answer has begun, the
// client's connection is reset): the client cannot know whether it was applied and retries
// (docs/protocol.md). Request bodies are buffered (bounded) so a refused connection can be retried.
import { createServer, request as httpRequest, Agent } from "node:http";

const MAX_BODY = 4 << 20;
const TRIES = 4;
const UPSTREAM_MS = 30_000;

/**
 * @param {() => string[]} pool the live backends' base URLs, read per request
 * @returns {Promise<{ url: string, counts: Record<string, number>, close: () => Promise<void> }>}
 */
export async function startProxy(pool) {
  const counts = { submits: 0, queries: 0, other: 0, refusedSkipped: 0, badGateway: 0, resetMidAnswer: 0, noBackend: 0 };
  const status = {};
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  let next = 0;

  const forward = (req, body, url, onAnswer, onError) => {
    const target = new URL(req.url, url);
    const upstream = httpRequest(
      target,
      { method: req.method, headers: { ...req.headers, host: target.host, "content-length": body.length }, agent, timeout: UPSTREAM_MS },
      onAnswer,
    );
    upstream.on("timeout", () => upstream.destroy(new Error("upstream timeout")));
    upstream.on("error", onError);
    upstream.end(body);
  };

  const server = createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) req.destroy();
      else chunks.push(chunk);
    });
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (req.method === "POST") counts.submits += 1;
      else if (req.method === "GET" && /\/requests\//.test(req.url ?? "")) counts.queries += 1;
      else counts.other += 1;
      const attempt = (tries) => {
        const live = pool();
        if (live.length === 0) {
          counts.noBackend += 1;
          res.writeHead(502, { "content-type": "text/plain", "access-control-allow-origin": "*" }).end("no backend\n");
          return;
        }
        const url = live[next++ % live.length];
        let answered = false;
        forward(
          req,
          body,
          url,
          (answer) => {
            answered = true;
            status[answer.statusCode] = (status[answer.statusCode] ?? 0) + 1;
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
            answer.on("error", () => {
              counts.resetMidAnswer += 1;
              res.destroy();
            });
            answer.on("aborted", () => {
              counts.resetMidAnswer += 1;
              res.destroy();
            });
          },
          (error) => {
            if (answered) return;
            if (/** @type {any} */ (error).code === "ECONNREFUSED" && tries > 1) {
              counts.refusedSkipped += 1;
              attempt(tries - 1);
              return;
            }
            counts.badGateway += 1;
            if (res.headersSent) res.destroy();
            else res.writeHead(502, { "content-type": "text/plain", "access-control-allow-origin": "*" }).end("bad gateway\n");
          },
        );
      };
      attempt(TRIES);
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((ready, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", ready);
  });
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    status,
    close: () =>
      new Promise((closed) => {
        server.close(() => closed());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}
