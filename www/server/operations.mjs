// Document operations: the kinds that edit a canvas document, as pure functions.
//
// A canvas document is `{ shapes: {[shapeId]: object}, assets: {[assetId]: object},
// runs: {[runId]: status} }`, and `records: {[recordId]: object}` once a record kind touched it
// (what a record-store editor such as tldraw keeps: `record.put`, `record.remove`). Each function checks its payload first (a bad payload is a
// permanent `invalid_payload` refusal) and then applies itself to a document the caller owns; a
// refusal that depends on the current state (e.g. moving a shape that is gone) is a conflict.

import { MAX_ID_LENGTH, isReservedKey, wireError } from './protocol.mjs';

/** Kinds interpreted by this module; each may also appear inside a batch. */
export const DOCUMENT_KINDS = Object.freeze([
  'shape.upsert',
  'shape.move',
  'shape.recolour',
  'shape.delete',
  'record.put',
  'record.remove',
]);

const MAX_COLOUR_LENGTH = 64;

/** @returns {{shapes: object, assets: object, runs: object}} A fresh, empty canvas document. */
export function emptyDocument() {
  return { shapes: {}, assets: {}, runs: {} };
}

/**
 * Fills in any part an older stored document lacks, so handlers can rely on the full shape.
 *
 * @param {object} document
 */
export function normaliseDocument(document) {
  return { ...emptyDocument(), ...document };
}

const isPlainObject = (value) =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function payloadError(message) {
  return { ok: false, status: 422, error: wireError('invalid_payload', message) };
}

/** An id the document may key by: 1..MAX_ID_LENGTH characters, no name of Object.prototype. */
function keyable(id) {
  return typeof id === 'string' && id.length > 0 && id.length <= MAX_ID_LENGTH && !isReservedKey(id);
}

/** The id a record kind names: the record's own `id` (`record.put`) or `id` (`record.remove`). */
function recordIdOf(kind, payload) {
  const id = kind === 'record.put' ? payload?.record?.id : payload?.id;
  return keyable(id) ? id : null;
}

/** Checks a record kind's payload (see {@link checkDocumentPayload}). */
function checkRecordPayload(kind, payload) {
  if (kind === 'record.put' && !isPlainObject(payload.record)) {
    return payloadError('record.put needs a record object');
  }
  return recordIdOf(kind, payload)
    ? { ok: true }
    : payloadError(`${kind} needs an id of 1..${MAX_ID_LENGTH} characters that is not a name of Object.prototype`);
}

function shapeIdOf(payload) {
  const shapeId = payload?.shapeId;
  return typeof shapeId === 'string' && shapeId.length > 0 && shapeId.length <= MAX_ID_LENGTH
    ? shapeId
    : null;
}

/**
 * Validates a document operation's payload without looking at any document.
 *
 * @param {string} kind One of {@link DOCUMENT_KINDS}.
 * @param {unknown} payload
 * @returns {{ok: true} | {ok: false, status: number, error: object}}
 */
export function checkDocumentPayload(kind, payload) {
  if (!isPlainObject(payload)) return payloadError(`${kind} needs an object payload`);
  if (kind.startsWith('record.')) return checkRecordPayload(kind, payload);
  if (!shapeIdOf(payload)) return payloadError(`${kind} needs a shapeId of 1..${MAX_ID_LENGTH} characters`);
  // `shapes.__proto__ = shape` would set the document's prototype, and the shape would vanish.
  if (isReservedKey(payload.shapeId)) {
    return payloadError(`shapeId ${payload.shapeId} is reserved (a name of Object.prototype)`);
  }
  switch (kind) {
    case 'shape.upsert':
      return isPlainObject(payload.shape)
        ? { ok: true }
        : payloadError('shape.upsert needs a shape object');
    case 'shape.move':
      return Number.isFinite(payload.x) && Number.isFinite(payload.y)
        ? { ok: true }
        : payloadError('shape.move needs finite numbers x and y');
    case 'shape.recolour':
      return typeof payload.colour === 'string' &&
        payload.colour.length > 0 &&
        payload.colour.length <= MAX_COLOUR_LENGTH
        ? { ok: true }
        : payloadError(`shape.recolour needs a colour string of 1..${MAX_COLOUR_LENGTH} characters`);
    case 'shape.delete':
      return { ok: true };
    default:
      return { ok: false, status: 422, error: wireError('unknown_kind', `unknown kind ${kind}`) };
  }
}

/**
 * Applies a validated document operation to `document` in place.
 *
 * @param {{shapes: object}} document Owned by the caller (a working copy).
 * @param {string} kind
 * @param {object} payload Already accepted by {@link checkDocumentPayload}.
 * @returns {{ok: true, result: {shapeId: string, shape: object | null} | {recordId: string, record: object | null}} |
 *           {ok: false, status: number, error: object}}
 */
export function applyDocumentOperation(document, kind, payload) {
  if (kind === 'record.put' || kind === 'record.remove') {
    const recordId = recordIdOf(kind, payload);
    document.records ??= {};
    // Removing a record already gone still achieves what the user asked for.
    if (kind === 'record.put') document.records[recordId] = payload.record;
    else delete document.records[recordId];
    return { ok: true, result: { recordId, record: document.records[recordId] ?? null } };
  }
  const shapeId = shapeIdOf(payload);
  const current = Object.hasOwn(document.shapes, shapeId) ? document.shapes[shapeId] : undefined;
  const missing = () => ({
    ok: false,
    status: 409,
    error: wireError('unknown_shape', `shape ${shapeId} does not exist on this canvas`),
  });
  switch (kind) {
    case 'shape.upsert':
      document.shapes[shapeId] = payload.shape;
      break;
    case 'shape.move':
      // A move of a shape deleted meanwhile is refused rather than resurrecting a bare shape.
      if (!current) return missing();
      document.shapes[shapeId] = { ...current, x: payload.x, y: payload.y };
      break;
    case 'shape.recolour':
      if (!current) return missing();
      document.shapes[shapeId] = { ...current, colour: payload.colour };
      break;
    case 'shape.delete':
      // Deleting a shape that is already gone still achieves what the user asked for.
      delete document.shapes[shapeId];
      break;
    default:
      return { ok: false, status: 422, error: wireError('unknown_kind', `unknown kind ${kind}`) };
  }
  return { ok: true, result: { shapeId, shape: document.shapes[shapeId] ?? null } };
}
