//! The kit's answers as plain values (`{ status, headers, body }`): `handle` turns one into a web
//! Response, the node:http adapter writes it straight to the ServerResponse.

/** @typedef {{ status: number, headers: Record<string, string>, body: string | null }} Answer */

/**
 * @param {number} status
 * @param {unknown} body
 * @param {Record<string, string>} [headers]
 * @returns {Answer}
 */
export function json(status, body, headers = {}) {
  return jsonText(status, JSON.stringify(body), headers);
}

/**
 * An answer whose body is JSON text already (a stored outcome: sent byte for byte).
 * @param {number} status
 * @param {string} text
 * @param {Record<string, string>} [headers]
 * @returns {Answer}
 */
export function jsonText(status, text, headers = {}) {
  return { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }, body: text };
}

/** An answer without a body (409: in progress). @param {number} status @returns {Answer} */
export const empty = (status) => ({ status, headers: {}, body: null });

/** A v1 `rejected` answer. @param {number} status @param {string} code @param {string} message */
export const rejected = (status, code, message) => json(status, { outcome: 'rejected', error: { code, message } });

/** An answer that is not a protocol outcome (401, 404, 5xx). @param {number} status @param {string} code @param {string} message @param {Record<string,string>} [headers] */
export const errorAnswer = (status, code, message, headers) => json(status, { error: { code, message } }, headers);

/** @param {Answer} answer @returns {Response} */
export const toWebResponse = (answer) => new Response(answer.body, { status: answer.status, headers: answer.headers });
