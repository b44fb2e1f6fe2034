//! The Postgres store's table and the SQL of its statements.
//!
//! A table made by this kit keeps each answer as the JSON text the kit sent (`answer_text`), so
//! a repeat gets the first answer's bytes. Kit 0.1.0 kept it as JSONB (`answer`), which reorders
//! keys: on such a table `init()` adds `answer_text` (a catalog change, no rewrite). Rows written
//! from then on fill both columns, so processes of the earlier kit on the same database keep
//! reading them; rows from before have no text and are answered from their JSONB, as the earlier
//! kit answered their repeats. Once no earlier kit uses the table, dropping its `answer` column
//! stops the second copy (the kit looks at the table when it starts).

/** The advisory lock that makes processes starting at once change the table one at a time. */
export const DDL_LOCK = 47110039;

/** @param {string} T the outcomes table (a plain identifier) */
export const ddl = (T) => `
CREATE TABLE IF NOT EXISTS ${T} (
  principal TEXT NOT NULL,
  key TEXT NOT NULL,
  digest TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
  token BIGINT NOT NULL,
  lease_until BIGINT NOT NULL,
  status INTEGER,
  answer_text TEXT,
  settled_at BIGINT,
  PRIMARY KEY (principal, key)
);
CREATE INDEX IF NOT EXISTS ${T}_settled ON ${T} (settled_at) WHERE state = 'done';
ALTER TABLE ${T} ADD COLUMN IF NOT EXISTS answer_text TEXT;
`;

/**
 * What the catalog says of the table: whether it, its index and its text column exist, and
 * whether it still has kit 0.1.0's JSONB answers. A catalog read: it takes no lock on the table.
 * @param {any} client @param {string} T
 * @returns {Promise<{ ready: boolean, jsonb: boolean }>}
 */
export async function inspect(client, T) {
  const column = (name, type) =>
    `EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = '${name}' AND NOT attisdropped${type ? ` AND atttypid = '${type}'::regtype` : ''})`;
  const { rows } = await client.query(
    `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AND ${column('answer_text')} AS ready, ${column('answer', 'jsonb')} AS jsonb`,
    [T, `${T}_settled`],
  );
  return rows[0];
}

/**
 * The arguments of the key's transaction-scoped advisory lock, with the principal as $1 and the
 * key as $2: every statement that takes or tests it (a submit's head, a plan's outcome row, a
 * query's busy check) names the same lock, and so did kit 0.1.0's.
 * @param {string} T
 */
export const keyLock = (T) => `hashtext('${T}'), hashtext(length($1::text) || ':' || $1::text || $2::text)`;

/**
 * The store's statements on table T. Parameters are cast where the database could not tell
 * their type, since `pg` sends them untyped.
 * @param {string} T
 * @param {boolean} jsonb the table still has kit 0.1.0's JSONB `answer` column
 */
