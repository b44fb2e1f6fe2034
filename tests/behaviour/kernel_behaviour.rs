//! Dead letters, the lease, principals, safe errors, the event log, `flush`, revisions,
//! recovery, `stats`, `explain`, validated reads and digests on a virtual clock, each test named
//! after the behaviour it proves.

use canvas_scheduler_core::{
    intent::IntentInput, AttemptOutcome, AttemptStatus, Authorization, CountingHost, Effect,
    Report, RetryPolicy, SchedulerConfig,
};
use serde_json::from_str as parse;

/// The compact JSON text serde_json writes.
fn to_string<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("serializes")
}
use crate::common::{edit, edit_after};
use canvas_scheduler_core::{
    EventKind, LedgerLoader, OperationPhase, RecordStore, RetryAction, Scheduler, Settlement,
};
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

/// A request dead-letters after three failures; each operation is a request of its own.
fn few_attempts() -> SchedulerConfig {
    SchedulerConfig {
        retry: RetryPolicy {
            base_ms: 10,
            max_ms: 100,
            max_attempts: 3,
            dead_letter_after_ms: 0,
        },
        ..crate::common::unbatched()
    }
}

fn unresolved() -> AttemptStatus {
    AttemptStatus::outcome(AttemptOutcome::Unresolved)
}

/// Fails every attempt of `request` until it is dead-lettered: the server says "later"
/// (`accepted`) each time, which always counts, so this is the request's own failure.
fn exhaust(h: &mut Harness<CountingHost>, request: &str) {
    for _ in 0..10 {
        if h.wire_ids().iter().any(|id| id == request) {
            h.answer(request, AttemptStatus::outcome(AttemptOutcome::Accepted));
        }
        h.advance(1_000);
    }
}

/// A dead letter the host can act on: its report and `explain` name the canvases it holds
/// and how to release them, and `retry` releases them.
#[test]
fn k1_a_dead_letter_says_which_canvases_it_holds_and_how_to_release_them() {
    let mut h = harness_with(few_attempts());
    h.enqueue(vec![edit("bad", &["x", "y"]), edit("next", &["y"])])
        .unwrap();
    let bad = h.wire_ids()[0].clone();
    exhaust(&mut h, &bad);
    let held = h.reports.iter().find_map(|r| match r {
        Report::DeadLettered {
            held_canvas_ids, ..
        } => Some(held_canvas_ids.clone()),
        _ => None,
    });
    assert_eq!(held, Some(vec!["x".to_owned(), "y".to_owned()]));
    let explained = h.scheduler.explain(h.now, "bad").unwrap();
    assert_eq!(explained.state, "blocked");
    assert_eq!(explained.reason, "dead_letter");
    assert_eq!(
        explained.held_canvas_ids,
        Some(vec!["x".to_owned(), "y".to_owned()])
    );
    assert_eq!(
        explained.release,
        Some(vec!["retry".to_owned(), "discard".to_owned()])
    );
    let waiting = h.scheduler.explain(h.now, "next").unwrap();
    assert_eq!(
        (waiting.reason.as_str(), waiting.canvas_id.as_deref()),
        ("waiting_canvas", Some("y"))
    );
    assert_eq!(
        waiting.held_canvas_ids, None,
        "only the blocked request holds"
    );
    h.scheduler.retry(h.now, "bad").unwrap();
    h.drain();
    h.advance(1);
    assert_eq!(h.scheduler.explain(h.now, "bad").unwrap().release, None);
}

#[test]
fn k1_past_max_attempts_a_request_is_dead_lettered_and_only_its_canvas_waits() {
    let mut h = harness_with(few_attempts());
    h.enqueue(vec![edit("bad", &["x"]), edit("next", &["x"])])
        .unwrap();
    let bad = h.wire_ids()[0].clone();
    exhaust(&mut h, &bad);
    assert!(h
        .reports
        .iter()
        .any(|r| matches!(r, Report::DeadLettered { request_id, .. } if *request_id == bad)));
    assert_eq!(
        h.scheduler.explain(h.now, "bad").unwrap().reason,
        "dead_letter"
    );
    assert_eq!(
        h.scheduler.explain(h.now, "next").unwrap().reason,
        "waiting_canvas"
    );
    h.enqueue(vec![edit("unrelated", &["z"])]).unwrap();
    assert_eq!(
        h.wire_operations(),
        ["unrelated"],
        "unrelated canvases are not frozen"
    );
    assert!(h
        .scheduler
        .ledger()
        .events_after(0, 1_000)
        .iter()
        .any(|e| e.kind == EventKind::DeadLettered));
}

