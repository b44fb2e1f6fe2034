//! Partial enqueue (`enqueueMany(intents, { atomic: false })`): the core
//! stores every valid intent in one batch, in call order, and refuses each other one with the
//! code a lone enqueue of it would get; a refused intent changes nothing.

use canvas_scheduler_core::{
    intent::IntentInput, partial::Verdict, CountingHost, ErrorCode, SchedulerConfig, SchedulerError,
};

use crate::common::{edit, edit_after};
use canvas_scheduler_testing::Harness;
use serde_json::json;

const LIMIT: usize = 1_024;

/// A harness that has not started (nothing is sent, so every persist batch is the enqueue's),
/// its persists held until the test applies them.
fn idle() -> Harness<CountingHost> {
    let config = SchedulerConfig {
        max_payload_bytes: LIMIT,
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("r"));
    h.auto_persist = false;
    h
}

fn slots(inputs: Vec<IntentInput>) -> Vec<Result<IntentInput, SchedulerError>> {
    inputs.into_iter().map(Ok).collect()
}

fn oversized(id: &str) -> IntentInput {
    IntentInput {
        payload: json!({ "image": "x".repeat(LIMIT) }).into(),
        ..edit(id, &["c1"])
    }
}

fn codes(verdicts: &[Verdict]) -> Vec<&'static str> {
    verdicts
        .iter()
        .map(|v| v.as_ref().map_or_else(|e| e.code(), |()| "ok"))
        .collect()
}

fn sequence(h: &Harness<CountingHost>, id: &str) -> Option<u64> {
    h.scheduler
        .ledger()
        .operation(id)
        .map(|op| op.intent.sequence)
}

#[test]
fn i37_4_valid_intents_are_stored_in_one_batch_in_order_and_the_others_refused() {
    let mut h = idle();
    let bad_id = edit("bad id!", &["c1"]);
    let (verdicts, barrier) = h
        .enqueue_partial(slots(vec![
            edit("a", &["c1"]),
            oversized("big"),
            bad_id,
            edit("b", &["c2"]),
        ]))
        .expect("the call itself is fine");
    assert_eq!(
        codes(&verdicts),
        ["ok", "payload_too_large", "invalid_intent", "ok"]
    );
    assert_eq!(h.persists.len(), 1, "one persist batch for the whole call");
    let batch = &h.persists[0];
    let written: Vec<&str> = batch
        .operation_pages
        .iter()
        .flat_map(|page| page.operations.iter().map(|op| op.intent.id.as_str()))
        .chain(batch.operations.iter().map(|op| op.intent.id.as_str()))
        .collect();
    assert_eq!(written, ["a", "b"], "the valid ones, in call order");
    assert_eq!(
        (sequence(&h, "a"), sequence(&h, "b")),
        (Some(1), Some(2)),
        "sequences as if the refused ones were absent"
    );
    assert!(h.scheduler.ledger().operation("big").is_none());
    let barrier = barrier.expect("something to wait for");
    assert_eq!(h.scheduler.barrier_state(barrier), None, "not yet durable");
    h.persist_next();
    h.drain();
    assert_eq!(h.scheduler.barrier_state(barrier), Some(true));
    assert!(h.store.operation("a").is_some() && h.store.operation("b").is_some());
    assert!(h.store.operation("big").is_none());
}

#[test]
fn i37_4_a_call_refused_whole_writes_nothing() {
    let mut h = idle();
    let (verdicts, barrier) = h
        .enqueue_partial(vec![
            Err(SchedulerError::new(
                ErrorCode::InvalidIntent,
                "an intent must be a plain object",
            )),
            Ok(oversized("big")),
        ])
        .unwrap();
    assert_eq!(codes(&verdicts), ["invalid_intent", "payload_too_large"]);
    assert_eq!(barrier, None, "nothing to wait for");
    assert!(h.persists.is_empty(), "no write at all");
    assert_eq!(h.scheduler.ledger().meta().last_sequence, 0);
    // Nothing given: nothing refused, nothing written.
    let (verdicts, barrier) = h.enqueue_partial(Vec::new()).unwrap();
    assert!(verdicts.is_empty() && barrier.is_none() && h.persists.is_empty());
}

#[test]
fn i37_4_decoding_errors_keep_their_place_and_their_error() {
    let mut h = idle();
    let refused = SchedulerError::new(ErrorCode::InvalidIntent, "payload holds NaN");
    let (verdicts, _) = h
        .enqueue_partial(vec![Ok(edit("a", &["c1"])), Err(refused.clone())])
        .unwrap();
    assert_eq!(verdicts, vec![Ok(()), Err(refused)]);
}

