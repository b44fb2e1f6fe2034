//! Request batching and coalescing (performance issue): semantics unchanged, fewer requests.

use canvas_scheduler_core::{
    default_compile, intent::IntentInput, AttemptOutcome, AttemptStatus, BatchLimits,
    CompiledRequest, CountingHost, Host, Intent, OperationPhase, OperationVerdict, Payload, Report,
    SafeError, Scheduler, SchedulerConfig, Settlement,
};

use crate::common::{edit, edit_after, of_kind};
use canvas_scheduler_testing::Harness;
use serde_json::json;

fn batching(max_operations: usize, max_bytes: usize) -> Harness<CountingHost> {
    let config = SchedulerConfig {
        concurrency: 1,
        batch: BatchLimits {
            max_operations,
            max_bytes,
            kinds: None,
        },
        // Coalescing replaces unsent intents here; the hold has tests of its own (`holding`).
        coalesce_ms: 0,
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("r"));
    h.start();
    h
}

fn applied() -> AttemptStatus {
    AttemptStatus::outcome(AttemptOutcome::Applied)
}

fn coalescing(id: &str, key: &str, x: i64) -> IntentInput {
    IntentInput {
        coalesce_key: Some(key.into()),
        payload: json!({ "shapeId": "s", "x": x }).into(),
        ..edit(id, &["c"])
    }
}

#[test]
fn batch_consecutive_same_kind_same_canvases_share_one_request() {
    let mut h = batching(3, 65_536);
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(vec![
        edit("a", &["c"]),
        edit("b", &["c"]),
        edit("c", &["c"]),
        edit("d", &["c"]),
        of_kind("e", "shape.delete", &["c"]),
        edit("f", &["c", "x"]),
    ])
    .unwrap();
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(h.wire_operations(), ["a", "b", "c"], "up to maxOperations");
    let body: serde_json::Value = serde_json::from_str(&h.wire[0].request.body).unwrap();
    assert_eq!(body["operationIds"], json!(["a", "b", "c"]));
    assert_eq!(body["payload"]["operations"][1]["operationId"], json!("b"));
    let mut requests = vec![h.wire_operations()];
    while h.answer_first(applied()).is_some() {
        if !h.wire.is_empty() {
            requests.push(h.wire_operations());
        }
    }
    assert_eq!(
        requests,
        vec![vec!["a", "b", "c"], vec!["d"], vec!["e"], vec!["f"]],
        "another kind or canvas set ends a batch"
    );
    for id in ["a", "b", "c", "d", "e", "f"] {
        assert_eq!(h.operation(id).unwrap().phase, OperationPhase::Resolved);
    }
}

#[test]
fn batch_respects_the_byte_limit() {
    // Each payload `{"shapeId":"x"}` is 15 bytes: 35 bytes hold two of them.
    let mut h = batching(10, 35);
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(vec![
        edit("a", &["c"]),
        edit("b", &["c"]),
        edit("d", &["c"]),
    ])
    .unwrap();
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(h.wire_operations(), ["a", "b"]);
    h.answer_first(applied());
    assert_eq!(h.wire_operations(), ["d"]);
}

#[test]
fn batch_never_carries_a_dependent_with_its_dependency_or_a_version_guard() {
    let mut h = batching(10, 65_536);
    let hold = h.scheduler.hold(h.now).unwrap();
    let guarded = IntentInput {
        expected_versions: Some([("c".to_string(), 1)].into()),
        ..edit("guarded", &["c"])
    };
    h.enqueue(vec![
        edit("a", &["c"]),
        edit_after("after-a", &["c"], &["a"]),
        guarded,
        edit("z", &["c"]),
    ])
    .unwrap();
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(
        h.wire_operations(),
        ["a"],
        "the next ready one (after-a) is not ready yet: consecutive only"
    );
    h.answer_first(applied());
    assert_eq!(
        h.wire_operations(),
        ["after-a"],
        "the guarded one ends the batch"
    );
    h.answer_first(applied());
    assert_eq!(
        h.wire_operations(),
        ["guarded"],
        "a version guard travels alone"
    );
    h.answer_first(applied());
    assert_eq!(h.wire_operations(), ["z"]);
}

