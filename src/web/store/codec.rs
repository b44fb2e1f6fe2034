//! Records to and from stored values. This build writes each record as one JSON string
//! (compact JSON text, integers within ±(2^53 - 1) so any JS reader gets them back
//! exactly): IndexedDB structured-clones a string far faster than an object, and it crosses
//! the JS/wasm boundary as one copy instead of one call per field.
//!
//! Reads accept both forms, so a ledger written by an earlier build (plain JSON objects) still
//! loads: a string is parsed as JSON; anything else goes through `JSON.stringify` first. Either
//! way the loader gets JSON text, and no per-type JS deserializer is needed.
//!
//! The reverse does not hold: an earlier build reads a string record as a JSON string, not a
//! record, and quarantines it. So this format must ship with a schema version above 3
//! ([`schema::SCHEMA_VERSION`](super::schema::SCHEMA_VERSION)): an earlier build (say, a tab
//! left open across a deploy) then cannot open the database at all instead of taking the
//! lease and moving every newer record to `quarantine`.

use wasm_bindgen::{JsCast, JsValue};

use serde::de::DeserializeOwned;
use serde::Serialize;

use canvas_scheduler_core::{
    json_text::JsonText, operation_pages::OperationPage, packed::PackedPage, SafeError,
};

/// Largest integer a JS number holds exactly.
pub(crate) const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// Serializes a record to the stored form: a JSON string.
///
/// # Errors
///
/// `unserializable_record` (e.g. an integer above 2^53 - 1).
pub(crate) fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, SafeError> {
    record_text(value).map(|text| JsValue::from_str(&text))
}

/// A record's JSON text; `unserializable_record` when it has none.
fn record_text<T: Serialize + ?Sized>(value: &T) -> Result<String, SafeError> {
    crate::web::json::to_string(value).map_err(|e| SafeError::new("unserializable_record", &e))
}

/// The JSON text of a stored value: the string itself (this build's records) or
/// `JSON.stringify` of an object (earlier builds' records). `Err` when there is none (e.g.
/// `undefined`, a `BigInt`, a cyclic object).
pub(crate) fn json_text(value: &JsValue) -> Result<String, String> {
    if let Some(text) = value.as_string() {
        return Ok(text);
    }
    match js_sys::JSON::stringify(value) {
        Ok(text) => text
            .as_string()
            .ok_or_else(|| "not plain JSON: nothing to stringify".to_owned()),
        Err(_) => Err("not plain JSON: JSON.stringify threw".to_owned()),
    }
}

/// Reads a stored value as JSON; `Err` when it is not JSON.
pub(crate) fn to_json(value: &JsValue) -> Result<JsonText, String> {
    let text = json_text(value)?;
    serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))
}

/// Reads a stored value as a typed record.
pub(crate) fn decode<T: DeserializeOwned>(value: &JsValue) -> Result<T, String> {
    let text = json_text(value)?;
    serde_json::from_str(&text).map_err(|e| format!("undecodable: {e}"))
}

/// The key of an `operations`/`requests` record as the loader sees it, or `None` for a key
/// of another type or outside the id alphabet's ordering (characters at or above U+E000 sort
/// differently in IndexedDB's UTF-16 order than in Rust's).
pub(crate) fn string_key(key: &JsValue) -> Option<String> {
    key.as_string()
        .filter(|k| k.chars().all(|c| (c as u32) < 0xE000))
}

/// The key of an `events` record as a decimal string, or `None` unless it is a whole number
/// in `0..=2^53-1`.
pub(crate) fn event_key(key: &JsValue) -> Option<String> {
    let number = key.as_f64()?;
    let whole = number.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&number);
    whole.then(|| format!("{}", number as u64))
}

/// A description of a key of an unexpected type, for reports.
pub(crate) fn describe_key(key: &JsValue) -> String {
    match key.as_string() {
        Some(text) => text,
        None => match js_sys::JSON::stringify(key) {
            Ok(text) => String::from(text),
            Err(_) => "a key JSON cannot spell".to_owned(),
        },
    }
}

/// A page as stored: `{ids, json}` — the ids for the `by_operation` index (the inbox's check that
/// an id is not taken), the operations as one JSON text in the packed form
/// ([`canvas_scheduler_core::packed`]) in UTF-8 bytes (read back by [`page_text`]). Bytes, not a JS string: a load reads every page, and copying a string into
/// wasm re-encodes it from UTF-16 character by character, where bytes are one copy.
pub(crate) fn page_value(page: &OperationPage) -> Result<JsValue, SafeError> {
    let ids = js_sys::Array::new();
    for op in &page.operations {
        ids.push(&JsValue::from_str(&op.intent.id));
    }
    let text = record_text(&PackedPage(&page.operations))?;
    let value = js_sys::Object::new();
    let fields = [
        ("ids", JsValue::from(ids)),
        ("json", js_sys::Uint8Array::from(text.as_bytes()).into()),
    ];
    for (name, field) in fields {
        js_sys::Reflect::set(&value, &JsValue::from_str(name), &field)
            .map_err(|e| super::errors::js_error(&e))?;
    }
    Ok(value.into())
}

/// The JSON text of a stored operation page: its `json` field, UTF-8 bytes (this build's
/// pages) or a string (pages written by earlier builds: both load).
pub(crate) fn page_text(value: &JsValue) -> Result<String, String> {
    let json = js_sys::Reflect::get(value, &JsValue::from_str("json"))
        .map_err(|_| "operation page with an unreadable json field".to_owned())?;
    if let Some(text) = json.as_string() {
        return Ok(text);
    }
    match json.dyn_into::<js_sys::Uint8Array>() {
        Ok(bytes) => String::from_utf8(bytes.to_vec())
            .map_err(|_| "operation page json is not UTF-8".to_owned()),
        Err(_) => Err("operation page without its json text".to_owned()),
    }
}
