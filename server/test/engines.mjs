//! The two engines as the conformance suite sees them: a store, a domain table written by the
//! test app's `apply`, and a way to read it back. CSK_PG_URL (postgres://…) enables Postgres.

import Database from 'better-sqlite3';
import pg from 'pg';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteStore, postgresStore } from '../src/index.js';

let counter = 0;

/** @returns {Promise<any>} */
export async function sqliteEngine() {
  const dir = mkdtempSync(join(tmpdir(), 'csk-'));
  const path = join(dir, 'kit.sqlite');
  const db = new Database(path);
  db.exec('CREATE TABLE IF NOT EXISTS notes (principal TEXT, key TEXT, value TEXT)');
  const reader = new Database(path);
  return {
    name: 'sqlite',
    path,
    store: sqliteStore({ db }),
    openStore: () => sqliteStore({ db: new Database(path) }),
    note: (principal, key, value) => ({ text: 'INSERT INTO notes VALUES (?, ?, ?)', values: [principal, key, value] }),
    values: async (principal, key) =>
      reader.prepare('SELECT value FROM notes WHERE principal = ? AND key = ?').all(principal, key).map((r) => r.value),
    write: async (tx, principal, key, value) =>
      void tx.prepare('INSERT INTO notes VALUES (?, ?, ?)').run(principal, key, value),
    count: async (principal, key) =>
      reader.prepare('SELECT count(*) AS n FROM notes WHERE principal = ? AND key = ?').get(principal, key).n,
    dump: async () => JSON.stringify(reader.prepare('SELECT * FROM csk_outcomes').all()),
    close: async () => reader.close(),
  };
}

/** @returns {Promise<any>} */
export const postgresEngine = () => postgresEngineOn(pg);

/**
 * The Postgres engine on the `pg` module `driver` (the kit takes any pg 8: the tests run the
 * newest and the lowest, `pg-min`).
 * @returns {Promise<any>}
 */
export async function postgresEngineOn(driver) {
  const url = process.env.CSK_PG_URL;
  const admin = new driver.Client({ connectionString: url });
  await admin.connect();
  const name = `csk_test_${process.pid}_${(counter += 1)}`;
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const dbUrl = url.replace(/\/[^/]*$/, `/${name}`);
  const pool = new driver.Pool({ connectionString: dbUrl, max: 8 });
  await pool.query('CREATE TABLE notes (principal TEXT, key TEXT, value TEXT)');
  const pools = [pool];
  return {
    name: 'postgres',
    url: dbUrl,
    store: postgresStore({ pool }),
    openStore: () => {
      const p = new driver.Pool({ connectionString: dbUrl, max: 4 });
      pools.push(p);
      return postgresStore({ pool: p });
    },
    note: (principal, key, value) => ({ text: 'INSERT INTO notes VALUES ($1, $2, $3)', values: [principal, key, value] }),
    values: async (principal, key) =>
      (await pool.query('SELECT value FROM notes WHERE principal = $1 AND key = $2', [principal, key])).rows.map((r) => r.value),
    write: async (tx, principal, key, value) =>
      void (await tx.query('INSERT INTO notes VALUES ($1, $2, $3)', [principal, key, value])),
    count: async (principal, key) =>
      Number((await pool.query('SELECT count(*) AS n FROM notes WHERE principal = $1 AND key = $2', [principal, key])).rows[0].n),
    dump: async () => JSON.stringify((await pool.query('SELECT * FROM csk_outcomes')).rows),
    close: async () => {
      for (const p of pools.slice(1)) await p.end().catch(() => {});
    },
  };
}