#[test]
fn batch_a_member_aborted_with_its_batch_is_sent_again_alone() {
    let mut h = batching(3, 65_536);
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(vec![edit("bad", &["c"]), edit("good", &["c"])])
        .unwrap();
    h.scheduler.release(h.now, hold);
    h.drain();
    let verdict = |id: &str, code: &str| OperationVerdict {
        operation_id: id.into(),
        settlement: Settlement::Rejected,
        error: Some(SafeError::new(code, "x")),
        canonical: None,
    };
    let status = AttemptStatus {
        operations: vec![
            verdict("bad", "unknown_shape"),
            verdict("good", "batch_aborted"),
        ],
        ..AttemptStatus::outcome(AttemptOutcome::Rejected)
    };
    let first = h.wire[0].request.id.clone();
    h.answer(&first, status);
    let bad = h
        .scheduler
        .ledger()
        .operation("bad")
        .unwrap()
        .outcome
        .clone()
        .unwrap();
    assert_eq!(bad.error.unwrap().code, "unknown_shape");
    assert_eq!(
        h.wire_operations(),
        ["good"],
        "not applied, so frozen again under a new key"
    );
    assert_ne!(h.wire[0].request.id, first);
    h.answer_first(applied());
    assert_eq!(
        h.scheduler
            .ledger()
            .operation("good")
            .unwrap()
            .outcome
            .as_ref()
            .unwrap()
            .settlement,
        Settlement::Applied
    );
}

#[test]
fn coalescing_replaces_a_pending_unfrozen_intent_but_never_a_frozen_one() {
    let mut h = batching(1, 65_536);
    h.enqueue(vec![edit("first", &["c"])]).unwrap(); // occupies canvas c
    h.enqueue(vec![coalescing("drag-1", "drag:s", 1)]).unwrap();
    h.enqueue(vec![coalescing("drag-2", "drag:s", 2)]).unwrap();
    h.enqueue(vec![coalescing("drag-3", "drag:s", 3)]).unwrap();
    let superseded = |h: &Harness<CountingHost>, id: &str| {
        h.scheduler
            .ledger()
            .operation(id)
            .and_then(|o| o.outcome.clone())
            .and_then(|o| o.error)
            .map(|e| e.code)
    };
    assert_eq!(superseded(&h, "drag-1").as_deref(), Some("superseded"));
    assert_eq!(superseded(&h, "drag-2").as_deref(), Some("superseded"));
    assert!(h.reports.iter().any(|r| matches!(r, Report::Settled { operation_id, settlement: Settlement::Discarded, .. } if operation_id == "drag-1")));
    h.answer_first(applied());
    assert_eq!(
        h.wire_operations(),
        ["drag-3"],
        "only the latest absolute update is sent"
    );
    h.enqueue(vec![coalescing("drag-4", "drag:s", 4)]).unwrap();
    assert_eq!(
        superseded(&h, "drag-3"),
        None,
        "drag-3 is frozen: never replaced"
    );
    h.answer_first(applied());
    assert_eq!(h.wire_operations(), ["drag-4"]);
}

#[test]
fn coalescing_keeps_an_intent_that_others_depend_on() {
    let mut h = batching(1, 65_536);
    h.enqueue(vec![edit("first", &["c"])]).unwrap();
    h.enqueue(vec![
        coalescing("drag-1", "k", 1),
        edit_after("needs-1", &["d"], &["drag-1"]),
    ])
    .unwrap();
    h.enqueue(vec![coalescing("drag-2", "k", 2)]).unwrap();
    assert_eq!(
        h.operation("drag-1").unwrap().phase,
        OperationPhase::Pending
    );
}

