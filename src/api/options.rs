//! `Scheduler.open` options, validated once with clear, coded errors (`invalid_options`,
//! `invalid_concurrency`). Unknown keys are refused: a typo must not silently mean a default.
//!
//! Read in two steps. A caught snapshot first (`boundary.js`'s `intentFields`, shared with the
//! intent's reader): the object's keys listed and each option read inside a `try`, into a fresh
//! object holding only the names the derive below declares; then `serde_wasm_bindgen::from_value`
//! of that copy into [`RawOptions`]. `from_value` alone reads fields through the bindings
//! (`obj[field]`), where a throwing getter or a revoked Proxy would throw through the module
//! instead of settling `invalid_options`, and never lists keys, so a typo would silently mean a
//! default (`h6_hostile_options_settle_invalid_options`,
//! `a_malformed_options_are_refused_with_codes`). Each option arrives as the JS value it is
//! ([`Given`]) and is checked here, naming it: serde's `String` would turn a lone surrogate into
//! U+FFFD, and its errors name neither the option nor its range.

use js_sys::{Array, Function};
use serde::de::{Deserializer, Error as _, Visitor};
use serde::Deserialize;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::web::json::{exact_text, LoneSurrogate};

use canvas_scheduler_core::{
    retention::RetentionPolicy, BatchLimits, ErrorCode, RetryPolicy, SchedulerConfig,
    SchedulerError, DEFAULT_BATCH_MAX_BYTES, DEFAULT_BATCH_MAX_OPERATIONS,
    DEFAULT_DEAD_LETTER_AFTER_MS, MAX_COALESCE_MS,
};

use crate::web::transport::DEFAULT_MAX_ANSWER_BYTES;

/// Default per-attempt timeout.
pub const DEFAULT_ATTEMPT_TIMEOUT_MS: u32 = 30_000;

#[wasm_bindgen(module = "/src/api/boundary.js")]
extern "C" {
    /// See `boundary.js`: `null`, `false`, the first unknown key, or the values of `names` in
    /// order (the arrays at `lists` copied, at most `limit` items) and a bitmask of the
    /// unreadable ones.
    #[wasm_bindgen(js_name = intentFields)]
    fn own_fields(value: &JsValue, names: &JsValue, lists: &JsValue, limit: u32) -> JsValue;
}

/// One option as the host gave it (`undefined` when absent), handed over by serde untouched
/// (`serde_wasm_bindgen::preserve`) and checked by the reader, which names the option.
#[derive(Default)]
struct Given(JsValue);

impl<'de> Deserialize<'de> for Given {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde_wasm_bindgen::preserve::deserialize(deserializer).map(Given)
    }
}

