//! Safe errors: bounded code and message, plain-JSON details or `{omitted: …}`.

use super::json_text::JsonText;

/// Longest stored error code.
pub(crate) const MAX_CODE_CHARS: usize = 128;
/// Longest stored error message.
pub(crate) const MAX_MESSAGE_CHARS: usize = 2_000;
/// Largest serialized `details` kept as is.
pub(crate) const MAX_DETAILS_BYTES: usize = 4_096;

/// An error as stored in the ledger and shown to the host. Never carries credentials.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct SafeError {
    /// Stable, bounded code.
    #[serde(rename = "code")]
    pub code: String,
    /// Bounded message.
    #[serde(rename = "message")]
    pub message: String,
    /// Plain JSON details, or `{ "omitted": reason }`.
    #[serde(rename = "details", default, skip_serializing_if = "Option::is_none")]
    pub details: Option<JsonText>,
}

fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => text[..cut].to_owned(),
        None => text.to_owned(),
    }
}

impl SafeError {
    /// Builds a bounded error; an empty code becomes `fallback_code`.
    pub fn new(code: &str, message: &str) -> Self {
        Self::with_fallback(code, message, "error")
    }

    /// Like [`SafeError::new`] with an explicit fallback for an empty code.
    pub fn with_fallback(code: &str, message: &str, fallback_code: &str) -> Self {
        let code = code.trim();
        let code = if code.is_empty() { fallback_code } else { code };
        Self {
            code: truncate_chars(code, MAX_CODE_CHARS),
            message: truncate_chars(message, MAX_MESSAGE_CHARS),
            details: None,
        }
    }

    /// Attaches details if small; otherwise records why they were omitted.
    pub fn with_details(mut self, details: JsonText) -> Self {
        let fits = details.text().len() <= MAX_DETAILS_BYTES;
        self.details = Some(if fits {
            details
        } else {
            omitted("error_details_too_large")
        });
        self
    }

    /// Records that details existed but were not plain JSON.
    pub fn with_invalid_details(mut self) -> Self {
        self.details = Some(omitted("invalid_error_details"));
        self
    }
}

fn omitted(reason: &str) -> JsonText {
    JsonText::member("omitted", reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k5_bounds_code_and_message() {
        let long_code = "c".repeat(500);
        let long_message = "é".repeat(5_000);
        let error = SafeError::new(&long_code, &long_message);
        assert_eq!(error.code.chars().count(), MAX_CODE_CHARS);
        assert_eq!(error.message.chars().count(), MAX_MESSAGE_CHARS);
        assert_eq!(
            SafeError::with_fallback("  ", "x", "compile_failed").code,
            "compile_failed"
        );
    }

    #[test]
    fn k5_large_details_are_omitted() {
        let big = JsonText::string(&"x".repeat(MAX_DETAILS_BYTES - 1));
        let error = SafeError::new("e", "m").with_details(big);
        assert_eq!(
            error.details.map(|d| d.text().to_owned()),
            Some(r#"{"omitted":"error_details_too_large"}"#.to_owned())
        );
        let limit = JsonText::string(&"x".repeat(MAX_DETAILS_BYTES - 2));
        let kept = SafeError::new("e", "m").with_details(limit.clone());
        assert_eq!(kept.details, Some(limit), "4 096 bytes with the quotes");
        let small = SafeError::new("e", "m").with_details(serde_json::json!({"a": 1}).into());
        assert_eq!(
            small.details.map(|d| d.text().to_owned()),
            Some(r#"{"a":1}"#.to_owned())
        );
    }
}
