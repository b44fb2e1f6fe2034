//! Strict reading of JS values: plain JSON only (finite numbers, plain objects and arrays,
//! bounded depth and size, no `__proto__` keys, no cycles), so nothing from JS is trusted and
//! nothing silently changes on the way into the ledger (NaN would otherwise become null).

use js_sys::{Array, Object, Reflect};
use serde_json::{Map, Number, Value};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::intent::MAX_PAYLOAD_DEPTH;
use crate::core::json::{ToJson, Writer};

/// Longest string accepted anywhere in a payload, in UTF-16 units.
pub const MAX_STRING_UNITS: u32 = 1 << 20;

fn is_plain_object(value: &JsValue) -> bool {
    if !value.is_object() || Array::is_array(value) {
        return false;
    }
    let proto = Object::get_prototype_of(value);
    proto.is_null() || proto == Object::get_prototype_of(&Object::new())
}

/// Converts a JS value to JSON, refusing anything that is not plain JSON.
pub fn to_json(value: &JsValue, field: &str) -> Result<Value, String> {
    convert(value, &Path::Field(field), 1)
}

/// Where a value sits in what is being converted, written out only for an error message
/// (formatting every path on the way down cost an allocation per value).
enum Path<'a> {
    Field(&'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Field(name) => f.write_str(name),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

fn convert(value: &JsValue, path: &Path<'_>, depth: usize) -> Result<Value, String> {
    if depth > MAX_PAYLOAD_DEPTH {
        return Err(format!(
            "{path} nests deeper than {MAX_PAYLOAD_DEPTH} (or is cyclic)"
        ));
    }
    if value.is_null() {
        return Ok(Value::Null);
    }
    if let Some(flag) = value.as_bool() {
        return Ok(Value::Bool(flag));
    }
    if let Some(number) = value.as_f64() {
        return json_number(number).ok_or_else(|| format!("{path} is not a finite number"));
    }
    if let Some(text) = value.dyn_ref::<js_sys::JsString>() {
        if text.length() > MAX_STRING_UNITS {
            return Err(format!("{path} is a string longer than {MAX_STRING_UNITS}"));
        }
        return Ok(Value::String(String::from(text)));
    }
    if Array::is_array(value) {
        let array: &Array = value.unchecked_ref();
        let mut items = Vec::with_capacity(array.length() as usize);
        for (index, item) in array.iter().enumerate() {
            items.push(convert(&item, &Path::Index(path, index), depth + 1)?);
        }
        return Ok(Value::Array(items));
    }
    if is_plain_object(value) {
        let mut map = Map::new();
        for key_js in Object::keys(value.unchecked_ref::<Object>()).iter() {
            let key = key_js.as_string().unwrap_or_default();
            if key == "__proto__" {
                return Err(format!("{path} has a __proto__ key"));
            }
            // The key as JS gave it: no second copy of the name into JS.
            let item =
                Reflect::get(value, &key_js).map_err(|_| format!("{path}.{key} is unreadable"))?;
            if item.is_undefined() {
                continue; // as JSON.stringify does
            }
            let converted = convert(&item, &Path::Key(path, &key), depth + 1)?;
            map.insert(key, converted);
        }
        return Ok(Value::Object(map));
    }
    Err(format!(
        "{path} is not JSON (a function, symbol, bigint, undefined or class instance)"
    ))
}

fn json_number(number: f64) -> Option<Value> {
    if !number.is_finite() {
        return None;
    }
    // Integers stay integers, so the frozen body reads `3`, not `3.0`.
    if number.fract() == 0.0 && number.abs() <= crate::core::intent::MAX_SAFE_INTEGER as f64 {
        return Some(Value::Number(Number::from(number as i64)));
    }
    Number::from_f64(number).map(Value::Number)
}

/// `value` as compact JSON text that JS reads back unchanged (`JSON.parse`).
///
/// # Errors
///
/// An integer beyond ±(2^53 - 1), as serde-wasm-bindgen's JSON-compatible serializer refused
/// it: such a value would silently change on its way through JS.
pub fn to_string<T: ToJson + ?Sized>(value: &T) -> Result<String, String> {
    let mut writer = Writer::new();
    value.write_json(&mut writer);
    if writer.beyond_js() {
        return Err(
            "an integer is beyond the integers a JS number holds exactly (2^53 - 1)".into(),
        );
    }
    Ok(writer.finish())
}

/// A JSON value as a JS value with plain objects (not Maps): serialized to JSON text in wasm
/// and parsed by the engine (`JSON.parse`): one string crosses the boundary instead of one
/// call per field. `null` when `value` cannot be JSON (see [`to_string`]).
pub fn to_js<T: ToJson + ?Sized>(value: &T) -> JsValue {
    to_string(value)
        .ok()
        .and_then(|text| js_sys::JSON::parse(&text).ok())
        .unwrap_or(JsValue::NULL)
}
