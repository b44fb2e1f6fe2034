//! The `Scheduler` class as JavaScript sees it (docs/guide.md): strict decoding of options and
//! intents with stable codes and an unchanged ledger, and the host hooks called safely.

use canvas_scheduler::api::scheduler::Scheduler;
use js_sys::Reflect;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::{code_of, js, sleep};

fn server() -> &'static str {
    match option_env!("CANVAS_SCHEDULER_TEST_SERVER") {
        Some(url) => url,
        None => panic!(
            "CANVAS_SCHEDULER_TEST_SERVER is not set: run the browser tests through `npm test`"
        ),
    }
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        crate::EXPECTED_GLOBAL,
        js_sys::Date::now() as u64
    )
}

async fn open(run: &str, extra: &str) -> Scheduler {
    let options = js(&format!(
        "{{ database: 'cs-api-{run}', endpoint: '{}', owner: 'tab-{run}', leaseMs: 1000, retry: {{ baseMs: 20, maxMs: 200 }}, {extra} }}",
        server()
    ));
    match Scheduler::open(options).await {
        Ok(scheduler) => scheduler,
        Err(error) => panic!("open failed: {}", code_of(&error)),
    }
}

async fn settle_all(scheduler: &Scheduler) {
    for _ in 0..200 {
        let _ = scheduler.settle().await;
        let pending = Reflect::get(&scheduler.stats(), &"pending".into())
            .ok()
            .and_then(|p| p.as_f64())
            .unwrap_or(0.0);
        if pending == 0.0 {
            return;
        }
        sleep(25).await;
    }
}

#[wasm_bindgen_test]
async fn a_malformed_options_are_refused_with_codes() {
    let run = unique("opt");
    let cases = [
        ("42", "invalid_options"),
        ("{ endpoint: 'http://127.0.0.1:1' }", "invalid_options"),
        ("{ database: 'd', endpoint: 'ftp://x' }", "invalid_options"),
        (
            "{ database: 'd', endpoint: 'http://x', concurrency: 0 }",
            "invalid_concurrency",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', concurrency: 1.5 }",
            "invalid_concurrency",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', concurrency: '2' }",
            "invalid_concurrency",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', leaseMs: 10 }",
            "invalid_options",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', headers: 5 }",
            "invalid_options",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', retry: { maxAttempts: 0 } }",
            "invalid_options",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', retry: { base: 1 } }",
            "invalid_options",
        ),
        // `retry.deadLetterAfterMs` is an integer from 0 to 7 days.
        (
            "{ database: 'd', endpoint: 'http://x', retry: { deadLetterAfterMs: -1 } }",
            "invalid_options",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', retry: { deadLetterAfterMs: 1.5 } }",
            "invalid_options",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', retry: { deadLetterAfterMs: 604800001 } }",
            "invalid_options",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', retry: { deadLetterAfterMs: '600000' } }",
            "invalid_options",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', concurency: 2 }",
            "invalid_options",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', batch: { kinds: 'record.put' } }",
            "invalid_options",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', batch: { kinds: [] } }",
            "invalid_options",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', batch: { kinds: ['record put'] } }",
            "invalid_options",
        ),
        (
            "{ database: 'd', endpoint: 'http://x', batch: { kinds: ['record.put', 5] } }",
            "invalid_options",
        ),
    ];
    for (source, expected) in cases {
        let error = Scheduler::open(js(&source.replace("'d'", &format!("'cs-opt-{run}'"))))
            .await
            .err()
            .expect(source);
        assert_eq!(code_of(&error), expected, "{source}");
        assert_eq!(
            Reflect::get(&error, &"name".into())
                .ok()
                .and_then(|n| n.as_string())
                .as_deref(),
            Some("CanvasSchedulerError")
        );
    }
}

