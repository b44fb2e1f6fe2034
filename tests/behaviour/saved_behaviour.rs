//! `pending()` and the `whenSaved()` decision on a virtual clock.

use canvas_scheduler_core::{
    AttemptOutcome, AttemptStatus, CompiledRequest, CountingHost, Host, Intent, SafeError,
    Scheduler, SchedulerConfig,
};

use crate::common::edit;
use canvas_scheduler_testing::Harness;

/// Fails to compile `bad` (the operation is blocked `compile_failed`).
struct FaultyHost(CountingHost);

impl Host for FaultyHost {
    fn compile(
        &self,
        intent: &Intent,
        _id: &str,
        _reads: &Scheduler<Self>,
    ) -> Result<CompiledRequest, SafeError> {
        if intent.id == "bad" {
            return Err(SafeError::new("compile_failed", "no such shape"));
        }
        Ok(canvas_scheduler_core::default_compile(intent))
    }
    fn create_request_id(&mut self) -> String {
        self.0.create_request_id()
    }
}

/// One operation a request: each operation's state is its own request's.
fn harness() -> Harness<FaultyHost> {
    let mut h = Harness::new(
        SchedulerConfig {
            concurrency: 1,
            ..crate::common::unbatched()
        },
        FaultyHost(CountingHost::new("r")),
    );
    h.start();
    h
}

fn applied() -> AttemptStatus {
    AttemptStatus::outcome(AttemptOutcome::Applied)
}

#[test]
fn pending_lists_unsettled_operations_in_sequence_order_with_their_canvases() {
    let mut h = harness();
    h.enqueue(vec![
        edit("a", &["c1"]),
        edit("b", &["c2"]),
        edit("c", &["c1"]),
    ])
    .unwrap();
    let pending = h.scheduler.pending(h.now);
    let ids: Vec<&str> = pending.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(pending[0].state, "in_flight");
    assert_eq!(pending[1].state, "queued");
    assert_eq!(
        pending[1].reason, "frozen_ahead",
        "frozen behind the full slot"
    );
    assert_eq!(pending[2].state, "queued");
    assert_eq!(pending[2].canvas_ids, ["c1"]);
    assert_eq!(h.scheduler.unsettled_count(), 3);
    while h.answer_first(applied()).is_some() {}
    assert!(h.scheduler.pending(h.now).is_empty());
    assert_eq!(h.scheduler.unsettled_count(), 0);
}

#[test]
fn when_saved_waits_for_every_covered_operation_to_settle_or_block() {
    let mut h = harness();
    h.enqueue(vec![
        edit("a", &["c1"]),
        edit("bad", &["c2"]),
        edit("c", &["c3"]),
    ])
    .unwrap();
    let mut covered = h.scheduler.saved_mark();
    let mut settled = 0;
    h.enqueue(vec![edit("late", &["c4"])]).unwrap();
    assert!(h
        .scheduler
        .saved_state(h.now, &mut covered, &mut settled)
        .is_none());
    h.answer_first(applied()); // a
    assert!(h
        .scheduler
        .saved_state(h.now, &mut covered, &mut settled)
        .is_none());
    let pending = h.scheduler.pending(h.now);
    assert_eq!(
        (pending[0].id.as_str(), pending[0].state),
        ("bad", "blocked")
    );
    assert_eq!(
        pending[0].reason,
        h.scheduler.explain(h.now, "bad").unwrap().reason
    );
    assert!(
        h.scheduler
            .saved_state(h.now, &mut covered, &mut settled)
            .is_none(),
        "c may still be sent"
    );
    h.answer_first(applied()); // c
    assert!(h.scheduler.may_send(h.now, "late"));
    assert!(h
        .scheduler
        .saved_state(h.now, &mut covered, &mut settled)
        .is_some());
    let mut covered = vec!["a".to_owned(), "bad".to_owned(), "c".to_owned()];
    let mut settled = 0;
    let saved = h
        .scheduler
        .saved_state(h.now, &mut covered, &mut settled)
        .expect("every covered op is settled or blocked; `late` is not covered");
    assert_eq!(saved.settled, 2);
    assert_eq!(saved.blocked, ["bad"]);
}
