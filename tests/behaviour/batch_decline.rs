//! A server that cannot take batches declines them, and the scheduler falls back to one
//! operation a request: the decline is a `rejected` answer with the error code
//! `batch_not_supported` to a request of several operations, which applied none of them. Every
//! test runs the scheduler against the protocol model (`SimServer`) with `declines_batches`.

use canvas_scheduler_core::{
    AttemptOutcome, AttemptStatus, BatchLimits, CountingHost, OperationPhase, RequestPhase,
    SafeError, SchedulerConfig, Settlement,
};

use crate::common::edit;
use canvas_scheduler_testing::{Harness, ServerFaults, SimServer};

fn config(concurrency: usize) -> SchedulerConfig {
    SchedulerConfig {
        concurrency,
        batch: BatchLimits {
            max_operations: 32,
            max_bytes: 65_536,
            kinds: None,
        },
        ..SchedulerConfig::default()
    }
}

fn declining() -> SimServer {
    let mut server = SimServer::default();
    server.declines_batches = true;
    server
}

/// Enqueues `ids` (canvas, id) while held, then releases them: they are all ready at once.
fn enqueue_at_once(h: &mut Harness<CountingHost>, ids: &[(&str, String)]) {
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(ids.iter().map(|(c, id)| edit(id, &[c])).collect())
        .unwrap();
    h.scheduler.release(h.now, hold);
    h.drain();
}

fn edits(canvas: &'static str, prefix: &str, count: usize) -> Vec<(&'static str, String)> {
    (0..count)
        .map(|i| (canvas, format!("{prefix}{i}")))
        .collect()
}

/// Answers every send through `server` (the first `lose` answers lost after the server
/// handled them) until nothing is pending; returns how many operations each send carried.
fn serve(h: &mut Harness<CountingHost>, server: &mut SimServer, mut lose: u32) -> Vec<usize> {
    let mut carried = Vec::new();
    for _ in 0..10_000 {
        if h.scheduler.stats().pending == 0 {
            return carried;
        }
        if h.wire.is_empty() {
            let at = h.timer.expect("pending work has a timer");
            h.advance(at.saturating_sub(h.now).max(1));
            continue;
        }
        let order = h.wire.remove(0);
        carried.push(order.request.operation_ids.len());
        let faults = ServerFaults {
            drop_after_apply: lose > 0,
            ..ServerFaults::default()
        };
        lose = lose.saturating_sub(1);
        let answer = server.handle(order.action, &order.request, faults);
        h.scheduler.on_answer(h.now, order.attempt, answer);
        h.drain();
    }
    panic!("did not drain in 10 000 steps")
}

/// Every id applied exactly once on the server and settled `applied` in the ledger, each
/// canvas in enqueue order.
fn assert_applied_once_in_order(
    h: &Harness<CountingHost>,
    server: &SimServer,
    ids: &[(&str, String)],
) {
    for (canvas, id) in ids {
        assert_eq!(server.applied.get(id), Some(&1), "{id} applied once");
        let op = h.operation(id).unwrap();
        assert_eq!(op.phase, OperationPhase::Resolved, "{id}");
        assert_eq!(
            op.outcome.unwrap().settlement,
            Settlement::Applied,
            "{id}: declined, never rejected"
        );
        let order: Vec<&String> = ids
            .iter()
            .filter(|(c, _)| c == canvas)
            .map(|(_, i)| i)
            .collect();
        let applied: Vec<&String> = server.order[*canvas].iter().collect();
        assert_eq!(applied, order, "{canvas} applied in enqueue order");
    }
    assert_eq!(server.key_reuse, 0);
}

#[test]
fn a_declined_batch_goes_again_one_operation_a_request_and_no_batch_follows() {
    let mut h = Harness::new(config(1), CountingHost::new("r"));
    h.start();
    let mut ids = edits("c", "c", 10);
    enqueue_at_once(&mut h, &ids);
    let mut server = declining();
    let first = h.wire.remove(0);
    assert_eq!(first.request.operation_ids.len(), 10, "a batch");
    let answer = server.handle(first.action, &first.request, ServerFaults::default());
    h.scheduler.on_answer(h.now, first.attempt, answer);
    h.drain();
    assert_eq!(server.declined, 1);
    let declined: Vec<_> = h
        .scheduler
        .ledger()
        .requests()
        .filter(|r| r.operation_ids.len() > 1)
        .collect();
    assert_eq!(declined.len(), 1, "the declined request is resolved");
    assert_eq!(declined[0].phase, RequestPhase::Resolved);
    assert_eq!(
        declined[0].error.as_ref().unwrap().code,
        "batch_not_supported"
    );
    assert_eq!(h.wire_operations(), ["c0"], "the first again, alone");
    for (_, id) in &ids {
        let explained = h.scheduler.explain(h.now, id).unwrap();
        assert_ne!(
            explained.state, "resolved",
            "{id}: not settled by the decline"
        );
    }
    // Enqueued after the decline, on another canvas: no batch either.
    let later = edits("d", "d", 5);
    enqueue_at_once(&mut h, &later);
    ids.extend(later);
    let carried = serve(&mut h, &mut server, 0);
    assert_eq!(server.declined, 1, "{carried:?}");
    assert_eq!(carried, [1; 15], "one operation a request from then on");
    assert_applied_once_in_order(&h, &server, &ids);
}

