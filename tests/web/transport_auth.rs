//! The protocol's auth rows (401, 403 → blocked `unauthorized`) against the real reference server
//! started by `scripts/test` with `--tokens user-a:tokA,user-b:tokB`, whose URL it passes as
//! `CANVAS_SCHEDULER_TEST_AUTH_SERVER` at build time. Without it these tests fail.
//!
//! The bearer token travels in the host's `headers` argument of [`FetchTransport::send`], as
//! `headers()` would give it; it must never appear in a status. The page and the worker binaries
//! share the server, so every id carries the global's constructor name and a random part. No
//! test here touches the server's faults (they stay at their start-up defaults: none).
//!
//! Not covered here: "409 without a body = still in progress". The server answers it only while
//! a key's first submit is still being *received* (its body not yet complete). A browser cannot
//! hold a request body open against this HTTP/1.1 server: Chrome rejects a streaming
//! (`ReadableStream`, `duplex: "half"`) upload over HTTP/1.x with "Failed to fetch", and any
//! other body is sent whole at loopback speed, so a second submit would only race the first —
//! a flaky test. The row is covered natively (`core/src/protocol/tests.rs`) and by the server's
//! own tests.

use canvas_scheduler::web::transport::FetchTransport;
use canvas_scheduler_core::{
    protocol::UNAUTHORIZED, AttemptOutcome, AttemptStatus, FrozenRequest, RetryAction, SendOrder,
    Settlement,
};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;
use web_sys::{AbortController, Blob};

use super::transport::{code, http_at, now, shape, Draft};

const USER_A: &str = "tokA";
const USER_B: &str = "tokB";

/// The auth reference server's URL, baked in by `scripts/test`.
fn auth_server() -> &'static str {
    match option_env!("CANVAS_SCHEDULER_TEST_AUTH_SERVER") {
        Some(url) if !url.is_empty() => url,
        _ => panic!(
            "CANVAS_SCHEDULER_TEST_AUTH_SERVER is not set: run the browser tests with \
             scripts/test (npm test), which starts www/server with --tokens and passes its URL \
             to the wasm build"
        ),
    }
}

fn transport() -> FetchTransport {
    FetchTransport::new(auth_server(), 5_000)
}

/// Sends one attempt with `token` (if any) as the host's `authorization` header.
async fn send_as(
    token: Option<&str>,
    action: RetryAction,
    request: &FrozenRequest,
    blob: Option<Blob>,
) -> AttemptStatus {
    let order = SendOrder {
        attempt: 1,
        action,
        request: request.clone(),
    };
    let mut headers = vec![("x-canvas-test".to_owned(), "secret-value".to_owned())];
    if let Some(token) = token {
        headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
    }
    let caller = AbortController::new().expect("controller");
    let status = transport()
        .send(&order, &headers, blob, &caller.signal(), now, || ())
        .await;
    let shown = format!("{status:?}");
    for secret in ["secret-value", USER_A, USER_B] {
        assert!(
            !shown.contains(secret),
            "a header value leaked into {shown}"
        );
    }
    status
}

/// What the auth server recorded for one key (`Null` if it never stored it).
async fn server_record(id: &str) -> Value {
    let (status, state) = http_at(auth_server(), "GET", "/admin/state", None).await;
    assert_eq!(status, 200);
    state["requests"][id].clone()
}

/// The status the scheduler turns into a request blocked `unauthorized` until `resume()`:
/// unresolved (never a verdict), `blocked` set, nothing to wait for, and the HTTP status with
/// the server's own code in the error.
fn assert_blocked_unauthorized(status: &AttemptStatus, http: u16, server_code: &str) {
    assert_eq!(status.outcome, AttemptOutcome::Unresolved, "{status:?}");
    assert_eq!(status.blocked.as_deref(), Some(UNAUTHORIZED), "{status:?}");
    assert_eq!(status.blocked.as_deref(), Some("unauthorized"));
    assert_eq!(status.retry_after_ms, None, "{status:?}");
    assert!(status.operations.is_empty(), "no verdict: {status:?}");
    assert_eq!(status.canonical, None, "{status:?}");
    let expected_code = format!("http_{http}");
    assert_eq!(code(status), Some(expected_code.as_str()), "{status:?}");
    let details = status
        .error
        .as_ref()
        .and_then(|e| e.details.as_ref().map(|d| d.to_value()))
        .expect("details");
    assert_eq!(details["status"], http, "{details}");
    assert_eq!(details["serverCode"], server_code, "{details}");
}

