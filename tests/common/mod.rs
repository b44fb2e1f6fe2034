//! Intent builders shared by the native test files. Not every file uses every builder.
#![allow(dead_code)]

pub(crate) mod flaky;

use canvas_scheduler_core::{intent::IntentInput, BatchLimits, SchedulerConfig};
use serde_json::json;

/// The default options with one operation a request and nothing held back (`batch` off,
/// `coalesceMs` 0): for tests about what each single request does, which the default batching
/// and hold would merge or delay.
pub(crate) fn unbatched() -> SchedulerConfig {
    SchedulerConfig {
        batch: BatchLimits::off(),
        coalesce_ms: 0,
        ..SchedulerConfig::default()
    }
}

/// The codes `enqueue` may answer with on a healthy, open scheduler (docs/guide.md): what refuses
/// the intents themselves, never a failed write, a lost lease or a stopped scheduler.
pub(crate) const ENQUEUE_CODES: [&str; 6] = [
    "invalid_intent",
    "duplicate_operation",
    "unknown_dependency",
    "dependency_cycle",
    "payload_too_large",
    "invalid_sequence",
];

/// A plain edit on the given canvases.
pub(crate) fn edit(id: &str, canvases: &[&str]) -> IntentInput {
    IntentInput {
        id: id.into(),
        sequence: None,
        operation_type: "shape.upsert".into(),
        canvas_ids: canvases.iter().map(|c| (*c).into()).collect(),
        dependencies: Vec::new(),
        payload: json!({ "shapeId": id }).into(),
        expected_versions: None,
        run_id: None,
        coalesce_key: None,
        blob: None,
    }
}

/// An edit with dependencies.
pub(crate) fn edit_after(id: &str, canvases: &[&str], deps: &[&str]) -> IntentInput {
    IntentInput {
        dependencies: deps.iter().map(|d| (*d).into()).collect(),
        ..edit(id, canvases)
    }
}

/// An upload (no participants needed).
pub(crate) fn upload(id: &str) -> IntentInput {
    IntentInput {
        operation_type: "asset.upload".into(),
        canvas_ids: Vec::new(),
        ..edit(id, &[])
    }
}

/// An intent of any kind.
pub(crate) fn of_kind(id: &str, kind: &str, canvases: &[&str]) -> IntentInput {
    IntentInput {
        operation_type: kind.into(),
        ..edit(id, canvases)
    }
}