/// `Scheduler.open`'s options: the names the module reads, each object option a struct of its
/// own. The declarations (`SchedulerOptions` in `types.rs`) name the same ones: a browser test
/// compares them with [`option_names`].
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawOptions {
    transport: Option<RawTransport>,
    database: Given,
    endpoint: Given,
    principal: Given,
    concurrency: Given,
    lease_ms: Given,
    attempt_timeout_ms: Given,
    retry: Option<RawRetry>,
    batch: Option<RawBatch>,
    max_payload_bytes: Given,
    max_answer_bytes: Given,
    event_log_limit: Given,
    coalesce_ms: Given,
    retain: Option<RawRetain>,
    headers: Given,
    compile: Given,
    participants: Given,
    coalesce: Given,
    authorize: Given,
    classify_error: Given,
    on_event: Given,
    owner: Given,
    persist: Given,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawTransport {
    submit: Given,
    query: Given,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawRetry {
    base_ms: Given,
    max_ms: Given,
    max_attempts: Given,
    dead_letter_after_ms: Given,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawBatch {
    max_operations: Given,
    max_bytes: Given,
    kinds: Given,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawRetain {
    settled: Given,
    settled_ms: Given,
    tombstones: Given,
    tombstone_ms: Given,
}

/// The member names a derived struct reads: serde hands them to `deserialize_struct`, which
/// this deserializer answers by keeping them (and reading nothing).
struct FieldNames<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for FieldNames<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(Self::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(Self::Error::custom("names read"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

fn names_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut names: &'static [&'static str] = &[];
    let _ = T::deserialize(FieldNames(&mut names));
    names
}

/// Every option `Scheduler.open` reads (the derive's names); any other key is refused.
pub fn option_names() -> &'static [&'static str] {
    names_of::<RawOptions>()
}

/// The names inside each option that is an object, by option name.
pub fn nested_option_names() -> [(&'static str, &'static [&'static str]); 4] {
    [
        ("transport", names_of::<RawTransport>()),
        ("retry", names_of::<RawRetry>()),
        ("batch", names_of::<RawBatch>()),
        ("retain", names_of::<RawRetain>()),
    ]
}

/// Most items `batch.kinds` may hold.
const MAX_KINDS: u32 = 64;

/// A fresh plain object holding the options `value` has among `names` (the object options
/// among them snapshotted in turn), every read of the host's value made where a throw is
/// caught. `what` names the object in messages (`options`, `retry`, ...).
fn snapshot(value: &JsValue, names: &[&str], what: &str) -> Result<JsValue, SchedulerError> {
    let listed: Array = names.iter().map(|name| JsValue::from_str(name)).collect();
    // `batch.kinds` is copied into a fresh array (one item more than allowed tells "too many").
    let lists: Array = names
        .iter()
        .position(|name| *name == "kinds")
        .map(|at| JsValue::from(at as u32))
        .into_iter()
        .collect();
    let read = own_fields(value, &listed, &lists, MAX_KINDS + 1);
    if read.is_null() {
        return Err(bad_field(what, "must be an object"));
    }
    if let Some(key) = read.as_string() {
        return Err(bad(format!("unknown option {what}.{key}")));
    }
    let Ok(values) = read.dyn_into::<Array>() else {
        return Err(bad_field(what, "is unreadable"));
    };
    let unreadable = values.get(names.len() as u32).as_f64().unwrap_or(0.0) as u64;
    let copy = js_sys::Object::new();
    let nested = nested_option_names();
    for (at, name) in names.iter().enumerate() {
        if unreadable & (1 << at) != 0 {
            return Err(bad_field(name, "is unreadable"));
        }
        let mut item = values.get(at as u32);
        if item.is_undefined() {
            continue;
        }
        if let Some((_, inner)) = nested.iter().find(|(option, _)| option == name) {
            item = snapshot(&item, inner, name)?;
        }
        // A fresh object with no setters: setting a member runs no host code.
        let _ = js_sys::Reflect::set(&copy, &JsValue::from_str(name), &item);
    }
    Ok(copy.into())
}

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

fn text(value: &Given, key: &str, required: bool) -> Result<Option<String>, SchedulerError> {
    if value.0.is_undefined() {
        return if required {
            Err(bad_field(key, "is required"))
        } else {
            Ok(None)
        };
    }
    match exact_text(&value.0) {
        Some(Ok(s)) if !s.is_empty() && s.chars().count() <= 256 => Ok(Some(s)),
        Some(Err(LoneSurrogate)) => Err(bad_field(key, "holds a lone surrogate")),
        _ => Err(bad_field(key, "must be a string of 1-256 characters")),
    }
}

fn integer(value: &Given, key: &str, min: u64, max: u64) -> Result<Option<u64>, SchedulerError> {
    if value.0.is_undefined() {
        return Ok(None);
    }
    match value.0.as_f64() {
        Some(n) if n.is_finite() && n.fract() == 0.0 && n >= min as f64 && n <= max as f64 => {
            Ok(Some(n as u64))
        }
        _ => Err(bad(format!("{key} must be an integer from {min} to {max}"))),
    }
}

/// `batch.kinds`: 1-64 distinct operation types, each as an intent's `operationType` must be.
/// The snapshot copied an array into a fresh one (at most one item more than allowed).
fn kinds(value: &Given) -> Result<Option<Vec<String>>, SchedulerError> {
    const KEY: &str = "batch.kinds";
    const WHAT: &str =
        "must be an array of 1-64 operation types (1-64 characters of A-Z a-z 0-9 . _ -)";
    if value.0.is_undefined() {
        return Ok(None);
    }
    let Some(items) = value.0.dyn_ref::<Array>() else {
        return Err(bad_field(KEY, WHAT));
    };
    if !(1..=MAX_KINDS).contains(&items.length()) {
        return Err(bad_field(KEY, WHAT));
    }
    let mut kinds = Vec::new();
    for item in items.iter() {
        let kind = match exact_text(&item) {
            Some(Ok(kind)) if canvas_scheduler_core::intent::valid_kind(&kind) => kind,
            _ => return Err(bad_field(KEY, WHAT)),
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(Some(kinds))
}

fn boolean(value: &Given, key: &str) -> Result<Option<bool>, SchedulerError> {
    if value.0.is_undefined() {
        return Ok(None);
    }
    value
        .0
        .as_bool()
        .map(Some)
        .ok_or_else(|| bad_field(key, "must be true or false"))
}

fn function(value: &Given, key: &str) -> Result<Option<Function>, SchedulerError> {
    if value.0.is_undefined() {
        return Ok(None);
    }
    value
        .0
        .clone()
        .dyn_into::<Function>()
        .map(Some)
        .map_err(|_| bad_field(key, "must be a function"))
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
    let copy = snapshot(options, option_names(), "options")?;
    // The copy holds plain objects and the host's values as they were read: nothing serde
    // reads from it runs host code, and each option comes back as given.
    let raw: RawOptions =
        serde_wasm_bindgen::from_value(copy).map_err(|e| bad(format!("options: {e}")))?;
    let database = text(&raw.database, "database", true)?.unwrap_or_default();
    let transport = match raw.transport {
        Some(transport) => Some(crate::web::js_transport::JsTransport {
            submit: function(&transport.submit, "submit")?
                .ok_or_else(|| bad("transport.submit is required"))?,
            query: function(&transport.query, "query")?
                .ok_or_else(|| bad("transport.query is required"))?,
        }),
        None => None,
    };
    // With a pluggable transport the endpoint is only informative.
    let endpoint = text(&raw.endpoint, "endpoint", transport.is_none())?
        .unwrap_or_else(|| "http://transport.invalid".into());
    check_endpoint(&endpoint)?;
    let mut config = SchedulerConfig {
        principal: text(&raw.principal, "principal", false)?,
        ..SchedulerConfig::default()
    };
    if !raw.concurrency.0.is_undefined() {
        match raw.concurrency.0.as_f64() {
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
    if let Some(lease) = integer(&raw.lease_ms, "leaseMs", 1_000, 3_600_000)? {
        config.lease_ms = lease;
    }
    let attempt_timeout_ms = integer(&raw.attempt_timeout_ms, "attemptTimeoutMs", 100, 600_000)?
        .map_or(DEFAULT_ATTEMPT_TIMEOUT_MS, |t| t as u32);
    if let Some(retry) = raw.retry {
        let base_ms = integer(&retry.base_ms, "baseMs", 1, 3_600_000)?.unwrap_or(500);
        let max_ms = integer(&retry.max_ms, "maxMs", 1, 86_400_000)?.unwrap_or(30_000.max(base_ms));
        let max_attempts =
            integer(&retry.max_attempts, "maxAttempts", 1, 10_000)?.unwrap_or(20) as u32;
        let dead_letter_after_ms = integer(
            &retry.dead_letter_after_ms,
            "deadLetterAfterMs",
            0,
            604_800_000,
        )?
        .unwrap_or(DEFAULT_DEAD_LETTER_AFTER_MS);
        config.retry = RetryPolicy {
            base_ms,
            max_ms,
            max_attempts,
            dead_letter_after_ms,
        };
    }
    if let Some(batch) = raw.batch {
        config.batch = BatchLimits {
            max_operations: integer(&batch.max_operations, "maxOperations", 1, 1_000)?
                .map_or(DEFAULT_BATCH_MAX_OPERATIONS, |n| n as usize),
            max_bytes: integer(&batch.max_bytes, "maxBytes", 1, 16 << 20)?
                .map_or(DEFAULT_BATCH_MAX_BYTES, |n| n as usize),
            kinds: kinds(&batch.kinds)?,
        };
    }
    if let Some(limit) = integer(&raw.max_payload_bytes, "maxPayloadBytes", 1, 16 << 20)? {
        config.max_payload_bytes = limit as usize;
    }
    let max_answer_bytes = integer(&raw.max_answer_bytes, "maxAnswerBytes", 1_024, 64 << 20)?
        .map_or(DEFAULT_MAX_ANSWER_BYTES, |limit| limit as usize);
    if let Some(limit) = integer(&raw.event_log_limit, "eventLogLimit", 1, 100_000)? {
        config.event_log_limit = limit as usize;
    }
    if let Some(ms) = integer(&raw.coalesce_ms, "coalesceMs", 0, MAX_COALESCE_MS)? {
        config.coalesce_ms = ms;
    }
    if let Some(retain) = raw.retain {
        // Each limit a non-negative integer; 0 keeps nothing whole (compacted as it settles)
        // or no tombstone (an id is forgotten once compacted). Times up to ten years.
        let defaults = RetentionPolicy::default();
        let years = 10 * 365 * 86_400_000;
        config.retain = RetentionPolicy {
            settled: integer(&retain.settled, "settled", 0, 1_000_000)?
                .map_or(defaults.settled, |n| n as usize),
            settled_ms: integer(&retain.settled_ms, "settledMs", 0, years)?
                .unwrap_or(defaults.settled_ms),
            tombstones: integer(&retain.tombstones, "tombstones", 0, 10_000_000)?
                .map_or(defaults.tombstones, |n| n as usize),
            tombstone_ms: integer(&retain.tombstone_ms, "tombstoneMs", 0, years)?
                .unwrap_or(defaults.tombstone_ms),
        };
    }
    config.owner = match text(&raw.owner, "owner", false)? {
        Some(owner) => owner,
        None => format!("tab-{}", crate::web::driver::WebHost::fresh_id()),
    };
    config.validate()?;
    let persist = boolean(&raw.persist, "persist")?.unwrap_or(true);
    let hooks = Hooks {
        headers: function(&raw.headers, "headers")?,
        compile: function(&raw.compile, "compile")?,
        participants: function(&raw.participants, "participants")?,
        coalesce: function(&raw.coalesce, "coalesce")?,
        authorize: function(&raw.authorize, "authorize")?,
        classify_error: function(&raw.classify_error, "classifyError")?,
        on_event: function(&raw.on_event, "onEvent")?,
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