#[wasm_bindgen_test]
async fn a_malformed_intents_are_refused_with_codes_and_change_nothing() {
    let run = unique("int");
    let scheduler = open(&run, "").await;
    let hold = scheduler.hold().expect("hold");
    scheduler.enqueue(js("{ id: 'dup', operationType: 'shape.upsert', canvasIds: ['c'], payload: { shapeId: 's', shape: {} } }")).await.expect("valid");
    let cases: Vec<(&str, &str)> = vec![
        ("42", "invalid_intent"),
        ("null", "invalid_intent"),
        ("[]", "invalid_intent"),
        ("{}", "invalid_intent"),
        ("{ id: 5, operationType: 'x' }", "invalid_intent"),
        ("{ id: 'a' }", "invalid_intent"),
        ("{ id: '', operationType: 'x' }", "invalid_intent"),
        ("{ id: 'a b', operationType: 'x' }", "invalid_intent"),
        ("{ id: 'x'.repeat(200), operationType: 'x' }", "invalid_intent"),
        ("{ id: 'a', operationType: '' }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', canvasIds: 'c1' }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', canvasIds: [1] }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', canvasIds: ['c', 'c'] }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', payload: NaN }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', payload: { v: Infinity } }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', payload: () => 1 }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', payload: Symbol('s') }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', payload: 10n }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', payload: new Date() }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', payload: JSON.parse('{\"__proto__\": {\"polluted\": 1}}') }", "invalid_intent"),
        ("JSON.parse('{\"id\": \"a\", \"operationType\": \"x\", \"__proto__\": {\"polluted\": 1}}')", "invalid_intent"),
        ("(() => { let v = 1; for (let i = 0; i < 100; i++) v = [v]; return { id: 'a', operationType: 'x', payload: v }; })()", "invalid_intent"),
        ("(() => { const o = {}; o.self = o; return { id: 'a', operationType: 'x', payload: o }; })()", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', payload: 'x'.repeat(300000) }", "payload_too_large"),
        // Longer than the payload limit itself: refused by its length, before it is read.
        ("{ id: 'a', operationType: 'x', payload: 'x'.repeat(1100000) }", "payload_too_large"),
        ("{ id: 'a', operationType: 'x', sequence: 1.5 }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', sequence: -1 }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', sequence: NaN }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', sequence: 1 }", "invalid_sequence"),
        ("{ id: 'a', operationType: 'x', expectedVersions: { c: -1 } }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', expectedVersions: { c: 1.5 } }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', expectedVersions: [1] }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', extra: 1 }", "invalid_intent"),
        ("() => ({ id: 'a', operationType: 'x' })", "invalid_intent"),
        ("{ id: 'a', get operationType() { throw new Error('no'); } }", "invalid_intent"),
        ("new Proxy({ id: 'a', operationType: 'x' }, { ownKeys() { throw new Error('no'); } })", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', runId: 7 }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', blob: 'not a blob' }", "invalid_intent"),
        ("{ id: 'a', operationType: 'x', dependencies: ['missing'] }", "unknown_dependency"),
        ("{ id: 'dup', operationType: 'other.kind' }", "duplicate_operation"),
    ];
    assert!(cases.len() >= 30);
    for (source, expected) in &cases {
        let error = scheduler
            .enqueue(js(source))
            .await
            .err()
            .unwrap_or_else(|| panic!("accepted: {source}"));
        assert_eq!(code_of(&error), *expected, "{source}");
    }
    // Fields are checked in one order whatever throws: the first bad one is the one named.
    for (source, says) in [
        (
            "{ id: 'a', get operationType() { throw new Error('no'); } }",
            "operationType is unreadable",
        ),
        (
            "{ id: 5, get runId() { throw new Error('no'); } }",
            "id must be a string",
        ),
        (
            "{ id: 'a', operationType: 'x', extra: 1, get runId() { throw new Error('no'); } }",
            "unknown intent field \"extra\"",
        ),
    ] {
        let error = scheduler.enqueue(js(source)).await.expect_err(source);
        let message = Reflect::get(&error, &"message".into())
            .ok()
            .and_then(|m| m.as_string());
        assert_eq!(message.as_deref(), Some(says), "{source}");
    }
    // The code, and which intent of the call was refused (index, id), when one was.
    let many = [
        ("[{ id: 'c1', operationType: 'x', dependencies: ['c2'] }, { id: 'c2', operationType: 'x', dependencies: ['c1'] }]", "dependency_cycle", None),
        ("[{ id: 'ok1', operationType: 'x', canvasIds: ['c'] }, { id: 'bad', operationType: 'x', payload: NaN }]", "invalid_intent", Some((1.0, "bad"))),
        ("[{ id: 'same', operationType: 'x' }, { id: 'same', operationType: 'x' }]", "duplicate_operation", Some((1.0, "same"))),
        ("[{ id: 'd1', operationType: 'x' }, { id: 'd2', operationType: 'x' }, { id: 'd3', operationType: 'x', dependencies: ['nowhere'] }]", "unknown_dependency", Some((2.0, "d3"))),
        ("[{ id: 'b1', operationType: 'x' }, { operationType: 'x' }]", "invalid_intent", Some((1.0, ""))),
        ("'not an array'", "invalid_intent", None),
    ];
    for (source, expected, intent) in many {
        let error = scheduler.enqueue_many(js(source)).await.expect_err(source);
        assert_eq!(code_of(&error), expected, "{source}");
        let index = Reflect::get(&error, &"index".into())
            .ok()
            .and_then(|i| i.as_f64());
        let id = Reflect::get(&error, &"operationId".into())
            .ok()
            .and_then(|i| i.as_string())
            .unwrap_or_default();
        assert_eq!(
            index.map(|i| (i, id.as_str())),
            intent,
            "which intent: {source}"
        );
    }
    // Bad input changed nothing: only the one valid intent is in the ledger.
    let pending = Reflect::get(&scheduler.stats(), &"pending".into())
        .ok()
        .and_then(|p| p.as_f64());
    assert_eq!(pending, Some(1.0));
    for id in [
        "a", "c1", "c2", "ok1", "bad", "same", "d1", "d2", "d3", "b1",
    ] {
        assert!(
            scheduler.operation(id).is_undefined(),
            "{id} must not be in the ledger"
        );
    }
    hold.call0(&JsValue::NULL).expect("release");
    hold.call0(&JsValue::NULL)
        .expect("release twice is harmless");
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn a_hooks_are_called_safely_and_outcomes_reach_on_event() {
    let run = unique("hooks");
    let events = format!("__events_{}", run.replace('-', "_"));
    let hooks = format!(
        "onEvent: (e) => {{ (globalThis.{events} ??= []).push(e); throw new Error('handler bug'); }},
         compile: (intent, requestId) => {{
           if (intent.id.endsWith('throws')) throw new Error('cannot compile this');
           if (intent.id.endsWith('async')) return Promise.resolve({{ payload: 1, canvasIds: intent.canvasIds }});
           return {{ payload: intent.payload, canvasIds: intent.canvasIds }};
         }},
         headers: async () => {{ globalThis.{events}_headers = (globalThis.{events}_headers ?? 0) + 1;
           if (globalThis.{events}_headers === 1) throw new Error('token refresh failed');
           return {{ 'x-trace': 'abc' }}; }},
         authorize: async ({{ request, principal }}) => request.operationIds[0].endsWith('denied')
           ? {{ allowed: false, reason: 'read-only workspace' }} : {{ allowed: principal === 'user-a' }},
         principal: 'user-a',"
    );
    let scheduler = open(&run, &hooks).await;
    scheduler.start().expect("start");
    let intent = |suffix: &str, canvas: &str| {
        js(&format!(
            "{{ id: '{run}-{suffix}', operationType: 'shape.upsert', canvasIds: ['{run}-{canvas}'], payload: {{ shapeId: '{suffix}', shape: {{ w: 1 }} }} }}"
        ))
    };
    scheduler
        .enqueue(intent("throws", "a"))
        .await
        .expect("durable");
    scheduler
        .enqueue(intent("async", "b"))
        .await
        .expect("durable");
    scheduler
        .enqueue(intent("denied", "c"))
        .await
        .expect("durable");
    scheduler
        .enqueue(intent("fine", "d"))
        .await
        .expect("durable");
    settle_all(&scheduler).await;
    let reason = |id: &str| {
        Reflect::get(
            &scheduler.explain(&format!("{run}-{id}")).expect("explain"),
            &"reason".into(),
        )
        .ok()
        .and_then(|r| r.as_string())
    };
    assert_eq!(reason("throws").as_deref(), Some("cannot compile this"));
    assert_eq!(
        reason("async").as_deref(),
        Some("compile must return synchronously")
    );
    assert_eq!(reason("denied").as_deref(), Some("rejected"));
    assert_eq!(
        reason("fine").as_deref(),
        Some("applied"),
        "sent after the failing headers() was retried"
    );
    let seen = js(&format!("globalThis.{events}"));
    let settled: Vec<JsValue> = js_sys::Array::from(&seen)
        .iter()
        .filter(|e| {
            Reflect::get(e, &"type".into())
                .ok()
                .and_then(|t| t.as_string())
                .as_deref()
                == Some("settled")
        })
        .collect();
    assert_eq!(
        settled.len(),
        2,
        "fine (applied) and denied (rejected), despite the throwing handler"
    );
    let applied = settled
        .iter()
        .find(|e| {
            Reflect::get(e, &"outcome".into())
                .ok()
                .and_then(|o| o.as_string())
                .as_deref()
                == Some("applied")
        })
        .expect("applied event");
    assert!(
        Reflect::get(applied, &"canonical".into())
            .map(|c| c.is_object())
            .unwrap_or(false),
        "settled carries canonical"
    );
    let denied = settled
        .iter()
        .find(|e| {
            Reflect::get(e, &"outcome".into())
                .ok()
                .and_then(|o| o.as_string())
                .as_deref()
                == Some("rejected")
        })
        .expect("rejected event");
    let message = Reflect::get(denied, &"error".into())
        .and_then(|e| Reflect::get(&e, &"message".into()))
        .ok()
        .and_then(|m| m.as_string());
    assert_eq!(message.as_deref(), Some("read-only workspace"));
    let blocked = js_sys::Array::from(&seen)
        .iter()
        .filter(|e| {
            Reflect::get(e, &"type".into())
                .ok()
                .and_then(|t| t.as_string())
                .as_deref()
                == Some("blocked")
        })
        .count();
    assert_eq!(blocked, 2);
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn a_leader_changed_and_dead_lettered_reach_on_event() {
    let run = unique("dead");
    let events = format!("__events_{}", run.replace('-', "_"));
    // A proxy's HTML 400: a 4xx without a protocol body dead-letters at once.
    let options = js(&format!(
        "{{ database: 'cs-api-{run}', endpoint: '{}', owner: 'tab-{run}',
           retry: {{ baseMs: 1, maxMs: 5, maxAttempts: 2 }},
           onEvent: (e) => (globalThis.{events} ??= []).push(e) }}",
        super::support::proxy_400()
    ));
    let scheduler = match Scheduler::open(options).await {
        Ok(s) => s,
        Err(error) => panic!("open failed: {}", code_of(&error)),
    };
    scheduler.start().expect("start");
    scheduler
        .enqueue(js(&format!(
            "{{ id: '{run}-x', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{}} }}"
        )))
        .await
        .expect("durable");
    for _ in 0..200 {
        let _ = scheduler.settle().await;
        let reason = Reflect::get(
            &scheduler.explain(&format!("{run}-x")).expect("explain"),
            &"reason".into(),
        )
        .ok()
        .and_then(|r| r.as_string());
        if reason.as_deref() == Some("dead_letter") {
            break;
        }
        sleep(20).await;
    }
    let kinds: Vec<String> = js_sys::Array::from(&js(&format!("globalThis.{events}")))
        .iter()
        .filter_map(|e| {
            Reflect::get(&e, &"type".into())
                .ok()
                .and_then(|t| t.as_string())
        })
        .collect();
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("leader_changed"),
        "{kinds:?}"
    );
    assert!(kinds.iter().any(|k| k == "dead_lettered"), "{kinds:?}");
    let log = JsFuture::from(js_sys::Promise::resolve(
        &scheduler.events(JsValue::UNDEFINED).await.expect("events"),
    ))
    .await
    .expect("log");
    let logged: Vec<String> = js_sys::Array::from(&log)
        .iter()
        .filter_map(|e| {
            Reflect::get(&e, &"kind".into())
                .ok()
                .and_then(|k| k.as_string())
        })
        .collect();
    assert!(
        logged.iter().any(|k| k == "dead_lettered") && logged.iter().any(|k| k == "lease_acquired"),
        "{logged:?}"
    );
    // retry(id) re-arms the same request; discard(id) settles it for good.
    scheduler
        .discard(format!("{run}-x"))
        .await
        .expect("discard");
    let outcome = Reflect::get(&scheduler.operation(&format!("{run}-x")), &"phase".into())
        .ok()
        .and_then(|p| p.as_string());
    assert_eq!(outcome.as_deref(), Some("resolved"));
    // What is enqueued later depending on it waits for the host, never silently sent.
    scheduler
        .enqueue(js(&format!(
            "{{ id: '{run}-after', operationType: 'shape.upsert', canvasIds: ['d'], payload: {{}}, dependencies: ['{run}-x'] }}"
        )))
        .await
        .expect("durable");
    let why = scheduler.explain(&format!("{run}-after")).expect("explain");
    let reason = Reflect::get(&why, &"reason".into())
        .ok()
        .and_then(|r| r.as_string());
    assert_eq!(reason.as_deref(), Some("dependency_discarded"));
    scheduler.stop();
    let closed = scheduler.start().err().map(|e| code_of(&e));
    assert_eq!(closed.as_deref(), Some("scheduler_closed"));
}

