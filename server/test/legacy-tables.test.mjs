//! A database made by kit 0.1.0 (test/fixtures/outcomes-0.1.0.*.sql: its table and the rows it
//! stored) keeps working: its keys are answered as 0.1.0 answered their repeats, a body sent
//! again is still the same request (the digest has not changed), its dead claim is taken over,
//! its accepted outcome is settled, and new keys are answered with their first answer's bytes.
//! On Postgres the table kept answers as JSONB: `init()` adds the text column, and rows written
//! from then on also fill the JSONB one, which 0.1.0 processes on the same database read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createKit, postgresStore, sqliteStore } from '../src/index.js';

const fixture = (name) => readFileSync(new URL(`./fixtures/outcomes-0.1.0.${name}.sql`, import.meta.url), 'utf8');

/** The bodies 0.1.0 stored the fixtures' rows for (the digests in the rows are of these). */
const bodies = {
  'old-applied': { id: 'old-applied', operationIds: ['old-applied-op'], kind: 'note.add', protocolVersion: 1, payload: { zeta: 'ü🔑', alpha: [3, 1.5, null], nested: { b: true, a: 'x"y' } }, canvasIds: ['c1'] },
  'old-rejected': { id: 'old-rejected', operationIds: ['old-rejected-op'], kind: 'note.add', protocolVersion: 1, payload: { text: 'conflict' }, canvasIds: ['c1'], expectedVersions: { c1: 3 } },
  'old-accepted': { id: 'old-accepted', operationIds: ['old-accepted-op'], kind: 'note.add', protocolVersion: 1, payload: { text: 'later' }, canvasIds: ['c1'] },
  'old-claimed': { id: 'old-claimed', operationIds: ['old-claimed-op'], kind: 'note.add', protocolVersion: 1, payload: { text: 'claimed by a process that died' }, canvasIds: ['c1'] },
};

/** What 0.1.0 sent for a repeat of each key: on SQLite the first answer's bytes; on Postgres its JSONB written out. */
const repeats = {
  sqlite: {
    'old-applied': '200 {"outcome":"applied","canonical":{"version":2,"shapes":{"s2":{"y":1,"x":2},"s10":null}},"operations":[{"operationId":"old-applied-op","outcome":"applied"}]}',
    'old-rejected': '409 {"outcome":"rejected","error":{"message":"stale","code":"version_conflict"},"canonical":{"version":4}}',
    'old-accepted': '202 {"outcome":"accepted"}',
  },
  postgres: {
    'old-applied': '200 {"outcome":"applied","canonical":{"shapes":{"s2":{"x":2,"y":1},"s10":null},"version":2},"operations":[{"outcome":"applied","operationId":"old-applied-op"}]}',
    'old-rejected': '409 {"error":{"code":"version_conflict","message":"stale"},"outcome":"rejected","canonical":{"version":4}}',
    'old-accepted': '202 {"outcome":"accepted"}',
  },
};

const post = (kit, b) =>
  kit.handle(new Request('http://127.0.0.1/v1/requests', { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': b.id }, body: JSON.stringify(b) }));
const get = (kit, id) => kit.handle(new Request(`http://127.0.0.1/v1/requests/${id}`));
const said = async (response) => `${response.status} ${await response.text()}`;

/** A kit on `store` whose apply answers with keys in an order JSONB would change, and counts its calls. */
function kitOn(store) {
  const calls = [];
  const kit = createKit({
    store,
    apply: (request) => {
      calls.push(request.key);
      return { canonical: { zeta: request.key, alpha: 1.5 }, outcome: 'applied' };
    },
  });
  return { kit, calls };
}

/** The checks both engines pass on a database made by 0.1.0. */
async function keepsWorking(kit, calls, engine) {
  await kit.init();
  for (const [key, expected] of Object.entries(repeats[engine])) {
    assert.equal(await said(await post(kit, bodies[key])), expected, `a repeat of ${key}`);
    assert.equal(await said(await get(kit, key)), expected, `a query of ${key}`);
  }
  assert.deepEqual(calls, [], 'no key of 0.1.0 applied again: the same bodies give the same digests');
  const reused = await post(kit, { ...bodies['old-applied'], payload: { other: true } });
  assert.equal(reused.status, 422, 'another body under an old key is still refused');
  // The claim of a process that died (its lease long over) is taken over and applied once.
  const claimed = await said(await post(kit, bodies['old-claimed']));
  assert.equal(claimed, '200 {"canonical":{"zeta":"old-claimed","alpha":1.5},"outcome":"applied"}');
  assert.equal(await said(await post(kit, bodies['old-claimed'])), claimed, 'its repeat: the same bytes');
  // The accepted outcome is completed once, and answered with the new answer's bytes.
  const completed = { operations: [{ operationId: 'old-accepted-op', outcome: 'applied' }], outcome: 'applied' };
  assert.equal(await kit.settle({ principal: 'anonymous', key: 'old-accepted' }, async (_tx, answer) => (answer.outcome === 'accepted' ? completed : null)), true);
  assert.equal(await said(await post(kit, bodies['old-accepted'])), `200 ${JSON.stringify(completed)}`);
  // A new key: its repeat gets its first answer's bytes.
  const fresh = { ...bodies['old-claimed'], id: 'new-key', operationIds: ['new-key-op'] };
  const first = await said(await post(kit, fresh));
  assert.equal(first, '200 {"canonical":{"zeta":"new-key","alpha":1.5},"outcome":"applied"}');
  assert.equal(await said(await post(kit, fresh)), first);
  assert.equal(await said(await get(kit, 'new-key')), first);
  assert.deepEqual(calls, ['old-claimed', 'new-key']);
}

test('sqlite: a database made by kit 0.1.0 keeps working', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'csk-legacy-')), 'kit.sqlite');
  const setup = new Database(path);
  setup.exec(fixture('sqlite'));
  setup.close();
  const { kit, calls } = kitOn(sqliteStore({ db: new Database(path) }));
  await keepsWorking(kit, calls, 'sqlite');
  await kit.close();
});

