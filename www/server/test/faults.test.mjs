// Fault injection through the admin API: lost answers, 503, 429, offline, latency, seeds.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { validateFaults } from '../faults.mjs';
import { admin, adminState, query, rawRequest, setFaults, startTestServer, submit, upsert } from '../testing/helpers.mjs';

const postRaw = (url, body) =>
  rawRequest(url, {
    method: 'POST',
    path: '/requests',
    headers: { 'content-type': 'application/json', 'idempotency-key': body.id },
    body: JSON.stringify(body),
  });

test('drop after apply: committed, socket destroyed, a query then says applied', async (t) => {
  const { url } = await startTestServer(t);
  await setFaults(url, { dropAfterApplyRate: 1 });
  const lost = await postRaw(url, upsert('r1', 'c1', 's1', { x: 1 }));
  assert.ok(lost.socketError, `expected no answer, got ${JSON.stringify(lost)}`);
  const answer = await query(url, 'r1');
  assert.equal(answer.status, 200);
  assert.equal(answer.body.outcome, 'applied');
  // Resending the same frozen request is answered from the store (a repeat is not "new", so
  // it is not dropped) and applies nothing twice.
  const resent = await postRaw(url, upsert('r1', 'c1', 's1', { x: 1 }));
  assert.equal(resent.status, 200);
  const state = await adminState(url);
  assert.equal(state.requests.r1.applications, 1);
  assert.equal(state.canvases.c1.version, 1);
  assert.equal(state.faults.counters.dropped, 1);
});

test('proxyRefusal answers a proxy\'s HTML 400 (no v1 body) to submits and queries, applying nothing', async (t) => {
  const { url } = await startTestServer(t);
  await setFaults(url, { proxyRefusal: true });
  const refused = await postRaw(url, upsert('r1', 'c1', 's1', { x: 1 }));
  assert.equal(refused.status, 400);
  assert.match(refused.headers['content-type'], /text\/html/);
  assert.match(refused.text, /400 Bad Request/);
  const queried = await rawRequest(url, { path: '/requests/r1' });
  assert.equal(queried.status, 400);
  let state = await adminState(url);
  assert.equal(state.requests.r1, undefined);
  await setFaults(url, { proxyRefusal: false });
  assert.equal((await submit(url, upsert('r1', 'c1', 's1', { x: 1 }))).status, 200);
  state = await adminState(url);
  assert.equal(state.requests.r1.applications, 1);
  assert.throws(() => validateFaults({ proxyRefusal: 'yes' }), /proxyRefusal must be a boolean/);
});

test('503 and 429 apply nothing and carry Retry-After', async (t) => {
  const { url } = await startTestServer(t);
  await setFaults(url, { serverErrorRate: 1, retryAfterSeconds: 7 });
  const unavailable = await submit(url, upsert('r1', 'c1', 's1', { x: 1 }));
  assert.equal(unavailable.status, 503);
  assert.equal(unavailable.headers.get('retry-after'), '7');
  assert.equal(unavailable.headers.get('access-control-expose-headers'), 'retry-after');
  const unavailableQuery = await query(url, 'r1');
  assert.equal(unavailableQuery.status, 503);

  await setFaults(url, { serverErrorRate: 0, tooManyRate: 1, retryAfterSeconds: 3 });
  const tooMany = await submit(url, upsert('r1', 'c1', 's1', { x: 1 }));
  assert.equal(tooMany.status, 429);
  assert.equal(tooMany.headers.get('retry-after'), '3');

  let state = await adminState(url);
  assert.equal(state.requests.r1, undefined);
  assert.equal(state.canvases.c1, undefined);
  assert.equal(state.faults.counters.serverErrors, 2);
  assert.equal(state.faults.counters.tooMany, 1);

  await setFaults(url, { tooManyRate: 0 });
  assert.equal((await query(url, 'r1')).status, 404);
  assert.equal((await submit(url, upsert('r1', 'c1', 's1', { x: 1 }))).status, 200);
  state = await adminState(url);
  assert.equal(state.requests.r1.applications, 1);
});

test('offline destroys protocol sockets at once; admin routes still answer', async (t) => {
  const { url } = await startTestServer(t);
  await setFaults(url, { offline: true });
  const submitted = await postRaw(url, upsert('r1', 'c1', 's1', { x: 1 }));
  assert.ok(submitted.socketError, `expected no answer, got ${JSON.stringify(submitted)}`);
  const queried = await rawRequest(url, { path: '/requests/r1' });
  assert.ok(queried.socketError);
  const state = await adminState(url);
  assert.equal(state.requests.r1, undefined);
  assert.equal(state.faults.counters.offlineDestroyed, 2);
  await setFaults(url, { offline: false });
  assert.equal((await submit(url, upsert('r1', 'c1', 's1', { x: 1 }))).status, 200);
});

test('latency delays protocol answers', async (t) => {
  const { url } = await startTestServer(t);
  await setFaults(url, { latencyMs: 150 });
  const startedAt = Date.now();
  assert.equal((await query(url, 'r1')).status, 404);
  assert.ok(Date.now() - startedAt >= 145, 'answered after the injected latency');
});

