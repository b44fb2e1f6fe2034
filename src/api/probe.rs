//! `probeStorage`: proves that IndexedDB works where the package runs by writing one record
//! and reading it back, and reports what it did as a plain object.

use std::sync::atomic::{AtomicU32, Ordering};

use serde::ser::{Serialize, SerializeMap, Serializer};
use wasm_bindgen::prelude::*;

use js_sys::Promise;

use super::error::{js_error, INTERNAL_ERROR};
use super::promise::promise;
use crate::web::probe::{self, ProbeRecord, PROBE_SCHEMA_VERSION, PROBE_STORE};

/// Key under which `probeStorage` writes its record.
pub const PROBE_KEY: &str = "probe";

#[wasm_bindgen(typescript_custom_section)]
const PROBE_TYPES_TS: &str = r#"
/** The record `probeStorage` writes and reads back. */
export interface ProbeRecord {
  /** Out-of-line key in the `probe` object store. */
  key: string;
  /** Unique to one probe, so a stale record cannot pass for a fresh one. */
  nonce: string;
  /** Time of the write, ms since the Unix epoch. */
  writtenAtMs: number;
}

/** What `probeStorage` did. */
export interface ProbeReport {
  /** IndexedDB database name. */
  database: string;
  /** Object store written to. */
  store: string;
  /** Schema version the database was opened at. */
  schemaVersion: number;
  /** The record written in a strict-durability readwrite transaction. */
  written: ProbeRecord;
  /** The record read back in a separate readonly transaction (equal to `written`). */
  read: ProbeRecord;
  /** Wall-clock duration of open + write + read, in ms. */
  elapsedMs: number;
}
"#;

struct ProbeReport<'a> {
    database: &'a str,
    store: &'a str,
    schema_version: u32,
    written: &'a ProbeRecord,
    read: &'a ProbeRecord,
    elapsed_ms: f64,
}

/// A map, not a struct, for the reason given at `ProbeRecord`'s.
impl Serialize for ProbeReport<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(6))?;
        map.serialize_entry("database", self.database)?;
        map.serialize_entry("store", self.store)?;
        map.serialize_entry("schemaVersion", &self.schema_version)?;
        map.serialize_entry("written", self.written)?;
        map.serialize_entry("read", self.read)?;
        map.serialize_entry("elapsedMs", &self.elapsed_ms)?;
        map.end()
    }
}

static PROBE_COUNT: AtomicU32 = AtomicU32::new(0);

/// Opens the IndexedDB database `databaseName`, writes one record, reads it back in a new
/// transaction and resolves to a `ProbeReport` plain object saying what it did.
///
/// # Errors
///
/// Rejects with a `CanvasSchedulerError` whose `code` is `invalid_database_name`,
/// `storage_unavailable`, `storage_write_failed`, `storage_read_failed` or `probe_mismatch`.
#[wasm_bindgen(js_name = probeStorage, unchecked_return_type = "Promise<ProbeReport>")]
pub fn probe_storage(#[wasm_bindgen(js_name = databaseName)] database_name: String) -> Promise {
    promise(probe_report(database_name))
}

/// The probe itself: the report, or the error to reject with.
async fn probe_report(database_name: String) -> Result<JsValue, JsValue> {
    let started = js_sys::Date::now();
    let written = ProbeRecord {
        key: PROBE_KEY.to_owned(),
        nonce: fresh_nonce(started),
        written_at_ms: started,
    };
    let read = probe::write_and_read(&database_name, &written).await?;
    let report = ProbeReport {
        database: &database_name,
        store: PROBE_STORE,
        schema_version: PROBE_SCHEMA_VERSION,
        written: &written,
        read: &read,
        elapsed_ms: js_sys::Date::now() - started,
    };
    probe::to_plain_object(&report)
        .map_err(|e| js_error(INTERNAL_ERROR, &format!("cannot build the report: {e}")))
}

/// A nonce unique within this module instance (counter) and across instances (time, random).
fn fresh_nonce(now_ms: f64) -> String {
    let count = PROBE_COUNT.fetch_add(1, Ordering::Relaxed);
    // Both values are finite and non-negative; `as` saturates, it never panics.
    let random = (js_sys::Math::random() * 4_294_967_296.0) as u32;
    format!("{:x}-{count:x}-{random:08x}", now_ms as u64)
}
