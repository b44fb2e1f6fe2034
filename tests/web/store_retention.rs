//! Retention in IndexedDB (docs/guarantees.md, "Retention and known()"): a version-6 ledger
//! upgrades in place, keeps its pending work and has its settled history compacted to tombstones by
//! the slices; tombstones are looked up by id, trimmed by age and count, and the same intent again
//! is never sent.

use canvas_scheduler::web::driver::{Driver, DriverOptions};
use canvas_scheduler::web::store::schema::{self, SCHEMA_VERSION};
use canvas_scheduler::web::store::upgrade::{open_current, upgrade_to};
use canvas_scheduler::web::store::IdbLedger;
use canvas_scheduler_core::{
    intent::IntentInput,
    retention::{RetentionPolicy, Tombstone},
    BlobRef, Known, OperationOutcome, OperationPhase, RequestPhase, SchedulerConfig, Settlement,
};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

use super::store_support::{
    acquire_fence, batch, db_name, operation, raw_get, raw_keys, raw_put, request,
};
use super::support::{delete_database, sleep};

/// Version 6 as its build created it: every store but `tombstones`.
fn version_6(db: &web_sys::IdbDatabase, _old: f64) -> Result<(), JsValue> {
    for store in [
        schema::OPERATIONS,
        schema::REQUESTS,
        schema::EVENTS,
        schema::BLOBS,
        schema::QUARANTINE,
        schema::V6_LEASE,
    ] {
        db.create_object_store(store)?;
    }
    let parameters = web_sys::IdbObjectStoreParameters::new();
    parameters.set_auto_increment(true);
    db.create_object_store_with_optional_parameters(schema::INBOX, &parameters)?;
    let index = web_sys::IdbIndexParameters::new();
    index.set_multi_entry(true);
    db.create_object_store(schema::OPERATION_PAGES)?
        .create_index_with_str_and_optional_parameters(schema::BY_OPERATION, "ids", &index)?;
    Ok(())
}

fn text<T: serde::Serialize + ?Sized>(value: &T) -> JsValue {
    JsValue::from_str(&canvas_scheduler_core::json_text::to_string(value))
}

pub(super) fn options(database: &str, owner: &str, retain: RetentionPolicy) -> DriverOptions {
    DriverOptions {
        database: database.to_owned(),
        // Nothing is sent: every test holds the scheduler.
        endpoint: "http://127.0.0.1:9".to_owned(),
        attempt_timeout_ms: 1_000,
        max_answer_bytes: canvas_scheduler::web::transport::DEFAULT_MAX_ANSWER_BYTES,
        load_page_size: 100,
        config: SchedulerConfig {
            owner: owner.to_owned(),
            retain,
            ..SchedulerConfig::default()
        },
        host: Default::default(),
        send_hooks: Default::default(),
        js_transport: None,
    }
}

fn keep_nothing() -> RetentionPolicy {
    RetentionPolicy {
        settled: 0,
        ..RetentionPolicy::default()
    }
}

/// The tombstone store's records as (newest key, tombstones held): `(key, 1)` for a single
/// record of version 7, `(time, hashes)` for a page keyed `[time]` (its hashes' count, read
/// from `tombstone_hashes`, which must hold the same times).
async fn tombstone_records(name: &str) -> Vec<(f64, usize)> {
    let mut records = Vec::new();
    let mut times = Vec::new();
    for key in raw_keys(name, schema::TOMBSTONES).await {
        match key.as_f64() {
            Some(n) => records.push((n, 1)),
            None => {
                let time = js_sys::Array::from(&key).get(0);
                let hashes = raw_get(name, schema::TOMBSTONE_HASHES, time.clone())
                    .await
                    .expect("a page's hashes beside it");
                let held = js_sys::Uint32Array::from(hashes).length() as usize;
                times.push(time.clone());
                records.push((time.as_f64().unwrap_or(-1.0), held));
            }
        }
    }
    let hash_keys = raw_keys(name, schema::TOMBSTONE_HASHES).await;
    assert_eq!(hash_keys.len(), times.len(), "no hashes without a page");
    records
}

async fn stored_tombstones(name: &str) -> usize {
    tombstone_records(name).await.iter().map(|(_, n)| n).sum()
}

