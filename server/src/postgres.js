//! The Postgres engine (`pg`): any number of stateless processes on one database. The kit's submit
//! runs in one transaction (postgres-apply.js; a `plan`'s with no read first, postgres-write.js).
//! `claim` + `commit` stay for the Store interface: a claim is one INSERT … ON CONFLICT; the
//! commit locks the key's row (FOR UPDATE) and checks the fencing token, so a process whose lease
//! was taken over cannot settle the key, and the app's writes commit or roll back with the outcome.

import { postgresApplyOnce } from './postgres-apply.js';
import { named, plain, withClient } from './postgres-queries.js';
import { DDL_LOCK, ddl, inspect, rowOf, statementsFor } from './postgres-schema.js';
import { postgresWriteOnce } from './postgres-write.js';

/**
 * @param {{ pool: any, table?: string }} options
 * @returns {import('./index.js').Store}
 */
export function postgresStore({ pool, table = 'csk_outcomes' }) {
  if (!/^[a-z_][a-z0-9_]*$/.test(table)) throw new TypeError('table must be a plain identifier');
  const T = table;
  /** @type {ReturnType<typeof sqlFor> | null} */
  let sql = null;
  /** @param {boolean} jsonb */
  const sqlFor = (jsonb) => {
    const all = statementsFor(T, jsonb);
    return { ...all, head: named(all.head), done: named(all.done), put: named(all.put) };
  };
  // The statements fit the table as init() found it; a store used before init() looks once.
  const statements = async () => (sql ??= sqlFor((await inspect(pool, T)).jsonb));
  const mode = { named: true };
  const applyOnce = postgresApplyOnce(pool, statements, mode);
  /** @param {any} client @param {string} text @param {unknown[]} values */
  const one = async (client, text, values) => {
    const { rows } = await client.query(plain(text, values));
    return rows[0] ? rowOf(rows[0]) : null;
  };

  /**
   * Runs `body` in a transaction: it gives its result and whether to commit (what it and the
   * app's `fn` wrote on the client); anything else, or a throw, rolls back.
   * @template R
   * @param {(client: any, s: ReturnType<typeof sqlFor>) => Promise<[R, boolean]>} body
   * @returns {Promise<R>}
   */
  const transaction = (body) =>
    withClient(pool, async (client, broke) => {
      const s = await statements();
      await client.query('BEGIN');
      let open = true;
      try {
        const [out, commit] = await body(client, s);
        open = false;
        await client.query(commit ? 'COMMIT' : 'ROLLBACK');
        return out;
      } finally {
        if (open) await client.query('ROLLBACK').catch(broke);
      }
    });

  return {
    applyOnce,
    writeOnce: postgresWriteOnce(pool, T, statements, mode, applyOnce),
    async init() {
      await withClient(pool, async (client) => {
        // DDL only when the table, its index or its text column is missing: CREATE INDEX IF NOT
        // EXISTS takes a SHARE lock on the table even when the index exists, so a process
        // starting beside others that serve would wait for (and stall) their applies. A catalog
        // lookup does not.
        let found = await inspect(client, T);
        if (!found.ready) {
          // Several processes may start at once: one lock makes the DDL run one at a time.
          await client.query(`SELECT pg_advisory_lock(${DDL_LOCK})`);
          try {
            await client.query(ddl(T));
          } finally {
            await client.query(`SELECT pg_advisory_unlock(${DDL_LOCK})`).catch(() => {});
          }
          found = await inspect(client, T);
        }
        sql = sqlFor(found.jsonb);
      });
    },
    async claim({ principal, key, digest, now, leaseMs }) {
      const s = await statements();
      const { rows } = await pool.query(plain(s.claim, [principal, key, digest, now + leaseMs, now]));
      if (rows.length) return { state: 'claimed', token: Number(rows[0].token) };
      const existing = await one(pool, s.get, [principal, key]);
      // Purged between the two statements: the caller sees it as busy and the client retries.
      return existing ?? { state: 'pending', digest };
    },
    commit: ({ principal, key, token, now }, fn) =>
      transaction(async (client, s) => {
        const current = await one(client, s.locked, [principal, key]);
        if (!current || (current.state === 'pending' && current.token !== token)) return [{ state: 'lost' }, false];
        if (current.state === 'done') return [current, false];
        const { status, answer, text } = await fn(client);
        await client.query(plain(s.settleClaim, [status, text, now, principal, key, token]));
        return [{ state: 'done', digest: current.digest, status, answer, text }, true];
      }),
    settle: ({ principal, key, now }, fn) =>
      transaction(async (client, s) => {
        const current = await one(client, s.locked, [principal, key]);
        const answer = current?.state !== 'done' ? null : current.text != null ? JSON.parse(current.text) : current.answer;
        const next = answer?.outcome === 'accepted' ? await fn(client, answer) : null;
        if (!next) return [{ state: 'unchanged', row: current }, false];
        await client.query(plain(s.resettle, [next.status, next.text, now, principal, key]));
        return [{ state: 'settled', row: { ...current, status: next.status, answer: next.answer, text: next.text } }, true];
      }),
    async release({ principal, key, token }) {
      await pool.query(plain((await statements()).release, [principal, key, token]));
    },
    async get({ principal, key }) {
      const { rows } = await pool.query(plain((await statements()).lookup, [principal, key]));
      const { busy, ...row } = rows[0];
      if (row.state != null) return rowOf(row);
      // Being applied elsewhere: in progress, with a lease that has not run out.
      return busy === 't' ? { state: 'pending', digest: '', lease_until: Number.MAX_SAFE_INTEGER } : null;
    },
    async purge({ before, limit }) {
      const { rowCount } = await pool.query(plain((await statements()).purge, [before, limit]));
      return rowCount ?? 0;
    },
    close: () => pool.end(),
  };
}
