//! [`JsonText`]: a JSON value kept as its text (a payload, the server's canonical state, an
//! error's details, a record set aside at load), and the few questions the scheduler asks of
//! such text. Records, frozen bodies and answers are serde types read and written by
//! `serde_json`; a `JsonText` inside one is a `RawValue`, written byte for byte as held.
//!
//! The scheduler never computes with these values: it checks them, stores them, sends them
//! and hands them back to JS, so they stay text, one allocation each.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

/// Valid JSON text of one value. Compact with object keys sorted when this crate wrote it
/// from a JS value; as stored or as the server sent it (see [`JsonText::compact`]) otherwise.
#[derive(Clone, Debug)]
pub struct JsonText(Box<RawValue>);

impl JsonText {
    /// The text of a value serde writes as JSON.
    pub fn from_json<T: Serialize + ?Sized>(value: &T) -> Self {
        // Derived records, string-keyed maps and raw text: serde_json cannot fail on them.
        serde_json::value::to_raw_value(value).map_or_else(|_| Self::default(), Self)
    }

    /// A JSON object of one member.
    pub fn member<T: Serialize + ?Sized>(key: &str, value: &T) -> Self {
        Self::from_json(&std::collections::BTreeMap::from([(key, value)]))
    }

    /// Text this crate wrote as one JSON value (checked again by serde_json), or `None`.
    pub fn from_written(text: String) -> Option<Self> {
        RawValue::from_string(text).ok().map(Self)
    }

    /// The value of `text` with the whitespace between tokens left out, or `None` when `text`
    /// is not one JSON value the ledger keeps (see [`check`]).
    pub fn compact(text: &str) -> Option<Self> {
        check(text, usize::MAX, false).ok()?;
        let mut out = String::with_capacity(text.len());
        let mut in_string = false;
        let mut escaped = false;
        for ch in text.chars() {
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
        Self::from_written(out)
    }

    /// A JSON string holding `text`.
    pub fn string(text: &str) -> Self {
        Self::from_json(text)
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// Whether the value is `null`.
    pub fn is_null(&self) -> bool {
        self.text() == "null"
    }

    /// The members of the object this text holds (a later duplicate key wins, as JSON
    /// objects read into maps do), or `None` when it is not an object.
    pub fn members(&self) -> Option<Members<'_>> {
        Members::of(self.text())
    }
}

impl Default for JsonText {
    fn default() -> Self {
        Self(RawValue::NULL.to_owned())
    }
}

/// Written byte for byte as held (serde_json writes a `RawValue` as its text).
impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Kept as the exact text of the value, layout and all, checked as [`check`] checks it (no
/// lone surrogate, nesting bounded), which serde_json's `RawValue` alone does not.
impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        if might_fail_check(raw.get()) {
            check(raw.get(), usize::MAX, false).map_err(|e| D::Error::custom(e.to_string()))?;
        }
        Ok(Self(raw))
    }
}

/// Equal as JSON values: the same text, or texts serde_json reads as equal trees.
impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text() || {
            let tree = |text: &str| serde_json::from_str::<serde_json::Value>(text).ok();
            matches!((tree(self.text()), tree(other.text())), (Some(a), Some(b)) if a == b)
        }
    }
}

/// Deepest nesting serde_json reads (its recursion budget of 128 refuses the 128th level).
pub const MAX_DEPTH: usize = 127;

/// Whether `text` could hold a lone surrogate escape or nest deeper than [`MAX_DEPTH`]: only
/// then does a `RawValue` need the walk of [`check`].
fn might_fail_check(text: &str) -> bool {
    text.contains("\\u") || text.bytes().filter(|b| matches!(b, b'[' | b'{')).count() > MAX_DEPTH
}

/// Why [`check`] refused a text.
#[derive(Debug)]
pub enum ShapeError {
    /// Not JSON (serde_json's reason: a lone surrogate, a syntax error, nesting past 127).
    NotJson(serde_json::Error),
    /// A value nests deeper than the limit given.
    TooDeep,
    /// An object has a `__proto__` key (refused when asked).
    ProtoKey,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeError::NotJson(e) => e.fmt(f),
            ShapeError::TooDeep => f.write_str("nested too deep"),
            ShapeError::ProtoKey => f.write_str("a __proto__ key"),
        }
    }
}

