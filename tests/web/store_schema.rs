//! The ledger database's life beyond one build and one tab: upgrades from an older schema
//! keep queued work, another connection's `versionchange` closes ours without a panic
//!, and corrupt or foreign records are quarantined and reported.

use canvas_scheduler::web::store::requests::Tx;
use canvas_scheduler::web::store::schema::{self, SCHEMA_VERSION};
use canvas_scheduler::web::store::upgrade::{open_current, upgrade_to, UpgradeFailure};
use canvas_scheduler::web::store::IdbLedger;
use canvas_scheduler_core::{json_text as json, Lease, LedgerMeta, PersistFailure, PersistResult};
use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;
use serde::Serialize;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

/// Key of the meta record versions 1–4 kept.
const META_KEY: &str = "meta";

use super::store_support::{
    acquire, acquire_fence, db_name, event, lease_of, operation, operations_batch, raw_get,
    raw_keys, raw_put, request,
};
use super::support::{create_database, delete_database};

/// A record as earlier builds stored it: a plain JS object.
fn js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    js_sys::JSON::parse(&json::to_string(value)).expect("test record is JSON")
}

#[wasm_bindgen_test]
async fn w1_an_older_schema_is_upgraded_without_losing_queued_work() {
    let name = db_name("upgrade");
    // Version 1 as an earlier build wrote it: operations, requests and meta only.
    create_database(
        &name,
        1,
        &[schema::OPERATIONS, schema::REQUESTS, schema::META],
    )
    .await;
    let queued = [operation("op-1", 1), operation("op-2", 2)];
    for op in &queued {
        raw_put(
            &name,
            schema::OPERATIONS,
            JsValue::from_str(&op.intent.id),
            js(op),
        )
        .await;
    }
    let frozen = request("req-1", "op-1");
    raw_put(
        &name,
        schema::REQUESTS,
        JsValue::from_str("req-1"),
        js(&frozen),
    )
    .await;
    let meta = LedgerMeta {
        last_sequence: 2,
        last_event_seq: 0,
    };
    raw_put(&name, schema::META, JsValue::from_str(META_KEY), js(&meta)).await;

    let ledger = IdbLedger::open(&name).await.expect("open upgrades");
    let loaded = acquire(&ledger, "tab-a", 1_000).await;
    assert!(loaded.quarantined.is_empty(), "{:?}", loaded.quarantined);
    assert_eq!(loaded.snapshot.operations, queued.to_vec());
    assert_eq!(loaded.snapshot.requests, vec![frozen]);
    // `meta` is gone (version 5); the same values come from the records.
    assert_eq!(loaded.snapshot.meta, meta);
    assert_eq!(loaded.snapshot.lease.map(|l| l.fence), Some(1));
    ledger.close();

    let db = Database::open(&name).await.expect("raw open");
    let mut stores: Vec<String> = db.object_store_names().collect();
    stores.sort();
    assert_eq!(db.version(), f64::from(SCHEMA_VERSION));
    db.close();
    let mut expected: Vec<String> = schema::ALL_STORES.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(stores, expected);
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn w1_a_version_5_ledger_upgrades_with_its_pages_and_shuts_version_5_builds_out() {
    let name = db_name("v5");
    // Version 5 as that build left it, with a live lease of one of its tabs.
    const V5_STORES: [&str; 8] = [
        schema::OPERATIONS,
        schema::OPERATION_PAGES,
        schema::REQUESTS,
        schema::V4_LEASE,
        schema::EVENTS,
        schema::BLOBS,
        schema::QUARANTINE,
        schema::INBOX,
    ];
    create_database(&name, 5, &V5_STORES).await;
    let queued = [operation("op-1", 1), operation("op-2", 2)];
    // A page as version 5 wrote it: the operations as JSON objects, in UTF-8 bytes.
    let page = js_sys::Object::new();
    let ids = js_sys::Array::of2(&"op-1".into(), &"op-2".into());
    let text = json::to_string(&queued[..]);
    js_sys::Reflect::set(&page, &"ids".into(), &ids).expect("ids");
    let bytes = js_sys::Uint8Array::from(text.as_bytes());
    js_sys::Reflect::set(&page, &"json".into(), &bytes).expect("json");
    raw_put(
        &name,
        schema::OPERATION_PAGES,
        JsValue::from_f64(1.0),
        page.into(),
    )
    .await;
    let held = Lease {
        owner: "v5-tab".into(),
        fence: 41,
        expires_at: u64::MAX >> 12,
    };
    let held = json::to_string(&held);
    raw_put(&name, schema::V4_LEASE, "lease".into(), held.into()).await;

    let ledger = IdbLedger::open(&name).await.expect("open upgrades");
    let loaded = acquire(&ledger, "tab-a", 1_000).await;
    assert!(loaded.quarantined.is_empty(), "{:?}", loaded.quarantined);
    assert_eq!(
        loaded.snapshot.operations,
        queued.to_vec(),
        "the paged work is kept"
    );
    assert_eq!(
        loaded.snapshot.lease.map(|l| (l.owner, l.fence)),
        Some(("tab-a".to_owned(), 1)),
        "the version-5 lease went with its store"
    );
    ledger.close();

    let db = Database::open(&name).await.expect("raw open");
    let stores: Vec<String> = db.object_store_names().collect();
    assert_eq!(db.version(), f64::from(SCHEMA_VERSION));
    db.close();
    // What a version-5 build checks before it opens a newer database: all of its stores.
    let missing: Vec<&str> = V5_STORES
        .into_iter()
        .filter(|store| !stores.iter().any(|s| s == store))
        .collect();
    assert_eq!(missing, vec![schema::V4_LEASE], "{stores:?}");
    delete_database(&name).await;
}

/// Version 10 moves the lease (as 4 and 6 did), so a version-8 build, which would
/// read a follower's settled and compacted operations as refused, cannot open the ledger.
#[wasm_bindgen_test]
async fn w1_a_version_8_ledger_upgrades_with_its_work_and_shuts_version_8_builds_out() {
    let name = db_name("v8");
    const V8_STORES: [&str; 10] = [
        schema::TOMBSTONES,
        schema::TOMBSTONE_HASHES,
        schema::OPERATIONS,
        schema::OPERATION_PAGES,
        schema::REQUESTS,
        schema::V6_LEASE,
        schema::EVENTS,
        schema::BLOBS,
        schema::QUARANTINE,
        schema::INBOX,
    ];
    create_database(&name, 8, &V8_STORES).await;
    let queued = operation("op-1", 1);
    raw_put(
        &name,
        schema::OPERATIONS,
        "op-1".into(),
        JsValue::from_str(&json::to_string(&queued)),
    )
    .await;
    let held = Lease {
        owner: "v8-tab".into(),
        fence: 41,
        expires_at: u64::MAX >> 12,
    };
    let held = json::to_string(&held);
    raw_put(&name, schema::V6_LEASE, "lease".into(), held.into()).await;

    let ledger = IdbLedger::open(&name).await.expect("open upgrades");
    let loaded = acquire(&ledger, "tab-a", 1_000).await;
    assert!(loaded.quarantined.is_empty(), "{:?}", loaded.quarantined);
    assert_eq!(loaded.snapshot.operations, vec![queued], "the work is kept");
    assert_eq!(
        loaded.snapshot.lease.map(|l| (l.owner, l.fence)),
        Some(("tab-a".to_owned(), 1)),
        "the version-8 lease went with its store"
    );
    ledger.close();

    let db = Database::open(&name).await.expect("raw open");
    let stores: Vec<String> = db.object_store_names().collect();
    assert_eq!(db.version(), f64::from(SCHEMA_VERSION));
    db.close();
    // What a version-8 build checks before it opens a newer database: all of its stores.
    let missing: Vec<&str> = V8_STORES
        .into_iter()
        .filter(|store| !stores.iter().any(|s| s == store))
        .collect();
    assert_eq!(missing, vec![schema::V6_LEASE], "{stores:?}");
    assert!(stores.iter().any(|s| s == schema::SETTLED), "{stores:?}");
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn w5_a_versionchange_from_another_tab_fails_the_next_apply_until_reopen() {
    let name = db_name("versionchange");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
    let first = ledger.apply(&operations_batch(fence, 1, 1)).await;
    assert!(matches!(first, PersistResult::Done { .. }), "{first:?}");

    // Another tab opens a newer schema; our connection must close so it is not blocked.
    let other = Database::open(&name)
        .with_version(SCHEMA_VERSION + 1)
        .with_on_upgrade_needed(|_, db| {
            db.create_object_store("other-tab").build()?;
            Ok(())
        })
        .await
        .expect("the other tab's upgrade is not blocked");
    other.close();

    assert!(!ledger.is_open());
    match ledger.apply(&operations_batch(fence, 2, 1)).await {
        PersistResult::Failed(PersistFailure::Storage(error)) => {
            assert_eq!(error.code, "storage_unavailable", "{error:?}")
        }
        other => panic!("expected a storage failure, got {other:?}"),
    }
    let held = ledger
        .acquire_and_load("tab-a", 1_500, 10_000, 10, false)
        .await;
    assert!(held.is_err());

    // Reopening finds the newer version with every store we use, and works.
    ledger.reopen().await.expect("reopen");
    let retried = ledger.apply(&operations_batch(fence, 2, 1)).await;
    assert_eq!(lease_of(&retried).map(|l| l.fence), Some(fence));
    let loaded = acquire(&ledger, "tab-a", 2_000).await.snapshot;
    assert_eq!(loaded.operations.len(), 2);
    ledger.close();
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn d4_corrupt_and_foreign_records_are_quarantined_and_the_rest_loads() {
    let name = db_name("corrupt");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
    let mut good = operations_batch(fence, 1, 2);
    good.requests = vec![request("req-1", "op-000001")];
    good.events = vec![event(1), event(2)];
    assert!(matches!(
        ledger.apply(&good).await,
        PersistResult::Done { .. }
    ));

    // Garbage written behind the store's back.
    let garbage = JsValue::from_str("garbage");
    raw_put(
        &name,
        schema::OPERATIONS,
        JsValue::from_str("op-bad"),
        garbage.clone(),
    )
    .await;
    raw_put(
        &name,
        schema::OPERATIONS,
        JsValue::from_f64(42.0),
        js(&operation("x", 9)),
    )
    .await;
    let foreign = request("req-foreign", "op-unknown");
    raw_put(
        &name,
        schema::REQUESTS,
        JsValue::from_str("req-foreign"),
        js(&foreign),
    )
    .await;
    raw_put(&name, schema::EVENTS, JsValue::from_str("x"), js(&event(3))).await;
    // A binary value, not a record. (An ArrayBuffer, not a Blob: WebKit's ephemeral sessions
    // refuse to store a Blob at all.)
    let binary = js_sys::ArrayBuffer::new(4);
    raw_put(&name, schema::EVENTS, JsValue::from_f64(7.0), binary.into()).await;

    let loaded = acquire(&ledger, "tab-a", 2_000).await;
    let ids: Vec<&str> = loaded
        .snapshot
        .operations
        .iter()
        .map(|o| o.intent.id.as_str())
        .collect();
    assert_eq!(ids, ["op-000001", "op-000002"]);
    assert_eq!(loaded.snapshot.requests.len(), 1);
    // The two legible events answer; the others are set aside like any store's garbage.
    assert_eq!(ledger.events_after(0, 100).await.expect("events").len(), 2);
    let mut set_aside: Vec<String> = loaded
        .quarantined
        .iter()
        .map(|q| format!("{}/{}", q.store, q.key))
        .collect();
    set_aside.sort();
    assert_eq!(
        set_aside,
        [
            "events/7",
            "events/x",
            "operations/42",
            "operations/op-bad",
            "requests/req-foreign"
        ]
    );
    assert!(loaded.quarantined.iter().all(|q| !q.reason.is_empty()));

    // Moved, not dropped: they are in `quarantine` and gone from their stores.
    let mut kept: Vec<String> = raw_keys(&name, schema::QUARANTINE)
        .await
        .iter()
        .filter_map(JsValue::as_string)
        .collect();
    kept.sort();
    assert_eq!(kept, set_aside);
    assert_eq!(raw_keys(&name, schema::OPERATIONS).await.len(), 2);
    let again = acquire(&ledger, "tab-a", 3_000).await;
    assert!(again.quarantined.is_empty(), "{:?}", again.quarantined);
    assert_eq!(again.snapshot.operations.len(), 2);
    ledger.close();
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn w1_version_4_retires_the_lease_store_so_earlier_builds_refuse_the_database() {
    let name = db_name("retire-lease");
    // Version 3 as an earlier build left it, with a lease held and one queued operation.
    create_database(
        &name,
        3,
        &[
            schema::OPERATIONS,
            schema::REQUESTS,
            schema::META,
            schema::LEGACY_LEASE,
            schema::EVENTS,
            schema::BLOBS,
            schema::QUARANTINE,
        ],
    )
    .await;
    let queued = operation("op-1", 1);
    raw_put(
        &name,
        schema::OPERATIONS,
        JsValue::from_str("op-1"),
        js(&queued),
    )
    .await;
    let ledger = IdbLedger::open(&name).await.expect("open upgrades");
    let loaded = acquire(&ledger, "tab-a", 1_000).await;
    assert_eq!(loaded.snapshot.operations, vec![queued], "queued work kept");
    assert_eq!(loaded.snapshot.lease.map(|l| l.fence), Some(1));
    ledger.close();
    let db = Database::open(&name).await.expect("raw open");
    let stores: Vec<String> = db.object_store_names().collect();
    db.close();
    // What an earlier build checks before using a newer database: every store it knows.
    assert!(
        !stores.iter().any(|s| s == schema::LEGACY_LEASE),
        "an earlier build finds no `lease` store and refuses: {stores:?}"
    );
    assert!(stores.iter().any(|s| s == schema::LEASE));
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn w1_version_5_retires_meta_so_builds_that_cannot_read_pages_refuse_the_database() {
    let name = db_name("retire-meta");
    // Version 4 as the build before pages left it: one queued operation, a meta record.
    const V4: [&str; 8] = [
        schema::OPERATIONS,
        schema::REQUESTS,
        schema::META,
        schema::LEASE,
        schema::EVENTS,
        schema::BLOBS,
        schema::QUARANTINE,
        schema::INBOX,
    ];
    create_database(&name, 4, &V4).await;
    let queued = operation("op-1", 1);
    raw_put(&name, schema::OPERATIONS, "op-1".into(), js(&queued)).await;
    let meta = LedgerMeta {
        last_sequence: 1,
        last_event_seq: 0,
    };
    raw_put(&name, schema::META, META_KEY.into(), js(&meta)).await;
    let ledger = IdbLedger::open(&name).await.expect("open upgrades");
    let loaded = acquire(&ledger, "tab-a", 1_000).await;
    assert_eq!(loaded.snapshot.operations, vec![queued], "queued work kept");
    assert_eq!(loaded.snapshot.meta, meta, "derived from the records");
    ledger.close();
    let db = Database::open(&name).await.expect("raw open");
    let stores: Vec<String> = db.object_store_names().collect();
    db.close();
    // A version-4 build opens a newer database only when every store it uses is there.
    let missing: Vec<&str> = V4
        .iter()
        .filter(|s| !stores.iter().any(|name| name == *s))
        .copied()
        .collect();
    assert_eq!(missing, [schema::META], "{stores:?}");
    assert!(stores.iter().any(|s| s == schema::OPERATION_PAGES));
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn w1_a_ledger_of_older_object_records_and_newer_string_records_loads_whole() {
    let name = db_name("mixed");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
    // This build writes JSON strings: odd sequences through the store...
    let mut written = operations_batch(fence, 1, 1);
    written.operations = (1..=15)
        .step_by(2)
        .map(|n| operation(&format!("op-{n:06}"), n))
        .collect();
    // ...and its events as a page (keyed by the last seq, 4).
    written.events = vec![event(3), event(4)];
    assert!(matches!(
        ledger.apply(&written).await,
        PersistResult::Done { .. }
    ));
    let stored = raw_get(&name, schema::OPERATIONS, JsValue::from_str("op-000001")).await;
    assert!(stored.is_some_and(|v| v.is_string()), "stored as a string");
    ledger.close();

    // ...even sequences, a request, events (one record each, before this build's page), meta
    // and the lease as an earlier build wrote them: plain objects (interleaved with the
    // strings across pages of 7).
    let older: Vec<_> = (2..=16)
        .step_by(2)
        .map(|n| operation(&format!("op-{n:06}"), n))
        .collect();
    for op in &older {
        let key = JsValue::from_str(&op.intent.id);
        raw_put(&name, schema::OPERATIONS, key, js(op)).await;
    }
    let frozen = request("req-1", "op-000002");
    raw_put(
        &name,
        schema::REQUESTS,
        JsValue::from_str("req-1"),
        js(&frozen),
    )
    .await;
    for seq in [1, 2] {
        let key = JsValue::from_f64(seq as f64);
        raw_put(&name, schema::EVENTS, key, js(&event(seq))).await;
    }
    let old_lease = Lease {
        owner: "tab-a".into(),
        fence,
        expires_at: 11_000,
    };
    let lease_key = JsValue::from_str(schema::LEASE_KEY);
    raw_put(&name, schema::LEASE, lease_key.clone(), js(&old_lease)).await;

    // An older-build lease record still fences a write (read in the apply transaction).
    let ledger = IdbLedger::open(&name).await.expect("reopen");
    let late = operations_batch(fence, 17, 1);
    assert_eq!(lease_of(&ledger.apply(&late).await), Some(old_lease));

    let loaded = acquire(&ledger, "tab-a", 2_000).await;
    assert!(loaded.quarantined.is_empty(), "{:?}", loaded.quarantined);
    let sequences: Vec<u64> = loaded
        .snapshot
        .operations
        .iter()
        .map(|o| o.intent.sequence)
        .collect();
    assert_eq!(sequences, (1..=17).collect::<Vec<u64>>());
    assert_eq!(loaded.snapshot.operations[1], older[0]);
    assert_eq!(loaded.snapshot.requests, vec![frozen]);
    let events = ledger.events_after(0, 100).await.expect("events");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    assert_eq!(
        loaded.snapshot.meta,
        // From the records (`meta` is gone); the last event seq from the log's highest key
        // (the load reads no event).
        LedgerMeta {
            last_sequence: 17,
            last_event_seq: 4,
        }
    );
    assert_eq!(loaded.snapshot.lease.map(|l| l.fence), Some(fence + 1));
    // The lease just taken is stored in this build's form.
    let lease = raw_get(&name, schema::LEASE, lease_key).await;
    assert!(lease.is_some_and(|v| v.is_string()));
    ledger.close();
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn d4_string_records_that_are_not_json_or_not_a_record_are_quarantined_as_stored() {
    let name = db_name("corrupt-strings");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
    let mut good = operations_batch(fence, 1, 2);
    good.requests = vec![request("req-1", "op-000001")];
    good.events = vec![event(1)];
    assert!(matches!(
        ledger.apply(&good).await,
        PersistResult::Done { .. }
    ));
    ledger.close();

    let bad: [(&str, JsValue, &str); 6] = [
        (
            schema::OPERATIONS,
            "op-a".into(),
            "{\"intent\": {\"id\": \"op-a\"",
        ),
        (
            schema::OPERATIONS,
            "op-b".into(),
            "{\"intent\": 5, \"phase\": \"pending\"}",
        ),
        (
            schema::OPERATIONS,
            "op-c".into(),
            "\"a JSON string, not a record\"",
        ),
        (schema::REQUESTS, "req-x".into(), "[1, 2, 3]"),
        (schema::EVENTS, JsValue::from_f64(5.0), "not json"),
        (
            schema::OPERATION_PAGES,
            JsValue::from_f64(9.0),
            "not a page object",
        ),
    ];
    for (store, key, text) in &bad {
        raw_put(&name, store, key.clone(), JsValue::from_str(text)).await;
    }

    let ledger = IdbLedger::open(&name).await.expect("reopen");
    let loaded = acquire(&ledger, "tab-a", 2_000).await;
    let ids: Vec<&str> = loaded
        .snapshot
        .operations
        .iter()
        .map(|o| o.intent.id.as_str())
        .collect();
    assert_eq!(ids, ["op-000001", "op-000002"]);
    assert_eq!(loaded.snapshot.requests.len(), 1);
    assert_eq!(ledger.events_after(0, 100).await.expect("events").len(), 1);
    let mut set_aside: Vec<String> = loaded
        .quarantined
        .iter()
        .map(|q| format!("{}/{}", q.store, q.key))
        .collect();
    set_aside.sort();
    let expected = [
        "events/5",
        "operation_pages/9",
        "operations/op-a",
        "operations/op-b",
        "operations/op-c",
        "requests/req-x",
    ];
    assert_eq!(set_aside, expected);
    let reason = |key: &str| {
        let found = loaded.quarantined.iter().find(|q| q.key == key);
        found.map(|q| q.reason.clone()).unwrap_or_default()
    };
    assert!(reason("op-a").starts_with("not JSON"), "{}", reason("op-a"));
    assert!(
        reason("op-b").starts_with("undecodable"),
        "{}",
        reason("op-b")
    );

    // Moved as stored (the very string), gone from their stores; the next load is clean.
    let entry = raw_get(&name, schema::QUARANTINE, "operations/op-a".into()).await;
    let record = entry.map(|e| js_sys::Reflect::get(&e, &"record".into()).expect("record"));
    assert_eq!(
        record.and_then(|r| r.as_string()).as_deref(),
        Some(bad[0].2)
    );
    let mut kept: Vec<String> = raw_keys(&name, schema::QUARANTINE)
        .await
        .iter()
        .filter_map(JsValue::as_string)
        .collect();
    kept.sort();
    assert_eq!(kept, expected);
    assert_eq!(raw_keys(&name, schema::OPERATIONS).await.len(), 2);
    let again = acquire(&ledger, "tab-a", 3_000).await;
    assert!(again.quarantined.is_empty(), "{:?}", again.quarantined);
    assert_eq!(again.snapshot.operations.len(), 2);
    ledger.close();
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn d4_without_get_all_records_pages_come_from_get_all_and_get_all_keys() {
    let name = db_name("no-get-all-records");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
    let mut written = operations_batch(fence, 1, 15);
    written.events = (1..=9).map(event).collect();
    assert!(matches!(
        ledger.apply(&written).await,
        PersistResult::Done { .. }
    ));
    let older = operation("op-000016", 16);
    raw_put(&name, schema::OPERATIONS, "op-000016".into(), js(&older)).await;
    raw_put(
        &name,
        schema::OPERATIONS,
        "op-bad".into(),
        "not json".into(),
    )
    .await;

    // A browser without IDBObjectStore.prototype.getAllRecords (only chromium has it).
    let global = js_sys::global();
    let class = js_sys::Reflect::get(&global, &"IDBObjectStore".into()).expect("class");
    let prototype = js_sys::Reflect::get(&class, &"prototype".into()).expect("prototype");
    let key = JsValue::from_str("getAllRecords");
    let saved = js_sys::Reflect::get(&prototype, &key).expect("read");
    let prototype: js_sys::Object = prototype.into();
    js_sys::Reflect::delete_property(&prototype, &key).expect("hide");
    let loaded = ledger
        .acquire_and_load("tab-a", 2_000, 10_000, 4, false)
        .await;
    if !saved.is_undefined() {
        js_sys::Reflect::set(&prototype, &key, &saved).expect("restore");
    }
    let loaded = loaded.expect("loads");
    let sequences: Vec<u64> = loaded
        .snapshot
        .operations
        .iter()
        .map(|o| o.intent.sequence)
        .collect();
    assert_eq!(sequences, (1..=16).collect::<Vec<u64>>());
    assert_eq!(ledger.events_after(0, 100).await.expect("events").len(), 9);
    let set_aside: Vec<String> = loaded
        .quarantined
        .iter()
        .map(|q| format!("{}/{}", q.store, q.key))
        .collect();
    assert_eq!(set_aside, ["operations/op-bad"]);
    ledger.close();
    delete_database(&name).await;
}

/// Upgrade steps that create a store and then fail.
fn failing_steps(db: &web_sys::IdbDatabase, _old_version: f64) -> Result<(), JsValue> {
    db.create_object_store("half-made")?;
    Err(JsValue::from_str("refused by the test"))
}

#[wasm_bindgen_test]
async fn w1_an_upgrade_that_fails_changes_nothing() {
    let name = db_name("failing-upgrade");
    create_database(&name, 1, &[schema::OPERATIONS]).await;
    match upgrade_to(&name, 2, failing_steps).await {
        Err(UpgradeFailure::Failed(error)) => {
            assert!(error.message.contains("refused by the test"), "{error:?}");
        }
        other => panic!("the upgrade should fail: {other:?}"),
    }
    let db = open_current(&name).await.expect("opens as it was");
    assert_eq!(db.version(), 1.0, "the version did not move");
    let stores: Vec<String> = db.object_store_names().collect();
    assert_eq!(
        stores,
        vec![schema::OPERATIONS.to_owned()],
        "nothing half-made"
    );
    db.close();
    assert!(
        matches!(upgrade_to(&name, 1, failing_steps).await, Ok(())),
        "at its version already: no upgrade, nothing runs"
    );
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn w1_a_transaction_dropped_without_commit_writes_nothing() {
    let name = db_name("dropped-transaction");
    create_database(&name, 1, &[schema::OPERATIONS]).await;
    let db = open_current(&name).await.expect("opens");
    let put = |tx: &Tx, key: &str| {
        tx.store(schema::OPERATIONS)
            .expect("its store")
            .put(&JsValue::from_str("record"), &JsValue::from_str(key))
            .expect("put issued");
    };
    {
        let dropped = Tx::begin(&db, &[schema::OPERATIONS], true).expect("begins");
        put(&dropped, "dropped"); // an early return before the commit
    }
    let committed = Tx::begin(&db, &[schema::OPERATIONS], true).expect("begins");
    put(&committed, "committed");
    committed.commit().await.expect("commits");
    db.close();
    assert_eq!(
        raw_keys(&name, schema::OPERATIONS).await,
        vec![JsValue::from_str("committed")],
        "the dropped transaction was aborted, its put never landed"
    );
    delete_database(&name).await;
}

/// Garbage in the event log is set aside at open like any store's: a record under a key
/// that is not a seq, one that is not JSON, one whose key is not its event's seq, and one
/// between two pages (the page after it still loads); the log goes on from its own records,
/// not from a garbage key above them.
#[wasm_bindgen_test]
async fn d4_garbage_in_the_event_log_is_set_aside_at_open_and_the_log_goes_on_from_its_own() {
    let name = db_name("corrupt-events");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab-a", 1_000).await;
    // Five pages of two events each (keyed 2, 4, 6, 8, 10): more records than a load page.
    for page in 0..5 {
        let mut written = operations_batch(fence, page + 1, 1);
        written.events = vec![event(2 * page + 1), event(2 * page + 2)];
        assert!(matches!(
            ledger.apply(&written).await,
            PersistResult::Done { .. }
        ));
    }
    let garbage: [(JsValue, JsValue); 4] = [
        (JsValue::from_str("garbage"), js(&event(11))),
        (JsValue::from_f64(5.0), JsValue::from_str("not json")),
        (JsValue::from_f64(1e12), js(&event(12))),
        (JsValue::from_f64(-3.0), js(&[event(13)][..])),
    ];
    for (key, value) in &garbage {
        raw_put(&name, schema::EVENTS, key.clone(), value.clone()).await;
    }

    let loaded = acquire(&ledger, "tab-a", 2_000).await;
    let mut set_aside: Vec<String> = loaded
        .quarantined
        .iter()
        .map(|q| format!("{}/{}", q.store, q.key))
        .collect();
    set_aside.sort();
    assert_eq!(
        set_aside,
        [
            "events/-3",
            "events/1000000000000",
            "events/5",
            "events/garbage"
        ]
    );
    assert!(loaded.quarantined.iter().all(|q| !q.reason.is_empty()));
    assert_eq!(
        loaded.snapshot.meta.last_event_seq, 10,
        "from the log's own records"
    );
    assert!(loaded.snapshot.events.is_empty(), "the load keeps no event");
    let seqs: Vec<u64> = ledger
        .events_after(0, 100)
        .await
        .expect("events")
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, (1..=10).collect::<Vec<u64>>());
    // Moved to `quarantine`, gone from the log; the next open is clean.
    let mut kept: Vec<String> = raw_keys(&name, schema::QUARANTINE)
        .await
        .iter()
        .filter_map(JsValue::as_string)
        .collect();
    kept.sort();
    assert_eq!(kept, set_aside);
    assert_eq!(raw_keys(&name, schema::EVENTS).await.len(), 5);
    let again = acquire(&ledger, "tab-a", 3_000).await;
    assert!(again.quarantined.is_empty(), "{:?}", again.quarantined);
    ledger.close();
    delete_database(&name).await;
}