#[test]
fn k1_retry_rearms_the_same_frozen_request_and_queries_first() {
    let mut h = harness_with(few_attempts());
    h.enqueue(vec![edit("bad", &["x"])]).unwrap();
    let first = h.wire[0].clone();
    exhaust(&mut h, &first.request.id);
    h.scheduler.retry(h.now, "bad").unwrap();
    h.drain();
    assert_eq!(h.wire.len(), 1);
    assert_eq!(h.wire[0].request.id, first.request.id);
    assert_eq!(h.wire[0].request.body, first.request.body);
    assert_eq!(
        h.wire[0].action,
        RetryAction::Query,
        "an unknown outcome is queried first"
    );
    h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
    assert_eq!(
        h.scheduler.ledger().operation("bad").unwrap().phase,
        OperationPhase::Resolved
    );
}

#[test]
fn k1_discard_resolves_and_blocks_dependents_dependency_discarded() {
    let mut h = harness_with(few_attempts());
    h.enqueue(vec![
        edit("bad", &["x"]),
        edit_after("child", &["y"], &["bad"]),
        edit("same", &["x"]),
    ])
    .unwrap();
    let bad = h.wire_ids()[0].clone();
    assert_eq!(
        h.scheduler.discard(h.now, "bad").unwrap_err().code(),
        "invalid_state",
        "not while it may reach the server"
    );
    exhaust(&mut h, &bad);
    h.scheduler.discard(h.now, "bad").unwrap();
    h.drain();
    let op = h.scheduler.ledger().operation("bad").unwrap();
    assert_eq!(
        op.outcome.as_ref().unwrap().settlement,
        Settlement::Discarded
    );
    assert_eq!(
        h.scheduler.ledger().operation("child").unwrap().blockers,
        ["dependency_discarded"]
    );
    assert_eq!(
        h.wire_operations(),
        ["same"],
        "its canvas claim was released"
    );
}

#[test]
fn k1_k7_host_actions_on_unknown_ids_are_errors() {
    let mut h = harness();
    assert_eq!(
        h.scheduler.retry(h.now, "nope").unwrap_err().code(),
        "unknown_operation"
    );
    assert_eq!(
        h.scheduler.discard(h.now, "nope").unwrap_err().code(),
        "unknown_operation"
    );
    assert_eq!(
        h.scheduler.flush(h.now, "nope").unwrap_err().code(),
        "unknown_operation"
    );
    assert_eq!(
        h.scheduler.explain(h.now, "nope").unwrap_err().code(),
        "unknown_operation"
    );
}

#[test]
fn k2_writes_carry_the_fence_and_renewal_precedes_each_send() {
    let mut h = harness();
    h.auto_persist = false;
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    let mut renewed = false;
    while h.wire.is_empty() {
        let Some(batch) = h.persists.front() else {
            break;
        };
        assert_eq!(batch.fence, h.store.lease().map(|l| l.fence));
        renewed |= batch.lease.is_some();
        h.persist_next();
        h.drain();
    }
    assert!(renewed, "the batch before the send renews the lease");
    assert_eq!(h.wire.len(), 1);
}

#[test]
fn k2_a_second_dispatcher_cannot_take_an_unexpired_lease() {
    let mut h = harness();
    let mut store = h.store.clone();
    assert!(store.acquire("other-tab", h.now + 1, 5_000).is_err());
    assert!(store.acquire("other-tab", h.now + 5_001, 5_000).is_ok());
    h.advance(1);
}

#[test]
fn k3_another_principals_request_is_never_sent() {
    let config = SchedulerConfig {
        principal: Some("user-a".into()),
        ..SchedulerConfig::default()
    };
    let mut h = harness_with(config.clone());
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(vec![edit("mine", &["x"])]).unwrap();
    // User B opens the same ledger: A's work waits, B's goes.
    let store = h.store.clone();
    let _ = hold;
    let b = SchedulerConfig {
        principal: Some("user-b".into()),
        owner: "tab-b".into(),
        ..config
    };
    let mut hb = Harness::over(b, CountingHost::new("b"), store, h.now + 10_000);
    hb.start();
    hb.enqueue(vec![edit("theirs", &["y"])]).unwrap();
    assert_eq!(hb.wire_operations(), ["theirs"]);
    assert_eq!(
        hb.scheduler.explain(hb.now, "mine").unwrap().reason,
        "other_principal"
    );
}

#[test]
fn k3_denied_fails_for_good_and_an_unavailable_check_retries() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"]), edit("b", &["y"])])
        .unwrap();
    let long = "r".repeat(1_000);
    h.answer_first(AttemptStatus::denied(&long));
    let a = h
        .scheduler
        .ledger()
        .operation("a")
        .unwrap()
        .outcome
        .clone()
        .unwrap();
    assert_eq!(a.settlement, Settlement::Rejected);
    assert_eq!(a.error.as_ref().unwrap().code, "authorization_denied");
    assert_eq!(a.error.unwrap().message.chars().count(), 256);
    h.answer_first(AttemptStatus::authorization_unavailable(
        "policy service down",
    ));
    assert!(h
        .scheduler
        .ledger()
        .request(&h.sent[1].request.id)
        .unwrap()
        .retry_at
        .is_some());
}

