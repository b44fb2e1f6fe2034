//! The protocol v1 handler: routes submit and query, claims the key (in the same transaction as
//! the app's `apply` and the stored outcome, where the store can: both engines do), answers
//! repeats, and 409 while a key is in progress. An answer is written as JSON text once, when it
//! is decided; that text is stored and every repeat is sent those bytes.

import { empty, errorAnswer, jsonText, rejected, toWebResponse } from './answer.js';
import { SERVE, fromWebRequest } from './incoming.js';
import { DEFAULT_LIMITS, ProtocolError, parseSubmit, statusOf } from './protocol.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * @param {import('./index.js').KitOptions} options
 * @returns {import('./index.js').Kit}
 */
export function createKit(options) {
  const { store, apply, plan } = options;
  if (!store || (typeof apply === 'function') === (typeof plan === 'function')) {
    throw new TypeError('createKit needs { store } and one of apply or plan');
  }
  if (plan && typeof store.writeOnce !== 'function') throw new TypeError('this store cannot run a plan (no writeOnce): give apply');
  const principalHook = options.principal;
  const limits = { ...DEFAULT_LIMITS, ...(options.limits ?? {}) };
  const leaseMs = options.leaseMs ?? 30_000;
  const retentionMs = options.retentionMs ?? 30 * DAY_MS;
  const now = options.now ?? (() => Date.now());
  let ready = null;
  // Set once init() has resolved: a request then skips awaiting it.
  let initialized = false;
  // Keys this process is applying now, with their digest: a repeat is answered 409 (or 422)
  // at once, without waiting for the store (SQLite's single writer is busy with that apply).
  /** @type {Map<string, string>} */
  const inflight = new Map();
  const init = () => (ready ??= Promise.resolve(store.init()).then(() => void (initialized = true)));

  /** @param {Request} request */
  const handle = async (request) => toWebResponse(await serve(fromWebRequest(request)));
  // toNodeHandler(kit.handle) finds this and serves node:http without a web Request.
  Object.defineProperty(handle, SERVE, { value: serve });

  /**
   * @param {import('./incoming.js').Incoming} request
   * @returns {Promise<import('./answer.js').Answer>}
   */
  async function serve(request) {
    try {
      if (!initialized) await init();
      const { pathname } = new URL(request.url);
      const query = /\/requests\/([^/]+)$/.exec(pathname);
      const isSubmit = /\/requests$/.test(pathname);
      if (!query && !isSubmit) return errorAnswer(404, 'not_found', 'no such route');
      const principal = principalHook ? await principalHook(request.request()) : 'anonymous';
      if (principal == null) return errorAnswer(401, 'unauthorized', 'no principal for this request');
      if (typeof principal !== 'string' || principal.length > 256) {
        throw new TypeError('principal(request) must give a string of at most 256 characters');
      }
      if (query) {
        if (request.method !== 'GET') return rejected(405, 'method_not_allowed', 'query with GET');
        return await answerQuery(principal, decodeURIComponent(query[1]));
      }
      if (request.method !== 'POST') return rejected(405, 'method_not_allowed', 'submit with POST');
      return await submit(principal, request);
    } catch (error) {
      if (error instanceof ProtocolError) return rejected(error.status, error.code, error.message);
      options.onError?.(error);
      return errorAnswer(500, 'internal', 'the server failed; retry later', { 'retry-after': '1' });
    }
  }

  /** @param {string} principal @param {string} key */
  async function answerQuery(principal, key) {
    const found = await lookup({ principal, key });
    if (!found) return errorAnswer(404, 'not_found', 'this server never received that request');
    return toAnswer(found);
  }

  /** @param {{ principal: string, key: string }} args */
  async function lookup({ principal, key }) {
    if (!initialized) await init();
    // Being applied by this process (on SQLite not yet visible to the reader connection).
    if (inflight.has(`${principal}\u0000${key}`)) return { state: 'busy' };
    const row = await store.get({ principal, key });
    if (!row) return null;
    // A claim whose lease ran out was left by a process that died before committing: nothing
    // was applied. 404 makes the client submit again, and that submit takes the claim over; a
    // 409 here would have it query for ever.
    if (row.state === 'pending') return row.lease_until < now() ? null : { state: 'busy' };
    return { state: 'done', status: row.status, ...storedAnswer(row), fresh: false };
  }

  /** @param {any} result @returns {import('./answer.js').Answer} */
  function toAnswer(result) {
    if (result.state === 'busy') return empty(409);
    if (result.state === 'reused') {
      return rejected(422, 'idempotency_key_reused', 'this idempotency key was already used with a different request body');
    }
    return jsonText(result.status, result.text);
  }

  /** @param {string} principal @param {import('./incoming.js').Incoming} request */
  async function submit(principal, request) {
    const parsed = await parseSubmit(request, limits);
    return toAnswer(await decide({ principal, ...parsed }));
  }

  /**
   * The submit path without HTTP, for an app that reads and checks requests itself.
   * @param {{ principal: string, key: string, digest: string, body: any, blob?: any, context?: any }} submitted
   */
  async function decide(submitted) {
    if (!initialized) await init();
    const { principal, key, digest } = submitted;
    const slot = `${principal}\u0000${key}`;
    const running = inflight.get(slot);
    if (running !== undefined) return settledOrBusy({ state: 'pending', digest: running }, digest);
    inflight.set(slot, digest);
    try {
      return await claimAndApply(submitted);
    } finally {
      inflight.delete(slot);
    }
  }

  /** @param {{ principal: string, key: string, digest: string, body: any, blob?: any, context?: any }} submitted */
  async function claimAndApply(submitted) {
    const { principal, key, digest } = submitted;
    if (plan) return planOnce(submitted);
    if (store.applyOnce) return applyOnce(submitted);
    const claim = await store.claim({ principal, key, digest, now: now(), leaseMs });
    if (claim.state !== 'claimed') return settledOrBusy(claim, digest);
    let result;
    let ran = false;
    try {
      result = await store.commit({ principal, key, token: claim.token, now: now() }, async (tx) => {
        ran = true;
        return outcomeOf(await apply(requestOf(submitted), tx));
      });
    } catch (error) {
      // Nothing committed: free the key so a retry applies it (the lease would free it anyway).
      await store.release({ principal, key, token: claim.token }).catch(() => {});
      throw error;
    }
    if (result.state === 'lost') return { state: 'busy' };
    const out = settledOrBusy(result, digest);
    // `fresh`: this call's apply decided the key (its writes committed with the outcome).
    return out.state === 'done' && ran ? { ...out, fresh: true } : out;
  }

  /**
   * One-transaction path (SQLite): claim, apply and settle commit together; if apply throws,
   * nothing is written and the key stays free.
   * @param {{ principal: string, key: string, digest: string, body: any, blob?: any, context?: any }} submitted
   */
  async function applyOnce(submitted) {
    const { principal, key, digest } = submitted;
    let ran = false;
    const result = await store.applyOnce({ principal, key, digest, now: now(), leaseMs }, async (tx) => {
      ran = true;
      return outcomeOf(await apply(requestOf(submitted), tx));
    });
    const out = settledOrBusy(result, digest);
    return out.state === 'done' && ran ? { ...out, fresh: true } : out;
  }

  /**
   * The plan path: `plan` decides (before the store is asked, so it may run again for a repeat
   * and its result is then dropped); its statements and the outcome commit together, once.
   * @param {{ principal: string, key: string, digest: string, body: any, blob?: any, context?: any }} submitted
   */
  async function planOnce(submitted) {
    const { principal, key, digest } = submitted;
    const planned = /** @type {NonNullable<typeof plan>} */ (plan)(requestOf(submitted));
    const { statements = [], ...result } = /** @type {any} */ ((await planned) ?? {});
    if (!Array.isArray(statements) || !statements.every((s) => typeof s?.text === 'string' && (s.values == null || Array.isArray(s.values)))) {
      throw new TypeError('plan must return statements as [{ text: string, values?: unknown[] }]');
    }
    const row = await /** @type {any} */ (store).writeOnce(
      { principal, key, digest, now: now(), leaseMs },
      { ...outcomeOf(result), statements },
    );
    const out = settledOrBusy(row, digest);
    return out.state === 'done' && row.fresh ? { ...out, fresh: true } : out;
  }

  /**
   * The submit as `apply` and `plan` see it.
   * @param {{ principal: string, key: string, digest: string, body: any, blob?: any, context?: any }} submitted
   */
  function requestOf({ principal, key, digest, body, blob, context }) {
    return { key, principal, body, blob: blob ?? null, digest, context };
  }

  /**
   * Checks what apply returned, splits off the HTTP status and writes the answer's text: the
   * bytes stored and sent to this request and to every repeat.
   * @param {any} answer
   */
  function outcomeOf(answer) {
    if (!answer || !['applied', 'rejected', 'accepted'].includes(answer.outcome)) {
      throw new TypeError('apply must return { outcome: "applied" | "rejected" | "accepted" }');
    }
    const { status: _s, ...stored } = answer;
    return { status: statusOf(answer), answer: stored, text: JSON.stringify(stored) };
  }

  /** @param {any} row @param {string} digest */
  function settledOrBusy(row, digest) {
    if (row.digest !== digest) return { state: 'reused' };
    if (row.state === 'pending') return { state: 'busy' };
    return { state: 'done', status: row.status, ...storedAnswer(row), fresh: false };
  }

  /**
   * A stored answer as its text (sent as it is) and its value. A store gives the text; a row
   * written by a store that kept only the value (an earlier kit's JSONB) is written out once.
   * @param {{ text?: string, answer?: unknown }} row
   */
  function storedAnswer(row) {
    if (typeof row.text === 'string') return { answer: row.answer !== undefined ? row.answer : JSON.parse(row.text), text: row.text };
    return { answer: row.answer, text: JSON.stringify(row.answer) };
  }

  return {
    handle,
    decide,
    lookup,
    init,
    purge: async (opts = {}) => {
      await init();
      return store.purge({ before: now() - retentionMs, limit: opts.limit ?? 1000 });
    },
    settle,
    close: () => store.close(),
  };

  /**
   * Completes an `accepted` outcome (a job that finishes after its answer, e.g. a run): `fn(tx,
   * answer)` runs in a transaction with the key's row locked, only while the stored outcome is
   * still `accepted`, and returns the final answer (or null to leave it accepted). Its writes and
   * the new stored answer commit together, so two processes racing to complete one key complete
   * it once. Resolves to true when this call changed the outcome.
   * @param {{ principal: string, key: string }} args
   * @param {(tx: any, answer: any) => any} fn
   */
  async function settle({ principal, key }, fn) {
    await init();
    const result = await store.settle({ principal, key, now: now() }, async (tx, answer) => {
      const next = await fn(tx, answer);
      if (next == null) return null;
      if (!['applied', 'rejected', 'accepted'].includes(next.outcome)) {
        throw new TypeError('settle must return { outcome: "applied" | "rejected" | "accepted" } or null');
      }
      return outcomeOf(next);
    });
    return result.state === 'settled';
  }
}