test('the same seed replays the same fates', async (t) => {
  const { url } = await startTestServer(t);
  const run = async () => {
    await admin(url, '/admin/reset', { method: 'POST' });
    await setFaults(url, { seed: 42, serverErrorRate: 0.3, tooManyRate: 0.3 });
    const statuses = [];
    for (let i = 0; i < 40; i += 1) statuses.push((await query(url, `k${i}`)).status);
    return statuses;
  };
  const first = await run();
  const second = await run();
  assert.deepEqual(second, first);
  // The dice really rolled: all three answers appear.
  for (const status of [404, 429, 503]) assert.ok(first.includes(status), `saw ${status} in ${first}`);
  await setFaults(url, { seed: 43 });
  const other = [];
  for (let i = 0; i < 40; i += 1) other.push((await query(url, `k${i}`)).status);
  assert.notDeepEqual(other, first);
});

test('a bad fault setting is refused and changes nothing', async (t) => {
  const { url } = await startTestServer(t);
  const bad = await setFaults(url, { serverErrorRate: 2 });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, 'invalid_faults');
  const typo = await setFaults(url, { serverErorRate: 0.5 });
  assert.equal(typo.status, 400);
  assert.equal((await adminState(url)).faults.config.serverErrorRate, 0);
});

test('reset clears canvases, outcomes and faults', async (t) => {
  const { url } = await startTestServer(t);
  await submit(url, upsert('r1', 'c1', 's1', { x: 1 }));
  await setFaults(url, { latencyMs: 10 });
  const reset = await admin(url, '/admin/reset', { method: 'POST' });
  assert.equal(reset.status, 200);
  const state = await adminState(url);
  assert.deepEqual(state.canvases, {});
  assert.deepEqual(state.requests, {});
  assert.equal(state.faults.config.latencyMs, 0);
  assert.equal((await query(url, 'r1')).status, 404);
});

test('writeOutage: every submit 503 with Retry-After (0 allowed), queries answered as usual', async (t) => {
  const { url } = await startTestServer(t);
  await setFaults(url, { writeOutage: true, retryAfterSeconds: 0 });
  const refused = await submit(url, upsert('r1', 'c1', 's1', { x: 1 }));
  assert.equal(refused.status, 503);
  assert.equal(refused.headers.get('retry-after'), '0');
  assert.equal(refused.body.error.code, 'service_unavailable');
  const never = await query(url, 'r1');
  assert.equal(never.status, 404, 'the read path works: a key never received is 404');
  await setFaults(url, { writeOutage: false });
  assert.equal((await submit(url, upsert('r1', 'c1', 's1', { x: 1 }))).status, 200);
  assert.equal((await query(url, 'r1')).status, 200);
  const state = await adminState(url);
  assert.equal(state.requests.r1.applications, 1);
  assert.equal(state.faults.counters.outage, 1);
  const { arrivals } = (await admin(url, '/admin/submits')).body;
  assert.equal(arrivals.r1.length, 2, 'both submits of r1 arrived, the refused one too');
});

test('fullOutage: submits and queries 503 without Retry-After, nothing applied', async (t) => {
  const { url } = await startTestServer(t);
  await setFaults(url, { fullOutage: true });
  const refused = await submit(url, upsert('r1', 'c1', 's1', { x: 1 }));
  assert.equal(refused.status, 503);
  assert.equal(refused.headers.get('retry-after'), null);
  const queried = await query(url, 'r1');
  assert.equal(queried.status, 503);
  assert.equal((await adminState(url)).requests.r1, undefined);
});

test('flapDownMs/flapUpMs: down, then up, over and over from when they were set', async (t) => {
  const { url } = await startTestServer(t);
  await setFaults(url, { flapDownMs: 300, flapUpMs: 300 });
  assert.equal((await query(url, 'nothing')).status, 503, 'down first');
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.equal((await query(url, 'nothing')).status, 404, 'then up');
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal((await query(url, 'nothing')).status, 503, 'then down again');
  await setFaults(url, { flapDownMs: 0 });
  assert.equal((await query(url, 'nothing')).status, 404, 'off when either is 0');
});

test('poisonOperations: a submit holding one is refused 503 every time while others apply', async (t) => {
  const { url } = await startTestServer(t);
  await setFaults(url, { poisonOperations: ['bad'] });
  const poisoned = upsert('r1', 'c1', 's1', { x: 1 });
  poisoned.operationIds = ['bad'];
  for (let i = 0; i < 2; i += 1) assert.equal((await submit(url, poisoned)).status, 503);
  assert.equal((await submit(url, upsert('r2', 'c2', 's2', { x: 1 }))).status, 200);
  const state = await adminState(url);
  assert.equal(state.requests.r1, undefined, 'nothing of the poisoned request was stored');
  assert.equal(state.requests.r2.applications, 1);
  assert.equal(state.faults.counters.poisoned, 2);
  assert.throws(() => validateFaults({ poisonOperations: 'bad' }), /poisonOperations must be an array/);
  assert.throws(() => validateFaults({ poisonOperations: [''] }), /poisonOperations must be an array/);
  assert.throws(() => validateFaults({ flapDownMs: -1 }), /flapDownMs must be an integer/);
  assert.throws(() => validateFaults({ writeOutage: 1 }), /writeOutage must be a boolean/);
});