fn keys(values: Vec<JsValue>) -> Vec<String> {
    values.iter().filter_map(JsValue::as_string).collect()
}

pub(super) fn same_intent_of(op: &canvas_scheduler_core::Operation) -> IntentInput {
    let intent = &op.intent;
    IntentInput {
        id: intent.id.clone(),
        sequence: None,
        operation_type: intent.operation_type.clone(),
        canvas_ids: intent.canvas_ids.clone(),
        dependencies: intent.dependencies.clone(),
        payload: intent.payload.clone(),
        expected_versions: Some(intent.expected_versions.clone()),
        run_id: intent.run_id.clone(),
        coalesce_key: intent.coalesce_key.clone(),
        blob: intent.blob.as_deref().cloned(),
    }
}

#[wasm_bindgen_test]
async fn w1_a_version_6_ledger_upgrades_keeps_pending_work_and_its_history_is_compacted() {
    let name = db_name("retention-upgrade");
    upgrade_to(&name, 6, version_6).await.expect("version 6");
    // Settled history: three applied operations with their resolved requests, one an upload
    // whose blob is stored; and two pending operations, one carried by a frozen request.
    let mut settled = Vec::new();
    for i in 1..=3u64 {
        let id = format!("done-{i}");
        let mut op = operation(&id, i);
        let request_id = format!("req-{id}");
        if i == 3 {
            op.intent.operation_type = "asset.upload".into();
            op.intent.canvas_ids.clear();
            op.intent.blob = Some(Box::new(BlobRef {
                id: "blob-3".into(),
                size: 1,
                media_type: "text/plain".into(),
                name: None,
            }));
        }
        op.phase = OperationPhase::Resolved;
        op.request_id = Some(request_id.clone());
        op.outcome = Some(Box::new(OperationOutcome {
            settlement: Settlement::Applied,
            request_id: Some(request_id.clone()),
            error: None,
            canonical: None,
            at: 1_700_000_000_000 + i,
        }));
        let mut req = request(&request_id, &id);
        req.phase = RequestPhase::Resolved;
        req.attempt = 1;
        raw_put(
            &name,
            schema::REQUESTS,
            request_id.as_str().into(),
            text(&req),
        )
        .await;
        raw_put(&name, schema::OPERATIONS, id.as_str().into(), text(&op)).await;
        settled.push(op);
    }
    raw_put(
        &name,
        schema::BLOBS,
        "blob-3".into(),
        js_sys::Object::new().into(),
    )
    .await;
    let pending = [operation("wait-4", 4), operation("wait-5", 5)];
    for op in &pending {
        raw_put(
            &name,
            schema::OPERATIONS,
            op.intent.id.as_str().into(),
            text(op),
        )
        .await;
    }
    raw_put(
        &name,
        schema::REQUESTS,
        "req-wait-5".into(),
        text(&request("req-wait-5", "wait-5")),
    )
    .await;

    let (driver, quarantined) = Driver::open(options(&name, "tab-a", keep_nothing()), None, false)
        .await
        .expect("open upgrades");
    assert!(quarantined.is_empty(), "{quarantined:?}");
    let hold = driver.hold().expect("hold");
    driver.start().expect("start");
    // Quiet (held): the slices compact the history.
    for _ in 0..50 {
        if stored_tombstones(&name).await == 3 {
            break;
        }
        sleep(20).await;
    }
    let db = open_current(&name).await.expect("reopen");
    assert_eq!(db.version(), f64::from(SCHEMA_VERSION));
    db.close();
    assert_eq!(stored_tombstones(&name).await, 3, "compacted");
    assert_eq!(
        keys(raw_keys(&name, schema::OPERATIONS).await),
        vec!["wait-4", "wait-5"],
        "pending work whole, settled records gone"
    );
    assert_eq!(
        keys(raw_keys(&name, schema::REQUESTS).await),
        vec!["req-wait-5"]
    );
    assert!(
        raw_keys(&name, schema::BLOBS).await.is_empty(),
        "the blob went with its upload"
    );
    let stats = driver.inspect(|s, _| s.stats());
    assert_eq!((stats.settled_kept, stats.tombstones), (0, 3));
    driver.release(hold);
    driver.stop();

    // Reopened: only the pending work loads; a compacted id is known by its tombstone.
    let (driver, _) = Driver::open(options(&name, "tab-b", keep_nothing()), None, true)
        .await
        .expect("reopen");
    let hold = driver.hold().expect("hold");
    driver.start().expect("start");
    let loaded = driver.inspect(|s, _| {
        let ledger = s.ledger();
        (
            ledger.operation_count(),
            ledger.operation("wait-5").map(|o| o.phase),
            ledger.tombstone("done-1").is_some(),
        )
    });
    assert_eq!(
        loaded,
        (2, Some(OperationPhase::Pending), false),
        "no tombstone loaded"
    );
    // Counted after the load, off its transaction.
    for _ in 0..50 {
        if driver.inspect(|s, _| s.stats().tombstones) == 3 {
            break;
        }
        sleep(20).await;
    }
    assert_eq!(driver.inspect(|s, _| s.stats().tombstones), 3);
    let known = driver
        .known(vec!["done-1".into(), "wait-4".into(), "never".into()])
        .await
        .expect("known");
    match &known[0] {
        Some(Known::Tombstone(t)) => {
            assert_eq!((t.outcome, t.compacted), (Settlement::Applied, true))
        }
        other => panic!("done-1 answers its tombstone, got {other:?}"),
    }
    assert!(matches!(known[1], Some(Known::Operation(_))));
    assert!(known[2].is_none());
    // The same intent again is known (never sent twice); other content is a duplicate.
    let again = same_intent_of(&settled[1]);
    driver
        .enqueue(vec![again.clone()])
        .await
        .expect("the same intent resolves");
    assert!(driver.inspect(|s, _| s.ledger().operation("done-2").is_none()));
    let mut other = again;
    other.canvas_ids = vec!["elsewhere".into()];
    let error = driver
        .enqueue(vec![other])
        .await
        .expect_err("other content");
    assert_eq!(error.code(), "duplicate_operation");
    driver.release(hold);
    driver.stop();
    delete_database(&name).await;
}