#[test]
fn k4_a_non_retryable_error_dead_letters_at_once_and_retry_at_is_honoured() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"]), edit("b", &["y"])])
        .unwrap();
    h.answer_first(AttemptStatus {
        retryable: Some(false),
        ..unresolved()
    });
    assert_eq!(
        h.scheduler.explain(h.now, "a").unwrap().reason,
        "dead_letter"
    );
    let at = h.now + 12_345;
    h.answer_first(AttemptStatus {
        retry_at: Some(at),
        ..unresolved()
    });
    assert_eq!(h.scheduler.explain(h.now, "b").unwrap().due_at, Some(at));
}

/// Header failure before the request leaves: no `dispatched`, no count.
fn failed_before_sending() -> AttemptStatus {
    AttemptStatus {
        error: Some(canvas_scheduler_core::SafeError::new(
            "headers_unavailable",
            "TypeError",
        )),
        ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
    }
}

fn dispatched(h: &Harness<CountingHost>) -> Vec<Option<String>> {
    let events = h.scheduler.ledger().events_after(0, 100);
    events
        .iter()
        .filter(|e| e.kind == EventKind::Dispatched)
        .map(|e| e.detail.clone())
        .collect()
}

#[test]
fn k6_dispatched_is_logged_when_the_request_leaves_and_written_with_the_answer() {
    let mut h = harness();
    h.fail_before_sending = 1;
    h.enqueue(vec![edit("e1", &["x"])]).unwrap();
    assert_eq!(h.wire.len(), 1, "ordered sent");
    assert!(dispatched(&h).is_empty(), "never left: not dispatched");
    assert_eq!(h.scheduler.stats().sent, 0);
    h.answer_first(failed_before_sending());
    assert!(dispatched(&h).is_empty());

    // The retry leaves: logged once, as a query (the first attempt may have been sent).
    let request = h.scheduler.ledger().requests().next().unwrap();
    let due = request.retry_at.expect("a retry is scheduled");
    h.advance(due - h.now - 1);
    let writes = h.store.writes;
    assert!(h.wire.is_empty());
    h.advance(1);
    assert_eq!(h.wire.len(), 1);
    assert_eq!(dispatched(&h), vec![Some("query".to_owned())]);
    assert_eq!(h.scheduler.stats().sent, 1);
    let durable = |h: &Harness<CountingHost>| {
        let events = h.store.snapshot().events;
        events
            .iter()
            .filter(|e| e.kind == EventKind::Dispatched)
            .count()
    };
    // The entry is no write of its own: the send cost one batch (the attempt's marker),
    // and the log entry goes with the answer's.
    assert_eq!(h.store.writes, writes + 1, "one batch before the send");
    assert_eq!(durable(&h), 0);
    h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
    assert_eq!(durable(&h), 1);
    assert_eq!(h.store.writes, writes + 2);
}

#[test]
fn k6_the_event_log_is_bounded_persisted_and_readable() {
    let config = SchedulerConfig {
        event_log_limit: 10,
        ..SchedulerConfig::default()
    };
    let mut h = harness_with(config);
    for i in 0..5 {
        h.enqueue(vec![edit(&format!("e{i}"), &["x"])]).unwrap();
        h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
    }
    let events = h.scheduler.ledger().events_after(0, 100);
    assert_eq!(events.len(), 10);
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind).collect();
    assert!(
        kinds.contains(&EventKind::Claimed)
            && kinds.contains(&EventKind::Dispatched)
            && kinds.contains(&EventKind::Settled)
    );
    assert!(events.iter().all(|e| e.fence == Some(1)));
    // Storage keeps the log in pages (one per batch) and trims whole pages: the newest ten
    // and at most one page ending above the trim.
    let durable = h.store.snapshot().events;
    assert!(
        (10..20).contains(&durable.len()),
        "trimmed in storage too: {}",
        durable.len()
    );
    assert_eq!(durable.last().map(|e| e.seq), events.last().map(|e| e.seq));
    assert!(h.store.writes > 0);
    // A restart keeps exactly the newest ten.
    let config = SchedulerConfig {
        event_log_limit: 10,
        ..SchedulerConfig::default()
    };
    let now = h.now + 60_000;
    let restarted = Harness::over(config, CountingHost::new("r"), h.store.clone(), now);
    let reloaded = restarted.scheduler.ledger().events_after(0, 100);
    assert_eq!(reloaded.len(), 10);
    assert_eq!(reloaded.last().map(|e| e.seq), events.last().map(|e| e.seq));
}

