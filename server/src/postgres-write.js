//! The Postgres store's submit for a `plan` (a pure function giving the outcome and the
//! statements that write it): ONE round trip for a new key, as many as the app's own autocommit
//! INSERT. BEGIN, the outcome row, the plan's statements and COMMIT go in one write that ends with
//! one Sync; if any of them fails, the database skips the rest and nothing commits.
//!
//! The outcome row is inserted after the key's transaction-scoped advisory lock (the same lock
//! `applyOnce` takes), so a query meanwhile answers 409, and a second submit of the key waits for
//! the first to end. A key that already has a row (applied, or claimed by `claim`) fails the
//! INSERT on the primary key: that round is rolled back and the submit goes the general way
//! (`applyOnce`, three round trips), which answers the stored outcome, says 409, or takes an
//! expired claim over and runs the statements there. So does a statement with a value that is not
//! a string, number, bigint, boolean or null (pg converts those its own way), a connection that
//! lost its prepared statements, or a client the wire path cannot write to.

import { Buffer } from 'node:buffer';
import { BEGIN, COMMIT, RUN_BEGIN, RUN_COMMIT, keyLock, speaksWire } from './postgres-apply.js';
import { preparedOn } from './postgres-prepared.js';
import { Round, bound, cstring, statement } from './postgres-wire.js';

/** @param {unknown} v */
const plain = (v) => v == null || ['string', 'number', 'bigint', 'boolean'].includes(typeof v);

/**
 * @param {any} pool
 * @param {string} T the outcomes table (a plain identifier)
 * @param {{ prepare: boolean }} wire shared with applyOnce
 * @param {import('./index.js').Store['applyOnce']} applyOnce the general path
 */
export function postgresWriteOnce(pool, T, wire, applyOnce) {
  const put = {
    name: `csk_put_${T}`,
    types: 'text, text, text, bigint, integer, jsonb',
    text: `INSERT INTO ${T} (principal, key, digest, state, token, lease_until, status, answer, settled_at)
      SELECT $1, $2, $3, 'done', 1, $4, $5, $6, $4
      FROM (SELECT pg_advisory_xact_lock(${keyLock(T)})) AS held`,
  };
  const all = [put, BEGIN, COMMIT];
  const putName = cstring(put.name);

  /**
   * The general way: the key's head, then the statements through pg, then the outcome.
   * @param {any} args @param {import('./index.js').Planned} planned
   */
  async function general(args, planned) {
    let ran = false;
    const row = await /** @type {NonNullable<typeof applyOnce>} */ (applyOnce)(args, async (tx) => {
      ran = true;
      for (const s of planned.statements) await tx.query(s.text, s.values ?? []);
      return { status: planned.status, answer: planned.answer };
    });
    return ran && row.state === 'done' ? { ...row, fresh: true } : row;
  }

  /**
   * @param {{ principal: string, key: string, digest: string, now: number, leaseMs: number }} args
   * @param {import('./index.js').Planned} planned
   */
  return async function writeOnce(args, planned) {
    const fast = wire.prepare && planned.statements.every((s) => (s.values ?? []).every(plain));
    return (fast && (await oneRound(args, planned))) || general(args, planned);
  };

  /**
   * The one round trip; null when the general way must answer (nothing committed).
   * @param {{ principal: string, key: string, digest: string, now: number }} args
   * @param {import('./index.js').Planned} planned
   */
  async function oneRound({ principal, key, digest, now }, { status, answer, statements }) {
    const client = await pool.connect();
    /** @type {unknown} */
    let broken = null;
    const onError = (/** @type {unknown} */ error) => void (broken = error);
    client.on('error', onError);
    try {
      if (!speaksWire(client)) return null;
      await preparedOn(client, all);
      const body = Buffer.concat([
        ...statements.map((s) => statement(s.text, (s.values ?? []).map((v) => (v == null ? null : String(v))))),
        RUN_COMMIT,
      ]);
      const sent = new Round(bound(RUN_BEGIN, putName, [principal, key, digest, String(now), String(status), JSON.stringify(answer)], body));
      client.query(sent);
      try {
        await sent.done;
      } catch (error) {
        // The transaction is aborted (or never began): end it before the connection goes back.
        await client.query('ROLLBACK');
        const code = /** @type {any} */ (error)?.code;
        // The key has a row already: the general way reads it and answers.
        if (code === '23505' && /** @type {any} */ (error).table === T) return null;
        // The connection lost its prepared statements: the text path from now on.
        if (code === '26000') {
          wire.prepare = false;
          return null;
        }
        throw error;
      }
      return { state: 'done', digest, status, answer, fresh: true };
    } finally {
      client.off('error', onError);
      client.release(broken ? true : undefined);
    }
  }
}
