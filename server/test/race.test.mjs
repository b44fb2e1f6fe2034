//! Races across processes: 50 concurrent submits of one key spread over 4
//! server processes on one Postgres apply once, and all 50 get the first answer's exact bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { postgresEngine } from './engines.mjs';

const fixture = new URL('./fixtures/serve.mjs', import.meta.url).pathname;

/** @param {string} url */
async function startServer(url) {
  const child = spawn(process.execPath, [fixture, url], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const [line] = await Promise.race([
    once(lines, 'line'),
    new Promise((_, reject) => setTimeout(() => reject(new Error('server did not start')), 10_000)),
  ]);
  return { child, endpoint: JSON.parse(line).listening };
}

test("postgres: 50 concurrent submits of one key over 4 processes apply once, and all get the first answer's bytes", { skip: !process.env.CSK_PG_URL, timeout: 60_000 }, async () => {
  const engine = await postgresEngine();
  await engine.store.init();
  const servers = await Promise.all([0, 1, 2, 3].map(() => startServer(engine.url)));
  try {
    const body = JSON.stringify({ id: 'one-key', operationIds: ['op'], kind: 'note.add', protocolVersion: 1, payload: { n: 1 }, canvasIds: ['c'] });
    const ask = async (i) => {
      const { endpoint } = servers[i % 4];
      let response = await fetch(`${endpoint}/requests`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'one-key' }, body });
      for (let tries = 0; response.status === 409 && tries < 300; tries += 1) {
        await response.arrayBuffer();
        await new Promise((r) => setTimeout(r, 10));
        response = await fetch(`${endpoint}/requests/one-key`);
      }
      return `${response.status} ${await response.text()}`;
    };
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => ask(i)));
    assert.deepEqual(new Set(answers), new Set(['200 {"canonical":{"key":"one-key","by":"serve.mjs"},"outcome":"applied"}']));
    assert.equal(await engine.count('anonymous', 'one-key'), 1);
  } finally {
    for (const { child } of servers) child.kill('SIGKILL');
    await engine.store.close();
    await engine.close();
  }
});
