//! The node:http adapter's own cases: a body with no declared length is counted as it arrives
//! and refused past the limit (the connection then closes instead of reading the rest), and any
//! web handler other than the kit's is served through a web Request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createKit, toNodeHandler } from '../src/index.js';
import { sqliteEngine } from './engines.mjs';

/** @param {(req: any, res: any) => void} handler */
async function listen(handler) {
  const server = createServer(handler);
  await new Promise((ready) => server.listen(0, '127.0.0.1', () => ready(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((closed) => (server.close(closed), server.closeAllConnections())) };
}

test('node:http: a chunked body past maxBodyBytes is refused 413 as it arrives, and the connection closes', async () => {
  const engine = await sqliteEngine();
  let applied = 0;
  const kit = createKit({ store: engine.store, limits: { maxBodyBytes: 1_000, maxBlobBytes: 1_000 }, apply: () => ((applied += 1), { outcome: 'applied' }) });
  const server = await listen(toNodeHandler(kit.handle));
  let sent = 0;
  const chunk = new TextEncoder().encode('x'.repeat(1_000));
  // No content-length: a stream that would go on for 10 MB if the server kept reading.
  const body = new ReadableStream({
    pull(controller) {
      if (sent >= 10_000) return controller.close();
      sent += 1;
      controller.enqueue(chunk);
    },
  });
  const response = await fetch(`${server.url}/v1/requests`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, duplex: 'half' });
  assert.equal(response.status, 413);
  assert.equal(response.headers.get('connection'), 'close');
  assert.equal((await response.json()).error.code, 'body_too_large');
  assert.ok(sent < 10_000, `the server stopped reading (${sent} of 10000 chunks pulled)`);
  assert.equal(applied, 0);
  await server.close();
  await kit.close();
  await engine.close();
});

test('node:http: another web handler is served through a web Request and Response', async () => {
  const server = await listen(
    toNodeHandler(async (request) => new Response(JSON.stringify({ method: request.method, path: new URL(request.url).pathname, body: await request.text(), user: request.headers.get('x-user') }), { status: 201, headers: { 'x-echo': '1' } })),
  );
  const response = await fetch(`${server.url}/v1/echo`, { method: 'POST', headers: { 'x-user': 'ann' }, body: 'hello' });
  assert.equal(response.status, 201);
  assert.equal(response.headers.get('x-echo'), '1');
  assert.deepEqual(await response.json(), { method: 'POST', path: '/v1/echo', body: 'hello', user: 'ann' });
  await server.close();
});
