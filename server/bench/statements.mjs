//! What the database spends on the kit's statements (`node server/bench/statements.mjs`):
//! one connection, one request at a time, the backend's own CPU time per request (from /proc:
//! Linux) for the bare handler's transaction (BEGIN, the domain INSERT, COMMIT) and for the
//! kit's `apply` transaction (BEGIN, the head, the domain INSERT, the outcome INSERT, COMMIT), and
//! the kit's with one of its parts changed each: the head's `set_config` or its advisory lock left
//! out, the answer as JSONB (as kit 0.1.0 kept it) instead of TEXT, no settled index. Each
//! statement is a round trip of its own here, as the kit sends them on a pool of the default kind,
//! so the figures compare the statements' work. `synchronous_commit = off`: the
//! commit's flush is a wait, not CPU. Postgres is CSK_PG_URL, or a throw-away cluster started
//! here (scripts/pg-cluster) on 127.0.0.1. Bounded: STATEMENTS_N requests per mix and round.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { postgresStore } from '../src/index.js';
import { processCpu } from './proc-cpu.mjs';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const N = Math.max(100, Math.min(20_000, Number(process.env.STATEMENTS_N ?? 4000)));
const ROUNDS = 3;
let url = process.env.CSK_PG_URL;
const work = mkdtempSync(join(tmpdir(), 'csk-statements-'));
chmodSync(work, 0o755);
let cluster = null;
process.on('exit', () => {
  if (cluster) execFileSync(join(ROOT, 'scripts/pg-cluster'), ['stop', cluster], { stdio: 'inherit' });
  rmSync(work, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
if (!url) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  cluster = join(work, 'pg');
  execFileSync(join(ROOT, 'scripts/pg-cluster'), ['start', cluster, String(port)], { stdio: 'inherit' });
  url = `postgres://postgres@127.0.0.1:${port}/postgres`;
}

const client = new pg.Client({ connectionString: url });
await client.connect();
await client.query('SET synchronous_commit = off');
const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
/** The backend's CPU time in ms. */
const cpu = (of = pid) => processCpu(of).ms;

// The kit's table (postgres.js) three ways: as the kit makes it, with TEXT answers, without the
// settled index.
const table = (name, answer, index) => `
  DROP TABLE IF EXISTS ${name};
  CREATE TABLE ${name} (principal TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'done')), token BIGINT NOT NULL, lease_until BIGINT NOT NULL,
    status INTEGER, answer ${answer}, settled_at BIGINT, PRIMARY KEY (principal, key));
  ${index ? `CREATE INDEX ${name}_settled ON ${name} (settled_at) WHERE state = 'done';` : ''}`;
await client.query(`DROP TABLE IF EXISTS csk_notes; CREATE TABLE csk_notes (principal TEXT, key TEXT, payload TEXT);
  ${table('csk_kit', 'TEXT', true)} ${table('csk_jsonb', 'JSONB', true)} ${table('csk_noindex', 'TEXT', false)}`);

const answer = JSON.stringify({ protocolVersion: 1, outcome: 'applied', canonicalState: { x: 1, y: 2, w: 10, h: 10 } });
// The head and the outcome INSERT as postgres-schema.js writes them, prepared once (named).
const head = (T, config = true, lock = true) => ({
  name: `head_${T}_${config}_${lock}`,
  text: `SELECT ${config ? "set_config('idle_in_transaction_session_timeout', $3, true)" : '$3::text'} AS lease,
    ${lock ? `pg_try_advisory_xact_lock(hashtext('${T}'), hashtext(length($1) || ':' || $1 || $2))` : 'true'} AS mine,
    t.digest, t.state, t.token, t.lease_until, t.status, t.answer
    FROM (SELECT 1) AS one LEFT JOIN ${T} AS t ON t.principal = $1 AND t.key = $2`,
});
const done = (T) => ({
  name: `done_${T}`,
  text: `INSERT INTO ${T} (principal, key, digest, state, token, lease_until, status, answer, settled_at) VALUES ($1, $2, $3, 'done', 1, $4, $5, $6, $4)`,
});
const note = { name: 'note', text: 'INSERT INTO csk_notes VALUES ($1, $2, $3)' };
let next = 0;
const bareTx = async () => {
  const key = `k${next++}`;
  await client.query('BEGIN');
  await client.query({ ...note, values: ['anonymous', key, '{"x":1}'] });
  await client.query('COMMIT');
};
const kitTx = async (T, config, lock) => {
  const key = `k${next++}`;
  await client.query('BEGIN');
  await client.query({ ...head(T, config, lock), values: ['anonymous', key, '5000'] });
  await client.query({ ...note, values: ['anonymous', key, '{"x":1}'] });
  await client.query({ ...done(T), values: ['anonymous', key, 'a'.repeat(43), Date.now(), 200, answer] });
  await client.query('COMMIT');
};
// The kit's own applyOnce, as it runs, on a pool of one connection, and the bare transaction on
// that connection.
// Its one connection kept while the other mixes run (the backend measured must stay the same).
const pool = new pg.Pool({ connectionString: url, max: 1, idleTimeoutMillis: 0 });
pool.on('connect', (c) => void c.query('SET synchronous_commit = off'));
const store = postgresStore({ pool, table: 'csk_real' });
await store.init();
const poolPid = (await pool.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
const kitApply = () => {
  const key = `k${next++}`;
  return store.applyOnce({ principal: 'anonymous', key, digest: 'a'.repeat(43), now: Date.now(), leaseMs: 5000 }, async (tx) => {
    await tx.query({ ...note, values: ['anonymous', key, '{"x":1}'] });
    return { status: 200, answer: JSON.parse(answer), text: answer };
  });
};
const poolBareTx = async () => {
  const key = `k${next++}`;
  const tx = await pool.connect();
  try {
    await tx.query('BEGIN');
    await tx.query({ ...note, values: ['anonymous', key, '{"x":1}'] });
    await tx.query('COMMIT');
  } finally {
    tx.release();
  }
};
const mixes = [
  ['bare in a transaction, one statement a round trip', poolBareTx, poolPid],
  ["the kit's applyOnce, as it runs", kitApply, poolPid],
  ['bare in a transaction', bareTx],
  ['the kit (apply)', () => kitTx('csk_kit')],
  ['the kit, no set_config', () => kitTx('csk_kit', false)],
  ['the kit, no advisory lock', () => kitTx('csk_kit', true, false)],
  ['the kit, answer as JSONB', () => kitTx('csk_jsonb')],
  ['the kit, no settled index', () => kitTx('csk_noindex')],
];
const results = new Map(mixes.map(([name]) => [name, []]));
for (let round = 0; round < ROUNDS; round += 1) {
  for (const [name, run, backend] of mixes) {
    for (let i = 0; i < 300; i += 1) await run();
    const before = cpu(backend);
    for (let i = 0; i < N; i += 1) await run();
    results.get(name).push((1000 * (cpu(backend) - before)) / N);
  }
}
await client.end();
await pool.end();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(results.get('bare in a transaction, one statement a round trip'));
for (const [name, us] of results) {
  console.log(`statements: ${name}: ${median(us).toFixed(1)} us of backend CPU per request (rounds ${us.map((u) => u.toFixed(1)).join(', ')}), ${(median(us) / base).toFixed(2)}x bare in a transaction`);
}
process.exit(0);
