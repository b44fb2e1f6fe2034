//! Security, through the exported `Scheduler` against the
//! token-enabled reference server (`CANVAS_SCHEDULER_TEST_AUTH_SERVER`, started by
//! `scripts/test` with `--tokens user-a:tokA,user-b:tokB`):
//!
//! - Principals: a request is never sent under another principal's credentials, and waits for a
//!   session of its own principal;
//! - No secrets in errors: no header value (token) reaches an event, the event log, `explain`,
//!   `operation` or a rejected `Error`;
//! - The protocol: a reused idempotency key with a different body is refused, through
//!   `FetchTransport` (the server's own test is `www/server/test/protocol.test.mjs`).
//!
//! A `headers()` hook that *throws* an Error whose own message holds the token is covered too:
//! only the error's class is reported (`headers_unavailable: the hook threw Error`).
//!
//! The page and the worker binaries share the server: every id carries the global's
//! constructor name and a random part.

use canvas_scheduler::api::scheduler::Scheduler;
use canvas_scheduler::web::transport::FetchTransport;
use canvas_scheduler_core::{AttemptOutcome, AttemptStatus, FrozenRequest, RetryAction, SendOrder};
use js_sys::{Array, Reflect};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::{code_of, js, proxy_400, sleep};
use web_sys::AbortController;

use super::transport::{http_at, now, shape, unique, Draft};

/// The auth reference server's URL, baked in by `scripts/test`.
fn auth_server() -> &'static str {
    match option_env!("CANVAS_SCHEDULER_TEST_AUTH_SERVER") {
        Some(url) if !url.is_empty() => url,
        _ => panic!(
            "CANVAS_SCHEDULER_TEST_AUTH_SERVER is not set: run the browser tests with \
             scripts/test (npm test)"
        ),
    }
}

/// Loopback port 9 refuses connections: every attempt is `transport_unknown` ("offline").
const UNREACHABLE: &str = "http://127.0.0.1:9";

fn text(value: &JsValue, key: &str) -> Option<String> {
    Reflect::get(value, &key.into())
        .ok()
        .and_then(|v| v.as_string())
}

async fn open(options: String) -> Scheduler {
    match Scheduler::open(js(&options)).await {
        Ok(scheduler) => scheduler,
        Err(error) => panic!(
            "open failed: {} {:?}",
            code_of(&error),
            text(&error, "message")
        ),
    }
}

fn reason(scheduler: &Scheduler, id: &str) -> String {
    match scheduler.explain(id) {
        Ok(why) => text(&why, "reason").unwrap_or_default(),
        Err(error) => format!("explain failed: {}", code_of(&error)),
    }
}

/// Polls until every id's `explain` reason is `expected` (about 10 s at most).
async fn wait_reasons(scheduler: &Scheduler, ids: &[String], expected: &str) {
    for _ in 0..400 {
        if ids.iter().all(|id| reason(scheduler, id) == expected) {
            return;
        }
        let _ = scheduler.settle().await;
        sleep(25).await;
    }
    let seen: Vec<(String, String)> = ids
        .iter()
        .map(|id| (id.clone(), reason(scheduler, id)))
        .collect();
    panic!("expected every reason to be {expected}: {seen:?}");
}

async fn admin_state() -> Value {
    let (status, state) = http_at(auth_server(), "GET", "/admin/state", None).await;
    assert_eq!(status, 200, "{state}");
    state
}

fn intent(id: &str, canvas: &str) -> JsValue {
    js(&format!(
        "{{ id: '{id}', operationType: 'shape.upsert', canvasIds: ['{canvas}'], payload: {{ shapeId: 's-{id}', shape: {{ w: 1 }} }} }}"
    ))
}

/// Options of one session on `database` as `principal` with `token`.
fn session(run: &str, tag: &str, endpoint: &str, principal: &str, token: &str) -> String {
    format!(
        "{{ database: 'cs-sec-{run}', endpoint: '{endpoint}', owner: 'tab-{tag}-{run}', leaseMs: 1000,
           retry: {{ baseMs: 20, maxMs: 50 }}, principal: '{principal}',
           headers: () => ({{ authorization: 'Bearer {token}' }}) }}"
    )
}

