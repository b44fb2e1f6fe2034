//! The IndexedDB probe of `canvas_scheduler::web::probe`, against real browser storage.

use canvas_scheduler::web::probe::{self, ProbeError, ProbeRecord, PROBE_STORE};
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::TransactionMode;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::{create_database, delete_database, unique_name};

fn record(nonce: &str) -> ProbeRecord {
    ProbeRecord {
        key: "probe".into(),
        nonce: nonce.into(),
        written_at_ms: 1_700_000_000_000.0,
    }
}

#[wasm_bindgen_test]
async fn writes_a_record_that_a_new_connection_reads_back() {
    let name = unique_name("roundtrip");
    let written = record("n-1");
    let read = probe::write_and_read(&name, &written).await;
    assert_eq!(read, Ok(written.clone()));

    // The probe closed its connection; the record must be durable for a new one.
    let db = probe::open(&name).await.expect("reopen");
    let stored = probe::read(&db, "probe").await;
    db.close();
    assert_eq!(stored, Ok(Some(written)));
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn a_second_probe_replaces_the_first_record() {
    let name = unique_name("overwrite");
    probe::write_and_read(&name, &record("first"))
        .await
        .expect("first probe");
    let second = probe::write_and_read(&name, &record("second")).await;
    assert_eq!(second.map(|r| r.nonce), Ok("second".to_owned()));
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn rejects_bad_names_before_touching_storage() {
    for name in [
        String::new(),
        "x".repeat(probe::MAX_DATABASE_NAME_CHARS + 1),
    ] {
        let error = probe::write_and_read(&name, &record("n"))
            .await
            .unwrap_err();
        assert_eq!(error, ProbeError::InvalidDatabaseName);
        assert_eq!(error.code(), "invalid_database_name");
    }
    let longest = "é".repeat(probe::MAX_DATABASE_NAME_CHARS);
    assert_eq!(probe::validate_database_name(&longest), Ok(()));
}

#[wasm_bindgen_test]
async fn a_newer_schema_is_reported_unavailable() {
    let name = unique_name("newer-schema");
    create_database(&name, probe::PROBE_SCHEMA_VERSION + 1, &[PROBE_STORE]).await;
    let error = probe::write_and_read(&name, &record("n"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "storage_unavailable", "{error}");
    assert!(error.to_string().contains("VersionError"), "{error}");
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn a_foreign_database_without_the_store_fails_the_write() {
    let name = unique_name("foreign");
    create_database(&name, probe::PROBE_SCHEMA_VERSION, &["something-else"]).await;
    let error = probe::write_and_read(&name, &record("n"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "storage_write_failed", "{error}");
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn a_foreign_value_under_the_key_fails_the_read() {
    let name = unique_name("foreign-value");
    let db = probe::open(&name).await.expect("open");
    let tx = db
        .transaction(PROBE_STORE)
        .with_mode(TransactionMode::Readwrite)
        .build()
        .expect("tx");
    let store = tx.object_store(PROBE_STORE).expect("store");
    store
        .put("not a probe record")
        .with_key("probe")
        .primitive()
        .expect("put")
        .await
        .expect("put result");
    tx.commit().await.expect("commit");

    let error = probe::read(&db, "probe").await.unwrap_err();
    let absent = probe::read(&db, "absent").await;
    db.close();
    assert_eq!(error.code(), "storage_read_failed", "{error}");
    assert_eq!(absent, Ok(None));
    delete_database(&name).await;
}
