// State lives in the SQLite file: a restart on the same file loses nothing.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { startServer } from '../server.mjs';
import { TEST_ADMIN_TOKEN, adminState, frozen, query, submit, submitUpload, testDb, upsert, waitFor } from '../testing/helpers.mjs';

test('outcomes, canvases, assets and pending runs survive a restart on the same db file', async (t) => {
  const db = await testDb(t, 'restart.sqlite');
  const first = await startServer({ port: 0, db, runApplyMs: 400, adminToken: TEST_ADMIN_TOKEN });
  let second = null;
  t.after(async () => {
    await first.close();
    await second?.close();
  });
  await submit(first.url, upsert('r1', 'c1', 's1', { x: 1 }));
  await submit(first.url, upsert('r2', 'c1', 's1', { x: 9 }, { c1: 0 }));
  const uploaded = await submitUpload(
    first.url,
    frozen({ id: 'u1', kind: 'asset.upload', payload: null, canvasIds: [] }),
    new Blob([Buffer.from('bytes that must survive')], { type: 'text/plain' }),
  );
  const run = await submit(first.url, frozen({ id: 'run1', kind: 'run.start', runId: 'run-1', payload: null, canvasIds: ['c2'] }));
  assert.equal(run.body.outcome, 'accepted');
  const before = await adminState(first.url);
  await first.close();

  second = await startServer({ port: 0, db, runApplyMs: 400, adminToken: TEST_ADMIN_TOKEN });
  const applied = await query(second.url, 'r1');
  assert.equal(applied.status, 200);
  assert.equal(applied.body.outcome, 'applied');
  const rejected = await query(second.url, 'r2');
  assert.equal(rejected.status, 409);
  assert.equal(rejected.body.error.code, 'version_conflict');
  // A resend after the restart is still the same key: answered, not applied again.
  assert.equal((await submit(second.url, upsert('r1', 'c1', 's1', { x: 1 }))).status, 200);
  const reused = await submit(second.url, upsert('r1', 'c1', 's1', { x: 2 }));
  assert.equal(reused.body.error.code, 'idempotency_key_reused');
  const asset = await fetch(`${second.url}/assets/${uploaded.body.canonical.assetId}`);
  assert.equal(await asset.text(), 'bytes that must survive');
  // The run accepted before the restart is applied after it, by the new process's timer.
  await waitFor(async () => (await second.store.getRequest('run1')).status === 'applied', { what: 'the run after restart' });
  const after = await adminState(second.url);
  assert.deepEqual(after.canvases.c1, before.canvases.c1);
  assert.equal(after.requests.r1.applications, 1);
  assert.equal(after.requests.r1.submits, 2);
  assert.equal(after.canvases.c2.version, 1);
  assert.equal(after.runs['run-1'].status, 'completed');
});
