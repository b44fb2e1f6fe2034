//! Events reach `onEvent` as plain objects (typed as `SchedulerEvent`; built in
//! [`crate::web::tabs::events`]). A handler that throws never reaches the scheduler.

use js_sys::Function;
use wasm_bindgen::JsValue;

/// Calls `onEvent` with the event; whatever it throws is swallowed.
pub fn deliver(handler: &Function, event: &JsValue) {
    let _ = handler.call1(&JsValue::NULL, event);
}
