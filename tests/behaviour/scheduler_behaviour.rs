//! The scheduler's core promises (order, in flight, exactly once, retries, storage failures,
//! hold, stop, settle, host code, recovery) on a virtual clock, each test named after the behaviour
//! it proves.

use canvas_scheduler_core::{
    AttemptOutcome, AttemptStatus, CompiledRequest, CountingHost, Host, Intent, OperationPhase,
    PersistFailure, PersistResult, Report, RequestPhase, RetryAction, SafeError, Scheduler,
    SchedulerConfig, Settlement,
};

use crate::common::{edit, edit_after, of_kind, upload};
use canvas_scheduler_testing::{Harness, MemoryStore};

fn harness() -> Harness<CountingHost> {
    let mut h = Harness::new(SchedulerConfig::default(), CountingHost::new("r"));
    h.start();
    h
}

fn harness_with(config: SchedulerConfig) -> Harness<CountingHost> {
    let mut h = Harness::new(config, CountingHost::new("r"));
    h.start();
    h
}

fn applied() -> AttemptStatus {
    AttemptStatus::outcome(AttemptOutcome::Applied)
}

fn unresolved() -> AttemptStatus {
    AttemptStatus::outcome(AttemptOutcome::Unresolved)
}

fn op_phase<H: Host>(h: &Harness<H>, id: &str) -> OperationPhase {
    h.scheduler
        .ledger()
        .operation(id)
        .map(|o| o.phase)
        .expect("operation exists")
}

#[test]
fn s1_ready_operations_leave_in_sequence_order() {
    let mut h = harness_with(SchedulerConfig {
        concurrency: 1,
        ..SchedulerConfig::default()
    });
    h.enqueue(vec![
        edit("a", &["c1"]),
        edit("b", &["c2"]),
        edit("c", &["c3"]),
    ])
    .unwrap();
    let mut order = Vec::new();
    while let Some(order_sent) = h.answer_first(applied()) {
        order.extend(order_sent.request.operation_ids);
    }
    assert_eq!(order, ["a", "b", "c"]);
}

#[test]
fn s1_a_dependent_waits_until_its_dependency_resolves() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c1"]), edit_after("b", &["c2"], &["a"])])
        .unwrap();
    assert_eq!(
        h.wire_operations(),
        ["a"],
        "b waits for a although c2 is free"
    );
    assert_eq!(
        h.scheduler.explain(h.now, "b").unwrap().reason,
        "waiting_dependency"
    );
    h.answer_first(applied());
    assert_eq!(h.wire_operations(), ["b"]);
}

#[test]
fn s2_at_most_concurrency_requests_in_flight() {
    let mut h = harness_with(SchedulerConfig {
        concurrency: 3,
        ..SchedulerConfig::default()
    });
    let intents = (0..10)
        .map(|i| edit(&format!("op{i}"), &[&format!("c{i}")]))
        .collect();
    h.enqueue(intents).unwrap();
    assert_eq!(h.wire.len(), 3);
    h.answer_first(applied());
    assert_eq!(h.wire.len(), 3);
    // Up to `concurrency` more are frozen ahead (durable, unsent): sent as slots free.
    assert_eq!(h.scheduler.in_flight(), 6);
    while h.answer_first(applied()).is_some() {
        assert!(h.wire.len() <= 3);
    }
    assert_eq!(h.scheduler.in_flight(), 0);
}

#[test]
fn s2_invalid_concurrency_is_refused() {
    let config = SchedulerConfig {
        concurrency: 0,
        ..SchedulerConfig::default()
    };
    let error =
        canvas_scheduler_core::Scheduler::new(config, CountingHost::new("r"), Default::default())
            .err()
            .unwrap();
    assert_eq!(error.code(), "invalid_concurrency");
}

#[test]
fn s3_one_upload_at_a_time_and_a_waiting_upload_does_not_stop_other_kinds() {
    let mut h = harness_with(SchedulerConfig {
        concurrency: 3,
        ..SchedulerConfig::default()
    });
    h.enqueue(vec![
        upload("u1"),
        upload("u2"),
        edit("e1", &["c1"]),
        edit("e2", &["c2"]),
    ])
    .unwrap();
    assert_eq!(h.wire_operations(), ["u1", "e1", "e2"]);
    assert_eq!(
        h.scheduler.explain(h.now, "u2").unwrap().reason,
        "waiting_lane"
    );
    h.answer("r-1", applied());
    assert_eq!(
        h.wire_operations(),
        ["e1", "e2", "u2"],
        "u2 is woken when the upload slot frees"
    );
}

