// Postgres (CANVAS_SCHEDULER_TEST_DB): a process that starts while others serve takes no table
// lock. Its schema statements once did (CREATE INDEX IF NOT EXISTS takes a SHARE lock on the
// table even when the index exists, held to the end of the one implicit transaction of the
// schema), so a restart waited for every live apply and, holding the lock of one table while
// waiting for the next, deadlocked with them (the crash test, tests/crash/run.mjs, caught it).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import pg from 'pg';

import { startServer } from '../server.mjs';
import { TEST_ADMIN_TOKEN } from '../testing/helpers.mjs';
import { freshDatabase, testPostgres } from '../testing/test-db.mjs';

const cluster = testPostgres();

test('postgres: a server starts while another process has writes in flight on every table', { skip: !cluster, timeout: 30_000 }, async (t) => {
  const db = await freshDatabase(cluster);
  const first = await startServer({ port: 0, db, adminToken: TEST_ADMIN_TOKEN });
  t.after(() => first.close());
  // An apply in flight elsewhere: a transaction that has written each table and not committed.
  const holder = new pg.Client({ connectionString: db });
  await holder.connect();
  t.after(() => holder.end());
  await holder.query('BEGIN');
  await holder.query("INSERT INTO canvases VALUES ('c-held', 1, '{}')");
  await holder.query("INSERT INTO canvas_log VALUES ('c-held', 1, 'r-held', '[]')");
  await holder.query("INSERT INTO operation_log (operation_id, request_id, kind, at) VALUES ('o-held', 'r-held', 'shape.upsert', 1)");
  await holder.query(
    "INSERT INTO requests (id, digest, kind, body, status, http_status, answer, received_at) VALUES ('r-held', 'd', 'shape.upsert', '{}', 'applied', 200, '{}', 1)",
  );
  await holder.query("INSERT INTO runs VALUES ('run-held', 'pending', null, null, 1)");
  await holder.query("INSERT INTO assets VALUES ('a-held', 'r-held', 'text/plain', null, 1, 'x', '\\x00', 1)");
  await holder.query("INSERT INTO csk_outcomes (principal, key, digest, state, token, lease_until) VALUES ('p', 'k-held', 'd', 'pending', 1, 1)");

  const starting = startServer({ port: 0, db, adminToken: TEST_ADMIN_TOKEN });
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(() => resolve('waited on the live transaction'), 5_000)));
  const second = await Promise.race([starting, late]);
  clearTimeout(timer);
  await holder.query('ROLLBACK');
  const started = typeof second === 'string' ? await starting : second;
  await started.close();
  assert.notEqual(second, 'waited on the live transaction', 'the second server did not start within 5 s while a transaction had written every table');
});
