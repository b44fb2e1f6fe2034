//! Group commit in real IndexedDB (W1): a whole batch is one transaction. Timings are
//! printed (run with `-- --nocapture`) for BENCHMARKS.md, never asserted.

use canvas_scheduler::core::io::PersistResult;
use canvas_scheduler::web::store::IdbLedger;
use wasm_bindgen_test::{console_log, wasm_bindgen_test};

use super::store_support::{acquire, acquire_fence, db_name, operations_batch};
use super::support::delete_database;

fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Writes `total` operations in transactions of `per_tx` records; returns elapsed ms.
async fn write_in_batches(
    ledger: &IdbLedger,
    fence: u64,
    first: u64,
    total: u64,
    per_tx: u64,
) -> f64 {
    let start = now_ms();
    let mut next = first;
    while next < first + total {
        let result = ledger.apply(&operations_batch(fence, next, per_tx)).await;
        assert!(matches!(result, PersistResult::Done { .. }), "{result:?}");
        next += per_tx;
    }
    now_ms() - start
}

#[wasm_bindgen_test]
async fn w1_a_batch_of_500_operations_is_one_transaction() {
    let name = db_name("group-commit");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;

    let before = ledger.transactions();
    let grouped_ms = write_in_batches(&ledger, fence, 1, 500, 500).await;
    assert_eq!(ledger.transactions() - before, 1);

    let before = ledger.transactions();
    let single_ms = write_in_batches(&ledger, fence, 501, 500, 1).await;
    assert_eq!(ledger.transactions() - before, 500);

    let load_start = now_ms();
    let loaded = acquire(&ledger, "tab-a", 2_000).await.snapshot;
    let load_ms = now_ms() - load_start;
    assert_eq!(loaded.operations.len(), 1_000);
    assert!(loaded
        .operations
        .windows(2)
        .all(|w| w[0].intent.sequence < w[1].intent.sequence));
    console_log!(
        "[store-bench {}] 500 ops: one transaction {grouped_ms:.0} ms, 500 transactions {single_ms:.0} ms; acquire_and_load of 1000 ops (pages of 7) {load_ms:.0} ms",
        crate::EXPECTED_GLOBAL
    );
    ledger.close();
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn w1_records_per_second_single_vs_100_record_transactions() {
    let name = db_name("throughput");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
    let total = 300;
    let single_ms = write_in_batches(&ledger, fence, 1, total, 1).await;
    let grouped_ms = write_in_batches(&ledger, fence, 1 + total, total, 100).await;
    let rate = |ms: f64| total as f64 / (ms.max(0.001) / 1_000.0);
    console_log!(
        "[store-bench {}] {total} records: 1-record transactions {:.0} records/s ({single_ms:.0} ms), 100-record transactions {:.0} records/s ({grouped_ms:.0} ms)",
        crate::EXPECTED_GLOBAL,
        rate(single_ms),
        rate(grouped_ms)
    );
    let loaded = acquire(&ledger, "tab-a", 2_000).await.snapshot;
    assert_eq!(loaded.operations.len(), 2 * total as usize);
    ledger.close();
    delete_database(&name).await;
}
