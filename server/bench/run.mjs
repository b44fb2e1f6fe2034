//! The server kit's throughput (issue 39, `BENCH_ONLY=server npm run bench`): requests/s through
//! canvas-scheduler-server against a bare handler doing the same domain write, on SQLite (1
//! process) and on Postgres (1 and 4 processes), each measured in the same run. Postgres is
//! CSK_PG_URL, or a throw-away cluster started here with scripts/pg-cluster. 127.0.0.1 only;
//! each measurement is bounded in count and time. Never fails for a slow machine.
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { mkdtempSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const SERVE = new URL('./serve.mjs', import.meta.url).pathname;
const PLAN = { requests: 3000, concurrency: 16, warm: 200, deadlineMs: 20_000 };

const work = mkdtempSync(join(tmpdir(), 'csk-bench-'));
chmodSync(work, 0o755);
let pgUrl = process.env.CSK_PG_URL;
let cluster = null;
const children = new Set();
const cleanup = () => {
  for (const c of children) c.kill('SIGKILL');
  if (cluster) execFileSync(join(ROOT, 'scripts/pg-cluster'), ['stop', cluster], { stdio: 'inherit' });
  rmSync(work, { recursive: true, force: true });
};
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));

if (!pgUrl) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  cluster = join(work, 'pg');
  execFileSync(join(ROOT, 'scripts/pg-cluster'), ['start', cluster, String(port)], { stdio: 'inherit' });
  pgUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
}

async function freshPgDb(name) {
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return pgUrl.replace(/\/[^/]*$/, `/${name}`);
}

async function start(mode, engine, where) {
  const child = spawn(process.execPath, [SERVE, mode, engine, where], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  const [line] = await once(createInterface({ input: child.stdout }), 'line');
  return { child, endpoint: JSON.parse(line).listening };
}

/** Sends `n` distinct submits round-robin over the endpoints, `concurrency` at a time. */
async function load(endpoints, tag, n, deadline) {
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < n && Date.now() < deadline) {
      const i = next++;
      const id = `${tag}-${i}`;
      const body = JSON.stringify({ id, operationIds: [`${id}-op`], kind: 'shape.upsert', protocolVersion: 1, payload: { x: i, y: i, w: 10, h: 10 }, canvasIds: ['c1'] });
      const response = await fetch(`${endpoints[i % endpoints.length]}/requests`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': id }, body });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`${tag}: status ${response.status}`);
      done += 1;
    }
  };
  await Promise.all(Array.from({ length: PLAN.concurrency }, worker));
  return done;
}

async function measure(mode, engine, processes, label) {
  const where = engine === 'sqlite' ? join(work, `${label}-${mode}.sqlite`) : await freshPgDb(`bench_${label}_${mode}`);
  const servers = [];
  for (let i = 0; i < processes; i += 1) servers.push(await start(mode, engine, where));
  const endpoints = servers.map((s) => s.endpoint);
  await load(endpoints, `warm-${label}-${mode}`, PLAN.warm, Date.now() + 10_000);
  const t0 = performance.now();
  const n = await load(endpoints, `${label}-${mode}`, PLAN.requests, Date.now() + PLAN.deadlineMs);
  const seconds = (performance.now() - t0) / 1000;
  for (const s of servers) {
    s.child.kill('SIGTERM');
    children.delete(s.child);
  }
  return { n, rps: n / seconds };
}

const rows = [];
for (const [engine, processes, label] of [['sqlite', 1, 'sqlite1'], ['postgres', 1, 'pg1'], ['postgres', 4, 'pg4']]) {
  const bare = await measure('bare', engine, processes, label);
  const kit = await measure('kit', engine, processes, label);
  const overhead = 1 - kit.rps / bare.rps;
  rows.push({ engine, processes, bare, kit, overhead });
  console.log(
    `server kit ${engine} x${processes}: kit ${kit.rps.toFixed(0)} req/s (${kit.n}), bare ${bare.rps.toFixed(0)} req/s (${bare.n}), ratio ${(kit.rps / bare.rps).toFixed(2)}x, overhead ${(overhead * 100).toFixed(1)} % (target <= 25 %)`,
  );
}
process.exit(0);