#[wasm_bindgen_test]
async fn p7_without_a_valid_token_a_submit_and_a_query_are_blocked_unauthorized() {
    let request = shape("no-token").freeze();
    let submit = send_as(None, RetryAction::Submit, &request, None).await;
    assert_blocked_unauthorized(&submit, 401, "unauthorized");
    let query = send_as(None, RetryAction::Query, &request, None).await;
    assert_blocked_unauthorized(&query, 401, "unauthorized");
    let unknown = send_as(Some("not-a-token"), RetryAction::Submit, &request, None).await;
    assert_blocked_unauthorized(&unknown, 401, "unauthorized");
    assert_eq!(
        server_record(&request.id).await,
        Value::Null,
        "nothing stored"
    );

    // The same frozen request with a valid token (what resume() leads to) is applied once.
    let applied = send_as(Some(USER_A), RetryAction::Submit, &request, None).await;
    assert_eq!(applied.outcome, AttemptOutcome::Applied, "{applied:?}");
    assert_eq!(applied.blocked, None);
    let record = server_record(&request.id).await;
    assert_eq!(record["principal"], "user-a", "{record}");
    assert_eq!(record["applications"], 1, "{record}");
}

#[wasm_bindgen_test]
async fn p7_a_correct_token_is_applied_and_answered_its_stored_outcome() {
    let draft = shape("token-a");
    let request = draft.freeze();
    let canvas = draft.canvas.clone().expect("canvas");
    let first = send_as(Some(USER_A), RetryAction::Submit, &request, None).await;
    assert_eq!(first.outcome, AttemptOutcome::Applied, "{first:?}");
    assert_eq!(first.blocked, None);
    assert_eq!(first.error, None);
    assert_eq!(
        first.canonical.as_ref().expect("canonical").to_value()["canvases"][&canvas]["version"],
        1
    );
    assert_eq!(first.operations[0].settlement, Settlement::Applied);

    let repeat = send_as(Some(USER_A), RetryAction::Submit, &request, None).await;
    assert_eq!(repeat, first, "a repeat gets the stored outcome");
    let query = send_as(Some(USER_A), RetryAction::Query, &request, None).await;
    assert_eq!(query.outcome, AttemptOutcome::Applied, "{query:?}");
    assert_eq!(query.canonical, first.canonical);

    let record = server_record(&request.id).await;
    assert_eq!(record["principal"], "user-a", "{record}");
    assert_eq!(record["applications"], 1, "{record}");
    assert_eq!(record["submits"], 2, "{record}");
}

#[wasm_bindgen_test]
async fn p7_a_key_stored_by_another_principal_is_blocked_unauthorized() {
    let request = shape("owned-by-a").freeze();
    let owner = send_as(Some(USER_A), RetryAction::Submit, &request, None).await;
    assert_eq!(owner.outcome, AttemptOutcome::Applied, "{owner:?}");

    let submit = send_as(Some(USER_B), RetryAction::Submit, &request, None).await;
    assert_blocked_unauthorized(&submit, 403, "forbidden");
    let query = send_as(Some(USER_B), RetryAction::Query, &request, None).await;
    assert_blocked_unauthorized(&query, 403, "forbidden");

    // The owner still gets its outcome; the other principal changed nothing.
    let again = send_as(Some(USER_A), RetryAction::Query, &request, None).await;
    assert_eq!(again.outcome, AttemptOutcome::Applied, "{again:?}");
    let record = server_record(&request.id).await;
    assert_eq!(record["principal"], "user-a", "{record}");
    assert_eq!(record["applications"], 1, "{record}");
    assert_eq!(record["submits"], 1, "{record}");
}

#[wasm_bindgen_test]
async fn p7_an_upload_carries_the_token_and_another_principal_is_refused() {
    let draft = Draft::new("asset.upload", "upload-auth", json!({"name": "note.txt"}));
    let request = draft.freeze();
    let blob = || {
        let parts = js_sys::Array::of1(&JsValue::from_str("hello, auth"));
        Blob::new_with_str_sequence(&parts).expect("blob")
    };

    let anonymous = send_as(None, RetryAction::Submit, &request, Some(blob())).await;
    assert_blocked_unauthorized(&anonymous, 401, "unauthorized");
    assert_eq!(
        server_record(&request.id).await,
        Value::Null,
        "nothing stored"
    );

    let owner = send_as(Some(USER_A), RetryAction::Submit, &request, Some(blob())).await;
    assert_eq!(owner.outcome, AttemptOutcome::Applied, "{owner:?}");
    assert_eq!(
        owner.operations[0]
            .canonical
            .as_ref()
            .expect("asset")
            .to_value()["size"],
        11
    );

    let other = send_as(Some(USER_B), RetryAction::Submit, &request, Some(blob())).await;
    assert_blocked_unauthorized(&other, 403, "forbidden");
    let record = server_record(&request.id).await;
    assert_eq!(record["principal"], "user-a", "{record}");
    assert_eq!(record["applications"], 1, "{record}");
}
