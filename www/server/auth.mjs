// Bearer-token authentication for tests: a fixed table of tokens, each naming a principal.
//
// When no table is configured the server is open and every request has principal `null`.

import { timingSafeEqual } from 'node:crypto';

/**
 * Parses `user-a:tokA,user-b:tokB` into a token → principal map.
 *
 * @param {string} spec Comma-separated `principal:token` pairs.
 * @returns {Map<string, string>}
 * @throws {Error} On an empty or malformed pair, or a token given twice.
 */
export function parseTokens(spec) {
  const tokens = new Map();
  for (const pair of spec.split(',')) {
    const at = pair.indexOf(':');
    const principal = pair.slice(0, at).trim();
    const token = pair.slice(at + 1).trim();
    if (at <= 0 || !principal || !token) {
      throw new Error(`--tokens expects principal:token pairs, got "${pair}"`);
    }
    if (tokens.has(token)) throw new Error('--tokens gives the same token twice');
    tokens.set(token, principal);
  }
  return tokens;
}

/**
 * Normalises the `tokens` option of startServer: a spec string, a Map or a plain object
 * `{principal: token}`; null/undefined means authentication is off.
 *
 * @param {string | Map<string, string> | Record<string, string> | null | undefined} tokens
 * @returns {Map<string, string> | null} token → principal
 */
export function normaliseTokens(tokens) {
  if (tokens == null) return null;
  if (typeof tokens === 'string') return parseTokens(tokens);
  if (tokens instanceof Map) return new Map(tokens);
  return parseTokens(Object.entries(tokens).map(([principal, token]) => `${principal}:${token}`).join(','));
}

/**
 * Finds the principal of an `authorization` header.
 *
 * @param {Map<string, string> | null} tokens token → principal, or null when auth is off.
 * @param {string | undefined} header The raw `authorization` header.
 * @returns {{ok: true, principal: string | null} | {ok: false}}
 */
export function authenticate(tokens, header) {
  if (!tokens) return { ok: true, principal: null };
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? '');
  if (!match) return { ok: false };
  const offered = Buffer.from(match[1]);
  // Compare against every token in constant time per token, so timing does not reveal a prefix.
  let principal = null;
  for (const [token, owner] of tokens) {
    const expected = Buffer.from(token);
    if (expected.length === offered.length && timingSafeEqual(expected, offered)) principal = owner;
  }
  return principal === null ? { ok: false } : { ok: true, principal };
}

/**
 * Whether an `x-admin-token` header carries the admin token (constant time). With no token
 * configured nothing is admitted: the admin API is off.
 *
 * @param {string | null} expected The configured admin token.
 * @param {string | string[] | undefined} header
 */
export function isAdmin(expected, header) {
  if (!expected || typeof header !== 'string') return false;
  const offered = Buffer.from(header);
  const wanted = Buffer.from(expected);
  return offered.length === wanted.length && timingSafeEqual(offered, wanted);
}
