//! Event objects as `onEvent` receives them (typed `SchedulerEvent`), built as JSON so the
//! dispatching tab can relay them to the tab that enqueued the operation (W4).

use js_sys::{Array, Reflect};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;

use crate::core::io::Report;

/// The event object for one report.
pub fn event_json(report: &Report) -> Value {
    let event = match report {
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
    without_nulls(event)
}

/// `leader_changed`: whether this tab dispatches now, and who does when known.
pub fn leader_changed(leader: bool, owner: Option<&str>, fence: Option<u64>) -> Value {
    without_nulls(
        json!({ "type": "leader_changed", "leader": leader, "owner": owner, "fence": fence }),
    )
}

/// `quarantined`: a record set aside at load (D4) or an inbox entry the dispatcher refused.
pub fn quarantined(store: &str, key: &str, reason: &str) -> Value {
    json!({ "type": "quarantined", "store": store, "key": key, "reason": reason })
}

/// The operation ids an event object names (`operationId` or `operationIds`).
pub fn operation_ids(event: &JsValue) -> Vec<String> {
    let field = |name: &str| Reflect::get(event, &name.into()).unwrap_or(JsValue::UNDEFINED);
    if let Some(id) = field("operationId").as_string() {
        return vec![id];
    }
    let ids = field("operationIds");
    if !Array::is_array(&ids) {
        return Vec::new();
    }
    Array::from(&ids)
        .iter()
        .filter_map(|id| id.as_string())
        .collect()
}

/// The `type` of an event object.
pub fn kind(event: &JsValue) -> Option<String> {
    Reflect::get(event, &"type".into()).ok()?.as_string()
}

/// Absent, not null: the declarations say `field?: T`.
fn without_nulls(mut event: Value) -> Value {
    if let Value::Object(map) = &mut event {
        map.retain(|_, v| !v.is_null());
    }
    event
}
