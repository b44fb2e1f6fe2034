//! An answer's members in serde's terms ([`Answer`](super::Answer)'s derive), as lenient as the
//! module's own reader (`parse_answer`): a member that is `null` is absent, an error's `code` or
//! `message` that is not a string is empty, an `accepted` entry of a batch carries no verdict.
//! Where they differ: a member written twice is refused (the module takes the later one), an
//! `accepted` entry's other members are still checked, and numbers in canonical state and error
//! details pass through as numbers (`-0` comes back as `-0.0`: the same value, other text).

use serde::{Deserialize, Deserializer};

use super::{JsonText, OperationVerdict, SafeError, Settlement, MAX_CANONICAL_BYTES};

/// A string member, or empty when it is anything else.
fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::String(text) => text,
        _ => String::new(),
    })
}

/// Any value, as its compact JSON text (read as a tree: an answer's error sits in an untagged
/// enum, whose buffered content a `RawValue` cannot be read from).
fn kept<'de, D: Deserializer<'de>>(deserializer: D) -> Result<JsonText, D::Error> {
    serde_json::Value::deserialize(deserializer).map(|value| JsonText::from_json(&value))
}

#[derive(Deserialize)]
struct ErrorObject {
    #[serde(default, deserialize_with = "text")]
    code: String,
    #[serde(default, deserialize_with = "text")]
    message: String,
    #[serde(default, deserialize_with = "kept")]
    details: JsonText,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum WireError {
    Code(String),
    Object(ErrorObject),
}

pub(super) fn error<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<SafeError>, D::Error> {
    Ok(match Option::<WireError>::deserialize(deserializer)? {
        None => None,
        Some(WireError::Code(code)) => Some(SafeError::with_fallback(&code, &code, "server_error")),
        Some(WireError::Object(object)) => {
            let error = SafeError::with_fallback(&object.code, &object.message, "server_error");
            Some(match object.details.text() {
                "null" => error,
                _ => error.with_details(object.details),
            })
        }
    })
}

pub(super) fn canonical<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<JsonText>, D::Error> {
    let text = kept(deserializer)?;
    Ok(Some(text).filter(|text| text.text() != "null" && text.text().len() <= MAX_CANONICAL_BYTES))
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum WireSettlement {
    Applied,
    Rejected,
    Accepted,
}

#[derive(Deserialize)]
struct WireVerdict {
    #[serde(rename = "operationId")]
    operation_id: String,
    #[serde(rename = "outcome")]
    outcome: WireSettlement,
    #[serde(default, deserialize_with = "error")]
    error: Option<SafeError>,
    #[serde(default, deserialize_with = "canonical")]
    canonical: Option<JsonText>,
}

pub(super) fn verdicts<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<OperationVerdict>, D::Error> {
    let entries = Option::<Vec<WireVerdict>>::deserialize(deserializer)?.unwrap_or_default();
    Ok(entries
        .into_iter()
        .filter_map(|entry| {
            let settlement = match entry.outcome {
                WireSettlement::Applied => Settlement::Applied,
                WireSettlement::Rejected => Settlement::Rejected,
                WireSettlement::Accepted => return None,
            };
            Some(OperationVerdict {
                operation_id: entry.operation_id,
                settlement,
                error: entry.error,
                canonical: entry.canonical,
            })
        })
        .collect())
}