#[wasm_bindgen_test]
async fn k3_a_request_is_never_sent_under_another_principals_credentials() {
    let run = unique("k3");
    let a: Vec<String> = (1..=3).map(|i| format!("{run}-a{i}")).collect();
    let b: Vec<String> = (1..=2).map(|i| format!("{run}-b{i}")).collect();

    // Session 1, user-a, offline: a1 is frozen and tried (transport_unknown), a2 and a3 are
    // enqueued under a hold and never frozen.
    let first = open(session(&run, "a1", UNREACHABLE, "user-a", "tokA")).await;
    first.start().expect("start");
    first
        .enqueue(intent(&a[0], &format!("{run}-ca1")))
        .await
        .expect("durable");
    let mut tried = false;
    for _ in 0..400 {
        let why = first.explain(&a[0]).expect("explain");
        let attempt = Reflect::get(&why, &"attempt".into())
            .ok()
            .and_then(|n| n.as_f64())
            .unwrap_or(0.0);
        if attempt >= 1.0 && text(&why, "reason").as_deref() != Some("sending") {
            tried = true;
            break;
        }
        sleep(10).await;
    }
    assert!(tried, "a1 was tried offline: {}", reason(&first, &a[0]));
    let _hold = first.hold().expect("hold");
    first
        .enqueue(intent(&a[1], &format!("{run}-ca2")))
        .await
        .expect("durable");
    first
        .enqueue(intent(&a[2], &format!("{run}-ca3")))
        .await
        .expect("durable");
    let a1_request = text(&first.operation(&a[0]), "requestId").expect("a1 was frozen");
    first.stop();
    sleep(1_300).await; // the stopped session's lease (1 s) expires

    // Session 2, same database, user-b with B's token: B's work is applied, A's is never sent.
    let second = open(session(&run, "b", auth_server(), "user-b", "tokB")).await;
    second.start().expect("start");
    for (i, id) in b.iter().enumerate() {
        second
            .enqueue(intent(id, &format!("{run}-cb{i}")))
            .await
            .expect("durable");
    }
    wait_reasons(&second, &b, "applied").await;
    sleep(300).await; // A's retries were due long ago: give a wrong send every chance
    for id in &a {
        assert_eq!(reason(&second, id), "other_principal", "{id}");
    }
    let state = admin_state().await;
    for id in &b {
        let applied = &state["operations"][id]["applied"];
        assert_eq!(applied.as_array().map(Vec::len), Some(1), "{id}: {applied}");
        assert_eq!(applied[0]["principal"], "user-b", "{id}: {applied}");
    }
    assert_eq!(
        state["requests"][&a1_request],
        Value::Null,
        "the server never saw A's key"
    );
    for (key, record) in state["requests"].as_object().expect("requests") {
        let ids = record["operationIds"].to_string();
        for id in &a {
            assert!(
                !ids.contains(&format!("\"{id}\"")),
                "{id} reached the server under {key}"
            );
        }
    }
    second.stop();
    sleep(1_300).await;

    // Session 3, user-a again with A's token: A's operations are applied, as user-a.
    let third = open(session(&run, "a2", auth_server(), "user-a", "tokA")).await;
    third.start().expect("start");
    wait_reasons(&third, &a, "applied").await;
    let state = admin_state().await;
    for id in a.iter().chain(&b) {
        let applied = &state["operations"][id]["applied"];
        assert_eq!(applied.as_array().map(Vec::len), Some(1), "{id}: {applied}");
        let principal = if a.contains(id) { "user-a" } else { "user-b" };
        assert_eq!(applied[0]["principal"], principal, "{id}: {applied}");
    }
    let record = &state["requests"][&a1_request];
    assert_eq!(
        record["principal"], "user-a",
        "a1 keeps its frozen key: {record}"
    );
    assert_eq!(record["applications"], 1, "{record}");
    third.stop();
}

/// Fails if `value`, as JSON (and, for an Error, its message and code), holds a secret.
fn assert_clean(what: &str, value: &JsValue, secrets: &[&str]) {
    let mut shown = js_sys::JSON::stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default();
    for key in ["message", "code", "stack"] {
        shown.push_str(&text(value, key).unwrap_or_default());
    }
    for secret in secrets {
        assert!(
            !shown.contains(secret),
            "{what} leaks a header value: {shown}"
        );
    }
}

