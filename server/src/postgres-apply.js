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
//! messages (Parse/Bind/Execute … Sync, as node-postgres's own custom queries such as pg-cursor
//! send them) binding statements PREPAREd once per connection: the database neither parses SQL
//! nor plans for a request, and the values go as parameters. A connection that loses its
//! statements (DISCARD ALL, or a pooler in transaction mode handing out another server
//! connection) makes the store send the same statements as one simple query each, with the values
//! inlined as literals escaped by pg (`escapeLiteral`), from then on; so does a client in pg's
//! pipeline mode, which refuses custom queries.

import { Buffer } from 'node:buffer';
import { preparedOn } from './postgres-prepared.js';

/**
 * One round trip: extended-protocol messages (SPEC: PostgreSQL's "Message Formats") in one write,
 * as a node-postgres custom query (the interface pg-cursor uses: `submit(connection)` and the
 * `handle…` callbacks). Resolves to the data rows' fields (text, no type parsing) once the database
 * is ready for the next query; rejects with the database's error (the database skips the messages
 * after a failing one up to the Sync).
 */
class Round {
  /** @param {Buffer} bytes */
  constructor(bytes) {
    this.bytes = bytes;
    /** @type {(string | null)[][]} */
    this.rows = [];
    /** @type {(rows: (string | null)[][]) => void} */
    this.resolve = () => {};
    /** @type {(error: unknown) => void} */
    this.reject = () => {};
    /** @type {Promise<(string | null)[][]>} */
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
  /** @param {any} connection */
  submit(connection) {
    if (!connection.stream.writable) return new Error('the connection to the database is closed');
    connection.stream.write(this.bytes);
  }
  /** @param {{ fields: (string | null)[] }} message */
  handleDataRow(message) {
    this.rows.push(message.fields);
  }
  handleRowDescription() {}
  handleCommandComplete() {}
  handleEmptyQuery() {}
  handlePortalSuspended() {}
  /** @param {any} connection */
  handleCopyInResponse(connection) {
    connection.sendCopyFail('no COPY here');
  }
  handleCopyData() {}
  /** @param {unknown} error */
  handleError(error) {
    this.reject(error);
  }
  handleReadyForQuery() {
    this.resolve(this.rows);
  }
}

/**
 * A message: its type byte, then its length (itself included) and `body`.
 * @param {string} type @param {Buffer} body
 */
const message = (type, body) => {
  const out = Buffer.allocUnsafe(5 + body.length);
  out.write(type, 0, 'latin1');
  out.writeInt32BE(4 + body.length, 1);
  body.copy(out, 5);
  return out;
};
const cstring = (/** @type {string} */ text) => Buffer.from(`${text}\0`, 'utf8');
const int16 = (/** @type {number} */ n) => Buffer.from([n >> 8, n & 255]);
/** Execute of the unnamed portal, all rows; Sync. */
const EXECUTE = message('E', Buffer.concat([cstring(''), Buffer.alloc(4)]));
const SYNC = message('S', Buffer.alloc(0));
/** Parse, Bind and Execute of `text` as the unnamed statement, without parameters. @param {string} text */
const once = (text) =>
  Buffer.concat([
    message('P', Buffer.concat([cstring(''), cstring(text), int16(0)])),
    message('B', Buffer.concat([cstring(''), cstring(''), int16(0), int16(0), int16(0)])),
    EXECUTE,
  ]);
const BEGIN = once('BEGIN');
const EMPTY = Buffer.alloc(0);
const COMMIT = once('COMMIT');

/**
 * `before`, Bind of the prepared statement `name` with `values` (text) and Execute, `after`, Sync:
 * one buffer.
 * @param {Buffer} before @param {Buffer} name `name` as a C string @param {string[]} values @param {Buffer} after
 */
function bound(before, name, values, after) {
  let size = 4 + name.length + 1 + 2 + 2 + 2;
  for (const v of values) size += 4 + Buffer.byteLength(v);
  const out = Buffer.allocUnsafe(before.length + 1 + size + EXECUTE.length + after.length + SYNC.length);
  let at = before.copy(out, 0);
  out[at++] = 0x42; // 'B'
  at = out.writeInt32BE(size, at);
  out[at++] = 0; // the unnamed portal
  at += name.copy(out, at);
  at = out.writeInt16BE(0, at); // every parameter as text
  at = out.writeInt16BE(values.length, at);
  for (const v of values) {
    const length = out.write(v, at + 4, 'utf8');
    at = out.writeInt32BE(length, at) + length;
  }
  at = out.writeInt16BE(0, at); // every result column as text
  at += EXECUTE.copy(out, at);
  at += after.copy(out, at);
  SYNC.copy(out, at);
  return out;
}

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
  let prepare = true;
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
    // The connection's statements are checked once a transaction: `done` follows on the same one.
    if (prepare && which === 'head') await preparedOn(client, Object.values(statements));
    if (prepare && !client.pipeline) {
      const params = values.map(String);
      const sent = new Round(
        which === 'head' ? bound(BEGIN, names.head, params, EMPTY) : bound(EMPTY, names.done, params, COMMIT),
      );
      client.query(sent);
      return (await sent.done)[0] ?? null;
    }
    /** @param {unknown} value */
    const lit = (value) => client.escapeLiteral(String(value));
    const sql = prepare
      ? `EXECUTE ${statement.name}(${values.map(lit).join(', ')})`
      : statement.text.replace(/\$(\d)/g, (_, n) => lit(values[Number(n) - 1]));
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
        if (/** @type {any} */ (error)?.code !== '26000' || !prepare) throw error;
        prepare = false;
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
