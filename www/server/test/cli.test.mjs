// The command line: one JSON line when ready, 127.0.0.1 only, clean exit on SIGTERM.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { startServer } from '../server.mjs';
import { query, submit, testDb, upsert } from '../testing/helpers.mjs';

const SERVER = fileURLToPath(new URL('../server.mjs', import.meta.url));

function spawnServer(args) {
  const child = spawn(process.execPath, [SERVER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = once(child, 'exit');
  const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  exited.finally(() => clearTimeout(killer));
  return { child, exited, output: () => ({ stdout, stderr }) };
}

test('prints {"listening": url} once ready, serves, and exits 0 on SIGTERM', async (t) => {
  const db = await testDb(t, 'cli.sqlite');
  const server = spawnServer(['--port', '0', '--host', '127.0.0.1', '--db', db, '--run-apply-ms', '100']);
  t.after(() => server.child.kill('SIGKILL'));
  const [firstLine] = await Promise.race([
    once(server.child.stdout, 'data'),
    server.exited.then(() => {
      throw new Error(`server exited early: ${server.output().stderr}`);
    }),
  ]);
  const line = firstLine.toString().split('\n')[0];
  const { listening } = JSON.parse(line);
  assert.match(listening, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal((await submit(listening, upsert('r1', 'c1', 's1', {}))).status, 200);
  assert.equal((await query(listening, 'r1')).body.outcome, 'applied');
  server.child.kill('SIGTERM');
  const [code, signal] = await server.exited;
  assert.equal(signal, null);
  assert.equal(code, 0);
  assert.equal(server.output().stdout, `${line}\n`, 'stdout holds exactly the one line');
});

test('refuses to listen anywhere but 127.0.0.1', async (t) => {
  const db = await testDb(t, 'cli.sqlite');
  const server = spawnServer(['--port', '0', '--host', '0.0.0.0', '--db', db]);
  const [code] = await server.exited;
  assert.notEqual(code, 0);
  assert.match(server.output().stderr, /only listens on 127\.0\.0\.1/);
  assert.equal(server.output().stdout, '');
  await assert.rejects(startServer({ port: 0, host: 'localhost', db }), /only listens on 127\.0\.0\.1/);
});

test('unknown flags and a missing db are usage errors', async () => {
  const unknown = spawnServer(['--port', '0', '--db', ':memory:', '--bogus']);
  assert.equal((await unknown.exited)[0], 2);
  const noDb = spawnServer(['--port', '0']);
  assert.notEqual((await noDb.exited)[0], 0);
  assert.match(noDb.output().stderr, /db is required/);
});

test('--batches on|off', async () => {
  const { parseCliArgs, resolveOptions } = await import('../config.mjs');
  assert.equal(resolveOptions(parseCliArgs(['--db', ':memory:', '--batches', 'off'])).batches, false);
  assert.equal(resolveOptions(parseCliArgs(['--db', ':memory:', '--batches', 'on'])).batches, true);
  assert.equal(resolveOptions(parseCliArgs(['--db', ':memory:'])).batches, true);
  assert.throws(() => parseCliArgs(['--db', ':memory:', '--batches', 'maybe']), /--batches must be on or off/);
});
