//! No secrets in what the server writes: an answer's error text may echo a request header (a
//! proxy's "invalid token Bearer abc…", a server that quotes its input). Before an attempt's status
//! is recorded or reported, every value `headers()` returned for that attempt is cut out of it.
//!
//! Not only whole values and words: *every substring* of a value at least [`MIN_SECRET_CHARS`]
//! long is cut out (a server quoting `abc123` out of `cookie: sid=abc123`, or `s3cret` out of
//! `Token token="s3cret"`). Text is scanned by windows of [`MIN_SECRET_CHARS`] characters:
//! every character inside a window that also occurs in a header value is covered, and each run
//! of covered characters (without its edge whitespace) becomes [`REDACTED`]. This may cut a bit
//! more than the secret (a word the value shares); it never leaves a piece of one. Details
//! (JSON) holding such a window are replaced whole by `{omitted: "error_details_redacted"}`.

use std::collections::HashSet;

use super::io::AttemptStatus;
use super::json_text::JsonText;
use super::safe_error::SafeError;

/// What an occurrence of a header value becomes.
pub(crate) const REDACTED: &str = "[redacted]";

/// Shorter values and words are not scrubbed: they are not credentials, and cutting every
/// `1` or `en` out of a message would only garble it.
pub(crate) const MIN_SECRET_CHARS: usize = 4;

/// The header values of one attempt, ready to be cut out of server text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Secrets(Vec<String>);

/// The [`MIN_SECRET_CHARS`]-character windows of `text`, as byte ranges.
fn windows(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let starts: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect();
    (0..starts.len().saturating_sub(MIN_SECRET_CHARS))
        .map(move |k| (starts[k], starts[k + MIN_SECRET_CHARS]))
}

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

    /// Every [`MIN_SECRET_CHARS`]-character window of a value (and of its JSON-escaped form).
    /// Only looked up, never iterated, so its order cannot show.
    fn grams(&self) -> HashSet<&str> {
        self.0
            .iter()
            .flat_map(|value| windows(value).map(move |(a, b)| &value[a..b]))
            .collect()
    }

    /// `text` with every substring of a secret replaced by [`REDACTED`] (module docs).
    pub fn scrub_text(&self, text: &str) -> String {
        let grams = self.grams();
        let mut covered = vec![false; text.len()];
        let mut any = false;
        for (a, b) in windows(text) {
            if grams.contains(&text[a..b]) {
                covered[a..b].iter_mut().for_each(|c| *c = true);
                any = true;
            }
        }
        if !any {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut run = String::new();
        for (i, c) in text.char_indices() {
            if covered[i] {
                run.push(c);
                continue;
            }
            flush_run(&mut out, &mut run);
            out.push(c);
        }
        flush_run(&mut out, &mut run);
        out
    }

    fn appears_in_json(&self, json: &str) -> bool {
        let escaped: Vec<String> = self
            .0
            .iter()
            .map(|secret| {
                let quoted = JsonText::string(secret);
                quoted.text()[1..quoted.text().len() - 1].to_owned()
            })
            .collect();
        let escaped = Secrets(escaped);
        let (plain, escaped) = (self.grams(), escaped.grams());
        windows(json).any(|(a, b)| plain.contains(&json[a..b]) || escaped.contains(&json[a..b]))
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
            error.details = Some(JsonText::member("omitted", "error_details_redacted"));
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

/// Appends a covered run as [`REDACTED`], keeping the whitespace at its edges.
fn flush_run(out: &mut String, run: &mut String) {
    if run.is_empty() {
        return;
    }
    let trimmed = run.trim();
    if trimmed.is_empty() {
        out.push_str(run);
    } else {
        let start = run.len() - run.trim_start().len();
        let end = run.trim_end().len();
        out.push_str(&run[..start]);
        out.push_str(REDACTED);
        out.push_str(&run[end..]);
    }
    run.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{AttemptOutcome, OperationVerdict};
    use crate::model::Settlement;

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
                .with_details(JsonText::member("key", &"k\"ey\\9")),
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

    /// A piece of a header value is a secret too, not only its whitespace-separated words.
    #[test]
    fn k5_every_substring_of_a_header_value_is_cut_out() {
        let secrets = Secrets::of_headers(&[
            ("cookie".into(), "theme=dark; sid=9f8e7d6c5b".into()),
            ("authorization".into(), "Token token=\"s3cr3t-tok\"".into()),
        ]);
        let mut error = SafeError::new(
            "unauthorized",
            "session 9f8e7d6c5b expired; bad credential s3cr3t-tok",
        )
        .with_details(JsonText::member("sid", &"9f8e7d6c5b"));
        secrets.scrub_error(&mut error);
        assert_eq!(
            error.message,
            "session [redacted] expired; bad credential [redacted]"
        );
        assert_eq!(
            error.details.unwrap().text(),
            r#"{"omitted":"error_details_redacted"}"#
        );
    }

    #[test]
    fn k5_errors_without_header_values_are_unchanged() {
        let secrets = Secrets::of_headers(&headers());
        let original = SafeError::new("http_500", "HTTP 500")
            .with_details(JsonText::member("status", &500u64));
        let mut error = original.clone();
        secrets.scrub_error(&mut error);
        assert_eq!(error, original);
        assert!(Secrets::of_headers(&[]).is_empty());
    }
}
