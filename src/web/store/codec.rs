//! Records to and from JS values. Writes use serde-wasm-bindgen's JSON-compatible serializer
//! (maps become plain objects, `u64` become numbers, `None` becomes `null`), so a record is
//! plain, structured-cloneable JSON that other readers (devtools, a newer build) understand.
//! Reads go back through `serde_json::Value`, the loader's input (D4).

use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::JsValue;

use crate::core::safe_error::SafeError;

/// Largest integer a JS number holds exactly.
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// Serializes a record to a plain JS value.
///
/// # Errors
///
/// `unserializable_record` (e.g. an integer above 2^53 - 1).
pub fn to_js<T: Serialize>(value: &T) -> Result<JsValue, SafeError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| SafeError::new("unserializable_record", &e.to_string()))
}

/// Reads a stored JS value as JSON; `Err` when it is not plain JSON.
pub fn to_json(value: JsValue) -> Result<Value, String> {
    serde_wasm_bindgen::from_value(value).map_err(|e| format!("not plain JSON: {e}"))
}

/// Reads a stored JS value as a typed record.
pub fn decode<T: serde::de::DeserializeOwned>(value: JsValue) -> Result<T, String> {
    serde_wasm_bindgen::from_value(value).map_err(|e| format!("undecodable: {e}"))
}

/// The key of an `operations`/`requests` record as the loader sees it, or `None` for a key
/// of another type or outside the id alphabet's ordering (characters at or above U+E000 sort
/// differently in IndexedDB's UTF-16 order than in Rust's).
pub fn string_key(key: &JsValue) -> Option<String> {
    key.as_string()
        .filter(|k| k.chars().all(|c| (c as u32) < 0xE000))
}

/// The key of an `events` record as a decimal string, or `None` unless it is a whole number
/// in `0..=2^53-1`.
pub fn event_key(key: &JsValue) -> Option<String> {
    let number = key.as_f64()?;
    let whole = number.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&number);
    whole.then(|| format!("{}", number as u64))
}

/// A description of a key of an unexpected type, for reports.
pub fn describe_key(key: &JsValue) -> String {
    match key.as_string() {
        Some(text) => text,
        None => match js_sys::JSON::stringify(key) {
            Ok(text) => String::from(text),
            Err(_) => format!("{key:?}"),
        },
    }
}