export function statementsFor(T, jsonb) {
  // An answer's columns as a row gives them (its text; a row from before, its JSONB as text),
  // and as one text parameter `$n` writes them.
  const read = (/** @type {string} */ t) => `${t}answer_text, ${jsonb ? `${t}answer::text` : 'NULL::text'} AS answer_jsonb`;
  const columns = jsonb ? 'answer_text, answer' : 'answer_text';
  const values = (/** @type {number} */ n) => (jsonb ? `$${n}::text, $${n}::jsonb` : `$${n}::text`);
  const set = (/** @type {number} */ n) => (jsonb ? `answer_text = $${n}::text, answer = $${n}::jsonb` : `answer_text = $${n}::text`);
  const row = `digest, state, token, lease_until, status, ${read('')}`;
  return {
    jsonb,
    // A submit's first statement: the lease (how long the transaction may stay idle), the key's
    // lock, and its row.
    head: `SELECT set_config('idle_in_transaction_session_timeout', $3::text, true) AS lease,
        pg_try_advisory_xact_lock(${keyLock(T)}) AS mine,
        t.digest, t.state, t.token, t.lease_until, t.status, ${read('t.')}
      FROM (SELECT 1) AS one LEFT JOIN ${T} AS t ON t.principal = $1 AND t.key = $2`,
    // A plain INSERT: if a claim row appeared meanwhile it fails, and the transaction with the
    // app's writes never commits.
    done: `INSERT INTO ${T} (principal, key, digest, state, token, lease_until, status, ${columns}, settled_at)
      VALUES ($1, $2, $3, 'done', 1, $4::bigint, $5::integer, ${values(6)}, $4::bigint)`,
    // A plan's outcome row, after the key's lock (held until the transaction ends).
    put: `INSERT INTO ${T} (principal, key, digest, state, token, lease_until, status, ${columns}, settled_at)
      SELECT $1::text, $2::text, $3::text, 'done', 1, $4::bigint, $5::integer, ${values(6)}, $4::bigint
      FROM (SELECT pg_advisory_xact_lock(${keyLock(T)})) AS held`,
    // The takeover of an old-style claim whose lease ran out (rare).
    takeOver: `UPDATE ${T} SET state = 'done', token = token + 1, status = $4, ${set(5)}, settled_at = $6
      WHERE principal = $1 AND key = $2 AND state = 'pending' AND token = $3 RETURNING token`,
    claim: `INSERT INTO ${T} AS t (principal, key, digest, state, token, lease_until)
      VALUES ($1, $2, $3, 'pending', 1, $4)
      ON CONFLICT (principal, key) DO UPDATE SET token = t.token + 1, lease_until = EXCLUDED.lease_until
      WHERE t.state = 'pending' AND t.lease_until < $5 AND t.digest = EXCLUDED.digest
      RETURNING token`,
    get: `SELECT ${row} FROM ${T} WHERE principal = $1 AND key = $2`,
    locked: `SELECT ${row} FROM ${T} WHERE principal = $1 AND key = $2 FOR UPDATE`,
    // A key with no row may be being applied by another process (it holds the key's advisory
    // lock): taking that lock for this one statement says so.
    lookup: `SELECT t.digest, t.state, t.token, t.lease_until, t.status, ${read('t.')},
        t.key IS NULL AND NOT pg_try_advisory_xact_lock(${keyLock(T)}) AS busy
      FROM (SELECT 1) AS one LEFT JOIN ${T} AS t ON t.principal = $1 AND t.key = $2`,
    settleClaim: `UPDATE ${T} SET state = 'done', status = $1, ${set(2)}, settled_at = $3
      WHERE principal = $4 AND key = $5 AND token = $6`,
    resettle: `UPDATE ${T} SET status = $1, ${set(2)}, settled_at = $3 WHERE principal = $4 AND key = $5 AND state = 'done'`,
    release: `DELETE FROM ${T} WHERE principal = $1 AND key = $2 AND token = $3 AND state = 'pending'`,
    purge: `DELETE FROM ${T} WHERE (principal, key) IN
      (SELECT principal, key FROM ${T} WHERE state = 'done' AND settled_at < $1 ORDER BY settled_at LIMIT $2)`,
  };
}

/**
 * A row as the store gives it, from its fields as text: numbers as numbers, the answer as its
 * text (`text`), or for a row from before the text column, as the value its JSONB holds.
 * @param {{ digest: string | null, state: string | null, token: string | null, lease_until: string | null, status: string | null, answer_text: string | null, answer_jsonb: string | null }} r
 */
export function rowOf(r) {
  return {
    digest: /** @type {string} */ (r.digest),
    state: /** @type {'pending' | 'done'} */ (r.state),
    token: Number(r.token),
    lease_until: Number(r.lease_until),
    status: r.status == null ? null : Number(r.status),
    ...(r.answer_text != null ? { text: r.answer_text } : r.answer_jsonb != null ? { answer: JSON.parse(r.answer_jsonb) } : {}),
  };
}
