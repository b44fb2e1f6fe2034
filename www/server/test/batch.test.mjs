// A request with several operationIds applies them atomically and answers one outcome per op.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { adminState, frozen, query, startTestServer, submit, upsert } from '../testing/helpers.mjs';

const batch = (id, operations, canvasIds, expectedVersions = {}) =>
  frozen({
    id,
    kind: 'shape.upsert',
    operationIds: operations.map((entry) => entry.operationId),
    payload: { operations },
    canvasIds,
    expectedVersions,
  });

test('a batch applies every operation, bumps each touched canvas once and answers per operation', async (t) => {
  const { url } = await startTestServer(t);
  await submit(url, upsert('r0', 'c1', 's1', { x: 0, y: 0 }));
  const reply = await submit(
    url,
    batch(
      'r1',
      [
        { operationId: 'o1', kind: 'shape.upsert', canvasId: 'c1', payload: { shapeId: 's2', shape: { x: 1 } } },
        { operationId: 'o2', kind: 'shape.move', canvasId: 'c1', payload: { shapeId: 's1', x: 3, y: 4 } },
        { operationId: 'o3', canvasId: 'c2', payload: { shapeId: 's9', shape: { r: 2 } } },
      ],
      ['c1', 'c2'],
      { c1: 1, c2: 0 },
    ),
  );
  assert.equal(reply.status, 200);
  assert.equal(reply.body.outcome, 'applied');
  assert.deepEqual(
    reply.body.operations.map((entry) => [entry.operationId, entry.outcome, entry.canonical.canvasId, entry.canonical.version]),
    [
      ['o1', 'applied', 'c1', 2],
      ['o2', 'applied', 'c1', 2],
      ['o3', 'applied', 'c2', 1],
    ],
  );
  assert.equal(reply.body.canonical.canvases.c1.version, 2);
  assert.equal(reply.body.canonical.canvases.c2.version, 1);
  const state = await adminState(url);
  assert.deepEqual(state.canvases.c1.document.shapes, { s1: { x: 3, y: 4 }, s2: { x: 1 } });
  assert.deepEqual(state.canvases.c1.order, ['op-r0', 'o1', 'o2']);
  assert.deepEqual(state.canvases.c2.order, ['o3']);
  for (const id of ['o1', 'o2', 'o3']) assert.equal(state.operations[id].applications, 1);
  assert.equal(state.requests.r1.applications, 1);
});

test('one failing operation rejects the whole batch and applies none of it', async (t) => {
  const { url } = await startTestServer(t);
  const reply = await submit(
    url,
    batch(
      'r1',
      [
        { operationId: 'o1', canvasId: 'c1', payload: { shapeId: 's1', shape: { x: 1 } } },
        { operationId: 'o2', kind: 'shape.recolour', canvasId: 'c1', payload: { shapeId: 'ghost', colour: 'red' } },
      ],
      ['c1'],
    ),
  );
  assert.equal(reply.status, 409);
  assert.equal(reply.body.outcome, 'rejected');
  assert.equal(reply.body.error.code, 'unknown_shape');
  assert.equal(reply.body.error.details.operationId, 'o2');
  assert.deepEqual(
    reply.body.operations.map((entry) => [entry.operationId, entry.outcome, entry.error.code]),
    [
      ['o1', 'rejected', 'batch_aborted'],
      ['o2', 'rejected', 'unknown_shape'],
    ],
  );
  assert.equal(reply.body.canonical.canvases.c1.version, 0);
  const state = await adminState(url);
  assert.equal(state.canvases.c1, undefined);
  assert.equal(state.operations.o1, undefined);
});

test('a batch must match its operationIds and may not hold uploads or runs', async (t) => {
  const { url } = await startTestServer(t);
  const mismatched = await submit(url, {
    ...batch('r1', [{ operationId: 'o1', canvasId: 'c1', payload: { shapeId: 's', shape: {} } }], ['c1']),
    operationIds: ['o1', 'o2'],
  });
  assert.equal(mismatched.status, 422);
  assert.equal(mismatched.body.error.code, 'invalid_payload');
  const withRun = await submit(
    url,
    batch(
      'r2',
      [
        { operationId: 'o1', canvasId: 'c1', payload: { shapeId: 's', shape: {} } },
        { operationId: 'o2', kind: 'run.start', canvasId: 'c1', payload: { runId: 'x' } },
      ],
      ['c1'],
    ),
  );
  assert.equal(withRun.status, 422);
  assert.equal(withRun.body.operations[1].error.code, 'not_batchable');
  const outside = await submit(
    url,
    batch(
      'r3',
      [
        { operationId: 'o1', canvasId: 'c1', payload: { shapeId: 's', shape: {} } },
        { operationId: 'o2', canvasId: 'c3', payload: { shapeId: 's', shape: {} } },
      ],
      ['c1', 'c2'],
    ),
  );
  assert.equal(outside.status, 422);
  assert.equal(outside.body.error.code, 'canvas_not_in_request');
  assert.deepEqual((await adminState(url)).canvases, {});
});

test('started with batches off, a batch is declined and stored, applying nothing; each operation alone is applied', async (t) => {
  const { url } = await startTestServer(t, { batches: false });
  const operations = [
    { operationId: 'o1', payload: { shapeId: 's1', shape: { x: 1 } } },
    { operationId: 'o2', payload: { shapeId: 's2', shape: { x: 2 } } },
  ];
  const declined = await submit(url, batch('r1', operations, ['c1']));
  assert.equal(declined.status, 422);
  assert.equal(declined.body.outcome, 'rejected');
  assert.equal(declined.body.error.code, 'batch_not_supported');
  // Stored: a repeat and a query get the same decline.
  assert.deepEqual((await submit(url, batch('r1', operations, ['c1']))).body, declined.body);
  const asked = await query(url, 'r1');
  assert.equal(asked.status, 422);
  assert.deepEqual(asked.body, declined.body);
  let state = await adminState(url);
  assert.equal(state.canvases.c1?.version ?? 0, 0, 'nothing applied');
  assert.equal(state.operations.o1, undefined);
  // Each operation on its own, under a key of its own, as the client falls back.
  for (const [key, { operationId, payload }] of [['r2', operations[0]], ['r3', operations[1]]]) {
    const alone = await submit(url, frozen({ id: key, kind: 'shape.upsert', operationIds: [operationId], payload, canvasIds: ['c1'] }));
    assert.equal(alone.status, 200);
    assert.equal(alone.body.outcome, 'applied');
  }
  state = await adminState(url);
  assert.deepEqual(state.canvases.c1.order, ['o1', 'o2']);
  assert.equal(state.canvases.c1.version, 2);
});

test('batches are taken by default', async (t) => {
  const { url } = await startTestServer(t);
  const reply = await submit(url, batch('r1', [
    { operationId: 'o1', payload: { shapeId: 's1', shape: {} } },
    { operationId: 'o2', payload: { shapeId: 's2', shape: {} } },
  ], ['c1']));
  assert.equal(reply.status, 200);
  await assert.rejects(startTestServer(t, { batches: 'no' }), /batches must be true or false/);
});