#[test]
fn i37_4_duplicates_refuse_the_later_one_and_the_same_intent_again_is_ok() {
    let mut h = idle();
    h.auto_persist = true;
    h.enqueue(vec![edit("stored", &["c1"])]).unwrap();
    let changed = IntentInput {
        payload: json!({ "changed": true }).into(),
        ..edit("stored", &["c1"])
    };
    let (verdicts, _) = h
        .enqueue_partial(slots(vec![
            edit("stored", &["c1"]), // the same intent again: ok, as enqueue
            changed,                 // another intent under a stored id
            edit("twice", &["c2"]),  // first of two in the call: stored
            edit("twice", &["c3"]),  // the second: refused
            edit("fresh", &["c4"]),
        ]))
        .unwrap();
    assert_eq!(
        codes(&verdicts),
        [
            "ok",
            "duplicate_operation",
            "ok",
            "duplicate_operation",
            "ok"
        ]
    );
    let twice = h.scheduler.ledger().operation("twice").unwrap();
    assert_eq!(twice.intent.canvas_ids, ["c2"], "the first one is kept");
    assert_eq!(
        (
            sequence(&h, "stored"),
            sequence(&h, "twice"),
            sequence(&h, "fresh")
        ),
        (Some(1), Some(2), Some(3))
    );
}

#[test]
fn i37_4_a_refused_intent_refuses_its_dependents_and_cycles_are_refused() {
    let mut h = idle();
    let (verdicts, _) = h
        .enqueue_partial(slots(vec![
            oversized("image"),
            edit_after("caption", &["c1"], &["image"]), // depends on a refused one
            edit_after("frame", &["c1"], &["caption"]), // and on that one's dependent
            edit("base", &["c2"]),
            edit_after("child", &["c2"], &["base"]), // its dependency is stored
            edit_after("x", &["c3"], &["y"]),
            edit_after("y", &["c3"], &["x"]),
            edit_after("z", &["c3"], &["x"]), // depends on a cycle
            edit_after("lost", &["c4"], &["nowhere"]),
        ]))
        .unwrap();
    assert_eq!(
        codes(&verdicts),
        [
            "payload_too_large",
            "unknown_dependency",
            "unknown_dependency",
            "ok",
            "ok",
            "dependency_cycle",
            "dependency_cycle",
            "unknown_dependency",
            "unknown_dependency",
        ]
    );
    assert_eq!(
        (sequence(&h, "base"), sequence(&h, "child")),
        (Some(1), Some(2))
    );
    assert_eq!(h.scheduler.ledger().meta().last_sequence, 2);
}

#[test]
fn i37_4_refusals_cascade_down_a_long_chain_in_linear_time() {
    // 50 000 intents, each depending on the one before; the first is too large. Quadratic
    // checks would take minutes here.
    let mut h = idle();
    let mut call = vec![oversized("n0")];
    for i in 1..50_000 {
        call.push(edit_after(
            &format!("n{i}"),
            &["c1"],
            &[&format!("n{}", i - 1)],
        ));
    }
    // And a long cycle beside it, with a tail hanging off it.
    for i in 0..1_000 {
        let next = format!("r{}", (i + 1) % 1_000);
        call.push(edit_after(&format!("r{i}"), &["c2"], &[&next]));
    }
    call.push(edit_after("tail", &["c3"], &["r500"]));
    call.push(edit("free", &["c4"]));
    let (verdicts, _) = h.enqueue_partial(slots(call)).unwrap();
    let codes = codes(&verdicts);
    assert_eq!(codes[0], "payload_too_large");
    assert!(codes[1..50_000].iter().all(|c| *c == "unknown_dependency"));
    assert!(codes[50_000..51_000]
        .iter()
        .all(|c| *c == "dependency_cycle"));
    assert_eq!(codes[51_000..], ["unknown_dependency", "ok"]);
    assert_eq!(sequence(&h, "free"), Some(1));
}

#[test]
fn i37_4_explicit_sequences_are_checked_against_the_accepted_ones() {
    let mut h = idle();
    let at = |id: &str, sequence: u64| IntentInput {
        sequence: Some(sequence),
        ..edit(id, &["c1"])
    };
    let (verdicts, _) = h
        .enqueue_partial(slots(vec![
            at("a", 10),
            at("b", 5),
            edit("c", &["c2"]),
            at("d", 11),
        ]))
        .unwrap();
    assert_eq!(
        codes(&verdicts),
        ["ok", "invalid_sequence", "ok", "invalid_sequence"]
    );
    assert_eq!((sequence(&h, "a"), sequence(&h, "c")), (Some(10), Some(11)));
}

