// asset.upload: multipart bodies, the stored blob, and "still in progress" while one is received.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { test } from 'node:test';

import { adminState, frozen, query, startTestServer, submit, submitUpload, waitFor } from '../testing/helpers.mjs';

const upload = (id, canvasIds = ['c1']) => frozen({ id, kind: 'asset.upload', payload: { name: 'cat.png' }, canvasIds });

test('a multipart upload is stored and can be fetched back byte for byte', async (t) => {
  const { url } = await startTestServer(t);
  const bytes = randomBytes(100_000);
  const reply = await submitUpload(url, upload('u1'), new Blob([bytes], { type: 'image/png' }));
  assert.equal(reply.status, 200);
  assert.equal(reply.body.outcome, 'applied');
  const { assetId, size, contentType } = reply.body.canonical;
  assert.match(assetId, /^asset-[0-9a-f]{24}$/);
  assert.equal(size, bytes.length);
  assert.equal(contentType, 'image/png');
  assert.equal(reply.body.canonical.canvases.c1.version, 1);
  assert.deepEqual(reply.body.canonical.canvases.c1.document.assets[assetId], { size, contentType, name: 'cat.png' });

  const fetched = await fetch(`${url}/assets/${assetId}`);
  assert.equal(fetched.status, 200);
  assert.equal(fetched.headers.get('content-type'), 'image/png');
  assert.ok(Buffer.from(await fetched.arrayBuffer()).equals(bytes));
  assert.equal((await fetch(`${url}/assets/asset-nope`)).status, 404);
  // Also by the upload operation's id, which the client knew before the upload landed.
  const byOperation = await fetch(`${url}/assets/by-operation/op-u1`);
  assert.equal(byOperation.status, 200);
  assert.equal(byOperation.headers.get('content-type'), 'image/png');
  assert.ok(Buffer.from(await byOperation.arrayBuffer()).equals(bytes));
  assert.equal((await fetch(`${url}/assets/by-operation/op-nope`)).status, 404);

  // The same upload again: the stored answer, no second asset.
  const repeat = await submitUpload(url, upload('u1'), new Blob([bytes], { type: 'image/png' }));
  assert.deepEqual(repeat.body, reply.body);
  const state = await adminState(url);
  assert.equal(Object.keys(state.assets).length, 1);
  assert.equal(state.requests.u1.applications, 1);
});

test('the same key with a different blob is a reused key', async (t) => {
  const { url } = await startTestServer(t);
  await submitUpload(url, upload('u1'), new Blob([Buffer.from('first')]));
  const reused = await submitUpload(url, upload('u1'), new Blob([Buffer.from('second')]));
  assert.equal(reused.status, 422);
  assert.equal(reused.body.error.code, 'idempotency_key_reused');
});

test('an upload without a blob is refused; a blob with another kind is a bad request', async (t) => {
  const { url } = await startTestServer(t);
  const noBlob = await submit(url, upload('u1'));
  assert.equal(noBlob.status, 422);
  assert.equal(noBlob.body.error.code, 'missing_blob');
  const stray = await submitUpload(
    url,
    frozen({ id: 'r2', kind: 'shape.upsert', payload: { shapeId: 's', shape: {} }, canvasIds: ['c1'] }),
    new Blob([Buffer.from('x')]),
  );
  assert.equal(stray.status, 400);
  assert.equal(stray.body.error.code, 'unexpected_blob');
  assert.equal((await query(url, 'r2')).status, 404);
});

test('a blob over the limit is refused 413 and nothing is stored', async (t) => {
  const { url } = await startTestServer(t, { maxBlobBytes: 1000 });
  const reply = await submitUpload(url, upload('u1'), new Blob([randomBytes(5000)]));
  assert.equal(reply.status, 413);
  assert.equal(reply.body.error.code, 'payload_too_large');
  assert.equal((await query(url, 'u1')).status, 404);
});

test('while a first submit is still being received, its key answers 409 without a body', async (t) => {
  const { url, port } = await startTestServer(t);
  const boundary = 'canvas-test-boundary';
  const body = upload('u1');
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="request"\r\n\r\n${JSON.stringify(body)}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="blob"; filename="a.bin"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const blob = randomBytes(2048);
  let slowResponse;
  const slow = new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        hostname: '127.0.0.1',
        port,
        method: 'POST',
        path: '/requests',
        agent: false,
        headers: {
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'idempotency-key': 'u1',
          'content-length': head.length + blob.length + tail.length,
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(chunks)) }));
      },
    );
    req.on('error', reject);
    slowResponse = req;
    req.write(head);
    req.write(blob.subarray(0, 1024));
  });
  // The first submit has started once the key stops being unknown.
  const inProgress = await waitFor(async () => {
    const reply = await query(url, 'u1');
    return reply.status === 409 ? reply : null;
  }, { what: 'the key to be in progress' });
  assert.equal(inProgress.text, '');
  const concurrent = await submitUpload(url, body, new Blob([blob]));
  assert.equal(concurrent.status, 409);
  assert.equal(concurrent.text, '');
  slowResponse.end(Buffer.concat([blob.subarray(1024), tail]));
  const first = await slow;
  assert.equal(first.status, 200);
  assert.equal(first.body.canonical.size, blob.length);
  const after = await submitUpload(url, body, new Blob([blob]));
  assert.equal(after.status, 200);
  assert.deepEqual(after.body, first.body);
  assert.equal((await adminState(url)).requests.u1.applications, 1);
});

test('an upload abandoned half way frees its key', async (t) => {
  const { url, port } = await startTestServer(t);
  const boundary = 'b';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="request"\r\n\r\n${JSON.stringify(upload('u1'))}\r\n`;
  const req = httpRequest({
    hostname: '127.0.0.1',
    port,
    method: 'POST',
    path: '/requests',
    agent: false,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'idempotency-key': 'u1', 'content-length': 100_000 },
  });
  req.on('error', () => {});
  req.write(head);
  await waitFor(async () => (await query(url, 'u1')).status === 409, { what: 'the key to be in progress' });
  req.destroy();
  await waitFor(async () => (await query(url, 'u1')).status === 404, { what: 'the key to be released' });
  const retried = await submitUpload(url, upload('u1'), new Blob([Buffer.from('abc')]));
  assert.equal(retried.status, 200);
});
