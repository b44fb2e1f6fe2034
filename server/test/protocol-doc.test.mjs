//! The worked example of docs/protocol.md ("Request digests") is what the kit computes: the
//! canonical text and the SHA-256 digest of the documented body, through the kit's own submit
//! parser. The client's side (the body itself) is checked by tests/behaviour/protocol_doc.rs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DEFAULT_LIMITS, canonicalJson, parseSubmit, sha256 } from '../src/protocol.js';
import { fromWebRequest } from '../src/incoming.js';

const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');

/** The text of the first fenced block after `<!-- example:NAME -->`. */
function example(name) {
  const marker = `<!-- example:${name} -->`;
  const at = doc.indexOf(marker);
  assert.ok(at >= 0, `docs/protocol.md has no ${marker}`);
  const block = /```[^\n]*\n([\s\S]*?)\n```/.exec(doc.slice(at + marker.length));
  assert.ok(block, `a fenced block after ${marker}`);
  return block[1];
}

test('the protocol doc worked example: canonical text and digest are what the kit computes', async () => {
  const body = example('body');
  assert.equal(Buffer.byteLength(body), 283);
  const key = JSON.parse(body).id;
  const submitted = await parseSubmit(
    fromWebRequest(
      new Request('http://127.0.0.1/v1/requests', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body,
      }),
    ),
    DEFAULT_LIMITS,
  );
  const canonical = canonicalJson({ body: JSON.parse(body), blob: null });
  assert.equal(canonical, example('canonical'));
  assert.equal(Buffer.byteLength(canonical), 304);
  assert.equal(sha256(canonical), example('digest'));
  assert.equal(submitted.digest, example('digest'), 'the digest parseSubmit stores');
});

test('the protocol doc upload example: its digest covers the file part', async () => {
  const line = doc.split('\n').find((l) => l.startsWith('{"id":"9b1d4e7f-2c58-4a3e-b6d0-1f7e9c2a5b84"'));
  assert.ok(line, 'the upload exchange is in the doc');
  const form = new FormData();
  form.set('request', line);
  form.set('blob', new Blob(['PNGDATA'], { type: 'image/png' }), 'dot.png');
  const submitted = await parseSubmit(
    fromWebRequest(new Request('http://127.0.0.1/v1/requests', { method: 'POST', body: form })),
    DEFAULT_LIMITS,
  );
  assert.equal(submitted.blob.size, 7);
  assert.ok(doc.includes(`"sha256":"${submitted.blob.sha256}","size":7`), 'the documented blob member');
  assert.ok(doc.includes(`the digest is \`${submitted.digest}\``), `the documented digest ${submitted.digest}`);
});
