//! The Postgres store's prepared statements: a connection that loses them (DISCARD ALL, a pooler
//! in transaction mode) still applies every key once, with the statements inlined from then on;
//! two stores on one pool share a connection's statements; values beyond ASCII go through the
//! bound statements intact; a pool in pg's pipeline mode inlines them. CSK_PG_URL=postgres://…
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createKit, postgresStore } from '../src/index.js';
import { postgresEngine } from './engines.mjs';

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
async function onOneConnection(engine) {
  const pool = new pg.Pool({ connectionString: engine.url, max: 1 });
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

test('postgres: a connection that loses its prepared statements still applies each key once', { skip, timeout: 30_000 }, async () => {
  const engine = await postgresEngine();
  const { pool, kit } = await onOneConnection(engine);
  assert.equal((await submit(kit, 'p1')).status, 200);
  const { rows } = await pool.query('SELECT count(*)::int AS n FROM pg_prepared_statements');
  assert.equal(rows[0].n, 4, 'head, done, BEGIN and COMMIT prepared on the connection');
  await pool.query('DISCARD ALL');
  assert.equal((await submit(kit, 'p2')).status, 200);
  assert.equal((await submit(kit, 'p2')).status, 200, 'a repeat is answered from the store');
  assert.equal((await submit(kit, 'p3')).status, 200);
  const after = await pool.query('SELECT count(*)::int AS n FROM pg_prepared_statements');
  assert.equal(after.rows[0].n, 0, 'inlined from then on: nothing prepared again');
  for (const key of ['p1', 'p2', 'p3']) assert.equal(await engine.count('anonymous', key), 1, key);
  await kit.close();
  await engine.close();
});

test("postgres: two stores on one pool share the connection's prepared statements", { skip, timeout: 30_000 }, async () => {
  const engine = await postgresEngine();
  const { pool, kit } = await onOneConnection(engine);
  const other = createKit({ store: postgresStore({ pool }), apply: async () => ({ outcome: 'applied' }) });
  assert.equal((await submit(kit, 'q1')).status, 200);
  assert.equal((await submit(other, 'q2')).status, 200);
  assert.equal((await submit(kit, 'q3')).status, 200);
  await kit.close();
  await engine.close();
});

test('postgres: keys, principals and answers beyond ASCII go through the bound statements intact', { skip, timeout: 30_000 }, async () => {
  const engine = await postgresEngine();
  const pool = new pg.Pool({ connectionString: engine.url, max: 1 });
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

test("postgres: a pool in pg's pipeline mode (no custom queries) applies each key once, its statements inlined", { skip, timeout: 30_000 }, async () => {
  const engine = await postgresEngine();
  const pool = new pg.Pool({ connectionString: engine.url, max: 1, pipeline: true });
  const kit = createKit({
    store: postgresStore({ pool }),
    apply: async (request, tx) => {
      await engine.write(tx, request.principal, request.key, 'x');
      return { outcome: 'applied' };
    },
  });
  assert.equal((await submit(kit, 'r1')).status, 200);
  assert.equal((await submit(kit, 'r1')).status, 200, 'a repeat is answered from the store');
  assert.equal((await submit(kit, 'r2')).status, 200);
  for (const key of ['r1', 'r2']) assert.equal(await engine.count('anonymous', key), 1, key);
  await kit.close();
  await engine.close();
});

test('postgres: a plan writes a new key in one round trip, and after DISCARD ALL still writes once', { skip, timeout: 30_000 }, async () => {
  const engine = await postgresEngine();
  const pool = new pg.Pool({ connectionString: engine.url, max: 1 });
  const kit = createKit({
    store: postgresStore({ pool }),
    plan: (request) => ({ outcome: 'applied', statements: [engine.note(request.principal, request.key, 'x')] }),
  });
  await kit.init();
  assert.equal((await submit(kit, 'w0')).status, 200, 'warm: the statements prepared');
  // Count what goes to the database on the one connection for a new key and for a repeat.
  const client = await pool.connect();
  const queries = [];
  const original = client.query;
  client.query = function (...args) {
    queries.push(typeof args[0] === 'string' ? args[0] : args[0]?.text ?? args[0]?.constructor?.name);
    return original.apply(this, args);
  };
  client.release();
  assert.equal((await submit(kit, 'w1')).status, 200);
  assert.deepEqual(queries, ['Round'], 'one round trip: BEGIN, the outcome, the statement and COMMIT in one write');
  queries.length = 0;
  assert.equal((await submit(kit, 'w1')).status, 200);
  assert.ok(queries.length > 1, 'a repeat goes the general way, which reads the stored outcome');
  await pool.query('DISCARD ALL');
  assert.equal((await submit(kit, 'w2')).status, 200);
  assert.equal((await submit(kit, 'w3')).status, 200);
  for (const key of ['w0', 'w1', 'w2', 'w3']) assert.equal(await engine.count('anonymous', key), 1, key);
  await kit.close();
  await engine.close();
});
