//! The host's pure hooks: participants, compile and request ids. They are functions of the
//! intent, called synchronously by the core; a hook's error blocks only that operation.
//! `participants` and `compile` are handed the scheduler as it stands (read-only): the host's
//! synchronous reads made while a hook runs answer from it.

use super::model::{ExpectedVersions, Intent, PROTOCOL_VERSION};
use super::payload::Payload;
use super::safe_error::SafeError;
use super::scheduler::Scheduler;

/// What `compile` turns an intent into (the body of the request, before freezing).
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledRequest {
    /// Request kind; defaults to the operation type.
    pub kind: Option<String>,
    /// Owner canvas.
    pub owner_canvas_id: Option<String>,
    /// Run id.
    pub run_id: Option<String>,
    /// Protocol version; defaults to 1.
    pub protocol_version: Option<u32>,
    /// Body payload.
    pub payload: Payload,
    /// Canvases the body touches; must equal the participants.
    pub canvas_ids: Vec<String>,
    /// Version guards.
    pub expected_versions: ExpectedVersions,
}

/// The hooks the core calls while pumping.
///
/// `reads` is the scheduler in the middle of its step, between two operations: everything
/// before this one is frozen (or waits), this one is not yet. Its read methods (`stats`,
/// `explain`, `claims`, `pending`, `known`) answer from it; `stats().idleReason` is none (the
/// scheduler is busy freezing), and this operation is explained as `ready`.
pub trait Host: Sized {
    /// The canvases an intent touches. Default: its `canvasIds`.
    fn participants(
        &self,
        intent: &Intent,
        _reads: &Scheduler<Self>,
    ) -> Result<Vec<String>, SafeError> {
        Ok(intent.canvas_ids.clone())
    }

    /// Whether [`participants`](Host::participants) is, for every intent, its `canvasIds`
    /// (no hook of the host's own). The core then reads the intent instead of asking, where it
    /// only looks past operations (gathering a batch). `false` unless a host says so.
    fn participants_are_declared(&self) -> bool {
        false
    }

    /// Turns an intent into a request body. Default: [`default_compile`].
    fn compile(
        &self,
        intent: &Intent,
        _request_id: &str,
        _reads: &Scheduler<Self>,
    ) -> Result<CompiledRequest, SafeError> {
        Ok(default_compile(intent))
    }

    /// Merges a pending, unfrozen intent and the newer one with its `coalesceKey`
    /// that replaces it: the payload the replacement carries (diffs merged). `Ok(None)`, the
    /// default: the newer payload as it is (absolute updates). An error replaces nothing.
    fn coalesce(
        &self,
        _older: &Intent,
        _newer: &Intent,
        _reads: &Scheduler<Self>,
    ) -> Result<Option<Payload>, SafeError> {
        Ok(None)
    }

    /// A fresh, never reused request id (the idempotency key).
    fn create_request_id(&mut self) -> String;
}

/// The verdict of the authorization step, the answer to an
/// [`Effect::Authorize`](super::io::Effect::Authorize) (`Scheduler::on_authorized`). The
/// driver reads the host's answer strictly: only `{allowed: true}` is [`Allowed`], only
/// `{allowed: false}` is [`Denied`]; anything else (a throw, `undefined`, a string,
/// `{allowed: "yes"}`, a throwing getter) is [`Unavailable`].
///
/// [`Allowed`]: Authorization::Allowed
/// [`Denied`]: Authorization::Denied
/// [`Unavailable`]: Authorization::Unavailable
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Authorization {
    /// Send it.
    Allowed,
    /// Never send it: the request fails for good with this reason (at most 256 chars kept),
    /// once the server, if it may have the request, says it never received it.
    Denied(String),
    /// The check itself failed: nothing is sent and the attempt is retried.
    Unavailable(String),
    /// The check did not answer within this many milliseconds (`attemptTimeoutMs`): as
    /// `Unavailable`, with the error `hook_timeout`.
    TimedOut(u32),
}

/// The body an intent compiles to when the host supplies no `compile`.
pub fn default_compile(intent: &Intent) -> CompiledRequest {
    CompiledRequest {
        kind: Some(intent.operation_type.clone()),
        owner_canvas_id: intent.canvas_ids.first().cloned(),
        run_id: intent.run_id.clone(),
        protocol_version: Some(PROTOCOL_VERSION),
        payload: intent.payload.clone(),
        canvas_ids: intent.canvas_ids.clone(),
        expected_versions: intent.expected_versions.clone(),
    }
}

/// The wire body of a frozen request (docs/protocol.md): serialized once at freeze, sent byte for
/// byte, written by serde_json in field order (`tests/behaviour/golden_codec.rs` holds the bytes).
#[derive(serde::Serialize)]
pub struct WireBody<'a> {
    /// Request id = idempotency key.
    #[serde(rename = "id")]
    pub id: &'a str,
    /// Carried operations.
    #[serde(rename = "operationIds")]
    pub operation_ids: &'a [String],
    /// Kind.
    #[serde(rename = "kind")]
    pub kind: &'a str,
    /// Owner canvas.
    #[serde(rename = "ownerCanvasId", skip_serializing_if = "Option::is_none")]
    pub owner_canvas_id: Option<&'a str>,
    /// Run id.
    #[serde(rename = "runId", skip_serializing_if = "Option::is_none")]
    pub run_id: Option<&'a str>,
    /// Protocol version.
    #[serde(rename = "protocolVersion")]
    pub protocol_version: u32,
    /// Payload (one per operation when batched: an array of the operations' payloads).
    #[serde(rename = "payload")]
    pub payload: &'a Payload,
    /// Sorted, unique canvases.
    #[serde(rename = "canvasIds")]
    pub canvas_ids: &'a [String],
    /// Version guards.
    #[serde(rename = "expectedVersions")]
    pub expected_versions: &'a ExpectedVersions,
}

/// A host for tests and for editors that need no custom hooks: request ids from a prefix and
/// a counter (the browser host uses `crypto.randomUUID`).
#[derive(Debug, Clone)]
pub struct CountingHost {
    prefix: String,
    next: u64,
}

impl CountingHost {
    /// Ids look like `{prefix}-{n}`; give each scheduler incarnation its own prefix.
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
            next: 0,
        }
    }
}

impl Host for CountingHost {
    fn participants_are_declared(&self) -> bool {
        true
    }

    fn create_request_id(&mut self) -> String {
        self.next += 1;
        format!("{}-{}", self.prefix, self.next)
    }
}
