// Wire protocol v1 (docs/protocol.md): the shape of a frozen request body, the digest that decides
// whether two bodies sent under one idempotency key are "the same request", and the answer
// constructors.
//
// Nothing here touches the network or the database, so every rule is testable in isolation.

import { createHash } from 'node:crypto';
// The kit's canonical JSON (object keys sorted at every depth): one writer of it in the
// repository, so this server's digests and the kit's spell a value the same way.
import { canonicalJson } from '../../server/src/index.js';

/** The only protocol version this server interprets. */
export const PROTOCOL_VERSION = 1;

/** Upper bound on ids (request ids, operation ids, canvas ids, run ids) so keys stay indexable. */
export const MAX_ID_LENGTH = 256;

/** Upper bound on the operations one request may carry. */
export const MAX_OPERATIONS_PER_REQUEST = 256;

/**
 * A refusal that is answered straight away and never stored under the key: the body is not a
 * request this server can hold to its at-most-once promise (malformed, mismatched key, too big).
 */
export class ProtocolError extends Error {
  /**
   * @param {number} status HTTP status to answer with (400, 413, 415, ...).
   * @param {string} code Stable machine-readable code.
   * @param {string} message Short human-readable explanation.
   */
  constructor(status, code, message) {
    super(message);
    this.name = 'ProtocolError';
    this.status = status;
    this.code = code;
  }
}

/**
 * @typedef {object} WireRequest The protocol fields of a frozen request, normalised.
 * @property {string} id Idempotency key.
 * @property {string[]} operationIds Operations carried, in sequence order (at least one).
 * @property {string} kind Operation type, e.g. `shape.upsert`.
 * @property {string} [ownerCanvasId]
 * @property {string} [runId]
 * @property {number} protocolVersion
 * @property {unknown} payload Opaque JSON, interpreted per kind.
 * @property {string[]} canvasIds Sorted, unique canvases the request touches.
 * @property {Record<string, number>} expectedVersions Optimistic-concurrency guards.
 */

const isPlainObject = (value) =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isId = (value) =>
  typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH;

/**
 * Whether `key` names a property of Object.prototype (`__proto__`, `constructor`, `toString`,
 * …): ids used as keys of plain objects (shapes, canvases, runs) must not be one, or a write
 * under it changes the object's prototype or shadows a method instead of storing a value.
 *
 * @param {string} key
 */
export const isReservedKey = (key) => Object.hasOwn(Object.prototype, key);

function reserved(what, id) {
  return new ProtocolError(422, 'reserved_id', `${what} ${id} is reserved (a name of Object.prototype)`);
}

function invalid(message) {
  return new ProtocolError(400, 'invalid_request', message);
}

/**
 * Checks the structure of a parsed request body and keeps only the protocol fields.
 *
 * Fields outside the protocol (a client's bookkeeping such as `phase` or `attempt`) are dropped,
 * so they can neither reach the store nor change the digest of a resend. Semantic refusals
 * (unsupported protocol version, unknown kind, bad payload) are *not* decided here: those are
 * stored outcomes, decided by the engine.
 *
 * @param {unknown} body Parsed JSON.
 * @returns {WireRequest}
 * @throws {ProtocolError} 400 `invalid_request` when the structure is wrong; 422 `reserved_id` for a
 *   canvas or run id that names a property of Object.prototype.
 */
