//! A hostile network in the browser, against `www/server/testing/hostile.mjs` (two instances, two
//! origins, started by `scripts/test`): redirects are never followed and nothing reaches
//! another origin, a proxy's 4xx is a dead letter, answers are read with a byte limit, a huge
//! `Retry-After` does not stop the ledger, and server text never carries `headers()` values.

use canvas_scheduler::api::scheduler::Scheduler;
use canvas_scheduler::web::transport::FetchTransport;
use canvas_scheduler_core::{AttemptOutcome, AttemptStatus, RetryAction, SendOrder};
use js_sys::Reflect;
use serde_json::Value;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;
use web_sys::AbortController;

use super::support::{code_of, js, sleep};
use super::transport::{code, http_at, shape, unique};

const SECRET: &str = "tok-3f9a-secret";

fn env(value: Option<&'static str>, name: &str) -> &'static str {
    match value {
        Some(url) if !url.is_empty() => url,
        _ => panic!("{name} is not set: run the browser tests with scripts/test (npm test)"),
    }
}

/// The endpoint side of the hostile network.
fn hostile() -> &'static str {
    env(
        option_env!("CANVAS_SCHEDULER_TEST_HOSTILE"),
        "CANVAS_SCHEDULER_TEST_HOSTILE",
    )
}

/// Another origin, which records whatever reaches it.
fn elsewhere() -> &'static str {
    env(
        option_env!("CANVAS_SCHEDULER_TEST_ELSEWHERE"),
        "CANVAS_SCHEDULER_TEST_ELSEWHERE",
    )
}

/// Sends one attempt to `endpoint` with a credential header, as the driver would.
async fn send_to(transport: FetchTransport, action: RetryAction) -> AttemptStatus {
    let order = SendOrder {
        attempt: 1,
        action,
        request: shape("hostile").freeze(),
    };
    let headers = vec![("x-api-key".to_owned(), SECRET.to_owned())];
    let caller = AbortController::new().expect("controller");
    let status = transport
        .send(
            &order,
            &headers,
            None,
            &caller.signal(),
            super::transport::now,
            || (),
        )
        .await;
    assert!(!format!("{status:?}").contains(SECRET), "{status:?}");
    status
}

async fn send(endpoint: &str, action: RetryAction) -> AttemptStatus {
    send_to(FetchTransport::new(endpoint, 5_000), action).await
}

/// What reached the other origin under `tag`.
async fn recorded(tag: &str) -> Vec<Value> {
    let (status, list) = http_at(elsewhere(), "GET", &format!("/recorded/{tag}"), None).await;
    assert_eq!(status, 200);
    list.as_array().cloned().unwrap_or_default()
}

fn redirecting(status: u16, tag: &str) -> String {
    let target = format!("{}/record/{tag}", elsewhere());
    format!(
        "{}/redirect/{status}/{}",
        hostile(),
        String::from(js_sys::encode_uri_component(&target))
    )
}

#[wasm_bindgen_test]
async fn p7_a_redirect_to_another_origin_is_a_transport_failure_and_sends_nothing_there() {
    // The recorder itself answers: a fetch that reaches it is seen.
    let probe = unique("probe");
    let direct = send(
        &format!("{}/record/{probe}", elsewhere()),
        RetryAction::Submit,
    )
    .await;
    assert_eq!(direct.outcome, AttemptOutcome::Applied, "{direct:?}");
    assert_eq!(recorded(&probe).await.len(), 1);

    for (status, action) in [
        (307, RetryAction::Submit),
        (308, RetryAction::Submit),
        (303, RetryAction::Submit),
        (302, RetryAction::Query),
        (301, RetryAction::Query),
    ] {
        let tag = unique(&format!("r{status}"));
        let answer = send(&redirecting(status, &tag), action).await;
        assert_eq!(
            answer.outcome,
            AttemptOutcome::Unresolved,
            "{status}: a redirect is never an outcome: {answer:?}"
        );
        assert_eq!(code(&answer), Some("transport_unknown"), "{status}");
        assert_eq!(answer.retryable, None, "{status}: retried");
        assert!(
            recorded(&tag).await.is_empty(),
            "{status}: something reached the other origin"
        );
    }
}