#[test]
fn i37_4_what_refuses_the_whole_call_is_an_error_and_changes_nothing() {
    let mut h = idle();
    h.auto_persist = true;
    h.fail_persists = 2;
    h.enqueue(vec![edit("a", &["c1"])]).unwrap();
    // Storage failing refuses nothing up front: the call tries, and when its write fails
    // too, what it accepted is refused with nothing left behind.
    let (verdicts, barrier) = h.enqueue_partial(slots(vec![edit("b", &["c2"])])).unwrap();
    assert_eq!(codes(&verdicts), ["ok"]);
    assert_eq!(
        barrier.map(|b| h.scheduler.barrier_state(b)),
        Some(Some(false))
    );
    assert!(h.scheduler.ledger().operation("a").is_none());
    assert!(h.scheduler.ledger().operation("b").is_none());
    h.scheduler.stop();
    let error = h
        .enqueue_partial(slots(vec![edit("c", &["c3"])]))
        .unwrap_err();
    assert_eq!(error.code(), "scheduler_closed");
    assert!(h.scheduler.ledger().operation("b").is_none());
    assert!(h.scheduler.ledger().operation("c").is_none());
}

#[test]
fn i37_4_the_atomic_enqueue_is_unchanged() {
    let mut h = idle();
    let error = h
        .enqueue(vec![edit("a", &["c1"]), oversized("big")])
        .unwrap_err();
    assert_eq!(
        (error.code(), error.intent()),
        ("payload_too_large", Some(1))
    );
    assert!(h.persists.is_empty());
    assert!(h.scheduler.ledger().operation("a").is_none());
}

/// Random calls (proptest, where it builds: natively and under WASI).
#[cfg(any(not(target_arch = "wasm32"), target_os = "wasi"))]
mod property {
    use super::*;
    use proptest::prelude::*;

    /// One intent of a random call: an id from a small pool (duplicates and stored ids
    /// happen), up to two dependencies (cycles happen), sometimes too large, sometimes an
    /// explicit sequence.
    fn arbitrary_intent() -> impl Strategy<Value = IntentInput> {
        (
            0..6u8,
            proptest::collection::vec(0..8u8, 0..3),
            any::<bool>(),
            proptest::option::of(1..12u64),
        )
            .prop_map(|(id, dependencies, big, sequence)| {
                let id = format!("op{id}");
                let dependencies: Vec<String> =
                    dependencies.iter().map(|d| format!("op{d}")).collect();
                let dependencies: Vec<&str> = dependencies.iter().map(String::as_str).collect();
                let mut input = edit_after(&id, &["c1"], &dependencies);
                if big {
                    input.payload = json!({ "image": "x".repeat(LIMIT) }).into();
                }
                input.sequence = sequence;
                input
            })
    }

    proptest! {
        /// What a partial enqueue accepts is what an atomic enqueue of exactly those intents
        /// admits, with the same ledger after; each refused intent is absent from the ledger.
        #[test]
        fn i37_4_the_accepted_intents_are_an_atomic_enqueue_of_them(
            stored in proptest::collection::vec(arbitrary_intent(), 0..4),
            call in proptest::collection::vec(arbitrary_intent(), 0..10),
        ) {
            let mut partial = idle();
            partial.auto_persist = true;
            let _ = partial.enqueue(stored.clone());
            let mut atomic = idle();
            atomic.auto_persist = true;
            let _ = atomic.enqueue(stored);
            let before = partial.scheduler.ledger().meta().last_sequence;
            let (verdicts, _) = partial.enqueue_partial(slots(call.clone())).unwrap();
            prop_assert_eq!(verdicts.len(), call.len());
            let accepted: Vec<IntentInput> = call
                .iter()
                .zip(&verdicts)
                .filter(|(_, v)| v.is_ok())
                .map(|(i, _)| i.clone())
                .collect();
            if !accepted.is_empty() {
                prop_assert!(atomic.enqueue(accepted.clone()).is_ok(), "{:?}", verdicts);
            }
            let ledger = |h: &Harness<CountingHost>| {
                let mut ops: Vec<(String, u64)> = h
                    .store
                    .snapshot()
                    .operations
                    .iter()
                    .map(|op| (op.intent.id.clone(), op.intent.sequence))
                    .collect();
                ops.sort();
                ops
            };
            prop_assert_eq!(ledger(&partial), ledger(&atomic));
            if accepted.is_empty() {
                prop_assert_eq!(partial.scheduler.ledger().meta().last_sequence, before);
            }
        }
    }
}
