//! Hostile answers on a virtual clock: time from outside is bounded, only the
//! protocol rejects for good, answers are bounded. The answers are real HTTP answers mapped by
//! `core::protocol::map_answer`, exactly as the browser transport maps them; the store refuses
//! a record JS could not read back, as IndexedDB's codec does.

use canvas_scheduler_core::{
    protocol::map_answer, AttemptOutcome, AttemptStatus, BatchLimits, CountingHost, OperationPhase,
    OperationVerdict, Report, RetryAction, RetryPolicy, SchedulerConfig, Secrets, Settlement,
    MAX_TIME,
};

use crate::common::edit;
use canvas_scheduler_testing::{Harness, MemoryStore};
use serde_json::json;

const DAY: u64 = 86_400_000;

fn harness_with(config: SchedulerConfig) -> Harness<CountingHost> {
    let mut h = Harness::new(config, CountingHost::new("r"));
    h.start();
    h
}

fn http(
    action: RetryAction,
    status: u16,
    body: Option<&str>,
    retry_after: Option<&str>,
    now: u64,
) -> AttemptStatus {
    map_answer(action, status, body, retry_after, now)
}

fn storage_errors(h: &Harness<CountingHost>) -> usize {
    h.reports
        .iter()
        .filter(|r| matches!(r, Report::Error(e) if e.code() == "storage_unavailable"))
        .count()
}

#[test]
fn s10_a_huge_retry_after_is_clamped_and_later_enqueues_stay_durable() {
    let mut h = harness_with(SchedulerConfig::default());
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let request = h.wire_ids()[0].clone();
    let status = http(
        RetryAction::Submit,
        503,
        None,
        Some("10000000000000"),
        h.now,
    );
    h.answer(&request, status);
    let stored = h.store.request(&request).expect("the answer is durable");
    let due = stored.retry_at.expect("a retry is scheduled");
    assert!(due <= h.now + DAY, "due {due} is past a day from {}", h.now);
    assert!(due > h.now);
    // Later work is stored and sent as always: one header did not stop the ledger.
    h.enqueue(vec![edit("b", &["d"])]).unwrap();
    assert_eq!(storage_errors(&h), 0, "{:?}", h.reports);
    assert!(h.store.operation("b").is_some(), "b is durable");
    assert_eq!(h.wire_operations(), ["b"]);
    // And the clamped retry happens within the day.
    h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
    h.advance(DAY);
    assert_eq!(h.wire_ids(), [request], "retried within the clamp");
    assert_eq!(h.wire[0].action, RetryAction::Query);
}

#[test]
fn s10_an_http_date_far_in_the_future_and_a_transports_retry_after_ms_are_clamped() {
    let mut h = harness_with(SchedulerConfig::default());
    h.enqueue(vec![edit("a", &["c"]), edit("b", &["d"])])
        .unwrap();
    let ids = h.wire_ids();
    let date = http(
        RetryAction::Submit,
        429,
        None,
        Some("Fri, 31 Dec 9999 23:59:59 GMT"),
        h.now,
    );
    h.answer(&ids[0], date);
    let transport = canvas_scheduler_core::protocol::map_transport_answer(
        RetryAction::Submit,
        &json!({"status": 503, "retryAfterMs": 9_007_199_254_740_991u64}).to_string(),
        h.now,
    );
    h.answer(&ids[1], transport);
    for id in &ids {
        let due = h.store.request(id).and_then(|r| r.retry_at).expect("due");
        assert!(due <= h.now + DAY, "{id}: {due}");
    }
    assert_eq!(storage_errors(&h), 0);
}

#[test]
fn k4_a_retry_at_from_classify_error_is_clamped() {
    let mut h = harness_with(SchedulerConfig::default());
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let request = h.wire_ids()[0].clone();
    let status = AttemptStatus {
        retry_at: Some(u64::MAX),
        ..AttemptStatus::transport_unknown("lost")
    };
    h.answer(&request, status);
    let due = h
        .store
        .request(&request)
        .and_then(|r| r.retry_at)
        .expect("due");
    assert_eq!(due, h.now + DAY);
    assert!(due <= MAX_TIME);
}

