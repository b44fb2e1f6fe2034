//! What the ledger stores of ids, for `known(ids)` in a tab that does not dispatch: it holds
//! none of the ledger in memory, so it reads the working stores and the tombstones.

use std::collections::BTreeMap;

use wasm_bindgen::JsValue;

use canvas_scheduler_core::{
    packed::decode_page, retention::Tombstone, Known, Operation, SafeError,
};

use super::codec::{decode, page_text};
use super::errors::js_error;
use super::requests::Tx;
use super::schema::{BY_OPERATION, OPERATIONS, OPERATION_PAGES};
use super::tombstones::{look_up_in, PageIndex, LOOK_UP_STORES};
use super::IdbLedger;

impl IdbLedger {
    /// The stored record of each of `ids`, in order: the operation in the working stores
    /// (its own record, else the newest page holding it), else its tombstone (whole while the
    /// archive keeps it), else `None` (never stored, its tombstone is gone, or its record does
    /// not decode: the dispatching tab's next load sets that aside). One read-only transaction:
    /// the batch that compacts an operation deletes it and writes its tombstone together, so
    /// the read finds it in one or the other whatever the dispatching tab does meanwhile.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn known_records(&self, ids: &[String]) -> Result<Vec<Option<Known>>, SafeError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let db = self.db()?;
        let stores = [
            OPERATIONS,
            OPERATION_PAGES,
            LOOK_UP_STORES[0],
            LOOK_UP_STORES[1],
            LOOK_UP_STORES[2],
        ];
        let tx = self.begin(&db, &stores, false)?;
        read(&tx, &self.tombstone_index, ids)
            .await
            .map_err(|e| js_error(&e))
    }
}

async fn read(
    tx: &Tx<'_>,
    index: &std::cell::RefCell<PageIndex>,
    ids: &[String],
) -> Result<Vec<Option<Known>>, JsValue> {
    let mut answers: Vec<Option<Known>> = vec![None; ids.len()];
    // Every request is issued before the first is awaited: one round trip, not one an id.
    let records = tx.store(OPERATIONS)?;
    let asked = ids
        .iter()
        .map(|id| records.get(&JsValue::from_str(id)))
        .collect::<Result<Vec<_>, _>>()?;
    for (at, answer) in asked.into_iter().enumerate() {
        if let Some(value) = answer.value().await? {
            answers[at] = decode::<Operation>(&value)
                .ok()
                .map(|op| Known::Operation(Box::new(op)));
        }
    }
    // Not rewritten since its first write: its copy is in the newest page holding it.
    let pages = tx.store(OPERATION_PAGES)?;
    let by_operation = pages.index(BY_OPERATION)?;
    let missing: Vec<usize> = (0..ids.len()).filter(|at| answers[*at].is_none()).collect();
    let asked = missing
        .iter()
        .map(|at| {
            let key = JsValue::from_str(&ids[*at]);
            by_operation.get_all_keys(&key)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut homes: Vec<(usize, f64)> = Vec::new();
    for (at, answer) in missing.iter().zip(asked) {
        let keys = answer.values().await?;
        let newest = keys.iter().filter_map(|k| k.as_f64()).reduce(f64::max);
        if let Some(no) = newest {
            homes.push((*at, no));
        }
    }
    let mut numbers: Vec<f64> = homes.iter().map(|(_, no)| *no).collect();
    numbers.sort_by(f64::total_cmp);
    numbers.dedup();
    let asked = numbers
        .iter()
        .map(|no| pages.get(&JsValue::from_f64(*no)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut decoded: Vec<Vec<Operation>> = Vec::with_capacity(numbers.len());
    for answer in asked {
        let value = answer.value().await?.unwrap_or_default();
        let page = page_text(&value)
            .ok()
            .and_then(|json| decode_page(&json).ok());
        decoded.push(page.unwrap_or_default());
    }
    for (at, no) in homes {
        let Ok(page) = numbers.binary_search_by(|n| n.total_cmp(&no)) else {
            continue;
        };
        let id = ids[at].as_str();
        answers[at] = decoded[page]
            .iter()
            .find(|op| op.intent.id == id)
            .cloned()
            .map(|op| Known::Operation(Box::new(op)));
    }
    // Not in the working stores: settled and compacted, if its tombstone says so.
    let missing: Vec<String> = (0..ids.len())
        .filter(|at| answers[*at].is_none())
        .map(|at| ids[at].clone())
        .collect();
    let found = look_up_in(tx, index, &missing).await?;
    let by_id: BTreeMap<&str, &Tombstone> = found.iter().map(|t| (t.id.as_str(), t)).collect();
    for (id, answer) in ids.iter().zip(answers.iter_mut()) {
        if answer.is_none() {
            *answer = by_id.get(id.as_str()).map(|t| Known::from(*t));
        }
    }
    Ok(answers)
}