#[test]
fn s3_s11_a_retry_deferred_by_the_busy_upload_lane_runs_when_the_slot_frees() {
    let mut h = harness_with(SchedulerConfig {
        concurrency: 2,
        ..SchedulerConfig::default()
    });
    h.enqueue(vec![upload("u1")]).unwrap();
    let first = h.wire_ids()[0].clone();
    h.answer(&first, unresolved()); // u1 retries later (query)
    h.enqueue(vec![upload("u2")]).unwrap();
    let second = h.wire_ids()[0].clone();
    assert_ne!(first, second);
    h.advance(60_000); // u1's retry is due but the lane is busy with u2
    assert_eq!(h.wire_ids(), [second.as_str()]);
    assert_eq!(
        h.scheduler.explain(h.now, "u1").unwrap().reason,
        "waiting_lane"
    );
    h.answer(&second, applied());
    assert_eq!(
        h.wire_ids(),
        [first.as_str()],
        "the deferred retry runs once the slot frees"
    );
    assert_eq!(h.wire[0].action, RetryAction::Query);
}

#[test]
fn s4_operations_sharing_a_canvas_are_sent_one_at_a_time_in_order() {
    let mut h = harness_with(SchedulerConfig {
        concurrency: 4,
        ..SchedulerConfig::default()
    });
    h.enqueue(vec![
        edit("a", &["x"]),
        edit("b", &["x", "y"]),
        edit("c", &["y"]),
        edit("d", &["z"]),
    ])
    .unwrap();
    assert_eq!(
        h.wire_operations(),
        ["a", "d"],
        "b waits on x and reserves y against c"
    );
    let why = h.scheduler.explain(h.now, "c").unwrap();
    assert_eq!(why.reason, "waiting_canvas");
    assert_eq!(why.canvas_id.as_deref(), Some("y"));
    h.answer_first(applied());
    assert_eq!(h.wire_operations(), ["d", "b"]);
    assert_eq!(
        h.scheduler.claims().get("x").map(String::as_str),
        Some(h.wire[1].request.id.as_str())
    );
    h.answer_first(applied());
    h.answer_first(applied());
    assert_eq!(h.wire_operations(), ["c"]);
}

#[test]
fn s5_missing_participants_block_except_uploads_and_cancels() {
    let mut h = harness();
    h.enqueue(vec![
        edit("lonely", &[]),
        of_kind("cancel", "run.cancel", &[]),
        edit("fine", &["c"]),
    ])
    .unwrap();
    let op = h.scheduler.ledger().operation("lonely").unwrap();
    assert_eq!(op.blockers, ["missing_participants"]);
    assert_eq!(h.wire_operations(), ["cancel", "fine"]);
}

/// A host whose compile fails for one operation and lies about canvases for another.
struct FaultyHost(CountingHost);

impl Host for FaultyHost {
    fn compile(
        &self,
        intent: &Intent,
        _id: &str,
        _reads: &Scheduler<Self>,
    ) -> Result<CompiledRequest, SafeError> {
        let mut compiled = canvas_scheduler_core::default_compile(intent);
        match intent.id.as_str() {
            "bad-compile" => return Err(SafeError::new("compile_failed", "no such shape")),
            "silent-compile" => return Err(SafeError::new("", "")),
            "mismatch" => compiled.canvas_ids.push("elsewhere".into()),
            _ => {}
        }
        Ok(compiled)
    }
    fn create_request_id(&mut self) -> String {
        self.0.create_request_id()
    }
}

