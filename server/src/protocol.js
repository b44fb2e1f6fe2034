//! Wire protocol v1 (docs/protocol.md) for the kit: checking a submit within limits, and the digest
//! that decides "same request". No database here, and no HTTP request or response (a multipart body
//! is read with the web FormData parser).

import * as crypto from 'node:crypto';

/** The only protocol version the kit accepts. */
export const PROTOCOL_VERSION = 1;

/** Defaults for the size limits (each one an option of createKit). */
export const DEFAULT_LIMITS = Object.freeze({
  maxBodyBytes: 1024 * 1024,
  maxBatch: 256,
  maxBlobBytes: 16 * 1024 * 1024,
});

/** A refusal answered at once and never stored under the key. */
export class ProtocolError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.name = 'ProtocolError';
    this.status = status;
    this.code = code;
  }
}

/** @param {unknown} v @returns {v is Record<string, unknown>} */
const isPlainObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * JSON with keys sorted at every depth, so a digest does not depend on a serialiser's key order.
 * @param {unknown} value
 * @returns {string}
 */
export function canonicalJson(value) {
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i += 1) out += (i === 0 ? '' : ',') + canonicalJson(value[i]);
    return `${out}]`;
  }
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    let out = '{';
    for (const k of keys) {
      if (value[k] === undefined) continue;
      out += `${out.length === 1 ? '' : ','}${JSON.stringify(k)}:${canonicalJson(value[k])}`;
    }
    return `${out}}`;
  }
  return JSON.stringify(value ?? null);
}

/** Hex SHA-256: Node's one-shot `crypto.hash` where it has it (20.12+). */
export const sha256 = /** @type {any} */ (crypto).hash
  ? (/** @type {Uint8Array | string} */ data) => /** @type {any} */ (crypto).hash('sha256', data, 'hex')
  : (/** @type {Uint8Array | string} */ data) => crypto.createHash('sha256').update(data).digest('hex');

/** @param {string} what @param {number} max */
export const tooLarge = (what, max) =>
  new ProtocolError(413, `${what}_too_large`, `the ${what} is larger than ${max} bytes`);

/** @param {string} message */
const invalid = (message) => new ProtocolError(400, 'invalid_request', message);

const utf8 = new TextDecoder();

/**
 * @typedef {object} Submit
 * @property {string} key Idempotency key (the request's `id`).
 * @property {Record<string, unknown>} body The frozen request as JSON.
 * @property {{bytes: Uint8Array, type: string, size: number, sha256: string} | null} blob
 * @property {string} digest Same digest = same request.
 */

/**
 * Parses and checks a submit (JSON or multipart/form-data with parts `request` and `blob`).
 * @param {import('./incoming.js').Incoming} request
 * @param {typeof DEFAULT_LIMITS} limits
 * @returns {Promise<Submit>}
 */
export async function parseSubmit(request, limits) {
  const type = (request.headers.get('content-type') ?? '').toLowerCase();
  const bytes = await request.read(limits.maxBodyBytes + limits.maxBlobBytes);
  /** @type {unknown} */
  let json;
  /** @type {Submit['blob']} */
  let blob = null;
  if (type.startsWith('application/json')) {
    if (bytes.byteLength > limits.maxBodyBytes) throw tooLarge('body', limits.maxBodyBytes);
    json = parseJson(utf8.decode(bytes));
  } else if (type.startsWith('multipart/form-data')) {
    /** @type {FormData} */
    let form;
    try {
      form = await new Response(bytes, { headers: { 'content-type': type } }).formData();
    } catch {
      throw invalid('the multipart body could not be read');
    }
    const part = form.get('request');
    const text = typeof part === 'string' ? part : part ? await part.text() : null;
    if (text == null) throw invalid('the multipart body has no `request` part');
    if (new TextEncoder().encode(text).byteLength > limits.maxBodyBytes) {
      throw tooLarge('body', limits.maxBodyBytes);
    }
    json = parseJson(text);
    const file = form.get('blob');
    if (file != null && typeof file !== 'string') {
      if (file.size > limits.maxBlobBytes) throw tooLarge('blob', limits.maxBlobBytes);
      const data = new Uint8Array(await file.arrayBuffer());
      blob = { bytes: data, type: file.type, size: data.byteLength, sha256: sha256(data) };
    }
  } else {
    throw new ProtocolError(415, 'unsupported_media_type', 'send application/json or multipart/form-data');
  }
  if (!isPlainObject(json)) throw invalid('the body must be a JSON object');
  if (json.protocolVersion !== PROTOCOL_VERSION) {
    throw new ProtocolError(422, 'unsupported_protocol', `protocolVersion must be ${PROTOCOL_VERSION}`);
  }
  const key = json.id;
  if (typeof key !== 'string' || key.length === 0 || key.length > 256) {
    throw invalid('id must be a string of 1..256 characters');
  }
  const header = request.headers.get('idempotency-key');
  if (header != null && header !== key) {
    throw new ProtocolError(400, 'idempotency_key_mismatch', 'idempotency-key must equal the body id');
  }
  const ops = json.operationIds;
  if (ops !== undefined) {
    if (!Array.isArray(ops) || ops.length === 0) throw invalid('operationIds must be a non-empty array');
    if (ops.length > limits.maxBatch) {
      throw new ProtocolError(413, 'batch_too_large', `a batch carries at most ${limits.maxBatch} operations`);
    }
  }
  const digest = sha256(
    canonicalJson({ body: json, blob: blob ? { sha256: blob.sha256, size: blob.size } : null }),
  );
  return { key, body: json, blob, digest };
}

/** @param {string} text */
function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    throw invalid('the body is not valid JSON');
  }
}

/**
 * The HTTP status of an outcome (docs/protocol.md): applied 200, accepted 202, rejected 422 (or 409
 * for a conflict the app names so).
 * @param {{outcome: string, status?: number}} answer
 */
export function statusOf(answer) {
  if (answer.outcome === 'applied') return 200;
  if (answer.outcome === 'accepted') return 202;
  return answer.status === 409 ? 409 : 422;
}
