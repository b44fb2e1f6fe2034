//! [`JsonText`]: a JSON value kept as its text (a payload, the server's canonical state, an
//! error's details, a record set aside at load).
//!
//! The scheduler never computes with these values: it checks them, stores them, sends them
//! and hands them back to JS. Kept as text they cost one allocation each and are written to
//! storage and the wire byte for byte; kept as trees they cost an allocation per member, and
//! the tree type, its parser (with float parsing) and its maps were a good part of the `.wasm`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::{escape_into, FromJson, JsonError, Reader, ToJson, Writer};

/// Valid JSON text of one value. Compact with object keys sorted when this crate wrote it
/// from a JS value; as stored or as the server sent it (see [`JsonText::compact`]) otherwise.
#[derive(Clone, Debug)]
pub struct JsonText(Box<str>);

impl JsonText {
    /// The text of something written as JSON.
    pub fn from_json<T: ToJson + ?Sized>(value: &T) -> Self {
        Self(super::to_string(value).into_boxed_str())
    }

    /// A JSON object whose members `members` writes (with [`Writer::member`]).
    pub fn object(members: impl FnOnce(&mut Writer)) -> Self {
        Self::written(|writer| {
            writer.object();
            members(writer);
            writer.end_object();
        })
    }

    /// The one value `write` writes (the writer keeps it well formed).
    pub fn written(write: impl FnOnce(&mut Writer)) -> Self {
        let mut writer = Writer::new();
        write(&mut writer);
        Self(writer.finish().into_boxed_str())
    }

    /// The value of `text` with the whitespace between tokens left out, or `None` when `text`
    /// is not one JSON value.
    pub fn compact(text: &str) -> Option<Self> {
        let checked: JsonText = super::from_str(text).ok()?;
        let mut out = String::with_capacity(checked.0.len());
        let mut in_string = false;
        let mut escaped = false;
        for ch in checked.0.chars() {
            if in_string {
                in_string = escaped || ch != '"';
                escaped = !escaped && ch == '\\';
            } else if matches!(ch, ' ' | '\n' | '\r' | '\t') {
                continue;
            } else {
                in_string = ch == '"';
            }
            out.push(ch);
        }
        Some(Self(out.into_boxed_str()))
    }

    /// A JSON string holding `text`.
    pub fn string(text: &str) -> Self {
        let mut out = String::with_capacity(text.len() + 2);
        escape_into(&mut out, text);
        Self(out.into_boxed_str())
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        &self.0
    }

    /// Whether the value is `null`.
    pub fn is_null(&self) -> bool {
        &*self.0 == "null"
    }

    /// The members of the object this text holds (a later duplicate key wins, as JSON
    /// objects read into maps do), or `None` when it is not an object.
    pub fn members(&self) -> Option<Members<'_>> {
        Members::of(&self.0)
    }

    /// The same value written compactly with every object's keys sorted and strings escaped
    /// as this crate escapes them: texts of equal values give the same canonical text.
    /// Numbers stay as written (`1.0` and `1.00` differ), as every number this crate writes
    /// is written one way.
    fn canonical(&self) -> Option<String> {
        let mut reader = Reader::new(&self.0);
        let mut writer = Writer::new();
        canonical_into(&mut reader, &mut writer).ok()?;
        Some(writer.finish())
    }
}

fn canonical_into(reader: &mut Reader<'_>, writer: &mut Writer) -> Result<(), JsonError> {
    match reader.peek() {
        Some(b'{') => {
            reader.object()?;
            // In key order (a later duplicate replaces an earlier one).
            let mut members: BTreeMap<Cow<'_, str>, String> = BTreeMap::new();
            while let Some(key) = reader.key()? {
                let mut value = Writer::new();
                canonical_into(reader, &mut value)?;
                members.insert(key, value.finish());
            }
            writer.object();
            for (key, value) in &members {
                writer.key(key);
                writer.raw(value);
            }
            writer.end_object();
        }
        Some(b'[') => {
            reader.array()?;
            writer.array();
            while reader.item()? {
                canonical_into(reader, writer)?;
            }
            writer.end_array();
        }
        Some(b'"') => writer.str(&reader.str()?),
        _ => writer.raw(reader.raw()?),
    }
    Ok(())
}

impl Default for JsonText {
    fn default() -> Self {
        Self("null".into())
    }
}

/// Written byte for byte as held.
impl ToJson for JsonText {
    fn write_json(&self, writer: &mut Writer) {
        writer.raw(&self.0);
    }
}

/// Kept as the exact text of the value (checked to be well formed), layout and all.
impl FromJson for JsonText {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        reader.raw().map(|text| Self(text.into()))
    }
}

/// Equal as JSON values: the same text, or texts whose canonical forms are the same.
impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
            || matches!((self.canonical(), other.canonical()), (Some(a), Some(b)) if a == b)
    }
}

/// Whether the JSON `text` holds an integer beyond ±(2^53 - 1): JS (`JSON.parse`) would read
/// it as a different number. Floats are not counted: both sides round them the same way.
pub fn exceeds_js_integers(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                // Skip the string (escapes included).
                at += 1;
                while let Some(&inner) = bytes.get(at) {
                    at += if inner == b'\\' { 2 } else { 1 };
                    if inner == b'"' {
                        break;
                    }
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while bytes
                    .get(at)
                    .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    at += 1;
                }
                if beyond_js(&text[start..at]) {
                    return true;
                }
            }
            _ => at += 1,
        }
    }
    false
}