#[test]
fn s6_compile_failure_and_participant_mismatch_block_only_that_operation() {
    let mut h = Harness::new(
        SchedulerConfig {
            concurrency: 4,
            ..SchedulerConfig::default()
        },
        FaultyHost(CountingHost::new("r")),
    );
    h.start();
    h.enqueue(vec![
        edit("bad-compile", &["c"]),
        edit("silent-compile", &["c"]),
        edit("mismatch", &["c"]),
        edit("good", &["c"]),
    ])
    .unwrap();
    let blockers = |id: &str| h.scheduler.ledger().operation(id).unwrap().blockers.clone();
    assert_eq!(blockers("bad-compile"), ["no such shape"]);
    assert_eq!(blockers("silent-compile"), ["compile_failed"]);
    assert_eq!(blockers("mismatch"), ["participant_mismatch"]);
    assert_eq!(
        h.wire_operations(),
        ["good"],
        "a blocked operation never blocks the others"
    );
    assert!(h
        .reports
        .iter()
        .any(|r| matches!(r, Report::Error(e) if e.message.contains("no such shape"))));
}

#[test]
fn s7_nothing_is_sent_before_the_frozen_request_is_durable() {
    let mut h = harness();
    h.auto_persist = false;
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    assert!(h.wire.is_empty());
    while h.wire.is_empty() && h.persist_next() {
        h.drain();
    }
    let order = &h.wire[0];
    let durable = h
        .store
        .request(&order.request.id)
        .expect("request durable before send");
    assert_eq!(durable.body, order.request.body);
    assert_eq!(
        durable.phase,
        RequestPhase::Dispatched,
        "the dispatch marker is durable too"
    );
}

#[test]
fn s8_s9_a_transport_failure_is_unknown_and_the_retry_queries_first() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let id = h.wire_ids()[0].clone();
    h.answer(&id, AttemptStatus::transport_unknown("network down"));
    let request = h.scheduler.ledger().request(&id).unwrap();
    assert_eq!(request.error.as_ref().unwrap().code, "transport_unknown");
    assert_eq!(request.retry_action, Some(RetryAction::Query));
    assert_eq!(
        h.scheduler.claims().get("c"),
        Some(&id),
        "claims held while unknown"
    );
}

#[test]
fn s9_a_query_that_finds_nothing_resubmits_the_same_request_byte_for_byte() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let first = h.wire[0].clone();
    h.answer(
        &first.request.id,
        AttemptStatus::transport_unknown("timeout"),
    );
    h.advance(60_000);
    assert_eq!(h.wire[0].action, RetryAction::Query);
    let not_found = AttemptStatus {
        error: Some(SafeError::new("not_found", "404")),
        ..unresolved()
    };
    h.answer(&first.request.id, not_found);
    h.advance(60_000);
    let again = h.wire[0].clone();
    assert_eq!(again.action, RetryAction::Submit);
    assert_eq!(again.request.id, first.request.id);
    assert_eq!(again.request.body, first.request.body);
    h.answer(&first.request.id, applied());
    assert_eq!(op_phase(&h, "a"), OperationPhase::Resolved);
    assert!(h.scheduler.claims().is_empty());
}

#[test]
fn s10_retry_after_wins_over_backoff_and_the_due_time_is_absolute() {
    let mut h = harness_with(SchedulerConfig {
        concurrency: 3,
        ..SchedulerConfig::default()
    });
    h.enqueue(vec![
        edit("a", &["c"]),
        edit("b", &["d"]),
        edit("e", &["f"]),
    ])
    .unwrap();
    let (a, b, e) = (
        h.wire_ids()[0].clone(),
        h.wire_ids()[1].clone(),
        h.wire_ids()[2].clone(),
    );
    let start = h.now;
    h.answer(
        &a,
        AttemptStatus {
            retry_after_ms: Some(7_000),
            ..unresolved()
        },
    );
    // A Retry-After shorter than the wait the failure earned does not lower it. Bad luck
    // before any round trip is known waits from half to one and a half times baseMs.
    h.answer(
        &e,
        AttemptStatus {
            retry_after_ms: Some(0),
            ..unresolved()
        },
    );
    let due_e = h.scheduler.ledger().request(&e).unwrap().retry_at.unwrap();
    assert!(
        (start + 250..start + 750).contains(&due_e),
        "{}",
        due_e - start
    );
    h.answer(&b, unresolved());
    assert_eq!(
        h.scheduler.ledger().request(&a).unwrap().retry_at,
        Some(start + 7_000)
    );
    assert_eq!(
        h.store.request(&a).unwrap().retry_at,
        Some(start + 7_000),
        "stored durably"
    );
    let due_b = h.scheduler.ledger().request(&b).unwrap().retry_at.unwrap();
    assert!(
        (start + 250..start + 750).contains(&due_b),
        "{}",
        due_b - start
    );
    assert_ne!(
        due_b, due_e,
        "jitter: requests that failed together do not retry together"
    );
    h.advance(750);
    let mut due_order = [(due_e, e.as_str()), (due_b, b.as_str())];
    due_order.sort();
    assert_eq!(
        h.wire_ids(),
        due_order.iter().map(|(_, id)| *id).collect::<Vec<_>>(),
        "due order"
    );
    h.wire.clear();
    h.advance(7_000 - 750 - 1);
    assert!(h.wire.is_empty(), "not before the server's Retry-After");
    h.advance(1);
    assert_eq!(h.wire_ids(), [a.as_str()]);
}

