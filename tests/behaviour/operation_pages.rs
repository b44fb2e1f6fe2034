//! Operations stored in pages: first writes go to storage as pages, later writes as
//! records that supersede the page copies, and a page goes with its last current copy. The
//! loader's page checks, and what a load does when a record it needs was set aside.

use canvas_scheduler_core::{
    json_text::to_string,
    operation_pages::{homes_of, PAGE_LIMIT},
    packed::PackedPage,
    AttemptOutcome, AttemptStatus, CountingHost, LedgerLoader, Operation, OperationPhase,
    RecordStore, SchedulerConfig, ACTIVE_MS,
};

use crate::common::edit;
use canvas_scheduler_testing::Harness;
use serde::Serialize;

fn harness() -> Harness<CountingHost> {
    harness_folding_at(0)
}

/// A started harness that folds loose records into a page once `at` have gathered (0: never).
fn harness_folding_at(at: usize) -> Harness<CountingHost> {
    let config = SchedulerConfig {
        fold_records_at: at,
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("r"));
    h.start();
    h
}

fn ids(ops: &[Operation]) -> Vec<&str> {
    ops.iter().map(|op| op.intent.id.as_str()).collect()
}

/// Holds dispatch, then enqueues `ids` one per turn: each is written as its own record.
fn enqueue_one_by_one(h: &mut Harness<CountingHost>, ids: &[&str]) {
    for id in ids {
        h.enqueue(vec![edit(id, &["c"])]).unwrap();
        h.drain();
    }
}

#[test]
fn s18_records_written_one_by_one_are_folded_into_a_page_when_the_scheduler_is_quiet() {
    let mut h = harness_folding_at(3);
    let hold = h.scheduler.hold(h.now).unwrap();
    h.drain();
    enqueue_one_by_one(&mut h, &["a", "b"]);
    assert_eq!(h.store.record_counts(), (0, 2), "one record each");
    h.auto_persist = false;
    h.enqueue(vec![edit("c", &["c"])]).unwrap();
    let own = h.persists.front().cloned().expect("the enqueue's batch");
    assert!(
        own.drop_operations.is_empty(),
        "an enqueue's batch folds nothing"
    );
    assert_eq!(ids(&own.operations), ["c"]);
    // Once it is durable the scheduler is quiet (held: nothing to dispatch) with three loose
    // records: the next batch is the fold.
    h.persist_next();
    h.drain();
    // It waits until the user has paused (ACTIVE_MS after the last enqueue).
    assert!(h.persists.is_empty(), "no fold while the user is at work");
    h.advance(ACTIVE_MS);
    let fold = h.persists.front().cloned().expect("the fold batch");
    assert_eq!(fold.drop_operations, ["a", "b", "c"]);
    assert_eq!(fold.operation_pages.len(), 1);
    assert_eq!(ids(&fold.operation_pages[0].operations), ["a", "b", "c"]);
    assert!(fold.operations.is_empty());
    // A failed fold changes nothing: the retry folds the same records again, in a new page.
    h.persist_with(canvas_scheduler_testing::MemoryStore::failure("AbortError"));
    assert_eq!(h.store.record_counts(), (0, 3));
    h.scheduler.resume(h.now);
    h.drain();
    // The resume's barrier goes first; the fold follows once the scheduler is quiet again.
    for _ in 0..3 {
        if h.persists
            .front()
            .is_some_and(|b| b.drop_operations.is_empty())
        {
            h.persist_next();
            h.drain();
        }
    }
    let retry = h.persists.front().cloned().expect("the retried fold");
    assert_eq!(retry.drop_operations, ["a", "b", "c"]);
    assert!(
        retry.operation_pages[0].no > fold.operation_pages[0].no,
        "a new number"
    );
    h.auto_persist = true;
    h.drain();
    assert_eq!(h.store.record_counts(), (1, 0), "a page of three");
    enqueue_one_by_one(&mut h, &["d"]);
    assert_eq!(h.store.record_counts(), (1, 1));
    // The folded copies are current: a restart loads all four; settling them later
    // supersedes the page copies as usual.
    let restarted = Harness::over(
        SchedulerConfig::default(),
        CountingHost::new("r"),
        h.store.clone(),
        h.now + 60_000,
    );
    let loaded: Vec<&str> = restarted
        .scheduler
        .ledger()
        .operations()
        .map(|op| op.intent.id.as_str())
        .collect();
    assert_eq!(loaded, ["a", "b", "c", "d"]);
    assert_eq!(restarted.scheduler.ledger().meta().last_sequence, 4);
    h.scheduler.release(h.now, hold);
    for _ in 0..4 {
        h.drain();
        h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
    }
    h.drain();
    h.advance(ACTIVE_MS);
    // Settled, they leave the working stores but for d, which holds the highest
    // sequence; the others are in the archive.
    let durable = h.store.snapshot();
    assert_eq!(durable.operations.len(), 1);
    assert_eq!(durable.operations[0].phase, OperationPhase::Resolved);
    assert_eq!(h.store.archived().count(), 3);
}

