//! Wire protocol v1 answers (docs/protocol.md): one HTTP answer — status, body, `Retry-After` —
//! mapped to the [`AttemptStatus`] the core understands. Pure, so every row of the table is tested
//! natively; the browser transport only fetches and hands the pieces here.
//!
//! | answer | status |
//! | --- | --- |
//! | 2xx with `{outcome, error?, canonical?, operations?}` | that outcome |
//! | 409 / 422 with `{outcome: "rejected", …}` | rejected |
//! | `rejected` with error code `batch_not_supported`, to a request of several operations | the batch declined: none of it applied, each operation goes again on its own, and this scheduler sends no more batches (`scheduler::batch`) |
//! | 409 without a rejection body | accepted, `in_progress`: query later |
//! | 404 on a query | unresolved `not_found`: the core submits the same request again |
//! | 401 / 403 | blocked `unauthorized` until `resume()` |
//! | 408, 421, 425, 429, 5xx | unresolved `http_<status>`, honouring `Retry-After` |
//! | any other 4xx (a proxy's 400, 404 on a submit, 405, 413, 431, …) | dead letter,
//!`http_<status>` |
//! | 2xx whose body is not such an answer | unresolved `invalid_answer` |
//! | anything else (1xx, 3xx) | unresolved `http_<status>` |
//!
//! Only a protocol body rejects for good: a 4xx that is not the protocol's own rejection says
//! the path to the server is wrong (a proxy, a wrong endpoint), not that the change is, so the
//! request is dead-lettered (not retryable, claims kept) and the host can `retry(id)` once the
//! path is fixed. A `canonical` over [`MAX_CANONICAL_BYTES`] is left out (the outcome stands).

use super::json_text::{JsonText, Members};

use super::io::{AttemptOutcome, AttemptStatus, OperationVerdict};
use super::model::{Millis, RetryAction, Settlement};
use super::safe_error::SafeError;

/// Code of an unresolved answer to a query for a key the server never received (404).
pub const NOT_FOUND: &str = "not_found";
/// Code of a 409 without a body: the server is still receiving this key's first submit.
pub const IN_PROGRESS: &str = "in_progress";
/// Code of a 2xx whose body is not a protocol answer.
pub const INVALID_ANSWER: &str = "invalid_answer";
/// Error code by which a server declines a request that carries several operations (a
/// batch): it applied none of them and takes them one request each.
pub const BATCH_NOT_SUPPORTED: &str = "batch_not_supported";
/// Error code of one operation's verdict in a batch: not applied, only because another
/// operation of the batch failed (`scheduler::batch_abort` when every operation has it).
pub const BATCH_ABORTED: &str = "batch_aborted";
/// Why a request waits after 401 or 403.
pub const UNAUTHORIZED: &str = "unauthorized";
/// Largest `canonical` state kept from an answer, in compact JSON bytes. A larger one is left
/// out: the verdict stands (an applied change is not un-applied by its size), and the host
/// reads the state from its server instead.
pub const MAX_CANONICAL_BYTES: usize = 256 * 1024;

