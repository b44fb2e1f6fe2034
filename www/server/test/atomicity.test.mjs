// Apply and record-outcome share one SQLite transaction: if recording fails, nothing was applied.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { adminState, query, startTestServer, submit, upsert } from '../testing/helpers.mjs';

test('a failure while storing the outcome rolls the application back', async (t) => {
  const server = await startTestServer(t);
  const { url, store } = server;
  await submit(url, upsert('r0', 'c1', 's0', { x: 0 }));
  const insertRequest = store.insertRequest;
  // Fail at the last step, after the canvas and the logs were written in the transaction.
  store.insertRequest = () => {
    throw new Error('disk full (simulated)');
  };
  const originalWrite = process.stderr.write;
  process.stderr.write = () => true; // the server logs the unexpected error; keep test output clean
  let failed;
  try {
    failed = await submit(url, upsert('r1', 'c1', 's1', { x: 1 }));
  } finally {
    process.stderr.write = originalWrite;
    store.insertRequest = insertRequest;
  }
  assert.equal(failed.status, 500);
  assert.equal(failed.body.error.code, 'internal_error');
  let state = await adminState(url);
  assert.equal(state.canvases.c1.version, 1, 'the canvas write was rolled back');
  assert.deepEqual(Object.keys(state.canvases.c1.document.shapes), ['s0']);
  assert.equal(state.operations['op-r1'], undefined, 'the operation log write was rolled back');
  assert.deepEqual(state.canvases.c1.order, ['op-r0']);
  assert.equal((await query(url, 'r1')).status, 404, 'the key is still unknown, so a resend may apply');
  // The client's retry of the same frozen request then applies exactly once.
  assert.equal((await submit(url, upsert('r1', 'c1', 's1', { x: 1 }))).status, 200);
  state = await adminState(url);
  assert.equal(state.canvases.c1.version, 2);
  assert.equal(state.operations['op-r1'].applications, 1);
});
