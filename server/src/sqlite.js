//! The SQLite engine (better-sqlite3, WAL): one connection per process, one transaction at a
//! time (an async mutex, since `apply` may await), BEGIN IMMEDIATE so several processes on one
//! file serialise their writes. An answer is stored as the JSON text the kit sent (`answer`,
//! TEXT) and given back as that text.

const SCHEMA = `
CREATE TABLE IF NOT EXISTS csk_outcomes (
  principal TEXT NOT NULL,
  key TEXT NOT NULL,
  digest TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
  token INTEGER NOT NULL,
  lease_until INTEGER NOT NULL,
  status INTEGER,
  answer TEXT,
  settled_at INTEGER,
  PRIMARY KEY (principal, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS csk_outcomes_settled ON csk_outcomes (settled_at) WHERE state = 'done';
`;

/**
 * @param {{ db: any }} options An open better-sqlite3 database.
 * @returns {import('./index.js').Store}
 */
export function sqliteStore({ db }) {
  let tail = Promise.resolve();
  /** @template T @param {() => Promise<T> | T} fn @returns {Promise<T>} */
  const exclusive = (fn) => {
    const run = tail.then(fn);
    tail = run.then(() => {}, () => {});
    return run;
  };
  /** @template T @param {() => Promise<T> | T} fn @returns {Promise<T>} */
  const transaction = (fn) =>
    exclusive(async () => {
      db.exec('BEGIN IMMEDIATE');
      try {
        const out = await fn();
        db.exec('COMMIT');
        return out;
      } catch (error) {
        if (db.inTransaction) db.exec('ROLLBACK');
        throw error;
      }
    });
  /** @type {Record<string, any>} */
  let q;
  // Reads go through a second, read-only connection (WAL: never blocked by the writer), so a
  // query for a key whose apply is running answers at once.
  const reader =
    db.name && db.name !== ':memory:' && !db.memory
      ? new /** @type {any} */ (db.constructor)(db.name, { readonly: true, fileMustExist: true })
      : db;
  let readOne;
  /** A stored row with its answer's text as `text`. @param {any} r */
  const shape = (r) => {
    if (!r) return null;
    const { answer, ...rest } = r;
    return answer == null ? rest : { ...rest, text: answer };
  };
  const row = (principal, key) => shape(q.get.get(principal, key));
  /** @type {Map<string, any>} */
  const statements = new Map();
  /** @param {string} text */
  const cached = (text) => {
    let prepared = statements.get(text);
    if (!prepared) {
      if (statements.size >= 256) statements.clear();
      prepared = db.prepare(text);
      statements.set(text, prepared);
    }
    return prepared;
  };
  /** @type {import('./index.js').Store} */
  const store = {
    async init() {
      db.pragma('journal_mode = WAL');
      db.pragma('busy_timeout = 5000');
      db.exec(SCHEMA);
      q = {
        get: db.prepare('SELECT * FROM csk_outcomes WHERE principal = ? AND key = ?'),
        insert: db.prepare(
          "INSERT INTO csk_outcomes (principal, key, digest, state, token, lease_until) VALUES (?, ?, ?, 'pending', 1, ?)",
        ),
        takeover: db.prepare(
          "UPDATE csk_outcomes SET token = token + 1, lease_until = ? WHERE principal = ? AND key = ? AND state = 'pending' AND lease_until < ? AND digest = ? RETURNING token",
        ),
        settle: db.prepare(
          "UPDATE csk_outcomes SET state = 'done', status = ?, answer = ?, settled_at = ? WHERE principal = ? AND key = ? AND token = ? AND state = 'pending'",
        ),
        upsertDone: db.prepare(
          `INSERT INTO csk_outcomes (principal, key, digest, state, token, lease_until, status, answer, settled_at)
           VALUES (?, ?, ?, 'done', ?, ?, ?, ?, ?)
           ON CONFLICT (principal, key) DO UPDATE SET state = 'done', token = excluded.token,
             status = excluded.status, answer = excluded.answer, settled_at = excluded.settled_at`,
        ),
        resettle: db.prepare(
          "UPDATE csk_outcomes SET status = ?, answer = ?, settled_at = ? WHERE principal = ? AND key = ? AND state = 'done'",
        ),
        release: db.prepare(
          "DELETE FROM csk_outcomes WHERE principal = ? AND key = ? AND token = ? AND state = 'pending'",
        ),
      };
      // WITHOUT ROWID: purged by key, in bounded batches.
      q.purgeSelect = db.prepare(
        "SELECT principal, key FROM csk_outcomes WHERE state = 'done' AND settled_at < ? ORDER BY settled_at LIMIT ?",
      );
      readOne = reader.prepare('SELECT * FROM csk_outcomes WHERE principal = ? AND key = ?');
      q.purgeOne = db.prepare('DELETE FROM csk_outcomes WHERE principal = ? AND key = ?');
    },
    claim: ({ principal, key, digest, now, leaseMs }) =>
      transaction(() => {
        const existing = row(principal, key);
        if (!existing) {
          q.insert.run(principal, key, digest, now + leaseMs);
          return { state: 'claimed', token: 1 };
        }
        const taken = q.takeover.get(now + leaseMs, principal, key, now, digest);
        if (taken) return { state: 'claimed', token: taken.token };
        return existing;
      }),
    // Claim, apply and settle in ONE transaction (the kit uses it when a store has it): SQLite has
    // one writer at a time anyway, so a separate claim would only add a commit (an fsync).
    applyOnce: ({ principal, key, digest, now }, fn) =>
      transaction(async () => {
        const existing = row(principal, key);
        // A live claim (another process on this file, or an older kit) or a settled key: answered.
        if (existing && (existing.state === 'done' || existing.digest !== digest || existing.lease_until >= now)) {
          return existing;
        }
        const token = existing ? existing.token + 1 : 1;
        const { status, answer, text } = await fn(db);
        q.upsertDone.run(principal, key, digest, token, now, status, text, now);
        return { state: 'done', digest, status, answer, text };
      }),
    // A plan's statements (prepared once each, a bounded cache) in the same one transaction.
    writeOnce(args, planned) {
      let ran = false;
      return store.applyOnce(args, () => {
        ran = true;
        for (const s of planned.statements) {
          const prepared = cached(s.text);
          if (prepared.reader) prepared.all(...(s.values ?? []));
          else prepared.run(...(s.values ?? []));
        }
        return { status: planned.status, answer: planned.answer, text: planned.text };
      }).then((row) => (ran && row.state === 'done' ? { ...row, fresh: true } : row));
    },
    commit: ({ principal, key, token, now }, fn) =>
      transaction(async () => {
        const current = row(principal, key);
        if (!current) return { state: 'lost' };
        if (current.state === 'done') return current;
        if (current.token !== token) return { state: 'lost' };
        const { status, answer, text } = await fn(db);
        q.settle.run(status, text, now, principal, key, token);
        return { state: 'done', digest: current.digest, status, answer, text };
      }),
    settle: ({ principal, key, now }, fn) =>
      transaction(async () => {
        const current = row(principal, key);
        const answer = current?.state === 'done' && current.text != null ? JSON.parse(current.text) : null;
        if (answer?.outcome !== 'accepted') return { state: 'unchanged', row: current };
        const next = await fn(db, answer);
        if (!next) return { state: 'unchanged', row: current };
        q.resettle.run(next.status, next.text, now, principal, key);
        return { state: 'settled', row: { ...current, status: next.status, answer: next.answer, text: next.text } };
      }),
    release: ({ principal, key, token }) => exclusive(() => void q.release.run(principal, key, token)),
    get: async ({ principal, key }) => {
      if (reader === db) return exclusive(() => row(principal, key));
      return shape(readOne.get(principal, key));
    },
    purge: ({ before, limit }) =>
      transaction(() => {
        const rows = q.purgeSelect.all(before, limit);
        for (const r of rows) q.purgeOne.run(r.principal, r.key);
        return rows.length;
      }),
    close: async () =>
      exclusive(() => {
        if (reader !== db) reader.close();
        db.close();
      }),
  };
  return store;
}