#[test]
fn s11_due_retries_run_before_new_ready_work() {
    let mut h = harness_with(SchedulerConfig {
        concurrency: 1,
        ..SchedulerConfig::default()
    });
    h.enqueue(vec![edit("a", &["c1"])]).unwrap();
    let a = h.wire_ids()[0].clone();
    h.answer(
        &a,
        AttemptStatus {
            retry_after_ms: Some(5),
            ..unresolved()
        },
    );
    // b became ready meanwhile, but the slot was taken by nothing; hold to queue both.
    // (the 5 ms Retry-After is raised to the wait the failure earned: bad luck before
    // any round trip is known waits from half to one and a half times baseMs.)
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(vec![edit("b", &["c2"])]).unwrap();
    h.advance(750);
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(h.wire_ids(), [a], "the due retry goes first");
}

#[test]
fn s12_one_pump_pass_examines_at_most_64_ready_operations_then_yields() {
    // One operation a request: a batch would take the waiting ones along unexamined.
    let mut h = harness_with(crate::common::unbatched());
    // 100 operations waiting on one canvas claimed by a first request: each is examined and parked.
    let mut intents = vec![edit("first", &["shared"])];
    intents.extend((0..100).map(|i| edit(&format!("w{i:03}"), &["shared"])));
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(intents).unwrap();
    h.auto_persist = false; // keep persist completions (a new turn) out of this pass
    h.scheduler.release(h.now, hold);
    h.drain();
    let stats = h.scheduler.stats();
    assert_eq!(stats.scanned, 64, "one pass examines at most 64");
    assert_eq!(h.timer, Some(h.now), "it yields with a zero-delay wake-up");
    h.advance(0);
    assert_eq!(h.scheduler.stats().scanned, 101);
}

#[test]
fn s13_a_failed_write_keeps_every_claim_an_enqueue_whose_write_fails_leaves_nothing_and_resume_tries_now(
) {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let a = h.wire_ids()[0].clone();
    // The answer's write fails, and so does the next (the enqueue's try).
    h.fail_persists = 2;
    h.answer(&a, applied());
    assert!(h.reports.iter().any(|r| matches!(
        r,
        Report::StorageFailed { error } if error.code == "QuotaExceededError"
    )));
    assert_eq!(
        h.scheduler.claims().get("c"),
        Some(&a),
        "claim kept after the failed write"
    );
    assert_eq!(
        h.store.request(&a).unwrap().phase,
        RequestPhase::Dispatched,
        "nothing durable changed"
    );
    let sequence = h.scheduler.ledger().meta().last_sequence;
    let refused = h.enqueue(vec![edit("b", &["c"])]).unwrap();
    assert_eq!(h.scheduler.barrier_state(refused), Some(false), "refused");
    assert!(
        h.scheduler.ledger().operation("b").is_none(),
        "a refused enqueue leaves nothing behind"
    );
    assert_eq!(h.scheduler.ledger().meta().last_sequence, sequence);
    assert_eq!(h.scheduler.stats().idle_reason, Some("storage_unavailable"));
    let barrier = h.scheduler.resume(h.now).unwrap();
    h.drain();
    assert_eq!(h.scheduler.barrier_state(barrier), Some(true));
    assert_eq!(h.store.request(&a).unwrap().phase, RequestPhase::Resolved);
    assert!(
        h.scheduler.claims().is_empty(),
        "the write releases resolved requests"
    );
    assert!(h
        .reports
        .iter()
        .any(|r| matches!(r, Report::StorageRecovered)));
    h.enqueue(vec![edit("b", &["c"])]).unwrap();
    assert_eq!(h.wire_operations(), ["b"]);
}

