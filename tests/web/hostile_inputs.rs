//! Hostile values, through the exported `Scheduler`:
//!
//! - every read of a host value (getters, Proxy traps, revoked Proxies, `toJSON`, index
//!   getters, `Symbol.toPrimitive`) happens where a throw becomes a coded error: `enqueue`,
//!   `enqueueMany`, `Scheduler.open`, `flush`/`retry`/`discard`/`explain`/`operation` ids and
//!   `events({after, limit})` settle with `invalid_intent`, `invalid_options` or
//!   `unknown_operation`, and nothing is stored;
//! - a lone surrogate in an id, key or payload string is `invalid_intent`, never silently
//!   replaced (a surrogate pair and a genuine U+FFFD go through unchanged);
//! - a payload over `maxPayloadBytes` is refused (`payload_too_large`) before it is converted
//!   whole, so `new Array(1e8)`, a huge string or a very wide object never grows the module's
//!   memory; a very deep one is a coded error, not a stack overflow.

use canvas_scheduler::api::scheduler::Scheduler;
use js_sys::{Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::{code_of, js};

fn unique(prefix: &str) -> String {
    let random = (js_sys::Math::random() * 1e12) as u64;
    format!("{prefix}-{}-{random}", crate::EXPECTED_GLOBAL)
}

const TRANSPORT: &str =
    "transport: { submit: () => ({ outcome: 'applied' }), query: () => ({ outcome: 'applied' }) }";

async fn open(run: &str) -> Scheduler {
    let options = js(&format!(
        "{{ database: 'cs-hostile-in-{run}', owner: 'tab-{run}', {TRANSPORT} }}"
    ));
    match Scheduler::open(options).await {
        Ok(scheduler) => scheduler,
        Err(error) => panic!("open failed: {}", code_of(&error)),
    }
}

/// How `promise` settled within `ms`: `Ok(value)`, `Err(code)`, or `Err("never settled")`.
async fn within(promise: &Promise, ms: u32) -> Result<JsValue, String> {
    let race = js(&format!(
        "(p) => Promise.race([p, new Promise((_, reject) => setTimeout(() => reject('never settled'), {ms}))])"
    ));
    let raced: Promise = race
        .unchecked_ref::<js_sys::Function>()
        .call1(&JsValue::NULL, promise)
        .expect("race")
        .unchecked_into();
    JsFuture::from(raced)
        .await
        .map_err(|error| match error.as_string() {
            Some(text) => text,
            None => code_of(&error),
        })
}

fn pending(scheduler: &Scheduler) -> f64 {
    Reflect::get(&scheduler.stats(), &"pending".into())
        .ok()
        .and_then(|n| n.as_f64())
        .unwrap_or(-1.0)
}

/// A JS expression for a revoked Proxy.
const REVOKED: &str =
    "(() => { const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); return proxy; })()";

fn hostile_intents() -> Vec<(String, &'static str)> {
    let base = "operationType: 'shape.upsert', canvasIds: ['c'], payload: {}";
    let throwing = "{ get() { throw new Error('boom'); }, enumerable: true }";
    let primitive = "{ [Symbol.toPrimitive]() { throw new Error('boom'); }, toString() { throw new Error('boom'); } }";
    vec![
        (REVOKED.to_owned(), "the intent is a revoked Proxy"),
        (
            "new Proxy({}, { ownKeys() { throw new Error('boom'); } })".to_owned(),
            "ownKeys throws",
        ),
        (
            "new Proxy({ id: 'h-x' }, { get() { throw new Error('boom'); } })".to_owned(),
            "get trap throws",
        ),
        (
            format!("Object.defineProperty({{ {base} }}, 'id', {throwing})"),
            "id getter throws",
        ),
        (
            format!(
                "(() => {{ const ids = []; Object.defineProperty(ids, 0, {throwing}); return {{ id: 'h-ids', operationType: 'shape.upsert', canvasIds: ids, payload: {{}} }}; }})()"
            ),
            "canvasIds[0] getter throws",
        ),
        (
            format!("{{ id: 'h-rc', operationType: 'shape.upsert', canvasIds: {REVOKED}, payload: {{}} }}"),
            "canvasIds is a revoked Proxy",
        ),
        (
            "{ id: 'h-len', operationType: 'shape.upsert', canvasIds: new Proxy([], { get(t, k) { if (k === 'length') throw new Error('boom'); return t[k]; } }), payload: {} }".to_owned(),
            "canvasIds length trap throws",
        ),
        (
            "(() => { const { proxy, revoke } = Proxy.revocable({}, {}); return { id: 'h-rv', operationType: 'shape.upsert', canvasIds: proxy, payload: { get x() { revoke(); return 1; } } }; })()".to_owned(),
            "canvasIds revoked by a payload getter after the intent's fields were read",
        ),
        (
            format!("{{ id: 'h-rp', operationType: 'shape.upsert', canvasIds: ['c'], payload: {REVOKED} }}"),
            "payload is a revoked Proxy",
        ),
        (
            format!("{{ id: 'h-rn', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{ a: [1, {{ b: {REVOKED} }}] }} }}"),
            "a nested revoked Proxy",
        ),
        (
            "{ id: 'h-pk', operationType: 'shape.upsert', canvasIds: ['c'], payload: new Proxy({}, { ownKeys() { throw new Error('boom'); } }) }".to_owned(),
            "payload ownKeys throws",
        ),
        (
            "{ id: 'h-pp', operationType: 'shape.upsert', canvasIds: ['c'], payload: new Proxy({}, { getPrototypeOf() { throw new Error('boom'); } }) }".to_owned(),
            "payload getPrototypeOf throws",
        ),
        (
            format!("{{ id: 'h-pg', operationType: 'shape.upsert', canvasIds: ['c'], payload: Object.defineProperty({{}}, 'x', {throwing}) }}"),
            "payload getter throws",
        ),
        (
            format!("{{ id: 'h-ai', operationType: 'shape.upsert', canvasIds: ['c'], payload: Object.defineProperty([1, 2], 1, {throwing}) }}"),
            "payload array index getter throws",
        ),
        (
            "{ id: 'h-tj', operationType: 'shape.upsert', canvasIds: ['c'], payload: { toJSON() { throw new Error('boom'); } } }".to_owned(),
            "payload toJSON throws",
        ),
        (
            format!("{{ id: {primitive}, {base} }}"),
            "id is an object whose Symbol.toPrimitive throws",
        ),
        (
            format!("{{ id: 'h-tp', operationType: 'shape.upsert', canvasIds: [{primitive}], payload: {{}} }}"),
            "canvasIds[0] Symbol.toPrimitive throws",
        ),
        (
            format!("{{ id: 'h-sq', sequence: {primitive}, {base} }}"),
            "sequence Symbol.toPrimitive throws",
        ),
        (
            format!("{{ id: 'h-ev', operationType: 'shape.upsert', canvasIds: ['c'], expectedVersions: {REVOKED} }}"),
            "expectedVersions is a revoked Proxy",
        ),
        (
            format!("{{ id: 'h-bl', operationType: 'asset.upload', blob: {REVOKED} }}"),
            "blob is a revoked Proxy",
        ),
        (
            "{ id: 'h-bp', operationType: 'asset.upload', blob: new Proxy(new Blob(['x']), {}) }".to_owned(),
            "blob is a Proxy of a Blob",
        ),
    ]
}

#[wasm_bindgen_test]
async fn h6_hostile_intents_settle_invalid_intent_and_store_nothing() {
    let run = unique("values");
    let scheduler = open(&run).await;
    let hold = scheduler.hold().expect("hold");
    let before = pending(&scheduler);
    for (source, what) in hostile_intents() {
        let one = within(&scheduler.enqueue(js(&source)), 2_000).await;
        assert_eq!(
            one.err().as_deref(),
            Some("invalid_intent"),
            "enqueue: {what}"
        );
        let many = within(&scheduler.enqueue_many(js(&format!("[{source}]"))), 2_000).await;
        assert_eq!(
            many.err().as_deref(),
            Some("invalid_intent"),
            "enqueueMany: {what}"
        );
    }
    let lists = [
        REVOKED.to_owned(),
        "new Proxy([], { get() { throw new Error('boom'); } })".to_owned(),
        "Object.defineProperty([], 0, { get() { throw new Error('boom'); } })".to_owned(),
    ];
    for source in lists {
        let many = within(&scheduler.enqueue_many(js(&source)), 2_000).await;
        assert_eq!(many.err().as_deref(), Some("invalid_intent"), "{source}");
    }
    assert_eq!(pending(&scheduler), before, "nothing was stored");
    assert!(scheduler.operation("h-ids").is_undefined());
    // The module still works.
    let id = format!("{run}-ok");
    let ok = js(&format!(
        "{{ id: '{id}', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{ a: 1 }} }}"
    ));
    within(&scheduler.enqueue(ok), 2_000)
        .await
        .expect("durable");
    assert_eq!(pending(&scheduler), before + 1.0);
    let release: js_sys::Function = hold;
    let _ = release.call0(&JsValue::NULL);
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn h6_hostile_options_settle_invalid_options() {
    let run = unique("options");
    let good = format!("database: 'cs-hostile-opt-{run}', {TRANSPORT}");
    let cases = [
        REVOKED.to_owned(),
        "new Proxy({}, { ownKeys() { throw new Error('boom'); } })".to_owned(),
        format!("Object.defineProperty({{ {good} }}, 'owner', {{ get() {{ throw new Error('boom'); }}, enumerable: true }})"),
        format!("{{ {good}, retry: {REVOKED} }}"),
        format!("{{ {good}, batch: new Proxy({{}}, {{ ownKeys() {{ throw new Error('boom'); }} }}) }}"),
        format!("{{ {good}, principal: {{ [Symbol.toPrimitive]() {{ throw new Error('boom'); }} }} }}"),
        format!("{{ {good}, principal: 'user-\\uD800' }}"),
        format!("{{ database: 'cs-hostile-opt-{run}', transport: {REVOKED} }}"),
        // Read through serde from a caught snapshot: a nested getter and an array item's
        // getter throw where the snapshot is taken, never inside `from_value`.
        format!("{{ {good}, retry: Object.defineProperty({{}}, 'baseMs', {{ get() {{ throw new Error('boom'); }}, enumerable: true }}) }}"),
        format!("{{ {good}, batch: {{ kinds: Object.defineProperty(['a.b'], 0, {{ get() {{ throw new Error('boom'); }} }}) }} }}"),
        format!("{{ {good}, owner: 'tab-\\uDC00' }}"),
    ];
    for source in cases {
        let opened = within(&Scheduler::open_js(js(&source)), 2_000).await;
        assert_eq!(opened.err().as_deref(), Some("invalid_options"), "{source}");
    }
}

#[wasm_bindgen_test]
async fn h6_hostile_arguments_to_methods_settle_with_codes() {
    let run = unique("args");
    let scheduler = open(&run).await;
    let name = format!("__hostile_args_{}", run.replace('-', "_"));
    let _ = Reflect::set(
        &js_sys::global(),
        &name.clone().into(),
        &JsValue::from(scheduler.clone()),
    );
    let s = format!("globalThis.{name}");
    let primitive = "{ [Symbol.toPrimitive]() { throw new Error('boom'); }, toString() { throw new Error('boom'); } }";
    // Each call's outcome: a promise's settlement or a synchronous throw, as a code.
    let outcome = |call: String| {
        js(&format!(
            "(async () => {{ try {{ await {call}; return 'ok'; }} catch (e) {{ return e && e.code ? e.code : 'no code: ' + e; }} }})()"
        ))
    };
    let cases = [
        (format!("{s}.flush({primitive})"), "unknown_operation"),
        (format!("{s}.flush(Symbol('x'))"), "unknown_operation"),
        (format!("{s}.retry(42)"), "unknown_operation"),
        (format!("{s}.discard({REVOKED})"), "unknown_operation"),
        (format!("{s}.explain({primitive})"), "unknown_operation"),
        (format!("{s}.operation({primitive})"), "ok"),
        (format!("{s}.events({REVOKED})"), "invalid_options"),
        (
            format!("{s}.events({{ get after() {{ throw new Error('boom'); }} }})"),
            "invalid_options",
        ),
        (
            format!("{s}.events({{ limit: {primitive} }})"),
            "invalid_options",
        ),
        (format!("{s}.events(5)"), "invalid_options"),
    ];
    for (call, expected) in cases {
        let settled = within(&outcome(call.clone()).unchecked_into(), 2_000)
            .await
            .expect("settles");
        assert_eq!(settled.as_string().as_deref(), Some(expected), "{call}");
    }
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn h9_lone_surrogates_are_invalid_intent_never_replaced() {
    let run = unique("surrogates");
    let scheduler = open(&run).await;
    let hold = scheduler.hold().expect("hold");
    let before = pending(&scheduler);
    let intent = |fields: &str| {
        format!("{{ id: 'h-s', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{}}, {fields} }}")
    };
    let cases = [
        "id: 'h-\\uD800'".to_owned(),
        "operationType: 'shape.\\uDC00'".to_owned(),
        "canvasIds: ['c-\\uD800']".to_owned(),
        "dependencies: ['d-\\uDFFF']".to_owned(),
        "coalesceKey: 'drag:\\uD800'".to_owned(),
        "coalesceKey: '\\uDC00\\uD800'".to_owned(),
        "runId: 'r-\\uD83D'".to_owned(),
        "expectedVersions: { 'c\\uD800': 1 }".to_owned(),
        "payload: { text: 'a\\uD800b' }".to_owned(),
        "payload: { 'k\\uDC00': 1 }".to_owned(),
        "payload: ['ok', ['\\uDBFF']]".to_owned(),
        "payload: 'x\\uD83D'".to_owned(),
    ];
    for fields in &cases {
        let source = intent(fields);
        let refused = within(&scheduler.enqueue(js(&source)), 2_000).await;
        assert_eq!(refused.err().as_deref(), Some("invalid_intent"), "{fields}");
    }
    assert_eq!(pending(&scheduler), before, "nothing was stored");
    // A surrogate pair and a genuine U+FFFD are well-formed: stored exactly as given.
    let id = format!("{run}-pair");
    let fine = js(&format!(
        "{{ id: '{id}', operationType: 'shape.upsert', canvasIds: ['c'], coalesceKey: 'k-\\uD83D\\uDE00-\\uFFFD', payload: {{ text: '\\uD83D\\uDE00 \\uFFFD', '\\uD83D\\uDE00': 1 }} }}"
    ));
    within(&scheduler.enqueue(fine), 2_000)
        .await
        .expect("durable");
    let stored = js_sys::JSON::stringify(&scheduler.operation(&id))
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default();
    assert!(stored.contains("\u{1F600} \u{FFFD}"), "{stored}");
    assert!(stored.contains("k-\u{1F600}-\u{FFFD}"), "{stored}");
    let _ = hold.call0(&JsValue::NULL);
    scheduler.stop();
}

/// The module's memory in bytes (the wasm-bindgen `memory` export's buffer).
fn memory_bytes() -> f64 {
    let memory = wasm_bindgen::memory();
    let buffer = Reflect::get(&memory, &"buffer".into()).expect("buffer");
    Reflect::get(&buffer, &"byteLength".into())
        .ok()
        .and_then(|n| n.as_f64())
        .expect("byteLength")
}

#[wasm_bindgen_test]
async fn h9_a_huge_payload_is_refused_before_it_is_converted_and_memory_does_not_grow() {
    let run = unique("huge");
    let scheduler = open(&run).await;
    let hold = scheduler.hold().expect("hold");
    // Warm up: one ordinary enqueue, so what the first one allocates is not counted.
    let warm = format!("{run}-warm");
    let warm_intent = js(&format!(
        "{{ id: '{warm}', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{ a: 1 }} }}"
    ));
    within(&scheduler.enqueue(warm_intent), 2_000)
        .await
        .expect("durable");
    let before_pending = pending(&scheduler);
    let intent = |payload: &str| {
        js(&format!(
            "{{ id: 'h-huge', operationType: 'shape.upsert', canvasIds: ['c'], payload: {payload} }}"
        ))
    };
    let cases = [
        ("new Array(1e8)", "payload_too_large"),
        ("new Array(1e7).fill(0)", "payload_too_large"),
        ("'x'.repeat(1 << 24)", "payload_too_large"),
        ("['y'.repeat(300000)]", "payload_too_large"),
        (
            "Object.fromEntries(Array.from({ length: 200000 }, (_, i) => ['k' + i, i]))",
            "payload_too_large",
        ),
        (
            "Array.from({ length: 1000 }, () => 'z'.repeat(1000))",
            "payload_too_large",
        ),
        (
            "(() => { let v = 0; for (let i = 0; i < 100000; i++) v = [v]; return v; })()",
            "invalid_intent",
        ),
        (
            "(() => { let v = {}; for (let i = 0; i < 100000; i++) v = { v }; return v; })()",
            "invalid_intent",
        ),
        (
            "(() => { const a = []; a.push(a); return a; })()",
            "invalid_intent",
        ),
    ];
    let memory_before = memory_bytes();
    for (payload, expected) in cases {
        let value = intent(payload);
        let started = js_sys::Date::now();
        let refused = within(&scheduler.enqueue(value), 2_000).await;
        let took = js_sys::Date::now() - started;
        assert_eq!(refused.err().as_deref(), Some(expected), "{payload}");
        assert!(took < 1_000.0, "{payload} took {took} ms");
    }
    let grown = memory_bytes() - memory_before;
    assert!(
        grown < 1_048_576.0,
        "the module's memory grew by {grown} bytes"
    );
    // Just under the limit is fine; the limit is measured on the text, as before.
    let near = js(&format!(
        "{{ id: '{run}-near', operationType: 'shape.upsert', canvasIds: ['c'], payload: ['{}'] }}",
        "n".repeat(200_000)
    ));
    within(&scheduler.enqueue(near), 2_000)
        .await
        .expect("durable");
    assert_eq!(pending(&scheduler), before_pending + 1.0);
    let _ = hold.call0(&JsValue::NULL);
    scheduler.stop();
}