#[test]
fn k6_event_pages_load_beside_single_event_records_and_bad_pages_are_set_aside() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"]), edit("b", &["y"])])
        .unwrap();
    let events = h.store.snapshot().events;
    assert!(events.len() >= 3, "{events:?}");
    let text = |events: &[canvas_scheduler_core::EventRecord]| to_string(events);
    let seq = |i: usize| events[i].seq.to_string();
    let last = events.len() - 1;
    // An earlier build's single record, then a page (keyed by its last seq).
    let mut loader = LedgerLoader::new();
    let page = vec![
        (seq(0), to_string(&events[0])),
        (seq(last), text(&events[1..])),
    ];
    loader.add_page(RecordStore::Events, 10, page).unwrap();
    let (loaded, quarantined) = loader.finish();
    assert!(quarantined.is_empty(), "{quarantined:?}");
    assert_eq!(loaded.events, events);
    // A page keyed by something other than its last seq, a page overlapping the record
    // before it, an empty page and a page out of order are each set aside whole.
    let mut reversed = events[1..].to_vec();
    reversed.reverse();
    let cases = [
        (seq(last - 1), text(&events[1..]), "ending at"),
        (seq(last), text(&events[..]), "overlaps"),
        (seq(last), "[]".to_string(), "empty"),
        (seq(1), text(&reversed), "ascending"),
    ];
    for (key, value, reason) in cases {
        let mut loader = LedgerLoader::new();
        let first = (seq(0), to_string(&events[0]));
        loader
            .add_page(RecordStore::Events, 10, vec![first, (key, value)])
            .unwrap();
        let (loaded, quarantined) = loader.finish();
        assert_eq!(loaded.events, events[..1], "{reason}");
        assert_eq!(quarantined.len(), 1, "{reason}");
        assert!(quarantined[0].reason.contains(reason), "{quarantined:?}");
    }
}

/// Validated reads for the event log: garbage among its records (not JSON, an event under another
/// seq's key, a page under a key between two pages) is set aside alone; the page after it loads,
/// though its first seq is below the garbage's key.
#[test]
fn d4_garbage_in_the_event_log_is_set_aside_alone() {
    let events: Vec<canvas_scheduler_core::EventRecord> = (1..=6)
        .map(|seq| canvas_scheduler_core::EventRecord {
            seq,
            at: 1_000 + seq,
            kind: EventKind::Claimed,
            request_id: None,
            operation_id: Some(format!("op-{seq}")),
            attempt: None,
            fence: Some(1),
            detail: None,
        })
        .collect();
    let text = |events: &[canvas_scheduler_core::EventRecord]| to_string(events);
    let seq = |i: usize| events[i].seq;
    let last = events.len() - 1;
    let page = vec![
        (seq(1).to_string(), text(&events[..2])),
        // Between the two pages: not JSON, and a lone event under a key not its seq.
        ((seq(1) + 1).to_string(), "not json".to_string()),
        ((seq(1) + 2).to_string(), to_string(&events[0])),
        (seq(last).to_string(), text(&events[2..])),
        ((seq(last) + 100).to_string(), "[]".to_string()),
    ];
    let mut loader = LedgerLoader::new();
    loader.add_page(RecordStore::Events, 10, page).unwrap();
    let (loaded, quarantined) = loader.finish();
    assert_eq!(loaded.events, events, "every legible page loads");
    let keys: Vec<u64> = quarantined.iter().map(|q| q.key.parse().unwrap()).collect();
    assert_eq!(keys, [seq(1) + 1, seq(1) + 2, seq(last) + 100]);
    assert!(quarantined.iter().all(|q| q.store == "events"));
}

#[test]
fn k7_flush_runs_a_waiting_retry_now_or_says_why() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"]), edit_after("b", &["y"], &["a"])])
        .unwrap();
    let a = h.wire_ids()[0].clone();
    h.answer(
        &a,
        AttemptStatus {
            retry_after_ms: Some(60_000),
            ..unresolved()
        },
    );
    let outcome = h.scheduler.flush(h.now, "a").unwrap();
    h.drain();
    assert!(outcome.started);
    assert_eq!(h.wire_ids(), [a.as_str()]);
    let why = h.scheduler.flush(h.now, "b").unwrap();
    assert!(!why.started);
    assert_eq!(why.explanation.reason, "waiting_dependency");
}

#[test]
fn k8_a_revised_intent_is_not_sent_as_frozen_but_frozen_again() {
    let mut h = harness();
    h.auto_persist = false;
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    let stale = h
        .scheduler
        .ledger()
        .operation("a")
        .unwrap()
        .request_id
        .clone()
        .unwrap();
    let mut revised = edit("a", &["x"]);
    revised.payload = json!({"shapeId": "a", "x": 99}).into();
    h.scheduler.revise(h.now, revised).unwrap();
    h.auto_persist = true;
    h.drain();
    while h.persist_next() {
        h.drain();
    }
    assert_eq!(h.wire.len(), 1);
    assert_ne!(h.wire[0].request.id, stale);
    assert!(h.wire[0].request.body.contains("99"));
    let old = h.scheduler.ledger().request(&stale).unwrap();
    assert_eq!(old.error.as_ref().unwrap().code, "stale_revision");
}