#[test]
fn s13_an_enqueue_whose_write_fails_is_refused_and_never_sent() {
    let mut h = harness();
    h.fail_persists = 1;
    let barrier = h.enqueue(vec![edit("a", &["c"])]).unwrap();
    assert_eq!(
        h.scheduler.barrier_state(barrier),
        Some(false),
        "the enqueue is refused"
    );
    assert!(h.scheduler.ledger().operation("a").is_none());
    h.advance(60_000);
    assert!(h.sent.is_empty(), "nothing of it is ever sent");
    assert!(!h.scheduler.is_storage_failing(), "storage was tried again");
    let barrier = h.enqueue(vec![edit("a", &["c"])]).unwrap();
    assert_eq!(h.scheduler.barrier_state(barrier), Some(true));
    assert_eq!(h.wire_operations(), ["a"]);
    assert!(h.store.operation("a").is_some());
}

#[test]
fn s14_hold_stops_new_work_clears_timers_and_release_twice_is_harmless() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let a = h.wire_ids()[0].clone();
    h.answer(&a, unresolved());
    assert!(h.timer.is_some());
    let hold = h.scheduler.hold(h.now).unwrap();
    h.drain();
    assert_eq!(h.timer, None, "timers cleared while held");
    h.enqueue(vec![edit("b", &["d"])]).unwrap();
    h.advance(120_000);
    assert!(h.wire.is_empty(), "nothing new starts while held");
    assert_eq!(h.scheduler.explain(h.now, "b").unwrap().reason, "held");
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(h.wire.len(), 2, "releasing the last hold pumps");
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(h.wire.len(), 2);
}

#[test]
fn s14_work_already_sent_completes_while_held() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let _hold = h.scheduler.hold(h.now).unwrap();
    h.answer_first(applied());
    assert_eq!(op_phase(&h, "a"), OperationPhase::Resolved);
    assert_eq!(h.scheduler.in_flight(), 0);
}

#[test]
fn s15_stop_aborts_in_flight_and_a_late_completion_changes_nothing() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let order = h.wire[0].clone();
    h.scheduler.stop();
    h.drain();
    assert_eq!(h.aborted, [order.attempt]);
    let before = h.scheduler.ledger().snapshot();
    let writes = h.store.writes;
    h.scheduler.on_answer(h.now, order.attempt, applied());
    h.drain();
    assert_eq!(h.scheduler.ledger().snapshot(), before);
    assert_eq!(h.store.writes, writes);
    assert_eq!(
        h.scheduler.start(h.now).unwrap_err().code(),
        "scheduler_closed"
    );
    assert_eq!(
        h.scheduler.hold(h.now).unwrap_err().code(),
        "scheduler_closed"
    );
}

#[test]
fn s15_a_paused_page_stops_with_no_write() {
    // `stop()` gives the lease up in a last write; a page that pauses while another tab
    // takes the lead over (by Web Lock, with a higher fence) writes nothing: a write begun
    // as the page is frozen would hold a transaction open in the back/forward cache.
    let settled = || {
        let mut h = harness();
        h.enqueue(vec![edit("a", &["c"])]).unwrap();
        h.answer_first(applied());
        h.drain();
        assert_eq!(op_phase(&h, "a"), OperationPhase::Resolved);
        h
    };
    let mut h = settled();
    let writes = h.store.writes;
    h.scheduler.stop_keeping_lease();
    h.drain();
    assert_eq!(h.store.writes, writes, "nothing waited: no write");
    assert!(h.scheduler.is_closed());

    // Not even what waits (here the log of an attempt on the wire, which is aborted): it is
    // lost as in a crash, and the next dispatcher asks about the attempt.
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let order = h.wire[0].clone();
    let writes = h.store.writes;
    h.scheduler.stop_keeping_lease();
    h.drain();
    assert_eq!(h.aborted, [order.attempt]);
    assert_eq!(h.store.writes, writes, "what waited is not written");

    let mut h = settled();
    let writes = h.store.writes;
    h.scheduler.stop();
    h.drain();
    assert_eq!(
        h.store.writes,
        writes + 1,
        "stop() gives the lease up in a write"
    );
}

