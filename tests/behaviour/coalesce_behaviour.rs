//! Coalescing that saves work. A replaced intent is written without its
//! payload in the batch that stores its replacement, and is still recognised when enqueued
//! again; an optional `coalesce(older, newer)` hook merges diffs; a merge that fails replaces
//! nothing, so both are sent in order.

use canvas_scheduler_core::{
    intent::IntentInput, retention::RetentionPolicy, AttemptOutcome, AttemptStatus, CountingHost,
    ErrorCode, Host, Intent, OperationPhase, Payload, Report, SafeError, Scheduler,
    SchedulerConfig, SchedulerError, Settlement,
};

use crate::common::edit;
use canvas_scheduler_testing::Harness;
use serde_json::{json, Value};

fn applied() -> AttemptStatus {
    AttemptStatus::outcome(AttemptOutcome::Applied)
}

/// An absolute position update (no hook: the newer one wins).
fn position(id: &str, x: i64) -> IntentInput {
    IntentInput {
        coalesce_key: Some("drag:s".into()),
        payload: json!({ "shapeId": "s", "x": x }).into(),
        ..edit(id, &["c"])
    }
}

/// A diff: move by `dx`.
fn nudge(id: &str, dx: i64) -> IntentInput {
    IntentInput {
        coalesce_key: Some("nudge:s".into()),
        payload: json!({ "shapeId": "s", "dx": dx }).into(),
        ..edit(id, &["c"])
    }
}

/// A host whose `coalesce` adds two nudges; `"fail"` in a payload makes it throw, `"huge"`
/// makes it return a payload over the limit.
struct Merging {
    ids: CountingHost,
    calls: std::cell::Cell<u32>,
}

impl Merging {
    fn new() -> Self {
        Self {
            ids: CountingHost::new("r"),
            calls: std::cell::Cell::new(0),
        }
    }
}

impl Host for Merging {
    fn coalesce(
        &self,
        older: &Intent,
        newer: &Intent,
        _reads: &Scheduler<Self>,
    ) -> Result<Option<Payload>, SafeError> {
        self.calls.set(self.calls.get() + 1);
        let (a, b) = (older.payload.to_value(), newer.payload.to_value());
        if b.get("fail").is_some() {
            return Err(SafeError::new("coalesce_failed", "cannot merge that"));
        }
        if b.get("huge").is_some() {
            return Ok(Some(json!({ "pad": "x".repeat(2_000) }).into()));
        }
        let dx = a["dx"].as_i64().unwrap_or(0) + b["dx"].as_i64().unwrap_or(0);
        Ok(Some(json!({ "shapeId": "s", "dx": dx }).into()))
    }

    fn create_request_id(&mut self) -> String {
        self.ids.create_request_id()
    }
}

/// Replacement of unsent intents, each request watched alone: no hold, no batch.
fn config() -> SchedulerConfig {
    SchedulerConfig {
        concurrency: 1,
        max_payload_bytes: 1_024,
        ..crate::common::unbatched()
    }
}

fn started<H: Host>(host: H) -> Harness<H> {
    let mut h = Harness::new(config(), host);
    h.start();
    // Canvas c is busy with this one: what follows waits, unfrozen, and may be replaced.
    h.enqueue(vec![edit("first", &["c"])]).unwrap();
    h
}

fn body(h: &Harness<impl Host>) -> Value {
    serde_json::from_str(&h.wire[0].request.body).unwrap()
}

#[test]
fn a_superseded_intent_is_written_without_its_payload_in_the_same_batch() {
    let mut h = started(CountingHost::new("r"));
    h.enqueue(vec![position("drag-1", 1)]).unwrap();
    let written_before = h.store.writes;
    h.enqueue(vec![position("drag-2", 2)]).unwrap();
    assert_eq!(h.store.writes, written_before + 1, "one transaction");
    let stored = h.store.operation("drag-1").unwrap();
    assert_eq!(stored.phase, OperationPhase::Resolved);
    assert_eq!(stored.intent.payload.text(), "null", "no payload stored");
    assert!(stored.given_digest.is_some());
    let memory = h.operation("drag-1").unwrap();
    assert_eq!(memory.intent.payload.text(), "null", "none kept in memory");
    assert_eq!(
        h.store
            .operation("drag-2")
            .unwrap()
            .intent
            .payload
            .to_value(),
        json!({ "shapeId": "s", "x": 2 })
    );
}

