//! Async exports as JS promises, through one conversion.

use std::future::Future;
use std::pin::Pin;

use js_sys::futures::future_to_promise;
use js_sys::Promise;
use wasm_bindgen::JsValue;

/// `work` as a JS promise. Every async export goes through this one conversion (a boxed
/// future), where each `async fn` export would bring its own copy of the promise, task and
/// callback glue; and wasm-bindgen declares the promise exactly as the export's
/// `unchecked_return_type` says, where it wrapped an `async fn`'s declared promise type in a
/// second `Promise<…>`.
pub fn promise(work: impl Future<Output = Result<JsValue, JsValue>> + 'static) -> Promise {
    let work: Pin<Box<dyn Future<Output = Result<JsValue, JsValue>>>> = Box::pin(work);
    future_to_promise(work)
}