#[test]
fn coalescing_a_dependency_on_a_replaced_intent_waits_for_its_replacement() {
    let mut h = batching(1, 65_536);
    h.enqueue(vec![edit("first", &["c"])]).unwrap(); // occupies canvas c
    h.enqueue(vec![coalescing("drag-1", "k", 1)]).unwrap();
    h.enqueue(vec![coalescing("drag-2", "k", 2)]).unwrap();
    // The editor still knows drag-1's id; drag-1 will never reach the server, drag-2 carries
    // its state, so the dependent waits for drag-2.
    h.enqueue(vec![edit_after("needs-1", &["d"], &["drag-1"])])
        .unwrap();
    let why = h.scheduler.explain(h.now, "needs-1").unwrap();
    assert_eq!(why.reason, "waiting_dependency");
    assert_eq!(why.dependency_id.as_deref(), Some("drag-2"));
    // drag-2 has a dependent now: a later drag no longer replaces it.
    h.enqueue(vec![coalescing("drag-3", "k", 3)]).unwrap();
    assert_eq!(
        h.operation("drag-2").unwrap().phase,
        OperationPhase::Pending
    );
    // One at a time (concurrency 1), in sequence order once each may go.
    for expected in ["drag-2", "needs-1", "drag-3"] {
        h.answer_first(applied());
        assert_eq!(h.wire_operations(), [expected]);
    }
}

#[test]
fn coalescing_never_replaces_an_intent_the_new_one_depends_on() {
    let mut h = batching(1, 65_536);
    h.enqueue(vec![edit("first", &["c"])]).unwrap();
    h.enqueue(vec![coalescing("drag-1", "k", 1)]).unwrap();
    h.enqueue(vec![coalescing("drag-2", "k", 2)]).unwrap();
    // Depends on drag-1, which drag-2 replaced: on drag-2, so it cannot replace drag-2.
    let mut after = coalescing("drag-3", "k", 3);
    after.dependencies = vec!["drag-1".into()];
    h.enqueue(vec![after]).unwrap();
    assert_eq!(
        h.operation("drag-2").unwrap().phase,
        OperationPhase::Pending
    );
    for expected in ["first", "drag-2", "drag-3"] {
        assert_eq!(h.wire_operations(), [expected]);
        h.answer_first(applied());
    }
}

