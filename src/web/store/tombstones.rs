//! Tombstones of compacted operations (`crate::core::retention`) in their own store: written
//! by the batch that compacts ([`tombstone_value`]), looked up by id before an enqueue
//! ([`IdbLedger::tombstones`]), counted at load ([`tombstone_facts`]) — never loaded whole.

use wasm_bindgen::JsValue;

use super::codec::{decode, to_js};
use super::errors::js_error;
use super::requests::{count_and_last_key, index_get_each, Tx};
use super::schema::{BY_ID, TOMBSTONES};
use super::IdbLedger;
use crate::core::retention::Tombstone;
use crate::core::safe_error::SafeError;

/// The stored value of a tombstone: `{ id, json }` (the index `by_id` reads `id`).
///
/// # Errors
///
/// `unserializable_record`, or the error setting a field.
pub fn tombstone_value(tombstone: &Tombstone) -> Result<JsValue, SafeError> {
    let value = js_sys::Object::new();
    let fields = [
        ("id", JsValue::from_str(&tombstone.id)),
        ("json", to_js(tombstone)?),
    ];
    for (name, field) in fields {
        js_sys::Reflect::set(&value, &JsValue::from_str(name), &field).map_err(|e| js_error(&e))?;
    }
    Ok(value.into())
}

/// How many tombstones are stored and the highest key, in a load's transaction.
///
/// # Errors
///
/// The request's error.
pub async fn tombstone_facts(tx: &Tx) -> Result<(u64, u64), JsValue> {
    count_and_last_key(&tx.store(TOMBSTONES)?).await
}

impl IdbLedger {
    /// The stored tombstones of `ids` (one read-only transaction; none when `ids` is empty).
    /// A record that does not decode is skipped: it is a hint against resending, and the id
    /// then counts as unknown.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn tombstones(&self, ids: &[String]) -> Result<Vec<Tombstone>, SafeError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let db = self.db()?;
        let tx = self.begin(&db, &[TOMBSTONES], false)?;
        let store = tx.store(TOMBSTONES).map_err(|e| js_error(&e))?;
        let values = index_get_each(&store, BY_ID, ids)
            .await
            .map_err(|e| js_error(&e))?;
        Ok(values
            .iter()
            .filter(|value| !value.is_undefined())
            .filter_map(|value| js_sys::Reflect::get(value, &JsValue::from_str("json")).ok())
            .filter_map(|json| decode::<Tombstone>(&json).ok())
            .filter(|tombstone| ids.contains(&tombstone.id))
            .collect())
    }
}