#[wasm_bindgen_test]
async fn w3_a_pluggable_transport_replaces_fetch() {
    let run = unique("jst");
    let seen = format!("__seen_{}", run.replace('-', "_"));
    // An in-page server: applies each key once, throws on the first submit (transport_unknown).
    let scheduler = flaky(
        &run,
        &seen,
        1,
        "Promise.reject(new TypeError('network down'))",
        "{ baseMs: 1, maxMs: 5 }",
    )
    .await;
    let intents = js(&format!(
        "Array.from({{ length: 50 }}, (_, i) => ({{ id: '{run}-' + i, operationType: 'shape.upsert', canvasIds: ['c' + (i % 5)], payload: {{ i }} }}))"
    ));
    scheduler.enqueue_many(intents).await.expect("durable");
    settle_all(&scheduler).await;
    let applied = js(&format!("Object.values(globalThis.{seen}.applied)"));
    let counts: Vec<f64> = js_sys::Array::from(&applied)
        .iter()
        .filter_map(|v| v.as_f64())
        .collect();
    assert_eq!(
        counts.len(),
        50,
        "every operation reached the in-page server"
    );
    assert!(
        counts.iter().all(|c| *c == 1.0),
        "each key applied once: {counts:?}"
    );
    for i in 0..50 {
        let why = scheduler.explain(&format!("{run}-{i}")).expect("explain");
        assert_eq!(
            Reflect::get(&why, &"reason".into())
                .ok()
                .and_then(|r| r.as_string())
                .as_deref(),
            Some("applied")
        );
    }
    scheduler.stop();
}