#[test]
fn s16_in_flight_counts_work_started_while_settling() {
    let mut h = harness_with(SchedulerConfig {
        concurrency: 1,
        ..crate::common::unbatched()
    });
    h.enqueue(vec![edit("a", &["c"]), edit("b", &["c"])])
        .unwrap();
    assert_eq!(h.scheduler.in_flight(), 1);
    h.answer_first(applied());
    assert_eq!(
        h.scheduler.in_flight(),
        1,
        "b started as a finished: not settled yet"
    );
    h.answer_first(applied());
    assert_eq!(h.scheduler.in_flight(), 0);
}

#[test]
fn s17_a_compile_error_is_reported_as_an_effect_and_the_scheduler_goes_on() {
    let mut h = Harness::new(
        SchedulerConfig::default(),
        FaultyHost(CountingHost::new("r")),
    );
    h.start();
    h.enqueue(vec![edit("bad-compile", &["c"]), edit("after", &["c"])])
        .unwrap();
    assert!(h.reports.iter().any(
        |r| matches!(r, Report::Blocked { operation_id, .. } if operation_id == "bad-compile")
    ));
    assert_eq!(h.wire_operations(), ["after"]);
}

#[test]
fn s18_start_recovers_claims_and_reschedules_with_stored_actions() {
    let mut h = harness_with(crate::common::unbatched());
    h.enqueue(vec![
        edit("a", &["c"]),
        edit("b", &["c"]),
        edit("x", &["d"]),
    ])
    .unwrap();
    let a = h.wire_ids()[0].clone();
    let x = h.wire_ids()[1].clone();
    h.answer(
        &x,
        AttemptStatus {
            retry_after_ms: Some(50_000),
            ..unresolved()
        },
    );
    // Crash with a on the wire: restart from the durable store only.
    let store = h.store.clone();
    let mut r = Harness::over(
        SchedulerConfig::default(),
        CountingHost::new("s"),
        store,
        h.now + 1,
    );
    r.start();
    assert_eq!(r.scheduler.claims().get("c"), Some(&a));
    assert_eq!(r.scheduler.claims().get("d"), Some(&x));
    assert_eq!(r.wire.len(), 1);
    assert_eq!(
        (r.wire[0].request.id.clone(), r.wire[0].action),
        (a.clone(), RetryAction::Query),
        "interrupted request queried first"
    );
    assert_eq!(
        r.scheduler.explain(r.now, "x").unwrap().due_at,
        Some(h.now + 50_000)
    );
    r.answer(&a, applied());
    assert_eq!(r.wire_operations(), ["b"]);
}

#[test]
fn s18_a_recovery_claim_conflict_sends_nothing() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let mut corrupted = h.store.snapshot();
    let mut twin = corrupted.requests[0].clone();
    twin.id = "twin".into();
    twin.operation_ids = vec!["ghost".into()];
    corrupted.requests.push(twin);
    let mut s = canvas_scheduler_core::Scheduler::new(
        SchedulerConfig::default(),
        CountingHost::new("s"),
        corrupted,
    )
    .unwrap();
    assert_eq!(
        s.start(h.now).unwrap_err().code(),
        "recovery_claim_conflict"
    );
    let mut sends = 0;
    while let Some(effect) = s.poll_effect() {
        sends += matches!(effect, canvas_scheduler_core::Effect::Send(_)) as usize;
    }
    assert_eq!(sends, 0);
}

#[test]
fn s18_an_unknown_protocol_version_is_blocked_request_interpreter_unavailable() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let mut snapshot = h.store.snapshot();
    snapshot.requests[0].protocol_version = 9;
    let store = MemoryStore::from_snapshot(snapshot);
    let mut r = Harness::over(
        SchedulerConfig::default(),
        CountingHost::new("s"),
        store,
        h.now,
    );
    r.start();
    assert!(r.wire.is_empty());
    assert_eq!(
        r.scheduler.explain(r.now, "a").unwrap().reason,
        "request_interpreter_unavailable"
    );
}

#[test]
fn s9_rejected_settles_with_canonical_and_wakes_dependents() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"]), edit_after("b", &["d"], &["a"])])
        .unwrap();
    let rejected = AttemptStatus {
        error: Some(SafeError::new("version_conflict", "stale")),
        canonical: Some(serde_json::json!({"version": 4}).into()),
        ..AttemptStatus::outcome(AttemptOutcome::Rejected)
    };
    h.answer_first(rejected);
    let outcome = h
        .scheduler
        .ledger()
        .operation("a")
        .unwrap()
        .outcome
        .clone()
        .unwrap();
    assert_eq!(outcome.settlement, Settlement::Rejected);
    assert_eq!(
        outcome.canonical,
        Some(serde_json::json!({"version": 4}).into())
    );
    assert_eq!(h.wire_operations(), ["b"]);
}

