//! JSON for the ledger's records, the wire and the inbox, written by hand instead of derived
//! with serde.
//!
//! serde's derived visitors, serde_json's deserializer and the float printing its error
//! messages reach were about a fifth of the `.wasm`; a pull [`Reader`], a [`Writer`] and one
//! short [`ToJson`]/[`FromJson`] pair per record (mostly from [`json_record!`](crate::json_record)) do the same
//! work in a fraction of the code, one pass per record. The bytes written are those serde_json
//! wrote (field order, escapes, shortest floats), so stored records and frozen bodies are
//! unchanged. Values the scheduler only keeps (payloads, canonical state, error details) stay
//! text ([`JsonText`]); nothing in the module builds a tree. `serde_json::Value` can still be
//! read and written ([`parse`], [`Writer::value`]) for tests and tools.

mod reader;
mod text;
mod writer;

#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

pub use reader::{Reader, MAX_DEPTH};
pub use text::{exceeds_js_integers, items, quote_js_integers, wire, JsonText, Members};
pub use writer::{escape_into, Writer};

/// Why a JSON text could not be read as what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError {
    /// What was wrong.
    pub message: Cow<'static, str>,
    /// Byte offset in the text where it was noticed.
    pub at: usize,
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.message, self.at)
    }
}

/// Something written as one JSON value.
pub trait ToJson {
    /// Writes the value.
    fn write_json(&self, writer: &mut Writer);

    /// Whether a record field holding this is left out when it is marked `skip` (`None`, an
    /// empty map).
    fn absent(&self) -> bool {
        false
    }
}

/// Something read from one JSON value.
pub trait FromJson: Sized {
    /// Reads the value.
    ///
    /// # Errors
    ///
    /// The text at the reader is not this value.
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError>;
}

/// The compact JSON text of a value.
pub fn to_string<T: ToJson + ?Sized>(value: &T) -> String {
    let mut writer = Writer::new();
    value.write_json(&mut writer);
    writer.finish()
}

/// Reads a whole JSON text as a `T` (nothing but whitespace may follow it).
///
/// # Errors
///
/// The text is not JSON, or not a `T`.
pub fn from_str<T: FromJson>(text: &str) -> Result<T, JsonError> {
    let mut reader = Reader::new(text);
    let value = T::read_json(&mut reader)?;
    reader.end()?;
    Ok(value)
}

/// Reads a whole JSON text as a tree (tests and tools: the scheduler keeps [`JsonText`]).
///
/// # Errors
///
/// The text is not JSON.
pub fn parse(text: &str) -> Result<Value, JsonError> {
    from_str(text)
}

/// `text` as a JSON string literal, for messages that quote a name. `{:?}` would do the
/// same for plain names, but brings Rust's `Debug` escaping and its Unicode tables (~7 KB)
/// into the `.wasm`.
pub fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    escape_into(&mut out, text);
    out
}

/// A required member was missing from an object.
pub fn missing(reader: &Reader<'_>, field: &'static str) -> JsonError {
    reader.error(format!("missing field `{field}`"))
}

/// A member of a record read by [`read_members`]: its JSON name and whether it must be present.
#[derive(Debug)]
pub struct FieldName {
    /// The member's name.
    pub name: &'static str,
    /// Whether an object without it is an error.
    pub required: bool,
}