/// The pending count in `stats()`.
fn pending(scheduler: &Scheduler) -> f64 {
    Reflect::get(&scheduler.stats(), &"pending".into())
        .ok()
        .and_then(|p| p.as_f64())
        .unwrap_or(-1.0)
}

/// Waits up to `ms` for nothing to be pending; the time it took, or `None`.
async fn drained_within(scheduler: &Scheduler, ms: f64) -> Option<f64> {
    let started = js_sys::Date::now();
    while js_sys::Date::now() - started < ms {
        if pending(scheduler) == 0.0 {
            return Some(js_sys::Date::now() - started);
        }
        sleep(20).await;
    }
    None
}

/// An in-page server whose first `failures` submits answer `answer` (a JS expression), then
/// applies each key once (`globalThis[seen].applied`: operation id → times applied, batches
/// included; `keys`: the request ids applied, which a repeat or a query is answered from); the
/// scheduler over it, started, with `retry` options.
async fn flaky(run: &str, seen: &str, failures: u32, answer: &str, retry: &str) -> Scheduler {
    let options = js(&format!(
        "{{ database: 'cs-api-{run}', owner: 'tab-{run}', retry: {retry},
           transport: {{
             submit: async (request) => {{
               const s = (globalThis.{seen} ??= {{ calls: 0, applied: {{}}, keys: {{}} }});
               s.calls += 1;
               if (s.calls <= {failures}) return {answer};
               if (s.keys[request.id]) return {{ outcome: 'applied' }};
               s.keys[request.id] = true;
               for (const id of request.operationIds) s.applied[id] = (s.applied[id] ?? 0) + 1;
               return {{ outcome: 'applied' }};
             }},
             query: async (request) => globalThis.{seen}?.keys[request.id] ? {{ outcome: 'applied' }} : {{ status: 404 }},
           }} }}"
    ));
    let scheduler = match Scheduler::open(options).await {
        Ok(s) => s,
        Err(error) => panic!("open failed: {}", code_of(&error)),
    };
    scheduler.start().expect("start");
    scheduler
}

