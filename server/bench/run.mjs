//! The server kit's throughput (`BENCH_ONLY=server npm run bench`): requests/s through
//! canvas-scheduler-server (with `plan`, and with `apply`) against a bare handler doing the same
//! domain write, on SQLite (1 process) and on Postgres (1 and 4 processes); and, for `apply`, a
//! bare handler doing the write inside BEGIN … COMMIT (what code run between a check and a commit
//! costs without the kit: `apply`'s floor). The four are measured
//! back to back, ROUNDS times, the order rotating each round, each time on a fresh SQLite file
//! or database; the table gives medians, the ratio's range, and the servers' CPU time per request
//! (steadier than requests/s on a shared machine). Postgres is CSK_PG_URL, or a throw-away cluster
//! started here with scripts/pg-cluster (fsync on). 127.0.0.1 only; each measurement is bounded
//! in count and time. Never fails for a slow machine.
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { mkdtempSync, chmodSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { postgresCpu, postgresCpuSince, postmasterOf } from './proc-cpu.mjs';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const SERVE = new URL('./serve.mjs', import.meta.url).pathname;
// Per process: `concurrency` requests in flight (a load that 4 processes are run for keeps each
// of them as busy as a load for 1 keeps it) and `warm` warm-up requests (a server that has run a
// while has its code compiled: with 500, the 4-process runs measured V8's compiler threads, and
// the bare handler's CPU per request fell from 498 to 252 us with 2,000).
const PLAN = { requests: Number(process.env.BENCH_SERVER_REQUESTS ?? 6000), concurrency: 16, warm: Number(process.env.BENCH_SERVER_WARM ?? 2000), deadlineMs: 20_000 };
const ONLY = process.env.BENCH_SERVER_ONLY?.split(','); // e.g. pg1,pg4: those configurations only
const VERBOSE = Boolean(process.env.BENCH_SERVER_VERBOSE); // each measurement as it ends
const ROUNDS = Math.max(1, Math.min(9, Number(process.env.BENCH_SERVER_ROUNDS ?? 3)));

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
// The database's CPU: this cluster's processes when it is the one started here, else every
// Postgres process on the machine.
const postmaster = cluster ? postmasterOf(cluster) : undefined;

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

/** Sends `n` distinct submits round-robin over the endpoints, `concurrency` per endpoint at a time. */
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
  await Promise.all(Array.from({ length: PLAN.concurrency * endpoints.length }, worker));
  return done;
}

/** The servers' CPU time in ms (summed), resetting each one's count when `reset`. */
async function serverCpu(endpoints, reset = false) {
  let ms = 0;
  for (const endpoint of endpoints) {
    const response = await fetch(`${new URL(endpoint).origin}/bench/cpu${reset ? '?reset' : ''}`);
    ms += (await response.json()).cpuMs;
  }
  return ms;
}

async function measure(mode, engine, processes, label) {
  const where = engine === 'sqlite' ? join(work, `${label}-${mode}.sqlite`) : await freshPgDb(`bench_${label}_${mode}`);
  const servers = [];
  for (let i = 0; i < processes; i += 1) servers.push(await start(mode, engine, where));
  const endpoints = servers.map((s) => s.endpoint);
  await load(endpoints, `warm-${label}-${mode}`, PLAN.warm * processes, Date.now() + 20_000);
  await serverCpu(endpoints, true);
  const database = postgresCpu(postmaster);
  const loader = process.cpuUsage();
  const t0 = performance.now();
  const n = await load(endpoints, `${label}-${mode}`, PLAN.requests, Date.now() + PLAN.deadlineMs);
  const seconds = (performance.now() - t0) / 1000;
  const cpuUs = (1000 * (await serverCpu(endpoints))) / n;
  const dbUs = (1000 * postgresCpuSince(database, postmaster)) / n;
  const used = process.cpuUsage(loader);
  const loadUs = (used.user + used.system) / n;
  for (const s of servers) {
    s.child.kill('SIGTERM');
    children.delete(s.child);
  }
  if (engine === 'sqlite') rmSync(where, { force: true });
  return { n, rps: n / seconds, cpuUs, dbUs, loadUs };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const CONFIGS = [['sqlite', 1, 'sqlite1'], ['postgres', 1, 'pg1'], ['postgres', 4, 'pg4']];
// The kit two ways (`plan`: the outcome and its statements given up front, written with no read
// first; `apply`: the app's code writes through `tx` in the transaction) and the bare handler,
// in an order that rotates each round.
const MODES = ['bare', 'plan', 'kit', 'baretx'];
for (const [engine, processes, label] of CONFIGS.filter(([, , l]) => !ONLY || ONLY.includes(l))) {
  const runs = { kit: [], plan: [], bare: [], baretx: [] };
  const ratios = { kit: [], plan: [], floor: [] };
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = MODES.map((_, i) => MODES[(i + round) % MODES.length]);
    const measured = {};
    for (const mode of order) {
      measured[mode] = await measure(mode, engine, processes, `${label}_r${round}`);
      if (VERBOSE) console.log(`  ${label} round ${round} ${mode}: ${measured[mode].rps.toFixed(0)} req/s, ${measured[mode].cpuUs.toFixed(0)} us CPU per request (database ${measured[mode].dbUs.toFixed(0)}, load generator ${measured[mode].loadUs.toFixed(0)}), load ${loadavg()[0].toFixed(2)}`);
    }
    for (const mode of MODES) runs[mode].push(measured[mode]);
    for (const mode of ['plan', 'kit']) ratios[mode].push(measured[mode].rps / measured.bare.rps);
    ratios.floor.push(measured.kit.rps / measured.baretx.rps);
  }
  const rps = (mode) => median(runs[mode].map((r) => r.rps));
  const cpu = (mode) => median(runs[mode].map((r) => r.cpuUs));
  const db = (mode) => median(runs[mode].map((r) => r.dbUs));
  // SQLite runs inside the server process: its CPU is the server's.
  const dbNote = (mode, base, label) => (engine === 'postgres' ? `; database CPU per request: ${db(mode).toFixed(0)} us, ${label} ${db(base).toFixed(0)} us` : '');
  for (const [mode, name] of [['plan', 'kit (plan)'], ['kit', 'kit (apply)']]) {
    const ratio = median(ratios[mode]);
    console.log(
      `server ${name} ${engine} x${processes}: ${rps(mode).toFixed(0)} req/s, bare ${rps('bare').toFixed(0)} req/s (medians of ${ROUNDS}), ` +
        `kit/bare ${ratio.toFixed(2)}x (rounds ${ratios[mode].map((r) => r.toFixed(2)).join(', ')}), overhead ${((1 - ratio) * 100).toFixed(1)} % (target <= 25 %); ` +
        `server CPU per request: ${cpu(mode).toFixed(0)} us, bare ${cpu('bare').toFixed(0)} us${dbNote(mode, 'bare', 'bare')}`,
    );
  }
  const floor = median(ratios.floor);
  console.log(
    `server kit (apply) ${engine} x${processes} against bare in a transaction: ${rps('kit').toFixed(0)} req/s, bare in BEGIN … COMMIT ${rps('baretx').toFixed(0)} req/s, ` +
      `ratio ${floor.toFixed(2)}x (rounds ${ratios.floor.map((r) => r.toFixed(2)).join(', ')}); server CPU per request ${cpu('kit').toFixed(0)} us, bare in a transaction ${cpu('baretx').toFixed(0)} us${dbNote('kit', 'baretx', 'bare in a transaction')}`,
  );
}
process.exit(0);
