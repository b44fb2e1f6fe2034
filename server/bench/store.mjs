//! The kit on Postgres without HTTP (`node server/bench/store.mjs [OTHER/server]`): what a submit
//! costs in CPU, Node's and the database's, through `kit.decide` with `apply` and with `plan`,
//! against the bare handlers' writes (one autocommit INSERT; the INSERT inside BEGIN … COMMIT), in
//! one process: 16 submits in flight on a pool of 8 (of the default kind, and in pg's pipeline
//! mode), a fresh table each measurement. Given another tree's `server/` directory, that tree's
//! kit is measured too, in the same rounds, the mixes rotating each round: an A/B of two trees
//! under the same load. CPU time per request is steadier than requests per second on a shared
//! machine; the database's is its cluster's processes (from /proc: Linux). Postgres is
//! CSK_PG_URL, or a throw-away cluster started here (scripts/pg-cluster, fsync on) on 127.0.0.1.
//! Bounded: STORE_N submits a mix and round (default 3 000, after 500 to warm up), STORE_ROUNDS
//! rounds (default 5).
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { postgresCpu, postgresCpuSince, postmasterOf } from './proc-cpu.mjs';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const N = Math.max(200, Math.min(20_000, Number(process.env.STORE_N ?? 3000)));
const ROUNDS = Math.max(1, Math.min(15, Number(process.env.STORE_ROUNDS ?? 5)));
const LANES = 16;
const other = process.argv[2] ? resolve(process.argv[2]) : null;

const work = mkdtempSync(join(tmpdir(), 'csk-store-'));
chmodSync(work, 0o755);
let url = process.env.CSK_PG_URL;
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
const postmaster = cluster ? postmasterOf(cluster) : undefined;

const kits = { this: await import('../src/index.js') };
if (other) kits.other = await import(join(other, 'src/index.js'));

const NOTE = 'INSERT INTO bench_notes VALUES ($1, $2, $3)';
const answer = { outcome: 'applied', canonical: { x: 1, y: 2, w: 10, h: 10 } };
let table = 0;

/** A fresh table set and a pool (`pipeline`: pg's pipeline mode) for one measurement. */
async function fresh(pipeline = false) {
  const pool = new pg.Pool({ connectionString: url, max: 8, pipeline });
  const T = `csk_bench_${(table += 1)}`;
  await pool.query(`DROP TABLE IF EXISTS bench_notes; CREATE TABLE bench_notes (principal TEXT, key TEXT, payload TEXT)`);
  return { pool, T };
}

/** The mixes: each gives a submit function for a fresh setup. */
const mixes = {
  bare: async () => {
    const { pool } = await fresh();
    return { pool, T: null, submit: (key) => pool.query(NOTE, ['anonymous', key, '{"x":1}']) };
  },
  'bare in a transaction': async () => {
    const { pool } = await fresh();
    return {
      pool,
      T: null,
      submit: async (key) => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await client.query(NOTE, ['anonymous', key, '{"x":1}']);
          await client.query('COMMIT');
        } finally {
          client.release();
        }
      },
    };
  },
};
for (const [tree, kit] of Object.entries(kits)) {
  for (const pipeline of [false, true]) {
    const pool = pipeline ? ', pipeline pool' : '';
    mixes[`${tree}: apply${pool}`] = async () => {
      const { pool: p, T } = await fresh(pipeline);
      const k = kit.createKit({
        store: kit.postgresStore({ pool: p, table: T }),
        apply: async (request, tx) => {
          await tx.query(NOTE, [request.principal, request.key, '{"x":1}']);
          return answer;
        },
      });
      await k.init();
      return { pool: p, T, submit: (key) => k.decide({ principal: 'anonymous', key, digest: 'd', body: {} }) };
    };
    mixes[`${tree}: plan${pool}`] = async () => {
      const { pool: p, T } = await fresh(pipeline);
      const k = kit.createKit({
        store: kit.postgresStore({ pool: p, table: T }),
        plan: (request) => ({ ...answer, statements: [{ text: NOTE, values: [request.principal, request.key, '{"x":1}'] }] }),
      });
      await k.init();
      return { pool: p, T, submit: (key) => k.decide({ principal: 'anonymous', key, digest: 'd', body: {} }) };
    };
  }
}

/** `n` submits of new keys, LANES at a time. */
async function drive(submit, tag, n) {
  let next = 0;
  const lane = async () => {
    while (next < n) await submit(`${tag}-${next++}`);
  };
  await Promise.all(Array.from({ length: LANES }, lane));
}

const names = Object.keys(mixes);
const results = new Map(names.map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round += 1) {
  const order = names.map((_, i) => names[(i + round) % names.length]);
  for (const name of order) {
    const { pool, T, submit } = await mixes[name]();
    await drive(submit, `warm-${round}`, 500);
    const node = process.cpuUsage();
    const database = postgresCpu(postmaster);
    const t0 = performance.now();
    await drive(submit, `r${round}`, N);
    const seconds = (performance.now() - t0) / 1000;
    const used = process.cpuUsage(node);
    results.get(name).push({ node: (used.user + used.system) / N, db: (1000 * postgresCpuSince(database, postmaster)) / N, rps: N / seconds });
    if (T) await pool.query(`DROP TABLE ${T}`);
    await pool.end();
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [name, runs] of results) {
  const node = median(runs.map((r) => r.node));
  const db = median(runs.map((r) => r.db));
  console.log(
    `store: ${name}: Node ${node.toFixed(0)} us + database ${db.toFixed(0)} us = ${(node + db).toFixed(0)} us CPU per submit ` +
      `(Node rounds ${runs.map((r) => r.node.toFixed(0)).join(', ')}; database ${runs.map((r) => r.db.toFixed(0)).join(', ')}), ${median(runs.map((r) => r.rps)).toFixed(0)} submits/s`,
  );
}
process.exit(0);