/// Enqueues one edit, `{run}-0`.
async fn one_edit(scheduler: &Scheduler, run: &str) {
    let intent = js(&format!(
        "({{ id: '{run}-0', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{}} }})"
    ));
    scheduler.enqueue(intent).await.expect("durable");
}

/// `retryAllNow()` sends a request the server told to wait a minute (503 with a
/// `Retry-After`) at once, and it is applied once.
#[wasm_bindgen_test]
async fn s10_retry_all_now_sends_what_waits_at_once() {
    let run = unique("retry-now");
    let seen = format!("__seen_{}", run.replace('-', "_"));
    let scheduler = flaky(&run, &seen, 1, "{ status: 503, retryAfterMs: 60000 }", "{}").await;
    one_edit(&scheduler, &run).await;
    sleep(300).await;
    assert_eq!(pending(&scheduler), 1.0, "waiting for the server's minute");
    let why = scheduler.explain(&format!("{run}-0")).expect("explain");
    let reason = Reflect::get(&why, &"reason".into())
        .ok()
        .and_then(|r| r.as_string());
    assert_eq!(reason.as_deref(), Some("retry_scheduled"));
    JsFuture::from(scheduler.retry_all_now())
        .await
        .expect("retryAllNow");
    assert!(
        drained_within(&scheduler, 5_000.0).await.is_some(),
        "applied at once, not after a minute"
    );
    let applied = js(&format!("Object.values(globalThis.{seen}.applied).join()"));
    scheduler.stop();
    // The query found it missing, and the same request went again: applied once.
    assert_eq!(applied.as_string().as_deref(), Some("1"), "applied once");
}

/// The wall clock set back by an hour while a retry waits the 1.5 s the server asked
/// for. The timer fires on time (it counts real time); the retry must go then, not an hour
/// later.
#[wasm_bindgen_test]
async fn k1_a_wall_clock_set_back_an_hour_stalls_no_retry() {
    let run = unique("clock-back");
    let seen = format!("__seen_{}", run.replace('-', "_"));
    let scheduler = flaky(
        &run,
        &seen,
        1,
        "{ status: 503, retryAfterMs: 1500 }",
        "{ baseMs: 1500, maxMs: 1500 }",
    )
    .await;
    one_edit(&scheduler, &run).await;
    sleep(300).await;
    assert_eq!(pending(&scheduler), 1.0, "waiting the server's 1.5 s");
    js("(globalThis.__realDateNow ??= Date.now, \
        Date.now = () => globalThis.__realDateNow.call(Date) - 3600000)");
    let drained = drained_within(&scheduler, 8_000.0).await;
    js("Date.now = globalThis.__realDateNow");
    assert!(
        drained.is_some(),
        "sent within its backoff, not an hour later"
    );
    let applied = js(&format!("Object.values(globalThis.{seen}.applied).join()"));
    scheduler.stop();
    assert_eq!(applied.as_string().as_deref(), Some("1"), "applied once");
}