#[test]
fn s18_a_stored_retry_at_far_in_the_future_waits_at_most_a_day_after_a_restart() {
    let mut h = harness_with(SchedulerConfig::default());
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let request = h.wire_ids()[0].clone();
    h.answer(&request, AttemptStatus::transport_unknown("lost"));
    let mut snapshot = h.store.snapshot();
    for r in &mut snapshot.requests {
        r.retry_at = Some(MAX_TIME);
    }
    let now = h.now;
    let mut restarted = Harness::over(
        SchedulerConfig::default(),
        CountingHost::new("s"),
        MemoryStore::from_snapshot(snapshot),
        now,
    );
    restarted.start();
    assert!(restarted.wire.is_empty());
    restarted.advance(DAY);
    assert_eq!(restarted.wire_ids(), [request]);
}

#[test]
fn k1_accepted_and_in_progress_answers_back_off_and_count_toward_the_dead_letter() {
    let config = SchedulerConfig {
        retry: RetryPolicy {
            base_ms: 100,
            max_ms: 10_000,
            max_attempts: 4,
            dead_letter_after_ms: 0,
        },
        ..SchedulerConfig::default()
    };
    let mut h = harness_with(config);
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let request = h.wire_ids()[0].clone();
    let mut waits = Vec::new();
    for round in 0..4 {
        let status = if round % 2 == 0 {
            http(
                RetryAction::Submit,
                202,
                Some(r#"{"outcome":"accepted"}"#),
                None,
                h.now,
            )
        } else {
            http(RetryAction::Query, 409, None, None, h.now)
        };
        let before = h.now;
        h.answer(&request, status);
        if let Some(due) = h.store.request(&request).and_then(|r| r.retry_at) {
            waits.push(due - before);
        }
        h.advance(20_000);
    }
    assert!(
        waits.windows(2).all(|w| w[1] > w[0]),
        "each wait longer than the last: {waits:?}"
    );
    assert!(h
        .reports
        .iter()
        .any(|r| matches!(r, Report::DeadLettered { request_id, .. } if *request_id == request)));
    assert_eq!(
        h.scheduler.explain(h.now, "a").unwrap().reason,
        "dead_letter"
    );
    assert!(h.wire.is_empty(), "nothing more is sent");
}

#[test]
fn k1_a_proxys_html_400_dead_letters_with_its_status_and_retry_sends_it_again() {
    let mut h = harness_with(SchedulerConfig::default());
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let request = h.wire_ids()[0].clone();
    let html = "<html><body>400 Request Header Or Cookie Too Large</body></html>";
    h.answer(
        &request,
        http(RetryAction::Submit, 400, Some(html), None, h.now),
    );
    let op = h.scheduler.ledger().operation("a").unwrap();
    assert_eq!(op.phase, OperationPhase::Pending, "never rejected for good");
    assert_eq!(op.blockers, ["dead_letter"]);
    let error = h
        .store
        .request(&request)
        .and_then(|r| r.error.clone())
        .expect("error");
    assert_eq!(error.code, "http_400");
    assert!(h.reports.iter().any(|r| matches!(
        r,
        Report::DeadLettered { error: Some(e), .. } if e.code == "http_400"
    )));
    // `pending()` says what it holds and how to release it, as the event does.
    let pending = h.scheduler.pending(h.now);
    assert_eq!(
        (pending[0].state, pending[0].reason.as_str()),
        ("blocked", "dead_letter")
    );
    assert_eq!(
        pending[0].held_canvas_ids.as_deref(),
        Some(&["c".to_owned()][..])
    );
    assert_eq!(
        pending[0].release.as_deref(),
        Some(&["retry".to_owned(), "discard".to_owned()][..])
    );
    // The path is fixed: the host retries, the same frozen request is asked about first.
    h.scheduler.retry(h.now, "a").unwrap();
    h.drain();
    assert_eq!(h.wire_ids(), [request]);
    assert_eq!(h.wire[0].action, RetryAction::Query);
    h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
    assert_eq!(
        h.scheduler.ledger().operation("a").unwrap().phase,
        OperationPhase::Resolved
    );
}

#[test]
fn p7_421_is_retried_and_only_a_protocol_body_rejects_for_good() {
    let mut h = harness_with(SchedulerConfig::default());
    h.enqueue(vec![edit("a", &["c"]), edit("b", &["d"])])
        .unwrap();
    let ids = h.wire_ids();
    h.answer(
        &ids[0],
        http(RetryAction::Submit, 421, Some("<html>"), None, h.now),
    );
    let rejection = r#"{"outcome":"rejected","error":{"code":"unknown_shape","message":"no"}}"#;
    h.answer(
        &ids[1],
        http(RetryAction::Submit, 422, Some(rejection), None, h.now),
    );
    let a = h.scheduler.ledger().operation("a").unwrap();
    assert!(a.blockers.is_empty(), "421 is retried: {:?}", a.blockers);
    // b's verdict shows the endpoint answers: a's backoff is brought forward.
    assert_eq!(h.wire_ids(), [ids[0].clone()], "421 is retried");
    let b = h.scheduler.ledger().operation("b").unwrap();
    assert_eq!(
        b.outcome.as_ref().map(|o| o.settlement),
        Some(Settlement::Rejected)
    );
}

#[test]
fn p7_a_batchs_shared_canonical_is_stored_once() {
    let config = SchedulerConfig {
        concurrency: 1,
        batch: BatchLimits {
            max_operations: 3,
            max_bytes: 65_536,
            kinds: None,
        },
        ..SchedulerConfig::default()
    };
    let mut h = harness_with(config);
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(vec![
        edit("a", &["c"]),
        edit("b", &["c"]),
        edit("own", &["c"]),
    ])
    .unwrap();
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(h.wire_operations(), ["a", "b", "own"]);
    let shared = json!({"canvases": {"c": {"version": 3, "document": {"big": "x".repeat(1_000)}}}});
    let status = AttemptStatus {
        canonical: Some(shared.clone().into()),
        operations: vec![OperationVerdict {
            operation_id: "own".into(),
            settlement: Settlement::Applied,
            error: None,
            canonical: Some(json!({"shapeId": "own"}).into()),
        }],
        ..AttemptStatus::outcome(AttemptOutcome::Applied)
    };
    let request = h.wire_ids()[0].clone();
    h.answer(&request, status);
    let snapshot = h.store.snapshot();
    let stored = canvas_scheduler_core::json_text::to_string(&snapshot.requests)
        + &canvas_scheduler_core::json_text::to_string(&snapshot.operations);
    assert_eq!(
        stored.matches("\"big\"").count(),
        1,
        "the shared state once"
    );
    assert_eq!(
        h.store.request(&request).and_then(|r| r.canonical.clone()),
        Some(shared.clone().into())
    );
    let own = h
        .store
        .operation("own")
        .and_then(|o| o.outcome.clone())
        .unwrap();
    assert_eq!(own.canonical, Some(json!({"shapeId": "own"}).into()));
    // Every settled event still carries the state the host needs.
    for id in ["a", "b"] {
        assert!(h.reports.iter().any(|r| matches!(
            r,
            Report::Settled { operation_id, canonical: Some(c), .. }
                if operation_id == id && *c == shared.clone().into()
        )));
    }
}

#[test]
fn k5_a_server_error_echoing_a_credential_is_stored_and_reported_without_it() {
    let mut h = harness_with(SchedulerConfig::default());
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let request = h.wire_ids()[0].clone();
    let headers = vec![("authorization".to_owned(), "Bearer s3cr3t-token".to_owned())];
    let body = r#"{"outcome":"rejected","error":{"code":"bad_auth","message":"token s3cr3t-token is not valid for Bearer s3cr3t-token"}}"#;
    let mut status = http(RetryAction::Submit, 422, Some(body), None, h.now);
    Secrets::of_headers(&headers).scrub_status(&mut status);
    h.answer(&request, status);
    let stored = format!("{:?}{:?}", h.store.snapshot(), h.reports);
    assert!(!stored.contains("s3cr3t"), "{stored}");
    assert!(stored.contains("[redacted]"));
}
