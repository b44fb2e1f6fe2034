//! Persistent storage (`persist` option): a browser may evict an origin's storage under
//! pressure unless it is persistent, and the ledger may hold work not yet sent. At open the
//! scheduler asks once (`navigator.storage.persist()`, where the global has it: a Window)
//! unless the storage is persistent already, and remembers the answer for `stats()`.
//! Nothing waits for it: a browser may take its time, or ask the user.

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// Whether the origin's storage is persistent: `Some(true)` granted, `Some(false)` not (or
/// not yet: a worker can read the state but not ask), `None` where the browser has no
/// `navigator.storage` (or it failed). With `ask` false only the state is read.
pub async fn persistence(ask: bool) -> Option<bool> {
    let navigator = Reflect::get(&js_sys::global(), &"navigator".into()).ok()?;
    let storage = Reflect::get(&navigator, &"storage".into()).ok()?;
    if !storage.is_object() {
        return None;
    }
    let persisted = call(&storage, "persisted").await;
    if persisted == Some(true) || !ask {
        return persisted;
    }
    call(&storage, "persist").await.or(persisted)
}

/// `storage[name]()`, a promise of a boolean; `None` when absent, thrown or not a boolean.
async fn call(storage: &JsValue, name: &str) -> Option<bool> {
    let method = Reflect::get(storage, &name.into())
        .ok()?
        .dyn_into::<Function>()
        .ok()?;
    let answer = method.call0(storage).ok()?;
    let promise = Promise::resolve(&answer);
    JsFuture::from(promise).await.ok()?.as_bool()
}
