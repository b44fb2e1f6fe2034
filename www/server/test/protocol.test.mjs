// Protocol v1 basics: submit, repeat, key reuse, query, version conflicts, refusals.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { adminState, frozen, query, startTestServer, submit, upsert } from '../testing/helpers.mjs';
import { parseWireRequest, requestDigest } from '../protocol.mjs';

test('a submit is applied, bumps the canvas version and carries canonical state', async (t) => {
  const { url } = await startTestServer(t);
  const reply = await submit(url, upsert('r1', 'c1', 's1', { x: 1, y: 2 }));
  assert.equal(reply.status, 200);
  assert.equal(reply.body.outcome, 'applied');
  assert.deepEqual(reply.body.canonical.canvases.c1.version, 1);
  assert.deepEqual(reply.body.canonical.canvases.c1.document.shapes, { s1: { x: 1, y: 2 } });
  assert.deepEqual(reply.body.operations, [
    { operationId: 'op-r1', outcome: 'applied', canonical: { canvasId: 'c1', version: 1, shapeId: 's1', shape: { x: 1, y: 2 } } },
  ]);
  const state = await adminState(url);
  assert.equal(state.canvases.c1.version, 1);
  assert.equal(state.requests.r1.applications, 1);
  assert.equal(state.operations['op-r1'].applications, 1);
  assert.deepEqual(state.canvases.c1.order, ['op-r1']);
});

test('a repeat submit is answered with the stored outcome and applies nothing again', async (t) => {
  const { url } = await startTestServer(t);
  const body = upsert('r1', 'c1', 's1', { x: 1 });
  const first = await submit(url, body);
  // Same request, keys in another order: still the same body by digest.
  const reordered = Object.fromEntries(Object.entries(body).reverse());
  const second = await submit(url, reordered);
  assert.equal(second.status, first.status);
  assert.deepEqual(second.body, first.body);
  const state = await adminState(url);
  assert.equal(state.requests.r1.applications, 1);
  assert.equal(state.requests.r1.submits, 2);
  assert.equal(state.canvases.c1.version, 1);
});

test('extra bookkeeping fields in the body neither change the digest nor get stored', async (t) => {
  const { url } = await startTestServer(t);
  const body = upsert('r1', 'c1', 's1', { x: 1 });
  await submit(url, { ...body, phase: 'dispatched', attempt: 1 });
  const again = await submit(url, { ...body, phase: 'dispatched', attempt: 7 });
  assert.equal(again.status, 200);
  assert.equal(again.body.outcome, 'applied');
  assert.equal((await adminState(url)).requests.r1.applications, 1);
});

test('a key reused with a different body is refused and the first outcome stands', async (t) => {
  const { url } = await startTestServer(t);
  await submit(url, upsert('r1', 'c1', 's1', { x: 1 }));
  const reused = await submit(url, upsert('r1', 'c1', 's1', { x: 999 }));
  assert.equal(reused.status, 422);
  assert.equal(reused.body.outcome, 'rejected');
  assert.equal(reused.body.error.code, 'idempotency_key_reused');
  const stored = await query(url, 'r1');
  assert.equal(stored.body.outcome, 'applied');
  const state = await adminState(url);
  assert.deepEqual(state.canvases.c1.document.shapes.s1, { x: 1 });
  assert.equal(state.canvases.c1.version, 1);
});

test('the idempotency-key header is required and must equal the body id', async (t) => {
  const { url } = await startTestServer(t);
  const missing = await submit(url, upsert('r1', 'c1', 's1', {}), { key: null });
  assert.equal(missing.status, 400);
  assert.equal(missing.body.error.code, 'missing_idempotency_key');
  const mismatch = await submit(url, upsert('r1', 'c1', 's1', {}), { key: 'r2' });
  assert.equal(mismatch.status, 400);
  assert.equal(mismatch.body.error.code, 'idempotency_key_mismatch');
  // Neither was stored under either key.
  assert.equal((await query(url, 'r1')).status, 404);
  assert.equal((await query(url, 'r2')).status, 404);
});

test('a query of an unknown key is 404; after the submit it returns the outcome', async (t) => {
  const { url } = await startTestServer(t);
  const before = await query(url, 'r1');
  assert.equal(before.status, 404);
  await submit(url, upsert('r1', 'c1', 's1', { x: 1 }));
  const after = await query(url, 'r1');
  assert.equal(after.status, 200);
  assert.equal(after.body.outcome, 'applied');
  const state = await adminState(url);
  assert.equal(state.requests.r1.queries, 1);
  assert.equal(state.requests.r1.applications, 1);
});

test('a stale expectedVersions is rejected 409 with the canonical canvases, and stays rejected', async (t) => {
  const { url } = await startTestServer(t);
  await submit(url, upsert('r1', 'c1', 's1', { x: 1 }, { c1: 0 }));
  const stale = await submit(url, upsert('r2', 'c1', 's1', { x: 2 }, { c1: 0 }));
  assert.equal(stale.status, 409);
  assert.equal(stale.body.outcome, 'rejected');
  assert.equal(stale.body.error.code, 'version_conflict');
  assert.deepEqual(stale.body.error.details.stale, [{ canvasId: 'c1', expected: 0, actual: 1 }]);
  assert.deepEqual(stale.body.canonical, {
    canvases: { c1: { version: 1, document: { shapes: { s1: { x: 1 } }, assets: {}, runs: {} } } },
  });
  assert.equal(stale.body.operations[0].error.code, 'version_conflict');
  // The refusal is the key's outcome for good, even once the version would match.
  const repeat = await submit(url, upsert('r2', 'c1', 's1', { x: 2 }, { c1: 0 }));
  assert.equal(repeat.status, 409);
  const state = await adminState(url);
  assert.equal(state.canvases.c1.version, 1);
  assert.equal(state.requests.r2.applications, 0);
  assert.equal(state.operations['op-r2'], undefined);
});

