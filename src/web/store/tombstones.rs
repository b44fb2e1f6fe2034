//! Tombstones of compacted operations (`canvas_scheduler_core::retention`), one page per batch that
//! compacts with its ids' hashes beside it: looked up by id before an enqueue
//! ([`IdbLedger::tombstones`]), counted after the load ([`IdbLedger::count_tombstones`]) —
//! never loaded whole.
//!
//! Each batch that compacts writes its tombstones as one page (`apply.rs`, [`page_writes`]):
//! in `tombstones` under the key `[time]` (the newest tombstone key in the page; arrays sort
//! above every number), the JSON text of the tombstones; in `tombstone_hashes` under `time`, a
//! `Uint32Array` of a 32-bit hash of each id ([`id_hash`]). No index row is written per
//! tombstone: an id is found through the hashes. Single records of version 7 (a number key
//! each, an index `by_id` on `id`) stay readable below the pages. Both kinds grow with time,
//! so every trim deletes a prefix.
//!
//! The index of pages (time → sorted hashes, a [`PageIndex`] of the ledger's own) is synced
//! at each look-up in the look-up's transaction: pages above the last one it knows are added,
//! pages below the first one stored are dropped (trims delete from the oldest). Another tab's
//! pages are therefore seen before they are needed.
//!
//! It is complete from the count after a load (which syncs it in a transaction that sees what
//! the load saw) while this ledger writes every page ([`PageIndex::note_page`], as its batches
//! are made): only the lease holder writes pages, so an enqueue of the leader can tell from
//! memory that no page holds its ids ([`PageIndex::may_hold`]) and skip the look-up's
//! transaction. A page noted for a batch that failed, or trimmed since, only costs a look-up;
//! the next load and count start it over.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use js_sys::{Array, Reflect, Uint32Array, JSON};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use canvas_scheduler_core::{retention::Tombstone, Operation, OperationPhase, SafeError};

use super::codec::decode;
use super::errors::js_error;
use super::requests::{Answer, PageRead, Store, Tx};
use super::schema::{BY_ID, SETTLED, TOMBSTONES, TOMBSTONE_HASHES};
use super::IdbLedger;

/// Where the tombstone pages are and which id hashes each holds.
#[derive(Default)]
pub(super) struct PageIndex {
    /// Each page's time and its hashes, sorted.
    pages: BTreeMap<u64, Vec<u32>>,
    /// The highest page time read from storage.
    last: Option<u64>,
    /// Single records of version 7 counted by the last count (`None`: not counted yet).
    legacy: Option<u32>,
    /// Whether every page stored is in `pages` (see the module's documentation).
    complete: bool,
}

impl PageIndex {
    /// Notes the page of `ids` a batch of this ledger writes under `time`. `last` stays: the
    /// next sync still reads every stored page above the last one it read.
    pub(super) fn note_page<'a>(&mut self, time: u64, ids: impl IntoIterator<Item = &'a str>) {
        let mut sorted: Vec<u32> = ids.into_iter().map(id_hash).collect();
        sorted.sort_unstable();
        self.pages.insert(time, sorted);
    }

    /// False only when the index is complete and none of its pages holds the hash of one of
    /// `ids`: then no tombstone of them is stored, and a look-up would find none.
    pub(super) fn may_hold(&self, ids: &[String]) -> bool {
        if !self.complete || self.legacy != Some(0) {
            return true;
        }
        let wanted: Vec<u32> = ids.iter().map(|id| id_hash(id)).collect();
        !self.pages_holding(&wanted).is_empty()
    }

    /// The times of the pages holding one of the hashes `wanted`. Whichever side is shorter is
    /// walked: a few ids search each page, many ids (`known()` of a whole history) are a set
    /// each page's hashes are checked against.
    fn pages_holding(&self, wanted: &[u32]) -> Vec<u64> {
        let set: BTreeSet<u32> = wanted.iter().copied().collect();
        self.pages
            .iter()
            .filter(|(_, sorted)| {
                if sorted.len() < wanted.len() {
                    sorted.iter().any(|hash| set.contains(hash))
                } else {
                    wanted.iter().any(|hash| sorted.binary_search(hash).is_ok())
                }
            })
            .map(|(time, _)| *time)
            .collect()
    }

    fn stored(&self) -> u64 {
        let pages: usize = self.pages.values().map(Vec::len).sum();
        u64::from(self.legacy.unwrap_or(0)) + pages as u64
    }
}

