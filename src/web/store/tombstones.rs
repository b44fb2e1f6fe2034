//! Tombstones of compacted operations (`crate::core::retention`), one page per batch that
//! compacts (`apply.js`) with its ids' hashes beside it: looked up by id before an
//! enqueue ([`IdbLedger::tombstones`]), counted after the load
//! ([`IdbLedger::count_tombstones`]) — never loaded whole. The pages' layout and the index
//! that finds them are in `requests.js` (its tombstone section).

use std::collections::BTreeSet;

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbObjectStore, IdbTransaction};

use super::codec::decode;
use super::errors::js_error;
use super::requests::Tx;
use super::schema::{BY_ID, SETTLED, TOMBSTONES, TOMBSTONE_HASHES};
use super::IdbLedger;
use crate::core::model::{Operation, OperationPhase};
use crate::core::retention::Tombstone;
use crate::core::safe_error::SafeError;

#[wasm_bindgen(module = "/src/web/store/requests.js")]
extern "C" {
    /// A store's index of its tombstone pages (kept by [`IdbLedger`], synced at each use).
    #[wasm_bindgen(js_name = newIndex)]
    pub fn new_index() -> JsValue;

    #[wasm_bindgen(js_name = lookUpTombstones)]
    fn look_up_tombstones(
        tx: &IdbTransaction,
        by_id: &str,
        index: &JsValue,
        ids: &Array,
        archive: Option<&str>,
    ) -> Promise;

    #[wasm_bindgen(js_name = countTombstones)]
    fn count_tombstones(tx: &IdbTransaction, index: &JsValue) -> Promise;

    #[wasm_bindgen(js_name = lastKey)]
    fn last_key_of(store: &IdbObjectStore) -> Promise;

    /// Notes the page of `ids` a batch of this ledger writes under `time`.
    #[wasm_bindgen(js_name = notePage)]
    pub fn note_page(index: &JsValue, time: f64, ids: &Array);

    /// False only when the index is complete and no page of it holds one of `ids`' hashes.
    #[wasm_bindgen(js_name = mayHold)]
    fn may_hold(index: &JsValue, ids: &Array) -> bool;
}

/// The highest tombstone key stored (0 when none), in a load's transaction (one cursor step:
/// the load reads no tombstone and does not count them, see [`IdbLedger::count_tombstones`]).
///
/// # Errors
///
/// The request's error.
pub async fn last_tombstone_key(tx: &Tx) -> Result<u64, JsValue> {
    let answer = JsFuture::from(last_key_of(&tx.store(TOMBSTONES)?)).await?;
    Ok(answer.as_f64().map_or(0, |n| n.max(0.0) as u64))
}

impl IdbLedger {
    /// Counts the stored tombstones in a read-only transaction begun now, before the future
    /// is polled: called right after the load, it counts what the load saw, whatever batches
    /// follow, and fills the page index the first enqueue's look-up then only tops up.
    pub fn count_tombstones(&self) -> impl std::future::Future<Output = Option<u64>> + 'static {
        let begun = self
            .db()
            .and_then(|db| self.begin(&db, &[TOMBSTONES, TOMBSTONE_HASHES], false));
        let issued = begun.map(|tx| {
            let count = count_tombstones(tx.raw(), &self.tombstone_index);
            (tx, count)
        });
        async move {
            let (tx, promise) = issued.ok()?;
            let count = JsFuture::from(promise).await.ok()?;
            drop(tx);
            count.as_f64().map(|n| n.max(0.0) as u64)
        }
    }

    /// The stored tombstones of `ids` (one read-only transaction; none when `ids` is empty),
    /// oldest first. A record or page that does not decode is skipped: a tombstone is a hint
    /// against resending, and the id then counts as unknown.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn tombstones(&self, ids: &[String]) -> Result<Vec<Tombstone>, SafeError> {
        self.look_up(ids).await
    }

    /// As [`tombstones`](Self::tombstones), for the lease holder's enqueue: no transaction
    /// when the page index, complete since the count after the load and kept by this ledger's
    /// own batches, holds none of `ids`' hashes (the common case: a new intent). A holder that
    /// lost the lease unawares may miss another tab's newest page; its batch is then refused at
    /// the lease read, so nothing is stored on that miss.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn leader_tombstones(&self, ids: &[String]) -> Result<Vec<Tombstone>, SafeError> {
        let names: Array = ids.iter().map(|id| JsValue::from_str(id)).collect();
        if !may_hold(&self.tombstone_index, &names) {
            return Ok(Vec::new());
        }
        self.look_up(ids).await
    }

    async fn look_up(&self, ids: &[String]) -> Result<Vec<Tombstone>, SafeError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let db = self.db()?;
        let tx = self.begin(&db, &LOOK_UP_STORES, false)?;
        look_up_in(&tx, &self.tombstone_index, ids)
            .await
            .map_err(|e| js_error(&e))
    }
}

/// The stores a tombstone look-up reads (add them to a transaction that calls [`look_up_in`]).
pub const LOOK_UP_STORES: [&str; 3] = [TOMBSTONES, TOMBSTONE_HASHES, SETTLED];

/// The stored tombstones of `ids`, each with its archived operation while the archive keeps
/// it, in `tx` (which covers [`LOOK_UP_STORES`]), oldest first; `index` is the ledger's index
/// of tombstone pages. A record or page that does not decode is skipped: a tombstone is a
/// hint against resending, and the id then counts as unknown.
///
/// # Errors
///
/// The request's error.
pub async fn look_up_in(
    tx: &Tx,
    index: &JsValue,
    ids: &[String],
) -> Result<Vec<Tombstone>, JsValue> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let names: Array = ids.iter().map(|id| JsValue::from_str(id)).collect();
    let found = look_up_tombstones(tx.raw(), BY_ID, index, &names, Some(SETTLED));
    let found: Array = JsFuture::from(found).await?.unchecked_into();
    let mut tombstones: Vec<Tombstone> = found
        .iter()
        .filter_map(|pair| {
            let pair: Array = pair.unchecked_into();
            let mut tombstone = decode::<Tombstone>(&pair.get(0)).ok()?;
            tombstone.whole = archived(&pair.get(1), &tombstone);
            Some(tombstone)
        })
        .collect();
    let asked: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    tombstones.retain(|tombstone| asked.contains(tombstone.id.as_str()));
    Ok(tombstones)
}

/// The archived copy of `tombstone`'s operation read beside it, if it is one: decoded, and
/// the settled operation of that id (a record that is not is ignored: the tombstone stands).
fn archived(value: &JsValue, tombstone: &Tombstone) -> Option<Box<Operation>> {
    if value.is_undefined() {
        return None;
    }
    let op = decode::<Operation>(value).ok()?;
    let settled = op.intent.id == tombstone.id
        && op.phase == OperationPhase::Resolved
        && op.outcome.is_some();
    settled.then(|| Box::new(op))
}
