//! The `fetch` transport and the wire protocol (docs/protocol.md) against the real reference server
//! (`www/server`), started by `scripts/test`, which passes its URL as
//! `CANVAS_SCHEDULER_TEST_SERVER` at build time. Without it these tests fail: a protocol test that
//! silently skips is worse than none.
//!
//! The page and the worker binaries share one server, so every id carries the global's
//! constructor name and a random part. Faults are global to the server: each test sets all of
//! them first (tests in a binary run one at a time, the binaries one after the other).

use canvas_scheduler::web::transport::FetchTransport;
use canvas_scheduler_core::{
    body_digest, AttemptOutcome, AttemptStatus, FrozenRequest, RequestPhase, RetryAction,
    SendOrder, Settlement, WireBody,
};

use super::support::js;
use js_sys::{Function, Promise};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;
use web_sys::{AbortController, Blob, RequestInit, Response};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = fetch)]
    fn test_fetch(input: &str, init: &RequestInit) -> Promise;

    #[wasm_bindgen(js_name = setTimeout)]
    fn test_set_timeout(handler: &Function, timeout_ms: i32) -> JsValue;
}

/// The reference server's URL, baked in by `scripts/test`.
fn server() -> &'static str {
    match option_env!("CANVAS_SCHEDULER_TEST_SERVER") {
        Some(url) if !url.is_empty() => url,
        _ => panic!(
            "CANVAS_SCHEDULER_TEST_SERVER is not set: run the browser tests with scripts/test \
             (npm test), which starts www/server and passes its URL to the wasm build"
        ),
    }
}

/// The reference servers' admin token (`--admin-token`), baked in by `scripts/test`.
pub(super) fn admin_token() -> &'static str {
    match option_env!("CANVAS_SCHEDULER_TEST_ADMIN_TOKEN") {
        Some(token) if !token.is_empty() => token,
        _ => panic!(
            "CANVAS_SCHEDULER_TEST_ADMIN_TOKEN is not set: run the browser tests with scripts/test"
        ),
    }
}

/// An id no other test, binary or run uses.
pub(super) fn unique(label: &str) -> String {
    let global = String::from(js_sys::global().constructor().name());
    let random = (js_sys::Math::random() * 1e12) as u64;
    format!("{global}-{label}-{random}")
}

pub(super) fn now() -> u64 {
    js_sys::Date::now() as u64
}

async fn sleep(ms: i32) {
    let promise = Promise::new(&mut |resolve, _| {
        test_set_timeout(&resolve, ms);
    });
    JsFuture::from(promise).await.expect("sleep");
}

/// A raw request to the server; returns the status and the body as JSON (`Null` when empty).
async fn http(method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    http_at(server(), method, path, body).await
}

/// A raw request to the server at `base` (`http` for the open server).
pub(super) async fn http_at(
    base: &str,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let init = RequestInit::new();
    init.set_method(method);
    let headers = web_sys::Headers::new().expect("headers");
    if path.starts_with("/admin/") {
        headers
            .set("x-admin-token", admin_token())
            .expect("x-admin-token");
    }
    if let Some(body) = body {
        headers
            .set("content-type", "application/json")
            .expect("content-type");
        init.set_body(&JsValue::from_str(&body.to_string()));
    }
    init.set_headers(&headers);
    let response: Response = JsFuture::from(test_fetch(&format!("{base}{path}"), &init))
        .await
        .expect("admin fetch")
        .dyn_into()
        .expect("a Response");
    let text = JsFuture::from(response.text().expect("text"))
        .await
        .expect("body")
        .as_string()
        .unwrap_or_default();
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).expect("JSON from the server")
    };
    (response.status(), value)
}

/// Sets every fault: the defaults, then `overrides`.
async fn faults(overrides: Value) {
    let mut settings = json!({
        "latencyMs": 0, "dropAfterApplyRate": 0, "serverErrorRate": 0, "tooManyRate": 0,
        "retryAfterSeconds": 1, "offline": false,
    });
    for (key, value) in overrides.as_object().expect("an object") {
        settings[key] = value.clone();
    }
    let (status, answer) = http("POST", "/admin/faults", Some(&settings)).await;
    assert_eq!(status, 200, "admin faults: {answer}");
}