#[test]
fn d1_recovered_requests_go_before_new_work() {
    let mut h = harness_with(SchedulerConfig {
        concurrency: 1,
        ..SchedulerConfig::default()
    });
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    let a = h.wire_ids()[0].clone();
    let store = h.store.clone();
    let mut r = Harness::over(
        SchedulerConfig {
            concurrency: 1,
            owner: "tab-2".into(),
            ..SchedulerConfig::default()
        },
        CountingHost::new("s"),
        store,
        h.now + 10_000,
    );
    r.scheduler
        .enqueue(r.now, vec![edit("new", &["y"])])
        .unwrap();
    r.start();
    assert_eq!(r.wire_ids(), [a.as_str()]);
    assert_eq!(r.wire[0].action, RetryAction::Query);
}

#[test]
fn d2_stats_count_and_give_idle_reasons() {
    let mut h = harness();
    assert_eq!(h.scheduler.stats().idle_reason, Some("no_work"));
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    assert_eq!(h.scheduler.stats().idle_reason, None, "busy");
    h.answer_first(unresolved());
    assert_eq!(h.scheduler.stats().idle_reason, Some("retry_scheduled"));
    let hold = h.scheduler.hold(h.now).unwrap();
    assert_eq!(h.scheduler.stats().idle_reason, Some("held"));
    h.scheduler.release(h.now, hold);
    h.scheduler.set_online(h.now, false);
    assert_eq!(h.scheduler.stats().idle_reason, Some("offline"));
    let stats = h.scheduler.stats();
    assert_eq!((stats.claimed, stats.sent, stats.leader), (1, 1, true));
}

#[test]
fn d3_explain_covers_every_state() {
    let mut h = harness_with(SchedulerConfig {
        concurrency: 1,
        ..SchedulerConfig::default()
    });
    h.enqueue(vec![
        edit("a", &["x"]),
        edit("b", &["x"]),
        edit_after("c", &["y"], &["a"]),
        edit("e", &["z"]),
        edit("d", &[]),
    ])
    .unwrap();
    let reason =
        |h: &Harness<CountingHost>, id: &str| h.scheduler.explain(h.now, id).unwrap().reason;
    assert_eq!(reason(&h, "a"), "sending");
    assert_eq!(reason(&h, "c"), "waiting_dependency");
    assert_eq!(
        reason(&h, "e"),
        "frozen_ahead",
        "frozen while the slot is taken"
    );
    assert_eq!(
        reason(&h, "d"),
        "ready",
        "queued behind the full slot and the one ahead"
    );
    h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
    assert_eq!(reason(&h, "a"), "applied");
    assert_eq!(h.scheduler.explain(h.now, "a").unwrap().state, "resolved");
}

#[test]
fn d4_corrupt_and_foreign_records_are_quarantined_not_dropped() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"]), edit("b", &["y"])])
        .unwrap();
    let snapshot = h.store.snapshot();
    let mut loader = LedgerLoader::new();
    let mut ops: Vec<(String, serde_json::Value)> = snapshot
        .operations
        .iter()
        .map(|o| (o.intent.id.clone(), parse(&to_string(o)).unwrap()))
        .collect();
    ops.push(("zz-garbage".into(), json!({"not": "an operation"})));
    loader.add_page(RecordStore::Operations, 10, ops).unwrap();
    let mut requests: Vec<(String, serde_json::Value)> = snapshot
        .requests
        .iter()
        .map(|r| (r.id.clone(), parse(&to_string(r)).unwrap()))
        .collect();
    requests.sort_by(|x, y| x.0.cmp(&y.0));
    if let Some((_, value)) = requests.first_mut() {
        value["body"] = json!("{\"id\":\"tampered\"}");
    }
    loader
        .add_page(RecordStore::Requests, 10, requests)
        .unwrap();
    let (loaded, quarantined) = loader.finish();
    assert_eq!(loaded.operations.len(), 2);
    assert_eq!(quarantined.len(), 2, "{quarantined:?}");
    assert!(quarantined.iter().any(|q| q.key == "zz-garbage"));
    assert!(quarantined.iter().any(|q| q.reason.contains("digest")));
    let blocked: Vec<_> = loaded
        .operations
        .iter()
        .filter(|o| o.blockers == ["request_quarantined"])
        .collect();
    assert_eq!(
        blocked.len(),
        1,
        "its operation waits for the host instead of being re-sent"
    );
}

#[test]
fn s7_freeze_writes_the_request_only_and_a_load_points_the_operation_back_at_it() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    h.drain();
    let durable = h.store.snapshot();
    let request = durable.requests[0].clone();
    assert!(request.is_unresolved());
    assert_eq!(request.operation_ids, ["a"]);
    assert_eq!(
        h.scheduler.ledger().operation("a").unwrap().request_id,
        Some(request.id.clone())
    );
    // Written at enqueue, not again at freeze: the stored operation has no pointer...
    assert_eq!(h.store.operation("a").unwrap().request_id, None);
    // ...and a restart points it back at the unresolved request listing it.
    let now = h.now + 60_000;
    let restarted = Harness::over(
        SchedulerConfig::default(),
        CountingHost::new("r"),
        h.store.clone(),
        now,
    );
    assert_eq!(
        restarted
            .scheduler
            .ledger()
            .operation("a")
            .unwrap()
            .request_id,
        Some(request.id)
    );
}

