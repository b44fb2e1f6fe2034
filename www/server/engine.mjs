// The engine: decides the one outcome of each idempotency key and applies it to the canvases.
//
// At most once per key comes from the server kit (server/, `canvas-scheduler-server`): this file is
// the kit's `apply` (the canvas logic) and completes accepted runs with `kit.settle`. The kit
// claims the key, runs `decide` in the transaction that stores the outcome, and answers repeats
// and in-progress keys. Keys are global here (one kit principal): the request's own principal is
// recorded with the domain row, and another principal's key is answered 403. While the first
// submit of a key is still being received (a slow upload), the key is "in progress": a second
// submit or a query is answered 409 without a body.
//
// Kinds interpreted: the document kinds of operations.mjs (also batched), `asset.upload`,
// `run.start` (accepted now, applied `runApplyMs` later) and `run.cancel`.

import { createHash } from 'node:crypto';

import { createKit, postgresStore, sqliteStore } from '../../server/src/index.js';

import {
  DOCUMENT_KINDS,
  applyDocumentOperation,
  checkDocumentPayload,
} from './operations.mjs';
import {
  PROTOCOL_VERSION,
  ProtocolError,
  keyReusedReply,
  requestDigest,
  wireError,
} from './protocol.mjs';

const NON_BATCHABLE_KINDS = new Set(['asset.upload', 'run.start', 'run.cancel']);

/** How many due runs one promotion pass handles per transaction. */
const PROMOTION_PAGE = 64;
/** Upper bound on pages per pass, so a pass always ends. */
const PROMOTION_MAX_PAGES = 1000;
/** setTimeout cannot wait longer than this. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * @typedef {object} Blob A received upload body.
 * @property {Buffer} data
 * @property {string} contentType
 * @property {string | null} filename
 * @property {number} size
 * @property {string} sha256 Hex digest of `data`.
 */

/**
 * @typedef {object} SubmitResult
 * @property {import('./protocol.mjs').Reply} [reply] The answer to send.
 * @property {boolean} [created] True when this submit decided the key (something was committed).
 * @property {boolean} [forbidden] The key belongs to another principal.
 */

const isPlainObject = (value) =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The most bytes of a canvas document an answer carries as its `canonical`: a bigger document
 * (a canvas of thousands of records) is left out (`{version, documentOmitted: "too_large"}`),
 * so that every answer stays far below a client's answer limit (the scheduler's
 * `maxAnswerBytes`, 1 MiB by default) however big the canvas grows; the client then keeps its
 * own copy (the per-operation canonical still says what each operation did).
 */
export const MAX_CANONICAL_DOCUMENT_BYTES = 64 * 1024;

/** A canvas as an answer's `canonical` gives it. */
function canonicalCanvas(version, document) {
  if (JSON.stringify(document).length > MAX_CANONICAL_DOCUMENT_BYTES) {
    return { version, documentOmitted: 'too_large' };
  }
  return { version, document };
}

function rejection(request, httpStatus, error, { canonical, perOperation } = {}) {
  const answer = {
    outcome: 'rejected',
    error,
    operations: request.operationIds.map((operationId) => ({
      operationId,
      outcome: 'rejected',
      error: perOperation?.get(operationId) ?? error,
    })),
  };
  if (canonical !== undefined) answer.canonical = canonical;
  return { status: 'rejected', httpStatus, answer };
}

function runIdOf(request) {
  const runId = request.runId ?? (isPlainObject(request.payload) ? request.payload.runId : undefined);
  return typeof runId === 'string' && runId.length > 0 && runId.length <= 256 ? runId : null;
}

/** What an apply of `request` reads and writes besides its own key: canvases and its run. */
function lockNames(request) {
  const runId = runIdOf(request);
  return [
    ...(Array.isArray(request.canvasIds) ? request.canvasIds.map((id) => `canvas:${id}`) : []),
    ...Object.keys(isPlainObject(request.expectedVersions) ? request.expectedVersions : {}).map((id) => `canvas:${id}`),
    ...(runId ? [`run:${runId}`] : []),
  ];
}

