//! The IndexedDB ledger store against real browser storage: round trips, the K2 fence, and
//! injected storage faults (W1, W5). Each result is compared with the in-memory store, whose
//! semantics the IndexedDB store must reproduce exactly.

use canvas_scheduler::core::io::{LeaseWrite, PersistBatch, PersistFailure, PersistResult};
use canvas_scheduler::core::model::{
    BlobRef, LedgerMeta, OperationOutcome, RetryAction, Settlement,
};
use canvas_scheduler::core::safe_error::SafeError;
use canvas_scheduler::testing::MemoryStore;
use canvas_scheduler::web::store::{schema, AcquireError, IdbLedger, StoreFault};
use serde_json::json;
use wasm_bindgen_test::wasm_bindgen_test;

use super::store_support::{
    acquire, batch, db_name, event, lease_of, operation, operations_batch, raw_keys, request,
    MAX_SAFE,
};
use super::support::delete_database;

/// A batch exercising every field: nested payloads, optional fields, u64 up to 2^53 - 1,
/// events with a trim, meta and a lease renewal.
fn full_batch(fence: u64) -> PersistBatch {
    let mut rich = operation("op-1", 1);
    rich.intent.payload = json!({
        "deep": {"list": [1, -2, 3.25, "x", {"k": [true, false, null]}], "max": MAX_SAFE},
        "empty": {}, "text": "é ✓ 😀"
    });
    rich.intent.expected_versions.insert("c1".into(), MAX_SAFE);
    rich.intent.run_id = Some("run-1".into());
    rich.intent.coalesce_key = Some("shape:1".into());
    rich.intent.principal = Some("user:1".into());
    rich.intent.revision = 3;
    rich.intent.blob = Some(BlobRef {
        id: "blob-1".into(),
        size: MAX_SAFE,
        media_type: "image/png".into(),
        name: Some("a.png".into()),
    });
    rich.request_id = Some("req-1".into());
    rich.blockers = vec!["held".into()];
    let mut settled = operation("op-2", 2);
    settled.outcome = Some(OperationOutcome {
        settlement: Settlement::Rejected,
        request_id: None,
        error: Some(SafeError::new("conflict", "version").with_details(json!({"v": 7}))),
        canonical: Some(json!({"shape": {"x": 9}})),
        at: MAX_SAFE,
    });
    let mut req = request("req-1", "op-1");
    req.retry_at = Some(MAX_SAFE);
    req.retry_action = Some(RetryAction::Query);
    req.attempt = 4;
    req.canonical = Some(json!([1, {"a": "b"}]));
    PersistBatch {
        lease: Some(LeaseWrite::Renew { expires_at: 50_000 }),
        operations: vec![rich, settled],
        requests: vec![req],
        events: (1..=5).map(event).collect(),
        trim_events_below: Some(3),
        meta: Some(LedgerMeta {
            last_sequence: 2,
            last_event_seq: 5,
        }),
        ..batch(Some(fence))
    }
}