/// What the server recorded for one key (`Null` if it never received it).
async fn server_record(id: &str) -> Value {
    let (status, state) = http("GET", "/admin/state", None).await;
    assert_eq!(status, 200);
    state["requests"][id].clone()
}

/// A frozen request whose body is exactly what the core freezes (`WireBody`).
pub(super) struct Draft {
    pub(super) id: String,
    kind: &'static str,
    pub(super) canvas: Option<String>,
    run_id: Option<String>,
    payload: Value,
    expected: BTreeMap<String, u64>,
}

impl Draft {
    pub(super) fn new(kind: &'static str, label: &str, payload: Value) -> Self {
        Self {
            id: unique(label),
            kind,
            canvas: Some(unique("canvas")),
            run_id: None,
            payload,
            expected: BTreeMap::new(),
        }
    }

    pub(super) fn freeze(&self) -> FrozenRequest {
        self.freeze_with_body_id(&self.id)
    }

    /// Like [`Draft::freeze`], but the body names `body_id` (a broken client).
    fn freeze_with_body_id(&self, body_id: &str) -> FrozenRequest {
        let operation_ids = vec![format!("{}-op", self.id)];
        let canvas_ids: Vec<String> = self.canvas.iter().cloned().collect();
        let body = canvas_scheduler_core::json_text::to_string(&WireBody {
            id: body_id,
            operation_ids: &operation_ids,
            kind: self.kind,
            owner_canvas_id: self.canvas.as_deref(),
            run_id: self.run_id.as_deref(),
            protocol_version: 1,
            payload: &self.payload.clone().into(),
            canvas_ids: &canvas_ids,
            expected_versions: &self.expected,
        });
        FrozenRequest {
            id: self.id.clone(),
            operation_ids,
            kind: self.kind.to_owned(),
            owner_canvas_id: self.canvas.clone(),
            run_id: self.run_id.clone(),
            protocol_version: 1,
            canvas_ids,
            expected_versions: self.expected.clone(),
            digest: body_digest(&body),
            body,
            principal: None,
            revisions: vec![0],
            phase: RequestPhase::Frozen,
            attempt: 0,
            failures: 0,
            retry_at: None,
            retry_action: None,
            outcome: None,
            error: None,
            canonical: None,
            blocked: None,
            frozen_at: now(),
        }
    }
}

pub(super) fn shape(label: &str) -> Draft {
    Draft::new(
        "shape.upsert",
        label,
        json!({"shapeId": "s1", "shape": {"x": 1, "y": 2}}),
    )
}

/// Sends one attempt with a fresh, never-aborted caller signal.
async fn send(
    transport: &FetchTransport,
    action: RetryAction,
    request: &FrozenRequest,
    blob: Option<Blob>,
) -> AttemptStatus {
    let caller = AbortController::new().expect("controller");
    send_with(transport, action, request, blob, &caller).await
}

async fn send_with(
    transport: &FetchTransport,
    action: RetryAction,
    request: &FrozenRequest,
    blob: Option<Blob>,
    caller: &AbortController,
) -> AttemptStatus {
    let order = SendOrder {
        attempt: 1,
        action,
        request: request.clone(),
    };
    // A host header: it must pass CORS and never appear in an error.
    let headers = vec![("x-canvas-test".to_owned(), "secret-value".to_owned())];
    let status = transport
        .send(&order, &headers, blob, &caller.signal(), now, || {
            LEFT.with(|left| left.set(left.get() + 1));
        })
        .await;
    assert!(
        !format!("{status:?}").contains("secret-value"),
        "a header value leaked into {status:?}"
    );
    status
}

