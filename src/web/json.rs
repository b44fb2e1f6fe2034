//! Strict reading of JS values: plain JSON only (finite numbers, plain objects and arrays,
//! bounded depth and size, no `__proto__` keys, no cycles), so nothing from JS is trusted and
//! nothing silently changes on the way into the ledger (NaN would otherwise become null).

use js_sys::{Array, Object, Reflect};
use serde_json::{Map, Number, Value};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::intent::MAX_PAYLOAD_DEPTH;

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
    convert(value, field, 1)
}

fn convert(value: &JsValue, path: &str, depth: usize) -> Result<Value, String> {
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
            items.push(convert(&item, &format!("{path}[{index}]"), depth + 1)?);
        }
        return Ok(Value::Array(items));
    }
    if is_plain_object(value) {
        let mut map = Map::new();
        for key in Object::keys(value.unchecked_ref::<Object>()).iter() {
            let key = key.as_string().unwrap_or_default();
            if key == "__proto__" {
                return Err(format!("{path} has a __proto__ key"));
            }
            let item = Reflect::get(value, &JsValue::from_str(&key))
                .map_err(|_| format!("{path}.{key} is unreadable"))?;
            if item.is_undefined() {
                continue; // as JSON.stringify does
            }
            map.insert(
                key.clone(),
                convert(&item, &format!("{path}.{key}"), depth + 1)?,
            );
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

/// A JSON value as a JS value with plain objects (not Maps).
pub fn to_js<T: serde::Serialize + ?Sized>(value: &T) -> JsValue {
    let serializer = serde_wasm_bindgen::Serializer::json_compatible();
    value.serialize(&serializer).unwrap_or(JsValue::NULL)
}
