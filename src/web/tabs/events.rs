//! Event objects as `onEvent` receives them (typed `SchedulerEvent`), built as JSON so the
//! dispatching tab can relay them to the tab that enqueued the operation.

use js_sys::{Array, Reflect};
use wasm_bindgen::JsValue;

use crate::core::error::SchedulerError;
use crate::core::io::Report;
use crate::core::json::{JsonText, ToJson, Writer};
use crate::core::scheduler::RELEASE_ACTIONS;

/// A member written only when there is a value (absent, not null: the declarations say
/// `field?: T`).
fn optional<T: ToJson + ?Sized>(event: &mut Writer, key: &str, value: Option<&T>) {
    if let Some(value) = value {
        event.member(key, value);
    }
}

/// The event object for one report.
pub fn event_json(report: &Report) -> JsonText {
    JsonText::object(|event| match report {
        Report::Settled {
            operation_id,
            request_id,
            settlement,
            error,
            canonical,
        } => {
            event.member("type", "settled");
            event.member("operationId", operation_id);
            optional(event, "requestId", request_id.as_ref());
            event.member("outcome", settlement.as_str());
            optional(event, "error", error.as_ref());
            optional(
                event,
                "canonical",
                canonical.as_ref().filter(|c| !c.is_null()),
            );
        }
        Report::Blocked {
            operation_id,
            request_id,
            reason,
        } => {
            event.member("type", "blocked");
            event.member("operationId", operation_id);
            optional(event, "requestId", request_id.as_ref());
            event.member("reason", reason);
        }
        Report::DeadLettered {
            operation_ids,
            request_id,
            error,
            held_canvas_ids,
        } => {
            event.member("type", "dead_lettered");
            event.member("operationIds", operation_ids);
            event.member("requestId", request_id);
            optional(event, "error", error.as_ref());
            // What it holds and how the host lets go (the same shape as `explain`).
            event.member("heldCanvasIds", held_canvas_ids);
            event.member("release", &RELEASE_ACTIONS.map(String::from).to_vec());
        }
        Report::Error(error) => {
            event.member("type", "error");
            event.member("code", error.code());
            event.member("message", &error.message);
        }
        Report::StorageFailed { error } => {
            event.member("type", "storage_failed");
            event.member("name", &error.code);
            event.member("message", &error.message);
        }
        Report::StorageRecovered => event.member("type", "storage_recovered"),
        Report::LeaderChanged { leader, fence } => {
            event.member("type", "leader_changed");
            event.member("leader", leader);
            optional(event, "fence", fence.as_ref());
        }
    })
}

/// `leader_changed`: whether this tab dispatches now, and who does when known.
pub fn leader_changed(leader: bool, owner: Option<&str>, fence: Option<u64>) -> JsonText {
    JsonText::object(|event| {
        event.member("type", "leader_changed");
        event.member("leader", &leader);
        optional(event, "owner", owner);
        optional(event, "fence", fence.as_ref());
    })
}

fn write_error(event: &mut Writer, error: &SchedulerError) {
    event.member("code", error.code.as_str());
    event.member("message", error.message.as_str());
}

/// An error as an action's answer or an event's `error`: `{code, message}`.
pub fn error_object(error: &SchedulerError) -> JsonText {
    JsonText::object(|object| write_error(object, error))
}

/// `settled` as `rejected` for an inbox operation the dispatcher refused.
pub fn refused(operation_id: &str, error: &SchedulerError) -> JsonText {
    JsonText::object(|event| {
        event.member("type", "settled");
        event.member("operationId", operation_id);
        event.member("outcome", "rejected");
        event.key("error");
        event.object();
        write_error(event, error);
        event.end_object();
    })
}

/// `quarantined`: a record set aside at load or an inbox entry the dispatcher refused.
pub fn quarantined(store: &str, key: &str, reason: &str) -> JsonText {
    JsonText::object(|event| {
        event.member("type", "quarantined");
        event.member("store", store);
        event.member("key", key);
        event.member("reason", reason);
    })
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