#[test]
fn s18_nothing_is_folded_while_requests_are_in_flight() {
    let mut h = harness_folding_at(2);
    enqueue_one_by_one(&mut h, &["a", "b", "c"]);
    // Dispatching (a is in flight, b and c wait for its canvas): no fold yet.
    assert!(!h.sent.is_empty());
    assert_eq!(h.store.record_counts(), (0, 3));
    for _ in 0..3 {
        h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
        h.drain();
    }
    // All settled: compacted once the user pauses but for c, which holds the
    // highest sequence, one record: nothing to fold.
    h.advance(ACTIVE_MS);
    assert_eq!(h.store.record_counts(), (0, 1));
}

#[test]
fn s18_a_loaded_ledger_of_records_is_folded_once_the_scheduler_is_quiet() {
    let mut h = harness_folding_at(0);
    let hold = h.scheduler.hold(h.now).unwrap();
    h.drain();
    let names: Vec<String> = (0..7).map(|i| format!("op{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    enqueue_one_by_one(&mut h, &names);
    h.scheduler.release(h.now, hold);
    assert_eq!(h.store.record_counts(), (0, 7));
    // A new session that folds at 2 folds the loaded records (up to a page a batch) as soon
    // as it is quiet. It sends one operation a request: op0 alone, the rest held.
    let config = SchedulerConfig {
        fold_records_at: 2,
        ..crate::common::unbatched()
    };
    let mut next = Harness::over(
        config,
        CountingHost::new("s"),
        h.store.clone(),
        h.now + 60_000,
    );
    next.start();
    let hold = next.scheduler.hold(next.now).unwrap();
    next.drain();
    // The start dispatched op0; once it is answered nothing is in flight (the rest is held).
    next.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
    next.drain();
    next.enqueue(vec![edit("late", &["d"])]).unwrap();
    next.drain();
    assert_eq!(
        next.store.record_counts(),
        (1, 1),
        "six folded (op0 settled and went), late's record stays"
    );
    let durable = next.store.snapshot();
    assert_eq!(durable.operations.len(), 7);
    let (_, folded) = durable.operation_pages.first_key_value().expect("one page");
    assert_eq!(folded.len(), 6);
    next.scheduler.release(next.now, hold);
}

fn text<T: Serialize + ?Sized>(value: &T) -> String {
    to_string(value)
}

#[test]
fn s18_first_writes_are_pages_and_settled_operations_retire_them() {
    let mut h = harness();
    let count = PAGE_LIMIT + 10;
    let intents = (0..count)
        .map(|i| edit(&format!("op{i:04}"), &["c"]))
        .collect();
    h.auto_persist = false;
    h.enqueue(intents).unwrap();
    let batch = h
        .persists
        .front()
        .cloned()
        .expect("an enqueue commits one batch");
    assert_eq!(
        batch.operation_pages.len(),
        2,
        "{count} operations, pages of {PAGE_LIMIT}"
    );
    assert!(batch.operations.is_empty(), "no record per operation");
    h.auto_persist = true;
    h.drain();
    assert_eq!(h.store.record_counts(), (2, 0));
    // Everything settles: each operation is written again as its own record, and the batch
    // superseding a page's last copy deletes the page.
    for _ in 0..count {
        h.drain();
        if h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied))
            .is_none()
        {
            break;
        }
    }
    h.drain();
    h.advance(ACTIVE_MS);
    // Settled, they leave the working stores: the pages went with their last
    // current copies, and only the one holding the highest sequence stays, as a record.
    let durable = h.store.snapshot();
    assert_eq!(durable.operations.len(), 1);
    assert_eq!(durable.operations[0].phase, OperationPhase::Resolved);
    assert_eq!(h.store.record_counts(), (0, 1));
    assert_eq!(h.store.archived().count(), count - 1);
}

#[test]
fn s18_a_restart_reads_pages_and_records_as_one_ledger() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"]), edit("b", &["y"])])
        .unwrap();
    h.drain();
    h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
    h.drain();
    assert_eq!(h.store.record_counts(), (1, 1), "b still only in its page");
    let restarted = Harness::over(
        SchedulerConfig::default(),
        CountingHost::new("r"),
        h.store.clone(),
        h.now + 60_000,
    );
    let ledger = restarted.scheduler.ledger();
    let phases: Vec<OperationPhase> = ["a", "b"]
        .iter()
        .map(|id| ledger.operation(id).unwrap().phase)
        .collect();
    assert_eq!(phases, [OperationPhase::Resolved, OperationPhase::Pending]);
    assert_eq!(ledger.meta().last_sequence, 2);
}

