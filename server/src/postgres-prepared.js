//! Statements PREPAREd once per Postgres connection (session-level, so a round trip that also
//! begins or commits the transaction can bind them). Which connection has which is remembered per
//! `pg` client object; a connection this process did not prepare (another copy of the kit on the
//! same pool) is asked through pg_prepared_statements before anything is prepared on it. A
//! statement without `types` (BEGIN, COMMIT: SQL PREPARE takes no utility statement) is prepared
//! with the protocol's Parse message instead.

import { Round, parse } from './postgres-wire.js';

/** @type {WeakMap<object, Set<string>>} */
const done = new WeakMap();

/**
 * Makes sure `client`'s connection has every statement of `statements`.
 * @param {any} client a pg client, checked out
 * @param {{ name: string, types?: string, text: string }[]} statements
 */
export async function preparedOn(client, statements) {
  let names = done.get(client);
  if (names && statements.every((s) => names?.has(s.name))) return;
  const { rows } = await client.query('SELECT name FROM pg_prepared_statements WHERE name = ANY($1)', [statements.map((s) => s.name)]);
  names ??= new Set();
  for (const row of rows) names.add(row.name);
  const missing = statements.filter((s) => !names?.has(s.name));
  const sql = missing.filter((s) => s.types != null);
  if (sql.length > 0) await client.query(sql.map((s) => `PREPARE ${s.name}(${s.types}) AS ${s.text}`).join('; '));
  const utility = missing.filter((s) => s.types == null);
  if (utility.length > 0) {
    const round = new Round(parse(utility));
    client.query(round);
    await round.done;
  }
  for (const s of missing) names.add(s.name);
  done.set(client, names);
}
