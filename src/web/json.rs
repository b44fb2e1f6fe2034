//! Strict reading of JS values: plain JSON only (finite numbers, plain objects and arrays,
//! bounded depth and size, no `__proto__` keys, no cycles), so nothing from JS is trusted and
//! nothing silently changes on the way into the ledger (NaN would otherwise become null).

use js_sys::{Array, Reflect};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use canvas_scheduler_core::{
    intent::MAX_PAYLOAD_DEPTH,
    json_text::{self, JsonText},
};

/// Longest string accepted anywhere in a payload, in UTF-16 units.
pub const MAX_STRING_UNITS: u32 = 1 << 20;

#[wasm_bindgen(module = "/src/api/boundary.js")]
extern "C" {
    /// See `boundary.js`: 1 array, 2 plain object, 0 other, -1 unreadable.
    #[wasm_bindgen(js_name = jsonShape)]
    fn json_shape(value: &JsValue) -> i32;

    /// See `boundary.js`: no lone surrogate in `text`.
    #[wasm_bindgen(js_name = wellFormed)]
    fn well_formed(text: &JsValue) -> bool;
}

#[wasm_bindgen]
extern "C" {
    /// `Object.keys`, whose traps (a Proxy's `ownKeys`) may throw.
    #[wasm_bindgen(catch, js_namespace = Object, js_name = keys)]
    pub fn object_keys(value: &JsValue) -> Result<Array, JsValue>;
}

/// A JS string held a lone surrogate, which UTF-8 cannot hold: converting it would silently
/// replace it with U+FFFD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoneSurrogate;

/// `value` as Rust text exactly: `None` when it is not a string, `Some(Err)` when it holds a
/// lone surrogate. Only a converted text holding U+FFFD asks JS again (the replacement the
/// conversion makes is that character).
pub fn exact_text(value: &JsValue) -> Option<Result<String, LoneSurrogate>> {
    let text = value.as_string()?;
    if text.contains('\u{FFFD}') && !well_formed(value) {
        return Some(Err(LoneSurrogate));
    }
    Some(Ok(text))
}

/// Whether a host value is an array, asked where a throw is caught (false then).
pub fn is_array(value: &JsValue) -> bool {
    value.is_object() && json_shape(value) == 1
}

/// A host's list of strings (at most `limit` of them), read where a throw is caught. `Err`
/// says what is wrong in a few words (for the caller's message).
pub fn string_items(value: &JsValue, limit: usize) -> Result<Vec<String>, &'static str> {
    if !is_array(value) {
        return Err("must be an array of strings");
    }
    let length = Reflect::get(value, &JsValue::from_str("length"))
        .ok()
        .and_then(|n| n.as_f64())
        .ok_or("is unreadable")?;
    if length > limit as f64 {
        return Err("is too long");
    }
    (0..length.max(0.0) as u32)
        .map(|at| {
            let item = Reflect::get_u32(value, at).map_err(|_| "is unreadable")?;
            match exact_text(&item) {
                Some(Ok(text)) => Ok(text),
                Some(Err(LoneSurrogate)) => Err("holds a lone surrogate"),
                None => Err("must contain only strings"),
            }
        })
        .collect()
}

/// Why a JS value was refused as JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its text would be longer than the limit (found before it was converted whole).
    TooLarge(String),
    /// It is not plain JSON, or reading it threw.
    Invalid(String),
}

impl From<Refusal> for String {
    fn from(refusal: Refusal) -> String {
        match refusal {
            Refusal::TooLarge(message) | Refusal::Invalid(message) => message,
        }
    }
}

/// Converts a JS value to JSON text (compact, object keys sorted), refusing anything that is
/// not plain JSON. Written straight from the JS value: no tree in between.
pub fn to_json(value: &JsValue, field: &str) -> Result<JsonText, String> {
    to_json_within(value, field, usize::MAX).map_err(String::from)
}

/// As [`to_json`], stopping as soon as the text is known to exceed `max_bytes`: an array's
/// length, an object's key count and a string's length are checked against what is left before
/// they are read, so a huge value (`new Array(1e8)`) never grows the module's memory. Every
/// read of the value runs where a throw (a getter, a Proxy trap, a revoked Proxy) is caught.
pub fn to_json_within(value: &JsValue, field: &str, max_bytes: usize) -> Result<JsonText, Refusal> {
    let mut budget = Budget {
        left: max_bytes,
        max: max_bytes,
    };
    let mut text = String::new();
    convert(value, &Path::Field(field), 1, &mut budget, &mut text)?;
    // Written from checked parts (strings and numbers by serde_json): always one value.
    JsonText::from_written(text).ok_or_else(|| Refusal::Invalid(format!("{field} is not JSON")))
}

