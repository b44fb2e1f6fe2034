//! The Postgres store's submit in ONE transaction: the key's lock, the app's `apply` and the
//! stored outcome commit together, in one commit (the claim-then-commit path took two and
//! six round trips). A key being applied is held by a transaction-scoped advisory lock, not by
//! a committed claim row: a second process finds the lock taken and answers 409 at once; a
//! holder that dies (SIGKILL, a lost connection) leaves nothing behind, since its transaction
//! and its lock end with its connection; a holder that hangs with its transaction idle longer
//! than the lease is cut off by the database (idle_in_transaction_session_timeout, set for this
//! transaction only), so nothing it wrote commits. A claim row left by `claim` (an older kit,
//! or a test) is respected while its lease runs and taken over, fenced by its token, after.

/**
 * @param {any} pool
 * @param {string} T the outcomes table (a plain identifier)
 */
export function postgresApplyOnce(pool, T) {
  // Named statements: parsed and planned once per connection.
  const head = {
    name: `csk_head_${T}`,
    text: `SELECT set_config('idle_in_transaction_session_timeout', $3, true) AS lease,
        pg_try_advisory_xact_lock(hashtext('${T}'), hashtext(length($1) || ':' || $1 || $2)) AS mine,
        t.digest, t.state, t.token, t.lease_until, t.status, t.answer
      FROM (SELECT 1) AS one LEFT JOIN ${T} AS t ON t.principal = $1 AND t.key = $2`,
  };
  const insertDone = {
    name: `csk_done_${T}`,
    text: `INSERT INTO ${T} (principal, key, digest, state, token, lease_until, status, answer, settled_at)
      VALUES ($1, $2, $3, 'done', 1, $4, $5, $6, $4) ON CONFLICT (principal, key) DO NOTHING RETURNING token`,
  };
  const takeOver = {
    name: `csk_takeover_${T}`,
    text: `UPDATE ${T} SET state = 'done', token = token + 1, status = $4, answer = $5, settled_at = $6
      WHERE principal = $1 AND key = $2 AND state = 'pending' AND token = $3 RETURNING token`,
  };

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
      await client.query('BEGIN');
      open = true;
      const { rows } = await client.query({ ...head, values: [principal, key, String(Math.max(1, Math.ceil(leaseMs)))] });
      const found = rows[0];
      const existing = found.state == null ? null : { ...found, token: Number(found.token), lease_until: Number(found.lease_until) };
      // Settled, or sent before with another body, or claimed by a live holder: answered as it is.
      if (existing && (existing.state === 'done' || existing.digest !== digest || existing.lease_until >= now)) return existing;
      // Another transaction holds the key (applying it now): in progress.
      if (!found.mine) return { state: 'pending', digest };
      const { status, answer } = await fn(client);
      const text = JSON.stringify(answer);
      const written = existing
        ? await client.query({ ...takeOver, values: [principal, key, existing.token, status, text, now] })
        : await client.query({ ...insertDone, values: [principal, key, digest, now, status, text] });
      // A claim row appeared or moved meanwhile (`claim` takes no advisory lock): not ours to settle.
      if (written.rows.length === 0) return { state: 'pending', digest };
      await client.query('COMMIT');
      open = false;
      return { state: 'done', digest, status, answer };
    } finally {
      if (open) await client.query('ROLLBACK').catch((/** @type {unknown} */ e) => void (broken ??= e));
      client.off('error', onError);
      client.release(broken ? true : undefined);
    }
  };
}
