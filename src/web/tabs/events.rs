//! Event objects as `onEvent` receives them (typed `SchedulerEvent`), built as JSON so the
//! dispatching tab can relay them to the tab that enqueued the operation (W4).

use js_sys::{Array, Reflect};
use serde_json::Value;
use wasm_bindgen::JsValue;

use crate::core::error::SchedulerError;
use crate::core::io::Report;
use crate::core::json::object;
use crate::core::safe_error::SafeError;

/// An event object: its members, those that are null left out (absent, not null: the
/// declarations say `field?: T`).
fn event(members: impl IntoIterator<Item = (&'static str, Value)>) -> Value {
    object(members.into_iter().filter(|(_, value)| !value.is_null()))
}

/// The event object for one report.
pub fn event_json(report: &Report) -> Value {
    let text = |value: &str| Value::from(value);
    let maybe = |value: &Option<String>| Value::from(value.clone());
    match report {
        Report::Settled {
            operation_id,
            request_id,
            settlement,
            error,
            canonical,
        } => event([
            ("type", text("settled")),
            ("operationId", text(operation_id)),
            ("requestId", maybe(request_id)),
            ("outcome", text(settlement.as_str())),
            (
                "error",
                error.as_ref().map_or(Value::Null, |e| e.to_value()),
            ),
            ("canonical", canonical.clone().unwrap_or(Value::Null)),
        ]),
        Report::Blocked {
            operation_id,
            request_id,
            reason,
        } => event([
            ("type", text("blocked")),
            ("operationId", text(operation_id)),
            ("requestId", maybe(request_id)),
            ("reason", text(reason)),
        ]),
        Report::DeadLettered {
            operation_ids,
            request_id,
            error,
        } => event([
            ("type", text("dead_lettered")),
            ("operationIds", Value::from(operation_ids.clone())),
            ("requestId", text(request_id)),
            (
                "error",
                error.as_ref().map_or(Value::Null, SafeError::to_value),
            ),
        ]),
        Report::Error(error) => event([
            ("type", text("error")),
            ("code", text(error.code())),
            ("message", text(&error.message)),
        ]),
        Report::LeaderChanged { leader, fence } => event([
            ("type", text("leader_changed")),
            ("leader", Value::from(*leader)),
            ("fence", Value::from(*fence)),
        ]),
    }
}

/// `leader_changed`: whether this tab dispatches now, and who does when known.
pub fn leader_changed(leader: bool, owner: Option<&str>, fence: Option<u64>) -> Value {
    event([
        ("type", Value::from("leader_changed")),
        ("leader", Value::from(leader)),
        ("owner", Value::from(owner)),
        ("fence", Value::from(fence)),
    ])
}

/// An error as an action's answer or an event's `error`: `{code, message}`.
pub fn error_object(error: &SchedulerError) -> Value {
    event([
        ("code", Value::from(error.code.as_str())),
        ("message", Value::from(error.message.as_str())),
    ])
}

/// `settled` as `rejected` for an inbox operation the dispatcher refused.
pub fn refused(operation_id: &str, error: &SchedulerError) -> Value {
    event([
        ("type", Value::from("settled")),
        ("operationId", Value::from(operation_id)),
        ("outcome", Value::from("rejected")),
        ("error", error_object(error)),
    ])
}

/// `quarantined`: a record set aside at load (D4) or an inbox entry the dispatcher refused.
pub fn quarantined(store: &str, key: &str, reason: &str) -> Value {
    event([
        ("type", Value::from("quarantined")),
        ("store", Value::from(store)),
        ("key", Value::from(key)),
        ("reason", Value::from(reason)),
    ])
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
