//! Reading a store page by page through `read.js`: one call and one promise per page, asked
//! before it is needed so the browser reads while wasm decodes the page before.

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen(module = "/src/web/store/read.js")]
extern "C" {
    #[wasm_bindgen(js_name = readPage)]
    fn read_page(store: &JsValue, after: &JsValue, limit: u32) -> Promise;
}

/// A page already asked of a store, to be awaited later.
pub struct PageRead(JsFuture);

impl PageRead {
    /// Asks `store` (an `IDBObjectStore` of a live transaction) for up to `limit` keys and
    /// records after `after` (from the start when `None`; every record when `limit` is 0), in
    /// key order. The request is issued before this returns.
    pub fn issue(store: &JsValue, after: Option<&JsValue>, limit: u32) -> Self {
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
