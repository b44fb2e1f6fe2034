//! The `node:http` adapter. Given `kit.handle`, it serves an IncomingMessage without building a
//! web Request or Response (the kit reads method, URL, headers and a bounded body; the answer is
//! written straight to the ServerResponse); the `principal` hook still gets a web Request, built
//! only when there is a hook. Given any other `(request) => Response` function, it converts both
//! ways.

import { Readable } from 'node:stream';
import { SERVE } from './incoming.js';
import { tooLarge } from './protocol.js';

/** @typedef {import('node:http').IncomingMessage} Req */
/** @typedef {import('node:http').ServerResponse} Res */

/**
 * @param {(request: Request) => Promise<Response>} handle
 * @returns {(req: Req, res: Res) => void}
 */
export function toNodeHandler(handle) {
  /** @type {((incoming: import('./incoming.js').Incoming) => Promise<import('./answer.js').Answer>) | undefined} */
  const serve = /** @type {any} */ (handle)[SERVE];
  if (typeof serve !== 'function') return webHandler(handle);
  return (req, res) => {
    const incoming = fromNodeRequest(req);
    serve(incoming).then(
      (answer) => {
        // A body refused before it was read to the end: close rather than read the rest.
        const headers = incoming.abandoned ? { ...answer.headers, connection: 'close' } : answer.headers;
        res.writeHead(answer.status, headers);
        res.end(answer.body ?? undefined);
      },
      () => failed(res),
    );
  };
}

/** @param {Req} req */
function fromNodeRequest(req) {
  const host = req.headers.host ?? '127.0.0.1';
  // Express and Fastify strip a mount path from req.url; originalUrl keeps it.
  const url = `http://${host}${/** @type {any} */ (req).originalUrl ?? req.url ?? '/'}`;
  const incoming = {
    method: req.method ?? 'GET',
    url,
    abandoned: false,
    headers: {
      /** @param {string} name */
      get: (name) => {
        const value = req.headers[name.toLowerCase()];
        return value == null ? null : Array.isArray(value) ? value.join(', ') : value;
      },
    },
    /** @param {number} max */
    read: (max) =>
      readNodeBody(req, max).catch((error) => {
        incoming.abandoned = true;
        throw error;
      }),
    request: () => new Request(url, { method: req.method, headers: webHeaders(req) }),
  };
  return incoming;
}

/**
 * The body, refused with 413 as soon as it passes `max` bytes (declared or counted).
 * @param {Req} req
 * @param {number} max
 * @returns {Promise<Uint8Array>}
 */
function readNodeBody(req, max) {
  const declared = Number(req.headers['content-length']);
  if (declared > max) return Promise.reject(tooLarge('body', max));
  return new Promise((resolve, reject) => {
    /** @type {Buffer[]} */
    const chunks = [];
    let size = 0;
    /** @param {Buffer} chunk */
    const onData = (chunk) => {
      size += chunk.length;
      if (size <= max) return void chunks.push(chunk);
      req.off('data', onData);
      req.pause();
      reject(tooLarge('body', max));
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}

/** @param {Req} req */
function webHeaders(req) {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  return headers;
}

/**
 * Any web handler: an IncomingMessage turned into a web Request (its body streamed), the
 * Response written back.
 * @param {(request: Request) => Promise<Response>} handle
 * @returns {(req: Req, res: Res) => void}
 */
function webHandler(handle) {
  return (req, res) => {
    const host = req.headers.host ?? '127.0.0.1';
    const path = /** @type {any} */ (req).originalUrl ?? req.url ?? '/';
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const request = new Request(`http://${host}${path}`, {
      method: req.method,
      headers: webHeaders(req),
      body: hasBody ? /** @type {any} */ (Readable.toWeb(req)) : undefined,
      // @ts-ignore duplex is required by Node's fetch for a streamed body
      duplex: 'half',
    });
    handle(request).then(
      async (response) => {
        res.statusCode = response.status;
        response.headers.forEach((value, name) => res.setHeader(name, value));
        res.end(Buffer.from(await response.arrayBuffer()));
      },
      () => failed(res),
    );
  };
}

/** @param {Res} res */
function failed(res) {
  res.statusCode = 500;
  res.setHeader('content-type', 'application/json');
  res.end('{"error":{"code":"internal","message":"the server failed"}}');
}
