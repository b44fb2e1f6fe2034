// CORS: the test pages are served from another origin.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { rawRequest, startTestServer, submit, upsert } from '../testing/helpers.mjs';

test('a preflight for a submit is answered with the allowed methods and headers', async (t) => {
  const { url } = await startTestServer(t);
  const reply = await rawRequest(url, {
    method: 'OPTIONS',
    path: '/requests',
    headers: {
      origin: 'http://127.0.0.1:9999',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type, idempotency-key, authorization, x-trace-id, cookie',
    },
  });
  assert.equal(reply.status, 204);
  assert.equal(reply.headers['access-control-allow-origin'], '*');
  assert.equal(reply.headers['access-control-allow-methods'], 'GET, POST, OPTIONS');
  const allowed = reply.headers['access-control-allow-headers'].split(', ');
  for (const name of ['content-type', 'idempotency-key', 'authorization', 'x-trace-id']) {
    assert.ok(allowed.includes(name), `${name} allowed`);
  }
  assert.ok(!allowed.includes('cookie'), 'cookie is not allowed');
  assert.equal(reply.headers['access-control-expose-headers'], 'retry-after');
});

test('a preflight needs no token even when auth is on', async (t) => {
  const { url } = await startTestServer(t, { tokens: 'user-a:tokA' });
  const reply = await rawRequest(url, {
    method: 'OPTIONS',
    path: '/requests/r1',
    headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET' },
  });
  assert.equal(reply.status, 204);
});

test('actual answers carry the CORS headers too', async (t) => {
  const { url } = await startTestServer(t);
  const reply = await submit(url, upsert('r1', 'c1', 's1', {}), { headers: { origin: 'http://127.0.0.1:9999' } });
  assert.equal(reply.headers.get('access-control-allow-origin'), '*');
  assert.equal(reply.headers.get('access-control-expose-headers'), 'retry-after');
});