/// Maps one HTTP answer to an attempt status (the table is in the module docs).
///
/// `body` is the response text (`None` or empty when there was none), `retry_after` the raw
/// `Retry-After` header, `now` the current time (for an HTTP-date `Retry-After`).
pub fn map_answer(
    action: RetryAction,
    status: u16,
    body: Option<&str>,
    retry_after: Option<&str>,
    now: Millis,
) -> AttemptStatus {
    let body = body.filter(|text| !text.trim().is_empty());
    let answer = body.and_then(object::<Answer>);
    let retry_after_ms = retry_after.and_then(|value| parse_retry_after(value, now));
    match status {
        200..=299 => match answer {
            Some(answer) => {
                let mut mapped = answer.into_status();
                if mapped.outcome == AttemptOutcome::Accepted {
                    // A 202 may say when to ask again.
                    mapped.retry_after_ms = retry_after_ms;
                }
                mapped
            }
            None => AttemptStatus {
                error: Some(SafeError::new(
                    INVALID_ANSWER,
                    &format!("HTTP {status} without a protocol v1 answer body"),
                )),
                ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
            },
        },
        409 | 422 if answer.as_ref().is_some_and(Answer::is_rejected) => answer
            .map(Answer::into_status)
            .unwrap_or_else(|| AttemptStatus::outcome(AttemptOutcome::Rejected)),
        409 => AttemptStatus {
            error: Some(SafeError::new(
                IN_PROGRESS,
                "the server is still receiving this request: query later",
            )),
            retry_after_ms,
            ..AttemptStatus::outcome(AttemptOutcome::Accepted)
        },
        404 if action == RetryAction::Query => AttemptStatus {
            error: Some(SafeError::new(
                NOT_FOUND,
                "the server never received this request: submit it again",
            )),
            ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
        },
        401 | 403 => AttemptStatus {
            error: Some(http_error(status, body)),
            blocked: Some(UNAUTHORIZED.to_owned()),
            ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
        },
        408 | 421 | 425 | 429 | 500..=599 => AttemptStatus {
            error: Some(http_error(status, body)),
            retry_after_ms,
            ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
        },
        // Not the protocol's rejection: the path is wrong (a proxy, a wrong endpoint), not the
        // change. A dead letter, so the host can retry(id) once the path is fixed.
        400..=499 => AttemptStatus {
            error: Some(http_error(status, body)),
            retryable: Some(false),
            ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
        },
        _ => AttemptStatus {
            error: Some(http_error(status, body)),
            ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
        },
    }
}

/// A protocol answer body, `{outcome, error?, canonical?, operations?}`, read by
/// [`map_answer`] when the body is a JSON object (a member written twice is refused).
#[derive(Debug, serde::Deserialize)]
pub struct Answer {
    /// `applied`, `rejected` or `accepted`.
    #[serde(rename = "outcome")]
    pub outcome: AttemptOutcome,
    /// A string (the code) or `{code, message, details}`, bounded.
    #[serde(rename = "error", default, deserialize_with = "wire::error")]
    pub error: Option<SafeError>,
    /// Canonical state, unless null or over [`MAX_CANONICAL_BYTES`].
    #[serde(rename = "canonical", default, deserialize_with = "wire::canonical")]
    pub canonical: Option<JsonText>,
    /// Per-operation verdicts of a batch (`accepted` entries carry none and are skipped).
    #[serde(rename = "operations", default, deserialize_with = "wire::verdicts")]
    pub operations: Vec<OperationVerdict>,
}

impl Answer {
    fn is_rejected(&self) -> bool {
        self.outcome == AttemptOutcome::Rejected
    }

    /// The attempt status the answer's body gives (without its HTTP status's part).
    pub fn into_status(self) -> AttemptStatus {
        AttemptStatus {
            error: self.error,
            canonical: self.canonical,
            operations: self.operations,
            ..AttemptStatus::outcome(self.outcome)
        }
    }
}

/// `text` read as a `T` when it holds a JSON object (a derive would also read an array of
/// the members in order, which no answer is).
fn object<T: serde::de::DeserializeOwned>(text: &str) -> Option<T> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// The path of a query, `requests/{id}` with the id percent-encoded as `encodeURIComponent`
/// does; `None` for an id that a URL would not keep as one path segment of its own (empty,
/// `.` or `..`, which URL parsing resolves into another path), so it is never queried.
pub fn query_path(request_id: &str) -> Option<String> {
    if request_id.is_empty() || request_id == "." || request_id == ".." {
        return None;
    }
    let mut path = String::with_capacity(9 + request_id.len());
    path.push_str("requests/");
    for byte in request_id.bytes() {
        let plain = byte.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&byte);
        if plain {
            path.push(byte as char);
        } else {
            path.push_str(&format!("%{byte:02X}"));
        }
    }
    Some(path)
}

/// The `error` member of a body that is not an answer (a 401's, say).
#[derive(serde::Deserialize)]
struct ErrorOnly {
    #[serde(rename = "error", default, deserialize_with = "wire::error")]
    error: Option<SafeError>,
}