/// A tombstone record as a version-7 build wrote it: `{ id, json }` under its own key.
fn single_record(tombstone: &Tombstone) -> JsValue {
    let value = js_sys::Object::new();
    js_sys::Reflect::set(&value, &"id".into(), &tombstone.id.as_str().into()).expect("id");
    js_sys::Reflect::set(&value, &"json".into(), &text(tombstone)).expect("json");
    value.into()
}

#[wasm_bindgen_test]
async fn tombstones_are_paged_looked_up_by_id_and_trimmed_by_age_and_count() {
    let name = db_name("retention-trim");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab", 1).await;
    let tombstone = |key: u64| Tombstone {
        key,
        id: format!("t{key}"),
        principal: Some("user".into()),
        digest: "fnv1a64:0".into(),
        sequence: key,
        settlement: Settlement::Rejected,
        settled_at: key,
        replaced_by: None,
        chain_end: None,
        whole: None,
    };
    let done = assert_done;
    // Two records of a version-7 build, then two batches that compact: a page each.
    let put_single = |key: u64| {
        raw_put(
            &name,
            schema::TOMBSTONES,
            (key as f64).into(),
            single_record(&tombstone(key)),
        )
    };
    for key in 1..=2 {
        put_single(key).await;
    }
    for keys in [3..=5, 6..=9] {
        let mut write = batch(Some(fence));
        write.tombstones = keys.map(tombstone).collect();
        done(ledger.apply(&write).await);
    }
    assert_eq!(
        tombstone_records(&name).await,
        vec![(1.0, 1), (2.0, 1), (5.0, 3), (9.0, 4)],
        "single records below, one page per batch keyed by its newest"
    );
    let wanted = |ids: &[&str]| ids.iter().map(|id| id.to_string()).collect::<Vec<_>>();
    let found = ledger
        .tombstones(&wanted(&["t1", "t2", "t4", "t8", "t11"]))
        .await
        .expect("look up");
    assert_eq!(
        found,
        vec![tombstone(1), tombstone(2), tombstone(4), tombstone(8)]
    );
    assert_eq!(ledger.count_tombstones().await, Some(9));

    // Another tab takes the lease and compacts: this connection's index sees its page.
    let other = IdbLedger::open(&name).await.expect("open again");
    let fence = acquire_fence(&other, "tab-2", 20_000).await; // past the first lease
    let mut write = batch(Some(fence));
    write.tombstones = (10..=12).map(tombstone).collect();
    done(other.apply(&write).await);
    let found = ledger.tombstones(&wanted(&["t11"])).await.expect("look up");
    assert_eq!(found, vec![tombstone(11)]);

    // Below key 3 by age (the single records), then the newest 5 by count: pages are kept
    // whole, so the page that reaches the count stays and older ones go.
    let mut trim = batch(Some(fence));
    trim.trim_tombstones =
        Some(canvas_scheduler_core::retention::TombstoneTrim { below: 3, keep: 5 });
    done(other.apply(&trim).await);
    assert_eq!(tombstone_records(&name).await, vec![(9.0, 4), (12.0, 3)]);
    // A page deleted by another tab is no longer found (the index drops it).
    let found = ledger
        .tombstones(&wanted(&["t4", "t8"]))
        .await
        .expect("look up");
    assert_eq!(found, vec![tombstone(8)]);
    // By age, a page goes once its newest tombstone is below the limit.
    trim.trim_tombstones = Some(canvas_scheduler_core::retention::TombstoneTrim {
        below: 10,
        keep: 100,
    });
    done(other.apply(&trim).await);
    assert_eq!(tombstone_records(&name).await, vec![(12.0, 3)]);
    assert_eq!(ledger.count_tombstones().await, Some(3));
    // Count past single records: keep 5 of two pages (4) and two records.
    for key in [13, 14] {
        put_single(key).await;
    }
    let mut write = batch(Some(fence));
    write.tombstones = vec![tombstone(15)];
    done(other.apply(&write).await);
    trim.trim_tombstones =
        Some(canvas_scheduler_core::retention::TombstoneTrim { below: 0, keep: 5 });
    done(other.apply(&trim).await);
    assert_eq!(
        tombstone_records(&name).await,
        vec![(14.0, 1), (12.0, 3), (15.0, 1)],
        "the newest single record fills the count"
    );
    trim.trim_tombstones =
        Some(canvas_scheduler_core::retention::TombstoneTrim { below: 0, keep: 0 });
    done(other.apply(&trim).await);
    assert!(tombstone_records(&name).await.is_empty());
    ledger.close();
    other.close();
    delete_database(&name).await;
}