export function parseWireRequest(body) {
  if (!isPlainObject(body)) throw invalid('the body must be a JSON object');
  const { id, operationIds, kind, ownerCanvasId, runId, protocolVersion, payload, canvasIds } =
    body;
  if (!isId(id)) throw invalid(`id must be a string of 1..${MAX_ID_LENGTH} characters`);
  if (
    !Array.isArray(operationIds) ||
    operationIds.length === 0 ||
    operationIds.length > MAX_OPERATIONS_PER_REQUEST ||
    !operationIds.every(isId)
  ) {
    throw invalid(`operationIds must be 1..${MAX_OPERATIONS_PER_REQUEST} ids`);
  }
  if (new Set(operationIds).size !== operationIds.length) {
    throw invalid('operationIds must be unique');
  }
  if (!isId(kind)) throw invalid('kind must be a non-empty string');
  if (ownerCanvasId != null && !isId(ownerCanvasId)) throw invalid('ownerCanvasId must be an id');
  if (runId != null && !isId(runId)) throw invalid('runId must be an id');
  if (!Number.isSafeInteger(protocolVersion)) throw invalid('protocolVersion must be an integer');
  if (!('payload' in body)) throw invalid('payload is required (null is allowed)');
  if (!Array.isArray(canvasIds) || !canvasIds.every(isId)) {
    throw invalid('canvasIds must be an array of ids');
  }
  for (const canvasId of [...canvasIds, ...(ownerCanvasId != null ? [ownerCanvasId] : [])]) {
    if (isReservedKey(canvasId)) throw reserved('canvas id', canvasId);
  }
  if (runId != null && isReservedKey(runId)) throw reserved('run id', runId);
  // The client claims canvases by this list, so it must already be sorted and unique.
  for (let i = 1; i < canvasIds.length; i += 1) {
    if (!(canvasIds[i - 1] < canvasIds[i])) throw invalid('canvasIds must be sorted and unique');
  }
  const expectedVersions = body.expectedVersions ?? {};
  if (!isPlainObject(expectedVersions)) throw invalid('expectedVersions must be an object');
  for (const [canvasId, version] of Object.entries(expectedVersions)) {
    if (!isId(canvasId) || !Number.isSafeInteger(version) || version < 0) {
      throw invalid('expectedVersions must map canvas ids to non-negative integers');
    }
    if (isReservedKey(canvasId)) throw reserved('canvas id', canvasId);
  }
  /** @type {WireRequest} */
  const request = {
    id,
    operationIds: [...operationIds],
    kind,
    protocolVersion,
    payload: payload ?? null,
    canvasIds: [...canvasIds],
    expectedVersions: { ...expectedVersions },
  };
  if (ownerCanvasId != null) request.ownerCanvasId = ownerCanvasId;
  if (runId != null) request.runId = runId;
  return request;
}

/**
 * The digest that identifies a request body: SHA-256 of the canonical protocol fields plus, for
 * an upload, the SHA-256 and size of the blob. Same digest = same request.
 *
 * @param {WireRequest} request
 * @param {{sha256: string, size: number} | null} [blob]
 * @returns {string} Hex digest.
 */
export function requestDigest(request, blob = null) {
  const material = canonicalJson({
    request,
    blob: blob ? { sha256: blob.sha256, size: blob.size } : null,
  });
  return createHash('sha256').update(material).digest('hex');
}

/**
 * A stable error record (bounded, as docs/protocol.md says): `{code, message, details?}`.
 *
 * @param {string} code
 * @param {string} message
 * @param {unknown} [details]
 */
export function wireError(code, message, details) {
  const error = { code, message };
  if (details !== undefined) error.details = details;
  return error;
}

/**
 * @typedef {object} Answer The JSON body of a protocol answer.
 * @property {'applied' | 'rejected' | 'accepted'} outcome
 * @property {{code: string, message: string, details?: unknown}} [error]
 * @property {unknown} [canonical]
 * @property {Array<{operationId: string, outcome: string, canonical?: unknown, error?: object}>} [operations]
 */

/**
 * An answer together with the HTTP status it is sent with.
 *
 * @typedef {object} Reply
 * @property {number} status 200 applied, 202 accepted, 409 or 422 rejected.
 * @property {Answer} answer
 */

/**
 * Refusal for a key already used with a different body. Never stored: the key keeps its first
 * outcome.
 *
 * @returns {Reply}
 */
export function keyReusedReply() {
  return {
    status: 422,
    answer: {
      outcome: 'rejected',
      error: wireError(
        'idempotency_key_reused',
        'this idempotency key was already used with a different request body',
      ),
    },
  };
}

/**
 * Body for an answer that is not a protocol outcome (401, 403, 404, 429, 503, ...).
 *
 * @param {string} code
 * @param {string} message
 */
export function errorBody(code, message) {
  return { error: wireError(code, message) };
}
