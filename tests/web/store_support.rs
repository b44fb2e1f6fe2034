//! Fixtures for the IndexedDB ledger store tests: records that pass the loader's checks,
//! batches, per-binary database names, and raw access that bypasses the store.

use canvas_scheduler::web::store::{schema, IdbLedger, LoadedLedger};
use canvas_scheduler_core::{
    body_digest, EventKind, EventRecord, FrozenRequest, Lease, Operation, PersistBatch,
    PersistResult, RequestPhase,
};
use canvas_scheduler_testing::pending_upsert;
use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::TransactionMode;
use js_sys::{Function, Promise};
use serde_json::json;
use std::collections::BTreeMap;
use wasm_bindgen::JsCast;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use super::support::{js, unique_name};

/// A database name unique to this test and this binary (page or worker).
pub(super) fn db_name(test: &str) -> String {
    unique_name(&format!("store-{test}-{}", crate::EXPECTED_GLOBAL))
}

/// Largest integer a JS number holds exactly.
pub(super) const MAX_SAFE: u64 = (1 << 53) - 1;

/// A pending operation with a nested payload.
pub(super) fn operation(id: &str, sequence: u64) -> Operation {
    let mut op = pending_upsert(id, sequence, "c1");
    op.intent.payload = json!({"shape": {"x": 1, "y": -2.5, "tags": ["a", "b"], "n": null}}).into();
    op
}

/// A frozen request for `operation_id` that passes the loader's checks.
pub(super) fn request(id: &str, operation_id: &str) -> FrozenRequest {
    let body = json!({"id": id, "operations": [operation_id]}).to_string();
    FrozenRequest {
        id: id.into(),
        operation_ids: vec![operation_id.into()],
        kind: "shape.upsert".into(),
        owner_canvas_id: Some("c1".into()),
        run_id: None,
        protocol_version: 1,
        canvas_ids: vec!["c1".into()],
        expected_versions: BTreeMap::from([("c1".into(), MAX_SAFE)]),
        digest: body_digest(&body),
        body,
        principal: None,
        revisions: vec![0],
        phase: RequestPhase::Frozen,
        attempt: 0,
        failures: 0,
        retry_at: None,
        retry_action: None,
        outcome: None,
        error: None,
        canonical: None,
        blocked: None,
        frozen_at: 1_700_000_000_000,
    }
}

/// An event with `seq`.
pub(super) fn event(seq: u64) -> EventRecord {
    EventRecord {
        seq,
        at: 1_700_000_000_000 + seq,
        kind: EventKind::Claimed,
        request_id: None,
        operation_id: Some(format!("op-{seq}")),
        attempt: None,
        fence: Some(1),
        detail: None,
    }
}

/// An empty batch carrying `fence`.
pub(super) fn batch(fence: Option<u64>) -> PersistBatch {
    PersistBatch {
        no: 1,
        fence,
        lease: None,
        operations: vec![],
        requests: vec![],
        events: vec![],
        trim_events_below: None,
        operation_pages: vec![],
        drop_operations: vec![],
        drop_operation_pages: vec![],
        tombstones: vec![],
        drop_requests: vec![],
        drop_blobs: vec![],
        trim_tombstones: None,
        trim_archive: None,
        relaxed: false,
    }
}

/// A batch of `count` operation records numbered from `first`.
pub(super) fn operations_batch(fence: u64, first: u64, count: u64) -> PersistBatch {
    PersistBatch {
        operations: (first..first + count)
            .map(|n| operation(&format!("op-{n:06}"), n))
            .collect(),
        ..batch(Some(fence))
    }
}

/// Takes the lease as `owner` at `now` and loads.
pub(super) async fn acquire(ledger: &IdbLedger, owner: &str, now: u64) -> LoadedLedger {
    match ledger.acquire_and_load(owner, now, 10_000, 7, false).await {
        Ok(loaded) => loaded,
        Err(error) => panic!("acquire as {owner} at {now}: {error:?}"),
    }
}