/// `http_<status>`, with the server's own error code and message kept when it sent one.
fn http_error(status: u16, body: Option<&str>) -> SafeError {
    let server = body
        .and_then(object::<ErrorOnly>)
        .and_then(|body| body.error);
    let code = format!("http_{status}");
    // Members in key order, as they were written from a map.
    match server {
        Some(server) => SafeError::new(&code, &server.message).with_details(JsonText::from_json(
            &serde_json::json!({"serverCode": server.code, "status": status}),
        )),
        None => SafeError::new(&code, &format!("HTTP {status}")).with_details(JsonText::from_json(
            &serde_json::json!({ "status": status }),
        )),
    }
}

/// Parses a `Retry-After` value — delta-seconds or an IMF-fixdate HTTP-date — into milliseconds
/// from `now` (0 for a date in the past). `None` when it is neither.
pub fn parse_retry_after(value: &str, now: Millis) -> Option<Millis> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Overlong digit strings saturate rather than fail: "a very long time".
        let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(seconds.saturating_mul(1_000));
    }
    let at = parse_imf_fixdate(value)?;
    Some(at.saturating_sub(now))
}

const DAY_NAMES: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MONTH_NAMES: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110, section 5.6.7) → milliseconds since the Unix epoch.
fn parse_imf_fixdate(value: &str) -> Option<Millis> {
    let bytes = value.as_bytes();
    // Fixed layout: "Www, DD Mmm YYYY HH:MM:SS GMT" is 29 bytes.
    if bytes.len() != 29 || !value.is_ascii() {
        return None;
    }
    let literal = |at: usize, text: &str| value.get(at..at + text.len()) == Some(text);
    if !DAY_NAMES.contains(&&value[0..3])
        || !literal(3, ", ")
        || !literal(7, " ")
        || !literal(11, " ")
        || !literal(16, " ")
        || !literal(19, ":")
        || !literal(22, ":")
        || !literal(25, " GMT")
    {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<u64> {
        let digits = &value[from..to];
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())
            .flatten()
    };
    let day = number(5, 7)?;
    let month = MONTH_NAMES.iter().position(|m| *m == &value[8..11])? as u64 + 1;
    let year = number(12, 16)?;
    let (hour, minute, second) = (number(17, 19)?, number(20, 22)?, number(23, 25)?);
    if year < 1970 || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    // 60 is a leap second (RFC 9110 allows it); it reads as the next second.
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second;
    Some(seconds * 1_000)
}

fn is_leap_year(year: u64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date from 1970 on (Howard Hinnant's
/// `days_from_civil`, restricted to non-negative results).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let year_of_era = year - era * 400;
    let shifted_month = (month + 9) % 12; // March = 0
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

mod wire;

#[cfg(test)]
mod tests;

/// Maps the answer of a pluggable JS transport, given as JSON text: the protocol answer
/// object itself (`{outcome, error?, canonical?, operations?}`), optionally with the HTTP
/// `status` it stands for (default 200, or 409 for `rejected`) and `retryAfterMs` or a raw
/// `retryAfter` header.
pub fn map_transport_answer(action: RetryAction, answer: &str, now: Millis) -> AttemptStatus {
    let members = Members::of(answer);
    let string = |key| members.as_ref().and_then(|m| m.str(key));
    let number = |key| members.as_ref().and_then(|m| m.u64(key));
    let rejected = string("outcome").as_deref() == Some("rejected");
    let status = number("status")
        .filter(|s| (100..=599).contains(s))
        .map_or(if rejected { 409 } else { 200 }, |s| s as u16);
    let retry_after = string("retryAfter");
    let mut mapped = map_answer(action, status, Some(answer), retry_after.as_deref(), now);
    if let Some(ms) = number("retryAfterMs") {
        // Clamped where the due time is computed (RetryPolicy::due_at).
        mapped.retry_after_ms = Some(ms);
    }
    mapped
}
