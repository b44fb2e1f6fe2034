//! Freeze ahead: up to `concurrency` requests are frozen ahead of a
//! free slot (durable, claims held, unsent), so an answer is followed by the next send in the
//! same turn, without waiting for a commit; what is frozen ahead recovers as a submit.

use canvas_scheduler_core::{
    AttemptOutcome, AttemptStatus, CountingHost, RetryAction, SchedulerConfig,
};

use crate::common::{edit, upload};
use canvas_scheduler_testing::Harness;

fn one_slot() -> Harness<CountingHost> {
    harness(false)
}

/// As the browser runs it: one transaction a turn (group commit).
fn one_slot_grouped() -> Harness<CountingHost> {
    harness(true)
}

/// One operation a request: what is frozen ahead is one request per operation.
fn harness(group_commit: bool) -> Harness<CountingHost> {
    let mut h = Harness::new(
        SchedulerConfig {
            concurrency: 1,
            group_commit,
            ..crate::common::unbatched()
        },
        CountingHost::new("r"),
    );
    h.start();
    h
}

fn applied() -> AttemptStatus {
    AttemptStatus::outcome(AttemptOutcome::Applied)
}

/// Writes every batch asked for so far.
fn persist_all(h: &mut Harness<CountingHost>) {
    h.drain();
    while h.persist_next() {
        h.drain();
    }
}

#[test]
fn s2_an_answer_is_followed_by_the_next_send_without_waiting_for_a_commit() {
    let mut h = one_slot();
    h.auto_persist = false;
    h.enqueue(vec![
        edit("a", &["c1"]),
        edit("b", &["c2"]),
        edit("c", &["c3"]),
    ])
    .unwrap();
    persist_all(&mut h);
    assert_eq!(h.wire_operations(), ["a"]);
    let why = h.scheduler.explain(h.now, "b").unwrap();
    assert_eq!(
        (why.state, why.reason.as_str()),
        ("pending", "frozen_ahead")
    );
    assert_eq!(why.attempt, Some(0), "not sent yet");
    assert!(
        h.scheduler.ledger().request("r-2").is_some(),
        "b's request is durable"
    );
    assert_eq!(h.scheduler.explain(h.now, "c").unwrap().reason, "ready");
    // a's answer is not written yet, and b is on the wire already; c is frozen ahead in the
    // batch that writes the answer.
    h.answer_first(applied());
    assert_eq!(h.wire_operations(), ["b"]);
    assert!(
        !h.persists.is_empty(),
        "the answer's batch is not written yet"
    );
    persist_all(&mut h);
    assert_eq!(
        h.scheduler.explain(h.now, "c").unwrap().reason,
        "frozen_ahead"
    );
    h.answer_first(applied());
    assert_eq!(h.wire_operations(), ["c"]);
    h.answer_first(applied());
    persist_all(&mut h);
    assert_eq!(h.scheduler.in_flight(), 0);
}

#[test]
fn s2_nothing_is_frozen_ahead_on_a_claimed_canvas_and_uploads_wait_for_a_slot() {
    let mut h = one_slot();
    h.enqueue(vec![edit("a", &["c1"]), edit("b", &["c1"]), upload("u")])
        .unwrap();
    assert_eq!(h.wire_operations(), ["a"]);
    assert_eq!(
        h.scheduler.explain(h.now, "b").unwrap().reason,
        "waiting_canvas"
    );
    assert_ne!(
        h.scheduler.explain(h.now, "u").unwrap().reason,
        "frozen_ahead"
    );
    assert!(h
        .scheduler
        .ledger()
        .operation("u")
        .unwrap()
        .request_id
        .is_none());
    h.answer_first(applied());
    h.answer_first(applied());
    h.answer_first(applied());
    assert_eq!(h.sent.len(), 3);
}

#[test]
fn s18_a_crash_with_a_request_frozen_ahead_recovers_it_as_a_submit_with_the_same_id() {
    let mut h = one_slot();
    h.enqueue(vec![edit("a", &["c1"]), edit("b", &["c2"])])
        .unwrap();
    let ahead = h
        .scheduler
        .ledger()
        .operation("b")
        .unwrap()
        .request_id
        .clone()
        .unwrap();
    let frozen = h.scheduler.ledger().request(&ahead).unwrap().clone();
    // The page goes: only the durable ledger is left (past the lease).
    let mut restarted = Harness::over(
        SchedulerConfig {
            concurrency: 2,
            ..crate::common::unbatched()
        },
        CountingHost::new("s"),
        h.store.clone(),
        h.now + 60_000,
    );
    restarted.start();
    restarted.drain();
    let order = restarted
        .wire
        .iter()
        .find(|o| o.request.id == ahead)
        .expect("the request frozen ahead is sent after the restart");
    assert_eq!(
        order.action,
        RetryAction::Submit,
        "never sent: submitted, not queried"
    );
    assert_eq!(order.request.body, frozen.body);
    assert_eq!(order.request.operation_ids, ["b"]);
}

