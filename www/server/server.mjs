#!/usr/bin/env node
// Reference server for canvas-scheduler wire protocol v1: the HTTP routes and the command line.
//
//   node server.mjs --port 0 --host 127.0.0.1 --db path.sqlite [--run-apply-ms 300]
//
// prints one line `{"listening":"http://127.0.0.1:PORT"}` when ready and stops cleanly on
// SIGTERM/SIGINT. Test scripts import `startServer` instead. See README.md for the routes.

import { realpathSync } from 'node:fs';
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

import { authenticate, isAdmin } from './auth.mjs';
import { USAGE, parseCliArgs, resolveOptions } from './config.mjs';
import { createEngine } from './engine.mjs';
import { FaultConfigError, createFaultInjector } from './faults.mjs';
import {
  answerPreflight,
  mediaType,
  parseJson,
  readBody,
  sendEmpty,
  sendJson,
  setAdminCorsHeaders,
  setCorsHeaders,
} from './http-util.mjs';
import { readUpload } from './multipart.mjs';
import { MAX_ID_LENGTH, ProtocolError, errorBody, parseWireRequest } from './protocol.mjs';
import { openPgStore } from './pg-store.mjs';
import { openStore } from './store.mjs';

const ADMIN_BODY_LIMIT = 64 * 1024;

/**
 * @typedef {object} RunningServer
 * @property {string} url Base URL, e.g. `http://127.0.0.1:41234` (the protocol endpoint).
 * @property {number} port
 * @property {() => Promise<void>} close Stops listening, drops open connections, closes the store.
 * @property {import('./store.mjs').Store} store
 * @property {ReturnType<typeof createFaultInjector>} faults
 */

/**
 * Starts the reference server.
 *
 * @param {import('./config.mjs').ServerOptions} options
 * @returns {Promise<RunningServer>}
 * @throws {Error} On invalid options (e.g. a host other than 127.0.0.1) or if listening fails.
 */