/// Bytes the text may still take (a lower bound of what is written: escapes are not counted;
/// the written text is measured exactly afterwards).
struct Budget {
    left: usize,
    max: usize,
}

impl Budget {
    fn spend(&mut self, bytes: usize, path: &Path<'_>) -> Result<(), Refusal> {
        match self.left.checked_sub(bytes) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(Refusal::TooLarge(format!(
                "{} is over {} bytes as JSON",
                path.root(),
                self.max
            ))),
        }
    }
}

/// Where a value sits in what is being converted, written out only for an error message
/// (formatting every path on the way down cost an allocation per value).
enum Path<'a> {
    Field(&'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn root(&self) -> &str {
        match self {
            Path::Field(name) => name,
            Path::Key(parent, _) | Path::Index(parent, _) => parent.root(),
        }
    }
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

/// `path` and what is wrong with it, as the one refusal every check words the same way.
fn invalid(path: &Path<'_>, what: &str) -> Refusal {
    Refusal::Invalid(format!("{path} {what}"))
}

/// The text of a string value or key, refusing a lone surrogate.
fn text_of(value: &JsValue, path: &Path<'_>) -> Result<String, Refusal> {
    match exact_text(value) {
        Some(Ok(text)) => Ok(text),
        Some(Err(LoneSurrogate)) => Err(invalid(path, "holds a lone surrogate")),
        None => Err(invalid(path, "is not a string")),
    }
}

fn convert(
    value: &JsValue,
    path: &Path<'_>,
    depth: usize,
    budget: &mut Budget,
    out: &mut String,
) -> Result<(), Refusal> {
    if depth > MAX_PAYLOAD_DEPTH {
        return Err(invalid(
            path,
            &format!("nests deeper than {MAX_PAYLOAD_DEPTH} (or is cyclic)"),
        ));
    }
    if value.is_null() {
        budget.spend(4, path)?;
        out.push_str("null");
        return Ok(());
    }
    if let Some(flag) = value.as_bool() {
        budget.spend(if flag { 4 } else { 5 }, path)?;
        out.push_str(if flag { "true" } else { "false" });
        return Ok(());
    }
    if let Some(number) = value.as_f64() {
        budget.spend(1, path)?;
        return write_number(number, out).ok_or_else(|| invalid(path, "is not a finite number"));
    }
    if let Some(text) = value.dyn_ref::<js_sys::JsString>() {
        let units = text.length();
        // Each UTF-16 unit is at least one byte of UTF-8, and two quotes around them.
        budget.spend(units as usize + 2, path)?;
        if units > MAX_STRING_UNITS {
            return Err(invalid(
                path,
                &format!("is a string longer than {MAX_STRING_UNITS}"),
            ));
        }
        out.push_str(&json_text::quoted(&text_of(value, path)?));
        return Ok(());
    }
    if !value.is_object() {
        return Err(not_json(path));
    }
    match json_shape(value) {
        1 => convert_array(value, path, depth, budget, out),
        2 => convert_object(value, path, depth, budget, out),
        -1 => Err(invalid(path, "is unreadable")),
        _ => Err(not_json(path)),
    }
}

fn not_json(path: &Path<'_>) -> Refusal {
    invalid(
        path,
        "is not JSON (a function, symbol, bigint, undefined or class instance)",
    )
}

fn convert_array(
    value: &JsValue,
    path: &Path<'_>,
    depth: usize,
    budget: &mut Budget,
    out: &mut String,
) -> Result<(), Refusal> {
    let unreadable = || invalid(path, "is unreadable");
    let length = Reflect::get(value, &JsValue::from_str("length"))
        .ok()
        .and_then(|n| n.as_f64())
        .ok_or_else(unreadable)?;
    // Brackets and a comma between items, and at least a byte an item: checked before any
    // item is read.
    let items = length.max(0.0).min(usize::MAX as f64) as usize;
    budget.spend(items.saturating_mul(2).saturating_add(1), path)?;
    // The minimum byte an item was counted in its comma; its own text is counted as written.
    budget.left = budget.left.saturating_add(items);
    out.push('[');
    for index in 0..items {
        if index > 0 {
            out.push(',');
        }
        let item = Reflect::get_u32(value, index as u32)
            .map_err(|_| invalid(&Path::Index(path, index), "is unreadable"))?;
        convert(&item, &Path::Index(path, index), depth + 1, budget, out)?;
    }
    out.push(']');
    Ok(())
}

