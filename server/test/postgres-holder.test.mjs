//! The holder of a key on Postgres, seen from a second process (two kits on two pools): in
//! progress while the first applies, free at once when the first one's connection dies, and
//! free after the lease when the first one hangs; in each case applied once. CSK_PG_URL=postgres://…
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createKit } from '../src/index.js';
import { postgresEngine } from './engines.mjs';

const skip = !process.env.CSK_PG_URL;
const URL_BASE = 'http://127.0.0.1/v1';
const body = (id) => ({ id, operationIds: [`${id}-op`], kind: 'note.add', protocolVersion: 1, payload: { text: id }, canvasIds: ['c1'] });
const submit = (kit, id) =>
  kit.handle(new Request(`${URL_BASE}/requests`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': id }, body: JSON.stringify(body(id)) }));
const query = (kit, id) => kit.handle(new Request(`${URL_BASE}/requests/${id}`));

/** Two "processes" on one database; the first one's apply waits at a gate it reports entering. */
async function twoProcesses({ leaseMs = 30_000 } = {}) {
  const engine = await postgresEngine();
  let entered;
  const inside = new Promise((resolve) => (entered = resolve));
  let open;
  const gate = new Promise((resolve) => (open = resolve));
  let backendPid = null;
  const calls = { first: 0, second: 0 };
  const first = createKit({
    store: engine.store,
    leaseMs,
    onError: () => {},
    apply: async (request, tx) => {
      calls.first += 1;
      await engine.write(tx, request.principal, request.key, 'first');
      backendPid = (await tx.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      entered();
      await gate;
      return { outcome: 'applied', canonical: { by: 'first' } };
    },
  });
  const second = createKit({
    store: engine.openStore(),
    leaseMs,
    apply: async (request, tx) => {
      calls.second += 1;
      await engine.write(tx, request.principal, request.key, 'second');
      return { outcome: 'applied', canonical: { by: 'second' } };
    },
  });
  await Promise.all([first.init(), second.init()]);
  const done = async () => {
    open();
    await first.close().catch(() => {});
    await second.close().catch(() => {});
    await engine.close();
  };
  return { engine, first, second, inside, open, calls, pid: () => backendPid, done };
}

test('postgres: while one process applies a key, another answers 409 on submit and on query', { skip, timeout: 30_000 }, async () => {
  const { engine, first, second, inside, open, calls, done } = await twoProcesses();
  const slow = submit(first, 'h1');
  await inside;
  const busy = await submit(second, 'h1');
  assert.equal(busy.status, 409);
  assert.equal(await busy.text(), '');
  const asked = await query(second, 'h1');
  assert.equal(asked.status, 409, 'in progress elsewhere: 409, not 404');
  open();
  assert.equal((await slow).status, 200);
  const settled = await query(second, 'h1');
  assert.deepEqual(await settled.json(), { outcome: 'applied', canonical: { by: 'first' } });
  assert.equal((await submit(second, 'h1')).status, 200);
  assert.deepEqual(calls, { first: 1, second: 0 });
  assert.equal(await engine.count('anonymous', 'h1'), 1);
  await done();
});

test('postgres: a holder whose connection dies mid-apply leaves nothing: the key is free at once and applied once', { skip, timeout: 30_000 }, async () => {
  const { engine, first, second, inside, open, calls, pid, done } = await twoProcesses();
  const dying = submit(first, 'h2');
  await inside;
  // What the database sees of a SIGKILLed process: its connection ends, its transaction aborts.
  const killer = new pg.Client({ connectionString: engine.url });
  await killer.connect();
  await killer.query('SELECT pg_terminate_backend($1)', [pid()]);
  await killer.end();
  assert.equal((await query(second, 'h2')).status, 404, 'nothing was applied: never received, as far as the store says');
  const taken = await submit(second, 'h2');
  assert.equal(taken.status, 200);
  assert.deepEqual(await taken.json(), { outcome: 'applied', canonical: { by: 'second' } });
  open();
  assert.equal((await dying).status, 500);
  assert.deepEqual(calls, { first: 1, second: 1 });
  assert.equal(await engine.count('anonymous', 'h2'), 1, "the dead holder's write rolled back");
  await done();
});

test('postgres: a holder that hangs past the lease is cut off: its writes never commit, another process applies once', { skip, timeout: 30_000 }, async () => {
  const { engine, first, second, inside, open, calls, done } = await twoProcesses({ leaseMs: 1_000 });
  const hung = submit(first, 'h3');
  await inside;
  assert.equal((await submit(second, 'h3')).status, 409, 'within the lease');
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const taken = await submit(second, 'h3');
  assert.equal(taken.status, 200);
  open();
  assert.equal((await hung).status, 500, 'the hung holder cannot commit');
  assert.deepEqual(await (await query(first, 'h3')).json(), { outcome: 'applied', canonical: { by: 'second' } });
  assert.deepEqual(calls, { first: 1, second: 1 });
  assert.equal(await engine.count('anonymous', 'h3'), 1);
  await done();
});