#[wasm_bindgen_test]
async fn p7_a_proxys_4xx_without_a_protocol_body_dead_letters_and_421_is_retried() {
    for status in [400u16, 405, 413, 431] {
        let answer = send(
            &format!("{}/status/{status}/-", hostile()),
            RetryAction::Submit,
        )
        .await;
        assert_eq!(answer.outcome, AttemptOutcome::Unresolved, "{answer:?}");
        assert_eq!(answer.retryable, Some(false), "{status}: a dead letter");
        let expected = format!("http_{status}");
        assert_eq!(code(&answer), Some(expected.as_str()));
    }
    let misdirected = send(&format!("{}/status/421/3", hostile()), RetryAction::Query).await;
    assert_eq!(misdirected.outcome, AttemptOutcome::Unresolved);
    assert_eq!(misdirected.retryable, None, "421 is retried");
    assert_eq!(misdirected.retry_after_ms, Some(3_000));
}

#[wasm_bindgen_test]
async fn p7_an_answer_over_the_byte_limit_is_answer_too_large_and_retried() {
    for mode in ["chunked", "length"] {
        let big = format!("{}/big/{}/{mode}", hostile(), 2 << 20);
        let answer = send(&big, RetryAction::Submit).await;
        assert_eq!(
            answer.outcome,
            AttemptOutcome::Unresolved,
            "{mode}: {answer:?}"
        );
        assert_eq!(code(&answer), Some("answer_too_large"), "{mode}");
        let fits = format!("{}/big/{}/{mode}", hostile(), 100_000);
        let answer = send(&fits, RetryAction::Submit).await;
        assert_eq!(
            answer.outcome,
            AttemptOutcome::Applied,
            "{mode}: {answer:?}"
        );
    }
    let small = FetchTransport::new(&format!("{}/big/2000/chunked", hostile()), 5_000)
        .with_max_answer_bytes(1_024);
    let answer = send_to(small, RetryAction::Query).await;
    assert_eq!(code(&answer), Some("answer_too_large"), "{answer:?}");
}

/// An answer's bytes are decoded as `Response.text()` decodes them, across chunks: the byte
/// order mark dropped, characters split between writes joined, an invalid byte replaced by
/// U+FFFD (the body is read in chunks and decoded in the module, not through a `Blob`).
#[wasm_bindgen_test]
async fn p7_an_answer_is_decoded_as_utf8_across_chunks_bom_dropped_invalid_bytes_replaced() {
    let answer = send(&format!("{}/utf8", hostile()), RetryAction::Submit).await;
    assert_eq!(answer.outcome, AttemptOutcome::Applied, "{answer:?}");
    let canonical: Value = serde_json::from_str(
        answer
            .canonical
            .as_ref()
            .map(|c| c.text())
            .expect("canonical"),
    )
    .expect("canonical is JSON");
    assert_eq!(canonical["text"], "\u{e9}\u{20ac}\u{1f600}", "{canonical}");
    assert_eq!(canonical["bad"], "a\u{fffd}b", "{canonical}");
}

async fn open(run: &str, endpoint: &str, extra: &str) -> Scheduler {
    let options = js(&format!(
        "{{ database: 'cs-hostile-{run}', endpoint: '{endpoint}', owner: 'tab-{run}', leaseMs: 1000, {extra} }}"
    ));
    match Scheduler::open(options).await {
        Ok(scheduler) => scheduler,
        Err(error) => panic!("open failed: {}", code_of(&error)),
    }
}

fn intent(id: &str, canvas: &str) -> JsValue {
    js(&format!(
        "{{ id: '{id}', operationType: 'shape.upsert', canvasIds: ['{canvas}'], payload: {{ shapeId: 's' }} }}"
    ))
}

