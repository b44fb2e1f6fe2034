//! Events reach `onEvent` as plain objects (typed as `SchedulerEvent`; built in
//! [`crate::web::tabs::events`]). A handler that throws never reaches the scheduler (S17).

use js_sys::Function;
use serde_json::Value;
use wasm_bindgen::JsValue;

use crate::web::json::to_js;

/// Calls `onEvent` with the event; whatever it throws is swallowed.
pub fn deliver(handler: &Function, event: &Value) {
    let _ = handler.call1(&JsValue::NULL, &to_js(event));
}
