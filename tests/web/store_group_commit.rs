//! Group commit in real IndexedDB (W1): a whole batch is one transaction. (What it costs is
//! measured by `npm run bench`: raw 1- and 100-record transactions, durable operations/s.)

use canvas_scheduler::core::io::PersistResult;
use canvas_scheduler::web::store::IdbLedger;
use wasm_bindgen_test::wasm_bindgen_test;

use super::store_support::{acquire, acquire_fence, db_name, operations_batch};
use super::support::delete_database;

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