/// Reads `text` through serde_json without keeping anything: one JSON value, strings read
/// as strings (so a lone surrogate escape is refused), no value more than `max_depth` levels
/// down (the value itself is level 1), and with `deny_proto` no `__proto__` key.
///
/// # Errors
///
/// The first thing found wrong.
pub fn check(text: &str, max_depth: usize, deny_proto: bool) -> Result<(), ShapeError> {
    let found = Cell::new(None);
    let walk = Walk {
        depth: 1,
        max_depth,
        deny_proto,
        found: &found,
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let read = walk
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end());
    match (found.take(), read) {
        (Some(shape), _) => Err(shape),
        (None, Err(e)) => Err(ShapeError::NotJson(e)),
        (None, Ok(())) => Ok(()),
    }
}

/// One value of the walk of [`check`].
#[derive(Clone, Copy)]
struct Walk<'s> {
    depth: usize,
    max_depth: usize,
    deny_proto: bool,
    found: &'s Cell<Option<ShapeError>>,
}

impl Walk<'_> {
    fn refuse<E: serde::de::Error>(&self, shape: ShapeError) -> E {
        self.found.set(Some(shape));
        E::custom("refused")
    }

    fn inner(self) -> Self {
        Self {
            depth: self.depth + 1,
            ..self
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.depth > self.max_depth {
            return Err(self.refuse(ShapeError::TooDeep));
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self.inner())?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(proto) = map.next_key_seed(ProtoKey)? {
            if proto && self.deny_proto {
                return Err(self.refuse(ShapeError::ProtoKey));
            }
            map.next_value_seed(self.inner())?;
        }
        Ok(())
    }
}

/// A key, read as whether it is `__proto__`.
struct ProtoKey;

impl<'de> DeserializeSeed<'de> for ProtoKey {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for ProtoKey {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(key == "__proto__")
    }
}

/// serde_json's compact formatter, noting integers beyond ±(2^53 - 1) (JS would read them
/// back changed). JSON kept as text is written raw and not looked at.
struct Flagging<'a> {
    beyond_js: &'a mut bool,
    /// Whether JSON kept as text (written as it is) counts too.
    raw_too: bool,
}

/// Largest integer a JS number holds exactly.
const MAX_SAFE: u64 = (1 << 53) - 1;

impl serde_json::ser::Formatter for Flagging<'_> {
    fn write_u64<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        value: u64,
    ) -> std::io::Result<()> {
        *self.beyond_js |= value > MAX_SAFE;
        serde_json::ser::CompactFormatter.write_u64(writer, value)
    }

    fn write_i64<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        value: i64,
    ) -> std::io::Result<()> {
        *self.beyond_js |= value.unsigned_abs() > MAX_SAFE;
        serde_json::ser::CompactFormatter.write_i64(writer, value)
    }

    fn write_raw_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        if self.raw_too && !*self.beyond_js {
            *self.beyond_js = exceeds_js_integers(fragment);
        }
        writer.write_all(fragment.as_bytes())
    }
}

/// The compact JSON text of a value, and whether one of its integers (outside JSON kept as
/// text) is beyond ±(2^53 - 1), which JS (`JSON.parse`) would read back changed.
///
/// # Errors
///
/// serde_json refused the value (a map keyed by other than strings, a non-finite float).
pub fn write_flagging<T: Serialize + ?Sized>(value: &T) -> Result<(String, bool), String> {
    write_flagged(value, false)
}

/// As [`write_flagging`], with the JSON kept as text inside the value (payloads, a server's
/// canonical state, error details) looked at too: the text of a view for JS, which
/// [`quote_js_integers`] must then go through. Only that kept text is scanned, not the whole
/// view.
///
/// # Errors
///
/// serde_json refused the value (a map keyed by other than strings, a non-finite float).
pub fn write_view_flagging<T: Serialize + ?Sized>(value: &T) -> Result<(String, bool), String> {
    write_flagged(value, true)
}

