//! A storage probe: opens an IndexedDB database, writes one record in a strict-durability
//! readwrite transaction, then reads it back in a separate readonly transaction.
//!
//! It is the smallest real path from Rust to IndexedDB and back, used by the demo page and
//! the browser tests to prove that storage works where the package runs.

use canvas_scheduler_core::json_text::quoted;
use std::fmt;

use indexed_db_futures::database::Database;
use serde::ser::{Serialize, SerializeMap, Serializer};

use super::store::errors::js_error;
use super::store::requests::{get, Tx};
use super::store::upgrade::{open_upgraded, UpgradeFailure};
use wasm_bindgen::JsValue;

/// Object store the probe writes to.
pub const PROBE_STORE: &str = "probe";

/// Schema version of the probe database; version 1 creates [`PROBE_STORE`].
pub const PROBE_SCHEMA_VERSION: u32 = 1;

/// Longest database name the probe accepts, counted in `char`s (Unicode scalar values).
pub const MAX_DATABASE_NAME_CHARS: usize = 256;

/// The record written and read back. Its `nonce` differs on every probe, so reading back an
/// older record is detected as a mismatch. Written through serde-wasm-bindgen (a plain JS
/// object); read back field by field, which needs no deserializer in the `.wasm`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeRecord {
    /// Key of the record in [`PROBE_STORE`] (out-of-line key).
    pub key: String,
    /// A value unique to this probe.
    pub nonce: String,
    /// Wall-clock time of the write, in milliseconds since the Unix epoch.
    pub written_at_ms: f64,
}

/// Why a probe failed. Each variant has a stable [`code`](ProbeError::code).
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeError {
    /// The database name is empty or longer than [`MAX_DATABASE_NAME_CHARS`].
    InvalidDatabaseName,
    /// The database could not be opened or upgraded (no IndexedDB, a newer schema, blocked).
    Unavailable(String),
    /// The readwrite transaction failed or did not commit.
    WriteFailed(String),
    /// The readonly transaction failed, or the stored value was not a probe record.
    ReadFailed(String),
    /// The committed record was missing or different when read back.
    Mismatch {
        /// What was written.
        written: ProbeRecord,
        /// What was read back (`None`: nothing under the key).
        read: Option<ProbeRecord>,
    },
}

impl ProbeError {
    /// Stable machine-readable code, the `code` of the JS `Error`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidDatabaseName => "invalid_database_name",
            Self::Unavailable(_) => "storage_unavailable",
            Self::WriteFailed(_) => "storage_write_failed",
            Self::ReadFailed(_) => "storage_read_failed",
            Self::Mismatch { .. } => "probe_mismatch",
        }
    }
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidDatabaseName => write!(
                f,
                "database name must be 1 to {MAX_DATABASE_NAME_CHARS} characters"
            ),
            Self::Unavailable(why) => write!(f, "cannot open the database: {why}"),
            Self::WriteFailed(why) => write!(f, "cannot write the probe record: {why}"),
            Self::ReadFailed(why) => write!(f, "cannot read the probe record: {why}"),
            Self::Mismatch {
                written,
                read: None,
            } => {
                write!(
                    f,
                    "record {} was committed but is missing",
                    quoted(&written.key)
                )
            }
            Self::Mismatch { written, .. } => {
                write!(
                    f,
                    "record {} read back differs from what was written",
                    quoted(&written.key)
                )
            }
        }
    }
}

impl std::error::Error for ProbeError {}

/// Checks a database name before anything touches storage.
pub fn validate_database_name(name: &str) -> Result<(), ProbeError> {
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_DATABASE_NAME_CHARS {
        return Err(ProbeError::InvalidDatabaseName);
    }
    Ok(())
}

/// Opens `database_name` (creating [`PROBE_STORE`] on first use), puts `record` under its key,
/// commits, and returns what a fresh readonly transaction reads back under that key.
///
/// # Errors
///
/// [`ProbeError::InvalidDatabaseName`] before touching storage; otherwise the variant of the
/// step that failed. A read-back that differs from `record` is [`ProbeError::Mismatch`].
pub async fn write_and_read(
    database_name: &str,
    record: &ProbeRecord,
) -> Result<ProbeRecord, ProbeError> {
    validate_database_name(database_name)?;
    let db = open(database_name).await?;
    let outcome = write_then_read(&db, record).await;
    db.close();
    match outcome? {
        Some(read) if read == *record => Ok(read),
        read => Err(ProbeError::Mismatch {
            written: record.clone(),
            read,
        }),
    }
}

