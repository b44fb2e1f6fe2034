//! What the kit reads of a request, whatever carried it: its method, URL, headers, its body read
//! within a bound, and a web Request for the `principal` hook. `fromWebRequest` is here; the
//! node:http adapter (node.js) builds one from an IncomingMessage without a web Request, which
//! costs more CPU than the rest of a small submit.

import { tooLarge } from './protocol.js';

/**
 * @typedef {object} Incoming
 * @property {string} method
 * @property {string} url An absolute URL.
 * @property {{ get(name: string): string | null }} headers
 * @property {(max: number) => Promise<Uint8Array>} read The body; rejects with a 413 past `max` bytes.
 * @property {() => Request} request For the `principal` hook (built on demand).
 */

/** The property of `kit.handle` that takes an Incoming: what toNodeHandler looks for. */
export const SERVE = Symbol.for('canvas-scheduler-server.serve');

/** @param {Request} request @returns {Incoming} */
export function fromWebRequest(request) {
  return { method: request.method, url: request.url, headers: request.headers, read: (max) => readBody(request, max), request: () => request };
}

/**
 * Reads a body, refusing it with 413 as soon as it passes `max` bytes (a lying or absent
 * content-length cannot make the kit buffer more).
 * @param {Request} request
 * @param {number} max
 * @returns {Promise<Uint8Array>}
 */
export async function readBody(request, max) {
  const declared = Number(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) throw tooLarge('body', max);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw tooLarge('body', max);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