fn write_flagged<T: Serialize + ?Sized>(
    value: &T,
    raw_too: bool,
) -> Result<(String, bool), String> {
    let mut beyond_js = false;
    let mut out = Vec::with_capacity(128);
    let formatter = Flagging {
        beyond_js: &mut beyond_js,
        raw_too,
    };
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value
        .serialize(&mut serializer)
        .map_err(|e| e.to_string())?;
    // serde_json writes UTF-8 only.
    let text = String::from_utf8(out).map_err(|e| e.to_string())?;
    Ok((text, beyond_js))
}

/// Whether the JSON `text` holds an integer beyond ±(2^53 - 1): JS (`JSON.parse`) would read
/// it as a different number. Floats are not counted: both sides round them the same way.
pub fn exceeds_js_integers(text: &str) -> bool {
    let mut found = false;
    scan_numbers(text, |_, _, token| found |= beyond_js(token));
    found
}

/// `text` with every integer beyond ±(2^53 - 1) written as a string of its decimal digits
/// (`12345678901234567890` becomes `"12345678901234567890"`): the one value JS cannot read
/// exactly is replaced, and the object around it, and every other number, stays as it is.
/// Text holding no such integer comes back unchanged.
pub fn quote_js_integers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    scan_numbers(text, |start, end, token| {
        if beyond_js(token) {
            out.push_str(&text[copied..start]);
            out.push('"');
            out.push_str(token);
            out.push('"');
            copied = end;
        }
    });
    out.push_str(text.get(copied..).unwrap_or_default());
    out
}

/// Calls `each` with the span and text of every number token of the JSON `text` (outside its
/// strings).
fn scan_numbers(text: &str, mut each: impl FnMut(usize, usize, &str)) {
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
                each(start, at, &text[start..at]);
            }
            _ => at += 1,
        }
    }
}

/// Whether a number token is an integer JS would read as another number.
fn beyond_js(token: &str) -> bool {
    let digits = token.trim_start_matches('-');
    digits.bytes().all(|b| b.is_ascii_digit())
        && digits.parse::<u64>().map_or(true, |value| value > MAX_SAFE)
}

/// The items of the array `text` holds, as raw value texts; `None` when it holds no array
/// (or is not one JSON value).
pub fn items(text: &str) -> Option<Vec<&str>> {
    if !text.trim_start().starts_with('[') {
        return None;
    }
    let items: Vec<&RawValue> = serde_json::from_str(text).ok()?;
    Some(items.into_iter().map(RawValue::get).collect())
}

/// serde_json's compact text of a record, view or body (their derives, string-keyed maps and
/// kept text cannot fail to serialize; were one to, the text is empty and reads as no JSON).
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// `text` as a JSON string literal, for messages that quote a name.
pub fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// The members of one JSON object, as raw value texts.
#[derive(Debug)]
pub struct Members<'a>(Vec<(Cow<'a, str>, &'a str)>);

impl<'a> Members<'a> {
    /// The members of the object `text` holds, or `None` when it holds no object (or is not
    /// one JSON value).
    pub fn of(text: &'a str) -> Option<Self> {
        if !text.trim_start().starts_with('{') {
            return None;
        }
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let members = deserializer.deserialize_map(MembersVisitor).ok()?;
        deserializer.end().ok()?;
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
        if !text.starts_with('"') {
            return None;
        }
        serde_json::from_str::<Key<'a>>(text)
            .ok()
            .map(|Key(key)| key)
    }

    /// Member `key` as an unsigned integer, `None` when absent or not one.
    pub fn u64(&self, key: &str) -> Option<u64> {
        serde_json::from_str(self.get(key)?).ok()
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Vec<(Cow<'de, str>, &'de str)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::new();
        while let Some((Key(key), value)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
            members.push((key, value.get()));
        }
        Ok(members)
    }
}

/// A string, borrowed from the text when it holds no escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(text)))
    }

    fn visit_str<E>(self, text: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(text.to_owned())))
    }

    fn visit_string<E>(self, text: String) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(text)))
    }
}

#[cfg(test)]
mod tests;
