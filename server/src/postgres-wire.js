//! The Postgres store's wire messages: its round trips as one write of extended-protocol messages
//! (PostgreSQL's "Message Formats"), sent through node-postgres's custom-query interface (the one
//! pg-cursor uses: `submit(connection)` and the `handle…` callbacks), so a request costs one
//! socket write and no SQL parsed by the database.

import { Buffer } from 'node:buffer';

/**
 * One round trip: extended-protocol messages in one write,
 * as a node-postgres custom query (the interface pg-cursor uses: `submit(connection)` and the
 * `handle…` callbacks). Resolves to the data rows' fields (text, no type parsing) once the database
 * is ready for the next query; rejects with the database's error (the database skips the messages
 * after a failing one up to the Sync).
 */
export class Round {
  /** @param {Buffer} bytes */
  constructor(bytes) {
    this.bytes = bytes;
    /** @type {(string | null)[][]} */
    this.rows = [];
    /** @type {(rows: (string | null)[][]) => void} */
    this.resolve = () => {};
    /** @type {(error: unknown) => void} */
    this.reject = () => {};
    /** @type {Promise<(string | null)[][]>} */
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
  /** @param {any} connection */
  submit(connection) {
    if (!connection.stream.writable) return new Error('the connection to the database is closed');
    connection.stream.write(this.bytes);
  }
  /** @param {{ fields: (string | null)[] }} message */
  handleDataRow(message) {
    this.rows.push(message.fields);
  }
  handleRowDescription() {}
  handleCommandComplete() {}
  handleEmptyQuery() {}
  handlePortalSuspended() {}
  /** @param {any} connection */
  handleCopyInResponse(connection) {
    connection.sendCopyFail('no COPY here');
  }
  handleCopyData() {}
  /** @param {unknown} error */
  handleError(error) {
    this.reject(error);
  }
  handleReadyForQuery() {
    this.resolve(this.rows);
  }
}

/**
 * A message: its type byte, then its length (itself included) and `body`.
 * @param {string} type @param {Buffer} body
 */
const message = (type, body) => {
  const out = Buffer.allocUnsafe(5 + body.length);
  out.write(type, 0, 'latin1');
  out.writeInt32BE(4 + body.length, 1);
  body.copy(out, 5);
  return out;
};
export const cstring = (/** @type {string} */ text) => Buffer.from(`${text}\0`, 'utf8');
const int16 = (/** @type {number} */ n) => Buffer.from([n >> 8, n & 255]);
/** Execute of the unnamed portal, all its rows. */
const EXECUTE = message('E', Buffer.concat([cstring(''), Buffer.alloc(4)]));
/** Sync: the end of a round; the database answers ReadyForQuery. */
const SYNC = message('S', Buffer.alloc(0));
/** Bind and Execute of the prepared statement `name`, without parameters. @param {string} name */
export const run = (name) =>
  Buffer.concat([message('B', Buffer.concat([cstring(''), cstring(name), int16(0), int16(0), int16(0)])), EXECUTE]);

/**
 * Parse of each statement (without parameter types) under its name, then Sync.
 * @param {{ name: string, text: string }[]} statements
 */
export const parse = (statements) =>
  Buffer.concat([...statements.map((s) => message('P', Buffer.concat([cstring(s.name), cstring(s.text), int16(0)]))), SYNC]);

/**
 * `before`, Bind of the prepared statement `name` with `values` (text) and Execute, `after`, Sync:
 * one buffer.
 * @param {Buffer} before @param {Buffer} name `name` as a C string @param {string[]} values @param {Buffer} after
 */
export function bound(before, name, values, after) {
  let size = 4 + name.length + 1 + 2 + 2 + 2;
  for (const v of values) size += 4 + Buffer.byteLength(v);
  const out = Buffer.allocUnsafe(before.length + 1 + size + EXECUTE.length + after.length + SYNC.length);
  let at = before.copy(out, 0);
  out[at++] = 0x42; // 'B'
  at = out.writeInt32BE(size, at);
  out[at++] = 0; // the unnamed portal
  at += name.copy(out, at);
  at = out.writeInt16BE(0, at); // every parameter as text
  at = out.writeInt16BE(values.length, at);
  for (const v of values) {
    const length = out.write(v, at + 4, 'utf8');
    at = out.writeInt32BE(length, at) + length;
  }
  at = out.writeInt16BE(0, at); // every result column as text
  at += EXECUTE.copy(out, at);
  at += after.copy(out, at);
  SYNC.copy(out, at);
  return out;
}

/**
 * Parse of `text` as the unnamed statement, Bind of it with `values` (text, or null for NULL) to
 * the unnamed portal, and Execute: a statement with its values, planned by the database as
 * node-postgres's own parameterized `query(text, values)` is.
 * @param {string} text @param {(string | null)[]} values
 */
export function statement(text, values) {
  const parse = message('P', Buffer.concat([cstring(''), cstring(text), int16(0)]));
  const parts = [cstring(''), cstring(''), int16(0), int16(values.length)];
  for (const v of values) {
    if (v == null) {
      parts.push(Buffer.from([255, 255, 255, 255]));
      continue;
    }
    const bytes = Buffer.from(v, 'utf8');
    const length = Buffer.allocUnsafe(4);
    length.writeInt32BE(bytes.length);
    parts.push(length, bytes);
  }
  parts.push(int16(0));
  return Buffer.concat([parse, message('B', Buffer.concat(parts)), EXECUTE]);
}