/// Reads an object whose members are `fields` (at most 64), handing each to `read` with its
/// index: a duplicate member, a missing required one and (with `deny_unknown`) an unknown
/// one are errors, other unknown members are skipped. One copy of this loop serves every
/// record type; what [`json_record!`](crate::json_record) generates per record is only the `read` closure that
/// stores each field, into a record that starts as its `Default`.
///
/// # Errors
///
/// The text is not such an object, or `read` failed.
pub fn read_members(
    reader: &mut Reader<'_>,
    fields: &[FieldName],
    deny_unknown: bool,
    read: &mut dyn FnMut(usize, &mut Reader<'_>) -> Result<(), JsonError>,
) -> Result<(), JsonError> {
    let mut seen = 0u64;
    reader.object()?;
    while let Some(key) = reader.key()? {
        match fields.iter().position(|field| field.name == key) {
            Some(at) if at < 64 => {
                if seen & (1 << at) != 0 {
                    return Err(duplicate(reader, fields[at].name));
                }
                seen |= 1 << at;
                read(at, reader)?;
            }
            _ if deny_unknown => return Err(reader.error(format!("unknown field `{key}`"))),
            _ => reader.skip()?,
        }
    }
    let absent = fields
        .iter()
        .enumerate()
        .find(|&(at, field)| field.required && (at >= 64 || seen & (1 << at) == 0));
    match absent {
        Some((_, field)) => Err(missing(reader, field.name)),
        None => Ok(()),
    }
}

/// A member appeared twice in one object.
pub fn duplicate(reader: &Reader<'_>, field: &'static str) -> JsonError {
    reader.error(format!("duplicate field `{field}`"))
}

impl ToJson for str {
    fn write_json(&self, writer: &mut Writer) {
        writer.str(self);
    }
}

impl ToJson for String {
    fn write_json(&self, writer: &mut Writer) {
        writer.str(self);
    }
}

impl FromJson for String {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        reader.string()
    }
}

impl ToJson for u64 {
    fn write_json(&self, writer: &mut Writer) {
        writer.u64(*self);
    }
}

impl FromJson for u64 {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        reader.u64()
    }
}

impl ToJson for u32 {
    fn write_json(&self, writer: &mut Writer) {
        writer.u64(u64::from(*self));
    }
}

impl FromJson for u32 {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        reader.u32()
    }
}

impl ToJson for usize {
    fn write_json(&self, writer: &mut Writer) {
        writer.u64(*self as u64);
    }
}

impl ToJson for bool {
    fn write_json(&self, writer: &mut Writer) {
        writer.bool(*self);
    }
}

impl FromJson for bool {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        reader.bool()
    }
}

impl ToJson for Value {
    fn write_json(&self, writer: &mut Writer) {
        writer.value(self);
    }
}

impl FromJson for Value {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        reader.value()
    }
}

impl<T: ToJson + ?Sized> ToJson for &T {
    fn write_json(&self, writer: &mut Writer) {
        (**self).write_json(writer);
    }

    fn absent(&self) -> bool {
        (**self).absent()
    }
}

impl<T: ToJson + ?Sized> ToJson for Box<T> {
    fn write_json(&self, writer: &mut Writer) {
        (**self).write_json(writer);
    }
}

impl<T: FromJson> FromJson for Box<T> {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        T::read_json(reader).map(Box::new)
    }
}

impl<T: ToJson> ToJson for Option<T> {
    fn write_json(&self, writer: &mut Writer) {
        match self {
            Some(value) => value.write_json(writer),
            None => writer.null(),
        }
    }

    fn absent(&self) -> bool {
        self.is_none()
    }
}

/// `null` reads as `None`.
impl<T: FromJson> FromJson for Option<T> {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        if reader.null()? {
            Ok(None)
        } else {
            T::read_json(reader).map(Some)
        }
    }
}

impl<T: ToJson> ToJson for [T] {
    fn write_json(&self, writer: &mut Writer) {
        writer.array();
        for item in self {
            item.write_json(writer);
        }
        writer.end_array();
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn write_json(&self, writer: &mut Writer) {
        self.as_slice().write_json(writer);
    }
}

impl<T: FromJson> FromJson for Vec<T> {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        reader.array()?;
        let mut items = Vec::new();
        while reader.item()? {
            items.push(T::read_json(reader)?);
        }
        Ok(items)
    }
}

impl<V: ToJson> ToJson for BTreeMap<String, V> {
    fn write_json(&self, writer: &mut Writer) {
        writer.object();
        for (key, value) in self {
            writer.key(key);
            value.write_json(writer);
        }
        writer.end_object();
    }

    fn absent(&self) -> bool {
        self.is_empty()
    }
}

/// A later duplicate key replaces an earlier one, as serde_json's map did.
impl<V: FromJson> FromJson for BTreeMap<String, V> {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        reader.object()?;
        let mut map = BTreeMap::new();
        while let Some(key) = reader.key()? {
            let value = V::read_json(reader)?;
            map.insert(key.into_owned(), value);
        }
        Ok(map)
    }
}

