//! IndexedDB transactions and requests through `requests.js`: a transaction watched from its
//! start (commit and abort are one promise each), a store read page by page (one call and one
//! promise per page, asked before it is needed so the browser reads while wasm decodes the
//! page before), and single reads awaited as one promise. Writes inside a transaction are
//! plain `web_sys` calls whose requests are not awaited: a failed one aborts the transaction,
//! which the commit reports.

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbDatabase, IdbObjectStore, IdbTransaction};

#[wasm_bindgen(module = "/src/web/store/requests.js")]
extern "C" {
    #[wasm_bindgen(js_name = readPage)]
    fn read_page(store: &JsValue, after: &JsValue, limit: u32) -> Promise;

    fn settle(request: &web_sys::IdbRequest) -> Promise;

    #[wasm_bindgen(catch)]
    fn begin(db: &IdbDatabase, stores: &Array, write: bool) -> Result<Array, JsValue>;
}

/// A strict-durability transaction, begun by `requests.js` and watched from its start
/// (complete or abort), so committing or aborting it is one promise. Dropped without
/// [`Tx::commit`], it is aborted: nothing it wrote lands.
pub struct Tx {
    raw: IdbTransaction,
    /// How it ends; taken by `commit` or `abort`.
    ended: Option<JsFuture>,
}

impl Tx {
    /// Begins a transaction over `stores`, read-write or read-only.
    ///
    /// # Errors
    ///
    /// The browser's error (`InvalidStateError` on a closed connection, `NotFoundError`).
    pub fn begin(db: &IdbDatabase, stores: &[&str], write: bool) -> Result<Self, JsValue> {
        let names: Array = stores
            .iter()
            .map(|store| JsValue::from_str(store))
            .collect();
        let pair = begin(db, &names, write)?;
        Ok(Self {
            raw: pair.get(0).unchecked_into(),
            ended: Some(JsFuture::from(Promise::from(pair.get(1)))),
        })
    }

    /// The transaction itself, for a `.js` function that issues its own requests.
    pub fn raw(&self) -> &IdbTransaction {
        &self.raw
    }

    /// One of the transaction's stores.
    ///
    /// # Errors
    ///
    /// `NotFoundError` for a store outside the transaction, `InvalidStateError` once it ended.
    pub fn store(&self, name: &str) -> Result<IdbObjectStore, JsValue> {
        self.raw.object_store(name)
    }

    /// Commits and waits for the outcome.
    ///
    /// # Errors
    ///
    /// The error that aborted the transaction instead (`QuotaExceededError`, `AbortError`, ...).
    pub async fn commit(mut self) -> Result<(), JsValue> {
        // Ends it now instead of when its last request answers; the outcome is the same.
        // (web-sys marks `commit` deprecated; every engine this runs in has it.)
        #[allow(deprecated)]
        let _ = self.raw.commit();
        let Some(ended) = self.ended.take() else {
            return Ok(());
        };
        match ended.await {
            Ok(outcome) if outcome.is_null() => Ok(()),
            Ok(error) | Err(error) => Err(error),
        }
    }

    /// Aborts (nothing it wrote lands) and waits until it has ended.
    pub async fn abort(mut self) {
        let _ = self.raw.abort();
        if let Some(ended) = self.ended.take() {
            let _ = ended.await;
        }
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        if self.ended.is_some() {
            // Neither committed nor aborted (an early return): abort, so a half-done write
            // never commits on its own. Throws only when it already ended; nothing to do then.
            let _ = self.raw.abort();
        }
    }
}

/// The answer of a request already made, to be awaited later (several can be issued first,
/// then awaited in order).
pub fn answer_of(request: &web_sys::IdbRequest) -> JsFuture {
    JsFuture::from(settle(request))
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

/// Puts `value` under `key` and waits for the request's answer. (WebKit prepares a `Blob`'s
/// data before it issues the put: a commit that does not wait for it ends the transaction
/// without the record and without an error.)
///
/// # Errors
///
/// The request's error (a `DOMException`).
pub async fn put(store: &IdbObjectStore, value: &JsValue, key: &JsValue) -> Result<(), JsValue> {
    let request = store.put_with_key(value, key)?;
    JsFuture::from(settle(&request)).await.map(|_| ())
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