#[test]
fn d4_operations_a_set_aside_request_may_have_carried_are_blocked_not_refrozen() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"]), edit("b", &["y"])])
        .unwrap();
    let snapshot = h.store.snapshot();
    let ops: Vec<(String, serde_json::Value)> = snapshot
        .operations
        .iter()
        .map(|o| (o.intent.id.clone(), parse(&to_string(o)).unwrap()))
        .collect();
    let blocked = |request: serde_json::Value| {
        let mut loader = LedgerLoader::new();
        loader
            .add_page(RecordStore::Operations, 10, ops.clone())
            .unwrap();
        loader
            .add_page(
                RecordStore::Requests,
                10,
                vec![("r-x".to_string(), request)],
            )
            .unwrap();
        let (loaded, quarantined) = loader.finish();
        assert_eq!(quarantined.len(), 1, "{quarantined:?}");
        let ids: Vec<String> = loaded
            .operations
            .iter()
            .filter(|o| o.blockers == ["request_quarantined"])
            .map(|o| o.intent.id.clone())
            .collect();
        ids
    };
    // A corrupt request that still names its operations blocks those only...
    assert_eq!(blocked(json!({"id": "r-x", "operationIds": ["a"]})), ["a"]);
    // ...one that names none legibly blocks every pending operation no request carries.
    assert_eq!(blocked(json!({"id": "r-x", "operationIds": 7})), ["a", "b"]);
    assert_eq!(blocked(json!("not a record")), ["a", "b"]);
}

#[test]
fn d4_pages_must_respect_size_and_advance() {
    let mut loader = LedgerLoader::new();
    let page = vec![("b".to_string(), json!({})), ("a".to_string(), json!({}))];
    assert_eq!(
        loader
            .add_page(RecordStore::Operations, 10, page)
            .unwrap_err()
            .code(),
        "corrupt_record"
    );
    let mut loader = LedgerLoader::new();
    let page = vec![("a".to_string(), json!({})), ("b".to_string(), json!({}))];
    assert_eq!(
        loader
            .add_page(RecordStore::Operations, 1, page)
            .unwrap_err()
            .code(),
        "corrupt_record"
    );
}

#[test]
fn d4_records_decode_from_their_text_and_bad_text_is_reported_as_read() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    let snapshot = h.store.snapshot();
    let (op, request) = (snapshot.operations[0].clone(), snapshot.requests[0].clone());
    let mut loader = LedgerLoader::new();
    let requests = vec![(request.id.clone(), to_string(&request))];
    loader
        .add_page(RecordStore::Requests, 10, requests)
        .unwrap();
    let page: Vec<(String, String)> = vec![
        ("a".into(), to_string(&op)),
        ("b".into(), "{\"intent\": tru".into()),
        ("c".into(), "{\"intent\": 3}".into()),
    ];
    loader.add_page(RecordStore::Operations, 10, page).unwrap();
    let kept: Vec<_> = loader.quarantined().iter().map(|q| q.key.clone()).collect();
    assert_eq!(kept, ["b", "c"]);
    let (loaded, quarantined) = loader.finish();
    assert_eq!(loaded.operations, vec![op]);
    assert_eq!(loaded.requests, vec![request]);
    assert!(
        quarantined[0].reason.starts_with("not JSON"),
        "{quarantined:?}"
    );
    assert_eq!(quarantined[0].record, json!("{\"intent\": tru").into());
    assert!(
        quarantined[1].reason.starts_with("undecodable"),
        "{quarantined:?}"
    );
    assert_eq!(quarantined[1].record, json!({"intent": 3}).into());
}
#[test]
fn d5_a_body_that_no_longer_matches_its_digest_is_never_sent() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    let mut snapshot = h.store.snapshot();
    snapshot.requests[0].body = snapshot.requests[0].body.replace("shapeId", "shapeID");
    let mut lease = snapshot.lease.clone().unwrap();
    lease.owner = "dispatcher".into();
    snapshot.lease = Some(lease);
    let store = MemoryStore::from_snapshot(snapshot);
    let mut s = Scheduler::new(
        SchedulerConfig::default(),
        CountingHost::new("s"),
        store.snapshot(),
    )
    .unwrap();
    s.start(h.now + 1).unwrap();
    let mut store = store;
    let mut sent = 0;
    for _ in 0..10 {
        while let Some(effect) = s.poll_effect() {
            match effect {
                Effect::Persist(batch) => {
                    let result = store.apply(&batch);
                    s.on_persisted(h.now + 1, batch.no, result);
                }
                Effect::Send(_) => sent += 1,
                _ => {}
            }
        }
    }
    assert_eq!(sent, 0);
    assert_eq!(s.explain(h.now + 1, "a").unwrap().reason, "digest_mismatch");
}