fn convert_object(
    value: &JsValue,
    path: &Path<'_>,
    depth: usize,
    budget: &mut Budget,
    out: &mut String,
) -> Result<(), Refusal> {
    let keys = object_keys(value).map_err(|_| invalid(path, "is unreadable"))?;
    // Braces and, per key, at least its quotes and a colon: checked before any key is read.
    let count = keys.length() as usize;
    budget.spend(count.saturating_mul(3).saturating_add(2), path)?;
    // Each member is converted in JS order (so the first bad one is the one reported),
    // then written in key order, as a map would hold them.
    let mut members: Vec<(String, String)> = Vec::new();
    for key_js in keys.iter() {
        // A fresh array of strings made by `Object.keys`: reading it runs no host code.
        let key = text_of(&key_js, path)?;
        budget.spend(key.len(), path)?;
        if key == "__proto__" {
            return Err(invalid(path, "has a __proto__ key"));
        }
        // The key as JS gave it: no second copy of the name into JS.
        let item = Reflect::get(value, &key_js)
            .map_err(|_| invalid(&Path::Key(path, &key), "is unreadable"))?;
        if item.is_undefined() {
            continue; // as JSON.stringify does
        }
        let mut member = String::new();
        convert(
            &item,
            &Path::Key(path, &key),
            depth + 1,
            budget,
            &mut member,
        )?;
        members.push((key, member));
    }
    members.sort_by(|a, b| a.0.cmp(&b.0));
    out.push('{');
    for (at, (key, member)) in members.iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        out.push_str(&json_text::quoted(key));
        out.push(':');
        out.push_str(member);
    }
    out.push('}');
    Ok(())
}

/// Writes a finite number; `None` for NaN and infinities.
fn write_number(number: f64, out: &mut String) -> Option<()> {
    if !number.is_finite() {
        return None;
    }
    // Integers stay integers, so the frozen body reads `3`, not `3.0`.
    if number.fract() == 0.0
        && number.abs() <= canvas_scheduler_core::intent::MAX_SAFE_INTEGER as f64
    {
        out.push_str(&json_text::to_string(&(number as i64)));
    } else {
        out.push_str(&json_text::to_string(&number));
    }
    Some(())
}

/// `value` as compact JSON text that JS reads back unchanged (`JSON.parse`).
///
/// # Errors
///
/// An integer beyond ±(2^53 - 1) outside JSON kept as text, as serde-wasm-bindgen's
/// JSON-compatible serializer refused it: such a value would silently change on its way
/// through JS.
pub fn to_string<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, String> {
    let (text, beyond_js) = json_text::write_flagging(value)?;
    if beyond_js {
        return Err(
            "an integer is beyond the integers a JS number holds exactly (2^53 - 1)".into(),
        );
    }
    Ok(text)
}

/// A view as the JS value the host sees: its serde derive written by `serde_json` and parsed by the engine
/// (`JSON.parse`), so one string crosses into JS instead of one call per member, and a
/// `"__proto__"` key in a server's JSON (a canonical state, error details) stays an own
/// property rather than reaching the prototype setter. Every view goes this way: operations and
/// tombstones, events, `explain`, `flush`, `stats`, `pending`, `claims`, `whenSaved`, the log,
/// what hooks are given.
///
/// A JSON text inside it (a payload, a server's canonical state, error details) arrives as the
/// value it holds. An integer beyond ±(2^53 - 1), which a JS number cannot hold (a server's
/// canonical state, error details), arrives as a string of its exact digits
/// ([`json_text::quote_js_integers`]): only that number changes, never the object around it.
/// The view's text is scanned for one only when the serializer saw one, in a number it wrote or
/// in the JSON kept as text ([`json_text::write_view_flagging`]): a view of plain fields, as
/// `pending()`'s, is not scanned at all.
/// `null` only if serde_json or the engine refuses the view (a map keyed by other than
/// strings; none is).
pub fn to_js<T: serde::Serialize + ?Sized>(value: &T) -> JsValue {
    json_text::write_view_flagging(value)
        .ok()
        .map(|(text, beyond_js)| {
            if beyond_js {
                json_text::quote_js_integers(&text)
            } else {
                text
            }
        })
        .and_then(|text| js_sys::JSON::parse(&text).ok())
        .unwrap_or(JsValue::NULL)
}
