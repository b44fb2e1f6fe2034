//! Async exports as JS promises, through one conversion.

use std::future::Future;
use std::pin::Pin;

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::web::task::spawn;

#[wasm_bindgen(module = "/src/api/boundary.js")]
extern "C" {
    /// `[promise, resolve, reject]`.
    fn deferred() -> Array;
}

/// `work` as a JS promise, settled with its result. Every async export goes through this one
/// conversion, where each `async fn` export would bring its own copy of the promise, task and
/// callback glue; and wasm-bindgen declares the promise exactly as the export's
/// `unchecked_return_type` says, where it wrapped an `async fn`'s declared promise type in a
/// second `Promise<…>`. The work starts on the next microtask, as `future_to_promise`'s did.
pub fn promise(work: impl Future<Output = Result<JsValue, JsValue>> + 'static) -> Promise {
    settled_by(Box::pin(work))
}

/// The one copy of the promise glue: `work` is boxed before it gets here.
fn settled_by(work: Pin<Box<dyn Future<Output = Result<JsValue, JsValue>>>>) -> Promise {
    let parts = deferred();
    let settle = |at: u32| parts.get(at).unchecked_into::<Function>();
    let (resolve, reject) = (settle(1), settle(2));
    spawn(async move {
        // A settle function never throws: the promise is ours and settled once.
        let _ = match work.await {
            Ok(value) => resolve.call1(&JsValue::UNDEFINED, &value),
            Err(error) => reject.call1(&JsValue::UNDEFINED, &error),
        };
    });
    parts.get(0).unchecked_into()
}