#[test]
fn s9_accepted_is_queried_until_applied() {
    let mut h = harness();
    h.enqueue(vec![of_kind("run", "run.start", &["c"])])
        .unwrap();
    let id = h.wire_ids()[0].clone();
    h.answer(&id, AttemptStatus::outcome(AttemptOutcome::Accepted));
    assert_eq!(
        h.scheduler.ledger().request(&id).unwrap().phase,
        RequestPhase::Accepted
    );
    h.advance(60_000);
    assert_eq!(h.wire[0].action, RetryAction::Query);
    h.answer(&id, applied());
    assert_eq!(op_phase(&h, "run"), OperationPhase::Resolved);
}

#[test]
fn s13_unauthorized_blocks_until_resume() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let id = h.wire_ids()[0].clone();
    h.answer(
        &id,
        AttemptStatus {
            blocked: Some("unauthorized".into()),
            ..unresolved()
        },
    );
    h.advance(120_000);
    assert!(h.wire.is_empty());
    assert_eq!(
        h.scheduler.explain(h.now, "a").unwrap().reason,
        "unauthorized"
    );
    h.scheduler.resume(h.now).unwrap();
    h.drain();
    h.advance(0);
    assert_eq!(h.wire_ids(), [id]);
}

#[test]
fn k2_a_fenced_write_stops_the_dispatcher_at_once() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"]), edit("b", &["d"])])
        .unwrap();
    assert_eq!(h.wire.len(), 2);
    h.auto_persist = false;
    h.answer_first(applied());
    h.persist_with(PersistResult::Failed(PersistFailure::Fenced {
        current: None,
    }));
    h.drain();
    assert_eq!(
        h.aborted.len(),
        1,
        "the attempt still on the wire is aborted"
    );
    assert!(!h.scheduler.is_leader());
    assert_eq!(
        h.enqueue(vec![edit("z", &["e"])]).unwrap_err().code(),
        "lease_lost"
    );
}

#[test]
fn w1_group_commit_writes_one_turn_in_one_transaction() {
    let config = SchedulerConfig {
        group_commit: true,
        ..crate::common::unbatched()
    };
    let mut h = Harness::new(config, CountingHost::new("r"));
    h.start();
    let writes = h.store.writes;
    let hold = h.scheduler.hold(h.now).unwrap();
    let mut barriers = Vec::new();
    for i in 0..100 {
        // One turn of the event loop: 100 separate enqueue calls, nothing drained between.
        barriers.push(
            h.scheduler
                .enqueue(h.now, vec![edit(&format!("g{i}"), &["c"])])
                .unwrap(),
        );
    }
    h.drain();
    assert_eq!(
        h.store.writes - writes,
        1,
        "one transaction for the whole turn"
    );
    assert!(barriers
        .iter()
        .all(|b| h.scheduler.barrier_state(*b) == Some(true)));
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(h.wire_operations(), ["g0"]);
}

#[test]
fn s9_a_rejection_carries_the_requests_canonical_when_the_operation_has_none() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["c"])]).unwrap();
    let verdict = canvas_scheduler_core::OperationVerdict {
        operation_id: "a".into(),
        settlement: Settlement::Rejected,
        error: None,
        canonical: None,
    };
    let rejected = AttemptStatus {
        error: Some(SafeError::new("version_conflict", "stale")),
        canonical: Some(serde_json::json!({"canvases": {"c": {"version": 9}}}).into()),
        operations: vec![verdict],
        ..AttemptStatus::outcome(AttemptOutcome::Rejected)
    };
    h.answer_first(rejected);
    let outcome = h
        .scheduler
        .ledger()
        .operation("a")
        .unwrap()
        .outcome
        .clone()
        .unwrap();
    assert_eq!(
        outcome.error.map(|e| e.code).as_deref(),
        Some("version_conflict")
    );
    assert_eq!(
        outcome.canonical,
        Some(serde_json::json!({"canvases": {"c": {"version": 9}}}).into())
    );
}