/// When the network comes back (`online`), a request waiting on a long backoff goes at
/// once instead of when its backoff ends.
#[wasm_bindgen_test]
async fn s10_online_sends_what_waits_on_backoff_at_once() {
    let run = unique("online");
    let seen = format!("__seen_{}", run.replace('-', "_"));
    let scheduler = flaky(
        &run,
        &seen,
        1,
        "Promise.reject(new TypeError('network down'))",
        "{ baseMs: 60000, maxMs: 60000 }",
    )
    .await;
    one_edit(&scheduler, &run).await;
    sleep(300).await;
    assert_eq!(pending(&scheduler), 1.0, "backing off for a minute");
    js("globalThis.dispatchEvent(new Event('offline')), globalThis.dispatchEvent(new Event('online'))");
    assert!(
        drained_within(&scheduler, 5_000.0).await.is_some(),
        "sent again when the network came back"
    );
    scheduler.stop();
}

/// `dispatched` is logged, and `sent` counted, when the request leaves (`fetch` is
/// called), not when the attempt starts: an attempt whose `headers()` throws never left.
#[wasm_bindgen_test]
async fn k6_dispatched_is_logged_only_for_attempts_that_left() {
    let run = unique("left");
    let calls = format!("__calls_{}", run.replace('-', "_"));
    let scheduler = open(
        &run,
        &format!(
            "concurrency: 1, headers: () => {{
               if ((globalThis.{calls} = (globalThis.{calls} ?? 0) + 1) === 1) throw new Error('refresh');
               return {{}};
             }}"
        ),
    )
    .await;
    scheduler.start().expect("start");
    one_edit(&scheduler, &run).await;
    assert!(
        drained_within(&scheduler, 10_000.0).await.is_some(),
        "applied after the failed attempt"
    );
    let log = JsFuture::from(scheduler.events(js("{ limit: 100 }")))
        .await
        .expect("events");
    let field = |entry: &JsValue, key: &str| Reflect::get(entry, &key.into()).ok();
    let dispatched: Vec<(f64, String)> = js_sys::Array::from(&log)
        .iter()
        .filter(|e| field(e, "kind").and_then(|k| k.as_string()).as_deref() == Some("dispatched"))
        .map(|e| {
            let attempt = field(&e, "attempt").and_then(|a| a.as_f64()).unwrap_or(0.0);
            (
                attempt,
                field(&e, "detail")
                    .and_then(|d| d.as_string())
                    .unwrap_or_default(),
            )
        })
        .collect();
    let sent = Reflect::get(&scheduler.stats(), &"sent".into())
        .ok()
        .and_then(|s| s.as_f64());
    let headers = js(&format!("globalThis.{calls}")).as_f64();
    scheduler.stop();
    // Attempt 1 never left; the next one queries (it could not know), then the submit.
    assert!(
        headers.unwrap_or(0.0) >= 2.0,
        "headers() calls: {headers:?}"
    );
    assert!(
        !dispatched.is_empty() && dispatched.iter().all(|(attempt, _)| *attempt > 1.0),
        "{dispatched:?}"
    );
    assert_eq!(dispatched[0].1, "query", "{dispatched:?}");
    assert_eq!(
        sent,
        Some(dispatched.len() as f64),
        "sent counts what left: {dispatched:?}"
    );
}

