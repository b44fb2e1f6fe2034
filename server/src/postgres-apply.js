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
//! Two round trips of the kit's own for a new key: BEGIN with the head statement (the key's lock,
//! its row, the lease), and the outcome INSERT with COMMIT. Each is one write of extended-protocol
//! messages (Bind/Execute … Sync, postgres-wire.js) binding statements prepared once per
//! connection, BEGIN and COMMIT included: the database neither parses SQL nor plans for a
//! request, and the values go as parameters. A connection that loses its
//! statements (DISCARD ALL, or a pooler in transaction mode handing out another server
//! connection) makes the store send the same statements as one simple query each, with the values
//! inlined as literals escaped by pg (`escapeLiteral`), from then on; so does a client in pg's
//! pipeline mode, which refuses custom queries.

import { Buffer } from 'node:buffer';
import { preparedOn } from './postgres-prepared.js';
import { Round, bound, cstring, run } from './postgres-wire.js';

// BEGIN and COMMIT as statements prepared on the connection too (as protocol-level statements:
// SQL PREPARE takes no utility statement), so no SQL at all is parsed for a request.
export const BEGIN = { name: 'csk_begin', text: 'BEGIN' };
export const COMMIT = { name: 'csk_commit', text: 'COMMIT' };
export const RUN_BEGIN = run(BEGIN.name);
export const RUN_COMMIT = run(COMMIT.name);
const EMPTY = Buffer.alloc(0);

/**
 * The arguments of the key's transaction-scoped advisory lock, with the principal as $1 and the
 * key as $2: every statement that takes or tests it (the head, a plan's outcome row, a query's
 * busy check) must name the same lock.
 * @param {string} T the outcomes table
 */
export const keyLock = (T) => `hashtext('${T}'), hashtext(length($1) || ':' || $1 || $2)`;

/**
 * Whether the hand-built messages can go on this client: node-postgres's custom-query interface
 * with its connection's socket at hand (pg 8's `client.connection.stream`), and not in pg's
 * pipeline mode (which refuses custom queries). Otherwise the text path, which any `pg` client
 * speaks.
 * @param {any} client
 */
export function speaksWire(client) {
  return !client.pipeline && typeof client.connection?.stream?.write === 'function';
}

/**
 * @param {any} pool
 * @param {string} T the outcomes table (a plain identifier)
 * @param {{ prepare: boolean }} wire shared with the write path: false once a connection lost
 *   its statements (the text path from then on)
 */
export function postgresApplyOnce(pool, T, wire = { prepare: true }) {
  const statements = {
    head: {
      name: `csk_head_${T}`,
      types: 'text, text, text',
      text: `SELECT set_config('idle_in_transaction_session_timeout', $3, true) AS lease,
          pg_try_advisory_xact_lock(${keyLock(T)}) AS mine,
          t.digest, t.state, t.token, t.lease_until, t.status, t.answer
        FROM (SELECT 1) AS one LEFT JOIN ${T} AS t ON t.principal = $1 AND t.key = $2`,
    },
    // A plain INSERT: if a claim row appeared meanwhile it fails, and the COMMIT sent after it
    // never runs (the database skips to the Sync; in a simple query, to its end), so the app's
    // writes never commit without the outcome.
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
  const names = { head: cstring(statements.head.name), done: cstring(statements.done.name) };
  const all = [statements.head, statements.done, BEGIN, COMMIT];
  // Text as the database sends it, whichever way a round went: both give the same fields.
  const raw = { getTypeParser: () => (/** @type {string} */ v) => v };

  /**
   * Runs statement `which` with `values` in one round trip, with BEGIN before it ('head') or
   * COMMIT after it ('done'), and gives its first row's fields as text (null when none).
   * @param {any} client @param {'head' | 'done'} which @param {unknown[]} values
   * @returns {Promise<(string | null)[] | null>}
   */
  async function round(client, which, values) {
    const statement = statements[which];
    if (wire.prepare && speaksWire(client)) {
      // The connection's statements are checked once a transaction: `done` follows on the same one.
      if (which === 'head') await preparedOn(client, all);
      const params = values.map(String);
      const sent = new Round(
        which === 'head' ? bound(RUN_BEGIN, names.head, params, EMPTY) : bound(EMPTY, names.done, params, RUN_COMMIT),
      );
      client.query(sent);
      return (await sent.done)[0] ?? null;
    }
    // Inlined: a connection that lost its statements, a client in pg's pipeline mode, or one
    // without the socket the wire path writes to.
    /** @param {unknown} value */
    const lit = (value) => client.escapeLiteral(String(value));
    const sql = statement.text.replace(/\$(\d)/g, (_, n) => lit(values[Number(n) - 1]));
    const results = await client.query({ text: which === 'head' ? `BEGIN; ${sql}` : `${sql}; COMMIT`, rowMode: 'array', types: raw });
    return results[which === 'head' ? 1 : 0].rows[0] ?? null;
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
      let head;
      try {
        head = await round(client, 'head', values);
      } catch (error) {
        // 26000: the connection lost its prepared statements. Nothing ran yet: inline, again.
        if (/** @type {any} */ (error)?.code !== '26000' || !wire.prepare) throw error;
        wire.prepare = false;
        await client.query('ROLLBACK');
        head = await round(client, 'head', values);
      }
      // The head's columns: lease, mine, digest, state, token, lease_until, status, answer.
      const [, mine, rowDigest, state, token, leaseUntil, rowStatus, rowAnswer] = /** @type {(string | null)[]} */ (head);
      const existing = state == null
        ? null
        : {
            digest: /** @type {string} */ (rowDigest),
            state,
            token: Number(token),
            lease_until: Number(leaseUntil),
            status: rowStatus == null ? null : Number(rowStatus),
            answer: rowAnswer == null ? null : JSON.parse(rowAnswer),
          };
      // Settled, or sent before with another body, or claimed by a live holder: answered as it is.
      if (existing && (existing.state === 'done' || existing.digest !== digest || existing.lease_until >= now)) return existing;
      // Another transaction holds the key (applying it now): in progress.
      if (mine !== 't') return { state: 'pending', digest };
      const { status, answer } = await fn(client);
      const text = JSON.stringify(answer);
      if (existing) {
        const taken = await client.query(takeOver, [principal, key, existing.token, status, text, now]);
        // Settled meanwhile by the claim's holder (`claim` takes no advisory lock): not ours.
        if (taken.rows.length === 0) return { state: 'pending', digest };
        await client.query('COMMIT');
      } else {
        try {
          await round(client, 'done', [principal, key, digest, now, status, text]);
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
