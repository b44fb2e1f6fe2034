//! Statements PREPAREd once per Postgres connection (session-level, so `EXECUTE` can go in a
//! multi-statement query with BEGIN or COMMIT). Which connection has which is remembered per
//! `pg` client object; a connection this process did not prepare (another copy of the kit on the
//! same pool) is asked through pg_prepared_statements before anything is prepared on it.

/** @type {WeakMap<object, Set<string>>} */
const done = new WeakMap();

/**
 * Makes sure `client`'s connection has every statement of `statements`.
 * @param {any} client a pg client, checked out
 * @param {{ name: string, types: string, text: string }[]} statements
 */
export async function preparedOn(client, statements) {
  let names = done.get(client);
  if (names && statements.every((s) => names?.has(s.name))) return;
  const { rows } = await client.query('SELECT name FROM pg_prepared_statements WHERE name = ANY($1)', [statements.map((s) => s.name)]);
  names ??= new Set();
  for (const row of rows) names.add(row.name);
  const missing = statements.filter((s) => !names?.has(s.name));
  if (missing.length > 0) await client.query(missing.map((s) => `PREPARE ${s.name}(${s.types}) AS ${s.text}`).join('; '));
  for (const s of missing) names.add(s.name);
  done.set(client, names);
}