/// `pending()` lists what is unsent, `whenSaved()` waits until the server applied it
/// (never before), `onEvent` gets `pending` counts and `saved`, and `stop()` rejects a waiting
/// `whenSaved()` with `scheduler_closed`.
#[wasm_bindgen_test]
async fn issue37_when_saved_pending_and_saved_events_in_a_page() {
    let run = unique("saved");
    let g = format!("__saved_{}", run.replace('-', "_"));
    js(&format!(
        "globalThis.{g} = {{ events: [], gate: null, applied: 0,
           hold: () => new Promise((resolve) => (globalThis.{g}.gate = resolve)) }}"
    ));
    let options = js(&format!(
        "{{ database: 'cs-api-{run}', owner: 'tab-{run}',
           onEvent: (e) => {{ if (e.type === 'pending' || e.type === 'saved') globalThis.{g}.events.push(e); }},
           transport: {{
             submit: async () => {{ await globalThis.{g}.hold(); globalThis.{g}.applied += 1; return {{ outcome: 'applied' }}; }},
             query: async () => ({{ status: 404 }}),
           }} }}"
    ));
    let scheduler = match Scheduler::open(options).await {
        Ok(s) => s,
        Err(error) => panic!("open failed: {}", code_of(&error)),
    };
    scheduler.start().expect("start");
    one_edit(&scheduler, &run).await;
    sleep(100).await;
    let pending = js_sys::Array::from(&scheduler.pending_js().expect("pending"));
    assert_eq!(pending.length(), 1);
    let entry = pending.get(0);
    let field = |name: &str| Reflect::get(&entry, &name.into()).unwrap_or(JsValue::UNDEFINED);
    assert_eq!(field("id").as_string(), Some(format!("{run}-0")));
    assert_eq!(field("state").as_string().as_deref(), Some("in_flight"));
    assert_eq!(
        js_sys::Array::from(&field("canvasIds"))
            .join(",")
            .as_string()
            .as_deref(),
        Some("c")
    );
    let _ = Reflect::set(
        &js("globalThis"),
        &format!("{g}_p").into(),
        &scheduler.when_saved(),
    );
    js(&format!(
        "globalThis.{g}_p.then((v) => (globalThis.{g}.saved = v))"
    ));
    sleep(200).await;
    assert!(
        js(&format!("globalThis.{g}.saved")).is_undefined(),
        "not saved while the request is on the wire"
    );
    js(&format!("globalThis.{g}.gate()"));
    let promise: js_sys::Promise =
        wasm_bindgen::JsCast::unchecked_into(js(&format!("globalThis.{g}_p")));
    let saved = JsFuture::from(promise).await.expect("whenSaved");
    assert_eq!(
        js(&format!("globalThis.{g}.applied")).as_f64(),
        Some(1.0),
        "applied before it resolved"
    );
    assert_eq!(
        Reflect::get(&saved, &"settled".into())
            .ok()
            .and_then(|v| v.as_f64()),
        Some(1.0)
    );
    sleep(100).await;
    let events = js(&format!("JSON.stringify(globalThis.{g}.events)"))
        .as_string()
        .unwrap_or_default();
    assert_eq!(
        events,
        r#"[{"type":"pending","count":1},{"type":"pending","count":0},{"type":"saved"}]"#
    );
    assert_eq!(
        js_sys::Array::from(&scheduler.pending_js().expect("pending")).length(),
        0
    );
    // A second edit held on the wire: stop() rejects its whenSaved().
    let intent = js(&format!(
        "({{ id: '{run}-1', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{}} }})"
    ));
    scheduler.enqueue(intent).await.expect("durable");
    let waiting = scheduler.when_saved();
    sleep(50).await;
    scheduler.stop();
    let error = JsFuture::from(waiting)
        .await
        .expect_err("rejected by stop()");
    assert_eq!(code_of(&error), "scheduler_closed");
}

/// `record.*` kinds batch against the reference server, one request per run
/// of one kind, each applied; `batch.kinds` narrows it.
#[wasm_bindgen_test]
async fn issue37_record_kinds_batch_against_the_reference_server() {
    for (extra, put_requests) in [
        ("batch: { maxOperations: 8, maxBytes: 65536 }", 1),
        (
            "batch: { maxOperations: 8, maxBytes: 65536, kinds: ['record.remove'] }",
            4,
        ),
    ] {
        let run = unique("records");
        let scheduler = open(&run, extra).await;
        let hold = scheduler.hold().expect("hold");
        let mut ids = Vec::new();
        for (i, kind) in ["put", "put", "put", "put", "remove", "remove"]
            .iter()
            .enumerate()
        {
            let id = format!("{run}-{i}");
            let payload = if *kind == "put" {
                format!("{{ record: {{ id: 'shape:{i}', typeName: 'shape' }} }}")
            } else {
                format!("{{ id: 'shape:{}' }}", i - 4)
            };
            scheduler
                .enqueue(js(&format!(
                    "{{ id: '{id}', operationType: 'record.{kind}', canvasIds: ['c-{run}'], payload: {payload} }}"
                )))
                .await
                .expect("valid");
            ids.push(id);
        }
        scheduler.start().expect("start");
        hold.call0(&JsValue::NULL).expect("release");
        settle_all(&scheduler).await;
        let mut requests: Vec<String> = Vec::new();
        for id in &ids {
            let op = scheduler.operation(id);
            let outcome = Reflect::get(&op, &"outcome".into()).unwrap_or(JsValue::UNDEFINED);
            let field = |name: &str| {
                Reflect::get(&outcome, &name.into())
                    .ok()
                    .and_then(|v| v.as_string())
            };
            assert_eq!(
                field("settlement").as_deref(),
                Some("applied"),
                "{extra} {id}"
            );
            requests.push(field("requestId").expect("a request id"));
        }
        let distinct = |list: &[String]| {
            let mut list = list.to_vec();
            list.dedup();
            list.len()
        };
        assert_eq!(distinct(&requests[..4]), put_requests, "{extra}: the puts");
        assert_eq!(
            distinct(&requests[4..]),
            1,
            "{extra}: the removes share one"
        );
        assert_ne!(requests[3], requests[4], "another kind ends a batch");
        scheduler.stop();
    }
}