test('postgres: a database made by kit 0.1.0 (answers as JSONB) keeps working, beside 0.1.0 processes', { skip: !process.env.CSK_PG_URL, timeout: 60_000 }, async () => {
  const url = process.env.CSK_PG_URL;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const name = `csk_legacy_${process.pid}`;
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const pool = new pg.Pool({ connectionString: url.replace(/\/[^/]*$/, `/${name}`), max: 4 });
  await pool.query(fixture('postgres'));
  const column = async (key) => (await pool.query('SELECT answer, answer_text FROM csk_outcomes WHERE key = $1', [key])).rows[0];
  try {
    // Two processes starting at once on the old table: one changes it, both serve.
    const { kit, calls } = kitOn(postgresStore({ pool }));
    const other = kitOn(postgresStore({ pool: new pg.Pool({ connectionString: url.replace(/\/[^/]*$/, `/${name}`), max: 2 }) }));
    await Promise.all([kit.init(), other.kit.init()]);
    await keepsWorking(kit, calls, 'postgres');
    // Rows written now carry the text and the JSONB value that a 0.1.0 process reads.
    for (const key of ['new-key', 'old-claimed', 'old-accepted']) {
      const row = await column(key);
      assert.deepEqual(row.answer, JSON.parse(row.answer_text), key);
    }
    assert.equal((await column('old-applied')).answer_text, null, 'a row from before keeps only its JSONB');
    // A row 0.1.0 writes now (its statement fills only the JSONB column) is answered from it.
    await pool.query(
      `INSERT INTO csk_outcomes (principal, key, digest, state, token, lease_until, status, answer, settled_at)
       VALUES ('anonymous', 'by-0.1.0', 'd', 'done', 1, 1, 200, '{"outcome": "applied"}', 1)`,
    );
    assert.deepEqual(await other.kit.lookup({ principal: 'anonymous', key: 'by-0.1.0' }), {
      state: 'done', status: 200, answer: { outcome: 'applied' }, text: '{"outcome":"applied"}', fresh: false,
    });
    // A plan on the old table writes both columns too.
    const planned = createKit({ store: postgresStore({ pool }), plan: () => ({ canonical: { b: 1, a: 2 }, outcome: 'applied' }) });
    const plannedBody = { ...bodies['old-claimed'], id: 'planned', operationIds: ['planned-op'] };
    assert.equal(await said(await post(planned, plannedBody)), '200 {"canonical":{"b":1,"a":2},"outcome":"applied"}');
    assert.equal(await said(await post(planned, plannedBody)), '200 {"canonical":{"b":1,"a":2},"outcome":"applied"}');
    assert.deepEqual((await column('planned')).answer, { canonical: { b: 1, a: 2 }, outcome: 'applied' });
    // Once the rows from before are gone and no 0.1.0 process is left, the JSONB column can go:
    // a store started then writes the text alone.
    await pool.query("DELETE FROM csk_outcomes WHERE answer_text IS NULL AND state = 'done'");
    await pool.query('ALTER TABLE csk_outcomes DROP COLUMN answer');
    const later = kitOn(postgresStore({ pool: new pg.Pool({ connectionString: url.replace(/\/[^/]*$/, `/${name}`), max: 2 }) }));
    await later.kit.init();
    assert.equal(await said(await post(later.kit, plannedBody)), '200 {"canonical":{"b":1,"a":2},"outcome":"applied"}');
    const last = { ...plannedBody, id: 'after-drop', operationIds: ['after-drop-op'] };
    assert.equal(await said(await post(later.kit, last)), '200 {"canonical":{"zeta":"after-drop","alpha":1.5},"outcome":"applied"}');
    assert.equal(await said(await post(later.kit, last)), '200 {"canonical":{"zeta":"after-drop","alpha":1.5},"outcome":"applied"}');
    await other.kit.close();
    await later.kit.close();
  } finally {
    await pool.end().catch(() => {});
  }
});
