//! The lenient members of an answer ([`Answer`](super::Answer)'s derive): a member that is
//! `null` is absent, an error's `code` or `message` that is not a string is empty, an
//! `accepted` entry of a batch carries no verdict. Canonical state and error details are kept
//! as the answer's own text with its layout taken out (numbers as the server wrote them);
//! such a value that is not JSON the ledger keeps (a lone surrogate escape) is left out, not
//! refused.

use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::{JsonText, OperationVerdict, SafeError, Settlement, MAX_CANONICAL_BYTES};

/// A string member, or empty when it is anything else.
fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::String(text) => text,
        _ => String::new(),
    })
}

/// A kept value: its text without layout, or `None` when it is `null` or not JSON the ledger
/// keeps.
fn kept<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<JsonText>, D::Error> {
    let raw = Box::<RawValue>::deserialize(deserializer)?;
    Ok(JsonText::compact(raw.get()).filter(|text| !text.is_null()))
}

/// `error`: a string (the code) or `{code, message, details}`, bounded; `null` is none.
pub(super) fn error<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<SafeError>, D::Error> {
    deserializer.deserialize_option(ErrorVisitor)
}

struct ErrorVisitor;

impl<'de> Visitor<'de> for ErrorVisitor {
    type Value = Option<SafeError>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an error code or an error object")
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_str<E>(self, code: &str) -> Result<Self::Value, E> {
        Ok(Some(SafeError::with_fallback(code, code, "server_error")))
    }

    /// A member written twice counts once, the later one.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut code, mut message, mut details) = (String::new(), String::new(), None);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "code" => code = map.next_value_seed(Text)?,
                "message" => message = map.next_value_seed(Text)?,
                "details" => details = map.next_value_seed(Kept)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let error = SafeError::with_fallback(&code, &message, "server_error");
        Ok(Some(match details {
            Some(details) => error.with_details(details),
            None => error,
        }))
    }
}

/// [`text`] as a seed.
struct Text;

impl<'de> serde::de::DeserializeSeed<'de> for Text {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        text(deserializer)
    }
}

/// [`kept`] as a seed.
struct Kept;

impl<'de> serde::de::DeserializeSeed<'de> for Kept {
    type Value = Option<JsonText>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        kept(deserializer)
    }
}

/// `canonical`: the state, unless `null`, not JSON the ledger keeps or over
/// [`MAX_CANONICAL_BYTES`].
pub(super) fn canonical<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<JsonText>, D::Error> {
    Ok(kept(deserializer)?.filter(|text| text.text().len() <= MAX_CANONICAL_BYTES))
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
    use serde::de::Error;
    let entries = Option::<Vec<Box<RawValue>>>::deserialize(deserializer)?.unwrap_or_default();
    let mut verdicts = Vec::with_capacity(entries.len());
    for entry in entries {
        // An object: a derive would also take an array of the members in order.
        let entry: WireVerdict = super::object(entry.get())
            .ok_or_else(|| D::Error::custom("operation entries must be objects"))?;
        let settlement = match entry.outcome {
            WireSettlement::Applied => Settlement::Applied,
            WireSettlement::Rejected => Settlement::Rejected,
            WireSettlement::Accepted => continue,
        };
        verdicts.push(OperationVerdict {
            operation_id: entry.operation_id,
            settlement,
            error: entry.error,
            canonical: entry.canonical,
        });
    }
    Ok(verdicts)
}