#[test]
fn s2_k2_a_request_frozen_ahead_is_not_sent_once_the_lease_renewed_with_it_lapsed() {
    let mut h = one_slot();
    h.enqueue(vec![edit("a", &["c1"]), edit("b", &["c2"])])
        .unwrap();
    assert_eq!(h.wire_operations(), ["a"]);
    // Nothing is written from now on (a stalled disk): the lease lapses.
    h.auto_persist = false;
    let lease_ms = h.scheduler.config().lease_ms;
    h.advance(lease_ms + 1);
    h.answer_first(applied());
    assert!(
        h.wire.is_empty(),
        "b waits for a write that renews the lease"
    );
    persist_all(&mut h);
    assert_eq!(h.wire_operations(), ["b"]);
}

#[test]
fn s2_held_or_offline_a_request_frozen_ahead_leaves_its_place_and_is_submitted_later() {
    let mut h = one_slot();
    h.enqueue(vec![edit("a", &["c1"]), edit("b", &["c2"])])
        .unwrap();
    let hold = h.scheduler.hold(h.now).unwrap();
    h.drain();
    assert_eq!(h.scheduler.explain(h.now, "b").unwrap().reason, "held");
    assert_eq!(h.scheduler.in_flight(), 1, "only a, on the wire");
    h.answer_first(applied());
    assert!(h.wire.is_empty());
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(h.wire_operations(), ["b"]);
    assert_eq!(h.wire[0].action, RetryAction::Submit);
    h.enqueue(vec![edit("c", &["c3"])]).unwrap();
    h.scheduler.set_online(h.now, false);
    h.drain();
    assert_eq!(h.scheduler.explain(h.now, "c").unwrap().reason, "offline");
    h.answer_first(applied());
    h.scheduler.set_online(h.now, true);
    h.drain();
    assert_eq!(h.wire_operations(), ["c"]);
    assert_eq!(h.wire[0].action, RetryAction::Submit);
}

/// The editor's compile reads the canvas version its `settled` events taught it: the next
/// request on a canvas is compiled after the turn that recorded the answer before it (its
/// reports reach the host first: compiling in that turn sent a stale version, a conflict, in
/// the editor e2e), and joins the batch that writes that answer: one write a round.
#[test]
fn s9_the_next_request_on_a_canvas_is_compiled_after_the_answers_turn_into_its_batch() {
    let mut h = two_on_one_canvas();
    let order = h.wire.remove(0);
    h.scheduler.on_answer(h.now, order.attempt, applied());
    let b = h.scheduler.ledger().operation("b").unwrap();
    assert!(b.request_id.is_none(), "not compiled in the answer's turn");
    h.drain(); // the turn's reports, then the group commit
    assert!(h
        .reports
        .iter()
        .any(|r| matches!(r, canvas_scheduler_core::Report::Settled { .. })));
    assert!(h
        .scheduler
        .ledger()
        .operation("b")
        .unwrap()
        .request_id
        .is_some());
    assert_eq!(h.persists.len(), 1, "b's freeze rides the answer's write");
    assert!(h.wire.is_empty(), "b waits for that write");
    assert!(h.persist_next());
    h.drain();
    assert_eq!(h.wire_operations(), ["b"]);
}

#[test]
fn s13_an_answer_whose_write_failed_holds_its_canvas_again_and_nothing_is_sent() {
    let mut h = two_on_one_canvas();
    let a = h.wire_ids()[0].clone();
    h.answer_first(applied());
    h.persist_with(canvas_scheduler_testing::MemoryStore::failure(
        "QuotaExceededError",
    ));
    h.drain();
    assert!(h.wire.is_empty());
    assert!(
        h.scheduler.claims().contains_key("c"),
        "the canvas stays held"
    );
    assert_eq!(
        h.store.request(&a).unwrap().phase,
        canvas_scheduler_core::RequestPhase::Dispatched
    );
    h.auto_persist = true;
    h.scheduler.resume(h.now).unwrap();
    persist_all(&mut h);
    h.advance(60_000);
    assert_eq!(h.wire_operations(), ["b"]);
    h.answer_first(applied());
    assert_eq!(h.sent.len(), 2, "a once, b once");
}

/// Two edits on one canvas, grouped, every write manual: `a` on the wire, `b` waiting for it.
fn two_on_one_canvas() -> Harness<CountingHost> {
    let mut h = one_slot_grouped();
    h.auto_persist = false;
    h.enqueue(vec![edit("a", &["c"]), edit("b", &["c"])])
        .unwrap();
    persist_all(&mut h);
    h
}
