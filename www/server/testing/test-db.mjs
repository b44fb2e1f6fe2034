// CANVAS_SCHEDULER_TEST_DB=postgres://user@127.0.0.1:PORT/postgres runs the reference servers
// that tests start on Postgres: each server gets a fresh database on that cluster (the URL's user
// may create databases; scripts/pg-cluster starts such a throw-away cluster). Unset: SQLite.

import pg from 'pg';

let counter = 0;

/** The Postgres cluster the tests should use, or null for SQLite. */
export function testPostgres() {
  const url = process.env.CANVAS_SCHEDULER_TEST_DB ?? '';
  return /^postgres(ql)?:\/\//.test(url) ? url : null;
}

/**
 * Creates an empty database on the cluster `base` names and returns its URL.
 * @param {string} base postgres://… (any database the user can connect to)
 */
export async function freshDatabase(base) {
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  const name = `canvas_test_${process.pid}_${Date.now().toString(36)}_${(counter += 1)}`;
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.href;
}
