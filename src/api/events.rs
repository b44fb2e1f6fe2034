//! Reports become `onEvent` objects (typed as `SchedulerEvent`). A handler that throws never
//! reaches the scheduler (S17).

use js_sys::{Function, Object, Reflect};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;

use crate::core::io::Report;
use crate::web::json::to_js;

/// The event object for one report.
pub fn event_json(report: &Report) -> Value {
    let mut event = match report {
        Report::Settled {
            operation_id,
            request_id,
            settlement,
            error,
            canonical,
        } => json!({
            "type": "settled", "operationId": operation_id, "requestId": request_id,
            "outcome": settlement.as_str(), "error": error, "canonical": canonical,
        }),
        Report::Blocked {
            operation_id,
            request_id,
            reason,
        } => json!({
            "type": "blocked", "operationId": operation_id, "requestId": request_id, "reason": reason,
        }),
        Report::DeadLettered {
            operation_ids,
            request_id,
            error,
        } => json!({
            "type": "dead_lettered", "operationIds": operation_ids, "requestId": request_id, "error": error,
        }),
        Report::Error(error) => {
            json!({ "type": "error", "code": error.code(), "message": error.message })
        }
        Report::LeaderChanged { leader, fence } => {
            json!({ "type": "leader_changed", "leader": leader, "fence": fence })
        }
    };
    // Absent, not null: the declarations say `field?: T`.
    if let Value::Object(map) = &mut event {
        map.retain(|_, v| !v.is_null());
    }
    event
}

/// Calls `onEvent` with the event; whatever it throws is swallowed.
pub fn deliver(handler: &Function, report: &Report) {
    let _ = handler.call1(&JsValue::NULL, &to_js(&event_json(report)));
}

/// A `quarantined` event for a record set aside at load (D4).
pub fn quarantined(handler: &Function, store: &str, key: &str, reason: &str) {
    let event = Object::new();
    let _ = Reflect::set(&event, &"type".into(), &"quarantined".into());
    let _ = Reflect::set(&event, &"store".into(), &store.into());
    let _ = Reflect::set(&event, &"key".into(), &key.into());
    let _ = Reflect::set(&event, &"reason".into(), &reason.into());
    let _ = handler.call1(&JsValue::NULL, &event);
}
