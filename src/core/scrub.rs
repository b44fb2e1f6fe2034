//! K5 for what the server writes: an answer's error text may echo a request header (a proxy's
//! "invalid token Bearer abc…", a server that quotes its input). Before an attempt's status is
//! recorded or reported, every value `headers()` returned for that attempt is cut out of it.
//!
//! A value is scrubbed whole and word by word (words split at whitespace, `,` and `;`: the
//! token of `Bearer <token>`, each cookie of a `cookie` header), longest first, wherever it is
//! at least [`MIN_SECRET_CHARS`] long. In codes and messages each occurrence becomes
//! [`REDACTED`]; details (JSON) holding one are replaced whole by `{omitted: "error_details_redacted"}`.

use super::io::AttemptStatus;
use super::json::JsonText;
use super::safe_error::SafeError;

/// What an occurrence of a header value becomes.
pub const REDACTED: &str = "[redacted]";

/// Shorter values and words are not scrubbed: they are not credentials, and cutting every
/// `1` or `en` out of a message would only garble it.
pub const MIN_SECRET_CHARS: usize = 4;

/// The header values of one attempt, ready to be cut out of server text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Secrets(Vec<String>);

impl Secrets {
    /// The values of `headers` (their names are not secret) and their words.
    pub fn of_headers(headers: &[(String, String)]) -> Self {
        let mut secrets: Vec<String> = Vec::new();
        for (_, value) in headers {
            let words = value.split(|c: char| c.is_whitespace() || c == ',' || c == ';');
            for piece in std::iter::once(value.as_str()).chain(words) {
                let piece = piece.trim();
                if piece.chars().count() >= MIN_SECRET_CHARS && !secrets.iter().any(|s| s == piece)
                {
                    secrets.push(piece.to_owned());
                }
            }
        }
        // Longest first: a whole value goes before the words inside it.
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        Self(secrets)
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn scrub_text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.0 {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    fn appears_in_json(&self, json: &str) -> bool {
        self.0.iter().any(|secret| {
            let escaped = JsonText::string(secret);
            let inner = &escaped.text()[1..escaped.text().len() - 1];
            json.contains(secret.as_str()) || json.contains(inner)
        })
    }

    /// One error, scrubbed in place (code, message, details).
    pub fn scrub_error(&self, error: &mut SafeError) {
        if self.is_empty() {
            return;
        }
        let code = self.scrub_text(&error.code);
        let message = self.scrub_text(&error.message);
        if code != error.code || message != error.message {
            let details = error.details.take();
            *error = SafeError::new(&code, &message);
            error.details = details;
        }
        if error
            .details
            .as_ref()
            .is_some_and(|details| self.appears_in_json(details.text()))
        {
            error.details = Some(JsonText::object(|object| {
                object.member("omitted", "error_details_redacted")
            }));
        }
    }

    /// An attempt's status, scrubbed in place: its error and every operation verdict's error.
    pub fn scrub_status(&self, status: &mut AttemptStatus) {
        if let Some(error) = status.error.as_mut() {
            self.scrub_error(error);
        }
        for verdict in &mut status.operations {
            if let Some(error) = verdict.error.as_mut() {
                self.scrub_error(error);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::io::{AttemptOutcome, OperationVerdict};
    use crate::core::model::Settlement;

    fn headers() -> Vec<(String, String)> {
        vec![
            ("authorization".into(), "Bearer tok-123456".into()),
            ("x-api-key".into(), "k\"ey\\9".into()),
            ("accept-language".into(), "en".into()),
        ]
    }

    #[test]
    fn k5_header_values_and_their_words_are_cut_out_of_server_errors() {
        let secrets = Secrets::of_headers(&headers());
        let mut status = AttemptStatus {
            error: Some(
                SafeError::new(
                    "bad_tok-123456",
                    "invalid credentials Bearer tok-123456 (token tok-123456) in en",
                )
                .with_details(JsonText::object(|o| o.member("key", "k\"ey\\9"))),
            ),
            operations: vec![OperationVerdict {
                operation_id: "a".into(),
                settlement: Settlement::Rejected,
                error: Some(SafeError::new("nope", "seen k\"ey\\9 here")),
                canonical: None,
            }],
            ..AttemptStatus::outcome(AttemptOutcome::Rejected)
        };
        secrets.scrub_status(&mut status);
        let error = status.error.clone().unwrap();
        assert_eq!(error.code, "bad_[redacted]");
        assert_eq!(
            error.message, "invalid credentials [redacted] (token [redacted]) in en",
            "a short value (`en`) is left alone"
        );
        assert_eq!(
            error.details.unwrap().text(),
            r#"{"omitted":"error_details_redacted"}"#
        );
        assert_eq!(
            status.operations[0].error.as_ref().unwrap().message,
            "seen [redacted] here"
        );
        assert!(!format!("{status:?}").contains("tok-123456"));
    }

    #[test]
    fn k5_errors_without_header_values_are_unchanged() {
        let secrets = Secrets::of_headers(&headers());
        let original = SafeError::new("http_500", "HTTP 500")
            .with_details(JsonText::object(|o| o.member("status", &500u64)));
        let mut error = original.clone();
        secrets.scrub_error(&mut error);
        assert_eq!(error, original);
        assert!(Secrets::of_headers(&[]).is_empty());
    }
}
