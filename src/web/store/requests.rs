//! IndexedDB requests through `requests.js`: a store read page by page (one call and one
//! promise per page, asked before it is needed so the browser reads while wasm decodes the
//! page before), and single reads awaited as one promise. Writes inside a transaction are
//! plain `web_sys` calls whose requests are not awaited: a failed one aborts the transaction,
//! which the commit reports.

use indexed_db_futures::internals::SystemRepr;
use indexed_db_futures::object_store::ObjectStore;
use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::IdbObjectStore;

#[wasm_bindgen(module = "/src/web/store/requests.js")]
extern "C" {
    #[wasm_bindgen(js_name = readPage)]
    fn read_page(store: &JsValue, after: &JsValue, limit: u32) -> Promise;

    fn settle(request: &web_sys::IdbRequest) -> Promise;
}

/// The `IDBObjectStore` behind a store of a live transaction.
pub fn raw_store<'a>(store: &'a ObjectStore<'_>) -> &'a IdbObjectStore {
    store.as_sys()
}

/// The record under `key`, `None` when there is none.
///
/// # Errors
///
/// The request's error (a `DOMException`).
pub async fn get(store: &IdbObjectStore, key: &JsValue) -> Result<Option<JsValue>, JsValue> {
    let request = store.get(key)?;
    let value = JsFuture::from(settle(&request)).await?;
    Ok((!value.is_undefined()).then_some(value))
}

/// Every record `index` holds under `key`, in primary-key order.
///
/// # Errors
///
/// The request's error (a `DOMException`).
pub async fn index_get_all(
    store: &IdbObjectStore,
    index: &str,
    key: &JsValue,
) -> Result<Vec<JsValue>, JsValue> {
    let request = store.index(index)?.get_all_with_key(key)?;
    let records = JsFuture::from(settle(&request)).await?;
    Ok(records
        .dyn_into::<Array>()
        .map(|records| records.to_vec())
        .unwrap_or_default())
}

/// A page already asked of a store, to be awaited later.
pub struct PageRead(JsFuture);

impl PageRead {
    /// Asks `store` (an `IDBObjectStore` of a live transaction) for up to `limit` keys and
    /// records after `after` (from the start when `None`; every record when `limit` is 0), in
    /// key order. The request is issued before this returns.
    pub fn issue(store: &IdbObjectStore, after: Option<&JsValue>, limit: u32) -> Self {
        let from_start = JsValue::UNDEFINED;
        let after = after.unwrap_or(&from_start);
        Self(JsFuture::from(read_page(store, after, limit)))
    }

    /// The page's keys and records, in key order. The continuation runs in the success
    /// event's microtask checkpoint, while the transaction is still active.
    ///
    /// # Errors
    ///
    /// The request's error (a `DOMException`), or a description of an answer that is not
    /// `[keys, values]`.
    pub async fn keys_and_values(self) -> Result<(Vec<JsValue>, Vec<JsValue>), JsValue> {
        let answer = self.0.await?;
        let pair = |at: u32| {
            answer
                .dyn_ref::<Array>()
                .map(|pair| pair.get(at))
                .and_then(|part| part.dyn_into::<Array>().ok())
                .map(|part| part.to_vec())
        };
        match (pair(0), pair(1)) {
            (Some(keys), Some(values)) => Ok((keys, values)),
            _ => Err(JsValue::from_str(
                "readPage answered something other than [keys, values]",
            )),
        }
    }
}
