//! Storage that recovers by itself, on the virtual clock: a failed write is reported once,
//! storage is tried again on a backoff of the core's own, and the first write that succeeds
//! ends it with no host call. Meanwhile what is durable is still delivered while the lease
//! lasts, claims hold, and an enqueue whose write fails is refused and leaves nothing behind.

use canvas_scheduler_core::{
    intent::IntentInput, storage_retry_delay, AttemptOutcome, AttemptStatus, BatchLimits,
    CountingHost, Millis, OperationPhase, Report, RequestPhase, RetryAction, SafeError,
    SchedulerConfig, STORAGE_RETRY_MAX_MS,
};

use crate::common::{edit, edit_after};
use canvas_scheduler_testing::{Harness, MemoryStore};
use serde_json::json;

fn harness_with(config: SchedulerConfig) -> Harness<CountingHost> {
    let mut h = Harness::new(config, CountingHost::new("r"));
    h.start();
    h
}

fn harness() -> Harness<CountingHost> {
    harness_with(SchedulerConfig::default())
}

fn applied() -> AttemptStatus {
    AttemptStatus::outcome(AttemptOutcome::Applied)
}

/// A 503 with `Retry-After` (ms).
fn unavailable(retry_after_ms: Millis) -> AttemptStatus {
    AttemptStatus {
        retry_after_ms: Some(retry_after_ms),
        ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
    }
}

fn failed_reports(h: &Harness<CountingHost>) -> usize {
    h.reports
        .iter()
        .filter(|r| matches!(r, Report::StorageFailed { .. }))
        .count()
}

fn recovered_reports(h: &Harness<CountingHost>) -> usize {
    h.reports
        .iter()
        .filter(|r| matches!(r, Report::StorageRecovered))
        .count()
}

/// Whether operation `id`'s settlement is in storage (whole, or compacted to a tombstone).
fn settled_in_storage(h: &Harness<CountingHost>, id: &str) -> bool {
    h.store
        .operation(id)
        .is_some_and(|op| op.phase == OperationPhase::Resolved)
        || !h.store.tombstones_of([id]).is_empty()
}

/// Every write fails from now on (a full disk), until `heal`.
fn fill_disk(h: &mut Harness<CountingHost>) {
    h.fail_persists = u32::MAX;
}

fn heal(h: &mut Harness<CountingHost>) {
    h.fail_persists = 0;
}

/// Moves to the next wake-up and fires it.
fn next_wake(h: &mut Harness<CountingHost>) {
    let at = h.timer.expect("a wake-up is armed");
    h.advance(at.saturating_sub(h.now));
}

#[test]
fn a_failed_write_is_reported_once_tried_again_on_a_backoff_and_the_first_write_that_succeeds_ends_it(
) {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c1"])]).unwrap();
    let a = h.wire_ids()[0].clone();
    h.auto_persist = false;
    h.answer(&a, applied());
    let failed_at = h.now;
    h.persist_with(MemoryStore::failure("QuotaExceededError"));
    h.drain();
    assert!(h.scheduler.is_storage_failing());
    assert!(h.reports.iter().any(|r| matches!(
        r,
        Report::StorageFailed { error } if error.code == "QuotaExceededError"
    )));
    // Each try is a write of its own at the due time the core names; each fails.
    let mut tries = Vec::new();
    for _ in 0..6 {
        let due = h.scheduler.storage_retry_at().expect("a try is due");
        h.advance(due - 1 - h.now);
        assert!(h.persists.is_empty(), "nothing tried before it is due");
        assert_eq!(h.timer, Some(due), "the wake-up is the storage's try");
        h.advance(1);
        assert_eq!(h.persists.len(), 1, "one write per try");
        tries.push(h.now - failed_at);
        h.persist_with(MemoryStore::failure("QuotaExceededError"));
        h.drain();
    }
    let expected: Vec<Millis> = (1..=6)
        .scan(0, |at, failures| {
            *at += storage_retry_delay(failures);
            Some(*at)
        })
        .collect();
    assert_eq!(tries, expected);
    assert_eq!(tries, [1_000, 3_000, 7_000, 15_000, 30_000, 45_000]);
    assert_eq!(storage_retry_delay(40), STORAGE_RETRY_MAX_MS);
    assert_eq!(failed_reports(&h), 1, "storage_failed is said once");
    assert_eq!(recovered_reports(&h), 0);
    assert_eq!(h.store.request(&a).unwrap().phase, RequestPhase::Dispatched);
    assert_eq!(h.scheduler.claims().get("c1"), Some(&a), "claims held");
    // Space comes back: the next try writes what waited, with no host call.
    next_wake(&mut h);
    assert!(h.persist_next());
    h.drain();
    assert!(!h.scheduler.is_storage_failing());
    assert_eq!(recovered_reports(&h), 1);
    assert!(settled_in_storage(&h, "a"));
    assert!(h.scheduler.claims().is_empty(), "its canvas is free again");
    h.auto_persist = true;
    h.enqueue(vec![edit("b", &["c1"])]).unwrap();
    assert_eq!(h.wire_operations(), ["b"], "delivery goes on");
    assert_eq!(failed_reports(&h), 1);
}

