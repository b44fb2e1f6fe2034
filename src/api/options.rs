//! `Scheduler.open` options, validated once with clear, coded errors (`invalid_options`,
//! `invalid_concurrency`). Unknown keys are refused: a typo must not silently mean a default.

use js_sys::{Function, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::web::json::{exact_text, is_array, object_keys, LoneSurrogate};

use crate::core::config::{
    BatchLimits, RetryPolicy, SchedulerConfig, DEFAULT_BATCH_MAX_BYTES,
    DEFAULT_BATCH_MAX_OPERATIONS, DEFAULT_DEAD_LETTER_AFTER_MS, MAX_COALESCE_MS,
};
use crate::core::error::{ErrorCode, SchedulerError};
use crate::core::retention::RetentionPolicy;
use crate::web::transport::DEFAULT_MAX_ANSWER_BYTES;

/// Default per-attempt timeout.
pub const DEFAULT_ATTEMPT_TIMEOUT_MS: u32 = 30_000;

/// Every option `Scheduler.open` reads; any other key is refused. The declarations
/// (`SchedulerOptions` in `types.rs`) name the same ones: a browser test compares the two.
pub const KEYS: [&str; 23] = [
    "transport",
    "database",
    "endpoint",
    "principal",
    "concurrency",
    "leaseMs",
    "attemptTimeoutMs",
    "retry",
    "batch",
    "maxPayloadBytes",
    "maxAnswerBytes",
    "eventLogLimit",
    "coalesceMs",
    "retain",
    "headers",
    "compile",
    "participants",
    "coalesce",
    "authorize",
    "classifyError",
    "onEvent",
    "owner",
    "persist",
];

/// The keys of each option that is an object, by option name (compared with the
/// declarations as [`KEYS`] is).
pub const NESTED_KEYS: [(&str, &[&str]); 4] = [
    ("transport", &TRANSPORT_KEYS),
    ("retry", &RETRY_KEYS),
    ("batch", &BATCH_KEYS),
    ("retain", &RETAIN_KEYS),
];
const TRANSPORT_KEYS: [&str; 2] = ["submit", "query"];
const RETRY_KEYS: [&str; 4] = ["baseMs", "maxMs", "maxAttempts", "deadLetterAfterMs"];
const BATCH_KEYS: [&str; 3] = ["maxOperations", "maxBytes", "kinds"];
const RETAIN_KEYS: [&str; 4] = ["settled", "settledMs", "tombstones", "tombstoneMs"];

/// The host's hooks, as JS functions.
#[derive(Clone, Default)]
pub struct Hooks {
    /// `headers()`, asked before every send.
    pub headers: Option<Function>,
    /// `compile(intent, requestId)`.
    pub compile: Option<Function>,
    /// `participants(intent)`.
    pub participants: Option<Function>,
    /// `coalesce(older, newer)`.
    pub coalesce: Option<Function>,
    /// `authorize({request, principal})`.
    pub authorize: Option<Function>,
    /// `classifyError(error)`.
    pub classify_error: Option<Function>,
    /// `onEvent(event)`.
    pub on_event: Option<Function>,
}

/// Everything `open` needs.
pub struct OpenOptions {
    /// IndexedDB database name.
    pub database: String,
    /// Protocol v1 base URL.
    pub endpoint: String,
    /// Per-attempt timeout.
    pub attempt_timeout_ms: u32,
    /// Byte limit of one answer (`maxAnswerBytes`).
    pub max_answer_bytes: usize,
    /// Core options.
    pub config: SchedulerConfig,
    /// JS hooks.
    pub hooks: Hooks,
    /// The host's own transport, replacing `fetch`.
    pub transport: Option<crate::web::js_transport::JsTransport>,
    /// `persist` (default true): ask the browser to keep the ledger's storage persistent.
    pub persist: bool,
}

fn bad(message: impl Into<String>) -> SchedulerError {
    SchedulerError::new(ErrorCode::InvalidOptions, message)
}

/// The option `key` and what is wrong with it.
fn bad_field(key: &str, what: &str) -> SchedulerError {
    bad(format!("{key} {what}"))
}

/// An object that is not an array (asked where a throw is caught: an unreadable Proxy is not).
fn plain_enough(value: &JsValue) -> bool {
    value.is_object() && !is_array(value) && object_keys(value).is_ok()
}

fn field(object: &JsValue, key: &str) -> Result<JsValue, SchedulerError> {
    Reflect::get(object, &JsValue::from_str(key)).map_err(|_| bad_field(key, "is unreadable"))
}

fn text(object: &JsValue, key: &str, required: bool) -> Result<Option<String>, SchedulerError> {
    let value = field(object, key)?;
    if value.is_undefined() {
        return if required {
            Err(bad_field(key, "is required"))
        } else {
            Ok(None)
        };
    }
    match exact_text(&value) {
        Some(Ok(s)) if !s.is_empty() && s.chars().count() <= 256 => Ok(Some(s)),
        Some(Err(LoneSurrogate)) => Err(bad_field(key, "holds a lone surrogate")),
        _ => Err(bad_field(key, "must be a string of 1-256 characters")),
    }
}

fn integer(object: &JsValue, key: &str, min: u64, max: u64) -> Result<Option<u64>, SchedulerError> {
    let value = field(object, key)?;
    if value.is_undefined() {
        return Ok(None);
    }
    match value.as_f64() {
        Some(n) if n.is_finite() && n.fract() == 0.0 && n >= min as f64 && n <= max as f64 => {
            Ok(Some(n as u64))
        }
        _ => Err(bad(format!("{key} must be an integer from {min} to {max}"))),
    }
}

/// `batch.kinds`: 1-64 distinct operation types, each as an intent's `operationType` must be.
/// Read through `Reflect` (length, then each index) so a hostile array's throw is caught.
fn kinds(object: &JsValue) -> Result<Option<Vec<String>>, SchedulerError> {
    const KEY: &str = "batch.kinds";
    const WHAT: &str =
        "must be an array of 1-64 operation types (1-64 characters of A-Z a-z 0-9 . _ -)";
    let value = field(object, "kinds")?;
    if value.is_undefined() {
        return Ok(None);
    }
    if !is_array(&value) {
        return Err(bad_field(KEY, WHAT));
    }
    let length = field(&value, "length")?.as_f64().unwrap_or(0.0);
    if !(1.0..=64.0).contains(&length) {
        return Err(bad_field(KEY, WHAT));
    }
    let mut kinds = Vec::new();
    for i in 0..length as u32 {
        let item = Reflect::get_u32(&value, i).map_err(|_| bad_field(KEY, "is unreadable"))?;
        let kind = match exact_text(&item) {
            Some(Ok(kind)) if crate::core::intent::valid_kind(&kind) => kind,
            _ => return Err(bad_field(KEY, WHAT)),
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(Some(kinds))
}

fn boolean(object: &JsValue, key: &str) -> Result<Option<bool>, SchedulerError> {
    let value = field(object, key)?;
    if value.is_undefined() {
        return Ok(None);
    }
    value
        .as_bool()
        .map(Some)
        .ok_or_else(|| bad_field(key, "must be true or false"))
}

fn function(object: &JsValue, key: &str) -> Result<Option<Function>, SchedulerError> {
    let value = field(object, key)?;
    if value.is_undefined() {
        return Ok(None);
    }
    value
        .dyn_into::<Function>()
        .map(Some)
        .map_err(|_| bad_field(key, "must be a function"))
}

fn nested(
    object: &JsValue,
    key: &str,
    allowed: &[&str],
) -> Result<Option<JsValue>, SchedulerError> {
    let value = field(object, key)?;
    if value.is_undefined() {
        return Ok(None);
    }
    if !plain_enough(&value) {
        return Err(bad_field(key, "must be an object"));
    }
    check_keys(&value, allowed, key)?;
    Ok(Some(value))
}

fn check_keys(object: &JsValue, allowed: &[&str], what: &str) -> Result<(), SchedulerError> {
    // `Object.keys` of a Proxy runs its traps: read where a throw is caught.
    let keys = object_keys(object).map_err(|_| bad_field(what, "is unreadable"))?;
    for key in keys.iter() {
        let key = key.as_string().unwrap_or_default();
        if !allowed.contains(&key.as_str()) {
            return Err(bad(format!("unknown option {what}.{key}")));
        }
    }
    Ok(())
}

/// The endpoint must be an absolute http(s) URL without credentials, query or fragment, whose
/// `/requests` paths stay on its own origin: nothing is ever sent anywhere else (docs/protocol.md).
fn check_endpoint(endpoint: &str) -> Result<(), SchedulerError> {
    let refused = || bad("endpoint must be an http(s) URL without credentials, query or fragment");
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        return Err(refused());
    }
    let url = web_sys::Url::new(endpoint).map_err(|_| refused())?;
    let base = endpoint.trim_end_matches('/');
    let requests = web_sys::Url::new(&format!("{base}/requests/x")).map_err(|_| refused())?;
    let clean = url.username().is_empty()
        && url.password().is_empty()
        && url.search().is_empty()
        && url.hash().is_empty()
        && !endpoint.contains(['?', '#']);
    if !clean || requests.origin() != url.origin() {
        return Err(refused());
    }
    Ok(())
}

/// Validates the options object.
pub fn decode_options(options: &JsValue) -> Result<OpenOptions, SchedulerError> {
    if !plain_enough(options) {
        return Err(bad("options must be an object"));
    }
    check_keys(options, &KEYS, "options")?;
    let database = text(options, "database", true)?.unwrap_or_default();
    let transport = match nested(options, "transport", &TRANSPORT_KEYS)? {
        Some(object) => Some(crate::web::js_transport::JsTransport {
            submit: function(&object, "submit")?
                .ok_or_else(|| bad("transport.submit is required"))?,
            query: function(&object, "query")?.ok_or_else(|| bad("transport.query is required"))?,
        }),
        None => None,
    };
    // With a pluggable transport the endpoint is only informative.
    let endpoint = text(options, "endpoint", transport.is_none())?
        .unwrap_or_else(|| "http://transport.invalid".into());
    check_endpoint(&endpoint)?;
    let mut config = SchedulerConfig {
        principal: text(options, "principal", false)?,
        ..SchedulerConfig::default()
    };
    let concurrency = field(options, "concurrency")?;
    if !concurrency.is_undefined() {
        match concurrency.as_f64() {
            Some(n) if n.is_finite() && n.fract() == 0.0 && (1.0..=64.0).contains(&n) => {
                config.concurrency = n as usize
            }
            _ => {
                return Err(SchedulerError::new(
                    ErrorCode::InvalidConcurrency,
                    "concurrency must be an integer from 1 to 64",
                ))
            }
        }
    }
    if let Some(lease) = integer(options, "leaseMs", 1_000, 3_600_000)? {
        config.lease_ms = lease;
    }
    let attempt_timeout_ms = integer(options, "attemptTimeoutMs", 100, 600_000)?
        .map_or(DEFAULT_ATTEMPT_TIMEOUT_MS, |t| t as u32);
    if let Some(retry) = nested(options, "retry", &RETRY_KEYS)? {
        let base_ms = integer(&retry, "baseMs", 1, 3_600_000)?.unwrap_or(500);
        let max_ms = integer(&retry, "maxMs", 1, 86_400_000)?.unwrap_or(30_000.max(base_ms));
        let max_attempts = integer(&retry, "maxAttempts", 1, 10_000)?.unwrap_or(20) as u32;
        let dead_letter_after_ms = integer(&retry, "deadLetterAfterMs", 0, 604_800_000)?
            .unwrap_or(DEFAULT_DEAD_LETTER_AFTER_MS);
        config.retry = RetryPolicy {
            base_ms,
            max_ms,
            max_attempts,
            dead_letter_after_ms,
        };
    }
    if let Some(batch) = nested(options, "batch", &BATCH_KEYS)? {
        config.batch = BatchLimits {
            max_operations: integer(&batch, "maxOperations", 1, 1_000)?
                .map_or(DEFAULT_BATCH_MAX_OPERATIONS, |n| n as usize),
            max_bytes: integer(&batch, "maxBytes", 1, 16 << 20)?
                .map_or(DEFAULT_BATCH_MAX_BYTES, |n| n as usize),
            kinds: kinds(&batch)?,
        };
    }
    if let Some(limit) = integer(options, "maxPayloadBytes", 1, 16 << 20)? {
        config.max_payload_bytes = limit as usize;
    }
    let max_answer_bytes = integer(options, "maxAnswerBytes", 1_024, 64 << 20)?
        .map_or(DEFAULT_MAX_ANSWER_BYTES, |limit| limit as usize);
    if let Some(limit) = integer(options, "eventLogLimit", 1, 100_000)? {
        config.event_log_limit = limit as usize;
    }
    if let Some(ms) = integer(options, "coalesceMs", 0, MAX_COALESCE_MS)? {
        config.coalesce_ms = ms;
    }
    if let Some(retain) = nested(options, "retain", &RETAIN_KEYS)? {
        // Each limit a non-negative integer; 0 keeps nothing whole (compacted as it settles)
        // or no tombstone (an id is forgotten once compacted). Times up to ten years.
        let defaults = RetentionPolicy::default();
        let years = 10 * 365 * 86_400_000;
        config.retain = RetentionPolicy {
            settled: integer(&retain, "settled", 0, 1_000_000)?
                .map_or(defaults.settled, |n| n as usize),
            settled_ms: integer(&retain, "settledMs", 0, years)?.unwrap_or(defaults.settled_ms),
            tombstones: integer(&retain, "tombstones", 0, 10_000_000)?
                .map_or(defaults.tombstones, |n| n as usize),
            tombstone_ms: integer(&retain, "tombstoneMs", 0, years)?
                .unwrap_or(defaults.tombstone_ms),
        };
    }
    config.owner = match text(options, "owner", false)? {
        Some(owner) => owner,
        None => format!("tab-{}", crate::web::driver::WebHost::fresh_id()),
    };
    config.validate()?;
    let persist = boolean(options, "persist")?.unwrap_or(true);
    let hooks = Hooks {
        headers: function(options, "headers")?,
        compile: function(options, "compile")?,
        participants: function(options, "participants")?,
        coalesce: function(options, "coalesce")?,
        authorize: function(options, "authorize")?,
        classify_error: function(options, "classifyError")?,
        on_event: function(options, "onEvent")?,
    };
    Ok(OpenOptions {
        database,
        endpoint,
        attempt_timeout_ms,
        max_answer_bytes,
        config,
        hooks,
        transport,
        persist,
    })
}