/// `text` with every integer beyond ±(2^53 - 1) written as a string of its decimal digits
/// (`12345678901234567890` becomes `"12345678901234567890"`): the one value JS cannot read
/// exactly is replaced, and the object around it, and every other number, stays as it is.
/// Text holding no such integer comes back unchanged.
pub fn quote_js_integers(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                at += 1;
                while let Some(&inner) = bytes.get(at) {
                    at += if inner == b'\\' { 2 } else { 1 };
                    if inner == b'"' {
                        break;
                    }
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while bytes
                    .get(at)
                    .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    at += 1;
                }
                let token = &text[start..at];
                if beyond_js(token) {
                    out.push_str(&text[copied..start]);
                    out.push('"');
                    out.push_str(token);
                    out.push('"');
                    copied = at;
                }
            }
            _ => at += 1,
        }
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    out
}

/// Whether a number token is an integer JS would read as another number.
fn beyond_js(token: &str) -> bool {
    const MAX_SAFE: u64 = (1 << 53) - 1;
    let digits = token.trim_start_matches('-');
    digits.bytes().all(|b| b.is_ascii_digit())
        && digits.parse::<u64>().map_or(true, |value| value > MAX_SAFE)
}

/// The items of the array `text` holds, as raw value texts; `None` when it holds no array
/// (or is not one JSON value).
pub fn items(text: &str) -> Option<Vec<&str>> {
    let mut reader = Reader::new(text);
    if reader.peek() != Some(b'[') {
        return None;
    }
    reader.array().ok()?;
    let mut items = Vec::new();
    while reader.item().ok()? {
        items.push(reader.raw().ok()?);
    }
    reader.end().ok()?;
    Some(items)
}

/// The members of one JSON object, as raw value texts.
#[derive(Debug)]
pub struct Members<'a>(Vec<(Cow<'a, str>, &'a str)>);

impl<'a> Members<'a> {
    /// The members of the object `text` holds, or `None` when it holds no object (or is not
    /// one JSON value).
    pub fn of(text: &'a str) -> Option<Self> {
        let mut reader = Reader::new(text);
        if reader.peek() != Some(b'{') {
            return None;
        }
        let mut members = Vec::new();
        reader.object().ok()?;
        while let Some(key) = reader.key().ok()? {
            members.push((key, reader.raw().ok()?));
        }
        reader.end().ok()?;
        Some(Self(members))
    }

    /// The members in order, as (key, value text).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &'a str)> + '_ {
        self.0.iter().map(|(key, value)| (key.as_ref(), *value))
    }

    /// The text of member `key` (the last one when it repeats), `None` when absent.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// Member `key` unless it is absent or `null`.
    pub fn present(&self, key: &str) -> Option<&'a str> {
        self.get(key).filter(|text| *text != "null")
    }

    /// Member `key` as a string, `None` when absent or not a string.
    pub fn str(&self, key: &str) -> Option<Cow<'a, str>> {
        let text = self.get(key)?;
        let mut reader = Reader::new(text);
        (reader.peek() == Some(b'"'))
            .then(|| reader.str().ok())
            .flatten()
    }

    /// Member `key` as an unsigned integer, `None` when absent or not one.
    pub fn u64(&self, key: &str) -> Option<u64> {
        super::from_str(self.get(key)?).ok()
    }
}

/// serde's view of a JSON text: the value it holds, as the module's own codec stores it
/// (`tests/record_shapes.rs` holds the two to the same members) and as the host sees it
/// (views go to JS written by `serde_json` and read by `JSON.parse`, `web::json::to_js`). An
/// integer beyond ±(2^53 - 1), which a JS number cannot hold (a server's canonical state,
/// error details), is written as a string of its exact digits: only that number changes, never
/// the object around it. The wire keeps the text's very bytes ([`wire`]).
impl serde::Serialize for JsonText {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if exceeds_js_integers(&self.0) {
            return wire::serialize(&JsonText(quote_js_integers(&self.0).into()), serializer);
        }
        wire::serialize(self, serializer)
    }
}

/// Read from the value itself, as its compact JSON text, checked as the module's reader checks
/// a stored one (no lone surrogate, nesting bounded).
impl<'de> serde::Deserialize<'de> for JsonText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        wire::deserialize(deserializer)
    }
}

/// The wire's view of a JSON text (request bodies, answers): the value itself, not a string
/// holding it, streamed from and to the text in its own member order. For
/// `#[serde(with = "crate::core::json::wire")]` on a wire type's member. The module writes
/// bodies and reads answers with `core::json` (ARCHITECTURE, hand-made pieces).
pub mod wire {
    use super::JsonText;

    /// Writes the value the text holds to any serializer (through `serde_json`, the same bytes).
    pub fn serialize<S: serde::Serializer>(
        text: &JsonText,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serde_transcode::transcode(
            &mut serde_json::Deserializer::from_str(text.text()),
            serializer,
        )
    }

    /// Reads any value as its compact JSON text, checked as the module checks an answer's.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<JsonText, D::Error> {
        use serde::de::Error;
        let mut text = Vec::new();
        serde_transcode::transcode(deserializer, &mut serde_json::Serializer::new(&mut text))
            .map_err(D::Error::custom)?;
        std::str::from_utf8(&text)
            .ok()
            .and_then(JsonText::compact)
            .ok_or_else(|| D::Error::custom("not JSON text the ledger keeps"))
    }
}