thread_local! {
    /// How many sends `send_with` was told left (`fetch` took the request).
    static LEFT: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

fn left() -> u32 {
    LEFT.with(std::cell::Cell::get)
}

fn transport() -> FetchTransport {
    FetchTransport::new(server(), 5_000)
}

pub(super) fn code(status: &AttemptStatus) -> Option<&str> {
    status.error.as_ref().map(|e| e.code.as_str())
}

#[wasm_bindgen_test]
async fn p7_submit_applies_and_a_repeat_gets_the_stored_outcome() {
    faults(json!({})).await;
    let draft = shape("applied");
    let request = draft.freeze();
    let canvas = draft.canvas.clone().expect("canvas");
    let first = send(&transport(), RetryAction::Submit, &request, None).await;
    assert_eq!(first.outcome, AttemptOutcome::Applied, "{first:?}");
    assert_eq!(first.error, None);
    let canonical = first.canonical.clone().expect("canonical").to_value();
    assert_eq!(canonical["canvases"][&canvas]["version"], 1);
    assert_eq!(first.operations.len(), 1);
    assert_eq!(first.operations[0].operation_id, request.operation_ids[0]);
    assert_eq!(first.operations[0].settlement, Settlement::Applied);

    let repeat = send(&transport(), RetryAction::Submit, &request, None).await;
    assert_eq!(repeat, first, "a repeat gets the stored outcome");
    let query = send(&transport(), RetryAction::Query, &request, None).await;
    assert_eq!(query.outcome, AttemptOutcome::Applied);
    assert_eq!(query.canonical.map(|c| c.to_value()), Some(canonical));

    let record = server_record(&request.id).await;
    assert_eq!(record["applications"], 1, "{record}");
    assert_eq!(record["submits"], 2, "{record}");
}

/// A query must reach the server, never the HTTP cache (`no-store`). A submit is a POST,
/// which no cache answers, and sets no cache mode: `no-store` cost Chromium about 1 ms a
/// request (BENCHMARKS).
#[wasm_bindgen_test]
async fn w3_a_query_bypasses_the_http_cache_and_a_submit_sets_no_cache_mode() {
    faults(json!({})).await;
    let request = shape("cache-mode").freeze();
    // Only this request's fetches are recorded (its id is in the query's URL and the body).
    js(&format!(
        "(() => {{ const real = globalThis.fetch; const id = {id:?}; globalThis.__seen = []; \
         globalThis.__realFetch = real; globalThis.fetch = function (input, init) {{ \
         if (String(input).includes(id) || String(init?.body ?? '').includes(id)) \
         globalThis.__seen.push([init?.method ?? null, init?.cache ?? null]); \
         return real.call(this, input, init); }}; }})()",
        id = request.id
    ));
    let submitted = send(&transport(), RetryAction::Submit, &request, None).await;
    let queried = send(&transport(), RetryAction::Query, &request, None).await;
    let seen = js("(() => { globalThis.fetch = globalThis.__realFetch; return JSON.stringify(globalThis.__seen); })()");
    assert_eq!(submitted.outcome, AttemptOutcome::Applied, "{submitted:?}");
    assert_eq!(queried.outcome, AttemptOutcome::Applied, "{queried:?}");
    assert_eq!(
        seen.as_string().as_deref(),
        Some(r#"[["POST",null],["GET","no-store"]]"#)
    );
}

#[wasm_bindgen_test]
async fn p7_version_conflict_is_rejected_with_canonical() {
    faults(json!({})).await;
    let mut draft = shape("conflict");
    let canvas = draft.canvas.clone().expect("canvas");
    draft.expected.insert(canvas.clone(), 5);
    let status = send(&transport(), RetryAction::Submit, &draft.freeze(), None).await;
    assert_eq!(status.outcome, AttemptOutcome::Rejected, "{status:?}");
    let error = status.error.clone().expect("error");
    assert_eq!(error.code, "version_conflict");
    assert_eq!(
        error.details.expect("details").to_value()["stale"][0]["expected"],
        5
    );
    let canonical = status.canonical.expect("canonical").to_value();
    assert_eq!(canonical["canvases"][&canvas]["version"], 0);
    assert_eq!(status.operations[0].settlement, Settlement::Rejected);
}

#[wasm_bindgen_test]
async fn p7_unknown_kind_is_rejected_for_good() {
    faults(json!({})).await;
    let draft = Draft::new("shape.teleport", "unknown-kind", json!({}));
    let status = send(&transport(), RetryAction::Submit, &draft.freeze(), None).await;
    assert_eq!(status.outcome, AttemptOutcome::Rejected, "{status:?}");
    assert_eq!(code(&status), Some("unknown_kind"));
}

#[wasm_bindgen_test]
async fn p7_other_4xx_is_a_dead_letter_with_the_http_status() {
    faults(json!({})).await;
    let draft = shape("mismatch");
    let request = draft.freeze_with_body_id("another-id");
    let status = send(&transport(), RetryAction::Submit, &request, None).await;
    // A 400, even with a rejection body, is no protocol rejection (409/422): a dead letter.
    assert_eq!(status.outcome, AttemptOutcome::Unresolved, "{status:?}");
    assert_eq!(status.retryable, Some(false), "{status:?}");
    let error = status.error.expect("error");
    assert_eq!(error.code, "http_400");
    assert_eq!(
        error.details.expect("details").to_value()["serverCode"],
        "idempotency_key_mismatch"
    );
}

#[wasm_bindgen_test]
async fn p7_query_for_an_unknown_key_is_not_found() {
    faults(json!({})).await;
    let request = shape("never-sent").freeze();
    let status = send(&transport(), RetryAction::Query, &request, None).await;
    assert_eq!(status.outcome, AttemptOutcome::Unresolved, "{status:?}");
    assert_eq!(code(&status), Some("not_found"));
}

#[wasm_bindgen_test]
async fn p7_submit_answered_404_is_a_dead_letter() {
    faults(json!({})).await;
    let request = shape("wrong-route").freeze();
    let wrong = FetchTransport::new(&format!("{}/nowhere/", server()), 5_000);
    assert_eq!(wrong.endpoint(), format!("{}/nowhere", server()));
    let status = send(&wrong, RetryAction::Submit, &request, None).await;
    assert_eq!(status.outcome, AttemptOutcome::Unresolved, "{status:?}");
    assert_eq!(
        status.retryable,
        Some(false),
        "a wrong endpoint waits for retry(id)"
    );
    assert_eq!(code(&status), Some("http_404"));
}

#[wasm_bindgen_test]
async fn p7_503_is_unresolved_and_honours_retry_after() {
    faults(json!({"serverErrorRate": 1, "retryAfterSeconds": 7})).await;
    let request = shape("unavailable").freeze();
    let status = send(&transport(), RetryAction::Submit, &request, None).await;
    faults(json!({})).await;
    assert_eq!(status.outcome, AttemptOutcome::Unresolved, "{status:?}");
    assert_eq!(code(&status), Some("http_503"));
    assert_eq!(status.retry_after_ms, Some(7_000));
    assert_eq!(
        server_record(&request.id).await,
        Value::Null,
        "nothing handled"
    );
}

#[wasm_bindgen_test]
async fn p7_429_is_unresolved_and_honours_retry_after() {
    faults(json!({"tooManyRate": 1, "retryAfterSeconds": 3})).await;
    let request = shape("too-many").freeze();
    let status = send(&transport(), RetryAction::Query, &request, None).await;
    faults(json!({})).await;
    assert_eq!(status.outcome, AttemptOutcome::Unresolved, "{status:?}");
    assert_eq!(code(&status), Some("http_429"));
    assert_eq!(status.retry_after_ms, Some(3_000));
}

#[wasm_bindgen_test]
async fn s8_an_answer_later_than_the_timeout_is_transport_unknown() {
    faults(json!({"latencyMs": 2_000})).await;
    let request = shape("slow").freeze();
    let started = now();
    let status = send(
        &FetchTransport::new(server(), 300),
        RetryAction::Query,
        &request,
        None,
    )
    .await;
    let took = now() - started;
    faults(json!({})).await;
    assert_eq!(status.outcome, AttemptOutcome::Unresolved, "{status:?}");
    assert_eq!(code(&status), Some("transport_unknown"));
    let message = status.error.expect("error").message;
    assert!(message.contains("300 ms"), "{message}");
    assert!(
        took < 1_500,
        "the timeout aborted the attempt after {took} ms"
    );
}

#[wasm_bindgen_test]
async fn s8_a_dropped_answer_is_never_a_false_verdict_and_a_query_says_applied() {
    faults(json!({"dropAfterApplyRate": 1})).await;
    let request = shape("dropped").freeze();
    let status = send(&transport(), RetryAction::Submit, &request, None).await;
    faults(json!({})).await;
    let record = server_record(&request.id).await;
    // Chrome resends a request whose reused keep-alive connection (here: the CORS preflight's)
    // closes before any answer; the resend is a repeat of the key, which the server answers
    // from its store and never drops. So the attempt is either unknown (no resend) or the
    // stored outcome (resent by the browser) -- never anything false, never applied twice.
    match status.outcome {
        AttemptOutcome::Unresolved => {
            assert_eq!(code(&status), Some("transport_unknown"), "{status:?}");
            assert_eq!(record["submits"], 1, "{record}");
        }
        AttemptOutcome::Applied => assert_eq!(record["submits"], 2, "{record}"),
        _ => panic!("a dropped answer became {status:?}"),
    }
    assert_eq!(record["applications"], 1, "{record}");

    let query = send(&transport(), RetryAction::Query, &request, None).await;
    assert_eq!(query.outcome, AttemptOutcome::Applied, "{query:?}");
    let record = server_record(&request.id).await;
    assert_eq!(record["applications"], 1, "{record}");
}

#[wasm_bindgen_test]
async fn s8_a_network_error_is_transport_unknown() {
    // The server destroys every protocol socket: the browser's own resend fails too.
    faults(json!({"offline": true})).await;
    let request = shape("offline").freeze();
    let submit = send(&transport(), RetryAction::Submit, &request, None).await;
    let query = send(&transport(), RetryAction::Query, &request, None).await;
    faults(json!({})).await;
    for status in [submit, query] {
        assert_eq!(status.outcome, AttemptOutcome::Unresolved, "{status:?}");
        assert_eq!(code(&status), Some("transport_unknown"));
        assert_eq!(
            status.error.expect("error").message,
            "fetch failed: TypeError"
        );
    }
    assert_eq!(
        server_record(&request.id).await,
        Value::Null,
        "nothing handled"
    );
}

#[wasm_bindgen_test]
async fn p7_run_start_is_accepted_then_applied_on_a_later_query() {
    faults(json!({})).await;
    let mut draft = Draft::new("run.start", "run", json!({}));
    let run_id = unique("run-id");
    draft.run_id = Some(run_id.clone());
    let request = draft.freeze();
    let accepted = send(&transport(), RetryAction::Submit, &request, None).await;
    assert_eq!(accepted.outcome, AttemptOutcome::Accepted, "{accepted:?}");
    assert!(accepted.operations.is_empty(), "no verdict yet");

    // The server applies it --run-apply-ms (200) later.
    sleep(500).await;
    let applied = send(&transport(), RetryAction::Query, &request, None).await;
    assert_eq!(applied.outcome, AttemptOutcome::Applied, "{applied:?}");
    let verdict = &applied.operations[0];
    assert_eq!(verdict.settlement, Settlement::Applied);
    let run = &verdict.canonical.as_ref().expect("canonical").to_value()["run"];
    assert_eq!(run["runId"], run_id.as_str());
    assert_eq!(run["status"], "completed");
}

#[wasm_bindgen_test]
async fn w3_an_upload_is_multipart_with_its_blob() {
    faults(json!({})).await;
    let draft = Draft::new("asset.upload", "upload", json!({"name": "pixel.txt"}));
    let request = draft.freeze();
    let parts = js_sys::Array::of1(&JsValue::from_str("hello, canvas"));
    let blob = Blob::new_with_str_sequence(&parts).expect("blob");
    let status = send(&transport(), RetryAction::Submit, &request, Some(blob)).await;
    assert_eq!(status.outcome, AttemptOutcome::Applied, "{status:?}");
    let asset = status.operations[0]
        .canonical
        .clone()
        .expect("asset")
        .to_value();
    assert_eq!(asset["size"], 13);
    assert!(asset["assetId"].is_string(), "{asset}");
    let canvas = draft.canvas.expect("canvas");
    let listed =
        &status.canonical.expect("canonical").to_value()["canvases"][&canvas]["document"]["assets"];
    assert!(
        listed[asset["assetId"].as_str().expect("id")].is_object(),
        "{listed}"
    );

    // Without its blob the same kind goes as JSON and the server misses the blob part.
    let bare = Draft::new("asset.upload", "upload-bare", json!(null)).freeze();
    let status = send(&transport(), RetryAction::Submit, &bare, None).await;
    assert_eq!(status.outcome, AttemptOutcome::Rejected, "{status:?}");
    assert_eq!(code(&status), Some("missing_blob"));
}

/// The server's record of the upload `status` answered: its document entry (size, media
/// type, file name) and its digest.
fn uploaded(status: &AttemptStatus, canvas: &str) -> (Value, Value) {
    assert_eq!(status.outcome, AttemptOutcome::Applied, "{status:?}");
    let asset = status.operations[0]
        .canonical
        .clone()
        .expect("asset")
        .to_value();
    let id = asset["assetId"].as_str().expect("id");
    let canonical = status.canonical.as_ref().expect("canonical").to_value();
    let listed = canonical["canvases"][canvas]["document"]["assets"][id].clone();
    (listed, asset["sha256"].clone())
}

/// Blob storage where the engine refuses to store a `Blob` (WebKit's ephemeral sessions; forced
/// here with the injected refusal): the upload stored as bytes, read back by a later connection
/// (a reload), goes out as the same multipart request as the file itself — the same bytes,
/// media type and file name reach the server.
#[wasm_bindgen_test]
async fn w3_an_upload_stored_as_bytes_sends_the_same_multipart_request() {
    use canvas_scheduler::web::store::{IdbLedger, StoreFault};
    faults(json!({})).await;
    // No name in the payload: the server names the asset after the part's file name.
    let upload = super::store::file("hello, canvas", "pixel.txt", "text/plain");
    let direct = Draft::new("asset.upload", "upload-direct", json!(null));
    let status = send(
        &transport(),
        RetryAction::Submit,
        &direct.freeze(),
        Some(upload.clone()),
    )
    .await;
    let (want, want_digest) = uploaded(&status, direct.canvas.as_deref().expect("canvas"));
    assert_eq!(
        want,
        json!({"size": 13, "contentType": "text/plain", "name": "pixel.txt"})
    );

    let name = super::store_support::db_name("upload-bytes");
    let ledger = IdbLedger::open(&name).await.expect("open");
    ledger.inject(StoreFault::RefuseBlob);
    ledger
        .put_blob("blob-1", &upload, "text/plain")
        .await
        .expect("put, as bytes");
    ledger.close();
    let again = IdbLedger::open(&name).await.expect("reopen");
    let stored = again
        .get_blob("blob-1")
        .await
        .expect("get")
        .expect("present");
    again.close();
    let kept = Draft::new("asset.upload", "upload-bytes", json!(null));
    let status = send(
        &transport(),
        RetryAction::Submit,
        &kept.freeze(),
        Some(stored),
    )
    .await;
    let (got, got_digest) = uploaded(&status, kept.canvas.as_deref().expect("canvas"));
    assert_eq!(got, want, "the same size, media type and file name");
    assert_eq!(got_digest, want_digest, "the same bytes");
    super::support::delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn s8_the_callers_abort_cancels_the_attempt() {
    faults(json!({"latencyMs": 1_500})).await;
    let request = shape("aborted").freeze();
    let caller = AbortController::new().expect("controller");
    let abort = {
        let caller = caller.clone();
        Closure::once_into_js(move || caller.abort())
    };
    test_set_timeout(abort.unchecked_ref(), 100);
    let (started, before) = (now(), left());
    let status = send_with(&transport(), RetryAction::Query, &request, None, &caller).await;
    let took = now() - started;
    assert_eq!(
        left(),
        before + 1,
        "it left once, and was aborted on the way"
    );
    faults(json!({})).await;
    assert_eq!(status.outcome, AttemptOutcome::Unresolved, "{status:?}");
    assert_eq!(code(&status), Some("transport_unknown"));
    assert_eq!(status.error.expect("error").message, "aborted");
    assert!(took < 1_000, "the abort ended the attempt after {took} ms");
}

#[wasm_bindgen_test]
async fn s8_an_already_aborted_signal_sends_nothing() {
    faults(json!({})).await;
    let request = shape("pre-aborted").freeze();
    let caller = AbortController::new().expect("controller");
    caller.abort();
    let before = left();
    let status = send_with(&transport(), RetryAction::Submit, &request, None, &caller).await;
    assert_eq!(code(&status), Some("transport_unknown"), "{status:?}");
    assert_eq!(server_record(&request.id).await, Value::Null, "never sent");
    assert_eq!(left(), before, "never said to have left");
}