fn field(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

/// Waits (bounded) until `ready` holds for the scheduler.
async fn until(what: &str, ready: impl Fn() -> bool) {
    for _ in 0..200 {
        if ready() {
            return;
        }
        sleep(25).await;
    }
    panic!("timed out waiting for {what}");
}

#[wasm_bindgen_test]
async fn s10_a_real_503_with_a_huge_retry_after_then_more_enqueues_are_durable() {
    let run = unique("retry-after");
    let endpoint = format!("{}/status/503/10000000000000", hostile());
    let scheduler = open(&run, &endpoint, "").await;
    scheduler.start().expect("start");
    JsFuture::from(scheduler.enqueue(intent("first", "c1")))
        .await
        .expect("first enqueue");
    until("a retry of the 503", || {
        field(&scheduler.explain("first").unwrap_or_default(), "reason")
            .as_string()
            .as_deref()
            == Some("retry_scheduled")
    })
    .await;
    let due = field(&scheduler.explain("first").expect("explain"), "dueAt")
        .as_f64()
        .expect("dueAt");
    let now = js_sys::Date::now();
    assert!(due <= now + 86_400_000.0 + 1_000.0, "due {due} at {now}");
    // The ledger still takes work, in this tab and for any other.
    for id in ["second", "third"] {
        let enqueued = JsFuture::from(scheduler.enqueue(intent(id, "c2"))).await;
        if let Err(error) = enqueued {
            panic!("{id}: {}", code_of(&error));
        }
    }
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn k5_server_text_quoting_headers_is_stored_and_reported_without_them() {
    let run = unique("echo");
    let endpoint = format!("{}/echo", hostile());
    js("globalThis.__hostileEvents = []");
    let scheduler = open(
        &run,
        &endpoint,
        &format!(
            "headers: () => ({{ authorization: 'Bearer {SECRET}', 'x-api-key': 'key-{SECRET}' }}), \
             onEvent: (event) => globalThis.__hostileEvents.push(JSON.stringify(event))"
        ),
    )
    .await;
    scheduler.start().expect("start");
    JsFuture::from(scheduler.enqueue(intent("echoed", "c1")))
        .await
        .expect("enqueue");
    until("the rejection", || {
        let op = scheduler.operation("echoed");
        !field(&op, "outcome").is_undefined()
    })
    .await;
    let op = scheduler.operation("echoed");
    let stored = String::from(js_sys::JSON::stringify(&op).expect("stringify"));
    let events = String::from(
        js_sys::JSON::stringify(&js("globalThis.__hostileEvents")).expect("stringify"),
    );
    assert!(stored.contains("bad_token"), "{stored}");
    assert!(stored.contains("[redacted]"), "{stored}");
    for text in [&stored, &events] {
        assert!(!text.contains(SECRET), "a credential leaked: {text}");
    }
    let log = JsFuture::from(scheduler.events(js("{ limit: 100 }")))
        .await
        .expect("events");
    let log = String::from(js_sys::JSON::stringify(&log).expect("stringify"));
    assert!(!log.contains(SECRET), "{log}");
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn p7_max_answer_bytes_and_the_endpoint_are_checked_at_open() {
    let run = unique("opts");
    for (extra, endpoint) in [
        ("maxAnswerBytes: 10", "http://127.0.0.1:1"),
        ("maxAnswerBytes: 1500.5", "http://127.0.0.1:1"),
        ("maxAnswerBytes: '4096'", "http://127.0.0.1:1"),
        ("maxAnswerBytes: 1e12", "http://127.0.0.1:1"),
        ("", "http://user:pw@127.0.0.1:1"),
        ("", "http://127.0.0.1:1/v1?key=1"),
        ("", "http://127.0.0.1:1/#x"),
        ("", "http:"),
    ] {
        let options = js(&format!(
            "{{ database: 'cs-hostile-{run}', endpoint: '{endpoint}', {extra} }}"
        ));
        let error = Scheduler::open(options).await.err().expect(extra);
        assert_eq!(code_of(&error), "invalid_options", "{extra} {endpoint}");
    }
    let fine = open(&run, "http://127.0.0.1:1/v1/", "maxAnswerBytes: 4096").await;
    fine.stop();
}

/// A server's answer holding an integer beyond 2^53 (`canonical.big`): the `settled` event and
/// `operation(id)` keep the object, with that one number as the string of its exact digits.
#[wasm_bindgen_test]
async fn an_integer_beyond_2_53_in_an_answer_is_a_string_and_the_object_is_kept() {
    let run = unique("huge");
    let events = format!("__huge_{}", run.replace('-', "_"));
    js(&format!("globalThis.{events} = []"));
    let endpoint = format!("{}/huge", hostile());
    let scheduler = open(
        &run,
        &endpoint,
        &format!(
            "onEvent: (event) => {{ if (event === null || event.type === 'settled') globalThis.{events}.push(event); }}"
        ),
    )
    .await;
    scheduler.start().expect("start");
    JsFuture::from(scheduler.enqueue(intent("huge", "c1")))
        .await
        .expect("enqueue");
    until("the settled event", || {
        js(&format!("globalThis.{events}.length > 0")).is_truthy()
    })
    .await;
    let event = js(&format!("globalThis.{events}[0]"));
    assert!(!event.is_null(), "the settled event was null");
    let canonical = field(&event, "canonical");
    assert_eq!(
        field(&canonical, "big").as_string().as_deref(),
        Some("12345678901234567890"),
        "the integer as its exact digits"
    );
    assert_eq!(
        field(&canonical, "kept").as_string().as_deref(),
        Some("yes")
    );
    assert_eq!(field(&canonical, "small").as_f64(), Some(7.0));
    let op = scheduler.operation("huge");
    assert!(!op.is_null(), "operation(id) was null");
    let stored = field(&field(&op, "outcome"), "canonical");
    assert_eq!(
        field(&stored, "big").as_string().as_deref(),
        Some("12345678901234567890")
    );
    assert_eq!(field(&stored, "small").as_f64(), Some(7.0));
    scheduler.stop();
}

/// How `value` holds `{"__proto__": {"polluted": true}, "a": 1}`: its own keys (sorted),
/// whether its prototype is still `Object.prototype`, the own `__proto__` member's `polluted`,
/// and what `polluted` reads on the value and on a fresh object.
fn proto_shape(value: &JsValue) -> String {
    let _ = Reflect::set(&js("globalThis"), &"__protoSeen".into(), value);
    js("(() => { const v = globalThis.__protoSeen; \
        return JSON.stringify([Object.keys(v).sort(), Object.getPrototypeOf(v) === Object.prototype, \
          Object.getOwnPropertyDescriptor(v, '__proto__')?.value?.polluted ?? null, \
          v.polluted ?? null, ({}).polluted ?? null]); })()")
    .as_string()
    .unwrap_or_default()
}

/// A server's JSON holding a `"__proto__"` key (an applied answer's `canonical`, a rejection's
/// error `details`) reaches the host as an own member, as `JSON.parse` makes it: in the
/// `settled` event and in `operation(id)`, the object keeps `Object.prototype` and nothing
/// else is polluted.
#[wasm_bindgen_test]
async fn a_proto_key_in_a_servers_json_stays_an_own_member_in_every_view() {
    const OWN: &str = r#"[["__proto__","a"],true,true,null,null]"#;
    for (route, outcome) in [("proto", "applied"), ("proto-details", "rejected")] {
        let run = unique(route);
        let events = format!("__proto_events_{}", run.replace('-', "_"));
        js(&format!("globalThis.{events} = []"));
        let endpoint = format!("{}/{route}", hostile());
        let scheduler = open(
            &run,
            &endpoint,
            &format!(
                "onEvent: (event) => {{ if (event === null || event.type === 'settled') globalThis.{events}.push(event); }}"
            ),
        )
        .await;
        scheduler.start().expect("start");
        JsFuture::from(scheduler.enqueue(intent("proto", "c1")))
            .await
            .expect("enqueue");
        until("the settled event", || {
            js(&format!("globalThis.{events}.length > 0")).is_truthy()
        })
        .await;
        let event = js(&format!("globalThis.{events}[0]"));
        assert!(!event.is_null(), "{route}: the settled event was null");
        assert_eq!(
            field(&event, "outcome").as_string().as_deref(),
            Some(outcome),
            "{route}"
        );
        let outcome_of = field(&scheduler.operation("proto"), "outcome");
        let (from_event, stored) = if outcome == "applied" {
            (field(&event, "canonical"), field(&outcome_of, "canonical"))
        } else {
            (
                field(&field(&event, "error"), "details"),
                field(&field(&outcome_of, "error"), "details"),
            )
        };
        assert_eq!(proto_shape(&from_event), OWN, "{route}: the settled event");
        assert_eq!(proto_shape(&stored), OWN, "{route}: operation(id)");
        scheduler.stop();
    }
}
