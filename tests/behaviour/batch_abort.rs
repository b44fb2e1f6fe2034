//! A batch the server aborts as a whole: every member's verdict is `batch_aborted` (none of
//! them is to blame: a serialization failure, a deadlock). Nothing was applied, so each member
//! is frozen again under a new key, alone, and its resend is paced like any failure that may be
//! the endpoint's: such an answer is no proper answer (it neither ends a run of failures nor
//! resets anyone's backoff), and aborts alone dead-letter nothing. Every test runs the
//! scheduler against the protocol model (`SimServer`) on the virtual clock.

use canvas_scheduler_core::{
    AttemptStatus, BatchLimits, CountingHost, Millis, OperationPhase, Report, RetryAction,
    SafeError, SchedulerConfig, SendOrder, Settlement,
};

use crate::common::edit;
use canvas_scheduler_testing::{aborted_batch_answer, Harness, ServerFaults, SimServer};

/// The virtual round trip of every attempt.
const ROUND_TRIP: Millis = 20;
/// The virtual time each test serves for.
const SERVED_MS: Millis = 60_000;
/// Sends past which a run is a hot loop: it stops there (the defect re-sent at once, for
/// ever, without the clock moving).
const CAP: usize = 20_000;

fn config(concurrency: usize) -> SchedulerConfig {
    SchedulerConfig {
        concurrency,
        batch: BatchLimits {
            max_operations: 32,
            max_bytes: 65_536,
            kinds: None,
        },
        coalesce_ms: 0,
        ..SchedulerConfig::default()
    }
}

/// `count` edits of `canvas`, enqueued while held: they are all ready at once.
fn enqueue_at_once(h: &mut Harness<CountingHost>, canvas: &str, prefix: &str, count: usize) {
    let hold = h.scheduler.hold(h.now).unwrap();
    let ids: Vec<String> = (0..count).map(|i| format!("{prefix}{i}")).collect();
    h.enqueue(ids.iter().map(|id| edit(id, &[canvas])).collect())
        .unwrap();
    h.scheduler.release(h.now, hold);
    h.drain();
}

/// One send as it left: when, and what it carried.
struct Sent {
    at: Millis,
    operations: Vec<String>,
    action: RetryAction,
}

/// Serves `SERVED_MS` of virtual time (or `CAP` sends): each attempt is answered one round
/// trip after it left, by `answer`. Returns every send.
fn serve(
    h: &mut Harness<CountingHost>,
    mut answer: impl FnMut(&SendOrder) -> AttemptStatus,
) -> Vec<Sent> {
    let end = h.now + SERVED_MS;
    let mut sent = Vec::new();
    while sent.len() < CAP {
        if h.wire.is_empty() {
            match h.timer.filter(|at| *at <= end) {
                Some(at) => h.advance(at.saturating_sub(h.now)),
                None => break,
            }
            continue;
        }
        let orders = std::mem::take(&mut h.wire);
        let at = h.now;
        h.advance(ROUND_TRIP);
        for order in orders {
            sent.push(Sent {
                at,
                operations: order.request.operation_ids.clone(),
                action: order.action,
            });
            let status = answer(&order);
            h.scheduler.on_answer(h.now, order.attempt, status);
            h.drain();
        }
        if h.now > end {
            break;
        }
    }
    sent
}

fn dead_lettered(h: &Harness<CountingHost>) -> usize {
    h.reports
        .iter()
        .filter(|r| matches!(r, Report::DeadLettered { .. }))
        .count()
}

#[test]
fn a_batch_aborted_as_a_whole_goes_again_one_operation_a_request_paced() {
    let mut h = Harness::new(config(1), CountingHost::new("r"));
    h.start();
    enqueue_at_once(&mut h, "c", "c", 10);
    let mut server = SimServer::default();
    let aborting = ServerFaults {
        abort_batch: true,
        ..ServerFaults::default()
    };
    let sent = serve(&mut h, |order| {
        server.handle(order.action, &order.request, aborting)
    });
    let carried: Vec<usize> = sent.iter().map(|s| s.operations.len()).collect();
    eprintln!(
        "every batch aborted, {} s of virtual time: {} requests",
        SERVED_MS / 1_000,
        sent.len()
    );
    assert_eq!(
        server.aborted,
        1,
        "{} sends, the first carrying {:?}",
        carried.len(),
        &carried[..carried.len().min(12)]
    );
    assert_eq!(
        carried,
        [vec![10], vec![1; 10]].concat(),
        "the aborted batch once, then each member alone"
    );
    assert!(
        sent[1].at > sent[0].at + ROUND_TRIP,
        "the first resend waits its pace after the abort: {} then {}",
        sent[0].at,
        sent[1].at
    );
    for i in 0..10 {
        let id = format!("c{i}");
        assert_eq!(server.applied.get(&id), Some(&1), "{id} applied once");
        let op = h.operation(&id).unwrap();
        assert_eq!(op.phase, OperationPhase::Resolved);
        assert_eq!(op.outcome.unwrap().settlement, Settlement::Applied);
    }
    let order: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
    assert_eq!(server.order["c"], order, "in enqueue order");
    assert_eq!(server.key_reuse, 0);
    assert_eq!(dead_lettered(&h), 0);
}