#[test]
fn batches_frozen_before_the_decline_are_declined_too_and_nothing_is_lost() {
    // Two canvases, two requests in flight: both batches leave before either is declined.
    let mut h = Harness::new(config(2), CountingHost::new("r"));
    h.start();
    let mut ids = edits("c", "c", 6);
    ids.extend(edits("d", "d", 6));
    enqueue_at_once(&mut h, &ids);
    assert_eq!(h.wire.len(), 2, "one batch a canvas in flight");
    let mut server = declining();
    let carried = serve(&mut h, &mut server, 0);
    assert_eq!(server.declined, 2, "{carried:?}");
    assert!(carried[2..].iter().all(|&n| n == 1), "{carried:?}");
    assert_applied_once_in_order(&h, &server, &ids);
}

#[test]
fn a_decline_whose_answer_is_lost_is_found_by_the_query() {
    let mut h = Harness::new(config(1), CountingHost::new("r"));
    h.start();
    let ids = edits("c", "e", 8);
    enqueue_at_once(&mut h, &ids);
    let mut server = declining();
    let carried = serve(&mut h, &mut server, 1);
    assert_eq!(server.declined, 1, "{carried:?}");
    assert!(server.queries >= 1, "the lost answer was asked for");
    assert_eq!(&carried[..2], [8, 8], "the submit, then its query");
    assert!(carried[2..].iter().all(|&n| n == 1), "{carried:?}");
    assert_applied_once_in_order(&h, &server, &ids);
}

#[test]
fn after_a_reload_a_batch_is_tried_again_and_declined_again() {
    let mut h = Harness::new(config(1), CountingHost::new("r"));
    h.start();
    let ids = edits("c", "e", 12);
    enqueue_at_once(&mut h, &ids);
    let mut server = declining();
    // The decline, then three of the twelve alone; then the page reloads.
    for _ in 0..4 {
        let order = h.wire.remove(0);
        let answer = server.handle(order.action, &order.request, ServerFaults::default());
        h.scheduler.on_answer(h.now, order.attempt, answer);
        h.drain();
    }
    assert_eq!(server.declined, 1);
    assert_eq!(h.scheduler.stats().pending, 9);
    let mut h = Harness::over(
        config(1),
        CountingHost::new("s"),
        h.store.clone(),
        h.now + 60_000,
    );
    h.start();
    h.advance(1);
    let carried = serve(&mut h, &mut server, 0);
    // The in-flight single went again (or was queried); the rest tried as a batch once more.
    assert_eq!(server.declined, 2, "{carried:?}");
    assert_applied_once_in_order(&h, &server, &ids);
}

#[test]
fn the_code_on_a_request_of_one_operation_is_an_ordinary_rejection() {
    let mut h = Harness::new(config(1), CountingHost::new("r"));
    h.start();
    h.enqueue(vec![edit("alone", &["c"])]).unwrap();
    h.drain();
    h.answer_first(AttemptStatus {
        error: Some(SafeError::new("batch_not_supported", "x")),
        ..AttemptStatus::outcome(AttemptOutcome::Rejected)
    });
    let op = h.operation("alone").unwrap();
    assert_eq!(op.outcome.unwrap().settlement, Settlement::Rejected);
    assert!(h.wire.is_empty(), "nothing sent again");
}

#[test]
fn a_server_that_takes_batches_gets_them() {
    let mut h = Harness::new(config(1), CountingHost::new("r"));
    h.start();
    let ids = edits("c", "e", 40);
    enqueue_at_once(&mut h, &ids);
    let mut server = SimServer::default();
    let carried = serve(&mut h, &mut server, 0);
    assert_eq!(carried, [32, 8]);
    assert_eq!(server.declined, 0);
    assert_applied_once_in_order(&h, &server, &ids);
}
