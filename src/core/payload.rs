//! An operation's payload, kept as the JSON text it was checked and stored as.
//!
//! The scheduler never looks inside a payload after enqueue: it stores it, copies it into the
//! frozen body and hands it to `compile`. Kept as a parsed tree it cost a dozen allocations
//! per operation at every load (in a profile of open + start of 100 000 pending, `malloc` fell
//! from 181 to 21 ms with text); as text it is one allocation, written to storage and into the
//! wire body byte for byte.

use serde_json::Value;

use super::json::{self, FromJson, JsonError, Reader, ToJson, Writer};

/// A payload: valid JSON text (compact, object keys sorted, when this scheduler wrote it; as
/// stored by an earlier build otherwise).
#[derive(Clone, Debug)]
pub struct Payload(Box<str>);

impl Payload {
    /// The payload of a checked JSON value.
    pub fn from_value(value: &Value) -> Self {
        Self::from_json(value)
    }

    /// The payload of something written as JSON.
    pub fn from_json<T: ToJson + ?Sized>(value: &T) -> Self {
        Self(json::to_string(value).into_boxed_str())
    }

    /// The payload as a JSON value (for comparing intents).
    pub fn to_value(&self) -> Value {
        json::parse(&self.0).unwrap_or(Value::Null)
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        &self.0
    }
}

impl Default for Payload {
    fn default() -> Self {
        Self("null".into())
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self::from_value(&value)
    }
}

/// Written byte for byte as stored.
impl ToJson for Payload {
    fn write_json(&self, writer: &mut Writer) {
        writer.raw(&self.0);
    }
}

/// Kept as the exact text of the value (checked to be well formed), layout and all.
impl FromJson for Payload {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        reader.raw().map(|text| Self(text.into()))
    }
}

/// Equal as JSON values: the same text, or texts that differ only in layout.
impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text() || self.to_value() == other.to_value()
    }
}

/// Compared as text first (the common case, and exact for floats written from the value),
/// then as values.
impl PartialEq<Value> for Payload {
    fn eq(&self, other: &Value) -> bool {
        json::to_string(other) == self.text() || self.to_value() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stored_text_round_trips_and_compares_as_json() {
        let payload = Payload::from(json!({"shape": {"y": 2, "x": 1}, "id": "s"}));
        assert_eq!(payload.text(), r#"{"id":"s","shape":{"x":1,"y":2}}"#);
        let text = json::to_string(&payload);
        assert_eq!(text, payload.text(), "written byte for byte");
        let spaced: Payload =
            json::from_str(r#"{ "shape": {"x":1,"y":2}, "id": "s" }"#).expect("decodes");
        assert_eq!(
            spaced.text(),
            r#"{ "shape": {"x":1,"y":2}, "id": "s" }"#,
            "kept as stored"
        );
        assert_eq!(spaced, payload, "same JSON, different layout");
        assert_ne!(Payload::from(json!({"id": "t"})), payload);
        assert_eq!(Payload::default().text(), "null");
        assert!(json::from_str::<Payload>("{not json").is_err());
        let float = json!([6.874105014475447e133]);
        assert_eq!(
            Payload::from(float.clone()),
            float,
            "equal to the value it was written from"
        );
    }
}
