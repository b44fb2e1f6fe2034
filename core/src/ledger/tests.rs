//! The ledger's own tests: page homes at load, replacement chains and compaction.

use super::load::page_homes;
use super::*;
use crate::io::PersistBatch;

fn op(id: &str, sequence: u64) -> Operation {
    crate::test_support::pending_upsert(id, sequence, "c")
}

#[test]
fn page_homes_match_listed_ids_of_ordered_operations() {
    let pages = PageHomes::from([
        (4, vec!["b".into(), "d".into(), "gone".into()]),
        (9, vec!["a".into(), "c".into()]),
        (11, vec!["c".into()]),
    ]);
    let in_order = [op("a", 1), op("b", 2), op("c", 3), op("d", 4), op("e", 5)];
    assert_eq!(
        page_homes(&in_order, &pages),
        Some(vec![
            Home::Page(9),
            Home::Page(4),
            Home::Page(11),
            Home::Page(4),
            Home::Record
        ])
    );
    let shuffled = [op("b", 2), op("a", 1)];
    assert_eq!(
        page_homes(&shuffled, &pages),
        None,
        "searched by the caller"
    );
    assert_eq!(page_homes(&[], &pages), Some(Vec::new()));
    assert_eq!(
        page_homes(&in_order[..1], &PageHomes::new()),
        Some(vec![Home::Record])
    );
}

#[test]
fn a_snapshot_out_of_id_order_loads_with_the_same_homes() {
    let pages = PageHomes::from([(4, vec!["b".into()]), (9, vec!["a".into()])]);
    let snapshot = |operations: Vec<Operation>| LedgerSnapshot {
        operations,
        operation_pages: pages.clone(),
        ..LedgerSnapshot::default()
    };
    let ordered = Ledger::from_records(snapshot(vec![op("a", 1), op("b", 2), op("c", 3)]), 10);
    let shuffled = Ledger::from_records(snapshot(vec![op("c", 3), op("b", 2), op("a", 1)]), 10);
    for ledger in [&ordered, &shuffled] {
        let snap = ledger.snapshot();
        assert_eq!(snap.operation_pages, pages);
        assert_eq!(ledger.operations().count(), 3);
    }
}

fn replaced(ledger: &mut Ledger, id: &str, by: &str) {
    let details = crate::json_text::JsonText::member(REPLACED_BY, by);
    ledger.resolve_operation(
        id,
        OperationOutcome {
            settlement: crate::model::Settlement::Discarded,
            request_id: None,
            error: Some(
                crate::safe_error::SafeError::new(SUPERSEDED, "replaced").with_details(details),
            ),
            canonical: None,
            at: 1,
        },
    );
}

/// Writes everything changed in one batch and confirms it, with a slice when `compact`.
fn commit(ledger: &mut Ledger, no: BatchNo, compact: Option<Millis>) -> PersistBatch {
    let compact = compact.map(|now| Compact { now, window: false });
    let batch = ledger.take_batch_at(no, None, None, false, compact);
    ledger.confirm_batch(no);
    batch
}

#[test]
fn a_supersede_leaves_a_stalled_ledger_stalled_until_the_chain_it_extends_settles() {
    let mut ledger = Ledger::new(100);
    ledger.set_retention(crate::retention::RetentionPolicy::default());
    ledger.insert_operation(op("a", 1));
    ledger.insert_operation(op("b", 2));
    replaced(&mut ledger, "a", "b");
    commit(&mut ledger, 1, None);
    assert!(
        ledger.wants_compaction(10),
        "a is settled and past the policy"
    );
    let batch = commit(&mut ledger, 2, Some(10));
    assert!(
        batch.tombstones.is_empty(),
        "a's chain ends in b, unsettled"
    );
    assert!(!ledger.wants_compaction(11), "stalled: nothing may go");
    // A drag: b replaced by c, a frame later. Still nothing may go (the chain ends in c).
    ledger.insert_operation(op("c", 3));
    replaced(&mut ledger, "b", "c");
    commit(&mut ledger, 3, None);
    assert!(
        !ledger.wants_compaction(12),
        "a supersede runs no slice that must find nothing"
    );
    // The chain's end settles: the slice runs and takes the chain (but c, which holds the
    // ledger's highest sequence).
    ledger.resolve_operation(
        "c",
        OperationOutcome {
            settlement: crate::model::Settlement::Applied,
            request_id: None,
            error: None,
            canonical: None,
            at: 13,
        },
    );
    commit(&mut ledger, 4, None);
    assert!(ledger.wants_compaction(14));
    let batch = commit(&mut ledger, 5, Some(14));
    let mut gone: Vec<&str> = batch.tombstones.iter().map(|t| t.id.as_str()).collect();
    gone.sort_unstable();
    assert_eq!(gone, ["a", "b"]);
}

#[test]
fn a_dependency_on_a_replaced_operation_targets_the_end_of_its_chain() {
    let mut ledger = Ledger::new(100);
    for (i, id) in ["a", "b", "c", "x", "y"].into_iter().enumerate() {
        ledger.insert_operation(op(id, i as u64 + 1));
    }
    replaced(&mut ledger, "a", "b");
    replaced(&mut ledger, "b", "c");
    assert_eq!(ledger.dependency_target("a"), "c");
    assert_eq!(ledger.dependency_target("c"), "c");
    assert!(!ledger.dependency_met("a"), "c is still pending");
    // Corrupt storage: a cycle ends after as many hops as there are operations.
    replaced(&mut ledger, "x", "y");
    replaced(&mut ledger, "y", "x");
    assert!(["x", "y"].contains(&ledger.dependency_target("x")));
}
