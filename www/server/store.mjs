// The durable store: one SQLite file (better-sqlite3) holding canvases, stored outcomes per
// idempotency key, application logs, assets and runs.
//
// better-sqlite3 is synchronous, so a transaction here runs start to finish without yielding to
// the event loop: the engine applies a request and records its outcome in one transaction, and a
// crash can never leave an applied request without its stored answer (or the reverse).

import Database from 'better-sqlite3';

import { emptyDocument, normaliseDocument } from './operations.mjs';

const SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS canvases (
  id TEXT PRIMARY KEY,
  version INTEGER NOT NULL,
  document TEXT NOT NULL
);
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
  received_at INTEGER NOT NULL,
  resolved_at INTEGER,
  apply_at INTEGER
);
CREATE INDEX IF NOT EXISTS requests_due ON requests (status, apply_at);
CREATE TABLE IF NOT EXISTS operation_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  operation_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  principal TEXT,
  at INTEGER NOT NULL
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
  data BLOB NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  status TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'cancelled')),
  start_request_id TEXT,
  cancel_request_id TEXT,
  updated_at INTEGER NOT NULL
);
`;

/**
 * @typedef {object} StoredRequest A row of `requests`, decoded.
 * @property {string} id
 * @property {string} digest
 * @property {string} kind
 * @property {import('./protocol.mjs').WireRequest} body
 * @property {string | null} principal
 * @property {'accepted' | 'applied' | 'rejected'} status
 * @property {number} httpStatus
 * @property {import('./protocol.mjs').Answer} answer
 * @property {number} applications
 * @property {number} submits
 * @property {number} queries
 * @property {number} receivedAt
 * @property {number | null} resolvedAt
 * @property {number | null} applyAt
 */

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
    receivedAt: row.received_at,
    resolvedAt: row.resolved_at,
    applyAt: row.apply_at,
  };
}

/**
 * Opens (creating if needed) the store at `path`.
 *
 * @param {string} path A file path, or `:memory:` for a throw-away store.
 * @param {{fsync?: boolean}} [options] `fsync: false` lets commits skip the flush (benchmarks).
 * @returns {Store}
 */
export function openStore(path, { fsync = true } = {}) {
  const db = new Database(path);
  // WAL keeps readers off the writer's back; FULL makes every commit durable before we answer,
  // which is the whole point of a stored outcome (OFF only when a benchmark asks).
  db.pragma('journal_mode = WAL');
  db.pragma(fsync ? 'synchronous = FULL' : 'synchronous = OFF');
  db.pragma('foreign_keys = ON');
  const found = db.pragma('user_version', { simple: true });
  if (found > SCHEMA_VERSION) {
    db.close();
    throw new Error(`store schema ${found} is newer than this server understands (${SCHEMA_VERSION})`);
  }
  db.exec(SCHEMA);
  db.pragma(`user_version = ${SCHEMA_VERSION}`);
  return new Store(db);
}

/** Row access for the engine and the admin API. Every method is synchronous. */
export class Store {
  /** @param {import('better-sqlite3').Database} db */
  constructor(db) {
    this.db = db;
    const prepare = (sql) => db.prepare(sql);
    this.sql = {
      getCanvas: prepare('SELECT version, document FROM canvases WHERE id = ?'),
      putCanvas: prepare(
        `INSERT INTO canvases (id, version, document) VALUES (?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET version = excluded.version, document = excluded.document`,
      ),
      getRequest: prepare('SELECT * FROM requests WHERE id = ?'),
      insertRequest: prepare(
        `INSERT INTO requests (id, digest, kind, body, principal, status, http_status, answer,
           applications, received_at, resolved_at, apply_at)
         VALUES (@id, @digest, @kind, @body, @principal, @status, @httpStatus, @answer,
           @applications, @receivedAt, @resolvedAt, @applyAt)`,
      ),
      resolveRequest: prepare(
        `UPDATE requests SET status = @status, http_status = @httpStatus, answer = @answer,
           applications = applications + @applications, resolved_at = @resolvedAt, apply_at = NULL
         WHERE id = @id AND status = 'accepted'`,
      ),
      countSubmit: prepare('UPDATE requests SET submits = submits + 1 WHERE id = ?'),
      countQuery: prepare('UPDATE requests SET queries = queries + 1 WHERE id = ?'),
      dueRequests: prepare(
        `SELECT * FROM requests WHERE status = 'accepted' AND apply_at <= ?
         ORDER BY apply_at, received_at, id LIMIT ?`,
      ),
      nextDue: prepare(`SELECT MIN(apply_at) AS at FROM requests WHERE status = 'accepted'`),
      logOperation: prepare(
        'INSERT INTO operation_log (operation_id, request_id, kind, principal, at) VALUES (?, ?, ?, ?, ?)',
      ),
      logCanvas: prepare(
        'INSERT INTO canvas_log (canvas_id, version, request_id, operation_ids) VALUES (?, ?, ?, ?)',
      ),
      insertAsset: prepare(
        `INSERT INTO assets (id, request_id, content_type, filename, size, sha256, data, created_at)
         VALUES (@id, @requestId, @contentType, @filename, @size, @sha256, @data, @createdAt)`,
      ),
      getAsset: prepare('SELECT * FROM assets WHERE id = ?'),
      getAssetByOperation: prepare(
        `SELECT assets.* FROM operation_log JOIN assets ON assets.request_id = operation_log.request_id
         WHERE operation_log.operation_id = ? ORDER BY operation_log.seq LIMIT 1`,
      ),
      getRun: prepare('SELECT * FROM runs WHERE id = ?'),
      putRun: prepare(
        `INSERT INTO runs (id, status, start_request_id, cancel_request_id, updated_at)
         VALUES (@id, @status, @startRequestId, @cancelRequestId, @updatedAt)
         ON CONFLICT (id) DO UPDATE SET status = excluded.status,
           start_request_id = excluded.start_request_id,
           cancel_request_id = excluded.cancel_request_id, updated_at = excluded.updated_at`,
      ),
    };
  }

  /**
   * Runs `fn` inside one SQLite transaction; a throw rolls everything back.
   *
   * @template T
   * @param {() => T} fn Must not await: the transaction ends when it returns.
   * @returns {T}
   */
  transaction(fn) {
    return this.db.transaction(fn).immediate();
  }

  /**
   * @param {string} id
   * @returns {{id: string, version: number, document: object}} Version 0 and an empty document
   *   for a canvas never touched.
   */
  getCanvas(id) {
    const row = this.sql.getCanvas.get(id);
    if (!row) return { id, version: 0, document: emptyDocument() };
    return { id, version: row.version, document: normaliseDocument(JSON.parse(row.document)) };
  }

  /**
   * @param {string} id
   * @param {number} version
   * @param {object} document
   */
  putCanvas(id, version, document) {
    this.sql.putCanvas.run(id, version, JSON.stringify(document));
  }

  /** @param {string} id @returns {StoredRequest | null} */
  getRequest(id) {
    return decodeRequest(this.sql.getRequest.get(id));
  }

  /**
   * Stores the first outcome decided for a key.
   *
   * @param {object} row
   * @param {string} row.id
   * @param {string} row.digest
   * @param {import('./protocol.mjs').WireRequest} row.body
   * @param {string | null} row.principal
   * @param {'accepted' | 'applied' | 'rejected'} row.status
   * @param {number} row.httpStatus
   * @param {object} row.answer
   * @param {number} row.receivedAt
   * @param {number | null} [row.applyAt] When an accepted request becomes due.
   */
  insertRequest(row) {
    const applied = row.status === 'applied';
    this.sql.insertRequest.run({
      id: row.id,
      digest: row.digest,
      kind: row.body.kind,
      body: JSON.stringify(row.body),
      principal: row.principal,
      status: row.status,
      httpStatus: row.httpStatus,
      answer: JSON.stringify(row.answer),
      applications: applied ? 1 : 0,
      receivedAt: row.receivedAt,
      resolvedAt: row.status === 'accepted' ? null : row.receivedAt,
      applyAt: row.applyAt ?? null,
    });
  }

  /**
   * Moves an accepted request to its final outcome. Refuses (throws) if it is not accepted any
   * more, so a request can never be resolved twice.
   *
   * @param {string} id
   * @param {'applied' | 'rejected'} status
   * @param {number} httpStatus
   * @param {object} answer
   * @param {number} at
   */
  resolveRequest(id, status, httpStatus, answer, at) {
    const { changes } = this.sql.resolveRequest.run({
      id,
      status,
      httpStatus,
      answer: JSON.stringify(answer),
      applications: status === 'applied' ? 1 : 0,
      resolvedAt: at,
    });
    if (changes !== 1) throw new Error(`request ${id} is not accepted; refusing to resolve it again`);
  }

  /** @param {string} id */
  countSubmit(id) {
    this.sql.countSubmit.run(id);
  }

  /** @param {string} id */
  countQuery(id) {
    this.sql.countQuery.run(id);
  }

  /**
   * @param {number} now
   * @param {number} limit
   * @returns {StoredRequest[]} Accepted requests due at or before `now`, oldest first.
   */
  dueRequests(now, limit) {
    return this.sql.dueRequests.all(now, limit).map(decodeRequest);
  }

  /** @returns {number | null} The earliest due time of any accepted request. */
  nextDueAt() {
    return this.sql.nextDue.get().at ?? null;
  }

  /**
   * @param {string} operationId
   * @param {string} requestId
   * @param {string} kind
   * @param {string | null} principal
   * @param {number} at
   */
  logOperation(operationId, requestId, kind, principal, at) {
    this.sql.logOperation.run(operationId, requestId, kind, principal, at);
  }

  /**
   * Records that `requestId` moved `canvasId` to `version`, carrying `operationIds`.
   *
   * @param {string} canvasId
   * @param {number} version
   * @param {string} requestId
   * @param {string[]} operationIds
   */
  logCanvas(canvasId, version, requestId, operationIds) {
    this.sql.logCanvas.run(canvasId, version, requestId, JSON.stringify(operationIds));
  }

  /** @param {{id: string, requestId: string, contentType: string, filename: string | null, size: number, sha256: string, data: Buffer, createdAt: number}} asset */
  insertAsset(asset) {
    this.sql.insertAsset.run(asset);
  }

  /**
   * @param {string} id
   * @returns {{id: string, requestId: string, contentType: string, filename: string | null, size: number, sha256: string, data: Buffer} | null}
   */
  getAsset(id) {
    return assetOf(this.sql.getAsset.get(id));
  }

  /**
   * The asset that the upload operation `operationId` stored: its URL is known before the
   * upload lands, so an app can put it in its document at once.
   * @param {string} operationId
   */
  getAssetByOperation(operationId) {
    return assetOf(this.sql.getAssetByOperation.get(operationId));
  }

  /**
   * @param {string} id
   * @returns {{id: string, status: 'pending' | 'completed' | 'cancelled', startRequestId: string | null, cancelRequestId: string | null} | null}
   */
  getRun(id) {
    const row = this.sql.getRun.get(id);
    if (!row) return null;
    return {
      id: row.id,
      status: row.status,
      startRequestId: row.start_request_id,
      cancelRequestId: row.cancel_request_id,
    };
  }

  /** @param {{id: string, status: string, startRequestId: string | null, cancelRequestId: string | null, updatedAt: number}} run */
  putRun(run) {
    this.sql.putRun.run(run);
  }

  /**
   * Everything the admin API shows, read in one transaction so it is a consistent snapshot.
   * Blob bytes are left out.
   */
  snapshot() {
    return this.db.transaction(() => {
      const canvases = {};
      for (const row of this.db.prepare('SELECT * FROM canvases ORDER BY id').all()) {
        canvases[row.id] = {
          version: row.version,
          document: normaliseDocument(JSON.parse(row.document)),
          history: [],
          order: [],
        };
      }
      const history = this.db
        .prepare('SELECT * FROM canvas_log ORDER BY canvas_id, version')
        .all();
      for (const row of history) {
        const canvas = canvases[row.canvas_id];
        if (!canvas) continue;
        const operationIds = JSON.parse(row.operation_ids);
        canvas.history.push({ version: row.version, requestId: row.request_id, operationIds });
        canvas.order.push(...operationIds);
      }
      const requests = {};
      for (const row of this.db.prepare('SELECT * FROM requests ORDER BY received_at, id').all()) {
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
      for (const row of this.db.prepare('SELECT * FROM operation_log ORDER BY seq').all()) {
        const entry = (operations[row.operation_id] ??= { applications: 0, applied: [] });
        entry.applications += 1;
        entry.applied.push({ requestId: row.request_id, kind: row.kind, principal: row.principal, at: row.at });
      }
      const assets = {};
      const assetRows = this.db
        .prepare('SELECT id, request_id, content_type, filename, size, sha256 FROM assets ORDER BY id')
        .all();
      for (const row of assetRows) {
        assets[row.id] = {
          requestId: row.request_id,
          contentType: row.content_type,
          filename: row.filename,
          size: row.size,
          sha256: row.sha256,
        };
      }
      const runs = {};
      for (const row of this.db.prepare('SELECT * FROM runs ORDER BY id').all()) {
        runs[row.id] = {
          status: row.status,
          startRequestId: row.start_request_id,
          cancelRequestId: row.cancel_request_id,
        };
      }
      return { canvases, requests, operations, assets, runs };
    })();
  }

  /** Deletes every row (the schema stays). */
  reset() {
    this.transaction(() => {
      // csk_outcomes: the server kit's stored outcomes (created by its init).
      for (const table of ['canvases', 'requests', 'operation_log', 'canvas_log', 'assets', 'runs', 'csk_outcomes']) {
        this.db.prepare(`DELETE FROM ${table}`).run();
      }
    });
  }

  /** The store as seen inside a transaction on `tx`: SQLite has one connection, so itself. */
  bind(_tx) {
    return this;
  }

  /** Postgres serialises applies on shared canvases here; SQLite's writer is already alone. */
  lock(_names) {}

  /** Closes the database; the store is unusable afterwards. */
  close() {
    if (this.db.open) this.db.close();
  }
}

/**
 * An `assets` row, decoded (null for none).
 * @returns {{id: string, requestId: string, contentType: string, filename: string | null, size: number, sha256: string, data: Buffer} | null}
 */
export function assetOf(row) {
  if (!row) return null;
  return {
    id: row.id,
    requestId: row.request_id,
    contentType: row.content_type,
    filename: row.filename,
    size: row.size,
    sha256: row.sha256,
    data: row.data,
  };
}