/// An authorization step that denies one operation and cannot decide another.
fn gatekeeper(order: &canvas_scheduler_core::SendOrder) -> Authorization {
    match order.request.operation_ids[0].as_str() {
        "forbidden" => Authorization::Denied("workspace is read-only".into()),
        "unsure" => Authorization::Unavailable("policy service down".into()),
        _ => Authorization::Allowed,
    }
}

#[test]
fn k3_the_authorization_step_runs_before_every_send() {
    let config = SchedulerConfig {
        principal: Some("user-a".into()),
        authorize: true,
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("g"));
    h.authorizer = Some(Box::new(gatekeeper));
    h.start();
    h.enqueue(vec![
        edit("forbidden", &["x"]),
        edit("unsure", &["y"]),
        edit("fine", &["z"]),
    ])
    .unwrap();
    assert_eq!(
        h.wire_operations(),
        ["fine"],
        "denied and undecided requests are never sent"
    );
    let denied = h
        .scheduler
        .ledger()
        .operation("forbidden")
        .unwrap()
        .outcome
        .clone()
        .unwrap();
    assert_eq!(denied.settlement, Settlement::Rejected);
    assert_eq!(denied.error.unwrap().message, "workspace is read-only");
    let unsure = h.scheduler.explain(h.now, "unsure").unwrap();
    assert_eq!(
        (unsure.reason.as_str(), unsure.due_at.is_some()),
        ("retry_scheduled", true)
    );
}

#[test]
fn k2_stop_hands_the_lease_over_at_once() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    let mut store = h.store.clone();
    assert!(
        store.acquire("next-tab", h.now + 1, 5_000).is_err(),
        "held while running"
    );
    h.scheduler.stop();
    h.drain();
    let mut store = h.store.clone();
    let lease = store
        .acquire("next-tab", h.now + 1, 5_000)
        .expect("free right after stop");
    assert_eq!(lease.fence, 2);
}

#[test]
fn w4_adopted_intents_keep_the_enqueuing_sessions_principal_and_bad_ones_change_nothing() {
    let config = SchedulerConfig {
        principal: Some("user-a".into()),
        ..SchedulerConfig::default()
    };
    let mut h = harness_with(config);
    let now = h.now;
    h.scheduler
        .adopt(now, vec![edit("from-b", &["x"])], Some("user-b".into()))
        .unwrap();
    h.drain();
    let stored = h.store.operation("from-b").expect("adopted and durable");
    assert_eq!(stored.intent.principal.as_deref(), Some("user-b"));
    assert!(h.wire.is_empty(), "Never sent under user-a");
    // Adopting the same intent again (a crash between adoption and clearing the inbox) is
    // harmless; a bad batch is refused whole.
    h.scheduler
        .adopt(now, vec![edit("from-b", &["x"])], Some("user-b".into()))
        .unwrap();
    let before = h.store.snapshot();
    let refused = h.scheduler.adopt(
        now,
        vec![
            edit("fine", &["y"]),
            edit_after("bad", &["y"], &["nowhere"]),
        ],
        Some("user-b".into()),
    );
    assert_eq!(refused.unwrap_err().code.as_str(), "unknown_dependency");
    h.drain();
    assert_eq!(h.store.snapshot().operations.len(), before.operations.len());
    assert!(h.store.operation("fine").is_none());
}

#[test]
fn w4_with_keep_lease_an_idle_held_leader_still_renews() {
    let config = SchedulerConfig {
        keep_lease: true,
        lease_ms: 3_000,
        ..SchedulerConfig::default()
    };
    let mut h = harness_with(config);
    let _hold = h.scheduler.hold(h.now).unwrap();
    h.drain();
    let first = h.store.lease().map(|l| l.expires_at).unwrap();
    h.advance(10_000);
    let later = h.store.lease().map(|l| l.expires_at).unwrap();
    assert!(
        later > first + 9_000,
        "renewed while idle and held: {first} -> {later}"
    );
    assert!(later > h.now, "never lapsed");
    // Without it (one tab), an idle dispatcher leaves the lease alone.
    let mut quiet = harness();
    quiet.drain();
    let first = quiet.store.lease().map(|l| l.expires_at).unwrap();
    quiet.advance(10_000);
    assert_eq!(quiet.store.lease().map(|l| l.expires_at), Some(first));
}

#[test]
fn k1_an_operation_enqueued_after_its_dependency_was_discarded_is_blocked_too() {
    let mut h = harness_with(few_attempts());
    h.enqueue(vec![edit("bad", &["x"])]).unwrap();
    let bad = h.wire_ids()[0].clone();
    exhaust(&mut h, &bad);
    h.scheduler.discard(h.now, "bad").unwrap();
    h.drain();
    h.enqueue(vec![edit_after("child", &["y"], &["bad"])])
        .unwrap();
    assert!(h.wire.is_empty(), "never silently sent");
    assert_eq!(
        h.scheduler.ledger().operation("child").unwrap().blockers,
        ["dependency_discarded"]
    );
    // The host may still send it: retry() is an explicit decision.
    h.scheduler.retry(h.now, "child").unwrap();
    h.drain();
    assert_eq!(h.wire_operations(), ["child"]);
}