/// Takes the lease as `owner` at `now` (see [`acquire`]) and returns its fence.
pub(super) async fn acquire_fence(ledger: &IdbLedger, owner: &str, now: u64) -> u64 {
    let lease = acquire(ledger, owner, now).await.snapshot.lease;
    lease.map(|l| l.fence).expect("acquire stores a lease")
}

/// The lease as `apply` must report it.
pub(super) fn lease_of(result: &PersistResult) -> Option<Lease> {
    match result {
        PersistResult::Done { lease } => lease.clone(),
        other => panic!("expected Done, got {other:?}"),
    }
}

/// Puts `value` under `key` in `store`, bypassing the ledger store.
pub(super) async fn raw_put(name: &str, store: &str, key: JsValue, value: JsValue) {
    raw_write(name, store, key, Some(value)).await;
}

/// Deletes `key` from `store`, bypassing the ledger store.
pub(super) async fn raw_delete(name: &str, store: &str, key: JsValue) {
    raw_write(name, store, key, None).await;
}

/// One readwrite transaction: a put of `value`, or a delete when there is none.
async fn raw_write(name: &str, store: &str, key: JsValue, value: Option<JsValue>) {
    let db = Database::open(name).await.expect("raw open");
    let tx = db
        .transaction(store)
        .with_mode(TransactionMode::Readwrite)
        .build()
        .expect("raw tx");
    let object_store = tx.object_store(store).expect("raw store");
    match value {
        Some(value) => object_store
            .put(value)
            .with_key(key)
            .without_key_type()
            .primitive()
            .expect("raw put")
            .await
            .expect("raw put result"),
        None => object_store
            .delete(key)
            .primitive()
            .expect("raw delete")
            .await
            .expect("raw delete result"),
    }
    tx.commit().await.expect("raw commit");
    db.close();
}

/// Every key of `store`, read directly.
pub(super) async fn raw_keys(name: &str, store: &str) -> Vec<JsValue> {
    let db = Database::open(name).await.expect("raw open");
    let tx = db.transaction(store).build().expect("raw tx");
    let object_store = tx.object_store(store).expect("raw store");
    let keys: Vec<JsValue> = object_store
        .get_all_keys::<JsValue>()
        .primitive()
        .expect("raw keys")
        .await
        .expect("raw keys result")
        .collect::<Result<_, _>>()
        .expect("raw key values");
    drop(tx);
    db.close();
    keys
}

/// The value stored under `key` in `store`, read directly.
pub(super) async fn raw_get(name: &str, store: &str, key: JsValue) -> Option<JsValue> {
    let db = Database::open(name).await.expect("raw open");
    let tx = db.transaction(store).build().expect("raw tx");
    let object_store = tx.object_store(store).expect("raw store");
    let value: Option<JsValue> = object_store
        .get(key)
        .primitive()
        .expect("raw get")
        .await
        .expect("raw get result");
    drop(tx);
    db.close();
    value
}

/// Holds a readwrite transaction on the lease store of database `name` through a second
/// connection (a request after each answer) until the returned function is called: a
/// transaction opened after it waits, its lease read unanswered.
pub(super) async fn hold_lease_store(name: &str) -> Function {
    let opened = js(&format!(
        "new Promise((ready, fail) => {{
           const open = indexedDB.open({name:?});
           open.onerror = () => fail(open.error);
           open.onsuccess = () => {{
             const db = open.result;
             const tx = db.transaction([{lease:?}], 'readwrite');
             const store = tx.objectStore({lease:?});
             let released = false;
             const spin = () => {{ if (!released) store.get('lease').onsuccess = spin; }};
             spin();
             tx.oncomplete = () => db.close();
             ready(() => {{ released = true; }});
           }};
         }})",
        lease = schema::LEASE,
    ));
    let release = JsFuture::from(opened.unchecked_into::<Promise>())
        .await
        .expect("a second connection holds the lease store");
    release.unchecked_into()
}