/// Asserts that a batch was written.
fn assert_done(result: canvas_scheduler_core::PersistResult) {
    assert!(
        matches!(result, canvas_scheduler_core::PersistResult::Done { .. }),
        "{result:?}"
    );
}

/// An applied operation's tombstone under `key`, with no principal.
fn applied_tombstone(key: u64, id: String) -> Tombstone {
    Tombstone {
        key,
        id,
        principal: None,
        digest: "fnv1a64:0".into(),
        sequence: key,
        settlement: Settlement::Applied,
        settled_at: key,
        replaced_by: None,
        chain_end: None,
        whole: None,
    }
}

/// `known(ids)` answers every tombstone the ledger holds, past the few thousand
/// kept in memory and across hundreds of pages (it answered 4,096 of 20,000 before).
#[wasm_bindgen_test]
async fn known_answers_every_tombstone_of_100000_compacted_operations() {
    const COUNT: u64 = 100_000;
    let name = db_name("retention-known-all");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab", 1).await;
    let tombstone = |key: u64| applied_tombstone(key, format!("op-{key}"));
    // As the slices write them: a page of at most 256 per batch.
    let mut first = 1;
    while first <= COUNT {
        let last = (first + 255).min(COUNT);
        let mut write = batch(Some(fence));
        write.tombstones = (first..=last).map(tombstone).collect();
        let result = ledger.apply(&write).await;
        assert!(
            matches!(result, canvas_scheduler_core::PersistResult::Done { .. }),
            "{result:?}"
        );
        first = last + 1;
    }
    ledger.close();

    let (driver, _) = Driver::open(
        options(&name, "tab-b", RetentionPolicy::default()),
        None,
        true,
    )
    .await
    .expect("open");
    let mut ids: Vec<String> = (1..=COUNT).map(|key| format!("op-{key}")).collect();
    ids.push("never".into());
    let known = driver.known(ids.clone()).await.expect("known");
    assert_eq!(known.len(), ids.len(), "one answer per id");
    let answered = known[..COUNT as usize]
        .iter()
        .zip(&ids)
        .filter(|(k, id)| matches!(k, Some(Known::Tombstone(t)) if &t.id == *id))
        .count();
    assert_eq!(answered, COUNT as usize, "every tombstone, in order");
    assert!(known[COUNT as usize].is_none(), "an id never stored");
    // A few ids of old pages, asked alone, after the many.
    let few = driver
        .known(vec!["op-1".into(), "op-257".into(), "op-99999".into()])
        .await
        .expect("known");
    assert!(
        few.iter().all(|k| matches!(k, Some(Known::Tombstone(_)))),
        "{few:?}"
    );
    driver.stop();
    delete_database(&name).await;
}

