// Bearer tokens: missing or wrong → 401; the principal is recorded per application.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseTokens } from '../auth.mjs';
import { adminState, query, startTestServer, submit, upsert } from '../testing/helpers.mjs';

const bearer = (token) => ({ authorization: `Bearer ${token}` });

test('without a valid token protocol routes answer 401 and apply nothing', async (t) => {
  const { url } = await startTestServer(t, { tokens: 'user-a:tokA,user-b:tokB' });
  const missing = await submit(url, upsert('r1', 'c1', 's1', {}));
  assert.equal(missing.status, 401);
  assert.equal(missing.headers.get('www-authenticate'), 'Bearer');
  const wrong = await submit(url, upsert('r1', 'c1', 's1', {}), { headers: bearer('tokZ') });
  assert.equal(wrong.status, 401);
  const prefix = await submit(url, upsert('r1', 'c1', 's1', {}), { headers: bearer('tok') });
  assert.equal(prefix.status, 401);
  assert.equal((await query(url, 'r1')).status, 401);
  assert.deepEqual((await adminState(url)).requests, {});
});

test('the principal of the token is recorded, and another principal cannot read the key', async (t) => {
  const { url } = await startTestServer(t, { tokens: 'user-a:tokA,user-b:tokB' });
  const applied = await submit(url, upsert('r1', 'c1', 's1', { x: 1 }), { headers: bearer('tokA') });
  assert.equal(applied.status, 200);
  const state = await adminState(url);
  assert.equal(state.requests.r1.principal, 'user-a');
  assert.equal(state.operations['op-r1'].applied[0].principal, 'user-a');
  assert.equal((await query(url, 'r1', { headers: bearer('tokA') })).status, 200);
  assert.equal((await query(url, 'r1', { headers: bearer('tokB') })).status, 403);
  const stolen = await submit(url, upsert('r1', 'c1', 's1', { x: 1 }), { headers: bearer('tokB') });
  assert.equal(stolen.status, 403);
  assert.equal((await adminState(url)).requests.r1.submits, 1);
});

test('assets need a token too', async (t) => {
  const { url } = await startTestServer(t, { tokens: { 'user-a': 'tokA' } });
  assert.equal((await fetch(`${url}/assets/asset-x`)).status, 401);
  assert.equal((await fetch(`${url}/assets/asset-x`, { headers: bearer('tokA') })).status, 404);
});

test('the --tokens syntax is checked', () => {
  assert.deepEqual([...parseTokens('user-a:tokA, user-b:tokB')], [['tokA', 'user-a'], ['tokB', 'user-b']]);
  assert.throws(() => parseTokens('user-a'), /principal:token/);
  assert.throws(() => parseTokens(':tok'), /principal:token/);
  assert.throws(() => parseTokens('a:same,b:same'), /twice/);
});