export async function startServer(options) {
  const config = resolveOptions(options);
  const store = /^postgres(ql)?:\/\//.test(config.db) ? await openPgStore(config.db, { fsync: config.fsync }) : openStore(config.db, { fsync: config.fsync });
  const engine = createEngine({ store, runApplyMs: config.runApplyMs, now: config.now, batches: config.batches });
  const faults = createFaultInjector(config.faults);
  let closing = false;

  // A run accepted before a restart is still due: apply what is overdue, arm for the rest.
  await engine.init();
  await engine.promoteDue();

  const destroy = (req) => req.socket.destroy();

  async function handleSubmit(req, res, principal, fate) {
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key.length === 0 || key.length > MAX_ID_LENGTH) {
      throw new ProtocolError(400, 'missing_idempotency_key', 'an idempotency-key header of 1..256 characters is required');
    }
    // Only the first receipt of a key can be "in progress"; a key with a stored outcome is
    // answered from the store once its body is compared.
    let release = null;
    if (!(await engine.isStored(key))) {
      release = engine.beginReceiving(key);
      if (!release) {
        req.resume();
        sendEmpty(res, 409);
        return;
      }
    }
    try {
      const type = mediaType(req);
      let body;
      let blob = null;
      if (type === 'application/json') {
        body = parseJson((await readBody(req, config.maxBodyBytes)).toString('utf8'));
      } else if (type === 'multipart/form-data') {
        const parts = await readUpload(req, {
          maxRequestBytes: config.maxBodyBytes,
          maxBlobBytes: config.maxBlobBytes,
        });
        body = parseJson(parts.requestText);
        blob = parts.blob;
      } else {
        throw new ProtocolError(415, 'unsupported_media_type', 'send application/json or multipart/form-data');
      }
      const request = parseWireRequest(body);
      if (request.id !== key) {
        throw new ProtocolError(400, 'idempotency_key_mismatch', 'the idempotency-key header must equal the body id');
      }
      if (faults.poisoned(request.operationIds)) {
        sendJson(res, 503, errorBody('service_unavailable', 'injected poison: this request is refused'));
        return;
      }
      if (closing) return destroy(req);
      const result = await engine.submit({ request, blob, principal });
      if (result.inProgress) {
        sendEmpty(res, 409);
        return;
      }
      if (result.forbidden) {
        sendJson(res, 403, errorBody('forbidden', 'this key belongs to another principal'));
        return;
      }
      if (result.created && fate.dropAfterApply) {
        // The outcome is committed; the client just never hears it (a lost answer).
        faults.noteDropped();
        destroy(req);
        return;
      }
      sendJson(res, result.reply.status, result.reply.answer);
    } finally {
      release?.();
    }
  }

  async function handleQuery(res, encodedKey, principal) {
    let key;
    try {
      key = decodeURIComponent(encodedKey);
    } catch {
      throw new ProtocolError(400, 'invalid_request', 'the request id in the path is not valid URL encoding');
    }
    const result = await engine.query(key, principal);
    if (result.reply) sendJson(res, result.reply.status, result.reply.answer);
    else if (result.inProgress) sendEmpty(res, 409);
    else if (result.forbidden) sendJson(res, 403, errorBody('forbidden', 'this key belongs to another principal'));
    else sendJson(res, 404, errorBody('not_found', 'no request with this id was received'));
  }

  async function handleProtocol(req, res, path) {
    const isSubmit = path === '/requests' && req.method === 'POST';
    const queryMatch = /^\/requests\/([^/]+)$/.exec(path);
    const isQuery = queryMatch !== null && req.method === 'GET';
    if (!isSubmit && !isQuery) {
      sendJson(res, 405, errorBody('method_not_allowed', 'POST /requests or GET /requests/{id}'), {
        allow: path === '/requests' ? 'POST, OPTIONS' : 'GET, OPTIONS',
      });
      return;
    }
    if (faults.config().offline) {
      faults.noteOffline();
      return destroy(req);
    }
    const { latencyMs } = faults.config();
    if (latencyMs > 0) await sleep(latencyMs);
    // The world may have changed while we slept.
    if (closing) return destroy(req);
    if (faults.config().offline) {
      faults.noteOffline();
      return destroy(req);
    }
    const auth = authenticate(config.tokens, req.headers.authorization);
    if (!auth.ok) {
      req.resume();
      sendJson(res, 401, errorBody('unauthorized', 'a valid bearer token is required'), {
        'www-authenticate': 'Bearer',
      });
      return;
    }
    if (isSubmit) {
      const key = req.headers['idempotency-key'];
      if (typeof key === 'string' && key.length > 0 && key.length <= MAX_ID_LENGTH) faults.noteSubmit(key);
    }
    if (faults.config().proxyRefusal) {
      req.resume();
      const page = '<html><body><h1>400 Bad Request</h1></body></html>';
      res.writeHead(400, { 'content-type': 'text/html', 'content-length': Buffer.byteLength(page) });
      res.end(page);
      return;
    }
    const outage = faults.outage(isSubmit);
    if (outage) {
      req.resume();
      const headers = outage.retryAfter === null ? {} : { 'retry-after': String(outage.retryAfter) };
      sendJson(res, 503, errorBody('service_unavailable', 'injected outage: nothing was applied'), headers);
      return;
    }
    const fate = faults.draw();
    if (fate.serverError || fate.tooMany) {
      req.resume();
      const status = fate.serverError ? 503 : 429;
      const code = fate.serverError ? 'service_unavailable' : 'too_many_requests';
      sendJson(res, status, errorBody(code, 'injected fault: nothing was applied'), {
        'retry-after': String(faults.config().retryAfterSeconds),
      });
      return;
    }
    if (isSubmit) await handleSubmit(req, res, auth.principal, fate);
    else await handleQuery(res, queryMatch[1], auth.principal);
  }

  async function handleAsset(req, res, path) {
    if (req.method !== 'GET') {
      sendJson(res, 405, errorBody('method_not_allowed', 'GET /assets/{id} or /assets/by-operation/{operationId}'), { allow: 'GET, OPTIONS' });
      return;
    }
    if (!authenticate(config.tokens, req.headers.authorization).ok) {
      sendJson(res, 401, errorBody('unauthorized', 'a valid bearer token is required'), {
        'www-authenticate': 'Bearer',
      });
      return;
    }
    // `/assets/{assetId}`, or `/assets/by-operation/{operationId}`: the asset an upload
    // operation stored, addressed by the id its client chose before sending it.
    const byOperation = path.startsWith('/assets/by-operation/');
    let id;
    try {
      id = decodeURIComponent(path.slice(byOperation ? '/assets/by-operation/'.length : '/assets/'.length));
    } catch {
      id = null;
    }
    const asset = !id ? null : byOperation ? await store.getAssetByOperation(id) : await store.getAsset(id);
    if (!asset) {
      sendJson(res, 404, errorBody('not_found', 'no such asset'));
      return;
    }
    res.writeHead(200, {
      'content-type': asset.contentType,
      'content-length': asset.size,
      etag: `"${asset.sha256}"`,
      'cache-control': 'no-store',
    });
    res.end(asset.data);
  }

  async function adminState() {
    await engine.promoteDue();
    const snapshot = await store.snapshot();
    const overKeys = Object.entries(snapshot.requests).filter(([, r]) => r.applications > 1).map(([id]) => id);
    const overOperations = Object.entries(snapshot.operations)
      .filter(([, o]) => o.applications > 1)
      .map(([id]) => id);
    // reduce, not Math.max(...spread): a long test run can hold more entries than arguments.
    const most = (records) => Object.values(records).reduce((max, r) => Math.max(max, r.applications), 0);
    return {
      ...snapshot,
      faults: { config: faults.config(), counters: faults.counters() },
      invariants: {
        maxApplicationsPerKey: most(snapshot.requests),
        maxApplicationsPerOperation: most(snapshot.operations),
        keysAppliedMoreThanOnce: overKeys,
        operationsAppliedMoreThanOnce: overOperations,
      },
    };
  }

  async function handleAdmin(req, res, path) {
    if (!config.adminToken) {
      req.resume();
      sendJson(res, 404, errorBody('not_found', 'the admin API is off: start the server with --admin-token'));
      return;
    }
    if (!isAdmin(config.adminToken, req.headers['x-admin-token'])) {
      req.resume();
      sendJson(res, 401, errorBody('unauthorized', 'admin routes need the x-admin-token header'));
      return;
    }
    const route = `${req.method} ${path}`;
    switch (route) {
      case 'GET /admin/state':
        sendJson(res, 200, await adminState());
        return;
      case 'GET /admin/faults':
        sendJson(res, 200, { config: faults.config(), counters: faults.counters() });
        return;
      case 'GET /admin/submits':
        sendJson(res, 200, { arrivals: faults.arrivals() });
        return;
      case 'POST /admin/faults': {
        const body = parseJson((await readBody(req, ADMIN_BODY_LIMIT)).toString('utf8'));
        try {
          sendJson(res, 200, { config: faults.update(body), counters: faults.counters() });
        } catch (error) {
          if (!(error instanceof FaultConfigError)) throw error;
          sendJson(res, 400, errorBody('invalid_faults', error.message));
        }
        return;
      }
      case 'POST /admin/reset':
        req.resume();
        await store.reset();
        faults.reset();
        await engine.rearm();
        sendJson(res, 200, { reset: true });
        return;
      default:
        sendJson(res, 404, errorBody('not_found', 'admin routes: GET /admin/state, GET|POST /admin/faults, GET /admin/submits, POST /admin/reset'));
    }
  }

  async function handle(req, res) {
    if (closing) return destroy(req);
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (path.startsWith('/admin/')) setAdminCorsHeaders(req, res);
    else setCorsHeaders(res);
    if (req.method === 'OPTIONS') return answerPreflight(req, res);
    if (path === '/requests' || path.startsWith('/requests/')) return handleProtocol(req, res, path);
    if (path.startsWith('/assets/')) return await handleAsset(req, res, path);
    if (path.startsWith('/admin/')) return handleAdmin(req, res, path);
    req.resume();
    sendJson(res, 404, errorBody('not_found', `no route for ${req.method} ${path}`));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error) => {
      if (res.headersSent || res.destroyed || closing) {
        res.destroy();
        return;
      }
      if (error instanceof ProtocolError) {
        // Refused before any key was decided: answered, never stored.
        const headers = error.status === 413 ? { connection: 'close' } : {};
        sendJson(res, error.status, { outcome: 'rejected', error: { code: error.code, message: error.message } }, headers);
        return;
      }
      // Unexpected: the transaction (if any) rolled back, so nothing was applied; 500 is
      // "unresolved" to the client, which will retry.
      process.stderr.write(`canvas-scheduler server: ${error?.stack ?? error}\n`);
      sendJson(res, 500, errorBody('internal_error', 'unexpected server error; nothing was applied'));
    });
  });

  try {
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    engine.close();
    await engine.dispose();
    store.close();
    throw error;
  }
  const { port } = server.address();

  let closed = null;
  return {
    url: `http://${config.host}:${port}`,
    port,
    store,
    faults,
    close() {
      closed ??= (async () => {
        closing = true;
        engine.close();
        await new Promise((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await engine.dispose();
        store.close();
      })();
      return closed;
    },
  };
}

async function main(argv) {
  let options;
  try {
    options = parseCliArgs(argv);
  } catch (error) {
    process.stderr.write(`${error.message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let running;
  try {
    running = await startServer(options);
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`${JSON.stringify({ listening: running.url })}\n`);
  const stop = () => {
    running.close().then(
      () => process.exit(0),
      (error) => {
        process.stderr.write(`shutdown failed: ${error.message}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

function invokedAsScript() {
  try {
    return Boolean(process.argv[1]) && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

if (invokedAsScript()) {
  await main(process.argv.slice(2));
}