function payloadRejection(request, message) {
  return rejection(request, 422, wireError('invalid_payload', message));
}

/**
 * Creates the engine over a store.
 *
 * @param {object} options
 * @param {import('./store.mjs').Store} options.store
 * @param {number} options.runApplyMs Delay between accepting a `run.start` and applying it.
 * @param {() => number} [options.now] Clock (ms since the epoch).
 * @param {boolean} [options.batches] Whether batches are taken (default); false declines each.
 */
export function createEngine({ store, runApplyMs, now = Date.now, batches = true }) {
  /** Keys whose first submit is being received but not yet decided. */
  const receiving = new Set();
  // The reference server's keys are global: one kit principal; ownership is the domain row's.
  const KIT_PRINCIPAL = 'reference';
  const kit = createKit({
    // Postgres (pg-store.mjs) shares its pool with the kit; SQLite its one connection.
    store: store.pool ? postgresStore({ pool: store.pool }) : sqliteStore({ db: store.db }),
    principal: () => KIT_PRINCIPAL,
    now,
    // An apply here takes milliseconds: a process killed mid-apply holds its keys 5 s, not 30.
    leaseMs: 5_000,
    // The domain writes run on the kit's transaction (`tx`): they commit with the outcome.
    apply: async ({ body: request, blob, digest, context }, tx) => {
      const { principal, at } = context;
      const on = store.bind(tx);
      await on.lock(lockNames(request));
      const decision = await domainOn(on).decide(request, blob, principal, at);
      await on.insertRequest({
        id: request.id,
        digest,
        body: request,
        principal,
        status: decision.status,
        httpStatus: decision.httpStatus,
        answer: decision.answer,
        receivedAt: at,
        applyAt: decision.applyAt ?? null,
      });
      return { ...decision.answer, status: decision.httpStatus };
    },
  });
  let runTimer = null;
  let closed = false;

  const samePrincipal = (stored, principal) =>
    stored.principal == null || principal == null || stored.principal === principal;

  /**
   * The canvas logic over `store` (a view on one transaction's connection): decides a request's
   * first outcome and completes accepted runs.
   * @param {any} store
   */
  const domainOn = (store) => {
    async function canonicalCanvases(ids) {
      const canvases = {};
      for (const id of ids) {
        const { version, document } = await store.getCanvas(id);
        canvases[id] = canonicalCanvas(version, document);
      }
      return { canvases };
    }

    async function versionConflict(request) {
      const stale = [];
      for (const [canvasId, expected] of Object.entries(request.expectedVersions)) {
        const actual = (await store.getCanvas(canvasId)).version;
        if (actual !== expected) stale.push({ canvasId, expected, actual });
      }
      if (stale.length === 0) return null;
      const ids = [...new Set([...request.canvasIds, ...Object.keys(request.expectedVersions)])].sort();
      return rejection(
        request,
        409,
        wireError('version_conflict', 'a canvas changed since the request was made', { stale }),
        { canonical: await canonicalCanvases(ids) },
      );
    }

    /**
     * Bumps every canvas of the request by one version, writes the new documents and logs who
     * applied what. Returns the new canonical state of those canvases.
     */
    async function commitApplication(request, principal, at, documents, operationsByCanvas) {
      const canvases = {};
      for (const canvasId of request.canvasIds) {
        const current = await store.getCanvas(canvasId);
        const version = current.version + 1;
        const document = documents.get(canvasId) ?? current.document;
        await store.putCanvas(canvasId, version, document);
        await store.logCanvas(canvasId, version, request.id, operationsByCanvas(canvasId));
        canvases[canvasId] = canonicalCanvas(version, document);
      }
      for (const operationId of request.operationIds) {
        await store.logOperation(operationId, request.id, request.kind, principal, at);
      }
      return canvases;
    }

    async function workingDocuments(request) {
      const documents = new Map();
      for (const id of request.canvasIds) documents.set(id, structuredClone((await store.getCanvas(id)).document));
      return documents;
    }

    function documentEntries(request) {
      if (request.operationIds.length === 1) {
        const payload = request.payload;
        return {
          entries: [
            {
              operationId: request.operationIds[0],
              kind: request.kind,
              payload,
              canvasId: isPlainObject(payload) ? payload.canvasId : undefined,
            },
          ],
        };
      }
      // A batch carries one entry per operation, in the order of operationIds
      // (docs/protocol.md, "Batches").
      const list = isPlainObject(request.payload) ? request.payload.operations : undefined;
      if (!Array.isArray(list) || list.length !== request.operationIds.length) {
        return { error: 'a batch payload needs operations: one entry per operationId' };
      }
      const entries = [];
      for (let i = 0; i < list.length; i += 1) {
        const entry = list[i];
        if (!isPlainObject(entry) || entry.operationId !== request.operationIds[i]) {
          return { error: `batch entry ${i} must be an object for operation ${request.operationIds[i]}` };
        }
        entries.push({
          operationId: entry.operationId,
          kind: entry.kind ?? request.kind,
          payload: entry.payload,
          canvasId: entry.canvasId ?? (isPlainObject(entry.payload) ? entry.payload.canvasId : undefined),
        });
      }
      return { entries };
    }

    function targetCanvas(request, entry) {
      if (entry.canvasId !== undefined) return entry.canvasId;
      if (request.ownerCanvasId !== undefined) return request.ownerCanvasId;
      return request.canvasIds.length === 1 ? request.canvasIds[0] : null;
    }

    /** Shape edits, alone or batched: all apply or none does. */
    async function decideDocument(request, principal, at) {
      const { entries, error } = documentEntries(request);
      if (error) return payloadRejection(request, error);
      const failure = async (index, httpStatus, entryError) => {
        const perOperation = new Map();
        entries.forEach((entry, i) => {
          perOperation.set(
            entry.operationId,
            i === index
              ? entryError
              : wireError('batch_aborted', `operation ${entries[index].operationId} failed; nothing was applied`),
          );
        });
        const topError = { ...entryError, details: { ...entryError.details, operationId: entries[index].operationId } };
        return rejection(request, httpStatus, topError, {
          perOperation,
          canonical: httpStatus === 409 ? await canonicalCanvases(request.canvasIds) : undefined,
        });
      };
      // Payload checks first: a malformed request is refused for what it is, whatever the state.
      for (let i = 0; i < entries.length; i += 1) {
        const entry = entries[i];
        if (!DOCUMENT_KINDS.includes(entry.kind)) {
          const code = NON_BATCHABLE_KINDS.has(entry.kind) ? 'not_batchable' : 'unknown_kind';
          return failure(i, 422, wireError(code, `kind ${entry.kind} cannot be applied in a batch`));
        }
        const check = checkDocumentPayload(entry.kind, entry.payload);
        if (!check.ok) return failure(i, check.status, check.error);
        const canvasId = targetCanvas(request, entry);
        if (canvasId === null) {
          return failure(i, 422, wireError('invalid_payload', 'name the canvas: canvasId, ownerCanvasId or a single canvasIds entry'));
        }
        if (!request.canvasIds.includes(canvasId)) {
          return failure(i, 422, wireError('canvas_not_in_request', `canvas ${canvasId} is not in canvasIds`));
        }
        entry.target = canvasId;
      }
      const conflict = await versionConflict(request);
      if (conflict) return conflict;
      const documents = await workingDocuments(request);
      const results = [];
      for (let i = 0; i < entries.length; i += 1) {
        const entry = entries[i];
        const applied = applyDocumentOperation(documents.get(entry.target), entry.kind, entry.payload);
        if (!applied.ok) return failure(i, applied.status, applied.error);
        results.push(applied.result);
      }
      const canvases = await commitApplication(request, principal, at, documents, (canvasId) =>
        entries.filter((entry) => entry.target === canvasId).map((entry) => entry.operationId),
      );
      return {
        status: 'applied',
        httpStatus: 200,
        answer: {
          outcome: 'applied',
          canonical: { canvases },
          operations: entries.map((entry, i) => ({
            operationId: entry.operationId,
            outcome: 'applied',
            canonical: {
              canvasId: entry.target,
              version: canvases[entry.target].version,
              ...results[i],
            },
          })),
        },
      };
    }

    async function decideUpload(request, blob, principal, at) {
      if (!blob) return rejection(request, 422, wireError('missing_blob', 'asset.upload needs a multipart blob part'));
      const payload = request.payload ?? {};
      if (!isPlainObject(payload)) return payloadRejection(request, 'asset.upload payload must be an object or null');
      if (payload.name != null && typeof payload.name !== 'string') return payloadRejection(request, 'name must be a string');
      const conflict = await versionConflict(request);
      if (conflict) return conflict;
      // Derived from the key, so the asset id is reproducible and one key yields one asset.
      const assetId = `asset-${createHash('sha256').update(request.id).digest('hex').slice(0, 24)}`;
      const name = payload.name ?? blob.filename ?? null;
      (await store.insertAsset({
        id: assetId,
        requestId: request.id,
        contentType: blob.contentType,
        filename: name,
        size: blob.size,
        sha256: blob.sha256,
        data: blob.data,
        createdAt: at,
      }));
      const documents = await workingDocuments(request);
      for (const document of documents.values()) {
        document.assets[assetId] = { size: blob.size, contentType: blob.contentType, name };
      }
      const canvases = await commitApplication(request, principal, at, documents, () => request.operationIds);
      const asset = { assetId, size: blob.size, contentType: blob.contentType, sha256: blob.sha256 };
      return {
        status: 'applied',
        httpStatus: 200,
        answer: {
          outcome: 'applied',
          canonical: { ...asset, canvases },
          operations: request.operationIds.map((operationId) => ({ operationId, outcome: 'applied', canonical: asset })),
        },
      };
    }


    async function decideRunStart(request, at) {
      const runId = runIdOf(request);
      if (!runId) return payloadRejection(request, 'run.start needs a runId');
      const conflict = await versionConflict(request);
      if (conflict) return conflict;
      const run = await store.getRun(runId);
      if (run?.status === 'cancelled') {
        // The cancel overtook the start (run.cancel claims no canvas, so it may): honour it.
        return rejection(request, 409, wireError('run_cancelled', `run ${runId} was cancelled`));
      }
      if (run) {
        return rejection(request, 409, wireError('run_already_started', `run ${runId} was started by another request`, {
          startRequestId: run.startRequestId,
        }));
      }
      await store.putRun({ id: runId, status: 'pending', startRequestId: request.id, cancelRequestId: null, updatedAt: at });
      return {
        status: 'accepted',
        httpStatus: 202,
        applyAt: at + runApplyMs,
        answer: {
          outcome: 'accepted',
          operations: request.operationIds.map((operationId) => ({ operationId, outcome: 'accepted' })),
        },
      };
    }

    async function decideRunCancel(request, principal, at) {
      const runId = runIdOf(request);
      if (!runId) return payloadRejection(request, 'run.cancel needs a runId');
      const conflict = await versionConflict(request);
      if (conflict) return conflict;
      const run = await store.getRun(runId);
      const previous = run?.status ?? 'unknown';
      const cancelled = previous === 'unknown' || previous === 'pending';
      // The start's accepted outcome becomes `run_cancelled` through kit.settle right after this
      // commits (settleCancelledStarts); a crash in between leaves it to the due-time promotion,
      // which finds the run no longer pending and refuses it the same way.
      if (cancelled) {
        (await store.putRun({
          id: runId,
          status: 'cancelled',
          startRequestId: run?.startRequestId ?? null,
          cancelRequestId: request.id,
          updatedAt: at,
        }));
      }
      const documents = await workingDocuments(request);
      if (cancelled) for (const document of documents.values()) document.runs[runId] = 'cancelled';
      const canvases = await commitApplication(request, principal, at, documents, () => request.operationIds);
      const runState = { runId, status: cancelled ? 'cancelled' : previous, previous, cancelled };
      return {
        status: 'applied',
        httpStatus: 200,
        answer: {
          outcome: 'applied',
          canonical: { run: runState, canvases },
          operations: request.operationIds.map((operationId) => ({ operationId, outcome: 'applied', canonical: { run: runState } })),
        },
      };
    }

    /** Decides the first outcome of a key. Runs inside the submit transaction. */
    async function decide(request, blob, principal, at) {
      if (request.protocolVersion !== PROTOCOL_VERSION) {
        return rejection(request, 422, wireError('unsupported_protocol_version', `this server speaks protocol ${PROTOCOL_VERSION}`));
      }
      if (!batches && request.operationIds.length > 1) {
        // A server without batches declines each one, applying none of it; the client sends
        // each operation again on its own, under a new key.
        return rejection(request, 422, wireError('batch_not_supported', 'this server takes one operation a request'));
      }
      if (request.operationIds.length > 1 || DOCUMENT_KINDS.includes(request.kind)) {
        return await decideDocument(request, principal, at);
      }
      switch (request.kind) {
        case 'asset.upload':
          return await decideUpload(request, blob, principal, at);
        case 'run.start':
          return await decideRunStart(request, at);
        case 'run.cancel':
          return await decideRunCancel(request, principal, at);
        default:
          return rejection(request, 422, wireError('unknown_kind', `unknown kind ${request.kind}`));
      }
    }

    /**
     * Completes one accepted run.start: applied when its run is still pending, else refused
     * `run_cancelled`. Runs inside kit.settle's transaction; returns the final answer.
     */
    async function completeRun(stored, at) {
      const request = stored.body;
      const runId = runIdOf(request);
      const run = runId ? (await store.getRun(runId)) : null;
      if (!run || run.status !== 'pending' || run.startRequestId !== request.id) {
        const refused = rejection(request, 409, wireError('run_cancelled', `run ${runId} was cancelled`));
        await store.resolveRequest(request.id, 'rejected', refused.httpStatus, refused.answer, at);
        return { ...refused.answer, status: refused.httpStatus };
      }
      const documents = await workingDocuments(request);
      for (const document of documents.values()) document.runs[runId] = 'completed';
      const canvases = await commitApplication(request, stored.principal, at, documents, () => request.operationIds);
      await store.putRun({ ...run, status: 'completed', updatedAt: at });
      const runState = { runId, status: 'completed' };
      const answer = {
        outcome: 'applied',
        canonical: { run: runState, canvases },
        operations: request.operationIds.map((operationId) => ({ operationId, outcome: 'applied', canonical: { run: runState } })),
      };
      await store.resolveRequest(request.id, 'applied', 200, answer, at);
      return answer;
    }

    return { decide, completeRun };
  };

  /** Completes the accepted request `id` once (any process may race; the kit settles it once). */
  async function settleRequest(id, at) {
    await kit.settle({ principal: KIT_PRINCIPAL, key: id }, async (tx) => {
      const on = store.bind(tx);
      const accepted = await on.getRequest(id);
      if (accepted) await on.lock(lockNames(accepted.body));
      const fresh = await on.getRequest(id);
      return fresh?.status === 'accepted' ? domainOn(on).completeRun(fresh, at) : null;
    });
  }

  /**
   * Applies every accepted request that is due, then re-arms the timer for the next one.
   * Called before each answer too, so an answer never shows `accepted` past its due time.
   */
  async function promoteDue() {
    if (closed) return;
    const at = now();
    for (let page = 0; page < PROMOTION_MAX_PAGES; page += 1) {
      const due = await store.dueRequests(at, PROMOTION_PAGE);
      if (due.length === 0) break;
      for (const stored of due) await settleRequest(stored.id, at);
      if (closed) return;
    }
    await armRunTimer();
  }

  /** After a run.cancel committed: its run's accepted start is refused now, not at its due time. */
  async function settleCancelledStarts(request) {
    const runId = runIdOf(request);
    const run = runId ? await store.getRun(runId) : null;
    if (run?.status === 'cancelled' && run.startRequestId) {
      const start = await store.getRequest(run.startRequestId);
      if (start?.status === 'accepted') await settleRequest(start.id, now());
    }
  }

  /** Arms the timer for the earliest accepted run; the latest call wins (`arming`). */
  let arming = 0;
  async function armRunTimer() {
    const mine = (arming += 1);
    const dueAt = closed ? null : await store.nextDueAt();
    if (mine !== arming) return;
    if (runTimer) clearTimeout(runTimer);
    runTimer = null;
    if (closed || dueAt === null) return;
    runTimer = setTimeout(onRunTimer, Math.min(MAX_TIMER_MS, Math.max(0, dueAt - now())));
  }

  function onRunTimer() {
    runTimer = null;
    promoteDue().catch((error) => {
      // Not re-armed here (a persistent failure would spin); the next protocol or admin read
      // promotes and re-arms. Each promotion is its own transaction, so nothing is half-done.
      process.stderr.write(`canvas-scheduler server: run promotion failed: ${error?.stack ?? error}\n`);
    });
  }

  return {
    /**
     * Marks a key as being received. Returns a release function, or null when the key is
     * already being received by another submit (answer 409 without a body).
     *
     * @param {string} key
     * @returns {(() => void) | null}
     */
    beginReceiving(key) {
      if (receiving.has(key)) return null;
      receiving.add(key);
      return () => receiving.delete(key);
    },

    /**
     * @param {string} key
     * @returns {Promise<boolean>} Whether a stored outcome exists for `key`.
     */
    async isStored(key) {
      return (await store.getRequest(key)) !== null;
    },

    /**
     * Handles a complete submit.
     *
     * @param {object} submit
     * @param {import('./protocol.mjs').WireRequest} submit.request
     * @param {Blob | null} submit.blob
     * @param {string | null} submit.principal
     * @returns {Promise<SubmitResult>}
     * @throws {ProtocolError} 400 when a blob comes with a kind other than `asset.upload`.
     */
    async submit({ request, blob, principal }) {
      if (closed) throw new Error('engine closed');
      if (blob && request.kind !== 'asset.upload') {
        throw new ProtocolError(400, 'unexpected_blob', 'only asset.upload may carry a blob');
      }
      await promoteDue();
      const owner = await store.getRequest(request.id);
      if (owner && !samePrincipal(owner, principal)) return { forbidden: true };
      const digest = requestDigest(request, blob);
      const result = await kit.decide({
        principal: KIT_PRINCIPAL,
        key: request.id,
        digest,
        body: request,
        blob,
        context: { principal, at: now() },
      });
      if (result.state === 'busy') return { inProgress: true };
      if (result.state === 'reused') return { reply: keyReusedReply(), created: false };
      if (!result.fresh) {
        // Decided by an earlier submit (maybe by another principal meanwhile).
        const stored = await store.getRequest(request.id);
        if (stored && !samePrincipal(stored, principal)) return { forbidden: true };
        if (stored) await store.countSubmit(request.id);
      } else {
        await armRunTimer();
        if (request.kind === 'run.cancel') await settleCancelledStarts(request);
      }
      return { reply: { status: result.status, answer: result.answer }, created: result.fresh };
    },

    /**
     * Handles a query.
     *
     * @param {string} key
     * @param {string | null} principal
     * @returns {Promise<{reply?: import('./protocol.mjs').Reply, inProgress?: boolean, notFound?: boolean, forbidden?: boolean}>}
     */
    async query(key, principal) {
      if (closed) throw new Error('engine closed');
      await promoteDue();
      const found = await kit.lookup({ principal: KIT_PRINCIPAL, key });
      if (!found) return receiving.has(key) ? { inProgress: true } : { notFound: true };
      if (found.state !== 'done') return { inProgress: true };
      const stored = await store.getRequest(key);
      if (stored && !samePrincipal(stored, principal)) return { forbidden: true };
      if (stored) await store.countQuery(key);
      return { reply: { status: found.status, answer: found.answer } };
    },

    /** Applies due runs now (also used by the admin API before reading state). */
    promoteDue,

    /** Re-reads the due times from the store (after a reset). */
    rearm: armRunTimer,

    /** Creates the kit's table (before the first request). */
    init: () => kit.init(),

    /** Closes the kit's connections (its reader, and the shared database). */
    dispose: () => kit.close(),

    /** Stops the run timer; later calls to submit/query throw. */
    close() {
      closed = true;
      if (runTimer) clearTimeout(runTimer);
      runTimer = null;
    },
  };
}
