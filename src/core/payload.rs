//! An operation's payload, kept as the JSON text it was checked and stored as.
//!
//! The scheduler never looks inside a payload after enqueue: it stores it, copies it into the
//! frozen body and hands it to `compile`. Kept as a parsed tree it cost a dozen allocations
//! per operation at every load (in a profile of open + start of 100 000 pending, `malloc` fell
//! from 181 to 21 ms with text); as text it is one allocation, written to storage and into the
//! wire body byte for byte.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// A payload: valid JSON text (compact, object keys sorted, when this scheduler wrote it; as
/// stored by an earlier build otherwise).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Payload(Box<RawValue>);

impl Payload {
    /// The payload of a checked JSON value.
    pub fn from_value(value: &Value) -> Self {
        // A `Value` always serializes (its keys are strings): never `null` for a non-null.
        Self::from_serialized(value)
    }

    /// The payload of something that serializes to JSON; `null` if it cannot.
    pub fn from_serialized<T: Serialize>(value: &T) -> Self {
        Self(serde_json::value::to_raw_value(value).unwrap_or_else(|_| null()))
    }

    /// The payload as a JSON value (for comparing intents).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        self.0.get()
    }
}

fn null() -> Box<RawValue> {
    RawValue::NULL.to_owned()
}

impl Default for Payload {
    fn default() -> Self {
        Self(null())
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self::from_value(&value)
    }
}

/// Equal as JSON values: the same text, or texts that differ only in layout.
impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text() || self.to_value() == other.to_value()
    }
}

/// Compared as text first: serde_json reads some floats back one bit off (without its slower
/// `float_roundtrip`), but writes every float the same shortest way, so a value written as
/// this payload's text is equal to it.
impl PartialEq<Value> for Payload {
    fn eq(&self, other: &Value) -> bool {
        serde_json::to_string(other).is_ok_and(|text| text == self.text())
            || self.to_value() == *other
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
        let text = serde_json::to_string(&payload).expect("serializes");
        assert_eq!(text, payload.text(), "written byte for byte");
        let spaced: Payload =
            serde_json::from_str(r#"{ "shape": {"x":1,"y":2}, "id": "s" }"#).expect("decodes");
        assert_eq!(spaced, payload, "same JSON, different layout");
        assert_ne!(Payload::from(json!({"id": "t"})), payload);
        assert_eq!(Payload::default().text(), "null");
        assert!(serde_json::from_str::<Payload>("{not json").is_err());
        let float = json!([6.874105014475447e133]);
        assert_eq!(
            Payload::from(float.clone()),
            float,
            "equal to the value it was written from"
        );
    }
}