/// Pages as the loader reads them: `(page number, operations)`; odd pages in the packed form
/// this build writes, even ones as objects (pages of earlier builds), so both forms are read.
fn load(pages: Vec<(u64, Vec<Operation>)>, records: Vec<(String, String)>) -> LoadResult {
    let mut loader = LedgerLoader::new();
    loader
        .add_page(RecordStore::Operations, 100, records)
        .unwrap();
    let pages = pages
        .into_iter()
        .map(|(no, ops)| {
            let json = if no % 2 == 1 {
                text(&PackedPage(&ops))
            } else {
                text(&ops)
            };
            (no.to_string(), json)
        })
        .collect();
    loader
        .add_page(RecordStore::OperationPages, 100, pages)
        .unwrap();
    loader.finish()
}

type LoadResult = (
    canvas_scheduler_core::LedgerSnapshot,
    Vec<canvas_scheduler_core::Quarantined>,
);

fn two_pending() -> Vec<Operation> {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"]), edit("b", &["y"])])
        .unwrap();
    h.store.snapshot().operations
}

#[test]
fn d4_a_record_supersedes_its_page_copy_and_an_empty_page_is_marked_for_deletion() {
    let ops = two_pending();
    let mut newer = ops[0].clone();
    newer.blockers.push("host_hold".into());
    let (loaded, quarantined) = load(
        vec![(1, ops.clone()), (2, vec![ops[1].clone()])],
        vec![("a".into(), text(&newer))],
    );
    assert!(quarantined.is_empty(), "{quarantined:?}");
    assert_eq!(loaded.operations, vec![newer, ops[1].clone()]);
    assert_eq!(
        *homes_of(&loaded.operation_pages, 1).unwrap(),
        Vec::<String>::new(),
        "nothing current: delete"
    );
    assert_eq!(
        *homes_of(&loaded.operation_pages, 2).unwrap(),
        ["b"],
        "the newer page's copy of b"
    );
}

#[test]
fn d4_bad_pages_are_set_aside_whole_and_repeated_sequences_entry_by_entry() {
    let ops = two_pending();
    let mut loader = LedgerLoader::new();
    let mut twin = ops[1].clone();
    twin.intent.id = "c".into(); // b's sequence again
    let pages = vec![
        ("1".to_string(), text(&ops)),
        ("2".to_string(), "[]".to_string()),
        ("3".to_string(), text(&vec![ops[0].clone(), ops[0].clone()])),
        ("4".to_string(), "{\"not\": \"a page\"}".to_string()),
        ("5".to_string(), text(&vec![twin])),
    ];
    loader
        .add_page(RecordStore::OperationPages, 10, pages)
        .unwrap();
    let kept: Vec<&str> = loader
        .quarantined()
        .iter()
        .map(|q| q.key.as_str())
        .collect();
    assert_eq!(kept, ["2", "3", "4"]);
    let (loaded, quarantined) = loader.finish();
    assert_eq!(loaded.operations, ops);
    assert_eq!(quarantined.len(), 4, "{quarantined:?}");
    assert_eq!(quarantined[3].store, "operation_pages");
    assert_eq!(quarantined[3].key, "5/c");
    assert_eq!(
        *homes_of(&loaded.operation_pages, 5).unwrap(),
        ["c"],
        "kept: the page is the record"
    );
    let mut loader = LedgerLoader::new();
    let unordered = vec![("2".to_string(), text(&ops)), ("1".to_string(), text(&ops))];
    let error = loader
        .add_page(RecordStore::OperationPages, 10, unordered)
        .unwrap_err();
    assert_eq!(error.code(), "corrupt_record");
}

#[test]
fn d4_a_page_copy_whose_record_was_set_aside_loads_blocked_and_is_written_back() {
    let mut h = harness();
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    let ops = h.store.snapshot().operations;
    let (loaded, quarantined) = load(vec![(1, ops)], vec![("a".into(), "{\"intent\": 3}".into())]);
    assert_eq!(quarantined.len(), 1);
    assert_eq!(loaded.operations[0].blockers, ["record_quarantined"]);
    assert!(loaded.amended.contains("a"));
    // The first batch after the load writes it as a record, so the next load sees it blocked
    // even though the set-aside record has left the store.
    let mut ledger = canvas_scheduler_core::Ledger::from_records(loaded, 100);
    let batch = ledger.take_batch(1, Some(1), None, false);
    let written: Vec<(&str, &[String])> = batch
        .operations
        .iter()
        .map(|op| (op.intent.id.as_str(), op.blockers.as_slice()))
        .collect();
    assert_eq!(written, [("a", &["record_quarantined".to_string()][..])]);
    assert_eq!(
        batch.drop_operation_pages,
        [1],
        "its page held nothing else"
    );
}