test('a matching expectedVersions applies', async (t) => {
  const { url } = await startTestServer(t);
  await submit(url, upsert('r1', 'c1', 's1', { x: 1 }));
  const next = await submit(url, upsert('r2', 'c1', 's1', { x: 2 }, { c1: 1 }));
  assert.equal(next.status, 200);
  assert.equal(next.body.canonical.canvases.c1.version, 2);
});

test('shape kinds: move and recolour patch, delete removes, a move of a missing shape conflicts', async (t) => {
  const { url } = await startTestServer(t);
  await submit(url, upsert('r1', 'c1', 's1', { type: 'rect', x: 0, y: 0, colour: 'red' }));
  const moved = await submit(url, frozen({ id: 'r2', kind: 'shape.move', payload: { shapeId: 's1', x: 5, y: 6 }, canvasIds: ['c1'] }));
  assert.equal(moved.status, 200);
  const recoloured = await submit(url, frozen({ id: 'r3', kind: 'shape.recolour', payload: { shapeId: 's1', colour: 'blue' }, canvasIds: ['c1'] }));
  assert.deepEqual(recoloured.body.operations[0].canonical.shape, { type: 'rect', x: 5, y: 6, colour: 'blue' });
  const deleted = await submit(url, frozen({ id: 'r4', kind: 'shape.delete', payload: { shapeId: 's1' }, canvasIds: ['c1'] }));
  assert.equal(deleted.body.operations[0].canonical.shape, null);
  const lost = await submit(url, frozen({ id: 'r5', kind: 'shape.move', payload: { shapeId: 's1', x: 1, y: 1 }, canvasIds: ['c1'] }));
  assert.equal(lost.status, 409);
  assert.equal(lost.body.error.code, 'unknown_shape');
  assert.equal(lost.body.canonical.canvases.c1.version, 4);
  const state = await adminState(url);
  assert.deepEqual(state.canvases.c1.document.shapes, {});
  assert.deepEqual(state.canvases.c1.order, ['op-r1', 'op-r2', 'op-r3', 'op-r4']);
});

test('unknown kinds, bad payloads and other protocol versions are stored refusals', async (t) => {
  const { url } = await startTestServer(t);
  const unknown = await submit(url, frozen({ id: 'r1', kind: 'shape.teleport', payload: {}, canvasIds: ['c1'] }));
  assert.equal(unknown.status, 422);
  assert.equal(unknown.body.error.code, 'unknown_kind');
  const bad = await submit(url, frozen({ id: 'r2', kind: 'shape.upsert', payload: { shapeId: 's1' }, canvasIds: ['c1'] }));
  assert.equal(bad.status, 422);
  assert.equal(bad.body.error.code, 'invalid_payload');
  const future = await submit(url, frozen({ id: 'r3', kind: 'shape.upsert', protocolVersion: 2, payload: {}, canvasIds: ['c1'] }));
  assert.equal(future.status, 422);
  assert.equal(future.body.error.code, 'unsupported_protocol_version');
  const stored = await query(url, 'r1');
  assert.equal(stored.status, 422);
  assert.equal(stored.body.error.code, 'unknown_kind');
  assert.equal((await adminState(url)).canvases.c1, undefined);
});

test('malformed bodies are refused 400 and not stored', async (t) => {
  const { url } = await startTestServer(t);
  const notJson = await fetch(`${url}/requests`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'r1' },
    body: '{"id": "r1",',
  });
  assert.equal(notJson.status, 400);
  assert.equal((await notJson.json()).error.code, 'invalid_json');
  const unsorted = await submit(url, frozen({ id: 'r1', kind: 'shape.upsert', payload: {}, canvasIds: ['c2', 'c1'] }));
  assert.equal(unsorted.status, 400);
  assert.equal(unsorted.body.error.code, 'invalid_request');
  const wrongType = await fetch(`${url}/requests`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', 'idempotency-key': 'r1' },
    body: 'hello',
  });
  assert.equal(wrongType.status, 415);
  assert.equal((await query(url, 'r1')).status, 404);
});

test('a JSON body over the limit is refused 413', async (t) => {
  const { url } = await startTestServer(t, { maxBodyBytes: 2048 });
  const big = upsert('r1', 'c1', 's1', { text: 'x'.repeat(4096) });
  const reply = await submit(url, big);
  assert.equal(reply.status, 413);
  assert.equal(reply.body.error.code, 'payload_too_large');
  assert.equal((await query(url, 'r1')).status, 404);
});

test("a request digest is the one earlier builds stored (keys sorted by the kit's canonical JSON)", () => {
  // Recorded from the build before this server used the kit's canonicalJson: a digest stored
  // under a key must not change, or a resend of that request would be refused as a reused key.
  const request = parseWireRequest({
    id: 'r-1', operationIds: ['op-1', 'op-2'], kind: 'shape.upsert', ownerCanvasId: 'c1', protocolVersion: 1,
    payload: { shapeId: 's1', shape: { y: 2, x: 1, label: 'ü🔑 "q"', tags: [], n: 1.5e-7 } },
    canvasIds: ['c1', 'c2'], expectedVersions: { c2: 4, c1: 0 },
  });
  assert.equal(requestDigest(request), '363decec47d972f3ab54b4bcb94f2642e5997d3beacf0f614bc852aa233c200a');
  assert.equal(requestDigest(request, { sha256: 'ab'.repeat(32), size: 12 }), '8837cab2a796890a7b3f801cfd19dcdc55708c81261d1027c81886d4a8eca703');
});