/// The 32-bit hash of an operation id a page's hashes hold: FNV-1a over its UTF-16 code
/// units (what the pages written since version 8 hold).
pub(super) fn id_hash(id: &str) -> u32 {
    id.encode_utf16().fold(0x811c_9dc5_u32, |hash, unit| {
        (hash ^ u32::from(unit)).wrapping_mul(0x0100_0193)
    })
}

/// The two puts of the page of `tombstones` (their JSON text `json`) whose newest key is
/// `time`: `(store, key, value)` each.
pub(super) fn page_writes(
    time: u64,
    tombstones: &[Tombstone],
    json: JsValue,
) -> [(&'static str, JsValue, JsValue); 2] {
    let hashes: Vec<u32> = tombstones.iter().map(|t| id_hash(&t.id)).collect();
    let time = JsValue::from_f64(time as f64);
    [
        (TOMBSTONES, Array::of1(&time).into(), json),
        (
            TOMBSTONE_HASHES,
            time,
            Uint32Array::from(hashes.as_slice()).into(),
        ),
    ]
}

/// A page time as stored (a whole number at or above 0), else `None`.
fn time_of(key: &JsValue) -> Option<u64> {
    key.as_f64()
        .filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n <= 9_007_199_254_740_991.0)
        .map(|n| n as u64)
}

/// Brings `index` up to date with the `hashes` store, in the caller's transaction: every page
/// above the last one it knows, and the first page time stored (one key-cursor step).
async fn sync(hashes: &Store<'_>, index: &RefCell<PageIndex>) -> Result<(), JsValue> {
    let last = index
        .borrow()
        .last
        .map(|time| JsValue::from_f64(time as f64));
    let added = PageRead::issue(hashes, last.as_ref(), 0);
    let first = hashes.edge_key(false).await?;
    let (times, added) = added.keys_and_values().await?;
    let floor = first.as_ref().and_then(time_of);
    let mut index = index.borrow_mut();
    match floor {
        Some(floor) => index.pages.retain(|time, _| *time >= floor),
        None => index.pages.clear(),
    }
    for (time, hashes) in times.iter().zip(added) {
        let Some(time) = time_of(time) else { continue };
        let mut sorted = Uint32Array::new(&hashes).to_vec();
        sorted.sort_unstable();
        index.pages.insert(time, sorted);
        index.last = Some(index.last.map_or(time, |last| last.max(time)));
    }
    Ok(())
}

/// The highest tombstone key stored (of a page's array key, its first member; 0 when none),
/// in a load's transaction (one cursor step: the load reads no tombstone and does not count
/// them, see [`IdbLedger::count_tombstones`]).
///
/// # Errors
///
/// The request's error.
pub(super) async fn last_tombstone_key(tx: &Tx<'_>) -> Result<u64, JsValue> {
    let Some(key) = tx.store(TOMBSTONES)?.edge_key(true).await? else {
        return Ok(0);
    };
    let key = match key.dyn_ref::<Array>() {
        Some(array) => array.get(0),
        None => key,
    };
    Ok(key.as_f64().map_or(0, |n| n.max(0.0) as u64))
}

