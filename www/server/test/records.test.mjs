// Record kinds (`record.put`, `record.remove`): what a record-store editor such as tldraw
// sends, alone or batched, with their payloads checked like every document kind.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { adminState, frozen, startTestServer, submit } from '../testing/helpers.mjs';

const put = (id) => ({ record: { id, typeName: 'shape', x: id.length } });

test('record.put and record.remove apply alone and in one batch, and the batch is atomic', async (t) => {
  const { url } = await startTestServer(t);
  const alone = await submit(url, frozen({ id: 'r1', kind: 'record.put', payload: put('shape:a'), canvasIds: ['c1'] }));
  assert.equal(alone.status, 200);
  assert.deepEqual(alone.body.operations[0].canonical, {
    canvasId: 'c1',
    version: 1,
    recordId: 'shape:a',
    record: { id: 'shape:a', typeName: 'shape', x: 7 },
  });
  const operations = [
    { operationId: 'o1', kind: 'record.put', payload: put('shape:b') },
    { operationId: 'o2', kind: 'record.remove', payload: { id: 'shape:a' } },
    { operationId: 'o3', kind: 'record.remove', payload: { id: 'shape:never' } },
  ];
  const batch = await submit(
    url,
    frozen({ id: 'r2', kind: 'record.put', operationIds: ['o1', 'o2', 'o3'], payload: { operations }, canvasIds: ['c1'] }),
  );
  assert.equal(batch.status, 200);
  assert.deepEqual(batch.body.operations.map((o) => [o.operationId, o.outcome, o.canonical.record]), [
    ['o1', 'applied', { id: 'shape:b', typeName: 'shape', x: 7 }],
    ['o2', 'applied', null],
    ['o3', 'applied', null],
  ]);
  const canvas = (await adminState(url)).canvases.c1;
  assert.equal(canvas.version, 2, 'one version per request');
  assert.deepEqual(Object.keys(canvas.document.records), ['shape:b']);

  // One bad entry: nothing of the batch applies.
  const bad = await submit(
    url,
    frozen({
      id: 'r3',
      kind: 'record.put',
      operationIds: ['o4', 'o5'],
      payload: { operations: [{ operationId: 'o4', payload: put('shape:c') }, { operationId: 'o5', payload: { record: { id: '__proto__' } } }] },
      canvasIds: ['c1'],
    }),
  );
  assert.equal(bad.status, 422);
  assert.equal(bad.body.error.code, 'invalid_payload');
  assert.deepEqual(Object.keys((await adminState(url)).canvases.c1.document.records), ['shape:b']);
});

test('record payloads are checked: an object record with an id, an id to remove', async (t) => {
  const { url } = await startTestServer(t);
  const cases = [
    ['record.put', { record: 'not an object' }],
    ['record.put', { record: { typeName: 'shape' } }],
    ['record.put', { record: { id: '' } }],
    ['record.remove', {}],
    ['record.remove', { id: 'constructor' }],
  ];
  for (const [index, [kind, payload]] of cases.entries()) {
    const reply = await submit(url, frozen({ id: `bad-${index}`, kind, payload, canvasIds: ['c1'] }));
    assert.equal(reply.status, 422, `${kind} ${JSON.stringify(payload)}`);
    assert.equal(reply.body.error.code, 'invalid_payload');
  }
});

test('a canvas document over 64 KiB is left out of the canonical, so answers stay small', async (t) => {
  const { url } = await startTestServer(t);
  const big = 'x'.repeat(1_000);
  let last;
  for (let i = 0; i < 80; i += 1) {
    last = await submit(url, frozen({ id: `r${i}`, kind: 'record.put', canvasIds: ['c'], payload: { record: { id: `shape:${i}`, typeName: 'shape', big } } }));
    assert.equal(last.status, 200, JSON.stringify(last.body));
  }
  assert.ok(last.text.length < 16_384, `the answer is ${last.text.length} bytes`);
  assert.deepEqual(Object.keys(last.body.canonical.canvases.c).sort(), ['documentOmitted', 'version']);
  assert.equal(last.body.canonical.canvases.c.version, 80);
  assert.equal(last.body.operations[0].canonical.record.id, 'shape:79', 'the per-operation canonical stays');
  const small = await submit(url, frozen({ id: 'small', kind: 'record.put', canvasIds: ['d'], payload: { record: { id: 'shape:1', typeName: 'shape' } } }));
  assert.ok(small.body.canonical.canvases.d.document, 'a small document is carried');
});
