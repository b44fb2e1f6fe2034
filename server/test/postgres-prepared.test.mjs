//! The Postgres store's statements through pg: named ones prepared once per connection; a
//! connection that loses them (DISCARD ALL, a pooler in transaction mode) still applies every key
//! once, with the statements sent unnamed from then on; two stores on one pool share a
//! connection's statements; values beyond ASCII go through the bound statements intact; on a pool
//! in pg's pipeline mode a step's statements are sent together. CSK_PG_URL=postgres://…
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import pg from 'pg';
import pgMin from 'pg-min';
import { createKit, postgresStore } from '../src/index.js';
import { postgresEngineOn } from './engines.mjs';

// The newest pg and the lowest the kit declares (pg-min); pipeline mode is the newest's only.
const lowest = JSON.parse(readFileSync(new URL('../node_modules/pg-min/package.json', import.meta.url), 'utf8')).version;
/** @type {[string, any][]} */
const drivers = [['postgres', pg], [`postgres on pg ${lowest}`, pgMin]];

const skip = !process.env.CSK_PG_URL;
const submit = (kit, id) =>
  kit.handle(
    new Request('http://127.0.0.1/v1/requests', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': id },
      body: JSON.stringify({ id, operationIds: [`${id}-op`], kind: 'note.add', protocolVersion: 1, payload: {}, canvasIds: ['c1'] }),
    }),
  );

/** A kit on a one-connection pool, so every statement runs on the same connection. */
async function onOneConnection(engine, driver) {
  const pool = new driver.Pool({ connectionString: engine.url, max: 1 });
  const kit = createKit({
    store: postgresStore({ pool }),
    apply: async (request, tx) => {
      await engine.write(tx, request.principal, request.key, 'x');
      return { outcome: 'applied' };
    },
  });
  await kit.init();
  return { pool, kit };
}

for (const [label, driver] of drivers) {
  test(`${label}: a connection that loses its prepared statements still applies each key once`, { skip, timeout: 30_000 }, async () => {
    const engine = await postgresEngineOn(driver);
    const { pool, kit } = await onOneConnection(engine, driver);
    assert.equal((await submit(kit, 'p1')).status, 200);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM pg_prepared_statements');
    assert.equal(rows[0].n, 2, 'the head and the outcome row prepared on the connection');
    await pool.query('DISCARD ALL');
    assert.equal((await submit(kit, 'p2')).status, 200);
    assert.equal((await submit(kit, 'p2')).status, 200, 'a repeat is answered from the store');
    assert.equal((await submit(kit, 'p3')).status, 200);
    const after = await pool.query('SELECT count(*)::int AS n FROM pg_prepared_statements');
    assert.equal(after.rows[0].n, 0, 'unnamed from then on: nothing prepared again');
    for (const key of ['p1', 'p2', 'p3']) assert.equal(await engine.count('anonymous', key), 1, key);
    await kit.close();
    await engine.close();
  });

  test(`${label}: two stores on one pool share the connection's prepared statements`, { skip, timeout: 30_000 }, async () => {
    const engine = await postgresEngineOn(driver);
    const { pool, kit } = await onOneConnection(engine, driver);
    const other = createKit({ store: postgresStore({ pool }), apply: async () => ({ outcome: 'applied' }) });
    assert.equal((await submit(kit, 'q1')).status, 200);
    assert.equal((await submit(other, 'q2')).status, 200);
    assert.equal((await submit(kit, 'q3')).status, 200);
    await kit.close();
    await engine.close();
  });

  test(`${label}: keys, principals and answers beyond ASCII go through the bound statements intact`, { skip, timeout: 30_000 }, async () => {
    const engine = await postgresEngineOn(driver);
    const pool = new driver.Pool({ connectionString: engine.url, max: 1 });
    const kit = createKit({
      store: postgresStore({ pool }),
      apply: async (request, tx) => {
        await engine.write(tx, request.principal, request.key, 'x');
        return { outcome: 'applied', canonical: { key: request.key, note: 'ünïcödé 🔑' } };
      },
    });
    // Through decide: an idempotency-key header carries no such key.
    const principal = 'пользователь-é';
    const key = 'ключ-🔑-ß';
    const submitted = { principal, key, digest: 'd1', body: { id: key } };
    const first = await kit.decide(submitted);
    assert.equal(first.state, 'done');
    assert.equal(first.fresh, true);
    assert.deepEqual(first.answer, { outcome: 'applied', canonical: { key, note: 'ünïcödé 🔑' } });
    const again = await kit.decide(submitted);
    assert.deepEqual({ ...again, fresh: true }, first, 'a repeat gets the stored outcome');
    assert.equal(again.fresh, false);
    assert.equal((await kit.decide({ ...submitted, digest: 'd2' })).state, 'reused');
    const { rows } = await pool.query('SELECT principal, key FROM csk_outcomes');
    assert.deepEqual(rows, [{ principal, key }]);
    assert.equal(await engine.count(principal, key), 1);
    await kit.close();
    await engine.close();
  });
}

