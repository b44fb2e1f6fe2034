//! The Postgres store's submit in ONE transaction: the key's lock, the app's `apply` and the
//! stored outcome commit together, in one commit (the claim-then-commit path took two commits
//! and six round trips). A key being applied is held by a transaction-scoped advisory lock, not
//! by a committed claim row: a second process finds the lock taken and answers 409 at once; a
//! holder that dies (SIGKILL, a lost connection) leaves nothing behind, since its transaction
//! and its lock end with its connection; a holder that hangs with its transaction idle longer
//! than the lease is cut off by the database (idle_in_transaction_session_timeout, set for this
//! transaction only), so nothing it wrote commits. A claim row left by `claim` (an older kit,
//! or a test) is respected while its lease runs and taken over, fenced by its token, after.
//!
//! Two round trips of the kit's own for a new key: `BEGIN; EXECUTE head(…)` and
//! `EXECUTE done(…); COMMIT`. Multi-statement queries take no parameters, so the values go in as
//! literals escaped by pg (`escapeLiteral`); the statements are PREPAREd once per connection so
//! the database does not plan them for every request. A connection that loses them (DISCARD ALL,
//! or a pooler in transaction mode handing out another server connection) makes the store inline
//! the same statements from then on.

import { preparedOn } from './postgres-prepared.js';

/**
 * @param {any} pool
 * @param {string} T the outcomes table (a plain identifier)
 */
export function postgresApplyOnce(pool, T) {
  const statements = {
    head: {
      name: `csk_head_${T}`,
      types: 'text, text, text',
      text: `SELECT set_config('idle_in_transaction_session_timeout', $3, true) AS lease,
          pg_try_advisory_xact_lock(hashtext('${T}'), hashtext(length($1) || ':' || $1 || $2)) AS mine,
          t.digest, t.state, t.token, t.lease_until, t.status, t.answer
        FROM (SELECT 1) AS one LEFT JOIN ${T} AS t ON t.principal = $1 AND t.key = $2`,
    },
    // A plain INSERT: if a claim row appeared meanwhile it fails, and the COMMIT after it in the
    // same query never runs, so the app's writes never commit without the outcome.
    done: {
      name: `csk_done_${T}`,
      types: 'text, text, text, bigint, integer, jsonb',
      text: `INSERT INTO ${T} (principal, key, digest, state, token, lease_until, status, answer, settled_at)
        VALUES ($1, $2, $3, 'done', 1, $4, $5, $6, $4)`,
    },
  };
  // The takeover of an old-style claim (rare): parameterized, and committed on its own.
  const takeOver = `UPDATE ${T} SET state = 'done', token = token + 1, status = $4, answer = $5, settled_at = $6
    WHERE principal = $1 AND key = $2 AND state = 'pending' AND token = $3 RETURNING token`;
  let prepare = true;

  /**
   * The SQL that runs `which` with `values` on `client`: EXECUTE of the prepared statement, or
   * the statement with the values inlined.
   * @param {any} client @param {'head' | 'done'} which @param {unknown[]} values
   */
  async function sql(client, which, values) {
    /** @param {unknown} value */
    const lit = (value) => client.escapeLiteral(String(value));
    const statement = statements[which];
    if (!prepare) return statement.text.replace(/\$(\d)/g, (_, n) => lit(values[Number(n) - 1]));
    await preparedOn(client, Object.values(statements));
    return `EXECUTE ${statement.name}(${values.map(lit).join(', ')})`;
  }

  /**
   * @param {{ principal: string, key: string, digest: string, now: number, leaseMs: number }} args
   * @param {(tx: any) => Promise<{ status: number, answer: unknown }>} fn
   */
  return async function applyOnce({ principal, key, digest, now, leaseMs }, fn) {
    const client = await pool.connect();
    // The database may end this connection (the lease ran out while apply awaited something
    // else): an error with no query running is emitted, and must not crash the process.
    /** @type {unknown} */
    let broken = null;
    const onError = (/** @type {unknown} */ error) => void (broken = error);
    client.on('error', onError);
    let open = false;
    try {
      const values = [principal, key, Math.max(1, Math.ceil(leaseMs))];
      open = true;
      let results;
      try {
        results = await client.query(`BEGIN; ${await sql(client, 'head', values)}`);
      } catch (error) {
        // 26000: the connection lost its prepared statements. Nothing ran yet: inline, again.
        if (/** @type {any} */ (error)?.code !== '26000' || !prepare) throw error;
        prepare = false;
        await client.query('ROLLBACK');
        results = await client.query(`BEGIN; ${await sql(client, 'head', values)}`);
      }
      const found = results[1].rows[0];
      const existing = found.state == null ? null : { ...found, token: Number(found.token), lease_until: Number(found.lease_until) };
      // Settled, or sent before with another body, or claimed by a live holder: answered as it is.
      if (existing && (existing.state === 'done' || existing.digest !== digest || existing.lease_until >= now)) return existing;
      // Another transaction holds the key (applying it now): in progress.
      if (!found.mine) return { state: 'pending', digest };
      const { status, answer } = await fn(client);
      const text = JSON.stringify(answer);
      if (existing) {
        const taken = await client.query(takeOver, [principal, key, existing.token, status, text, now]);
        // Settled meanwhile by the claim's holder (`claim` takes no advisory lock): not ours.
        if (taken.rows.length === 0) return { state: 'pending', digest };
        await client.query('COMMIT');
      } else {
        try {
          await client.query(`${await sql(client, 'done', [principal, key, digest, now, status, text])}; COMMIT`);
        } catch (error) {
          if (/** @type {any} */ (error)?.code === '23505') return { state: 'pending', digest };
          throw error;
        }
      }
      open = false;
      return { state: 'done', digest, status, answer };
    } finally {
      if (open) await client.query('ROLLBACK').catch((/** @type {unknown} */ e) => void (broken ??= e));
      client.off('error', onError);
      client.release(broken ? true : undefined);
    }
  };
}
