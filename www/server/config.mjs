// Server options: defaults, validation, and the command line that produces them.

import { parseArgs } from 'node:util';

import { normaliseTokens } from './auth.mjs';
import { validateFaults } from './faults.mjs';

/** The only address this server may listen on: it is a test server, never exposed. */
export const ALLOWED_HOST = '127.0.0.1';

/**
 * @typedef {object} ServerOptions
 * @property {number} [port] TCP port; 0 picks a free one. Default 0.
 * @property {string} [host] Must be `127.0.0.1` (the default).
 * @property {string} db SQLite file path (`:memory:` for a throw-away store), or a postgres:// URL.
 * @property {number} [runApplyMs] Delay from accepting a run.start to applying it. Default 300.
 * @property {string | Map<string, string> | Record<string, string> | null} [tokens] Bearer
 *   tokens: `"user-a:tokA,user-b:tokB"`, a Map token → principal, or `{principal: token}`.
 *   Absent = no authentication.
 * @property {Partial<import('./faults.mjs').FaultConfig>} [faults] Initial fault settings (also
 *   what /admin/reset returns to).
 * @property {number} [maxBodyBytes] Bound on a JSON body or `request` part. Default 1 MiB.
 * @property {number} [maxBlobBytes] Bound on an upload's blob. Default 16 MiB.
 * @property {() => number} [now] Clock, for tests. Default Date.now.
 * @property {boolean} [fsync] Whether a commit waits for the disk (SQLite `synchronous = FULL`,
 *   Postgres `synchronous_commit = on`). Default true; false only to measure what the server's
 *   flush costs (`npm run bench`'s durability matrix).
 * @property {string | null} [adminToken] The token `/admin/*` requires in an `x-admin-token`
 *   header (8..256 characters). Absent = the admin API is off (every admin route answers 404).
 * @property {boolean} [batches] Whether requests of several operations (batches) are taken.
 *   Default true; false declines each one (422 `batch_not_supported`, nothing applied), as a
 *   server without batches answers them.
 */

/**
 * @typedef {object} ResolvedOptions
 * @property {number} port
 * @property {string} host
 * @property {string} db
 * @property {number} runApplyMs
 * @property {Map<string, string> | null} tokens
 * @property {Partial<import('./faults.mjs').FaultConfig>} faults
 * @property {number} maxBodyBytes
 * @property {number} maxBlobBytes
 * @property {() => number} now
 * @property {boolean} fsync
 * @property {boolean} batches
 */

function integerIn(name, value, min, max) {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer in [${min}, ${max}], got ${value}`);
  }
  return value;
}

/**
 * Applies defaults and checks every option.
 *
 * @param {ServerOptions} options
 * @returns {ResolvedOptions}
 * @throws {Error} On any invalid option, including a host other than 127.0.0.1.
 */
export function resolveOptions(options) {
  const host = options.host ?? ALLOWED_HOST;
  if (host !== ALLOWED_HOST) {
    throw new Error(`refusing to listen on ${host}: this test server only listens on ${ALLOWED_HOST}`);
  }
  if (typeof options.db !== 'string' || options.db.length === 0) {
    throw new Error('db is required: a SQLite file path, :memory:, or a postgres:// URL');
  }
  return {
    port: integerIn('port', options.port ?? 0, 0, 65_535),
    host,
    db: options.db,
    runApplyMs: integerIn('runApplyMs', options.runApplyMs ?? 300, 0, 3_600_000),
    tokens: normaliseTokens(options.tokens),
    faults: validateFaults(options.faults ?? {}),
    maxBodyBytes: integerIn('maxBodyBytes', options.maxBodyBytes ?? 1024 * 1024, 1024, 64 * 1024 * 1024),
    maxBlobBytes: integerIn('maxBlobBytes', options.maxBlobBytes ?? 16 * 1024 * 1024, 1, 1024 * 1024 * 1024),
    now: options.now ?? Date.now,
    fsync: fsyncOf(options.fsync),
    adminToken: adminTokenOf(options.adminToken),
    batches: booleanOf('batches', options.batches),
  };
}

function booleanOf(name, value) {
  if (value === undefined) return true;
  if (typeof value !== 'boolean') throw new Error(`${name} must be true or false, got ${value}`);
  return value;
}

function fsyncOf(fsync) {
  if (fsync === undefined) return true;
  if (typeof fsync !== 'boolean') throw new Error(`fsync must be true or false, got ${fsync}`);
  return fsync;
}

function adminTokenOf(token) {
  if (token == null) return null;
  if (typeof token !== 'string' || token.length < 8 || token.length > 256 || /\s/.test(token)) {
    throw new Error('adminToken must be 8..256 characters without spaces');
  }
  return token;
}

export const USAGE = `usage: node server.mjs --db PATH|postgres://… [--port 0] [--host 127.0.0.1] [--run-apply-ms 300]
                      [--tokens user-a:tokA,user-b:tokB] [--seed N]
                      [--max-body-bytes N] [--max-blob-bytes N] [--admin-token TOKEN]
                      [--fsync on|off] [--batches on|off]
  /admin/* answers only with --admin-token, to requests sending x-admin-token: TOKEN.
  --fsync off: commits do not wait for the disk (to measure what the flush costs; never for data).
  --batches off: requests of several operations are declined (422 batch_not_supported).`;

function onOff(name, text) {
  if (text === undefined) return undefined;
  if (text !== 'on' && text !== 'off') throw new Error(`--${name} must be on or off, got "${text}"`);
  return text === 'on';
}

function integerArg(name, text) {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw new Error(`--${name} must be a non-negative integer, got "${text}"`);
  return Number(text);
}

/**
 * Parses the command line into {@link ServerOptions} (still to be resolved).
 *
 * @param {string[]} argv Arguments after the script name.
 * @returns {ServerOptions & {help?: boolean}}
 * @throws {Error} On unknown or malformed flags.
 */
export function parseCliArgs(argv) {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      db: { type: 'string' },
      'run-apply-ms': { type: 'string' },
      tokens: { type: 'string' },
      seed: { type: 'string' },
      'max-body-bytes': { type: 'string' },
      'max-blob-bytes': { type: 'string' },
      'admin-token': { type: 'string' },
      fsync: { type: 'string' },
      batches: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  const seed = integerArg('seed', values.seed);
  return {
    help: values.help ?? false,
    port: integerArg('port', values.port),
    host: values.host,
    db: values.db,
    runApplyMs: integerArg('run-apply-ms', values['run-apply-ms']),
    tokens: values.tokens,
    faults: seed === undefined ? {} : { seed },
    maxBodyBytes: integerArg('max-body-bytes', values['max-body-bytes']),
    maxBlobBytes: integerArg('max-blob-bytes', values['max-blob-bytes']),
    adminToken: values['admin-token'],
    fsync: onOff('fsync', values.fsync),
    batches: onOff('batches', values.batches),
  };
}
