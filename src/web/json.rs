//! Strict reading of JS values: plain JSON only (finite numbers, plain objects and arrays,
//! bounded depth and size, no `__proto__` keys, no cycles), so nothing from JS is trusted and
//! nothing silently changes on the way into the ledger (NaN would otherwise become null).

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::intent::MAX_PAYLOAD_DEPTH;
use crate::core::json::{exceeds_js_integers, JsonText, ToJson, Writer};

/// Longest string accepted anywhere in a payload, in UTF-16 units.
pub const MAX_STRING_UNITS: u32 = 1 << 20;

fn is_plain_object(value: &JsValue) -> bool {
    if !value.is_object() || Array::is_array(value) {
        return false;
    }
    let proto = Object::get_prototype_of(value);
    proto.is_null() || proto == Object::get_prototype_of(&Object::new())
}

/// Converts a JS value to JSON text (compact, object keys sorted), refusing anything that is
/// not plain JSON. Written straight from the JS value: no tree in between.
pub fn to_json(value: &JsValue, field: &str) -> Result<JsonText, String> {
    let mut failure = None;
    let text = JsonText::written(|writer| {
        failure = convert(value, &Path::Field(field), 1, writer).err();
    });
    failure.map_or(Ok(text), Err)
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

fn convert(value: &JsValue, path: &Path<'_>, depth: usize, out: &mut Writer) -> Result<(), String> {
    if depth > MAX_PAYLOAD_DEPTH {
        return Err(format!(
            "{path} nests deeper than {MAX_PAYLOAD_DEPTH} (or is cyclic)"
        ));
    }
    if value.is_null() {
        out.null();
        return Ok(());
    }
    if let Some(flag) = value.as_bool() {
        out.bool(flag);
        return Ok(());
    }
    if let Some(number) = value.as_f64() {
        return write_number(number, out).ok_or_else(|| format!("{path} is not a finite number"));
    }
    if let Some(text) = value.dyn_ref::<js_sys::JsString>() {
        if text.length() > MAX_STRING_UNITS {
            return Err(format!("{path} is a string longer than {MAX_STRING_UNITS}"));
        }
        out.str(&String::from(text));
        return Ok(());
    }
    if Array::is_array(value) {
        let array: &Array = value.unchecked_ref();
        out.array();
        for (index, item) in array.iter().enumerate() {
            convert(&item, &Path::Index(path, index), depth + 1, out)?;
        }
        out.end_array();
        return Ok(());
    }
    if is_plain_object(value) {
        // Each member is converted in JS order (so the first bad one is the one reported),
        // then written in key order, as a map would hold them.
        let mut members: Vec<(String, String)> = Vec::new();
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
            let mut member = Writer::new();
            convert(&item, &Path::Key(path, &key), depth + 1, &mut member)?;
            members.push((key, member.finish()));
        }
        members.sort_by(|a, b| a.0.cmp(&b.0));
        out.object();
        for (key, member) in &members {
            out.key(key);
            out.raw(member);
        }
        out.end_object();
        return Ok(());
    }
    Err(format!(
        "{path} is not JSON (a function, symbol, bigint, undefined or class instance)"
    ))
}

/// Writes a finite number; `None` for NaN and infinities.
fn write_number(number: f64, out: &mut Writer) -> Option<()> {
    if !number.is_finite() {
        return None;
    }
    // Integers stay integers, so the frozen body reads `3`, not `3.0`.
    if number.fract() == 0.0 && number.abs() <= crate::core::intent::MAX_SAFE_INTEGER as f64 {
        out.i64(number as i64);
    } else {
        out.f64(number);
    }
    Some(())
}

/// `value` as compact JSON text that JS reads back unchanged (`JSON.parse`).
///
/// # Errors
///
/// An integer beyond ±(2^53 - 1), as serde-wasm-bindgen's JSON-compatible serializer refused
/// it: such a value would silently change on its way through JS.
///
/// Takes a trait object, as [`to_js`] does: one copy of each in the `.wasm`, where a generic
/// brought one per record type (only `write_json` differs between them).
pub fn to_string(value: &dyn ToJson) -> Result<String, String> {
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
///
/// JSON kept as text (canonical state, error details) is checked here too: an integer in it
/// that JS would read as another number makes the value `null`, as a tree's did.
pub fn to_js(value: &dyn ToJson) -> JsValue {
    to_string(value)
        .ok()
        .filter(|text| !exceeds_js_integers(text))
        .and_then(|text| js_sys::JSON::parse(&text).ok())
        .unwrap_or(JsValue::NULL)
}
