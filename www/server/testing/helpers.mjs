// Shared helpers for the server tests: a server per test on port 0 with its own database file,
// request builders, and small HTTP clients. Every wait here is bounded.

import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { startServer } from '../server.mjs';
import { freshDatabase, testPostgres } from './test-db.mjs';

/** The admin token of every test server (`adminToken`); {@link admin} sends it. */
export const TEST_ADMIN_TOKEN = 'test-admin-token';

/**
 * A fresh temporary directory, removed when the test ends.
 *
 * @param {import('node:test').TestContext} t
 */
export function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'canvas-server-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A fresh database for one server: a SQLite file named `name` in a temporary directory, or a new
 * Postgres database when CANVAS_SCHEDULER_TEST_DB names a cluster (testing/test-db.mjs).
 *
 * @param {import('node:test').TestContext} t
 * @param {string} [name]
 */
export async function testDb(t, name = 'server.sqlite') {
  const cluster = testPostgres();
  return cluster ? freshDatabase(cluster) : join(tempDir(t), name);
}

/**
 * Starts a server on port 0 with a fresh database (testDb); closed (and the directory removed)
 * when the test ends.
 *
 * @param {import('node:test').TestContext} t
 * @param {Partial<import('../config.mjs').ServerOptions>} [options]
 */
export async function startTestServer(t, options = {}) {
  const db = options.db ?? (await testDb(t));
  const server = await startServer({ port: 0, host: '127.0.0.1', adminToken: TEST_ADMIN_TOKEN, ...options, db });
  t.after(() => server.close());
  return server;
}

/**
 * A frozen request body in protocol v1.
 *
 * @param {object} fields Overrides; `id`, `kind` and `payload` at least.
 */
export function frozen(fields) {
  const operationIds = fields.operationIds ?? [`op-${fields.id}`];
  return {
    id: fields.id,
    operationIds,
    kind: fields.kind,
    ...(fields.ownerCanvasId ? { ownerCanvasId: fields.ownerCanvasId } : {}),
    ...(fields.runId ? { runId: fields.runId } : {}),
    protocolVersion: fields.protocolVersion ?? 1,
    payload: fields.payload ?? null,
    canvasIds: fields.canvasIds ?? [],
    expectedVersions: fields.expectedVersions ?? {},
  };
}

/** A `shape.upsert` on one canvas. */
export function upsert(id, canvasId, shapeId, shape, expectedVersions = {}) {
  return frozen({ id, kind: 'shape.upsert', payload: { shapeId, shape }, canvasIds: [canvasId], expectedVersions });
}

async function decode(response) {
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: text ? JSON.parse(text) : null,
  };
}

/**
 * POST {url}/requests with a JSON body.
 *
 * @param {string} url
 * @param {object} body
 * @param {{key?: string, headers?: Record<string, string>}} [options]
 */
export async function submit(url, body, { key = body.id, headers = {} } = {}) {
  const response = await fetch(`${url}/requests`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === null ? {} : { 'idempotency-key': key }), ...headers },
    body: JSON.stringify(body),
  });
  return decode(response);
}

/**
 * POST {url}/requests as multipart/form-data with `request` and `blob` parts.
 *
 * @param {string} url
 * @param {object} body
 * @param {Blob | null} blob
 */
export async function submitUpload(url, body, blob, { headers = {} } = {}) {
  const form = new FormData();
  form.append('request', new Blob([JSON.stringify(body)], { type: 'application/json' }), 'request.json');
  if (blob) form.append('blob', blob, 'picture.bin');
  const response = await fetch(`${url}/requests`, {
    method: 'POST',
    headers: { 'idempotency-key': body.id, ...headers },
    body: form,
  });
  return decode(response);
}

/** GET {url}/requests/{id}. */
export async function query(url, id, { headers = {} } = {}) {
  return decode(await fetch(`${url}/requests/${encodeURIComponent(id)}`, { headers }));
}

/**
 * An admin request with the test admin token: GET `path`, or POST `body` as JSON.
 *
 * @param {string} url
 * @param {string} path e.g. `/admin/state`
 * @param {{method?: string, body?: unknown, token?: string | null, headers?: Record<string, string>}} [options]
 */
export async function admin(url, path, { method, body, token = TEST_ADMIN_TOKEN, headers = {} } = {}) {
  return decode(
    await fetch(`${url}${path}`, {
      method: method ?? (body === undefined ? 'GET' : 'POST'),
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(token === null ? {} : { 'x-admin-token': token }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
}

/** GET {url}/admin/state. */
export async function adminState(url) {
  return (await admin(url, '/admin/state')).body;
}

/** POST {url}/admin/faults. */
export async function setFaults(url, partial) {
  return admin(url, '/admin/faults', { body: partial });
}

/**
 * A request over a fresh socket (no keep-alive pool), reporting a destroyed socket as
 * `{socketError}` instead of throwing, so a test can tell "no answer" from an answer.
 *
 * @param {string} url Base URL.
 * @param {{method?: string, path: string, headers?: Record<string, string>, body?: string | Buffer}} options
 * @returns {Promise<{status: number, headers: object, text: string} | {socketError: string}>}
 */
export function rawRequest(url, { method = 'GET', path, headers = {}, body }) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const req = httpRequest({ hostname, port, method, path, headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (error) => resolve({ socketError: error.code ?? error.message }));
    });
    req.on('error', (error) => resolve({ socketError: error.code ?? error.message }));
    req.setTimeout(10_000, () => req.destroy(new Error('client_timeout')));
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

/**
 * Polls `probe` until it returns a truthy value, at most `timeoutMs`.
 *
 * @template T
 * @param {() => Promise<T>} probe
 * @param {{timeoutMs?: number, intervalMs?: number, what?: string}} [options]
 * @returns {Promise<T>}
 */
export async function waitFor(probe, { timeoutMs = 5_000, intervalMs = 20, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; attempt < 10_000; attempt += 1) {
    const value = await probe();
    if (value) return value;
    if (Date.now() >= deadline) break;
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
