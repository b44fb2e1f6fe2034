//! One benchmark server process: `node serve.mjs kit|plan|bare|baretx sqlite|postgres DB` listens
//! on 127.0.0.1 and prints {"listening": url}. Every mode does the same domain write (one row per
//! request, the statement prepared once on SQLite); `kit` goes through canvas-scheduler-server
//! (its node:http adapter, as an app mounts it) with `apply` writing through `tx`, `plan` through
//! it with a `plan` giving the same statement, `bare` parses the JSON and writes, `baretx` does
//! bare's write inside BEGIN … COMMIT (on Postgres three round trips, as any code that must run
//! between a check and a commit pays).
import { createServer } from 'node:http';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createKit, sqliteStore, postgresStore, toNodeHandler } from '../src/index.js';

const [mode, engine, where] = process.argv.slice(2);
const DOMAIN = 'CREATE TABLE IF NOT EXISTS bench_notes (principal TEXT, key TEXT, payload TEXT)';

let handler;
if (engine === 'sqlite') {
  const db = new Database(where);
  db.pragma('journal_mode = WAL');
  db.exec(DOMAIN);
  const insert = db.prepare('INSERT INTO bench_notes VALUES (?, ?, ?)');
  if (mode === 'plan') {
    const kit = createKit({
      store: sqliteStore({ db }),
      plan: (request) => ({
        outcome: 'applied',
        statements: [{ text: 'INSERT INTO bench_notes VALUES (?, ?, ?)', values: [request.principal, request.key, JSON.stringify(request.body.payload)] }],
      }),
    });
    handler = toNodeHandler(kit.handle);
  } else if (mode === 'kit') {
    const kit = createKit({
      store: sqliteStore({ db }),
      // `tx` is `db` (SQLite has one connection): the statement prepared once, as bare's.
      apply: (request) => {
        insert.run(request.principal, request.key, JSON.stringify(request.body.payload));
        return { outcome: 'applied' };
      },
    });
    handler = toNodeHandler(kit.handle);
  } else if (mode === 'baretx') {
    const write = db.transaction((body) => insert.run('anonymous', body.id, JSON.stringify(body.payload)));
    handler = bare(async (body) => void write.immediate(body));
  } else {
    handler = bare(async (body) => void insert.run('anonymous', body.id, JSON.stringify(body.payload)));
  }
} else {
  // BENCH_SERVER_POOL: connections per process (8 unless given). BENCH_SERVER_PIPELINE=1: the
  // pool in pg's pipeline mode (every mode alike; the kit then sends a step's statements at once).
  const pool = new pg.Pool({ connectionString: where, max: Number(process.env.BENCH_SERVER_POOL ?? 8), pipeline: process.env.BENCH_SERVER_PIPELINE === '1' });
  await pool.query(DOMAIN).catch(() => {});
  if (mode === 'plan') {
    const kit = createKit({
      store: postgresStore({ pool }),
      plan: (request) => ({
        outcome: 'applied',
        statements: [{ text: 'INSERT INTO bench_notes VALUES ($1, $2, $3)', values: [request.principal, request.key, JSON.stringify(request.body.payload)] }],
      }),
    });
    await kit.init();
    handler = toNodeHandler(kit.handle);
  } else if (mode === 'kit') {
    const kit = createKit({
      store: postgresStore({ pool }),
      apply: async (request, tx) => {
        await tx.query('INSERT INTO bench_notes VALUES ($1, $2, $3)', [request.principal, request.key, JSON.stringify(request.body.payload)]);
        return { outcome: 'applied' };
      },
    });
    await kit.init();
    handler = toNodeHandler(kit.handle);
  } else if (mode === 'baretx') {
    handler = bare(async (body) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('INSERT INTO bench_notes VALUES ($1, $2, $3)', ['anonymous', body.id, JSON.stringify(body.payload)]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    });
  } else {
    handler = bare(async (body) => void (await pool.query('INSERT INTO bench_notes VALUES ($1, $2, $3)', ['anonymous', body.id, JSON.stringify(body.payload)])));
  }
}

/** The baseline: read the body, parse it, write, answer — no key, no claim, no stored outcome. */
function bare(write) {
  return (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        await write(body);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"outcome":"applied"}');
      } catch {
        res.writeHead(500);
        res.end();
      }
    });
  };
}

// GET /bench/cpu: this process's CPU time (ms) since the last GET /bench/cpu?reset, so the
// runner can report CPU per request beside requests per second (steadier on a busy machine).
let cpuBase = process.cpuUsage();
const server = createServer((req, res) => {
  if (!req.url?.startsWith('/bench/cpu')) return handler(req, res);
  if (req.url.endsWith('?reset')) cpuBase = process.cpuUsage();
  const used = process.cpuUsage(cpuBase);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ cpuMs: (used.user + used.system) / 1000 }));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = /** @type {any} */ (server.address());
  console.log(JSON.stringify({ listening: `http://127.0.0.1:${port}/v1` }));
});
