//! The conformance suite (docs/protocol.md): one body of tests, run unchanged against every
//! engine by sqlite.test.mjs and postgres.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createKit } from '../src/index.js';
import { overHttp } from './over-http.mjs';

const URL_BASE = 'http://127.0.0.1/v1';

/** A frozen request body as the client sends it. */
export const body = (id, extra = {}) => ({
  id,
  operationIds: [`${id}-op`],
  kind: 'note.add',
  protocolVersion: 1,
  payload: { text: `text of ${id}` },
  canvasIds: ['c1'],
  ...extra,
});

export const submit = (kit, b, headers = {}) =>
  kit.handle(
    new Request(`${URL_BASE}/requests`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': b.id, ...headers },
      body: JSON.stringify(b),
    }),
  );
export const query = (kit, id, headers = {}) =>
  kit.handle(new Request(`${URL_BASE}/requests/${encodeURIComponent(id)}`, { headers }));

/**
 * @param {string} label
 * @param {() => Promise<any>} makeEngine
 * @param {{ http?: boolean }} [how] http: every `handle` goes over HTTP through toNodeHandler.
 */
export function conformance(label, makeEngine, how = {}) {
  /** @param {any} kit */
  const served = (kit) => (how.http ? overHttp(kit) : kit);

  /** Builds a kit whose apply writes one note row per applied request. */
  async function setup(overrides = {}) {
    const engine = await makeEngine();
    const calls = { n: 0 };
    const kit = await served(createKit({
      store: engine.store,
      principal: (request) => request.headers.get('x-user') ?? 'u1',
      apply: async (request, tx) => {
        calls.n += 1;
        await engine.write(tx, request.principal, request.key, JSON.stringify(request.body.payload));
        if (overrides.hook) await overrides.hook(request, tx);
        return overrides.answer ?? { outcome: 'applied', canonical: { key: request.key, blob: request.blob?.size ?? null } };
      },
      ...overrides.options,
    }));
    await kit.init();
    const done = async () => {
      await kit.close();
      await engine.close();
    };
    return { engine, kit, calls, done };
  }

  test(`${label}: a submit applies once and a repeat gets the stored answer`, async () => {
    const { engine, kit, calls, done } = await setup();
    const first = await submit(kit, body('k1'));
    assert.equal(first.status, 200);
    const answer = await first.json();
    assert.deepEqual(answer, { outcome: 'applied', canonical: { key: 'k1', blob: null } });
    const again = await submit(kit, body('k1'));
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), answer);
    assert.equal(calls.n, 1);
    assert.equal(await engine.count('u1', 'k1'), 1);
    await done();
  });

  test(`${label}: keys and principals with quotes and backslashes are stored as they are`, async () => {
    const { engine, kit, done } = await setup();
    const key = "it's \\ a 'key'; DROP TABLE notes; --";
    const user = "o'brien\\";
    assert.equal((await submit(kit, body(key), { 'x-user': user })).status, 200);
    assert.equal((await submit(kit, body(key), { 'x-user': user })).status, 200);
    assert.equal(await engine.count(user, key), 1);
    assert.equal((await query(kit, key, { 'x-user': user })).status, 200);
    await done();
  });

  test(`${label}: a query answers 404 for a key never received, then the stored outcome`, async () => {
    const { kit, done } = await setup();
    const missing = await query(kit, 'k2');
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.code, 'not_found');
    await submit(kit, body('k2'));
    const found = await query(kit, 'k2');
    assert.equal(found.status, 200);
    assert.equal((await found.json()).outcome, 'applied');
    await done();
  });

  test(`${label}: a key reused with another body is refused and keeps its first outcome`, async () => {
    const { engine, kit, done } = await setup();
    await submit(kit, body('k3'));
    const reused = await submit(kit, body('k3', { payload: { text: 'other' } }));
    assert.equal(reused.status, 422);
    assert.equal((await reused.json()).error.code, 'idempotency_key_reused');
    assert.equal(await engine.count('u1', 'k3'), 1);
    assert.equal((await query(kit, 'k3')).status, 200);
    await done();
  });

  test(`${label}: a key in progress answers 409 without a body, on submit and query`, async () => {
    let release;
    const gate = new Promise((resolve) => (release = resolve));
    let entered;
    const inside = new Promise((resolve) => (entered = resolve));
    const { kit, done } = await setup({ hook: async () => { entered(); await gate; } });
    const slow = submit(kit, body('k4'));
    await inside;
    const busy = await submit(kit, body('k4'));
    assert.equal(busy.status, 409);
    assert.equal(await busy.text(), '');
    const asked = await query(kit, 'k4');
    assert.equal(asked.status, 409);
    assert.equal(await asked.text(), '');
    release();
    assert.equal((await slow).status, 200);
    assert.equal((await query(kit, 'k4')).status, 200);
    await done();
  });

  test(`${label}: apply failing commits neither its writes nor an outcome; a retry applies once`, async () => {
    let fail = true;
    const { engine, kit, done } = await setup({
      hook: async () => {
        if (fail) throw new Error('crash after the domain write');
      },
      options: { onError: () => {} },
    });
    const crashed = await submit(kit, body('k5'));
    assert.equal(crashed.status, 500);
    assert.equal(await engine.count('u1', 'k5'), 0, 'the domain write rolled back');
    assert.equal((await query(kit, 'k5')).status, 404, 'no outcome stored');
    fail = false;
    assert.equal((await submit(kit, body('k5'))).status, 200);
    assert.equal(await engine.count('u1', 'k5'), 1);
    await done();
  });

  test(`${label}: a dead process's claim is taken over after its lease, and the old holder is fenced`, async () => {
    let clock = 1_000_000;
    const { engine, kit, calls, done } = await setup({ options: { now: () => clock, leaseMs: 5_000 } });
    // A process claims the key and dies before committing (its claim stays, its lease runs).
    const dead = await engine.store.claim({ principal: 'u1', key: 'k6', digest: await digestOf(kit, 'k6'), now: clock, leaseMs: 5_000 });
    assert.equal(dead.state, 'claimed');
    assert.equal((await submit(kit, body('k6'))).status, 409, 'still leased');
    clock += 5_001;
    // Another process takes the claim over; before it commits, the old holder wakes up and tries
    // to commit: fenced by the token, its apply never runs.
    const second = await engine.store.claim({ principal: 'u1', key: 'k6', digest: await digestOf(kit, 'k6'), now: clock, leaseMs: 5_000 });
    assert.equal(second.state, 'claimed');
    assert.ok(second.token > dead.token);
    let ran = false;
    const late = await engine.store.commit({ principal: 'u1', key: 'k6', token: dead.token, now: clock }, async () => {
      ran = true;
      return { status: 200, answer: { outcome: 'applied' } };
    });
    assert.equal(ran, false);
    assert.equal(late.state, 'lost');
    // The second holder also dies; the kit takes over after the lease and applies once.
    clock += 5_001;
    const taken = await submit(kit, body('k6'));
    assert.equal(taken.status, 200);
    const stale = await engine.store.commit({ principal: 'u1', key: 'k6', token: second.token, now: clock }, async () => {
      ran = true;
      return { status: 200, answer: { outcome: 'applied' } };
    });
    assert.equal(ran, false);
    assert.equal(stale.state, 'done');
    assert.equal(calls.n, 1);
    assert.equal(await engine.count('u1', 'k6'), 1);
    await done();
  });

  test(`${label}: a dead holder's claim answers a query 404 once its lease ran out, so the client submits again and that submit applies once`, async () => {
    let clock = 2_000_000;
    const { engine, kit, calls, done } = await setup({ options: { now: () => clock, leaseMs: 5_000 } });
    // A process claims the key and is killed before committing: nothing applied, the claim stays.
    const dead = await engine.store.claim({ principal: 'u1', key: 'k6b', digest: await digestOf(kit, 'k6b'), now: clock, leaseMs: 5_000 });
    assert.equal(dead.state, 'claimed');
    assert.equal((await query(kit, 'k6b')).status, 409, 'within the lease: in progress');
    clock += 5_001;
    // The client (docs/protocol.md) queries after a failed submit; a 409 for ever would leave it
    // asking for ever (and dead-letter it). Nothing was applied: 404, "submit the same request
    // again".
    const asked = await query(kit, 'k6b');
    assert.equal(asked.status, 404);
    assert.equal((await asked.json()).error.code, 'not_found');
    assert.equal((await submit(kit, body('k6b'))).status, 200);
    assert.equal((await query(kit, 'k6b')).status, 200);
    assert.equal(calls.n, 1);
    assert.equal(await engine.count('u1', 'k6b'), 1);
    await done();
  });

  test(`${label}: principals scope keys (another principal's key is 404; one key, two principals, two applies)`, async () => {
    const { engine, kit, done } = await setup();
    await submit(kit, body('k7'), { 'x-user': 'alice' });
    const foreign = await query(kit, 'k7', { 'x-user': 'bob' });
    assert.equal(foreign.status, 404);
    assert.equal((await foreign.json()).outcome, undefined);
    assert.equal((await submit(kit, body('k7', { payload: 'bob' }), { 'x-user': 'bob' })).status, 200);
    assert.equal(await engine.count('alice', 'k7'), 1);
    assert.equal(await engine.count('bob', 'k7'), 1);
    await done();
  });

  test(`${label}: malformed, oversized and unknown-protocol requests get a v1 rejected body with a code`, async () => {
    const { kit, calls, done } = await setup({ options: { limits: { maxBodyBytes: 2_000, maxBatch: 3, maxBlobBytes: 100 } } });
    const post = (text, type = 'application/json') =>
      kit.handle(new Request(`${URL_BASE}/requests`, { method: 'POST', headers: { 'content-type': type }, body: text }));
    const cases = [
      [await post('{not json'), 400, 'invalid_request'],
      [await post('[]'), 400, 'invalid_request'],
      [await post(JSON.stringify(body('big', { payload: 'x'.repeat(3_000) }))), 413, 'body_too_large'],
      [await post(JSON.stringify(body('b', { operationIds: ['1', '2', '3', '4'] }))), 413, 'batch_too_large'],
      [await post(JSON.stringify(body('p', { protocolVersion: 2 }))), 422, 'unsupported_protocol'],
      [await post('hello', 'text/plain'), 415, 'unsupported_media_type'],
      [await submit(kit, body('m'), { 'idempotency-key': 'other' }), 400, 'idempotency_key_mismatch'],
    ];
    for (const [response, status, code] of cases) {
      assert.equal(response.status, status, code);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      const answer = await response.json();
      assert.equal(answer.outcome, 'rejected');
      assert.equal(answer.error.code, code);
    }
    assert.equal(calls.n, 0);
    await done();
  });

  test(`${label}: a multipart upload reaches apply with its blob; an oversized blob is refused`, async () => {
    const { kit, done } = await setup({ options: { limits: { maxBlobBytes: 1_000 } } });
    const upload = (id, size) => {
      const form = new FormData();
      form.set('request', JSON.stringify(body(id, { kind: 'asset.upload' })));
      form.set('blob', new Blob([new Uint8Array(size).fill(7)], { type: 'image/png' }));
      return kit.handle(new Request(`${URL_BASE}/requests`, { method: 'POST', body: form }));
    };
    const ok = await upload('u1', 600);
    assert.equal(ok.status, 200);
    assert.deepEqual((await ok.json()).canonical, { key: 'u1', blob: 600 });
    const big = await upload('u2', 1_500);
    assert.equal(big.status, 413);
    assert.equal((await big.json()).error.code, 'blob_too_large');
    await done();
  });

  test(`${label}: 50 concurrent submits of one key apply once, and all 50 get the first answer's exact bytes`, async () => {
    // Keys in an order a database's JSON type would change (JSONB sorts them by length, then
    // bytes), a number with a fraction and text beyond ASCII.
    const answer = { operations: [{ outcome: 'applied', operationId: 'race-op' }], canonical: { zeta: 1.5, alpha: ['ü🔑', null], mid: { bb: true, a: 0 } }, outcome: 'applied' };
    const { engine, kit, calls, done } = await setup({ answer, hook: () => new Promise((r) => setTimeout(r, 20)) });
    const answers = await Promise.all(Array.from({ length: 50 }, () => submitUntilSettled(kit, body('race'))));
    assert.deepEqual(new Set(answers), new Set([`200 ${JSON.stringify(answer)}`]));
    const asked = await query(kit, 'race');
    assert.equal(await asked.text(), JSON.stringify(answer), 'a query afterwards: the same bytes');
    assert.equal(calls.n, 1);
    assert.equal(await engine.count('u1', 'race'), 1);
    await done();
  });

  test(`${label}: outcomes are kept for the retention period, then purged in bounded batches`, async () => {
    let clock = 5_000_000;
    const { kit, done } = await setup({ options: { now: () => clock, retentionMs: 1_000 } });
    for (let i = 0; i < 5; i += 1) await submit(kit, body(`r${i}`));
    assert.equal(await kit.purge({ limit: 2 }), 0, 'within retention');
    clock += 1_001;
    assert.deepEqual([await kit.purge({ limit: 2 }), await kit.purge({ limit: 2 }), await kit.purge({ limit: 2 }), await kit.purge({ limit: 2 })], [2, 2, 1, 0]);
    assert.equal((await query(kit, 'r0')).status, 404);
    await done();
  });

  test(`${label}: an accepted outcome is completed once by settle, even by two processes at once`, async () => {
    const engine = await makeEngine();
    const accept = async () => ({ outcome: 'accepted', operations: [{ operationId: 'a1-op', outcome: 'accepted' }] });
    const options = { principal: () => 'u1', apply: accept };
    const one = await served(createKit({ store: engine.store, ...options }));
    const two = await served(createKit({ store: engine.openStore(), ...options }));
    await Promise.all([one.init(), two.init()]);
    const first = await submit(one, body('a1'));
    assert.equal(first.status, 202);
    assert.equal((await query(two, 'a1')).status, 202);
    let applied = 0;
    const complete = async (tx, answer) => {
      assert.equal(answer.outcome, 'accepted');
      applied += 1;
      await engine.write(tx, 'u1', 'a1', 'run done');
      return { outcome: 'applied', canonical: { done: true } };
    };
    const settleBoth = () => [one, two].map((kit) => kit.settle({ principal: 'u1', key: 'a1' }, complete));
    // SQLite: two connections in one process would block each other's BEGIN IMMEDIATE (a busy
    // wait inside one event loop), so the second "process" goes after the first there.
    const results =
      engine.name === 'sqlite'
        ? [await one.settle({ principal: 'u1', key: 'a1' }, complete), await two.settle({ principal: 'u1', key: 'a1' }, complete)]
        : await Promise.all(settleBoth());
    assert.deepEqual(results.sort(), [false, true]);
    assert.equal(applied, 1);
    assert.equal(await engine.count('u1', 'a1'), 1);
    for (const kit of [one, two]) {
      const asked = await query(kit, 'a1');
      assert.equal(asked.status, 200);
      assert.deepEqual(await asked.json(), { outcome: 'applied', canonical: { done: true } });
      // A repeat of the submit gets the completed outcome too.
      assert.equal((await submit(kit, body('a1'))).status, 200);
    }
    // Settled outcomes, unknown keys and a fn returning null change nothing.
    assert.equal(await one.settle({ principal: 'u1', key: 'a1' }, complete), false);
    assert.equal(await one.settle({ principal: 'u1', key: 'nope' }, complete), false);
    assert.equal((await submit(one, body('a2'))).status, 202);
    assert.equal(await one.settle({ principal: 'u1', key: 'a2' }, async () => null), false);
    assert.equal((await query(one, 'a2')).status, 202);
    // fn throwing rolls back its writes and keeps the answer accepted.
    await assert.rejects(one.settle({ principal: 'u1', key: 'a2' }, async (tx) => {
      await engine.write(tx, 'u1', 'a2', 'half');
      throw new Error('boom');
    }));
    assert.equal(await engine.count('u1', 'a2'), 0);
    assert.equal((await query(one, 'a2')).status, 202);
    assert.equal(applied, 1);
    await one.close();
    await two.close();
    await engine.close();
  });

  test(`${label}: decide and lookup: the submit path without HTTP, with the app's context`, async () => {
    const seen = [];
    const { engine, kit, done } = await setup({ hook: async (request) => void seen.push(request.context) });
    const submitted = { principal: 'u1', key: 'd1', digest: 'digest-1', body: { id: 'd1', payload: 1 }, context: { who: 'alice' } };
    assert.equal(await kit.lookup({ principal: 'u1', key: 'd1' }), null);
    const first = await kit.decide(submitted);
    assert.equal(first.state, 'done');
    assert.equal(first.fresh, true);
    assert.equal(first.status, 200);
    const again = await kit.decide(submitted);
    assert.deepEqual(again, { ...first, fresh: false });
    assert.deepEqual(await kit.lookup({ principal: 'u1', key: 'd1' }), { ...first, fresh: false });
    assert.deepEqual(await kit.decide({ ...submitted, digest: 'digest-2' }), { state: 'reused' });
    assert.deepEqual(seen, [{ who: 'alice' }]);
    assert.equal(await engine.count('u1', 'd1'), 1);
    await done();
  });

  test(`${label}: no credential or request header is stored`, async () => {
    const { engine, kit, done } = await setup();
    await submit(kit, body('h1'), { authorization: 'Bearer secret-token-123', cookie: 'sid=cookie-456' });
    const rows = await engine.dump();
    assert.ok(rows.includes('h1'));
    assert.ok(!rows.includes('secret-token-123') && !rows.includes('cookie-456'));
    await done();
  });
}

/** The digest the kit computes for body(key): read back from a claim it stores. */
export async function digestOf(_kit, key) {
  const { parseSubmit, DEFAULT_LIMITS } = await import('../src/protocol.js');
  const { fromWebRequest } = await import('../src/incoming.js');
  const parsed = await parseSubmit(
    fromWebRequest(new Request(`${URL_BASE}/requests`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(key)) })),
    DEFAULT_LIMITS,
  );
  return parsed.digest;
}

/** Submits, then queries after each 409 (as the client does), bounded to 200 tries. */
export async function submitUntilSettled(kit, b) {
  let response = await submit(kit, b);
  for (let i = 0; response.status === 409 && i < 200; i += 1) {
    await new Promise((r) => setTimeout(r, 10));
    response = await query(kit, b.id);
  }
  return `${response.status} ${await response.text()}`;
}