#[test]
fn while_writes_fail_a_request_whose_dispatch_marker_is_durable_is_still_sent_and_answered() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c1"]), edit("b", &["c2"])])
        .unwrap();
    let (a, b) = (h.wire_ids()[0].clone(), h.wire_ids()[1].clone());
    fill_disk(&mut h);
    h.answer(&a, unavailable(300));
    assert!(h.scheduler.is_storage_failing());
    let sends = h.sent.len();
    // Due after its pause (under a second: the endpoint is not judged down by one failure),
    // before storage is tried again (1 s).
    h.advance(900);
    assert_eq!(h.wire_ids(), [b.clone(), a.clone()], "a's retry left");
    assert_eq!(h.sent.len(), sends + 1);
    assert_eq!(h.store.request(&a).unwrap().attempt, 1, "counted in memory");
    // Answered while writes fail: the host hears it now, and it is written later.
    h.answer(&a, applied());
    h.answer(&b, applied());
    let settled: Vec<&str> = h
        .reports
        .iter()
        .filter_map(|r| match r {
            Report::Settled { operation_id, .. } => Some(operation_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(settled, ["a", "b"]);
    assert_eq!(h.store.request(&a).unwrap().phase, RequestPhase::Dispatched);
    assert!(!settled_in_storage(&h, "a") && !settled_in_storage(&h, "b"));
    assert_eq!(h.scheduler.claims().len(), 2, "claims wait for the write");
    heal(&mut h);
    next_wake(&mut h);
    assert!(!h.scheduler.is_storage_failing());
    assert!(settled_in_storage(&h, "a") && settled_in_storage(&h, "b"));
    assert!(h.scheduler.claims().is_empty());
}

#[test]
fn while_writes_fail_a_query_that_finds_nothing_resubmits_the_same_request_once() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c1"])]).unwrap();
    let a = h.wire_ids()[0].clone();
    fill_disk(&mut h);
    h.answer(&a, AttemptStatus::transport_unknown("connection reset"));
    h.advance(900);
    let query = h.wire[0].clone();
    assert_eq!(
        query.action,
        RetryAction::Query,
        "a lost answer is asked about"
    );
    h.answer(
        &a,
        AttemptStatus {
            error: Some(SafeError::new("not_found", "never received")),
            ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
        },
    );
    h.advance(900);
    assert!(h.scheduler.is_storage_failing());
    let actions: Vec<RetryAction> = h.sent.iter().map(|o| o.action).collect();
    assert_eq!(
        actions,
        [RetryAction::Submit, RetryAction::Query, RetryAction::Submit],
        "the same request again, once"
    );
    assert!(h.sent.iter().all(|o| o.request.body == query.request.body));
}

#[test]
fn a_leader_that_cannot_write_stops_sending_when_its_lease_ends() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c1"])]).unwrap();
    let a = h.wire_ids()[0].clone();
    let lease_end = h.store.lease().unwrap().expires_at;
    fill_disk(&mut h);
    // Due again just after the lease written last ends.
    h.answer(&a, unavailable(lease_end + 1 - h.now));
    h.advance(lease_end + 2_000 - h.now);
    assert!(h.scheduler.is_storage_failing());
    assert!(
        h.wire.is_empty(),
        "not sent past the lease it could not renew"
    );
    assert_eq!(h.scheduler.stats().idle_reason, Some("storage_unavailable"));
    // A new enqueue is not frozen meanwhile: a freeze must be durable before its first send.
    let refused = h.enqueue(vec![edit("b", &["c2"])]).unwrap();
    assert_eq!(h.scheduler.barrier_state(refused), Some(false));
    heal(&mut h);
    next_wake(&mut h);
    assert!(!h.scheduler.is_storage_failing());
    assert!(h.store.lease().unwrap().expires_at > h.now, "renewed");
    h.advance(0);
    assert_eq!(h.wire_ids(), [a], "sent once the lease is renewed");
    assert!(h.sent.iter().all(|o| o.request.operation_ids != ["b"]));
}