/// Canvas order at scale (`scanned` reached 1.8 million for 4 000 sends on one canvas): when a
/// busy canvas is released, only its next operation is woken, so the work per send does not
/// grow with the queue behind it. Every operation is examined about once when it arrives and
/// once when its turn comes, in order.
#[test]
fn s4_a_released_canvas_wakes_only_its_next_operation() {
    for queued in [200, 2_000] {
        let mut h = harness();
        let edits = (0..queued)
            .map(|i| edit(&format!("e{i}"), &["page-1"]))
            .collect();
        h.enqueue(edits).unwrap();
        let mut order = Vec::new();
        while let Some(sent) = h.answer_first(applied()) {
            order.extend(sent.request.operation_ids.clone());
        }
        assert_eq!(order.len(), queued, "every edit sent");
        let in_order = (0..queued).map(|i| format!("e{i}")).collect::<Vec<_>>();
        assert_eq!(order, in_order, "one at a time, in order");
        let scanned = h.scheduler.stats().scanned;
        assert!(
            scanned <= 3 * queued as u64,
            "{queued} queued: {scanned} examinations (at most three per operation)"
        );
    }
}

/// Bad input changes nothing, and the error says which intent of the call it was about
/// (`enqueueMany` reports the index of the intent refused; the JS boundary adds
/// its id).
#[test]
fn an_enqueue_error_names_the_intent_of_the_call_it_refused() {
    let mut h = harness();
    h.enqueue(vec![edit("stored", &["c"])]).expect("enqueue");
    let cases = [
        (
            vec![edit("a", &["c"]), edit("b", &["c"]), edit("a", &["c"])],
            2,
        ),
        (vec![edit("d", &["c"]), edit("stored", &["other"])], 1),
        (
            vec![edit("e", &["c"]), edit_after("f", &["c"], &["nowhere"])],
            1,
        ),
    ];
    for (batch, index) in cases {
        let error = h.enqueue(batch).expect_err("refused");
        assert_eq!(error.intent(), Some(index), "{error}");
    }
    assert_eq!(
        h.scheduler.stats().pending,
        1,
        "nothing of a refused call stored"
    );
}

/// The scheduler's wake-up is the earliest of its named timers, and each says what it is for:
/// a coalescing hold, a retry, the lease's renewal; a stopped scheduler waits for nothing.
#[test]
fn named_timers_say_what_the_wake_up_is_for() {
    use canvas_scheduler_core::Timer;
    let mut h = Harness::new(SchedulerConfig::default(), CountingHost::new("r"));
    h.start();
    let held = canvas_scheduler_core::intent::IntentInput {
        coalesce_key: Some("drag:s".into()),
        ..crate::common::edit("held", &["c"])
    };
    h.enqueue(vec![held]).unwrap();
    let timers = h.scheduler.timers();
    let hold_end = timers
        .get(Timer::CoalesceHold)
        .expect("the hold's end is armed");
    assert_eq!(hold_end, h.now + SchedulerConfig::default().coalesce_ms);
    assert_eq!(
        timers.next_timeout(),
        Some(hold_end.min(timers.get(Timer::HeldWrite).unwrap_or(hold_end)))
    );
    h.advance(SchedulerConfig::default().coalesce_ms);
    h.drain();
    assert_eq!(h.wire_operations(), ["held"], "sent when the hold ended");
    assert_eq!(h.scheduler.timers().get(Timer::CoalesceHold), None);
    let renew = h.scheduler.timers().get(Timer::LeaseRenewal);
    assert!(
        renew.is_some_and(|at| at > h.now),
        "the lease is renewed while work runs"
    );
    h.answer_first(AttemptStatus::transport_unknown("offline for a moment"));
    let timers = h.scheduler.timers();
    let retry = timers.get(Timer::Retry).expect("the retry is armed");
    assert!(retry > h.now);
    assert_eq!(
        timers.next_timeout(),
        timers.armed().map(|(_, at)| at).min()
    );
    assert!(timers
        .armed()
        .all(|(_, at)| at >= retry.min(renew.unwrap())));
    h.scheduler.stop();
    assert_eq!(
        h.scheduler.timers().next_timeout(),
        None,
        "stopped: nothing is due"
    );
}