/// [`ToJson`] and [`FromJson`] for a struct stored as a JSON object, one line per field:
/// `field: "jsonName" kind`, where kind is `required` (always written, must be present),
/// `default` (always written, `Default` when missing) or `skip` (left out when
/// [`ToJson::absent`], `Default` when missing). Members are written in field order; unknown
/// members are skipped unless the struct is marked `deny_unknown`; a duplicate is an error.
/// Reading starts from the struct's `Default` (so it must have one, at most 64 fields) and
/// stores each member as [`read_members`] hands it over. A struct marked `write_only` (a view
/// for the host) gets only [`ToJson`].
#[macro_export]
macro_rules! json_record {
    ($type:ident write_only { $($field:ident : $name:literal $kind:ident),* $(,)? }) => {
        impl $crate::core::json::ToJson for $type {
            fn write_json(&self, writer: &mut $crate::core::json::Writer) {
                writer.object();
                $( $crate::json_record!(@write self, writer, $field, $name, $kind); )*
                writer.end_object();
            }
        }
    };
    ($type:ident deny_unknown { $($body:tt)* }) => {
        $crate::json_record!(@impl $type, deny, { $($body)* });
    };
    ($type:ident { $($body:tt)* }) => {
        $crate::json_record!(@impl $type, skip, { $($body)* });
    };
    (@impl $type:ident, $unknown:ident, { $($field:ident : $name:literal $kind:ident),* $(,)? }) => {
        impl $crate::core::json::ToJson for $type {
            fn write_json(&self, writer: &mut $crate::core::json::Writer) {
                writer.object();
                $( $crate::json_record!(@write self, writer, $field, $name, $kind); )*
                writer.end_object();
            }
        }

        impl $crate::core::json::FromJson for $type {
            fn read_json(
                reader: &mut $crate::core::json::Reader<'_>,
            ) -> Result<Self, $crate::core::json::JsonError> {
                const FIELDS: &[$crate::core::json::FieldName] = &[
                    $( $crate::core::json::FieldName {
                        name: $name,
                        required: $crate::json_record!(@required $kind),
                    }, )*
                ];
                const _: () = assert!(FIELDS.len() <= 64, "read_members tracks 64 members");
                let mut out = <Self as Default>::default();
                $crate::core::json::read_members(
                    reader,
                    FIELDS,
                    $crate::json_record!(@deny $unknown),
                    &mut |at, reader| {
                        let mut index = 0usize;
                        $(
                            if at == index {
                                out.$field = $crate::core::json::FromJson::read_json(reader)?;
                                return Ok(());
                            }
                            index += 1;
                        )*
                        let _ = index;
                        Ok(())
                    },
                )?;
                Ok(out)
            }
        }
    };
    (@write $self:ident, $writer:ident, $field:ident, $name:literal, skip) => {
        if !$crate::core::json::ToJson::absent(&$self.$field) {
            $writer.key($name);
            $crate::core::json::ToJson::write_json(&$self.$field, $writer);
        }
    };
    (@write $self:ident, $writer:ident, $field:ident, $name:literal, required) => {
        $writer.member($name, &$self.$field);
    };
    (@write $self:ident, $writer:ident, $field:ident, $name:literal, default) => {
        $writer.member($name, &$self.$field);
    };
    (@required required) => { true };
    (@required default) => { false };
    (@required skip) => { false };
    (@deny deny) => { true };
    (@deny skip) => { false };
}

/// [`ToJson`] and [`FromJson`] for a fieldless enum stored as one of a few strings.
#[macro_export]
macro_rules! json_enum {
    ($type:ident { $($variant:ident => $name:literal),* $(,)? }) => {
        impl $crate::core::json::ToJson for $type {
            fn write_json(&self, writer: &mut $crate::core::json::Writer) {
                writer.str(match self {
                    $( $type::$variant => $name, )*
                });
            }
        }

        impl $crate::core::json::FromJson for $type {
            fn read_json(
                reader: &mut $crate::core::json::Reader<'_>,
            ) -> Result<Self, $crate::core::json::JsonError> {
                let text = reader.str()?;
                match &*text {
                    $( $name => Ok($type::$variant), )*
                    _ => Err(reader.error(format!("unknown variant `{text}`"))),
                }
            }
        }
    };
}