/**
 * Records, on the pool's one connection, each query as it is sent and as it is answered, through
 * pg's public `client.query`: `> TEXT` when called, `< TEXT` when answered.
 */
async function watch(pool) {
  const client = await pool.connect();
  const log = [];
  const original = client.query;
  client.query = function (...args) {
    const text = typeof args[0] === 'string' ? args[0] : args[0]?.text;
    const label = /^\s*(\w+(?: INTO \w+)?)/.exec(text ?? '')?.[1] ?? '?';
    log.push(`> ${label}`);
    const result = original.apply(this, args);
    result?.then?.(() => log.push(`< ${label}`), () => log.push(`< ${label} failed`));
    return result;
  };
  client.release();
  return log;
}

/** The log cut into round trips: each ends when answers come after the queries sent. */
function roundTrips(log) {
  const trips = [];
  let current = null;
  for (const entry of log) {
    if (entry.startsWith('>')) {
      if (!current || current.answered) trips.push((current = { sent: [], answered: false }));
      current.sent.push(entry.slice(2));
    } else if (current) current.answered = true;
  }
  return trips.map((t) => t.sent);
}

for (const [label, driver, pipeline] of [[...drivers[0], false], [...drivers[1], false], [...drivers[0], true]]) {
  const how = pipeline ? "in pg's pipeline mode" : 'of the default kind';
  test(`${label}: a plan's new key on a pool ${how}: ${pipeline ? 'one round trip' : 'one statement a round trip'}; after DISCARD ALL it still writes once`, { skip, timeout: 30_000 }, async () => {
    const engine = await postgresEngineOn(driver);
    const pool = new driver.Pool({ connectionString: engine.url, max: 1, pipeline });
    const kit = createKit({
      store: postgresStore({ pool }),
      plan: (request) => ({ outcome: 'applied', statements: [engine.note(request.principal, request.key, 'x')] }),
    });
    await kit.init();
    assert.equal((await submit(kit, 'w0')).status, 200, 'warm: the statements prepared');
    const log = await watch(pool);
    assert.equal((await submit(kit, 'w1')).status, 200);
    const sent = ['BEGIN', 'INSERT INTO csk_outcomes', 'INSERT INTO notes', 'COMMIT'];
    assert.deepEqual(roundTrips(log), pipeline ? [sent] : sent.map((s) => [s]));
    log.length = 0;
    assert.equal((await submit(kit, 'w1')).status, 200);
    assert.ok(log.some((entry) => entry.startsWith('> SELECT')), 'a repeat goes the general way, which reads the stored outcome');
    await pool.query('DISCARD ALL');
    assert.equal((await submit(kit, 'w2')).status, 200);
    assert.equal((await submit(kit, 'w3')).status, 200);
    for (const key of ['w0', 'w1', 'w2', 'w3']) assert.equal(await engine.count('anonymous', key), 1, key);
    await kit.close();
    await engine.close();
  });

  test(`${label}: apply's new key on a pool ${how}: ${pipeline ? 'BEGIN with the head, the outcome with COMMIT' : 'one statement a round trip'}`, { skip, timeout: 30_000 }, async () => {
    const engine = await postgresEngineOn(driver);
    const pool = new driver.Pool({ connectionString: engine.url, max: 1, pipeline });
    const kit = createKit({
      store: postgresStore({ pool }),
      apply: async (request, tx) => {
        await engine.write(tx, request.principal, request.key, 'x');
        return { outcome: 'applied' };
      },
    });
    assert.equal((await submit(kit, 'r1')).status, 200);
    const log = await watch(pool);
    assert.equal((await submit(kit, 'r2')).status, 200);
    const trips = roundTrips(log);
    assert.deepEqual(
      trips,
      pipeline
        ? [['BEGIN', 'SELECT'], ['INSERT INTO notes'], ['INSERT INTO csk_outcomes', 'COMMIT']]
        : [['BEGIN'], ['SELECT'], ['INSERT INTO notes'], ['INSERT INTO csk_outcomes'], ['COMMIT']],
    );
    assert.equal((await submit(kit, 'r1')).status, 200, 'a repeat is answered from the store');
    for (const key of ['r1', 'r2']) assert.equal(await engine.count('anonymous', key), 1, key);
    await kit.close();
    await engine.close();
  });
}
