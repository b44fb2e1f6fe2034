//! The IndexedDB ledger store against real browser storage: round trips, the lease's fence, and
//! injected storage faults. Each result is compared with the in-memory store, whose
//! semantics the IndexedDB store must reproduce exactly.

use canvas_scheduler::web::store::{schema, AcquireError, IdbLedger, InboxEntry, StoreFault};
use canvas_scheduler_core::{
    intent::IntentInput,
    operation_pages::{homes_of, OperationPage},
    BlobRef, LeaseWrite, LedgerSnapshot, Operation, OperationOutcome, PersistBatch, PersistFailure,
    PersistResult, RetryAction, SafeError, SchedulerError, Settlement,
};
use canvas_scheduler_testing::MemoryStore;
use js_sys::Reflect;
use serde_json::json;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

use super::store_support::{
    acquire, acquire_fence, batch, db_name, event, lease_of, operation, operations_batch,
    raw_delete, raw_get, raw_keys, raw_put, request, MAX_SAFE,
};
use super::support::delete_database;

/// A batch exercising every field: nested payloads, optional fields, u64 up to 2^53 - 1,
/// events with a trim, a page of operations and a lease renewal.
fn full_batch(fence: u64) -> PersistBatch {
    let mut rich = operation("op-1", 1);
    rich.intent.payload = json!({
        "deep": {"list": [1, -2, 3.25, "x", {"k": [true, false, null]}], "max": MAX_SAFE},
        "empty": {}, "text": "é ✓ 😀"
    })
    .into();
    rich.intent.expected_versions.insert("c1".into(), MAX_SAFE);
    rich.intent.run_id = Some("run-1".into());
    rich.intent.coalesce_key = Some("shape:1".into());
    rich.intent.principal = Some("user:1".into());
    rich.intent.revision = 3;
    rich.intent.blob = Some(Box::new(BlobRef {
        id: "blob-1".into(),
        size: MAX_SAFE,
        media_type: "image/png".into(),
        name: Some("a.png".into()),
    }));
    rich.request_id = Some("req-1".into());
    rich.blockers = vec!["held".into()];
    let mut settled = operation("op-2", 2);
    settled.outcome = Some(Box::new(OperationOutcome {
        settlement: Settlement::Rejected,
        request_id: None,
        error: Some(SafeError::new("conflict", "version").with_details(json!({"v": 7}).into())),
        canonical: Some(json!({"shape": {"x": 9}}).into()),
        at: MAX_SAFE,
    }));
    let mut req = request("req-1", "op-1");
    req.retry_at = Some(MAX_SAFE);
    req.retry_action = Some(RetryAction::Query);
    req.attempt = 4;
    req.canonical = Some(json!([1, {"a": "b"}]).into());
    PersistBatch {
        lease: Some(LeaseWrite::Renew { expires_at: 50_000 }),
        operations: vec![rich, settled],
        requests: vec![req],
        events: (1..=5).map(event).collect(),
        trim_events_below: Some(3),
        operation_pages: vec![OperationPage {
            no: 1,
            operations: vec![operation("op-3", 3), operation("op-4", 4)],
        }],
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
    // Meta is derived at load (no store holds it since schema 5): the loader takes the highest
    // sequence it read; the memory store keeps what it was given.
    assert_eq!(reloaded.snapshot.meta.last_sequence, 4);
    // The load reads the event log only to set aside what is not its own: it keeps none of it,
    // and `events()` reads it when asked.
    let same_meta = |mut snapshot: LedgerSnapshot| {
        snapshot.meta = reloaded.snapshot.meta.clone();
        snapshot.events.clear();
        snapshot
    };
    assert_eq!(reloaded.snapshot, same_meta(memory.snapshot()));
    assert_eq!(
        reloaded.snapshot.meta.last_event_seq,
        memory.snapshot().events.last().map_or(0, |e| e.seq)
    );
    assert_eq!(
        ledger.events_after(0, 1_000).await.expect("events"),
        memory.snapshot().events
    );
    let mut operations = written.operations.clone();
    operations.extend(written.operation_pages[0].operations.clone());
    assert_eq!(reloaded.snapshot.operations, operations);
    assert_eq!(
        *homes_of(&reloaded.snapshot.operation_pages, 1).unwrap(),
        ["op-3", "op-4"]
    );
    // The page as stored: its ids (for the `by_operation` index) beside its JSON text.
    let page = raw_get(&name, schema::OPERATION_PAGES, JsValue::from_f64(1.0)).await;
    let ids = page
        .as_ref()
        .map(|p| Reflect::get(p, &"ids".into()).unwrap());
    assert_eq!(ids.map(|ids| js_sys::Array::from(&ids).length()), Some(2));
    let json = page
        .as_ref()
        .map(|p| Reflect::get(p, &"json".into()).unwrap());
    assert!(
        json.is_some_and(|j| j.is_instance_of::<js_sys::Uint8Array>()),
        "a page's operations are stored as UTF-8 bytes"
    );
    assert_eq!(reloaded.snapshot.requests, written.requests);
    // The batch's events are one page keyed by its last seq; a trim drops whole pages only,
    // so the page ending at 5 stays (a ledger keeps its newest `event_limit` of them).
    let events = ledger.events_after(0, 100).await.expect("events");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
    let keys = raw_keys(&name, schema::EVENTS).await;
    assert_eq!(
        keys.iter().map(|k| k.as_f64()).collect::<Vec<_>>(),
        [Some(5.0)]
    );
    let fence = reloaded.snapshot.lease.as_ref().map(|l| l.fence);
    assert_eq!(fence, Some(2));

    // The next page, with a trim above the first page's end: that page goes, whole.
    // It also writes op-3 again (its record supersedes the page copy) and, after that, op-4
    // with the page's deletion.
    let mut op3 = operation("op-3", 3);
    op3.blockers = vec!["held".into()];
    let later = PersistBatch {
        events: (6..=7).map(event).collect(),
        trim_events_below: Some(6),
        operations: vec![op3.clone()],
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
    let mut expected = memory.snapshot();
    expected.meta = again.snapshot.meta.clone();
    expected.events.clear();
    assert_eq!(again.snapshot, expected);
    assert_eq!(again.snapshot.meta.last_event_seq, 7);
    let events = ledger.events_after(0, 100).await.expect("events");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![6, 7]);
    let after_six = ledger.events_after(6, 100).await.expect("events");
    assert_eq!(after_six.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![7]);
    assert_eq!(
        *homes_of(&again.snapshot.operation_pages, 1).unwrap(),
        ["op-4"]
    );
    assert!(again.snapshot.operations.contains(&op3));
    let fence = again.snapshot.lease.as_ref().map(|l| l.fence);
    let last = PersistBatch {
        operations: vec![operation("op-4", 4)],
        drop_operation_pages: vec![1],
        ..batch(fence)
    };
    assert_eq!(ledger.apply(&last).await, memory.apply(&last));
    assert!(raw_keys(&name, schema::OPERATION_PAGES).await.is_empty());
    let end = acquire(&ledger, "tab-a", 4_000).await;
    memory
        .acquire("tab-a", 4_000, 10_000)
        .expect("memory reacquire");
    let mut expected = memory.snapshot();
    expected.meta = end.snapshot.meta.clone();
    expected.events.clear();
    assert_eq!(end.snapshot, expected);
    assert_eq!(end.snapshot.operations.len(), 4);
    ledger.close();
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn s18_a_fold_moves_records_into_a_page_in_one_transaction() {
    let name = db_name("fold");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let mut memory = MemoryStore::default();
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
    memory
        .acquire("tab-a", 1_000, 10_000)
        .expect("memory acquire");
    let records = operations_batch(fence, 1, 3);
    assert_eq!(ledger.apply(&records).await, memory.apply(&records));
    // The fold: the three records as a page, their records deleted, beside the batch's own
    // record write.
    let folded = records.operations.clone();
    let fold = PersistBatch {
        operation_pages: vec![OperationPage {
            no: 1,
            operations: folded.clone(),
        }],
        drop_operations: folded.iter().map(|op| op.intent.id.clone()).collect(),
        operations: vec![operation("op-000004", 4)],
        ..batch(Some(fence))
    };
    assert_eq!(ledger.apply(&fold).await, memory.apply(&fold));
    let keys = raw_keys(&name, schema::OPERATIONS).await;
    assert_eq!(
        keys.iter().map(|k| k.as_string()).collect::<Vec<_>>(),
        [Some("op-000004".to_owned())],
        "the folded records are gone"
    );
    let reloaded = acquire(&ledger, "tab-a", 2_000).await;
    memory
        .acquire("tab-a", 2_000, 10_000)
        .expect("memory reacquire");
    let mut expected = memory.snapshot();
    expected.meta = reloaded.snapshot.meta.clone();
    assert_eq!(reloaded.snapshot, expected);
    assert_eq!(reloaded.snapshot.operations.len(), 4);
    assert_eq!(
        *homes_of(&reloaded.snapshot.operation_pages, 1).unwrap(),
        ["op-000001", "op-000002", "op-000003"]
    );
    // A fold under a stale fence writes nothing: the records stay.
    let stale = PersistBatch {
        operation_pages: vec![OperationPage {
            no: 2,
            operations: vec![operation("op-000004", 4)],
        }],
        drop_operations: vec!["op-000004".into()],
        ..batch(Some(fence))
    };
    assert!(matches!(
        ledger.apply(&stale).await,
        PersistResult::Failed(PersistFailure::Fenced { .. })
    ));
    assert_eq!(raw_keys(&name, schema::OPERATIONS).await.len(), 1);
    assert_eq!(raw_keys(&name, schema::OPERATION_PAGES).await.len(), 1);
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

/// A lease record whose fence a take-over cannot raise (saturated at 2^53 - 1, a float
/// beyond it, negative, a string) made every open fail `storage_unavailable` (the next fence
/// was not storable). It is set aside, the fence starts again from 1 (writes are checked
/// for equality, so 1 still shuts the record's holder out), and the ledger opens and writes.
#[wasm_bindgen_test]
async fn k2_d4_a_lease_whose_fence_cannot_rise_is_set_aside_and_the_ledger_opens() {
    let cases = [
        ("saturated", "9007199254740991"),
        ("huge", "1e300"),
        ("negative", "-1"),
        ("text", "\"7\""),
    ];
    for (tag, fence) in cases {
        let name = db_name(&format!("lease-fence-{tag}"));
        let ledger = IdbLedger::open(&name).await.expect("open");
        let first = acquire_fence(&ledger, "tab-a", 1_000).await;
        let stored = ledger.apply(&operations_batch(first, 1, 1)).await;
        assert!(matches!(stored, PersistResult::Done { .. }), "{stored:?}");
        let lease_key = JsValue::from_str(schema::LEASE_KEY);
        let record = format!(r#"{{"owner":"tab-z","fence":{fence},"expiresAt":0}}"#);
        raw_put(
            &name,
            schema::LEASE,
            lease_key.clone(),
            JsValue::from_str(&record),
        )
        .await;

        let loaded = acquire(&ledger, "tab-b", 2_000).await;
        assert_eq!(
            loaded.quarantined.len(),
            1,
            "{tag}: {:?}",
            loaded.quarantined
        );
        assert_eq!(loaded.quarantined[0].store, schema::LEASE, "{tag}");
        assert_eq!(
            loaded.snapshot.operations.len(),
            1,
            "{tag}: the ledger opened"
        );
        let lease = loaded.snapshot.lease.expect("a lease was taken");
        assert_eq!((lease.owner.as_str(), lease.fence), ("tab-b", 1), "{tag}");
        let quarantined = raw_keys(&name, schema::QUARANTINE).await;
        assert_eq!(
            quarantined.len(),
            1,
            "{tag}: the record was moved to quarantine"
        );
        let written = ledger.apply(&operations_batch(1, 2, 1)).await;
        assert!(
            matches!(written, PersistResult::Done { .. }),
            "{tag}: {written:?}"
        );
        ledger.close();
        delete_database(&name).await;
    }
}

#[wasm_bindgen_test]
async fn k2_an_unreadable_or_deleted_lease_record_refuses_the_whole_batch() {
    let name = db_name("lease-gone");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
    let first = ledger.apply(&operations_batch(fence, 1, 1)).await;
    assert!(matches!(first, PersistResult::Done { .. }), "{first:?}");
    let lease_key = JsValue::from_str(schema::LEASE_KEY);
    let renewing = |first_sequence| PersistBatch {
        lease: Some(LeaseWrite::Renew { expires_at: 99_999 }),
        events: vec![event(first_sequence)],
        ..operations_batch(fence, first_sequence, 3)
    };

    // A lease record that is not a lease counts as none: nobody's fence matches it.
    raw_put(
        &name,
        schema::LEASE,
        lease_key.clone(),
        JsValue::from_str("not a lease"),
    )
    .await;
    assert_eq!(
        ledger.apply(&renewing(2)).await,
        PersistResult::Failed(PersistFailure::Fenced { current: None })
    );
    let stored = raw_get(&name, schema::LEASE, lease_key.clone()).await;
    assert_eq!(
        stored.and_then(|v| v.as_string()).as_deref(),
        Some("not a lease")
    );

    // No lease record at all: the same.
    raw_delete(&name, schema::LEASE, lease_key.clone()).await;
    assert_eq!(
        ledger.apply(&renewing(5)).await,
        PersistResult::Failed(PersistFailure::Fenced { current: None })
    );
    assert_eq!(raw_get(&name, schema::LEASE, lease_key).await, None);

    // Neither refused batch wrote anything: one operation, no events.
    assert_eq!(raw_keys(&name, schema::OPERATIONS).await.len(), 1);
    assert_eq!(raw_keys(&name, schema::OPERATION_PAGES).await.len(), 0);
    assert_eq!(raw_keys(&name, schema::EVENTS).await.len(), 0);
    ledger.close();
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn w5_quota_and_aborted_transactions_fail_whole_and_the_next_apply_succeeds() {
    let name = db_name("faults");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
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
    assert!(fresh.events_after(0, 100).await.expect("events").is_empty());
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
    let events = ledger.events_after(0, 100).await.expect("events");
    assert_eq!((last.operations.len(), events.len()), (52, 1));
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

/// A `File` of `text` named `name` with media type `media_type`.
pub(super) fn file(text: &str, name: &str, media_type: &str) -> web_sys::Blob {
    let options = web_sys::FilePropertyBag::new();
    options.set_type(media_type);
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    web_sys::File::new_with_str_sequence_and_options(&parts, name, &options)
        .expect("file")
        .into()
}

/// Where the engine refuses to store a `Blob` (WebKit's ephemeral sessions; forced here with
/// the injected refusal, which works the same in every engine), the store keeps its bytes,
/// media type and name, and a later page (a new connection) reads back the same file.
#[wasm_bindgen_test]
async fn w1_a_blob_the_engine_refuses_is_stored_as_bytes_and_read_back_the_same() {
    let name = db_name("blob-bytes");
    let ledger = IdbLedger::open(&name).await.expect("open");
    ledger.inject(StoreFault::RefuseBlob);
    let upload = file("png bytes", "red.png", "image/png");
    ledger
        .put_blob("blob-1", &upload, "image/png")
        .await
        .expect("put, as bytes");
    let stored = raw_get(&name, schema::BLOBS, JsValue::from_str("blob-1"))
        .await
        .expect("a record");
    let field = |f: &str| Reflect::get(&stored, &JsValue::from_str(f)).expect("field");
    assert!(field("blob").is_undefined(), "no Blob stored");
    assert!(
        field("bytes").is_instance_of::<js_sys::ArrayBuffer>(),
        "bytes stored"
    );
    assert_eq!(field("mediaType").as_string().as_deref(), Some("image/png"));
    assert_eq!(field("size").as_f64(), Some(9.0));
    assert_eq!(field("name").as_string().as_deref(), Some("red.png"));
    // A Blob (not a File) once refused goes straight to bytes, with no name.
    let parts = js_sys::Array::of1(&JsValue::from_str("more"));
    let plain = web_sys::Blob::new_with_str_sequence(&parts).expect("blob");
    let before = ledger.transactions();
    ledger.put_blob("blob-2", &plain, "").await.expect("put");
    assert_eq!(ledger.transactions() - before, 1, "no Blob put tried again");
    ledger.close();

    // The next page: a new connection reads what the last one stored.
    let again = IdbLedger::open(&name).await.expect("reopen");
    let read = again
        .get_blob("blob-1")
        .await
        .expect("get")
        .expect("present");
    let read_file = read
        .dyn_ref::<web_sys::File>()
        .expect("read back as a File");
    assert_eq!(read_file.name(), "red.png");
    assert_eq!(read.type_(), "image/png");
    assert_eq!(read.size(), 9.0);
    let text = wasm_bindgen_futures::JsFuture::from(read.text())
        .await
        .expect("text");
    assert_eq!(text.as_string().as_deref(), Some("png bytes"));
    let read = again
        .get_blob("blob-2")
        .await
        .expect("get")
        .expect("present");
    assert!(
        read.dyn_ref::<web_sys::File>().is_none(),
        "a Blob stays a Blob"
    );
    assert_eq!((read.type_().as_str(), read.size()), ("", 4.0));
    again.close();
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn w4_an_inbox_id_check_finds_operations_that_are_only_in_a_page() {
    let name = db_name("inbox-pages");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = Some(acquire_fence(&ledger, "tab-a", 1_000).await);
    let paged = operation("op-p", 1);
    let written = PersistBatch {
        operation_pages: vec![OperationPage {
            no: 1,
            operations: vec![paged.clone()],
        }],
        ..batch(fence)
    };
    assert!(matches!(
        ledger.apply(&written).await,
        PersistResult::Done { .. }
    ));
    let input = |operation_type: &str, dependencies: Vec<String>| IntentInput {
        id: "op-q".into(),
        sequence: None,
        operation_type: operation_type.into(),
        canvas_ids: paged.intent.canvas_ids.clone(),
        dependencies,
        payload: paged.intent.payload.clone(),
        expected_versions: None,
        run_id: None,
        coalesce_key: None,
        blob: None,
    };
    let entry = |intent: IntentInput| InboxEntry {
        origin: "tab-b".into(),
        principal: None,
        at: 1_000,
        intents: vec![intent],
    };
    // One append of four entries (a tab's enqueues that waited: group commit), one
    // transaction, each checked and answered on its own. The same id with another intent is a
    // duplicate, found through the page index...
    let mut other = input("run.start", Vec::new());
    other.id = "op-p".into();
    // ...the same intent again is the stored operation, not a new entry...
    let mut same = input(&paged.intent.operation_type, Vec::new());
    same.id = "op-p".into();
    // ...a paged operation is a known dependency...
    let dependent = input("shape.upsert", vec!["op-p".into()]);
    // ...and an entry is checked against the ones written before it in the same append.
    let mut clash = input("run.start", Vec::new());
    clash.id = dependent.id.clone();
    let answers = ledger
        .append_inbox(vec![
            entry(other),
            entry(same),
            entry(dependent),
            entry(clash),
        ])
        .await
        .expect("append");
    assert_eq!(answers.len(), 4);
    let mut answers = answers.into_iter();
    let refused = |answer: Option<Result<(bool, Vec<_>), SchedulerError>>| match answer {
        Some(Err(error)) => error.code(),
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(refused(answers.next()), "duplicate_operation");
    let (appended, present) = answers.next().expect("same").expect("same");
    assert!(!appended);
    assert_eq!(
        present,
        vec![canvas_scheduler_core::Known::Operation(Box::new(
            paged.clone()
        ))]
    );
    let (appended, _) = answers.next().expect("dependent").expect("dependent");
    assert!(appended);
    assert_eq!(refused(answers.next()), "duplicate_operation");
    // Only the dependent was written.
    let queued = ledger.read_inbox().await.expect("read");
    assert_eq!(queued.len(), 1);
    let written = queued[0].entry.as_ref().expect("entry");
    assert_eq!(written.intents[0].operation_type, "shape.upsert");
    ledger.close();
    delete_database(&name).await;
}

/// Pages written by earlier builds hold their JSON as a string; they load as before. A page
/// whose bytes are not UTF-8 is set aside, not trusted.
#[wasm_bindgen_test]
async fn s18_a_page_with_json_text_loads_and_one_with_bad_bytes_is_set_aside() {
    let name = db_name("page-forms");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
    let page = OperationPage {
        no: 1,
        operations: vec![operation("op-1", 1), operation("op-2", 2)],
    };
    let written = PersistBatch {
        operation_pages: vec![page.clone()],
        ..batch(Some(fence))
    };
    let result = ledger.apply(&written).await;
    assert!(matches!(result, PersistResult::Done { .. }), "{result:?}");
    // The page record rewritten with `json` in another form, its ids unchanged.
    let put_page = |json: JsValue| {
        let ids = js_sys::Array::of2(&"op-1".into(), &"op-2".into());
        let value = js_sys::Object::new();
        Reflect::set(&value, &"ids".into(), &ids).unwrap();
        Reflect::set(&value, &"json".into(), &json).unwrap();
        raw_put(
            &name,
            schema::OPERATION_PAGES,
            JsValue::from_f64(1.0),
            value.into(),
        )
    };
    let text = canvas_scheduler_core::json_text::to_string(&page.operations);
    put_page(text.into()).await;
    let loaded = acquire(&ledger, "tab-a", 2_000).await;
    assert!(loaded.quarantined.is_empty());
    assert_eq!(loaded.snapshot.operations, page.operations);

    put_page(js_sys::Uint8Array::from(&[b'[', 0xff, b']'][..]).into()).await;
    let loaded = acquire(&ledger, "tab-a", 3_000).await;
    assert!(loaded.snapshot.operations.is_empty());
    let reasons: Vec<&str> = loaded
        .quarantined
        .iter()
        .map(|q| q.reason.as_str())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("not UTF-8")),
        "set aside with its reason: {reasons:?}"
    );
}

/// Recovery with the pipelined read: pages come in reads of the load's page size, each asked for
/// before the one before is decoded. They load in order, and a broken page in the middle is
/// the only one set aside, moved to `quarantine` as stored (its stored value is paired with
/// its report across reads).
#[wasm_bindgen_test]
async fn s18_pages_read_ahead_load_in_order_and_a_broken_one_is_moved_as_stored() {
    let name = db_name("page-reads");
    let ledger = IdbLedger::open(&name).await.expect("open");
    // 20 pages of two: three reads of 7 (acquire's page size).
    let all = write_twenty_pages(&ledger, 2).await;
    let loaded = acquire(&ledger, "tab-a", 2_000).await;
    assert!(loaded.quarantined.is_empty(), "{:?}", loaded.quarantined);
    assert_eq!(loaded.snapshot.operations, all);

    // Page 8, the first of the second read, loses a field its operations need.
    let broken = js_sys::Object::new();
    let ids = js_sys::Array::of2(&"op-015".into(), &"op-016".into());
    Reflect::set(&broken, &"ids".into(), &ids).unwrap();
    let text = br#"[["op-015",15,"shape.upsert"]]"#;
    let json = js_sys::Uint8Array::from(&text[..]);
    Reflect::set(&broken, &"json".into(), &json).unwrap();
    raw_put(&name, schema::OPERATION_PAGES, 8.0.into(), broken.into()).await;
    let loaded = acquire(&ledger, "tab-a", 3_000).await;
    let kept: Vec<_> = all
        .iter()
        .filter(|op| !["op-015", "op-016"].contains(&op.intent.id.as_str()))
        .cloned()
        .collect();
    assert_eq!(loaded.snapshot.operations, kept);
    let set_aside: Vec<(&str, &str)> = loaded
        .quarantined
        .iter()
        .map(|q| (q.store, q.key.as_str()))
        .collect();
    assert_eq!(set_aside, vec![("operation_pages", "8")]);
    let entry = raw_get(&name, schema::QUARANTINE, "operation_pages/8".into()).await;
    let record = entry.map(|e| Reflect::get(&e, &"record".into()).expect("record"));
    let stored_json = record.map(|r| Reflect::get(&r, &"json".into()).expect("json"));
    let stored_json = stored_json.and_then(|j| j.dyn_into::<js_sys::Uint8Array>().ok());
    assert_eq!(
        stored_json.map(|bytes| bytes.to_vec()),
        Some(text.to_vec()),
        "moved as stored"
    );
    let left = raw_keys(&name, schema::OPERATION_PAGES).await;
    assert_eq!(left.len(), 19);
    assert!(!left.iter().any(|k| k.as_f64() == Some(8.0)));
    ledger.close();
    delete_database(&name).await;
}

/// The same load where `getAllRecords` is missing (browsers without it): each read is a
/// `getAllKeys` and a `getAll` over the same range, both asked for before the page before is
/// decoded.
#[wasm_bindgen_test]
async fn s18_pages_read_ahead_without_get_all_records_load_in_order() {
    let name = db_name("page-reads-split");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let all = write_twenty_pages(&ledger, 1).await;

    let prototype = Reflect::get(&js_sys::global(), &"IDBObjectStore".into())
        .and_then(|class| Reflect::get(&class, &"prototype".into()))
        .expect("IDBObjectStore.prototype");
    let method = Reflect::get(&prototype, &"getAllRecords".into()).expect("read");
    let hidden = Reflect::delete_property(&prototype.clone().into(), &"getAllRecords".into())
        .expect("delete");
    let now_missing = Reflect::get(&prototype, &"getAllRecords".into()).expect("read again");
    assert!(
        hidden && now_missing.is_undefined(),
        "the split read is the one tested"
    );
    let loaded = ledger
        .acquire_and_load("tab-a", 2_000, 10_000, 7, false)
        .await;
    if !method.is_undefined() {
        Reflect::set(&prototype, &"getAllRecords".into(), &method).expect("restore");
    }
    let loaded = loaded.expect("load");
    assert!(loaded.quarantined.is_empty(), "{:?}", loaded.quarantined);
    assert_eq!(loaded.snapshot.operations, all);
    ledger.close();
    delete_database(&name).await;
}

/// Takes the lease and writes pages 1–20 of `per_page` operations each (`op-001`, … in
/// sequence order) in one batch; returns the operations in order.
async fn write_twenty_pages(ledger: &IdbLedger, per_page: u64) -> Vec<Operation> {
    let fence = acquire_fence(ledger, "tab-a", 1_000).await;
    let pages: Vec<OperationPage> = (1..=20u64)
        .map(|no| OperationPage {
            no,
            operations: ((no - 1) * per_page + 1..=no * per_page)
                .map(|seq| operation(&format!("op-{seq:03}"), seq))
                .collect(),
        })
        .collect();
    let written = PersistBatch {
        operation_pages: pages.clone(),
        ..batch(Some(fence))
    };
    let result = ledger.apply(&written).await;
    assert!(matches!(result, PersistResult::Done { .. }), "{result:?}");
    pages.into_iter().flat_map(|p| p.operations).collect()
}
