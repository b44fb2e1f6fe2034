//! How the Postgres store's statements go through `pg`, with its public query API only.
//!
//! The statements of a submit (its head, its outcome row, a plan's outcome row) are named: `pg`
//! prepares each once per connection, then sends only its values, so the database parses and
//! plans none of them per request. A connection that has lost them (`DISCARD ALL`, or a pooler
//! in transaction mode handing out another server connection) answers 26000; the store then
//! sends them unnamed from then on (parsed each time, the values still bound as parameters).
//!
//! On a client in `pg`'s pipeline mode (`new pg.Pool({ pipeline: true })`, pg 8.23 and later)
//! the statements of one step are queued together, so `pg` writes them at once and the step costs
//! one round trip. Otherwise each statement waits for the answer to the one before, as `pg`
//! requires.

import { createHash } from 'node:crypto';

/** Every field as the database's text: the store reads its own columns whatever type parsers the app set. */
const RAW = { getTypeParser: () => (/** @type {string} */ value) => value };

/** The code of "prepared statement does not exist". */
export const STATEMENT_LOST = '26000';

/**
 * A statement the store sends often: named after its text, so one name never stands for two
 * texts (a table of an earlier layout, another table, another kit version on the same server
 * connection).
 * @param {string} text
 */
export const named = (text) => ({ name: `csk_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`, text });

/**
 * The query `pg` runs for `statement` with `values`: named while `mode.named`, fields as text.
 * @param {{ name: string, text: string }} statement
 * @param {unknown[]} values
 * @param {{ named: boolean }} mode
 */
export const bound = (statement, values, mode) =>
  mode.named
    ? { name: statement.name, text: statement.text, values, rowMode: 'array', types: RAW }
    : { text: statement.text, values, rowMode: 'array', types: RAW };

/**
 * A query of the store's that is not named: its fields as text, rows as objects.
 * @param {string} text @param {unknown[]} values
 */
export const plain = (text, values) => ({ text, values, types: RAW });

/**
 * Runs `queries` on `client` in order and gives their results. On a client in pipeline mode they
 * are all queued at once (one write; the database runs each, and after a failure in a
 * transaction refuses the rest and turns COMMIT into a rollback); otherwise the first failure
 * stops the rest. Rejects with the first failure.
 * @param {any} client
 * @param {(string | object)[]} queries
 * @returns {Promise<any[]>}
 */
export async function inOrder(client, queries) {
  if (client.pipeline === true) {
    const settled = await Promise.allSettled(queries.map((query) => client.query(query)));
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw /** @type {PromiseRejectedResult} */ (failed).reason;
    return settled.map((s) => /** @type {PromiseFulfilledResult<any>} */ (s).value);
  }
  const results = [];
  for (const query of queries) results.push(await client.query(query));
  return results;
}

/**
 * Runs `fn(client, broke)` on a client of `pool`. An error the database sends while no query runs
 * (it ended the connection: the lease ran out while `apply` awaited something else) is kept
 * instead of crashing the process, and so is any error `fn` reports through `broke` (a ROLLBACK
 * that failed); such a client is destroyed, not reused.
 * @template T
 * @param {any} pool
 * @param {(client: any, broke: (error: unknown) => void) => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function withClient(pool, fn) {
  const client = await pool.connect();
  /** @type {unknown} */
  let broken = null;
  const broke = (/** @type {unknown} */ error) => void (broken ??= error ?? new Error('broken'));
  client.on('error', broke);
  try {
    return await fn(client, broke);
  } finally {
    client.off('error', broke);
    client.release(broken ? true : undefined);
  }
}