#[test]
fn coalescing_a_replaced_intent_names_its_replacement_across_a_reload() {
    let mut h = batching(1, 65_536);
    h.enqueue(vec![edit("first", &["c"])]).unwrap();
    h.enqueue(vec![coalescing("drag-1", "k", 1)]).unwrap();
    h.enqueue(vec![coalescing("drag-2", "k", 2)]).unwrap();
    let error = h
        .scheduler
        .ledger()
        .operation("drag-1")
        .and_then(|o| o.outcome.clone())
        .and_then(|o| o.error)
        .unwrap();
    assert_eq!(error.code, "superseded");
    assert_eq!(
        error.details.map(|d| d.text().to_owned()).as_deref(),
        Some(r#"{"replacedBy":"drag-2"}"#)
    );
    h.drain();
    // A reload (past the lease): only the durable ledger is left.
    let config = SchedulerConfig {
        concurrency: 1,
        ..SchedulerConfig::default()
    };
    let mut h = Harness::over(
        config,
        CountingHost::new("r"),
        h.store.clone(),
        h.now + 60_000,
    );
    h.start();
    h.enqueue(vec![edit_after("needs-1", &["d"], &["drag-1"])])
        .unwrap();
    let why = h.scheduler.explain(h.now, "needs-1").unwrap();
    assert_eq!(why.dependency_id.as_deref(), Some("drag-2"));
}

/// Edits that arrive while their canvas is busy (a drag while the last update is on the wire)
/// travel together once it is released: the waiting run joins one batch, in order.
#[test]
fn batch_edits_that_waited_for_a_busy_canvas_share_the_next_request() {
    let mut h = batching(32, 65_536);
    h.enqueue(vec![edit("first", &["c"])]).unwrap();
    assert_eq!(h.wire_operations(), ["first"]);
    let waited: Vec<IntentInput> = (0..10).map(|i| edit(&format!("w{i}"), &["c"])).collect();
    h.enqueue(waited).unwrap();
    assert_eq!(h.wire_operations(), ["first"], "the canvas is busy");
    h.answer_first(applied());
    let expected: Vec<String> = (0..10).map(|i| format!("w{i}")).collect();
    assert_eq!(
        h.wire_operations(),
        expected,
        "one request for the ten that waited"
    );
    h.answer_first(applied());
    assert!(h.wire.is_empty());
    assert!(
        h.scheduler.stats().scanned <= 3 * 11,
        "examinations: {}",
        h.scheduler.stats().scanned
    );
}

fn batching_kinds(kinds: Option<&[&str]>) -> Harness<CountingHost> {
    let config = SchedulerConfig {
        concurrency: 1,
        batch: BatchLimits {
            max_operations: 8,
            max_bytes: 65_536,
            kinds: kinds.map(|k| k.iter().map(|s| s.to_string()).collect()),
        },
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("r"));
    h.start();
    h
}

/// Sends `intents` in one held burst, answers every request `applied`, and lists the requests.
fn requests_of(h: &mut Harness<CountingHost>, intents: Vec<IntentInput>) -> Vec<Vec<String>> {
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(intents).unwrap();
    h.scheduler.release(h.now, hold);
    h.drain();
    let mut requests = Vec::new();
    while !h.wire.is_empty() {
        requests.push(
            h.wire_operations()
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        );
        h.answer_first(applied());
    }
    requests
}

#[test]
fn batch_any_kind_record_kinds_share_one_request_by_default() {
    let mut h = batching_kinds(None);
    let requests = requests_of(
        &mut h,
        vec![
            of_kind("p1", "record.put", &["c"]),
            of_kind("p2", "record.put", &["c"]),
            of_kind("p3", "record.put", &["c"]),
            of_kind("r1", "record.remove", &["c"]),
            of_kind("r2", "record.remove", &["c"]),
        ],
    );
    assert_eq!(
        requests,
        vec![vec!["p1", "p2", "p3"], vec!["r1", "r2"]],
        "every kind batches; another kind ends a batch"
    );
    for id in ["p1", "p2", "p3", "r1", "r2"] {
        assert_eq!(h.operation(id).unwrap().phase, OperationPhase::Resolved);
    }
}

#[test]
fn batch_kinds_narrows_batching_to_the_named_kinds() {
    let mut h = batching_kinds(Some(&["record.remove"]));
    let requests = requests_of(
        &mut h,
        vec![
            of_kind("p1", "record.put", &["c"]),
            of_kind("p2", "record.put", &["c"]),
            of_kind("r1", "record.remove", &["c"]),
            of_kind("r2", "record.remove", &["c"]),
        ],
    );
    assert_eq!(requests, vec![vec!["p1"], vec!["p2"], vec!["r1", "r2"]]);
}

#[test]
fn batch_never_takes_uploads_or_runs_even_when_named() {
    let mut h = batching_kinds(Some(&["run.cancel", "record.put"]));
    let requests = requests_of(
        &mut h,
        vec![
            of_kind("k1", "run.cancel", &["c"]),
            of_kind("k2", "run.cancel", &["c"]),
        ],
    );
    assert_eq!(requests, vec![vec!["k1"], vec!["k2"]], "named or not");
    let mut h = batching_kinds(None);
    let requests = requests_of(
        &mut h,
        vec![
            of_kind("s1", "run.start", &["c"]),
            of_kind("s2", "run.start", &["c"]),
        ],
    );
    assert_eq!(requests, vec![vec!["s1"], vec!["s2"]]);
}

#[test]
fn batch_a_burst_that_alternates_canvases_still_batches_per_canvas() {
    let mut h = batching_kinds(None);
    let mut intents = Vec::new();
    for i in 1..=4 {
        intents.push(of_kind(&format!("a{i}"), "record.put", &["a"]));
        intents.push(of_kind(&format!("b{i}"), "record.put", &["b"]));
    }
    let requests = requests_of(&mut h, intents);
    assert_eq!(
        requests,
        vec![vec!["a1", "a2", "a3", "a4"], vec!["b1", "b2", "b3", "b4"]],
        "each canvas's edits in one request, in order"
    );
}

#[test]
fn batch_never_passes_an_earlier_operation_on_its_canvases() {
    let mut h = batching_kinds(None);
    let requests = requests_of(
        &mut h,
        vec![
            of_kind("a1", "record.put", &["a"]),
            of_kind("b1", "record.put", &["b"]),
            of_kind("ab", "record.put", &["a", "b"]),
            of_kind("a2", "record.put", &["a"]),
            of_kind("a3", "record.remove", &["a"]),
            of_kind("a4", "record.put", &["a"]),
        ],
    );
    assert_eq!(
        requests,
        vec![
            vec!["a1"],
            vec!["b1"],
            vec!["ab"],
            vec!["a2"],
            vec!["a3"],
            vec!["a4"]
        ],
        "a1 cannot take a2 past `ab` (it touches a), nor a4 past a3"
    );
}

/// Compiles every intent into kind `v1.<type>` with the payload wrapped, and refuses `bad`.
struct Compiling(CountingHost);

impl Host for Compiling {
    fn compile(
        &self,
        intent: &Intent,
        _id: &str,
        reads: &Scheduler<Self>,
    ) -> Result<CompiledRequest, SafeError> {
        if intent.id == "bad" {
            return Err(SafeError::new("compile_failed", "no such record"));
        }
        let mut compiled = default_compile(intent);
        compiled.kind = Some(format!("v1.{}", intent.operation_type));
        compiled.payload = json!({ "wrapped": intent.id }).into();
        compiled.canvas_ids = self.participants(intent, reads)?;
        Ok(compiled)
    }
    fn participants(
        &self,
        intent: &Intent,
        _reads: &Scheduler<Self>,
    ) -> Result<Vec<String>, SafeError> {
        // The canvases plus the document they belong to.
        let mut canvases = intent.canvas_ids.clone();
        canvases.push("doc".into());
        Ok(canvases)
    }
    fn create_request_id(&mut self) -> String {
        self.0.create_request_id()
    }
}

#[test]
fn batch_works_with_compile_and_participants_set() {
    let config = SchedulerConfig {
        concurrency: 1,
        batch: BatchLimits {
            max_operations: 8,
            max_bytes: 65_536,
            kinds: None,
        },
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, Compiling(CountingHost::new("r")));
    h.start();
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(vec![
        of_kind("p1", "record.put", &["c"]),
        of_kind("p2", "record.put", &["c"]),
        of_kind("bad", "record.put", &["c"]),
        of_kind("p3", "record.put", &["c"]),
    ])
    .unwrap();
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(
        h.wire_operations(),
        ["p1", "p2"],
        "a member that fails to compile ends it"
    );
    let body: serde_json::Value = serde_json::from_str(&h.wire[0].request.body).unwrap();
    assert_eq!(body["kind"], json!("v1.record.put"));
    assert_eq!(body["canvasIds"], json!(["c", "doc"]), "the participants");
    assert_eq!(
        body["payload"]["operations"],
        json!([
            {"kind": "record.put", "operationId": "p1", "payload": {"wrapped": "p1"}},
            {"kind": "record.put", "operationId": "p2", "payload": {"wrapped": "p2"}},
        ]),
        "each member's compiled payload"
    );
    h.answer_first(applied());
    let blocked = h.operation("bad").unwrap();
    assert_eq!(blocked.blockers, ["no such record"]);
    assert!(
        h.wire.is_empty(),
        "p3 waits behind the blocked one on its canvas"
    );
    h.scheduler.discard(h.now, "bad").unwrap();
    h.drain();
    assert_eq!(h.wire_operations(), ["p3"]);
}

fn holding(coalesce_ms: u64) -> Harness<CountingHost> {
    let config = SchedulerConfig {
        concurrency: 2,
        coalesce_ms,
        // What the hold does to each request, one operation a request.
        batch: BatchLimits::off(),
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("r"));
    h.start();
    h
}

/// `coalesceMs`: a drag's updates arrive every 16 ms; each is held 32 ms, so each
/// is replaced before it could be frozen, and only the last position is sent, 32 ms after it.
/// An edit on another canvas goes at once; a later edit on the drag's canvas never passes a
/// held update.
#[test]
fn coalesce_ms_holds_a_drag_back_so_only_its_last_position_is_sent() {
    let mut h = holding(32);
    let started = h.now;
    let mut sent = Vec::new();
    for x in 1..=10 {
        h.enqueue(vec![coalescing(&format!("m{x}"), "drag:s", x)])
            .unwrap();
        if x == 3 {
            h.enqueue(vec![edit("elsewhere", &["other"])]).unwrap();
            assert_eq!(
                h.wire_operations(),
                ["elsewhere"],
                "another canvas: at once"
            );
            let why = h.scheduler.explain(h.now, "m3").unwrap();
            assert_eq!(why.reason, "coalescing");
            assert_eq!(why.due_at, Some(h.now + 32));
            sent.extend(h.wire_operations());
            h.answer_first(applied());
        }
        h.advance(16);
        assert!(
            h.wire.is_empty(),
            "nothing of the drag sent while it goes on (x = {x})"
        );
    }
    h.advance(16);
    assert_eq!(
        h.wire_operations(),
        ["m10"],
        "the last position, once its hold ended"
    );
    assert!(h.now - started >= 10 * 16 + 16);
    sent.extend(h.wire_operations());
    h.answer_first(applied());
    assert_eq!(sent, ["elsewhere", "m10"]);
    for x in 1..10 {
        let op = h.operation(&format!("m{x}")).unwrap();
        assert_eq!(
            op.outcome.as_ref().unwrap().settlement,
            Settlement::Discarded
        );
    }
}

/// `coalesceMs` writes too: a drag's updates, 16 ms apart and each held 32 ms, share
/// a transaction per 32 ms instead of one each; the replaced ones are written settled and
/// without their payload. Each enqueue is durable (its barrier) only once that write
/// commits, never before; an edit that is not held is written at once, with the held ones.
#[test]
fn coalesce_ms_a_drags_updates_share_their_writes_and_each_is_durable_when_written() {
    for group_commit in [false, true] {
        drag_writes(group_commit);
    }
}

fn drag_writes(group_commit: bool) {
    let config = SchedulerConfig {
        concurrency: 2,
        coalesce_ms: 32,
        group_commit,
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("r"));
    h.start();
    let mut barriers = Vec::new();
    for x in 1..=9 {
        let barrier = h
            .enqueue(vec![coalescing(&format!("m{x}"), "drag:s", x)])
            .unwrap();
        let durable = h.scheduler.barrier_state(barrier) == Some(true);
        assert_eq!(
            durable,
            h.store.operation(&format!("m{x}")).is_some(),
            "m{x}: durable exactly when written"
        );
        barriers.push(barrier);
        h.advance(16);
    }
    let mut distinct = barriers.clone();
    distinct.dedup();
    assert!(
        distinct.len() <= 5,
        "9 updates 16 ms apart, held 32 ms: at most one write per 32 ms, got {barriers:?}"
    );
    h.advance(32);
    for (x, barrier) in barriers.iter().enumerate() {
        assert_eq!(
            h.scheduler.barrier_state(*barrier),
            Some(true),
            "m{}",
            x + 1
        );
    }
    for x in 1..9 {
        let stored = h.store.operation(&format!("m{x}")).unwrap();
        let outcome = stored.outcome.as_ref().unwrap();
        assert_eq!(outcome.settlement, Settlement::Discarded);
        assert_eq!(
            stored.intent.payload,
            Payload::default(),
            "m{x}: no payload stored"
        );
    }
    assert!(h.store.operation("m9").is_some());
    // An edit that is not held is written at once, and the held update with it.
    let barrier = h.enqueue(vec![coalescing("n1", "drag:t", 1)]).unwrap();
    assert_eq!(
        h.scheduler.barrier_state(barrier),
        None,
        "held: not yet written"
    );
    let other = h.enqueue(vec![edit("plain", &["c"])]).unwrap();
    assert_eq!(other, barrier, "one write carries both");
    assert_eq!(h.scheduler.barrier_state(barrier), Some(true));
    assert!(h.store.operation("n1").is_some() && h.store.operation("plain").is_some());
}

#[test]
fn coalesce_ms_a_held_update_keeps_its_place_before_later_edits_on_its_canvas() {
    let mut h = holding(50);
    h.enqueue(vec![coalescing("m1", "drag:s", 1)]).unwrap();
    h.enqueue(vec![edit("after", &["c"])]).unwrap();
    assert!(
        h.wire.is_empty(),
        "the later edit waits behind the held update"
    );
    assert_eq!(
        h.scheduler.explain(h.now, "after").unwrap().reason,
        "waiting_canvas"
    );
    h.advance(50);
    assert_eq!(h.wire_operations(), ["m1"]);
    h.answer_first(applied());
    assert_eq!(h.wire_operations(), ["after"]);
}

#[test]
fn coalesce_ms_flush_sends_a_held_update_now_and_the_option_is_bounded() {
    let mut h = holding(500);
    h.enqueue(vec![coalescing("m1", "drag:s", 1)]).unwrap();
    assert!(h.wire.is_empty());
    let outcome = h.scheduler.flush(h.now, "m1").unwrap();
    h.drain();
    assert!(outcome.started, "{outcome:?}");
    assert_eq!(h.wire_operations(), ["m1"]);
    let too_long = SchedulerConfig {
        coalesce_ms: 1_001,
        ..SchedulerConfig::default()
    };
    assert_eq!(too_long.validate().unwrap_err().code(), "invalid_options");
}

/// A paste: one `enqueueMany` whose intents go round 50 canvases, so each canvas's next
/// edit is 50 places further on in the queue.
fn pasted(count: usize, canvases: usize) -> Vec<IntentInput> {
    let names: Vec<String> = (0..canvases).map(|c| format!("c{c}")).collect();
    (0..count)
        .map(|i| edit(&format!("p{i}"), &[names[i % canvases].as_str()]))
        .collect()
}

/// Answers every request `applied` as it goes out; returns each request's operations.
fn answer_all(h: &mut Harness<impl Host>) -> Vec<Vec<String>> {
    let mut requests = Vec::new();
    h.drain();
    while let Some(order) = h.answer_first(applied()) {
        requests.push(order.request.operation_ids.clone());
    }
    requests
}

#[test]
fn batch_a_paste_round_many_canvases_fills_its_batches() {
    let mut h = Harness::new(SchedulerConfig::default(), CountingHost::new("r"));
    h.start();
    h.enqueue(pasted(2_000, 50)).unwrap();
    let requests = answer_all(&mut h);
    // 40 edits a canvas: a batch of 32 (the default) and one of 8, per canvas.
    assert_eq!(
        requests.len(),
        100,
        "full batches, not one a few places apart"
    );
    let mut sent: Vec<&str> = Vec::new();
    for request in &requests {
        let canvas = |id: &str| id[1..].parse::<usize>().unwrap() % 50;
        assert!(
            request.iter().all(|id| canvas(id) == canvas(&request[0])),
            "one canvas a batch"
        );
        sent.extend(request.iter().map(String::as_str));
    }
    for c in 0..50 {
        let order: Vec<&str> = sent
            .iter()
            .copied()
            .filter(|id| id[1..].parse::<usize>().unwrap() % 50 == c)
            .collect();
        let expected: Vec<String> = (0..40).map(|k| format!("p{}", k * 50 + c)).collect();
        assert_eq!(order, expected, "canvas c{c} in enqueue order");
    }
    for i in 0..2_000 {
        let op = h.operation(&format!("p{i}")).unwrap();
        assert_eq!(op.phase, OperationPhase::Resolved);
    }
}

/// A `participants` hook that puts `c1`'s edits on `c0` too.
struct Spreading(CountingHost);

impl Host for Spreading {
    fn participants(
        &self,
        intent: &Intent,
        _reads: &Scheduler<Self>,
    ) -> Result<Vec<String>, SafeError> {
        let mut canvases = intent.canvas_ids.clone();
        if canvases.iter().any(|c| c == "c1") {
            canvases.push("c0".into());
        }
        Ok(canvases)
    }
    fn compile(
        &self,
        intent: &Intent,
        _id: &str,
        reads: &Scheduler<Self>,
    ) -> Result<CompiledRequest, SafeError> {
        let mut compiled = default_compile(intent);
        compiled.canvas_ids = self.participants(intent, reads)?;
        Ok(compiled)
    }
    fn create_request_id(&mut self) -> String {
        self.0.create_request_id()
    }
}

#[test]
fn batch_with_a_participants_hook_asks_it_for_each_operation_looked_past() {
    let mut h = Harness::new(
        SchedulerConfig::default(),
        Spreading(CountingHost::new("r")),
    );
    h.start();
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(vec![
        edit("a", &["c0"]),
        edit("b", &["c1"]),
        edit("c", &["c0"]),
    ])
    .unwrap();
    h.scheduler.release(h.now, hold);
    let requests = answer_all(&mut h);
    assert_eq!(
        requests,
        vec![vec!["a"], vec!["b"], vec!["c"]],
        "b touches c0 by its participants: c may not pass it into a's batch"
    );
}