/// The lease holder's enqueue opens no transaction to look up tombstones
/// when no page may hold its ids: the page index is complete from the count after the load and
/// notes the pages of the ledger's own batches. An id a page holds is still looked up and found,
/// and so is any id before the count is done.
#[wasm_bindgen_test]
async fn a_leaders_look_up_reads_nothing_unless_a_page_may_hold_an_id() {
    let name = db_name("retention-leader-look-up");
    let ledger = IdbLedger::open(&name).await.expect("open");
    let fence = acquire_fence(&ledger, "tab", 1).await;
    let tombstone = |key: u64| applied_tombstone(key, format!("t{key}"));
    let write = |keys: std::ops::RangeInclusive<u64>| {
        let mut write = batch(Some(fence));
        write.tombstones = keys.map(tombstone).collect();
        write
    };
    let ids = |ids: &[&str]| ids.iter().map(|id| id.to_string()).collect::<Vec<_>>();
    let done = assert_done;
    done(ledger.apply(&write(1..=3)).await);
    // Before the count: the index is not complete, so the store is read.
    let before = ledger.transactions();
    let found = ledger
        .leader_tombstones(&ids(&["t2"]))
        .await
        .expect("look up");
    assert_eq!(found, vec![tombstone(2)]);
    assert_eq!(ledger.transactions() - before, 1);
    let before = ledger.transactions();
    assert!(ledger
        .leader_tombstones(&ids(&["new-1"]))
        .await
        .expect("look up")
        .is_empty());
    assert_eq!(ledger.transactions() - before, 1, "not complete yet: read");

    assert_eq!(ledger.count_tombstones().await, Some(3));
    // This ledger's own page after the count: noted, so found.
    done(ledger.apply(&write(4..=6)).await);
    let found = ledger
        .leader_tombstones(&ids(&["t5"]))
        .await
        .expect("look up");
    assert_eq!(
        found,
        vec![tombstone(5)],
        "the ledger's own page is in the index"
    );
    let before = ledger.transactions();
    for id in ["new-1", "new-2", "t99"] {
        assert!(ledger
            .leader_tombstones(&ids(&[id]))
            .await
            .expect("look up")
            .is_empty());
    }
    assert_eq!(
        ledger.transactions() - before,
        0,
        "no page holds them: nothing read"
    );
    let found = ledger
        .leader_tombstones(&ids(&["t6", "new-3", "t1"]))
        .await
        .expect("look up");
    assert_eq!(found, vec![tombstone(1), tombstone(6)]);
    assert_eq!(
        ledger.transactions() - before,
        1,
        "a page may hold them: read"
    );
    // Whoever is not sure to hold the lease reads the store: `tombstones` (known()) sees
    // another tab's page, which the leader's index, complete for its own lease, does not.
    let other = IdbLedger::open(&name).await.expect("open again");
    let fence = acquire_fence(&other, "tab-2", 20_000).await;
    let mut write = batch(Some(fence));
    write.tombstones = vec![tombstone(11)];
    done(other.apply(&write).await);
    let found = ledger.tombstones(&ids(&["t11"])).await.expect("look up");
    assert_eq!(found, vec![tombstone(11)]);
    // A new load starts it over: counted again, the other tab's page is in the index.
    assert_eq!(ledger.count_tombstones().await, Some(7));
    let found = ledger
        .leader_tombstones(&ids(&["t11"]))
        .await
        .expect("look up");
    assert_eq!(found, vec![tombstone(11)]);
    ledger.close();
    other.close();
    delete_database(&name).await;
}