#[test]
fn a_server_that_aborts_everything_is_paced_like_an_outage_and_resets_no_backoff() {
    // Canvas y: every request aborted as a whole, even alone. Canvas x: one edit answered 503
    // throughout. No proper answer ever comes: both back off as in an outage, and after
    // `maxMs` of it each canvas sends at most about one request per `maxMs`.
    let mut h = Harness::new(config(2), CountingHost::new("r"));
    h.start();
    enqueue_at_once(&mut h, "y", "y", 5);
    enqueue_at_once(&mut h, "x", "x", 1);
    let start = h.now;
    let sent = serve(&mut h, |order| {
        if order.request.canvas_ids == ["y"] {
            aborted_batch_answer(&order.request.operation_ids)
        } else {
            AttemptStatus {
                error: Some(SafeError::new("http_503", "unavailable")),
                ..AttemptStatus::outcome(canvas_scheduler_core::AttemptOutcome::Unresolved)
            }
        }
    });
    let on = |canvas: &str| -> Vec<&Sent> {
        sent.iter()
            .filter(|s| s.operations[0].starts_with(canvas))
            .collect()
    };
    let (x, y) = (on("x"), on("y"));
    eprintln!(
        "every request aborted, {} s of virtual time: {} requests ({} of canvas y, {} of canvas x)",
        SERVED_MS / 1_000,
        sent.len(),
        y.len(),
        x.len()
    );
    let max_ms = h.scheduler.config().retry.max_ms;
    // The run is judged an outage within its first few dozen failures (at most 40 in a
    // row, `core::endpoint`), each paced; from then on a wait is never shorter than the
    // outage has lasted, up to `maxMs`: the waits double until `maxMs`, then stay there.
    // (Before the fix an abort was a proper answer: canvas y sent one request a round trip,
    // 3 001 in the minute, and reset x's backoff each time.)
    for (canvas, sends) in [("y", &y), ("x", &x)] {
        let times: Vec<Millis> = sends.iter().map(|s| s.at - start).collect();
        assert!(sends.len() >= 3, "{canvas} kept trying: {}", sends.len());
        assert!(
            sends.len() <= 60,
            "{canvas}: {} requests in {SERVED_MS} ms",
            sends.len()
        );
        // Once the outage is a second old, each wait is at least as long as it has lasted.
        for pair in times.windows(2).filter(|p| p[0] >= 1_000) {
            assert!(
                pair[1] - pair[0] >= pair[0].min(max_ms),
                "{canvas}: a wait shorter than the outage so far: {times:?}"
            );
        }
        let late = times.iter().filter(|at| **at >= max_ms).count();
        assert!(
            late <= 2,
            "{canvas}: past maxMs of outage about one request per maxMs: {times:?}"
        );
        assert!(
            *times.last().unwrap() >= max_ms / 2,
            "{canvas} still tries: never blocked for good: {times:?}"
        );
    }
    assert!(
        y.iter().all(|s| s.operations.len() == 1 || s.at == start),
        "after the first abort, y's edits go alone"
    );
    assert!(
        x.iter().any(|s| s.action == RetryAction::Query),
        "x follows its failed submits with queries"
    );
    assert_eq!(
        dead_lettered(&h),
        0,
        "aborts and outages dead-letter nothing"
    );
    for id in ["y0", "y1", "x0"] {
        let op = h.operation(id).unwrap();
        assert_eq!(op.phase, OperationPhase::Pending, "{id} still pending");
    }
}

#[test]
fn an_operation_held_back_after_an_abort_is_explained_as_a_scheduled_retry() {
    let mut h = Harness::new(config(1), CountingHost::new("r"));
    h.start();
    enqueue_at_once(&mut h, "c", "c", 3);
    let batch = h.wire.remove(0);
    assert_eq!(batch.request.operation_ids.len(), 3);
    h.scheduler.on_answer(
        h.now,
        batch.attempt,
        aborted_batch_answer(&batch.request.operation_ids),
    );
    h.drain();
    assert!(h.wire.is_empty(), "nothing goes again at once");
    let explained = h.scheduler.explain(h.now, "c0").unwrap();
    assert_eq!(explained.state, "pending");
    assert_eq!(explained.reason, "retry_scheduled");
    let due = explained.due_at.expect("a due time");
    assert!(due > h.now);
    assert_eq!(h.timer, Some(due), "the wake-up is armed for it");
    h.advance(due - h.now);
    assert_eq!(h.wire_operations(), ["c0"], "then alone, under a new key");
    assert_ne!(h.wire[0].request.id, batch.request.id);
}