#[wasm_bindgen_test]
async fn w1_apply_then_load_round_trips_exactly_like_the_memory_store() {
    let name = db_name("roundtrip");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let mut memory = MemoryStore::default();

    let loaded = acquire(&ledger, "tab-a", 1_000).await;
    let lease = memory
        .acquire("tab-a", 1_000, 10_000)
        .expect("memory acquire");
    assert_eq!(loaded.snapshot.lease, Some(lease.clone()));
    assert_eq!(lease.fence, 1);
    assert!(loaded.quarantined.is_empty());

    let written = full_batch(lease.fence);
    let result = ledger.apply(&written).await;
    assert_eq!(result, memory.apply(&written));
    assert_eq!(lease_of(&result).map(|l| l.expires_at), Some(50_000));

    // A new handle (a reload) reads back exactly the same Rust values.
    drop(ledger);
    let ledger = IdbLedger::open(&name).await.expect("reopen");
    let reloaded = acquire(&ledger, "tab-a", 2_000).await;
    memory
        .acquire("tab-a", 2_000, 10_000)
        .expect("memory reacquire");
    assert_eq!(reloaded.snapshot, memory.snapshot());
    assert_eq!(reloaded.snapshot.operations, written.operations);
    assert_eq!(reloaded.snapshot.requests, written.requests);
    // The batch's events are one page keyed by its last seq; a trim drops whole pages only,
    // so the page ending at 5 stays (a ledger keeps its newest `event_limit` of them).
    let seqs: Vec<u64> = reloaded.snapshot.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
    let keys = raw_keys(&name, schema::EVENTS).await;
    assert_eq!(
        keys.iter().map(|k| k.as_f64()).collect::<Vec<_>>(),
        [Some(5.0)]
    );
    let fence = reloaded.snapshot.lease.as_ref().map(|l| l.fence);
    assert_eq!(fence, Some(2));

    // The next page, with a trim above the first page's end: that page goes, whole.
    let later = PersistBatch {
        events: (6..=7).map(event).collect(),
        trim_events_below: Some(6),
        ..batch(fence)
    };
    assert_eq!(ledger.apply(&later).await, memory.apply(&later));
    let keys = raw_keys(&name, schema::EVENTS).await;
    assert_eq!(
        keys.iter().map(|k| k.as_f64()).collect::<Vec<_>>(),
        [Some(7.0)]
    );
    let again = acquire(&ledger, "tab-a", 3_000).await;
    memory
        .acquire("tab-a", 3_000, 10_000)
        .expect("memory reacquire");
    assert_eq!(again.snapshot, memory.snapshot());
    let seqs: Vec<u64> = again.snapshot.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![6, 7]);
    ledger.close();
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn k2_a_stale_or_missing_fence_is_refused_and_writes_nothing() {
    let name = db_name("fence");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let a = acquire(&ledger, "tab-a", 1_000).await.snapshot.lease;

    // Another owner cannot take a live lease.
    let held = ledger
        .acquire_and_load("tab-b", 5_000, 10_000, 10, false)
        .await;
    assert_eq!(held, Err(AcquireError::Held(a.clone())));

    // The holder writes under its fence; a batch without a fence is refused.
    let written = ledger.apply(&operations_batch(1, 1, 1)).await;
    assert_eq!(lease_of(&written), a);
    let no_fence = PersistBatch {
        fence: None,
        ..operations_batch(1, 1, 1)
    };
    assert_eq!(
        ledger.apply(&no_fence).await,
        PersistResult::Failed(PersistFailure::Fenced { current: a.clone() })
    );

    // After expiry (expires_at <= now) another owner takes it with the next fence.
    let b = acquire(&ledger, "tab-b", 11_000).await;
    let b_lease = b.snapshot.lease.clone().expect("b holds the lease");
    assert_eq!((b_lease.owner.as_str(), b_lease.fence), ("tab-b", 2));
    assert_eq!(
        b.snapshot.operations.len(),
        1,
        "op written under fence 1 stays"
    );

    // tab-a's stale write (and renewal) is refused; nothing of it lands.
    let stale = PersistBatch {
        lease: Some(LeaseWrite::Renew { expires_at: 99_999 }),
        ..operations_batch(1, 2, 3)
    };
    assert_eq!(
        ledger.apply(&stale).await,
        PersistResult::Failed(PersistFailure::Fenced {
            current: Some(b_lease.clone())
        })
    );
    let after = acquire(&ledger, "tab-b", 12_000).await.snapshot;
    assert_eq!(after.operations.len(), 1);
    assert_eq!(
        after.lease.map(|l| (l.fence, l.expires_at)),
        Some((3, 22_000))
    );
    ledger.close();
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn w5_quota_and_aborted_transactions_fail_whole_and_the_next_apply_succeeds() {
    let name = db_name("faults");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire(&ledger, "tab-a", 1_000)
        .await
        .snapshot
        .lease
        .map(|l| l.fence);
    let fence = fence.expect("lease");
    let first = ledger.apply(&operations_batch(fence, 1, 2)).await;
    assert!(matches!(first, PersistResult::Done { .. }), "{first:?}");

    let big = PersistBatch {
        lease: Some(LeaseWrite::Renew { expires_at: 77_777 }),
        events: vec![event(1)],
        ..operations_batch(fence, 3, 50)
    };
    for (fault, code) in [
        (StoreFault::QuotaOnNextWrite, "QuotaExceededError"),
        (StoreFault::AbortNextTransaction, "AbortError"),
        (StoreFault::CloseConnection, "storage_unavailable"),
    ] {
        ledger.inject(fault);
        match ledger.apply(&big).await {
            PersistResult::Failed(PersistFailure::Storage(error)) => {
                assert_eq!(error.code, code, "{fault:?}: {error:?}")
            }
            other => panic!("{fault:?}: expected a storage failure, got {other:?}"),
        }
        if fault == StoreFault::CloseConnection {
            assert!(!ledger.is_open());
            ledger.reopen().await.expect("reopen after close");
        }
    }

    // A record that cannot be stored (u64 above 2^53 - 1) fails the batch before writing.
    let mut huge = operations_batch(fence, 3, 1);
    huge.operations[0]
        .intent
        .expected_versions
        .insert("c1".into(), MAX_SAFE + 1);
    huge.events = vec![event(9)];
    match ledger.apply(&huge).await {
        PersistResult::Failed(PersistFailure::Storage(e)) => {
            assert_eq!(e.code, "unserializable_record")
        }
        other => panic!("expected unserializable_record, got {other:?}"),
    }

    // Nothing of the failed batches landed; the store is as after the first batch.
    let fresh = IdbLedger::open(&name).await.expect("second handle");
    let seen = acquire(&fresh, "tab-a", 2_000).await.snapshot;
    assert_eq!(seen.operations.len(), 2);
    assert!(seen.events.is_empty());
    assert_eq!(seen.lease.as_ref().map(|l| l.expires_at), Some(12_000));
    fresh.close();

    // The next apply (with the current fence) succeeds.
    let fence = seen.lease.map(|l| l.fence).expect("lease");
    let next = ledger.apply(&big).await;
    assert!(matches!(
        next,
        PersistResult::Failed(PersistFailure::Fenced { .. })
    ));
    let retried = ledger
        .apply(&PersistBatch {
            fence: Some(fence),
            ..big
        })
        .await;
    assert_eq!(lease_of(&retried).map(|l| l.expires_at), Some(77_777));
    let last = acquire(&ledger, "tab-a", 3_000).await.snapshot;
    assert_eq!((last.operations.len(), last.events.len()), (52, 1));
    ledger.close();
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn w1_blobs_are_stored_beside_the_ledger() {
    let name = db_name("blobs");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str("png bytes"));
    let blob = web_sys::Blob::new_with_str_sequence(&parts).expect("blob");
    ledger
        .put_blob("blob-1", &blob, "image/png")
        .await
        .expect("put");
    let read = ledger
        .get_blob("blob-1")
        .await
        .expect("get")
        .expect("present");
    assert_eq!(read.size(), 9.0);
    let text = wasm_bindgen_futures::JsFuture::from(read.text())
        .await
        .expect("text");
    assert_eq!(text.as_string().as_deref(), Some("png bytes"));
    assert_eq!(
        ledger.get_blob("absent").await.map(|b| b.is_none()),
        Ok(true)
    );
    ledger.inject(StoreFault::QuotaOnNextWrite);
    let full = ledger.put_blob("blob-2", &blob, "image/png").await;
    assert_eq!(
        full.map_err(|e| e.code),
        Err("QuotaExceededError".to_owned())
    );
    assert_eq!(
        ledger.get_blob("blob-2").await.map(|b| b.is_none()),
        Ok(true)
    );
    ledger.close();
    delete_database(&name).await;
}
