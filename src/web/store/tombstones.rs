//! Tombstones of compacted operations (`crate::core::retention`) in their own store: written
//! by the batch that compacts ([`tombstone_value`]), looked up by id before an enqueue
//! ([`IdbLedger::tombstones`]), counted at load ([`tombstone_facts`]) — never loaded whole.

use wasm_bindgen::JsValue;

use super::codec::{decode, to_js};
use super::errors::js_error;
use super::requests::{index_get_each, issue_count, last_key, Tx};
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

/// The highest tombstone key stored, in a load's transaction (one cursor step: the load
/// reads no tombstone and does not count them, see [`IdbLedger::count_tombstones`]).
///
/// # Errors
///
/// The request's error.
pub async fn last_tombstone_key(tx: &Tx) -> Result<u64, JsValue> {
    last_key(&tx.store(TOMBSTONES)?).await
}

impl IdbLedger {
    /// Counts the stored tombstones in a read-only transaction begun now, before the future
    /// is polled: called right after the load, it counts what the load saw, whatever batches
    /// follow. Off the load's transaction because counting walks every key.
    pub fn count_tombstones(&self) -> impl std::future::Future<Output = Option<u64>> + 'static {
        let begun = self
            .db()
            .and_then(|db| self.begin(&db, &[TOMBSTONES], false));
        let issued = begun.and_then(|tx| {
            let store = tx.store(TOMBSTONES).map_err(|e| js_error(&e))?;
            Ok((tx, issue_count(&store)))
        });
        async move {
            let (tx, promise) = issued.ok()?;
            let count = wasm_bindgen_futures::JsFuture::from(promise).await.ok()?;
            drop(tx);
            count.as_f64().map(|n| n.max(0.0) as u64)
        }
    }

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
