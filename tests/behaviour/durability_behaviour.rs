//! Relaxed durability where it is allowed: a batch that holds only answers, retry schedules, events
//! (or compaction, folding, a lease renewal) commits with relaxed durability; a batch with an
//! enqueue, a freeze, a first dispatch marker or a host call's change is strict. The
//! simulation drops any suffix of relaxed commits at a power loss (tests/simulation/); this
//! states which batch is which, step by step.

use canvas_scheduler_core::{
    AttemptOutcome, AttemptStatus, CountingHost, RetryAction, SafeError, SchedulerConfig,
};

use crate::common::edit;
use canvas_scheduler_testing::Harness;

/// A harness whose batches wait to be written, one canvas at a time.
fn harness() -> Harness<CountingHost> {
    let config = SchedulerConfig {
        concurrency: 1,
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("durability"));
    h.auto_persist = false;
    h.start();
    write_all(&mut h);
    h
}

/// Writes every waiting batch (and what each write sets going), returning whether each was
/// relaxed, in order.
fn write_all(h: &mut Harness<CountingHost>) -> Vec<bool> {
    let mut relaxed = Vec::new();
    for _ in 0..100 {
        let Some(batch) = h.persists.front() else {
            return relaxed;
        };
        relaxed.push(batch.relaxed);
        h.persist_next();
        h.drain();
    }
    panic!("the scheduler kept writing: {relaxed:?}");
}

fn unavailable() -> AttemptStatus {
    AttemptStatus {
        error: Some(SafeError::new("http_503", "service unavailable")),
        ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
    }
}

#[test]
fn w1_an_enqueue_and_its_first_send_are_strict_its_answers_and_retries_relaxed() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c1"])]).expect("enqueue");
    // The enqueue, then its freeze and dispatch marker, before the first byte.
    let admitted = write_all(&mut h);
    assert!(!admitted.is_empty() && admitted.iter().all(|relaxed| !relaxed));
    assert_eq!(h.wire.len(), 1, "sent once its freeze is durable");
    let request = h.wire[0].request.id.clone();

    // A 503: the retry schedule alone may be lost (the request stays dispatched: a query).
    h.answer(&request, unavailable());
    assert_eq!(write_all(&mut h), vec![true]);
    h.advance(60_000);
    // The query's attempt count is relaxed too: lost, the query is only asked again.
    let counted = write_all(&mut h);
    assert!(!counted.is_empty() && counted.iter().all(|relaxed| *relaxed));
    let retry = h.wire.first().expect("retried after the backoff").clone();
    assert_eq!(retry.action, RetryAction::Query);

    // The answer settles it: relaxed (lost, it is queried again and found applied).
    h.answer(&request, AttemptStatus::outcome(AttemptOutcome::Applied));
    let settled = write_all(&mut h);
    assert!(!settled.is_empty() && settled.iter().all(|relaxed| *relaxed));
    assert!(h.wire.is_empty());
}

#[test]
fn w1_a_host_call_that_changes_the_ledger_is_strict() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c1"])]).expect("enqueue");
    write_all(&mut h);
    let request = h.wire[0].request.id.clone();
    // An expired login blocks the request until the host acts: relaxed (a query finds it).
    h.answer(
        &request,
        AttemptStatus {
            blocked: Some("unauthorized".into()),
            ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
        },
    );
    assert_eq!(write_all(&mut h), vec![true]);
    // The host discards it: its promise says so for good, so it is strict.
    h.scheduler
        .discard(h.now, "a")
        .expect("discard a blocked operation");
    h.drain();
    let discarded = write_all(&mut h);
    assert!(!discarded.is_empty() && !discarded[0], "{discarded:?}");
}
