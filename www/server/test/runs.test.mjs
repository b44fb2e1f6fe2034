// run.start is accepted at once and applied a configurable time later; run.cancel stops it.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { adminState, frozen, query, startTestServer, submit, waitFor } from '../testing/helpers.mjs';

const RUN_APPLY_MS = 200;

const runStart = (id, runId, canvasIds = ['c1']) => frozen({ id, kind: 'run.start', runId, payload: { model: 'blur' }, canvasIds });
const runCancel = (id, runId) => frozen({ id, kind: 'run.cancel', runId, payload: null, canvasIds: [] });

test('run.start is accepted, queries say accepted until it is due, then applied', async (t) => {
  // A controlled clock makes "before it is due" certain rather than a race with the timer.
  let clock = 1_000_000;
  const { url } = await startTestServer(t, { runApplyMs: RUN_APPLY_MS, now: () => clock });
  const accepted = await submit(url, runStart('r1', 'run-1'));
  assert.equal(accepted.status, 202);
  assert.equal(accepted.body.outcome, 'accepted');
  assert.deepEqual(accepted.body.operations, [{ operationId: 'op-r1', outcome: 'accepted' }]);
  clock += RUN_APPLY_MS - 1;
  const early = await query(url, 'r1');
  assert.equal(early.status, 202);
  assert.equal(early.body.outcome, 'accepted');
  const before = await adminState(url);
  assert.equal(before.requests.r1.applications, 0);
  assert.equal(before.requests.r1.applyAt, 1_000_000 + RUN_APPLY_MS);
  assert.equal(before.canvases.c1, undefined);
  clock += 1;
  const applied = await query(url, 'r1');
  assert.equal(applied.status, 200);
  assert.equal(applied.body.outcome, 'applied');
  assert.deepEqual(applied.body.canonical.run, { runId: 'run-1', status: 'completed' });
  assert.equal(applied.body.canonical.canvases.c1.version, 1);
  assert.equal(applied.body.canonical.canvases.c1.document.runs['run-1'], 'completed');
  assert.deepEqual(applied.body.operations, [
    { operationId: 'op-r1', outcome: 'applied', canonical: { run: { runId: 'run-1', status: 'completed' } } },
  ]);
  const state = await adminState(url);
  assert.equal(state.requests.r1.applications, 1);
  assert.equal(state.operations['op-r1'].applications, 1);
  assert.equal(state.runs['run-1'].status, 'completed');
  // A repeat submit after application answers the final outcome.
  const repeat = await submit(url, runStart('r1', 'run-1'));
  assert.equal(repeat.body.outcome, 'applied');
});

test('the run timer applies a run without anyone asking', async (t) => {
  const runApplyMs = 400;
  const { url, store } = await startTestServer(t, { runApplyMs });
  const startedAt = Date.now();
  await submit(url, runStart('r1', 'run-1'));
  // Read the store directly: a protocol or admin read would itself promote due runs. On a
  // loaded machine the first read may come after the run is due; before it, it must wait.
  const first = (await store.getRequest('r1')).status;
  if (Date.now() - startedAt < runApplyMs) assert.equal(first, 'accepted');
  await waitFor(async () => (await store.getRequest('r1')).status === 'applied', { what: 'the run timer' });
  assert.ok(Date.now() - startedAt >= runApplyMs, 'not applied before runApplyMs');
});

test('run.cancel before the run is applied rejects the run for good', async (t) => {
  const { url } = await startTestServer(t, { runApplyMs: 60_000 });
  await submit(url, runStart('r1', 'run-1'));
  const cancel = await submit(url, runCancel('r2', 'run-1'));
  assert.equal(cancel.status, 200);
  assert.deepEqual(cancel.body.canonical.run, { runId: 'run-1', status: 'cancelled', previous: 'pending', cancelled: true });
  const start = await query(url, 'r1');
  assert.equal(start.status, 409);
  assert.equal(start.body.outcome, 'rejected');
  assert.equal(start.body.error.code, 'run_cancelled');
  const state = await adminState(url);
  assert.equal(state.requests.r1.applications, 0);
  assert.equal(state.runs['run-1'].status, 'cancelled');
  assert.equal(state.canvases.c1, undefined, 'a cancelled run never touched its canvas');
});

test('a cancel that overtakes its start is honoured when the start arrives', async (t) => {
  const { url } = await startTestServer(t, { runApplyMs: RUN_APPLY_MS });
  const cancel = await submit(url, runCancel('r2', 'run-1'));
  assert.equal(cancel.body.canonical.run.previous, 'unknown');
  const start = await submit(url, runStart('r1', 'run-1'));
  assert.equal(start.status, 409);
  assert.equal(start.body.error.code, 'run_cancelled');
});

test('cancelling a completed run applies without changing it; a second start of a run is refused', async (t) => {
  const { url } = await startTestServer(t, { runApplyMs: 0 });
  await submit(url, runStart('r1', 'run-1'));
  await waitFor(async () => (await query(url, 'r1')).body.outcome === 'applied', { what: 'the run' });
  const cancel = await submit(url, runCancel('r2', 'run-1'));
  assert.equal(cancel.body.outcome, 'applied');
  assert.deepEqual(cancel.body.canonical.run, { runId: 'run-1', status: 'completed', previous: 'completed', cancelled: false });
  const again = await submit(url, runStart('r3', 'run-1'));
  assert.equal(again.status, 409);
  assert.equal(again.body.error.code, 'run_already_started');
  assert.equal((await adminState(url)).runs['run-1'].status, 'completed');
});

test('run.start needs a runId', async (t) => {
  const { url } = await startTestServer(t);
  const reply = await submit(url, frozen({ id: 'r1', kind: 'run.start', payload: {}, canvasIds: ['c1'] }));
  assert.equal(reply.status, 422);
  assert.equal(reply.body.error.code, 'invalid_payload');
});
