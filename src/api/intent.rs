//! Decoding intents from JS, field by field: unknown keys, wrong types, non-integers, NaN,
//! huge strings, deep or cyclic payloads and `__proto__` keys are `invalid_intent` (or
//! `payload_too_large`); the core then checks ids, sequences, dependencies and cycles.

use canvas_scheduler_core::{json_text::quoted, ExpectedVersions};

use js_sys::Array;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::web::json::{exact_text, to_json_within, LoneSurrogate, Refusal};
use canvas_scheduler_core::{
    intent::{IntentInput, MAX_SAFE_INTEGER},
    ErrorCode, Payload, SchedulerError,
};

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

/// The intent's field `key` and what is wrong with it.
fn invalid_field(key: &str, what: &str) -> SchedulerError {
    invalid(format!("{key} {what}"))
}

#[wasm_bindgen(module = "/src/api/boundary.js")]
extern "C" {
    /// See `boundary.js`: `null`, `false`, the first unknown key, or the values of `names` in
    /// order (the arrays at `lists` copied, at most `limit` items) and a bitmask of the
    /// unreadable ones.
    #[wasm_bindgen(js_name = intentFields)]
    fn intent_fields(value: &JsValue, names: &JsValue, lists: &JsValue, limit: u32) -> JsValue;

    /// See `boundary.js`: a genuine Blob's `[type, size, name]`, or `null`.
    #[wasm_bindgen(js_name = blobFacts)]
    fn blob_facts(value: &JsValue) -> JsValue;
}

/// The indexes in [`FIELDS`] of the lists of strings (`canvasIds`, `dependencies`).
const LISTS: [u32; 2] = [2, 3];

thread_local! {
    /// [`FIELDS`] as a JS array of strings, made once: every `JsValue::from_str` is a copy
    /// into JS through `TextDecoder`.
    static FIELD_NAMES: JsValue = FIELDS.iter().map(|name| JsValue::from_str(name)).collect::<Array>().into();
    /// [`LISTS`] as a JS array, made once.
    static LIST_INDEXES: JsValue = LISTS.iter().map(|at| JsValue::from(*at)).collect::<Array>().into();
}

/// An intent's fields as `boundary.js` read them.
struct Fields {
    /// The values of [`FIELDS`] in order.
    values: Array,
    /// Bit `i` set: reading `FIELDS[i]` threw.
    unreadable: u32,
}

impl Fields {
    /// Reads the fields of `value`, refusing a value that is not a plain object or that has
    /// a key outside [`FIELDS`].
    fn read(value: &JsValue) -> Result<Fields, SchedulerError> {
        // One item past the limit, so that a longer list is refused as too long.
        let limit = canvas_scheduler_core::intent::MAX_LIST_LEN as u32 + 1;
        let read = FIELD_NAMES
            .with(|names| LIST_INDEXES.with(|lists| intent_fields(value, names, lists, limit)));
        if read.is_null() {
            return Err(invalid("an intent must be a plain object"));
        }
        if let Some(key) = read.as_string() {
            return Err(invalid(format!("unknown intent field {}", quoted(&key))));
        }
        let Ok(values) = read.dyn_into::<Array>() else {
            return Err(invalid("the intent's keys are unreadable"));
        };
        let unreadable = values.get(FIELDS.len() as u32).as_f64().unwrap_or(0.0) as u32;
        Ok(Fields { values, unreadable })
    }

