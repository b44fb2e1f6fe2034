//! The kit's canonical JSON, which the digest that decides "same request" is taken over (the
//! reference server in www/server uses the same function). Its output must not change: a digest
//! stored under a key by an earlier kit is compared with the digest of every resend (the 0.1.0
//! fixtures in legacy-tables.test.mjs check that end to end).
//!
//! The browser client keeps a digest of its own (FNV-1a of the exact body it froze, checked
//! before each resend; it never leaves the client), so nothing requires the two to agree. Where
//! they can, they do: the client writes a payload compactly with object keys sorted, and for the
//! payloads its tests pin (tests/web/json.rs, a_plain_js_value_becomes_canonical_json_text) the
//! kit's canonical JSON of the parsed text is that text. They differ in two places, both kept
//! because changing the kit's would change stored digests: an integer-valued number from 2^53 up
//! (the client writes `9007199254740992.0`, JS `9007199254740992`), and the order of keys beyond
//! U+FFFF against keys from U+E000 (JS sorts by UTF-16 units, the client by code points).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson } from '../src/index.js';

test('canonical JSON: keys sorted at every depth, compact, undefined members left out', () => {
  const cases = [
    [{ b: 1, a: [true, null, 'x', undefined], c: { e: 1.5, d: -0 } }, '{"a":[true,null,"x",null],"b":1,"c":{"d":0,"e":1.5}}'],
    [{ z: undefined, y: { '10': 1, '9': 2, B: 3, a: 4, é: 5 } }, '{"y":{"10":1,"9":2,"B":3,"a":4,"é":5}}'],
    ['é\u0000"\n\u2028\ud800', '"é\\u0000\\"\\n\u2028\\ud800"'],
    [[[], {}, [[1e21, 1e-7, 2 ** 53]]], '[[],{},[[1e+21,1e-7,9007199254740992]]]'],
    [null, 'null'],
    [undefined, 'null'],
  ];
  for (const [value, text] of cases) assert.equal(canonicalJson(value), text);
});

test("canonical JSON of the client's payload texts is those texts, but for the two documented differences", () => {
  // What the client writes for these JS values (tests/web/json.rs).
  const same = [
    '{"a":[true,null,"x"],"b":1,"c":{"d":0,"e":1.5}}',
    '"é\\u0000\\"\\n"',
    '[[],{},[[1]]]',
    '{"y":2,"z":1}',
    '{"10":4,"9":5,"B":1,"a":2,"é":3}',
    'null',
  ];
  for (const text of same) assert.equal(canonicalJson(JSON.parse(text)), text);
  assert.equal(
    canonicalJson(JSON.parse('{"big":9007199254740992.0,"neg":-3,"safe":9007199254740991,"small":1e-7}')),
    '{"big":9007199254740992,"neg":-3,"safe":9007199254740991,"small":1e-7}',
  );
  assert.equal(canonicalJson(JSON.parse('{"\uff61":1,"\u{1f511}":2}')), '{"\u{1f511}":2,"\uff61":1}');
});
