//! The conformance suite's `plan` part (a pure function giving the outcome and the statements
//! that write it, committed with the outcome with no read first), run unchanged against every
//! engine by sqlite.test.mjs, postgres.test.mjs and postgres-lowest-pg.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createKit } from '../src/index.js';
import { body, digestOf, query, submit, submitUntilSettled } from './conformance.mjs';
import { overHttp } from './over-http.mjs';

/**
 * @param {string} label
 * @param {() => Promise<any>} makeEngine
 * @param {{ http?: boolean }} [how]
 */
export function planConformance(label, makeEngine, how = {}) {
  /** A kit whose plan writes one note row per request; `statements` may replace that write. */
  async function setup(overrides = {}) {
    const engine = await makeEngine();
    const calls = { n: 0 };
    const make = (store) =>
      createKit({
        store,
        principal: (request) => request.headers.get('x-user') ?? 'u1',
        plan: async (request) => {
          calls.n += 1;
          const statements = overrides.statements?.(engine, request) ?? [
            engine.note(request.principal, request.key, JSON.stringify(request.body.payload)),
          ];
          return { outcome: 'applied', canonical: { key: request.key }, statements };
        },
        ...overrides.options,
      });
    const kits = [make(engine.store)];
    for (let i = 1; i < (overrides.processes ?? 1); i += 1) kits.push(make(engine.openStore()));
    const served = [];
    for (const kit of kits) {
      await kit.init();
      served.push(how.http ? await overHttp(kit) : kit);
    }
    const done = async () => {
      for (const kit of served) await kit.close();
      await engine.close();
    };
    return { engine, kit: served[0], kits: served, calls, done };
  }

  test(`${label} plan: a submit writes once; a repeat gets the stored answer and writes nothing`, async () => {
    const { engine, kit, calls, done } = await setup();
    const first = await submit(kit, body('p1'));
    assert.equal(first.status, 200);
    const answer = await first.json();
    assert.deepEqual(answer, { outcome: 'applied', canonical: { key: 'p1' } });
    const again = await submit(kit, body('p1'));
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), answer);
    assert.equal((await query(kit, 'p1')).status, 200);
    assert.ok(calls.n >= 1);
    assert.equal(await engine.count('u1', 'p1'), 1);
    await done();
  });

  test(`${label} plan: 50 concurrent submits of one key (4 kits on one Postgres) write once, 50 identical answers`, async () => {
    // SQLite: one kit (several connections to one file in one thread would wait for each other
    // synchronously, inside SQLite's busy timeout).
    const probe = await makeEngine();
    const processes = probe.name === 'postgres' ? 4 : 1;
    await probe.store.close();
    await probe.close();
    const { engine, kits, done } = await setup({ processes });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => submitUntilSettled(kits[i % processes], body('p-race'))));
    assert.equal(new Set(answers).size, 1, answers.join('\n'));
    assert.match(answers[0], /^200 /);
    assert.equal(await engine.count('u1', 'p-race'), 1);
    await done();
  });

  test(`${label} plan: a statement failing commits nothing; the key stays free and a retry writes once`, async () => {
    let fail = true;
    let failures = 0;
    const { engine, kit, done } = await setup({
      statements: (e, request) => [
        e.note(request.principal, request.key, 'first'),
        ...(fail ? [{ text: 'INSERT INTO no_such_table VALUES (1)' }] : []),
      ],
      options: { onError: () => void (failures += 1) },
    });
    const crashed = await submit(kit, body('p2'));
    assert.equal(crashed.status, 500);
    assert.equal(crashed.headers.get('retry-after'), '1');
    assert.equal(failures, 1);
    assert.equal(await engine.count('u1', 'p2'), 0, 'the first statement rolled back');
    assert.equal((await query(kit, 'p2')).status, 404, 'no outcome stored');
    fail = false;
    assert.equal((await submit(kit, body('p2'))).status, 200);
    assert.equal(await engine.count('u1', 'p2'), 1);
    await done();
  });

  test(`${label} plan: a key reused with another body is refused and keeps its first write`, async () => {
    const { engine, kit, done } = await setup();
    assert.equal((await submit(kit, body('p3'))).status, 200);
    const reused = await submit(kit, body('p3', { payload: { text: 'other' } }));
    assert.equal(reused.status, 422);
    assert.equal((await reused.json()).error.code, 'idempotency_key_reused');
    assert.deepEqual(await engine.values('u1', 'p3'), [JSON.stringify(body('p3').payload)]);
    await done();
  });

  test(`${label} plan: values of every plain type reach the database as the driver sends them`, async () => {
    // (42 is left out: SQLite binds a JS number as REAL, and a TEXT column keeps '42.0'.)
    const texts = ["it's \\ \"quoted\"", 'é 日本 😀', '', null, -1.5, 9007199254740993n];
    const { engine, kit, done } = await setup({
      statements: (e, request) => texts.map((t) => e.note(request.principal, request.key, t)),
    });
    assert.equal((await submit(kit, body('p4'))).status, 200);
    const stored = (await engine.values('u1', 'p4')).map(String).sort();
    const expected = texts.map(String).sort();
    assert.deepEqual(stored, expected);
    await done();
  });

  test(`${label} plan: a dead process's claim answers 409 while leased, then is taken over and written once`, async () => {
    let clock = 3_000_000;
    const { engine, kit, done } = await setup({ options: { now: () => clock, leaseMs: 5_000 } });
    const dead = await engine.store.claim({ principal: 'u1', key: 'p5', digest: await digestOf(kit, 'p5'), now: clock, leaseMs: 5_000 });
    assert.equal(dead.state, 'claimed');
    assert.equal((await submit(kit, body('p5'))).status, 409, 'still leased');
    assert.equal(await engine.count('u1', 'p5'), 0);
    clock += 5_001;
    assert.equal((await submit(kit, body('p5'))).status, 200);
    assert.equal((await submit(kit, body('p5'))).status, 200);
    assert.equal(await engine.count('u1', 'p5'), 1);
    await done();
  });

  test(`${label} plan: a plan that returns bad statements gets 500 and stores nothing`, async () => {
    let seen = null;
    const { engine, kit, done } = await setup({
      statements: () => [{ sql: 'INSERT INTO notes VALUES (1)' }],
      options: { onError: (error) => void (seen = error) },
    });
    const response = await submit(kit, body('p6'));
    assert.equal(response.status, 500);
    assert.match(String(seen), /plan must return statements/);
    assert.equal((await query(kit, 'p6')).status, 404);
    assert.equal(await engine.count('u1', 'p6'), 0);
    await done();
  });

  test(`${label} plan: createKit takes exactly one of apply and plan`, async () => {
    const engine = await makeEngine();
    const plan = () => ({ outcome: 'applied' });
    const apply = () => ({ outcome: 'applied' });
    assert.throws(() => createKit({ store: engine.store }), TypeError);
    assert.throws(() => createKit({ store: engine.store, plan, apply }), TypeError);
    assert.throws(() => createKit({ store: { ...engine.store, writeOnce: undefined }, plan }), /no writeOnce/);
    await engine.store.close();
    await engine.close();
  });
}
