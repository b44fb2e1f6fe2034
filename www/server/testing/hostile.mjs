#!/usr/bin/env node
// A hostile network for the browser tests (tests/web/hostile_net.rs): not a protocol server,
// but the things between a client and one. Two instances on two ports are two origins: one
// plays the endpoint, the other records whatever reaches it.
//
//   node hostile.mjs --port 0 --host 127.0.0.1
//
// prints `{"listening":"http://127.0.0.1:PORT"}` when ready. Every route ends in the protocol's
// own `/requests` or `/requests/{id}`, so a route prefix is an endpoint:
//
//   /redirect/{status}/{target}/requests…   answers {status} with `Location: {target}/requests…`
//                                           ({target} URL-encoded)
//   /record/{tag}/requests…                 records method, headers and body under {tag} and
//                                           answers 200 {"outcome":"applied"}
//   GET /recorded/{tag}                     what reached /record/{tag} (a JSON array)
//   /status/{code}/{retryAfter|-}/requests… answers {code} with an HTML body (a proxy), and
//                                           `Retry-After: {retryAfter}` unless `-`
//   /big/{bytes}/{chunked|length}/requests… answers 200 with a protocol answer of {bytes} bytes,
//                                           streamed without a length or with one
//   /echo/requests…                         answers 422 rejected, quoting the request's
//                                           `authorization` and `x-api-key` in its error
//   /huge/requests…                         answers 200 applied, its `canonical` holding an
//                                           integer beyond 2^53 (12345678901234567890)
//   /proto/requests…                        answers 200 applied, its `canonical` holding a
//                                           `"__proto__"` key ({"__proto__":{"polluted":true},"a":1})
//   /proto-details/requests…                answers 422 rejected, its error's `details`
//                                           holding the same `"__proto__"` key
//   /utf8/requests…                         answers 200 applied as raw bytes in several writes: a
//                                           byte order mark, characters split across writes, an
//                                           invalid byte (0xFF) in `canonical.bad`
//
// Listens on 127.0.0.1 only; every answer allows any origin (it holds nothing worth reading).

import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const recorded = new Map();
const MAX_RECORDS = 100;
const MAX_BODY = 64 * 1024;