/// Opens the probe database at [`PROBE_SCHEMA_VERSION`], creating the store on upgrade.
///
/// # Errors
///
/// [`ProbeError::Unavailable`] when the database cannot be opened at that version.
pub async fn open(database_name: &str) -> Result<Database, ProbeError> {
    match open_upgraded(database_name, PROBE_SCHEMA_VERSION, create_store).await {
        Ok(db) => Ok(db),
        Err(UpgradeFailure::Newer) => Err(ProbeError::Unavailable(format!(
            "VersionError: the database is at a version above {PROBE_SCHEMA_VERSION}"
        ))),
        Err(UpgradeFailure::Failed(error)) => Err(ProbeError::Unavailable(format!(
            "{}: {}",
            error.code, error.message
        ))),
    }
}

/// Version 1 of the probe database: its one store.
fn create_store(db: &web_sys::IdbDatabase, old_version: f64) -> Result<(), JsValue> {
    if old_version < 1.0 {
        db.create_object_store(PROBE_STORE)?;
    }
    Ok(())
}

async fn write_then_read(
    db: &Database,
    record: &ProbeRecord,
) -> Result<Option<ProbeRecord>, ProbeError> {
    let write = |e: JsValue| {
        let error = js_error(&e);
        ProbeError::WriteFailed(format!("{}: {}", error.code, error.message))
    };
    // A plain JS object, written through serde-wasm-bindgen.
    let value = to_plain_object(record)
        .map_err(|e| ProbeError::WriteFailed(format!("cannot convert the record: {e}")))?;
    let tx = Tx::begin(db, &[PROBE_STORE], true).map_err(write)?;
    let store = tx.store(PROBE_STORE).map_err(write)?;
    store
        .put(&value, &JsValue::from_str(&record.key))
        .map_err(write)?;
    tx.commit().await.map_err(write)?;
    read(db, &record.key).await
}

/// Reads the probe record stored under `key` in an open probe database.
///
/// # Errors
///
/// [`ProbeError::ReadFailed`] when the transaction fails or the stored value is not a
/// [`ProbeRecord`].
pub async fn read(db: &Database, key: &str) -> Result<Option<ProbeRecord>, ProbeError> {
    let fail = |e: JsValue| {
        let error = js_error(&e);
        ProbeError::ReadFailed(format!("{}: {}", error.code, error.message))
    };
    let tx = Tx::begin(db, &[PROBE_STORE], false).map_err(fail)?;
    let store = tx.store(PROBE_STORE).map_err(fail)?;
    let stored = get(&store, &JsValue::from_str(key)).await.map_err(fail)?;
    stored
        .map(|value| ProbeRecord::from_js(&value))
        .transpose()
        .map_err(ProbeError::ReadFailed)
}

/// Written as a map with string keys, not a struct: serde-wasm-bindgen names a struct's
/// fields through a cache of interned JS strings (a hash table in the `.wasm` for the probe
/// alone). [`to_plain_object`] makes the map a plain object, so the result is the same.
impl Serialize for ProbeRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("key", &self.key)?;
        map.serialize_entry("nonce", &self.nonce)?;
        map.serialize_entry("writtenAtMs", &self.written_at_ms)?;
        map.end()
    }
}

/// `value` as a plain JS object, through serde-wasm-bindgen (maps as objects).
///
/// # Errors
///
/// serde-wasm-bindgen's, when a value has no JS form.
pub fn to_plain_object<T: Serialize>(value: &T) -> Result<JsValue, serde_wasm_bindgen::Error> {
    value.serialize(&serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true))
}

impl ProbeRecord {
    /// A stored probe record: a plain object with the three fields, nothing else checked.
    fn from_js(value: &JsValue) -> Result<Self, String> {
        let field = |name: &str| js_sys::Reflect::get(value, &JsValue::from_str(name)).ok();
        let text = |name: &str| {
            field(name)
                .and_then(|v| v.as_string())
                .ok_or_else(|| format!("the stored record has no string {name}"))
        };
        Ok(Self {
            key: text("key")?,
            nonce: text("nonce")?,
            written_at_ms: field("writtenAtMs")
                .and_then(|v| v.as_f64())
                .ok_or_else(|| "the stored record has no number writtenAtMs".to_owned())?,
        })
    }
}
