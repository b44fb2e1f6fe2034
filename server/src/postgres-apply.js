//! The Postgres store's submit in ONE transaction: the key's lock, the app's `apply` and the
//! stored outcome commit together. A key being applied is held by a transaction-scoped advisory
//! lock, not by a committed claim row: a second process finds the lock taken and answers 409 at
//! once; a holder that dies (SIGKILL, a lost connection) leaves nothing behind, since its
//! transaction and its lock end with its connection; a holder that hangs with its transaction
//! idle longer than the lease is cut off by the database (idle_in_transaction_session_timeout,
//! set for this transaction only), so nothing it wrote commits. A claim row left by `claim` (an
//! older kit, or a test) is respected while its lease runs and taken over, fenced by its token,
//! after.
//!
//! The kit's statements for a new key: BEGIN and the head (the key's lock, its row, the lease),
//! then the app's, then the outcome row and COMMIT (postgres-queries.js says how they are sent).

import { STATEMENT_LOST, bound, inOrder, plain, withClient } from './postgres-queries.js';
import { rowOf } from './postgres-schema.js';

/**
 * @typedef {object} Sql The store's statements (postgres-schema.js), the submit's named.
 * @property {{ name: string, text: string }} head
 * @property {{ name: string, text: string }} done
 * @property {{ name: string, text: string }} put
 * @property {string} takeOver
 */

/**
 * @param {any} pool
 * @param {() => Promise<Sql>} statements the table's statements (known once `init()` has looked)
 * @param {{ named: boolean }} mode shared with the write path: false once a connection lost its
 *   statements
 */
export function postgresApplyOnce(pool, statements, mode) {
  /**
   * BEGIN and the head: the key's lock, its row and the lease. Nothing runs before it, so a
   * connection found without its statements is rolled back and asked again, unnamed.
   * @param {any} client @param {Sql} sql @param {unknown[]} values
   * @returns {Promise<(string | null)[]>}
   */
  async function head(client, sql, values) {
    try {
      const [, result] = await inOrder(client, ['BEGIN', bound(sql.head, values, mode)]);
      return result.rows[0];
    } catch (error) {
      if (/** @type {any} */ (error)?.code !== STATEMENT_LOST || !mode.named) throw error;
      mode.named = false;
      await client.query('ROLLBACK');
      const [, result] = await inOrder(client, ['BEGIN', bound(sql.head, values, mode)]);
      return result.rows[0];
    }
  }

  /**
   * @param {{ principal: string, key: string, digest: string, now: number, leaseMs: number }} args
   * @param {(tx: any) => Promise<{ status: number, answer: unknown, text: string }>} fn
   */
  return async function applyOnce({ principal, key, digest, now, leaseMs }, fn) {
    const sql = await statements();
    return withClient(pool, async (client, broke) => {
      let open = true;
      try {
        // The head's columns: lease, mine, then the key's row (none when state is null).
        const [, mine, rowDigest, state, token, leaseUntil, rowStatus, answerText, answerJsonb] = await head(client, sql, [
          principal,
          key,
          Math.max(1, Math.ceil(leaseMs)),
        ]);
        const existing =
          state == null
            ? null
            : rowOf({ digest: rowDigest, state, token, lease_until: leaseUntil, status: rowStatus, answer_text: answerText, answer_jsonb: answerJsonb });
        // Settled, or sent before with another body, or claimed by a live holder: answered as it is.
        if (existing && (existing.state === 'done' || existing.digest !== digest || existing.lease_until >= now)) return existing;
        // Another transaction holds the key (applying it now): in progress.
        if (mine !== 't') return { state: 'pending', digest };
        const { status, answer, text } = await fn(client);
        if (existing) {
          const taken = await client.query(plain(sql.takeOver, [principal, key, existing.token, status, text, now]));
          // Settled meanwhile by the claim's holder (`claim` takes no advisory lock): not ours.
          if (taken.rows.length === 0) return { state: 'pending', digest };
          await client.query('COMMIT');
        } else {
          try {
            await inOrder(client, [bound(sql.done, [principal, key, digest, now, status, text], mode), 'COMMIT']);
          } catch (error) {
            if (/** @type {any} */ (error)?.code === '23505') return { state: 'pending', digest };
            throw error;
          }
        }
        open = false;
        return { state: 'done', digest, status, answer, text };
      } finally {
        // Ended before it committed: roll back before the connection goes back to the pool.
        if (open) await client.query('ROLLBACK').catch(broke);
      }
    });
  };
}
