//! The Postgres engine (`pg`): any number of stateless processes on one database. The kit's submit
//! runs in one transaction (postgres-apply.js; a `plan`'s in one round trip, postgres-write.js).
//! `claim` + `commit` stay for the Store interface: a claim is one INSERT … ON CONFLICT; the
//! commit locks the key's row (FOR UPDATE) and checks the fencing token, so a process whose lease
//! was taken over cannot settle the key, and the app's writes commit or roll back with the outcome.

import { keyLock, postgresApplyOnce } from './postgres-apply.js';
import { postgresWriteOnce } from './postgres-write.js';

/** @param {string} schema */
const ddl = (table) => `
CREATE TABLE IF NOT EXISTS ${table} (
  principal TEXT NOT NULL,
  key TEXT NOT NULL,
  digest TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
  token BIGINT NOT NULL,
  lease_until BIGINT NOT NULL,
  status INTEGER,
  answer JSONB,
  settled_at BIGINT,
  PRIMARY KEY (principal, key)
);
CREATE INDEX IF NOT EXISTS ${table}_settled ON ${table} (settled_at) WHERE state = 'done';
`;

/** @param {any} r */
const shape = (r) =>
  r && { ...r, token: Number(r.token), lease_until: Number(r.lease_until), settled_at: r.settled_at == null ? null : Number(r.settled_at) };

/**
 * @param {{ pool: any, table?: string }} options
 * @returns {import('./index.js').Store}
 */
export function postgresStore({ pool, table = 'csk_outcomes' }) {
  if (!/^[a-z_][a-z0-9_]*$/.test(table)) throw new TypeError('table must be a plain identifier');
  const T = table;
  const get = async (client, principal, key, lock = '') =>
    shape((await client.query(`SELECT * FROM ${T} WHERE principal = $1 AND key = $2 ${lock}`, [principal, key])).rows[0]) ?? null;
  // A key with no row may be being applied by another process (it holds the key's advisory
  // lock, postgres-apply.js): taking that lock for this one statement says so.
  const lookup = `SELECT t.*, t.key IS NULL AND NOT pg_try_advisory_xact_lock(${keyLock(T)}) AS busy
    FROM (SELECT 1) AS one LEFT JOIN ${T} AS t ON t.principal = $1 AND t.key = $2`;
  const wire = { prepare: true };
  const applyOnce = postgresApplyOnce(pool, T, wire);
  return {
    applyOnce,
    writeOnce: postgresWriteOnce(pool, T, wire, applyOnce),
    async init() {
      const client = await pool.connect();
      try {
        // DDL only when the table or its index is missing: CREATE INDEX IF NOT EXISTS takes a
        // SHARE lock on the table even when the index exists, so a process starting beside
        // others that serve would wait for (and stall) their applies. A catalog lookup does not.
        const { rows } = await client.query('SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS ready', [T, `${T}_settled`]);
        if (rows[0].ready) return;
        // Several processes may start at once: one lock makes the DDL run one at a time.
        await client.query('SELECT pg_advisory_lock(47110039)');
        try {
          await client.query(ddl(T));
        } finally {
          await client.query('SELECT pg_advisory_unlock(47110039)').catch(() => {});
        }
      } finally {
        client.release();
      }
    },
    async claim({ principal, key, digest, now, leaseMs }) {
      const { rows } = await pool.query(
        `INSERT INTO ${T} AS t (principal, key, digest, state, token, lease_until)
         VALUES ($1, $2, $3, 'pending', 1, $4)
         ON CONFLICT (principal, key) DO UPDATE SET token = t.token + 1, lease_until = EXCLUDED.lease_until
         WHERE t.state = 'pending' AND t.lease_until < $5 AND t.digest = EXCLUDED.digest
         RETURNING token`,
        [principal, key, digest, now + leaseMs, now],
      );
      if (rows.length) return { state: 'claimed', token: Number(rows[0].token) };
      const existing = await get(pool, principal, key);
      // Purged between the two statements: the caller sees it as busy and the client retries.
      return existing ?? { state: 'pending', digest };
    },
    async commit({ principal, key, token, now }, fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const current = await get(client, principal, key, 'FOR UPDATE');
        if (!current || (current.state === 'pending' && current.token !== token)) {
          await client.query('ROLLBACK');
          return { state: 'lost' };
        }
        if (current.state === 'done') {
          await client.query('ROLLBACK');
          return current;
        }
        const { status, answer } = await fn(client);
        await client.query(
          `UPDATE ${T} SET state = 'done', status = $1, answer = $2, settled_at = $3 WHERE principal = $4 AND key = $5 AND token = $6`,
          [status, JSON.stringify(answer), now, principal, key, token],
        );
        await client.query('COMMIT');
        return { state: 'done', digest: current.digest, status, answer };
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async settle({ principal, key, now }, fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const current = await get(client, principal, key, 'FOR UPDATE');
        const next = current?.state === 'done' && current.answer?.outcome === 'accepted' ? await fn(client, current.answer) : null;
        if (!next) {
          await client.query('ROLLBACK');
          return { state: 'unchanged', row: current };
        }
        await client.query(
          `UPDATE ${T} SET status = $1, answer = $2, settled_at = $3 WHERE principal = $4 AND key = $5 AND state = 'done'`,
          [next.status, JSON.stringify(next.answer), now, principal, key],
        );
        await client.query('COMMIT');
        return { state: 'settled', row: { ...current, status: next.status, answer: next.answer } };
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async release({ principal, key, token }) {
      await pool.query(`DELETE FROM ${T} WHERE principal = $1 AND key = $2 AND token = $3 AND state = 'pending'`, [principal, key, token]);
    },
    async get({ principal, key }) {
      const { rows } = await pool.query(lookup, [principal, key]);
      const { busy, ...row } = rows[0];
      if (row.key != null) return shape(row);
      // Being applied elsewhere: in progress, with a lease that has not run out.
      return busy ? { state: 'pending', digest: '', lease_until: Number.MAX_SAFE_INTEGER } : null;
    },
    async purge({ before, limit }) {
      const { rowCount } = await pool.query(
        `DELETE FROM ${T} WHERE (principal, key) IN (SELECT principal, key FROM ${T} WHERE state = 'done' AND settled_at < $1 ORDER BY settled_at LIMIT $2)`,
        [before, limit],
      );
      return rowCount ?? 0;
    },
    close: () => pool.end(),
  };
}