#[test]
fn a_superseded_intent_enqueued_again_is_the_same_intent_across_a_reload() {
    let mut h = started(CountingHost::new("r"));
    h.enqueue(vec![position("drag-1", 1)]).unwrap();
    h.enqueue(vec![position("drag-2", 2)]).unwrap();
    h.enqueue(vec![position("drag-1", 1)])
        .expect("the same intent again is no error");
    let other = h.enqueue(vec![position("drag-1", 7)]).unwrap_err();
    assert_eq!(other.code, ErrorCode::DuplicateOperation);
    h.drain();
    let mut h = Harness::over(
        config(),
        CountingHost::new("s"),
        h.store.clone(),
        h.now + 60_000,
    );
    h.start();
    h.enqueue(vec![position("drag-1", 1)])
        .expect("after a reload too");
    assert_eq!(
        h.enqueue(vec![position("drag-1", 7)]).unwrap_err().code,
        ErrorCode::DuplicateOperation
    );
    assert_eq!(
        h.operation("drag-1").unwrap().phase,
        OperationPhase::Resolved,
        "never sent"
    );
}

#[test]
fn a_superseded_intent_compacted_at_once_keeps_the_digest_of_its_payload() {
    let mut h = Harness::new(
        SchedulerConfig {
            retain: RetentionPolicy {
                settled: 0,
                settled_ms: 0,
                ..RetentionPolicy::default()
            },
            ..config()
        },
        CountingHost::new("r"),
    );
    h.start();
    h.enqueue(vec![edit("first", &["c"])]).unwrap();
    h.enqueue(vec![position("drag-1", 1)]).unwrap();
    h.enqueue(vec![position("drag-2", 2)]).unwrap();
    h.answer_first(applied());
    h.answer_first(applied());
    h.drain();
    assert!(h.store.operation("drag-1").is_none(), "compacted");
    assert_eq!(h.store.tombstones_of(["drag-1"]).len(), 1);
    h.enqueue(vec![position("drag-1", 1)])
        .expect("its tombstone knows it");
    assert_eq!(
        h.enqueue(vec![position("drag-1", 3)]).unwrap_err().code,
        ErrorCode::DuplicateOperation
    );
}

#[test]
fn the_coalesce_hook_merges_diffs_into_the_replacement() {
    let mut h = started(Merging::new());
    h.enqueue(vec![nudge("n1", 5)]).unwrap();
    h.enqueue(vec![nudge("n2", 3), nudge("n3", -1)]).unwrap();
    assert_eq!(h.scheduler.host().calls.get(), 2);
    h.answer_first(applied());
    assert_eq!(h.wire_operations(), ["n3"]);
    assert_eq!(body(&h)["payload"], json!({ "shapeId": "s", "dx": 7 }));
    // The replacement keeps the intent as given for identity: enqueued again as given, it is
    // the same intent; with the merged payload it is another.
    h.enqueue(vec![nudge("n3", -1)]).expect("as given");
    let merged = IntentInput {
        payload: json!({ "shapeId": "s", "dx": 7 }).into(),
        ..nudge("n3", 0)
    };
    assert_eq!(
        h.enqueue(vec![merged]).unwrap_err().code,
        ErrorCode::DuplicateOperation
    );
    h.enqueue(vec![nudge("n2", 3)])
        .expect("a replaced one as given");
    h.answer_first(applied());
    h.drain();
    for id in ["n1", "n2"] {
        let op = h.operation(id).unwrap();
        assert_eq!(
            op.outcome.as_ref().unwrap().settlement,
            Settlement::Discarded
        );
    }
}

#[test]
fn a_merge_that_fails_replaces_nothing_and_both_are_sent_in_order() {
    let mut h = started(Merging::new());
    h.enqueue(vec![nudge("n1", 5)]).unwrap();
    let failing = IntentInput {
        payload: json!({ "shapeId": "s", "dx": 1, "fail": true }).into(),
        ..nudge("n2", 0)
    };
    h.enqueue(vec![failing]).unwrap();
    let huge = IntentInput {
        payload: json!({ "shapeId": "s", "dx": 1, "huge": true }).into(),
        ..nudge("n3", 0)
    };
    h.enqueue(vec![huge]).unwrap();
    let errors: Vec<&SchedulerError> = h
        .reports
        .iter()
        .filter_map(|r| match r {
            Report::Error(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 2, "the host hears of each failed merge");
    assert!(errors.iter().all(|e| e.code == ErrorCode::CoalesceFailed));
    assert!(errors[1].message.contains("limit"), "{}", errors[1].message);
    for expected in ["first", "n1", "n2", "n3"] {
        assert_eq!(h.wire_operations(), [expected]);
        h.answer_first(applied());
    }
    let n1 = h.operation("n1").unwrap();
    assert_eq!(n1.intent.payload.to_value()["dx"], 5, "n1 kept whole");
}

#[test]
fn without_a_hook_the_newer_payload_is_sent_and_no_digest_is_kept_for_it() {
    let mut h = started(CountingHost::new("r"));
    h.enqueue(vec![position("drag-1", 1), position("drag-2", 2)])
        .unwrap();
    assert!(h
        .scheduler
        .ledger()
        .operation("drag-2")
        .unwrap()
        .given_digest
        .is_none());
    h.answer_first(applied());
    assert_eq!(body(&h)["payload"], json!({ "shapeId": "s", "x": 2 }));
}