impl IdbLedger {
    /// Counts the stored tombstones in a read-only transaction begun when first polled:
    /// awaited right after the load, it counts what the load saw, whatever batches follow,
    /// and fills the page index the first enqueue's look-up then only tops up. Pages are
    /// counted by their hashes, single records by IndexedDB's count (which walks their keys).
    pub async fn count_tombstones(&self) -> Option<u64> {
        let db = self.db().ok()?;
        let tx = self
            .begin(&db, &[TOMBSTONES, TOMBSTONE_HASHES], false)
            .ok()?;
        let index = &self.tombstone_index;
        // Until it is done, look-ups read the store.
        index.borrow_mut().complete = false;
        let counted = tx.store(TOMBSTONES).ok()?.count_below(&Array::new()).ok()?;
        sync(&tx.store(TOMBSTONE_HASHES).ok()?, index).await.ok()?;
        let legacy = counted.await.ok()?;
        let mut index = index.borrow_mut();
        index.legacy = Some(legacy);
        index.complete = true;
        Some(index.stored())
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
        if !self.tombstone_index.borrow().may_hold(ids) {
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
pub(super) const LOOK_UP_STORES: [&str; 3] = [TOMBSTONES, TOMBSTONE_HASHES, SETTLED];

/// The stored tombstones of `ids`, each with its archived operation while the archive keeps
/// it, in `tx` (which covers [`LOOK_UP_STORES`]), oldest first; `index` is the ledger's index
/// of tombstone pages. The single records of version 7 under each id (index `by_id`) come
/// first, then those of `ids` in every page holding one of their hashes. A record or page
/// that does not decode is skipped: a tombstone is a hint against resending, and the id then
/// counts as unknown.
///
/// # Errors
///
/// The request's error.
pub(super) async fn look_up_in(
    tx: &Tx<'_>,
    index: &RefCell<PageIndex>,
    ids: &[String],
) -> Result<Vec<Tombstone>, JsValue> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let store = tx.store(TOMBSTONES)?;
    let records: Vec<Answer> = if index.borrow().legacy == Some(0) {
        Vec::new()
    } else {
        let by_id = store.index(BY_ID)?;
        ids.iter()
            .map(|id| by_id.get(&JsValue::from_str(id)))
            .collect::<Result<_, _>>()?
    };
    sync(&tx.store(TOMBSTONE_HASHES)?, index).await?;
    let wanted: Vec<u32> = ids.iter().map(|id| id_hash(id)).collect();
    let times = index.borrow().pages_holding(&wanted);
    let pages: Vec<Answer> = times
        .iter()
        .map(|time| store.get(&Array::of1(&JsValue::from_f64(*time as f64)).into()))
        .collect::<Result<_, _>>()?;
    // Each found tombstone's JSON text and key.
    let mut found: Vec<(JsValue, Option<f64>)> = Vec::new();
    for record in records {
        let Some(record) = record.value().await? else {
            continue;
        };
        let json = Reflect::get(&record, &JsValue::from_str("json")).unwrap_or_default();
        let Some(text) = json.as_string() else {
            continue;
        };
        let key = JSON::parse(&text)
            .ok()
            .and_then(|parsed| Reflect::get(&parsed, &JsValue::from_str("key")).ok())
            .and_then(|key| key.as_f64());
        found.push((json, key));
    }
    let asked: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    for page in pages {
        let Some(text) = page.value().await?.and_then(|page| page.as_string()) else {
            continue;
        };
        let Some(tombstones) = JSON::parse(&text)
            .ok()
            .and_then(|parsed| parsed.dyn_into::<Array>().ok())
        else {
            continue;
        };
        for tombstone in tombstones.iter().filter(JsValue::is_object) {
            let id = Reflect::get(&tombstone, &JsValue::from_str("id")).unwrap_or_default();
            if id.as_string().is_some_and(|id| asked.contains(id.as_str())) {
                let key = Reflect::get(&tombstone, &JsValue::from_str("key")).unwrap_or_default();
                found.push((JSON::stringify(&tombstone)?.into(), key.as_f64()));
            }
        }
    }
    let shelf = tx.store(SETTLED)?;
    let wholes: Vec<Option<Answer>> = found
        .iter()
        .map(|(_, key)| {
            key.map(|key| shelf.get(&JsValue::from_f64(key)))
                .transpose()
        })
        .collect::<Result<_, _>>()?;
    let mut tombstones = Vec::with_capacity(found.len());
    for ((json, _), whole) in found.into_iter().zip(wholes) {
        let whole = match whole {
            Some(answer) => answer.value().await?,
            None => None,
        };
        let Ok(mut tombstone) = decode::<Tombstone>(&json) else {
            continue;
        };
        tombstone.whole = whole.and_then(|value| archived(&value, &tombstone));
        if asked.contains(tombstone.id.as_str()) {
            tombstones.push(tombstone);
        }
    }
    Ok(tombstones)
}

/// The archived copy of `tombstone`'s operation read beside it, if it is one: decoded, and
/// the settled operation of that id (a record that is not is ignored: the tombstone stands).
fn archived(value: &JsValue, tombstone: &Tombstone) -> Option<Box<Operation>> {
    if !value.is_string() {
        return None;
    }
    let op = decode::<Operation>(value).ok()?;
    let settled = op.intent.id == tombstone.id
        && op.phase == OperationPhase::Resolved
        && op.outcome.is_some();
    settled.then(|| Box::new(op))
}