/// A burst that alternates canvases batches per canvas, with `compile` and
/// `participants` set (each member compiled under the batch's request id), against the
/// reference server.
#[wasm_bindgen_test]
async fn issue37_an_interleaved_burst_batches_with_compile_and_participants_set() {
    let run = unique("interleaved");
    let calls = format!("__compiled_{}", run.replace('-', "_"));
    let hooks = format!(
        "batch: {{ maxOperations: 8, maxBytes: 65536 }},
         participants: (intent) => intent.canvasIds,
         compile: (intent, requestId) => {{
           (globalThis.{calls} ??= []).push(requestId);
           return {{ kind: intent.operationType, payload: intent.payload, canvasIds: intent.canvasIds }};
         }},"
    );
    let scheduler = open(&run, &hooks).await;
    let hold = scheduler.hold().expect("hold");
    let mut ids = Vec::new();
    for i in 0..8 {
        let canvas = if i % 2 == 0 { "a" } else { "b" };
        let id = format!("{run}-{i}");
        scheduler
            .enqueue(js(&format!(
                "{{ id: '{id}', operationType: 'record.put', canvasIds: ['{run}-{canvas}'],
                    payload: {{ record: {{ id: 'shape:{i}', typeName: 'shape' }} }} }}"
            )))
            .await
            .expect("valid");
        ids.push(id);
    }
    scheduler.start().expect("start");
    hold.call0(&JsValue::NULL).expect("release");
    settle_all(&scheduler).await;
    let mut requests = Vec::new();
    for id in &ids {
        let outcome =
            Reflect::get(&scheduler.operation(id), &"outcome".into()).unwrap_or(JsValue::UNDEFINED);
        let field = |name: &str| {
            Reflect::get(&outcome, &name.into())
                .ok()
                .and_then(|v| v.as_string())
        };
        assert_eq!(field("settlement").as_deref(), Some("applied"), "{id}");
        requests.push(field("requestId").expect("a request id"));
    }
    scheduler.stop();
    let a: Vec<&String> = requests.iter().step_by(2).collect();
    let b: Vec<&String> = requests.iter().skip(1).step_by(2).collect();
    assert!(
        a.iter().all(|r| *r == a[0]),
        "canvas a in one request: {requests:?}"
    );
    assert!(
        b.iter().all(|r| *r == b[0]),
        "canvas b in one request: {requests:?}"
    );
    assert_ne!(a[0], b[0]);
    let compiled = js(&format!("globalThis.{calls}.length"));
    assert_eq!(compiled.as_f64(), Some(8.0), "each operation compiled once");
}

/// `coalesceMs` holds a drag's updates back so only the last is written
/// whole and sent (the earlier ones are replaced while held, their writes shared); each
/// enqueue resolves once durable, the first no sooner than its hold allows; out of range it
/// is `invalid_options`.
#[wasm_bindgen_test]
async fn issue37_coalesce_ms_sends_a_drags_last_position_only() {
    let run = unique("coalesce-ms");
    // A long hold: five enqueues 5 ms apart fit in it on a loaded machine too (at 150 ms a
    // fresh-clone run once froze the fourth before the fifth replaced it).
    let scheduler = open(&run, "coalesceMs: 1000,").await;
    scheduler.start().expect("start");
    let started = js_sys::Date::now();
    let mut ids = Vec::new();
    let mut enqueued = Vec::new();
    for x in 0..5 {
        let id = format!("{run}-{x}");
        // As a pointer handler enqueues: without waiting for the last one.
        enqueued.push(JsFuture::from(scheduler.enqueue(js(&format!(
            "{{ id: '{id}', operationType: 'shape.upsert', canvasIds: ['c-{run}'],
                coalesceKey: 'drag:s', payload: {{ shapeId: 's', shape: {{ x: {x} }} }} }}"
        )))));
        ids.push(id);
        sleep(5).await;
    }
    let why = scheduler.explain(&ids[4]).expect("explain");
    let reason = Reflect::get(&why, &"reason".into())
        .ok()
        .and_then(|r| r.as_string());
    assert_eq!(reason.as_deref(), Some("coalescing"), "held back");
    for enqueue in enqueued {
        enqueue.await.expect("valid");
    }
    assert!(
        js_sys::Date::now() - started >= 900.0,
        "a held drag is written when its first hold would end, not at each update"
    );
    settle_all(&scheduler).await;
    let settlement = |id: &String| {
        let outcome =
            Reflect::get(&scheduler.operation(id), &"outcome".into()).unwrap_or(JsValue::UNDEFINED);
        Reflect::get(&outcome, &"settlement".into())
            .ok()
            .and_then(|v| v.as_string())
    };
    for id in &ids[..4] {
        assert_eq!(
            settlement(id).as_deref(),
            Some("discarded"),
            "{id} replaced"
        );
    }
    assert_eq!(
        settlement(&ids[4]).as_deref(),
        Some("applied"),
        "the last sent"
    );
    scheduler.stop();
    let refused = Scheduler::open(js(
        "{ database: 'd-coalesce', endpoint: 'http://x', coalesceMs: 1001 }",
    ))
    .await
    .err()
    .expect("refused");
    assert_eq!(code_of(&refused), "invalid_options");
}