    fn get(&self, key: &str) -> Result<JsValue, SchedulerError> {
        match FIELDS.iter().position(|name| *name == key) {
            Some(at) if self.unreadable & (1 << at) == 0 => Ok(self.values.get(at as u32)),
            _ => Err(invalid_field(key, "is unreadable")),
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>, SchedulerError> {
        let value = self.get(key)?;
        if value.is_undefined() {
            return Ok(None);
        }
        match exact_text(&value) {
            Some(Ok(text)) => Ok(Some(text)),
            Some(Err(LoneSurrogate)) => Err(invalid_field(key, "holds a lone surrogate")),
            None => Err(invalid_field(key, "must be a string")),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, SchedulerError> {
        let value = self.get(key)?;
        if value.is_undefined() {
            return Ok(Vec::new());
        }
        // Asked where a throw is caught: a Proxy can be revoked by a getter read since.
        if !crate::web::json::is_array(&value) {
            return Err(invalid_field(key, "must be an array of strings"));
        }
        let array: Array = value.unchecked_into();
        if array.length() > canvas_scheduler_core::intent::MAX_LIST_LEN as u32 {
            return Err(invalid_field(key, "is too long"));
        }
        // A fresh array `boundary.js` copied the items into: reading it runs no host code.
        array
            .iter()
            .map(|item| match exact_text(&item) {
                Some(Ok(text)) => Ok(text),
                Some(Err(LoneSurrogate)) => Err(invalid_field(key, "holds a lone surrogate")),
                None => Err(invalid_field(key, "must contain only strings")),
            })
            .collect()
    }
}

/// A conversion refused: too large is `payload_too_large`, anything else `invalid_intent`.
fn refused(refusal: Refusal) -> SchedulerError {
    match refusal {
        Refusal::TooLarge(message) => SchedulerError::new(ErrorCode::PayloadTooLarge, message),
        Refusal::Invalid(message) => invalid(message),
    }
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

/// An upload's file and what the platform says of it (read once, through `boundary.js`).
pub struct DecodedBlob {
    /// The file itself (a genuine `Blob`).
    pub blob: web_sys::Blob,
    /// Its media type.
    pub media_type: String,
    /// Its size in bytes.
    pub size: u64,
    /// A `File`'s name.
    pub name: Option<String>,
}

impl DecodedBlob {
    fn read(value: JsValue) -> Result<DecodedBlob, SchedulerError> {
        let facts = blob_facts(&value);
        if facts.is_null() {
            return Err(invalid("blob must be a Blob or File"));
        }
        let facts: Array = facts.unchecked_into();
        Ok(DecodedBlob {
            blob: value.unchecked_into(),
            media_type: facts.get(0).as_string().unwrap_or_default(),
            size: facts.get(1).as_f64().unwrap_or(0.0) as u64,
            name: facts.get(2).as_string(),
        })
    }
}

/// A decoded intent and the blob it carries, if any (stored before the intent is admitted).
pub struct DecodedIntent {
    /// The intent without its blob.
    pub input: IntentInput,
    /// The upload's file.
    pub blob: Option<DecodedBlob>,
}

/// Decodes one intent strictly.
pub fn decode_intent(
    value: &JsValue,
    max_payload_bytes: usize,
) -> Result<DecodedIntent, SchedulerError> {
    let fields = Fields::read(value)?;
    let id = fields
        .string("id")?
        .ok_or_else(|| invalid("id is required"))?;
    let operation_type = fields
        .string("operationType")?
        .ok_or_else(|| invalid("operationType is required"))?;
    let payload_js = fields.get("payload")?;
    // Written as text once, here: that text is checked, stored and sent.
    let payload = if payload_js.is_undefined() {
        Payload::default()
    } else {
        to_json_within(&payload_js, "payload", max_payload_bytes).map_err(refused)?
    };
    let versions_js = fields.get("expectedVersions")?;
    let expected_versions = if versions_js.is_undefined() {
        None
    } else {
        let limit = canvas_scheduler_core::intent::MAX_LIST_LEN * 256;
        let text = to_json_within(&versions_js, "expectedVersions", limit).map_err(refused)?;
        let map = text
            .members()
            .ok_or_else(|| invalid("expectedVersions must be an object of canvas id → version"))?;
        let mut versions = ExpectedVersions::new();
        for (canvas, version) in map.iter() {
            let version = serde_json::from_str::<u64>(version)
                .ok()
                .filter(|v| *v <= MAX_SAFE_INTEGER)
                .ok_or_else(|| {
                    invalid("expectedVersions values must be non-negative safe integers")
                })?;
            versions.insert(canvas.to_owned(), version);
        }
        Some(versions)
    };
    let sequence_js = fields.get("sequence")?;
    let sequence = if sequence_js.is_undefined() {
        None
    } else {
        Some(safe_integer(&sequence_js, "sequence")?)
    };
    let blob_js = fields.get("blob")?;
    let blob = if blob_js.is_undefined() {
        None
    } else {
        Some(DecodedBlob::read(blob_js)?)
    };
    let input = IntentInput {
        id,
        sequence,
        operation_type,
        canvas_ids: fields.strings("canvasIds")?,
        dependencies: fields.strings("dependencies")?,
        payload,
        expected_versions,
        run_id: fields.string("runId")?,
        coalesce_key: fields.string("coalesceKey")?,
        blob: None,
    };
    canvas_scheduler_core::intent::check_fields(&input, max_payload_bytes)?;
    Ok(DecodedIntent { input, blob })
}