#[wasm_bindgen_test]
async fn k5_errors_and_events_carry_no_header_or_token_values() {
    let run = unique("k5");
    let random = (js_sys::Math::random() * 1e12) as u64;
    let secret = format!("s3cr3t-{random}");
    let api_key = format!("k3y-{random}");
    let nested = format!("n3st3d-{random}");
    let secrets = [secret.as_str(), api_key.as_str(), nested.as_str()];
    let events = format!("__security_{}", run.replace('-', "_"));
    // headers(): 1st call throws (a message holding the secret), 2nd returns a non-string
    // value holding a secret, then a wrong bearer token and an API key (401 from the server).
    let hooks = format!(
        "principal: 'user-a', concurrency: 1,
         onEvent: (e) => (globalThis.{events} ??= []).push(e),
         headers: () => {{
           const n = (globalThis.{events}_calls = (globalThis.{events}_calls ?? 0) + 1);
           if (n === 1) throw new Error('token refresh failed for Bearer {secret}');
           if (n === 2) return {{ authorization: 'Bearer {secret}', 'x-nested': {{ token: '{nested}' }} }};
           return {{ authorization: 'Bearer {secret}', 'x-api-key': '{api_key}' }};
         }}"
    );
    let online = open(format!(
        "{{ database: 'cs-sec-{run}', endpoint: '{}', owner: 'tab-{run}', leaseMs: 1000,
           retry: {{ baseMs: 20, maxMs: 50, maxAttempts: 3 }}, {hooks} }}",
        auth_server()
    ))
    .await;
    online.start().expect("start");
    let unauthorized: Vec<String> = (1..=2).map(|i| format!("{run}-u{i}")).collect();
    for (i, id) in unauthorized.iter().enumerate() {
        online
            .enqueue(intent(id, &format!("{run}-cu{i}")))
            .await
            .expect("durable");
    }
    wait_reasons(&online, &unauthorized, "unauthorized").await;
    // resume() sends again with the same (wrong) credentials: still 401, still clean.
    online.resume().await.expect("resume");
    wait_reasons(&online, &unauthorized, "unauthorized").await;

    // Dead letters: the same hooks behind a proxy that answers HTML 400, two attempts at most.
    let offline = open(format!(
        "{{ database: 'cs-sec-dead-{run}', endpoint: '{}', owner: 'tab-dead-{run}',
           leaseMs: 1000, retry: {{ baseMs: 1, maxMs: 5, maxAttempts: 2 }}, {hooks} }}",
        proxy_400()
    ))
    .await;
    offline.start().expect("start");
    let dead = format!("{run}-dead");
    offline
        .enqueue(intent(&dead, &format!("{run}-cd")))
        .await
        .expect("durable");
    wait_reasons(&offline, std::slice::from_ref(&dead), "dead_letter").await;

    // Rejected calls: their Errors carry no header value either.
    let mut rejected = Vec::new();
    rejected.push(online.explain("missing").expect_err("unknown"));
    rejected.push(online.flush("missing".into()).await.expect_err("unknown"));
    rejected.push(online.retry("missing".into()).await.expect_err("unknown"));
    rejected.push(
        online
            .enqueue(intent(&unauthorized[0], "c"))
            .await
            .expect_err("duplicate"),
    );
    rejected.push(
        online
            .events(js("{ after: -1 }"))
            .await
            .expect_err("bad after"),
    );
    for error in &rejected {
        assert_clean("a rejected call", error, &secrets);
    }

    let seen = js(&format!("globalThis.{events} ?? []"));
    let kinds: Vec<String> = Array::from(&seen)
        .iter()
        .filter_map(|e| text(&e, "type"))
        .collect();
    assert!(kinds.iter().any(|k| k == "blocked"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "dead_lettered"), "{kinds:?}");
    for event in Array::from(&seen).iter() {
        assert_clean("an onEvent event", &event, &secrets);
    }
    for scheduler in [&online, &offline] {
        let log = scheduler
            .events(js("{ limit: 1000 }"))
            .await
            .expect("events");
        assert!(Array::from(&log).length() > 0);
        for entry in Array::from(&log).iter() {
            assert_clean("an event log entry", &entry, &secrets);
        }
        assert_clean("stats()", &scheduler.stats(), &secrets);
        assert_clean("claims()", &scheduler.claims(), &secrets);
    }
    for id in &unauthorized {
        assert_clean("explain()", &online.explain(id).expect("explain"), &secrets);
        assert_clean("operation()", &online.operation(id), &secrets);
    }
    assert_clean(
        "explain()",
        &offline.explain(&dead).expect("explain"),
        &secrets,
    );
    assert_clean("operation()", &offline.operation(&dead), &secrets);
    // The headers hook ran through all three branches.
    let calls = js(&format!("globalThis.{events}_calls")).as_f64();
    assert!(calls.unwrap_or(0.0) >= 4.0, "headers() calls: {calls:?}");
    online.stop();
    offline.stop();
}

async fn send_with_token(request: &FrozenRequest) -> AttemptStatus {
    let order = SendOrder {
        attempt: 1,
        action: RetryAction::Submit,
        request: request.clone(),
    };
    let headers = vec![("authorization".to_owned(), "Bearer tokA".to_owned())];
    let caller = AbortController::new().expect("controller");
    FetchTransport::new(auth_server(), 5_000)
        .send(&order, &headers, None, &caller.signal(), now, || ())
        .await
}

#[wasm_bindgen_test]
async fn p7_a_reused_key_with_another_body_is_refused_and_the_first_outcome_stands() {
    let original = shape("reused-key");
    let first = original.freeze();
    let mut other = Draft::new(
        "shape.upsert",
        "reused-key-other",
        json!({"shapeId": "s1", "shape": {"x": 999}}),
    );
    other.id = original.id.clone();
    other.canvas = original.canvas.clone();
    let second = other.freeze();
    assert_eq!(second.id, first.id);
    assert_ne!(second.body, first.body);

    let applied = send_with_token(&first).await;
    assert_eq!(applied.outcome, AttemptOutcome::Applied, "{applied:?}");
    let refused = send_with_token(&second).await;
    assert_eq!(refused.outcome, AttemptOutcome::Rejected, "{refused:?}");
    assert!(
        format!("{refused:?}").contains("idempotency_key_reused"),
        "{refused:?}"
    );
    let again = send_with_token(&first).await;
    assert_eq!(again, applied, "the first outcome stands");
    let state = admin_state().await;
    let record = &state["requests"][&first.id];
    assert_eq!(record["applications"], 1, "{record}");
    assert_eq!(record["principal"], "user-a", "{record}");
}
