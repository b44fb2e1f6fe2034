//! An operation's payload, kept as the JSON text it was checked and stored as.
//!
//! The scheduler never looks inside a payload after enqueue: it stores it, copies it into the
//! frozen body and hands it to `compile`. Kept as a parsed tree it cost a dozen allocations
//! per operation at every load (in a profile of open + start of 100 000 pending, `malloc` fell
//! from 181 to 21 ms with text); as text it is one allocation, written to storage and into the
//! wire body byte for byte.

use serde_json::Value;

pub use super::json_text::JsonText as Payload;

impl Payload {
    /// The text of a JSON value (compact, object keys sorted).
    pub fn from_value(value: &Value) -> Self {
        Self::from_json(value)
    }
}

impl Payload {
    /// The value as a tree (for tests and tools that look inside; the scheduler never does).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.text()).unwrap_or(Value::Null)
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self::from_value(&value)
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
        assert_eq!(
            spaced.text(),
            r#"{ "shape": {"x":1,"y":2}, "id": "s" }"#,
            "kept as stored"
        );
        assert_eq!(spaced, payload, "same JSON, different layout");
        assert_ne!(Payload::from(json!({"id": "t"})), payload);
        assert_eq!(Payload::default().text(), "null");
        assert!(serde_json::from_str::<Payload>("{not json").is_err());
        let float = json!([6.874105014475447e133]);
        assert_eq!(
            Payload::from(float.clone()).text(),
            float.to_string(),
            "floats written as serde_json writes them"
        );
    }

    /// Equal values compare equal whatever their layout, key order, duplicate keys or string
    /// escapes; different values never do.
    #[test]
    fn equality_is_by_value() {
        let text = |t: &str| serde_json::from_str::<Payload>(t).expect("JSON text");
        let same = [
            (
                r#"{"a":1,"b":[true,null]}"#,
                r#"{ "b" : [ true , null ], "a" : 1 }"#,
            ),
            (r#"{"a":"A"}"#, r#"{"\u0061":"\u0041"}"#),
            (r#"{"a":2}"#, r#"{"a":1,"a":2}"#),
            (r#""x\/y""#, r#""x/y""#),
        ];
        for (a, b) in same {
            assert_eq!(text(a), text(b), "{a} = {b}");
        }
        let different = [
            (r#"{"a":1}"#, r#"{"a":2}"#),
            (r#"{"a":1}"#, r#"{"a":1,"b":1}"#),
            (r#"[1,2]"#, r#"[2,1]"#),
            (r#""a""#, r#""A""#),
            (r#"{"a":1,"a":2}"#, r#"{"a":1}"#),
        ];
        for (a, b) in different {
            assert_ne!(text(a), text(b), "{a} ≠ {b}");
        }
    }
}
