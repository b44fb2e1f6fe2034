//! Group commit in real IndexedDB: a whole batch is one transaction. (What it costs is
//! measured by `npm run bench`: raw 1- and 100-record transactions, durable operations/s.)

use canvas_scheduler::web::store::IdbLedger;
use canvas_scheduler_core::{PersistBatch, PersistResult};
use wasm_bindgen_test::wasm_bindgen_test;

use super::store_support::{acquire, acquire_fence, db_name, operations_batch};
use super::support::{delete_database, js};

/// Writes `total` operations in transactions of `per_tx` records.
async fn write_in_batches(ledger: &IdbLedger, fence: u64, first: u64, total: u64, per_tx: u64) {
    let mut next = first;
    while next < first + total {
        let result = ledger.apply(&operations_batch(fence, next, per_tx)).await;
        assert!(matches!(result, PersistResult::Done { .. }), "{result:?}");
        next += per_tx;
    }
}

#[wasm_bindgen_test]
async fn w1_a_batch_of_500_operations_is_one_transaction() {
    let name = db_name("group-commit");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;

    let before = ledger.transactions();
    write_in_batches(&ledger, fence, 1, 500, 500).await;
    assert_eq!(ledger.transactions() - before, 1);

    let before = ledger.transactions();
    write_in_batches(&ledger, fence, 501, 500, 1).await;
    assert_eq!(ledger.transactions() - before, 500);

    let loaded = acquire(&ledger, "tab-a", 2_000).await.snapshot;
    assert_eq!(loaded.operations.len(), 1_000);
    assert!(loaded
        .operations
        .windows(2)
        .all(|w| w[0].intent.sequence < w[1].intent.sequence));
    ledger.close();
    delete_database(&name).await;
}

/// A batch the core marks relaxed (only what a query recovers) opens its transaction with
/// `durability: "relaxed"`; any other, `"strict"`. Both land alike. (Which batches the core
/// marks is tests/behaviour/durability_behaviour.rs; a power loss dropping relaxed ones, the simulation.)
#[wasm_bindgen_test]
async fn w1_a_relaxed_batch_commits_relaxed_and_a_strict_one_strict() {
    let name = db_name("durability");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
    // Every readwrite transaction's durability, as the page asks for it.
    js("(() => {
          globalThis.durabilities = [];
          const open = IDBDatabase.prototype.transaction;
          globalThis.restoreTransaction = () => { IDBDatabase.prototype.transaction = open; };
          IDBDatabase.prototype.transaction = function (stores, mode, options) {
            if (mode === 'readwrite') globalThis.durabilities.push(options?.durability ?? 'default');
            return open.call(this, stores, mode, options);
          };
        })()");
    let relaxed_before = ledger.relaxed_batches();
    let relaxed = PersistBatch {
        relaxed: true,
        ..operations_batch(fence, 1, 2)
    };
    let first = ledger.apply(&relaxed).await;
    let second = ledger.apply(&operations_batch(fence, 3, 2)).await;
    let asked =
        js("(() => { globalThis.restoreTransaction(); return globalThis.durabilities; })()");
    assert!(matches!(first, PersistResult::Done { .. }), "{first:?}");
    assert!(matches!(second, PersistResult::Done { .. }), "{second:?}");
    let asked: Vec<String> = js_sys::Array::from(&asked)
        .iter()
        .filter_map(|d| d.as_string())
        .collect();
    assert_eq!(asked, ["relaxed", "strict"]);
    assert_eq!(ledger.relaxed_batches() - relaxed_before, 1);
    let loaded = acquire(&ledger, "tab-a", 2_000).await.snapshot;
    assert_eq!(loaded.operations.len(), 4);
    ledger.close();
    delete_database(&name).await;
}
