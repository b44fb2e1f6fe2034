// The reference server is an example users copy: the admin API needs a
// token and is never readable from any origin, assets are never sniffed, and an id that names
// an Object.prototype property is refused instead of silently lost.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  TEST_ADMIN_TOKEN,
  admin,
  adminState,
  frozen,
  query,
  rawRequest,
  startTestServer,
  submit,
  submitUpload,
  upsert,
} from '../testing/helpers.mjs';

test('admin routes refuse a request without the token, or with another one', async (t) => {
  const { url } = await startTestServer(t);
  for (const [method, path] of [['GET', '/admin/state'], ['GET', '/admin/faults'], ['POST', '/admin/reset'], ['POST', '/admin/faults']]) {
    for (const token of [null, 'wrong-token-value', `${TEST_ADMIN_TOKEN}x`]) {
      const reply = await admin(url, path, { method, token, body: method === 'POST' ? { latencyMs: 1 } : undefined });
      assert.equal(reply.status, 401, `${method} ${path} with ${token}`);
      assert.equal(reply.body.error.code, 'unauthorized');
    }
  }
  // Nothing changed: the faults are still off, and the token opens the routes.
  const state = await adminState(url);
  assert.equal(state.faults.config.latencyMs, 0);
});

test('without an admin token configured the admin API is off', async (t) => {
  const { url } = await startTestServer(t, { adminToken: null });
  const reply = await admin(url, '/admin/state');
  assert.equal(reply.status, 404);
  assert.match(reply.body.error.message, /--admin-token/);
  assert.equal((await admin(url, '/admin/reset', { method: 'POST' })).status, 404);
});

test('admin answers never allow every origin; a page on this machine may read them', async (t) => {
  const { url } = await startTestServer(t);
  const elsewhere = await admin(url, '/admin/state', { headers: { origin: 'https://evil.example' } });
  assert.equal(elsewhere.status, 200, 'the token opens the route');
  assert.equal(elsewhere.headers.get('access-control-allow-origin'), null, 'but no other site may read it');
  const local = await admin(url, '/admin/state', { headers: { origin: 'http://127.0.0.1:8123' } });
  assert.equal(local.headers.get('access-control-allow-origin'), 'http://127.0.0.1:8123');
  assert.equal(local.headers.get('vary'), 'origin');
  const preflight = await rawRequest(url, {
    method: 'OPTIONS',
    path: '/admin/faults',
    headers: {
      origin: 'https://evil.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type, x-admin-token',
    },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers['access-control-allow-origin'], undefined);
  // The protocol routes keep their wildcard (bearer tokens, no cookies).
  const protocol = await query(url, 'r-none', { headers: { origin: 'https://evil.example' } });
  assert.equal(protocol.headers.get('access-control-allow-origin'), '*');
});

test('the command line takes --admin-token and refuses a short one', async () => {
  const { parseCliArgs, resolveOptions } = await import('../config.mjs');
  const options = parseCliArgs(['--db', ':memory:', '--admin-token', 'long-enough-token']);
  assert.equal(resolveOptions(options).adminToken, 'long-enough-token');
  assert.throws(() => resolveOptions({ db: ':memory:', adminToken: 'short' }), /adminToken/);
  assert.equal(resolveOptions({ db: ':memory:' }).adminToken, null);
});

test('--fsync is on unless set off, and takes only on or off', async () => {
  const { parseCliArgs, resolveOptions } = await import('../config.mjs');
  assert.equal(resolveOptions(parseCliArgs(['--db', ':memory:'])).fsync, true);
  assert.equal(resolveOptions(parseCliArgs(['--db', ':memory:', '--fsync', 'off'])).fsync, false);
  assert.equal(resolveOptions(parseCliArgs(['--db', ':memory:', '--fsync', 'on'])).fsync, true);
  assert.throws(() => parseCliArgs(['--db', ':memory:', '--fsync', 'no']), /--fsync must be on or off/);
  assert.throws(() => resolveOptions({ db: ':memory:', fsync: 'off' }), /fsync must be true or false/);
  const { openStore } = await import('../store.mjs');
  const relaxed = openStore(':memory:', { fsync: false });
  assert.equal(relaxed.db.pragma('synchronous', { simple: true }), 0);
  assert.equal(openStore(':memory:').db.pragma('synchronous', { simple: true }), 2);
});

test('assets and answers are sent with x-content-type-options: nosniff', async (t) => {
  const { url } = await startTestServer(t);
  const html = new Blob(['<script>alert(1)</script>'], { type: 'text/plain' });
  const upload = frozen({ id: 'u1', kind: 'asset.upload', payload: { name: 'x.txt' }, canvasIds: ['c1'] });
  const reply = await submitUpload(url, upload, html);
  assert.equal(reply.status, 200, reply.text);
  const assetId = reply.body.operations[0].canonical.assetId;
  const asset = await fetch(`${url}/assets/${encodeURIComponent(assetId)}`);
  assert.equal(asset.status, 200);
  assert.equal(asset.headers.get('x-content-type-options'), 'nosniff');
  await asset.arrayBuffer();
  assert.equal(reply.headers.get('x-content-type-options'), 'nosniff');
  assert.equal((await adminState(url)) !== null, true);
});

test('a shape id naming an Object.prototype property is rejected, never silently lost', async (t) => {
  const { url } = await startTestServer(t);
  for (const [i, shapeId] of ['__proto__', 'constructor', 'toString', 'hasOwnProperty'].entries()) {
    const reply = await submit(url, upsert(`p${i}`, 'c1', shapeId, { x: 1 }));
    assert.equal(reply.status, 422, `${shapeId}: ${reply.text}`);
    assert.equal(reply.body.outcome, 'rejected');
    assert.equal(reply.body.error.code, 'invalid_payload');
    assert.match(reply.body.error.message, /reserved/);
  }
  // An ordinary id next to them still works, and the document holds only it.
  assert.equal((await submit(url, upsert('ok', 'c1', 'proto', { x: 2 }))).status, 200);
  const document = (await adminState(url)).canvases.c1.document;
  assert.deepEqual(Object.keys(document.shapes), ['proto']);
  assert.equal(Object.getPrototypeOf(document.shapes), Object.prototype);
});

test('a canvas or run id naming an Object.prototype property is rejected', async (t) => {
  const { url } = await startTestServer(t);
  const canvas = await submit(url, upsert('c-proto', '__proto__', 's1', { x: 1 }));
  assert.equal(canvas.status, 422, canvas.text);
  assert.equal(canvas.body.outcome, 'rejected');
  assert.equal(canvas.body.error.code, 'reserved_id');
  const run = await submit(url, frozen({ id: 'r-proto', kind: 'run.start', runId: 'constructor', canvasIds: ['c1'] }));
  assert.equal(run.status, 422, run.text);
  assert.equal(run.body.error.code, 'reserved_id');
  const guard = await submit(url, upsert('g-proto', 'c1', 's1', { x: 1 }, JSON.parse('{"__proto__": 1}')));
  assert.equal(guard.status, 422, guard.text);
});
