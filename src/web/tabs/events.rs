//! Event objects as `onEvent` receives them (typed `SchedulerEvent`), built as JSON so the
//! dispatching tab can relay them to the tab that enqueued the operation.

use js_sys::{Array, Reflect};
use wasm_bindgen::JsValue;

use canvas_scheduler_core::{Report, SchedulerError};
use serde::Serialize;

use canvas_scheduler_core::{json_text::JsonText, SafeError, RELEASE_ACTIONS};

/// An event object, `type` first; a member with no value is absent, not null (the
/// declarations say `field?: T`).
#[derive(Serialize)]
#[serde(tag = "type")]
enum Event<'a> {
    #[serde(rename = "settled")]
    Settled {
        #[serde(rename = "operationId")]
        operation_id: &'a str,
        #[serde(rename = "requestId", skip_serializing_if = "Option::is_none")]
        request_id: Option<&'a str>,
        #[serde(rename = "outcome")]
        outcome: &'a str,
        #[serde(rename = "error", skip_serializing_if = "Option::is_none")]
        error: Option<Error<'a>>,
        #[serde(rename = "canonical", skip_serializing_if = "Option::is_none")]
        canonical: Option<&'a JsonText>,
    },
    #[serde(rename = "blocked")]
    Blocked {
        #[serde(rename = "operationId")]
        operation_id: &'a str,
        #[serde(rename = "requestId", skip_serializing_if = "Option::is_none")]
        request_id: Option<&'a str>,
        #[serde(rename = "reason")]
        reason: &'a str,
    },
    #[serde(rename = "dead_lettered")]
    DeadLettered {
        #[serde(rename = "operationIds")]
        operation_ids: &'a [String],
        #[serde(rename = "requestId")]
        request_id: &'a str,
        #[serde(rename = "error", skip_serializing_if = "Option::is_none")]
        error: Option<&'a SafeError>,
        /// What it holds and how the host lets go (the same shape as `explain`).
        #[serde(rename = "heldCanvasIds")]
        held_canvas_ids: &'a [String],
        #[serde(rename = "release")]
        release: &'a [&'a str],
    },
    #[serde(rename = "error")]
    Error {
        #[serde(rename = "code")]
        code: &'a str,
        #[serde(rename = "message")]
        message: &'a str,
    },
    #[serde(rename = "storage_failed")]
    StorageFailed {
        #[serde(rename = "name")]
        name: &'a str,
        #[serde(rename = "message")]
        message: &'a str,
    },
    #[serde(rename = "storage_recovered")]
    StorageRecovered,
    #[serde(rename = "leader_changed")]
    LeaderChanged {
        #[serde(rename = "leader")]
        leader: bool,
        #[serde(rename = "owner", skip_serializing_if = "Option::is_none")]
        owner: Option<&'a str>,
        #[serde(rename = "fence", skip_serializing_if = "Option::is_none")]
        fence: Option<u64>,
    },
    #[serde(rename = "quarantined")]
    Quarantined {
        #[serde(rename = "store")]
        store: &'a str,
        #[serde(rename = "key")]
        key: &'a str,
        #[serde(rename = "reason")]
        reason: &'a str,
    },
}

/// An event's `error`: the server's (a [`SafeError`]) or one of ours (`{code, message}`).
#[derive(Serialize)]
#[serde(untagged)]
enum Error<'a> {
    Safe(&'a SafeError),
    Ours(Ours<'a>),
}

/// `{code, message}` of a [`SchedulerError`].
#[derive(Serialize)]
struct Ours<'a> {
    #[serde(rename = "code")]
    code: &'a str,
    #[serde(rename = "message")]
    message: &'a str,
}

impl<'a> Ours<'a> {
    fn of(error: &'a SchedulerError) -> Self {
        Self {
            code: error.code.as_str(),
            message: error.message.as_str(),
        }
    }
}

/// The event object for one report.
pub fn event_json(report: &Report) -> JsonText {
    JsonText::from_json(&match report {
        Report::Settled {
            operation_id,
            request_id,
            settlement,
            error,
            canonical,
        } => Event::Settled {
            operation_id,
            request_id: request_id.as_deref(),
            outcome: settlement.as_str(),
            error: error.as_ref().map(Error::Safe),
            canonical: canonical.as_ref().filter(|c| !c.is_null()),
        },
        Report::Blocked {
            operation_id,
            request_id,
            reason,
        } => Event::Blocked {
            operation_id,
            request_id: request_id.as_deref(),
            reason,
        },
        Report::DeadLettered {
            operation_ids,
            request_id,
            error,
            held_canvas_ids,
        } => Event::DeadLettered {
            operation_ids,
            request_id,
            error: error.as_ref(),
            held_canvas_ids,
            release: &RELEASE_ACTIONS,
        },
        Report::Error(error) => Event::Error {
            code: error.code(),
            message: &error.message,
        },
        Report::StorageFailed { error } => Event::StorageFailed {
            name: &error.code,
            message: &error.message,
        },
        Report::StorageRecovered => Event::StorageRecovered,
        Report::LeaderChanged { leader, fence } => Event::LeaderChanged {
            leader: *leader,
            owner: None,
            fence: *fence,
        },
    })
}

/// `leader_changed`: whether this tab dispatches now, and who does when known.
pub fn leader_changed(leader: bool, owner: Option<&str>, fence: Option<u64>) -> JsonText {
    JsonText::from_json(&Event::LeaderChanged {
        leader,
        owner,
        fence,
    })
}

/// An error as an action's answer or an event's `error`: `{code, message}`.
pub fn error_object(error: &SchedulerError) -> JsonText {
    JsonText::from_json(&Ours::of(error))
}

/// `settled` as `rejected` for an inbox operation the dispatcher refused.
pub fn refused(operation_id: &str, error: &SchedulerError) -> JsonText {
    JsonText::from_json(&Event::Settled {
        operation_id,
        request_id: None,
        outcome: "rejected",
        error: Some(Error::Ours(Ours::of(error))),
        canonical: None,
    })
}

/// `quarantined`: a record set aside at load or an inbox entry the dispatcher refused.
pub fn quarantined(store: &str, key: &str, reason: &str) -> JsonText {
    JsonText::from_json(&Event::Quarantined { store, key, reason })
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