function cors(res) {
  res.setHeader('access-control-allow-origin', '*');
  res.setHeader('access-control-expose-headers', 'retry-after');
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

async function readBody(req) {
  let size = 0;
  const chunks = [];
  for await (const chunk of req) {
    size += chunk.length;
    if (size <= MAX_BODY) chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function handle(req, res) {
  cors(res);
  const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
  if (req.method === 'OPTIONS') {
    res.writeHead(204, {
      'access-control-allow-methods': 'GET, POST, OPTIONS',
      'access-control-allow-headers': req.headers['access-control-request-headers'] ?? '',
      'content-length': '0',
    });
    res.end();
    return;
  }
  let match;
  if ((match = /^\/redirect\/(\d{3})\/([^/]+)(\/requests(?:\/[^/]+)?)$/.exec(path))) {
    req.resume();
    const target = decodeURIComponent(match[2]);
    send(res, Number(match[1]), '', { location: `${target}${match[3]}` });
  } else if ((match = /^\/record\/([^/]+)\/requests(?:\/[^/]+)?$/.exec(path))) {
    const tag = match[1];
    const body = await readBody(req);
    const list = recorded.get(tag) ?? [];
    if (list.length < MAX_RECORDS) list.push({ method: req.method, path, headers: req.headers, body });
    recorded.set(tag, list);
    send(res, 200, JSON.stringify({ outcome: 'applied' }), { 'content-type': 'application/json' });
  } else if ((match = /^\/recorded\/([^/]+)$/.exec(path)) && req.method === 'GET') {
    send(res, 200, JSON.stringify(recorded.get(match[1]) ?? []), { 'content-type': 'application/json' });
  } else if ((match = /^\/status\/(\d{3})\/([^/]+)\/requests(?:\/[^/]+)?$/.exec(path))) {
    req.resume();
    const headers = { 'content-type': 'text/html' };
    if (match[2] !== '-') headers['retry-after'] = decodeURIComponent(match[2]);
    send(res, Number(match[1]), `<html><body><h1>${match[1]}</h1>a proxy answered</body></html>`, headers);
  } else if ((match = /^\/big\/(\d{1,9})\/(chunked|length)\/requests(?:\/[^/]+)?$/.exec(path))) {
    req.resume();
    const bytes = Number(match[1]);
    const head = '{"outcome":"applied","canonical":"';
    const tail = '"}';
    const pad = 'x'.repeat(Math.max(0, bytes - head.length - tail.length));
    const text = head + pad + tail;
    if (match[2] === 'length') {
      send(res, 200, text, { 'content-type': 'application/json' });
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    for (let at = 0; at < text.length; at += 64 * 1024) {
      if (!res.write(text.slice(at, at + 64 * 1024))) await new Promise((resolve) => res.once('drain', resolve));
      if (res.destroyed) return;
    }
    res.end();
  } else if (/^\/echo\/requests(?:\/[^/]+)?$/.test(path)) {
    req.resume();
    const auth = req.headers.authorization ?? '';
    const key = req.headers['x-api-key'] ?? '';
    const answer = {
      outcome: 'rejected',
      error: { code: 'bad_token', message: `token ${auth} refused (key ${key})`, details: { key } },
    };
    send(res, 422, JSON.stringify(answer), { 'content-type': 'application/json' });
  } else if (/^\/huge\/requests(?:\/[^/]+)?$/.test(path)) {
    req.resume();
    // Written as text: a JS number could not hold this integer.
    const answer = '{"outcome":"applied","canonical":{"big":12345678901234567890,"kept":"yes","small":7}}';
    send(res, 200, answer, { 'content-type': 'application/json' });
  } else if (/^\/proto(-details)?\/requests(?:\/[^/]+)?$/.test(path)) {
    req.resume();
    // Written as text: a JS object literal would set the prototype instead of holding the key.
    const hostile = '{"__proto__":{"polluted":true},"a":1}';
    if (path.startsWith('/proto-details/')) {
      const answer = `{"outcome":"rejected","error":{"code":"bad_shape","message":"no","details":${hostile}}}`;
      send(res, 422, answer, { 'content-type': 'application/json' });
    } else {
      send(res, 200, `{"outcome":"applied","canonical":${hostile}}`, { 'content-type': 'application/json' });
    }
  } else if (/^\/utf8\/requests(?:\/[^/]+)?$/.test(path)) {
    req.resume();
    const bytes = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('{"outcome":"applied","canonical":{"text":"\u00e9\u20ac\u{1f600}","bad":"a', 'utf8'),
      Buffer.from([0xff]),
      Buffer.from('b"}}', 'utf8'),
    ]);
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    // Cuts inside the BOM, the two-byte é, the three-byte € and the four-byte emoji.
    const cuts = [0, 1, 46, 48, 52, bytes.length];
    for (let i = 1; i < cuts.length; i += 1) {
      res.write(bytes.subarray(cuts[i - 1], cuts[i]));
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    res.end();
  } else {
    req.resume();
    send(res, 404, 'no such route', { 'content-type': 'text/plain' });
  }
}

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, host: { type: 'string', default: '127.0.0.1' } },
});
if (values.host !== '127.0.0.1') {
  process.stderr.write('hostile.mjs listens on 127.0.0.1 only\n');
  process.exit(2);
}
const server = createServer((req, res) => {
  handle(req, res).catch(() => res.destroy());
});
server.listen(Number(values.port), values.host, () => {
  process.stdout.write(`${JSON.stringify({ listening: `http://${values.host}:${server.address().port}` })}\n`);
});
const stop = () => server.close(() => process.exit(0)) && server.closeAllConnections();
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
