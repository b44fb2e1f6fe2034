// Small HTTP helpers: CORS, JSON answers, bounded body reading.

import { ProtocolError } from './protocol.mjs';

const ALLOWED_HEADERS = new Set(['content-type', 'idempotency-key', 'authorization']);

/**
 * Sets the CORS headers every protocol and asset answer carries. The test pages live on another
 * origin; auth is by bearer token, never by cookie, so a wildcard origin is safe there. Every
 * answer says `nosniff`: an asset is only ever what its content-type says.
 *
 * @param {import('node:http').ServerResponse} res
 */
export function setCorsHeaders(res) {
  res.setHeader('access-control-allow-origin', '*');
  res.setHeader('access-control-expose-headers', 'retry-after');
  res.setHeader('x-content-type-options', 'nosniff');
}

/** Pages served from this machine: `http://127.0.0.1:PORT`, `http://localhost:PORT`. */
const LOOPBACK_ORIGIN = /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$/;

/**
 * The CORS headers of an admin answer: never `*`. Only a page served from this machine (the
 * demos, the test pages) may read it, and only with the admin token (checked by the caller).
 *
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res
 */
export function setAdminCorsHeaders(req, res) {
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('vary', 'origin');
  const origin = req.headers.origin;
  if (typeof origin === 'string' && LOOPBACK_ORIGIN.test(origin)) {
    res.setHeader('access-control-allow-origin', origin);
  }
}

/**
 * Answers a CORS preflight. `Access-Control-Allow-Headers` has no `x-*` pattern syntax, so the
 * requested headers are echoed back when each is allowed (the fixed set or any `x-` header).
 *
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res
 */
export function answerPreflight(req, res) {
  const requested = (req.headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  // x-admin-token is an x- header too: the admin routes' own CORS headers decide who may send it.
  const allowed = requested.filter((name) => ALLOWED_HEADERS.has(name) || name.startsWith('x-'));
  res.writeHead(204, {
    'access-control-allow-methods': 'GET, POST, OPTIONS',
    'access-control-allow-headers': [...new Set([...ALLOWED_HEADERS, ...allowed])].join(', '),
    'access-control-max-age': '600',
    'content-length': '0',
  });
  res.end();
}

/**
 * Sends a JSON body.
 *
 * @param {import('node:http').ServerResponse} res
 * @param {number} status
 * @param {unknown} body
 * @param {Record<string, string>} [headers]
 */
export function sendJson(res, status, body, headers = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

/**
 * Sends a status with no body at all (e.g. 409 "still in progress").
 *
 * @param {import('node:http').ServerResponse} res
 * @param {number} status
 */
export function sendEmpty(res, status) {
  res.writeHead(status, { 'content-length': '0', 'cache-control': 'no-store' });
  res.end();
}

/**
 * Reads a whole request body, refusing more than `limit` bytes.
 *
 * @param {import('node:http').IncomingMessage} req
 * @param {number} limit
 * @returns {Promise<Buffer>}
 * @throws {ProtocolError} 413 `payload_too_large`.
 */
export async function readBody(req, limit) {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    throw new ProtocolError(413, 'payload_too_large', `body exceeds ${limit} bytes`);
  }
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > limit) throw new ProtocolError(413, 'payload_too_large', `body exceeds ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Parses JSON text, mapping a syntax error to a 400.
 *
 * @param {string} text
 * @returns {unknown}
 * @throws {ProtocolError} 400 `invalid_json`.
 */
export function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    throw new ProtocolError(400, 'invalid_json', 'the body is not valid JSON');
  }
}

/**
 * The media type of a request without parameters, lower-cased.
 *
 * @param {import('node:http').IncomingMessage} req
 */
export function mediaType(req) {
  return (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
}