/// Two free slots and `intents` ready, none examined yet: a pump pass (`pump_budget`) went to
/// as many operations enqueued before them that block at once (no participants), and
/// yielded. A flush may freeze one of them and park the next.
fn free_slot_with_unexamined_ready(
    pump_budget: usize,
    intents: Vec<IntentInput>,
) -> Harness<CountingHost> {
    // One operation a request: the pump's budget counts operations examined one by one.
    let mut h = harness_with(SchedulerConfig {
        concurrency: 2,
        pump_budget,
        ..crate::common::unbatched()
    });
    let mut all: Vec<IntentInput> = (0..pump_budget)
        .map(|i| edit(&format!("blocked{i}"), &[]))
        .collect();
    all.extend(intents);
    // Written while held, so the only pass is the release's.
    let hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(all).unwrap();
    h.scheduler.release(h.now, hold);
    h.drain();
    assert_eq!(h.scheduler.stats().scanned, pump_budget as u64);
    assert_eq!(h.timer, Some(h.now), "the pass yielded");
    h
}

/// Writes everything, lets retries fall due and answers `applied`: the sends come in `order`.
fn sends_in_order(h: &mut Harness<CountingHost>, order: &[&str]) {
    h.auto_persist = true;
    h.drain();
    while h.persist_next() {
        h.drain();
    }
    h.advance(60_000);
    for expected in order {
        assert_eq!(h.wire_operations(), [*expected]);
        h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
    }
}

#[test]
fn k7_s4_flush_never_sends_ahead_of_an_earlier_operation_on_the_same_canvas() {
    let mut h = free_slot_with_unexamined_ready(
        64,
        vec![edit("a", &["x"]), edit("b", &["x", "y"]), edit("c", &["y"])],
    );
    let outcome = h.scheduler.flush(h.now, "c").unwrap();
    assert!(!outcome.started, "c would overtake b on canvas y");
    assert_eq!(outcome.explanation.reason, "waiting_canvas");
    sends_in_order(&mut h, &["a", "b", "c"]);
}

#[test]
fn k7_s12_flush_examines_at_most_a_pump_pass_of_earlier_operations() {
    let mut h = free_slot_with_unexamined_ready(
        2,
        vec![
            edit("a", &["x"]),
            edit("b", &["x", "y"]),
            edit("c", &["x", "y"]),
            edit("d", &["x", "y"]),
            edit("e", &["y"]),
        ],
    );
    let outcome = h.scheduler.flush(h.now, "e").unwrap();
    assert!(!outcome.started, "d is still ahead of e on canvas y");
    assert_eq!(
        h.scheduler.explain(h.now, "d").unwrap().reason,
        "ready",
        "two examined (a, b), d left for the pump"
    );
    sends_in_order(&mut h, &["a", "b", "c", "d", "e"]);
}

#[test]
fn k8_a_revision_is_refused_once_the_request_may_have_reached_the_server() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    let sent = h.wire[0].clone();
    // Lost on the way, or only delayed: a query that finds nothing cannot tell.
    h.answer_first(unresolved());
    h.advance(60_000);
    h.answer(
        &sent.request.id,
        AttemptStatus {
            error: Some(canvas_scheduler_core::SafeError::new(
                "not_found",
                "never received",
            )),
            ..unresolved()
        },
    );
    let before = h.scheduler.ledger().operation("a").cloned();
    let mut revised = edit("a", &["x"]);
    revised.payload = json!({"shapeId": "a", "x": 99}).into();
    let error = h.scheduler.revise(h.now, revised).unwrap_err();
    assert_eq!(error.code(), "invalid_state");
    assert_eq!(h.scheduler.ledger().operation("a").cloned(), before);
    // The same frozen request goes again: a late copy of it cannot apply the operation twice.
    h.advance(60_000);
    assert_eq!(h.wire.len(), 1);
    assert_eq!(h.wire[0].request.id, sent.request.id);
    assert_eq!(h.wire[0].request.body, sent.request.body);
}

#[test]
fn k7_s4_flush_keeps_order_through_a_chain_of_shared_canvases() {
    // c shares no canvas with a, but b (between them) shares x with a and y with c: a pump
    // pass would have a reserve x, b wait behind it and reserve y, so c waits too.
    let mut h = free_slot_with_unexamined_ready(
        64,
        vec![
            edit("held", &["w"]),
            edit("a", &["w", "x"]),
            edit("b", &["x", "y"]),
            edit("c", &["y"]),
        ],
    );
    let outcome = h.scheduler.flush(h.now, "c").unwrap();
    assert!(!outcome.started, "c would overtake b, which waits behind a");
    sends_in_order(&mut h, &["held", "a", "b", "c"]);
}
