//! The Postgres store's submit for a `plan` (a pure function giving the outcome and the
//! statements that write it): one transaction with no read before the writes. BEGIN, the outcome
//! row, the plan's statements and COMMIT; on a client in `pg`'s pipeline mode they go in one
//! write, one round trip for a new key (postgres-queries.js). If any of them fails, nothing
//! commits.
//!
//! The outcome row is inserted after the key's transaction-scoped advisory lock (the same lock
//! `applyOnce` takes), so a query meanwhile answers 409, and a second submit of the key waits for
//! the first to end. A key that already has a row (applied, or claimed by `claim`) fails the
//! INSERT on the primary key: that transaction is rolled back and the submit goes the general way
//! (`applyOnce`), which answers the stored outcome, says 409, or takes an expired claim over and
//! runs the statements there. So does a connection that lost its prepared statements.

import { STATEMENT_LOST, bound, inOrder, withClient } from './postgres-queries.js';

/**
 * @param {any} pool
 * @param {string} T the outcomes table (a plain identifier)
 * @param {() => Promise<import('./postgres-apply.js').Sql>} statements
 * @param {{ named: boolean }} mode shared with applyOnce
 * @param {NonNullable<import('./index.js').Store['applyOnce']>} applyOnce the general way
 */
export function postgresWriteOnce(pool, T, statements, mode, applyOnce) {
  /**
   * The general way: the key's head, then the statements through pg, then the outcome.
   * @param {any} args @param {import('./index.js').Planned} planned
   */
  async function general(args, planned) {
    let ran = false;
    const row = await applyOnce(args, async (tx) => {
      ran = true;
      for (const s of planned.statements) await tx.query(s.text, s.values ?? []);
      return { status: planned.status, answer: planned.answer, text: planned.text };
    });
    return ran && row.state === 'done' ? { ...row, fresh: true } : row;
  }

  /**
   * The one transaction; null when the general way must answer (nothing committed).
   * @param {{ principal: string, key: string, digest: string, now: number }} args
   * @param {import('./index.js').Planned} planned
   */
  async function writeAhead({ principal, key, digest, now }, { status, answer, text, statements: writes }) {
    const sql = await statements();
    return withClient(pool, async (client, broke) => {
      try {
        await inOrder(client, [
          'BEGIN',
          bound(sql.put, [principal, key, digest, now, status, text], mode),
          ...writes.map((s) => ({ text: s.text, values: s.values ?? [] })),
          'COMMIT',
        ]);
      } catch (error) {
        await client.query('ROLLBACK').catch(broke);
        const code = /** @type {any} */ (error)?.code;
        // The key has a row already: the general way reads it and answers.
        if (code === '23505' && /** @type {any} */ (error).table === T) return null;
        // The connection lost its prepared statements: unnamed from now on.
        if (code === STATEMENT_LOST && mode.named) {
          mode.named = false;
          return null;
        }
        throw error;
      }
      return { state: /** @type {const} */ ('done'), digest, status, answer, text, fresh: true };
    });
  }

  /**
   * @param {{ principal: string, key: string, digest: string, now: number, leaseMs: number }} args
   * @param {import('./index.js').Planned} planned
   */
  return async function writeOnce(args, planned) {
    return (await writeAhead(args, planned)) ?? general(args, planned);
  };
}
