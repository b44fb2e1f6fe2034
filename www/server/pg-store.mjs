// The reference server's canvas data on Postgres (`--db postgres://…`): the same rows and methods
// as store.mjs, async, so several server processes can share one database. Every write of an
// apply runs on the kit's transaction (`bind(tx)`), and `lock` serialises applies that touch the
// same canvases or run (advisory locks held until that transaction ends).

import pg from 'pg';

import { emptyDocument, normaliseDocument } from './operations.mjs';
import { assetOf } from './store.mjs';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS canvases (id TEXT PRIMARY KEY, version INTEGER NOT NULL, document TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS requests (
  id TEXT PRIMARY KEY,
  digest TEXT NOT NULL,
  kind TEXT NOT NULL,
  body TEXT NOT NULL,
  principal TEXT,
  status TEXT NOT NULL CHECK (status IN ('accepted', 'applied', 'rejected')),
  http_status INTEGER NOT NULL,
  answer TEXT NOT NULL,
  applications INTEGER NOT NULL DEFAULT 0,
  submits INTEGER NOT NULL DEFAULT 1,
  queries INTEGER NOT NULL DEFAULT 0,
  received_at BIGINT NOT NULL,
  resolved_at BIGINT,
  apply_at BIGINT
);
CREATE INDEX IF NOT EXISTS requests_due ON requests (status, apply_at);
CREATE TABLE IF NOT EXISTS operation_log (
  seq BIGSERIAL PRIMARY KEY,
  operation_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  principal TEXT,
  at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS operation_log_operation ON operation_log (operation_id);
CREATE TABLE IF NOT EXISTS canvas_log (
  canvas_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  request_id TEXT NOT NULL,
  operation_ids TEXT NOT NULL,
  PRIMARY KEY (canvas_id, version)
);
CREATE TABLE IF NOT EXISTS assets (
  id TEXT PRIMARY KEY,
  request_id TEXT NOT NULL,
  content_type TEXT NOT NULL,
  filename TEXT,
  size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  data BYTEA NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  status TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'cancelled')),
  start_request_id TEXT,
  cancel_request_id TEXT,
  updated_at BIGINT NOT NULL
);
`;

/** Every table and index SCHEMA creates. */
const SCHEMA_OBJECTS = [...SCHEMA.matchAll(/CREATE (?:TABLE|INDEX) IF NOT EXISTS (\w+)/g)].map((m) => m[1]);

const num = (v) => (v == null ? null : Number(v));

function decodeRequest(row) {
  if (!row) return null;
  return {
    id: row.id,
    digest: row.digest,
    kind: row.kind,
    body: JSON.parse(row.body),
    principal: row.principal,
    status: row.status,
    httpStatus: row.http_status,
    answer: JSON.parse(row.answer),
    applications: row.applications,
    submits: row.submits,
    queries: row.queries,
    receivedAt: num(row.received_at),
    resolvedAt: num(row.resolved_at),
    applyAt: num(row.apply_at),
  };
}

/**
 * Creates the tables when one of them (or an index) is missing. Only then: the DDL takes table
 * locks even when everything exists (CREATE INDEX IF NOT EXISTS: a SHARE lock, to the end of
 * the schema's one transaction), so a process starting beside others that serve would wait for
 * their applies and deadlock with them. A catalog lookup takes none.
 * @param {any} client
 */
async function ensureSchema(client) {
  const { rows } = await client.query('SELECT bool_and(to_regclass(n) IS NOT NULL) AS ready FROM unnest($1::text[]) AS n', [SCHEMA_OBJECTS]);
  if (rows[0].ready) return;
  await client.query('SELECT pg_advisory_lock(47110040)');
  try {
    await client.query(SCHEMA);
  } finally {
    await client.query('SELECT pg_advisory_unlock(47110040)').catch(() => {});
  }
}

/**
 * Opens the store on the database the URL names (its tables are created if missing).
 * @param {string} url postgres://…
 * @param {{fsync?: boolean}} [options] `fsync: false`: `synchronous_commit = off` (benchmarks).
 */
export async function openPgStore(url, { fsync = true } = {}) {
  const pool = new pg.Pool({ connectionString: url, max: 8, ...(fsync ? {} : { options: '-c synchronous_commit=off' }) });
  // An idle client's error (the server went away) must not crash the process.
  pool.on('error', () => {});
  const client = await pool.connect();
  try {
    await ensureSchema(client);
  } finally {
    client.release();
  }
  return new PgStore(pool, pool);
}

/** Row access for the engine and the admin API, on a pool or on one transaction's client. */
export class PgStore {
  /** @param {any} pool @param {any} q What queries run on: the pool, or a transaction's client. */
  constructor(pool, q) {
    this.pool = pool;
    this.q = q;
  }

  /** The store on one transaction's client (inherits everything else, even a test's patches). */
  bind(tx) {
    const view = Object.create(this);
    view.q = tx;
    return view;
  }

  /** Serialises transactions that touch the same `names` (canvases, runs), in sorted order. */
  async lock(names) {
    for (const name of [...new Set(names)].sort()) {
      await this.q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [name]);
    }
  }

  async one(sql, params) {
    return (await this.q.query(sql, params)).rows[0] ?? null;
  }

  async getCanvas(id) {
    const row = await this.one('SELECT version, document FROM canvases WHERE id = $1', [id]);
    if (!row) return { id, version: 0, document: emptyDocument() };
    return { id, version: row.version, document: normaliseDocument(JSON.parse(row.document)) };
  }

  async putCanvas(id, version, document) {
    await this.q.query(
      `INSERT INTO canvases (id, version, document) VALUES ($1, $2, $3)
       ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, document = EXCLUDED.document`,
      [id, version, JSON.stringify(document)],
    );
  }

  async getRequest(id) {
    return decodeRequest(await this.one('SELECT * FROM requests WHERE id = $1', [id]));
  }

  async insertRequest(row) {
    await this.q.query(
      `INSERT INTO requests (id, digest, kind, body, principal, status, http_status, answer,
         applications, received_at, resolved_at, apply_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [
        row.id,
        row.digest,
        row.body.kind,
        JSON.stringify(row.body),
        row.principal,
        row.status,
        row.httpStatus,
        JSON.stringify(row.answer),
        row.status === 'applied' ? 1 : 0,
        row.receivedAt,
        row.status === 'accepted' ? null : row.receivedAt,
        row.applyAt ?? null,
      ],
    );
  }

  async resolveRequest(id, status, httpStatus, answer, at) {
    const { rowCount } = await this.q.query(
      `UPDATE requests SET status = $2, http_status = $3, answer = $4,
         applications = applications + $5, resolved_at = $6, apply_at = NULL
       WHERE id = $1 AND status = 'accepted'`,
      [id, status, httpStatus, JSON.stringify(answer), status === 'applied' ? 1 : 0, at],
    );
    if (rowCount !== 1) throw new Error(`request ${id} is not accepted; refusing to resolve it again`);
  }

  async countSubmit(id) {
    await this.q.query('UPDATE requests SET submits = submits + 1 WHERE id = $1', [id]);
  }

  async countQuery(id) {
    await this.q.query('UPDATE requests SET queries = queries + 1 WHERE id = $1', [id]);
  }

  async dueRequests(now, limit) {
    const { rows } = await this.q.query(
      `SELECT * FROM requests WHERE status = 'accepted' AND apply_at <= $1
       ORDER BY apply_at, received_at, id LIMIT $2`,
      [now, limit],
    );
    return rows.map(decodeRequest);
  }

  async nextDueAt() {
    return num((await this.one(`SELECT MIN(apply_at) AS at FROM requests WHERE status = 'accepted'`, [])).at);
  }

  async logOperation(operationId, requestId, kind, principal, at) {
    await this.q.query(
      'INSERT INTO operation_log (operation_id, request_id, kind, principal, at) VALUES ($1, $2, $3, $4, $5)',
      [operationId, requestId, kind, principal, at],
    );
  }

  async logCanvas(canvasId, version, requestId, operationIds) {
    await this.q.query(
      'INSERT INTO canvas_log (canvas_id, version, request_id, operation_ids) VALUES ($1, $2, $3, $4)',
      [canvasId, version, requestId, JSON.stringify(operationIds)],
    );
  }

  async insertAsset(a) {
    await this.q.query(
      `INSERT INTO assets (id, request_id, content_type, filename, size, sha256, data, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [a.id, a.requestId, a.contentType, a.filename, a.size, a.sha256, a.data, a.createdAt],
    );
  }

  async getAsset(id) {
    return assetOf(await this.one('SELECT * FROM assets WHERE id = $1', [id]));
  }

  /** The asset that the upload operation `operationId` stored (store.mjs). */
  async getAssetByOperation(operationId) {
    return assetOf(
      await this.one(
        `SELECT assets.* FROM operation_log JOIN assets ON assets.request_id = operation_log.request_id
         WHERE operation_log.operation_id = $1 ORDER BY operation_log.seq LIMIT 1`,
        [operationId],
      ),
    );
  }

  async getRun(id) {
    const row = await this.one('SELECT * FROM runs WHERE id = $1', [id]);
    if (!row) return null;
    return { id: row.id, status: row.status, startRequestId: row.start_request_id, cancelRequestId: row.cancel_request_id };
  }

  async putRun(run) {
    await this.q.query(
      `INSERT INTO runs (id, status, start_request_id, cancel_request_id, updated_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, start_request_id = EXCLUDED.start_request_id,
         cancel_request_id = EXCLUDED.cancel_request_id, updated_at = EXCLUDED.updated_at`,
      [run.id, run.status, run.startRequestId, run.cancelRequestId, run.updatedAt],
    );
  }

  /** Everything the admin API shows, read in one REPEATABLE READ transaction (one snapshot). */
  async snapshot() {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const all = async (sql) => (await client.query(sql)).rows;
      const canvases = {};
      for (const row of await all('SELECT * FROM canvases ORDER BY id')) {
        canvases[row.id] = { version: row.version, document: normaliseDocument(JSON.parse(row.document)), history: [], order: [] };
      }
      for (const row of await all('SELECT * FROM canvas_log ORDER BY canvas_id, version')) {
        const canvas = canvases[row.canvas_id];
        if (!canvas) continue;
        const operationIds = JSON.parse(row.operation_ids);
        canvas.history.push({ version: row.version, requestId: row.request_id, operationIds });
        canvas.order.push(...operationIds);
      }
      const requests = {};
      for (const row of await all('SELECT * FROM requests ORDER BY received_at, id')) {
        const request = decodeRequest(row);
        requests[request.id] = {
          kind: request.kind,
          outcome: request.status,
          httpStatus: request.httpStatus,
          principal: request.principal,
          applications: request.applications,
          submits: request.submits,
          queries: request.queries,
          operationIds: request.body.operationIds,
          canvasIds: request.body.canvasIds,
          receivedAt: request.receivedAt,
          resolvedAt: request.resolvedAt,
          applyAt: request.applyAt,
        };
      }
      const operations = {};
      for (const row of await all('SELECT * FROM operation_log ORDER BY seq')) {
        const entry = (operations[row.operation_id] ??= { applications: 0, applied: [] });
        entry.applications += 1;
        entry.applied.push({ requestId: row.request_id, kind: row.kind, principal: row.principal, at: num(row.at) });
      }
      const assets = {};
      for (const row of await all('SELECT id, request_id, content_type, filename, size, sha256 FROM assets ORDER BY id')) {
        assets[row.id] = { requestId: row.request_id, contentType: row.content_type, filename: row.filename, size: row.size, sha256: row.sha256 };
      }
      const runs = {};
      for (const row of await all('SELECT * FROM runs ORDER BY id')) {
        runs[row.id] = { status: row.status, startRequestId: row.start_request_id, cancelRequestId: row.cancel_request_id };
      }
      await client.query('COMMIT');
      return { canvases, requests, operations, assets, runs };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  /** Deletes every row (the schema stays), the kit's stored outcomes too. */
  async reset() {
    await this.pool.query(
      'TRUNCATE canvases, requests, operation_log, canvas_log, assets, runs' +
        ((await this.one("SELECT to_regclass('csk_outcomes') AS t", [])).t ? ', csk_outcomes' : ''),
    );
  }

  close() {
    // The kit's store ends the pool (engine.dispose); ending it twice throws.
  }
}