#[test]
fn an_enqueue_whose_write_fails_puts_back_what_it_replaced_and_its_sequence() {
    // No coalescing hold: v1 is written at once (with one, its write would wait and v1 would be
    // refused with v2, never acknowledged).
    let mut h = harness_with(crate::common::unbatched());
    let coalesced = |id: &str, x: i64| IntentInput {
        coalesce_key: Some("drag".into()),
        payload: json!({ "shapeId": "s", "x": x }).into(),
        ..edit(id, &["c1"])
    };
    // Held: written, not frozen, so a newer intent with its key replaces it.
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(vec![coalesced("v1", 1)]).unwrap();
    let stored = h.scheduler.ledger().operation("v1").cloned().unwrap();
    let sequence = h.scheduler.ledger().meta().last_sequence;
    fill_disk(&mut h);
    let mut explicit = coalesced("v2", 2);
    explicit.sequence = Some(sequence + 10);
    let refused = h
        .enqueue(vec![explicit, edit_after("child", &["c2"], &["v2"])])
        .unwrap();
    assert_eq!(h.scheduler.barrier_state(refused), Some(false));
    for id in ["v2", "child"] {
        assert!(h.scheduler.ledger().operation(id).is_none(), "{id} is gone");
    }
    assert_eq!(h.scheduler.ledger().operation("v1"), Some(&stored));
    assert_eq!(h.scheduler.ledger().meta().last_sequence, sequence);
    assert!(
        !h.reports
            .iter()
            .any(|r| matches!(r, Report::Settled { .. })),
        "the host never heard v1 was replaced"
    );
    heal(&mut h);
    next_wake(&mut h);
    assert!(!h.scheduler.is_storage_failing());
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(h.wire_operations(), ["v1"], "the written version is sent");
    // The same sequence is free again.
    let mut again = coalesced("v2", 2);
    again.sequence = Some(sequence + 10);
    h.enqueue(vec![again]).unwrap();
    assert_eq!(
        h.scheduler
            .ledger()
            .operation("v2")
            .unwrap()
            .intent
            .sequence,
        sequence + 10
    );
}

#[test]
fn a_request_frozen_from_a_refused_enqueue_never_leaves_and_its_written_companion_goes_alone() {
    let mut h = harness_with(SchedulerConfig {
        concurrency: 1,
        batch: BatchLimits {
            max_operations: 2,
            max_bytes: 65_536,
            kinds: None,
        },
        ..SchedulerConfig::default()
    });
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(vec![edit("written", &["c1"])]).unwrap();
    h.auto_persist = false;
    h.enqueue(vec![edit("refused", &["c1"])]).unwrap();
    // Released while the enqueue's write is under way: both are frozen into one request,
    // in the next batch.
    h.scheduler.release(h.now, hold);
    h.drain();
    let frozen: Vec<String> = h
        .scheduler
        .ledger()
        .requests()
        .flat_map(|r| r.operation_ids.clone())
        .collect();
    assert_eq!(frozen, ["written", "refused"]);
    h.persist_with(MemoryStore::failure("QuotaExceededError"));
    h.drain();
    assert_eq!(
        h.scheduler.ledger().requests().count(),
        0,
        "the request went"
    );
    assert!(h.scheduler.ledger().operation("refused").is_none());
    assert_eq!(
        h.scheduler
            .ledger()
            .operation("written")
            .unwrap()
            .request_id,
        None
    );
    assert!(h.scheduler.claims().is_empty());
    h.auto_persist = true;
    next_wake(&mut h);
    h.advance(0);
    assert_eq!(h.wire_operations(), ["written"]);
    assert!(h
        .sent
        .iter()
        .all(|o| !o.request.operation_ids.contains(&"refused".to_owned())));
}

#[test]
fn host_actions_are_refused_while_writes_fail_and_resume_tries_at_once() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c1"])]).unwrap();
    let a = h.wire_ids()[0].clone();
    fill_disk(&mut h);
    h.answer(
        &a,
        AttemptStatus {
            blocked: Some("unauthorized".into()),
            ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
        },
    );
    assert!(h.scheduler.is_storage_failing());
    let before = h.scheduler.ledger().operation("a").cloned();
    let error = h.scheduler.discard(h.now, "a").unwrap_err();
    assert_eq!(error.code(), "storage_unavailable");
    assert_eq!(h.scheduler.ledger().operation("a").cloned(), before);
    // resume() is "try now": a write at once, not at the due time.
    let due = h.scheduler.storage_retry_at().unwrap();
    let barrier = h.scheduler.resume(h.now).unwrap();
    h.drain();
    assert!(h.now < due);
    assert_eq!(h.scheduler.barrier_state(barrier), Some(false), "it failed");
    heal(&mut h);
    let barrier = h.scheduler.resume(h.now).unwrap();
    h.drain();
    assert_eq!(h.scheduler.barrier_state(barrier), Some(true));
    assert!(!h.scheduler.is_storage_failing());
    assert_eq!(recovered_reports(&h), 1);
    h.advance(0);
    assert_eq!(
        h.wire_ids(),
        [a],
        "resume() also re-arms the unauthorized request"
    );
    assert_eq!(
        h.scheduler.ledger().operation("a").unwrap().phase,
        OperationPhase::Pending
    );
}

#[test]
fn an_intent_written_before_and_enqueued_again_while_writes_fail_is_not_refused() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c1"])]).unwrap();
    let a = h.wire_ids()[0].clone();
    fill_disk(&mut h);
    // An answer waits to be written: the next write carries it, and fails.
    h.answer(&a, applied());
    assert!(h.scheduler.is_storage_failing());
    let barrier = h.enqueue(vec![edit("a", &["c1"])]).unwrap();
    h.advance(2_000);
    assert_eq!(
        h.scheduler.barrier_state(barrier),
        Some(true),
        "it is in storage already: nothing of it waits for a write"
    );
}
