//! Decoding intents from JS, field by field: unknown keys, wrong types, non-integers, NaN,
//! huge strings, deep or cyclic payloads and `__proto__` keys are `invalid_intent` (or
//! `payload_too_large`); the core then checks ids, sequences, dependencies and cycles.

use crate::core::json::{self, quoted};
use crate::core::key_index::KeyIndex;

use js_sys::{Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::error::{ErrorCode, SchedulerError};
use crate::core::intent::{IntentInput, MAX_SAFE_INTEGER};
use crate::core::payload::Payload;
use crate::web::json::to_json;

const FIELDS: [&str; 10] = [
    "id",
    "operationType",
    "canvasIds",
    "dependencies",
    "payload",
    "expectedVersions",
    "runId",
    "coalesceKey",
    "sequence",
    "blob",
];

fn invalid(message: impl Into<String>) -> SchedulerError {
    SchedulerError::new(ErrorCode::InvalidIntent, message)
}

thread_local! {
    /// The field names as JS strings, made once: every `JsValue::from_str` is a copy into JS
    /// through `TextDecoder`, ten per intent otherwise.
    static FIELD_KEYS: Vec<JsValue> = FIELDS.iter().map(|name| JsValue::from_str(name)).collect();
}

fn get(object: &JsValue, key: &str) -> Result<JsValue, SchedulerError> {
    let place = FIELDS.iter().position(|name| *name == key);
    FIELD_KEYS
        .with(|keys| match place.and_then(|at| keys.get(at)) {
            Some(key_js) => Reflect::get(object, key_js),
            None => Reflect::get(object, &JsValue::from_str(key)),
        })
        .map_err(|_| invalid(format!("{key} is unreadable")))
}

fn string(object: &JsValue, key: &str) -> Result<Option<String>, SchedulerError> {
    let value = get(object, key)?;
    if value.is_undefined() {
        return Ok(None);
    }
    value
        .as_string()
        .map(Some)
        .ok_or_else(|| invalid(format!("{key} must be a string")))
}

fn strings(object: &JsValue, key: &str) -> Result<Vec<String>, SchedulerError> {
    let value = get(object, key)?;
    if value.is_undefined() {
        return Ok(Vec::new());
    }
    if !js_sys::Array::is_array(&value) {
        return Err(invalid(format!("{key} must be an array of strings")));
    }
    let array: js_sys::Array = value.unchecked_into();
    if array.length() > crate::core::intent::MAX_LIST_LEN as u32 {
        return Err(invalid(format!("{key} is too long")));
    }
    array
        .iter()
        .map(|item| {
            item.as_string()
                .ok_or_else(|| invalid(format!("{key} must contain only strings")))
        })
        .collect()
}

fn safe_integer(value: &JsValue, key: &str) -> Result<u64, SchedulerError> {
    match value.as_f64() {
        Some(n)
            if n.is_finite() && n.fract() == 0.0 && n >= 0.0 && n <= MAX_SAFE_INTEGER as f64 =>
        {
            Ok(n as u64)
        }
        _ => Err(invalid(format!(
            "{key} must be a non-negative safe integer"
        ))),
    }
}

/// A decoded intent and the blob it carries, if any (stored before the intent is admitted).
pub struct DecodedIntent {
    /// The intent without its blob.
    pub input: IntentInput,
    /// The upload's file.
    pub blob: Option<web_sys::Blob>,
}

/// Decodes one intent strictly.
pub fn decode_intent(
    value: &JsValue,
    max_payload_bytes: usize,
) -> Result<DecodedIntent, SchedulerError> {
    if !value.is_object() || js_sys::Array::is_array(value) || value.is_function() {
        return Err(invalid("an intent must be a plain object"));
    }
    for key in Object::keys(value.unchecked_ref::<Object>()).iter() {
        let key = key.as_string().unwrap_or_default();
        if !FIELDS.contains(&key.as_str()) {
            return Err(invalid(format!("unknown intent field {}", quoted(&key))));
        }
    }
    let id = string(value, "id")?.ok_or_else(|| invalid("id is required"))?;
    let operation_type =
        string(value, "operationType")?.ok_or_else(|| invalid("operationType is required"))?;
    let payload_js = get(value, "payload")?;
    // Written as text once, here: that text is checked, stored and sent.
    let payload = if payload_js.is_undefined() {
        Payload::default()
    } else {
        to_json(&payload_js, "payload").map_err(invalid)?
    };
    let versions_js = get(value, "expectedVersions")?;
    let expected_versions = if versions_js.is_undefined() {
        None
    } else {
        let text = to_json(&versions_js, "expectedVersions").map_err(invalid)?;
        let map = text
            .members()
            .ok_or_else(|| invalid("expectedVersions must be an object of canvas id → version"))?;
        let mut versions = KeyIndex::new();
        for (canvas, version) in map.iter() {
            let version = json::from_str::<u64>(version)
                .ok()
                .filter(|v| *v <= MAX_SAFE_INTEGER)
                .ok_or_else(|| {
                    invalid("expectedVersions values must be non-negative safe integers")
                })?;
            versions.insert(canvas.to_owned(), version);
        }
        Some(versions)
    };
    let sequence_js = get(value, "sequence")?;
    let sequence = if sequence_js.is_undefined() {
        None
    } else {
        Some(safe_integer(&sequence_js, "sequence")?)
    };
    let blob_js = get(value, "blob")?;
    let blob = if blob_js.is_undefined() {
        None
    } else {
        Some(
            blob_js
                .dyn_into::<web_sys::Blob>()
                .map_err(|_| invalid("blob must be a Blob or File"))?,
        )
    };
    let input = IntentInput {
        id,
        sequence,
        operation_type,
        canvas_ids: strings(value, "canvasIds")?,
        dependencies: strings(value, "dependencies")?,
        payload,
        expected_versions,
        run_id: string(value, "runId")?,
        coalesce_key: string(value, "coalesceKey")?,
        blob: None,
    };
    crate::core::intent::check_fields(&input, max_payload_bytes)?;
    Ok(DecodedIntent { input, blob })
}
