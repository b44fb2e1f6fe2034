//! The ledger model: operations, frozen requests, the lease, the event log.
//! These are exactly the records the ledger store persists, each with its JSON form
//! (serde derives: field order, names and defaults as stored since the first schema).

use super::json_text::JsonText;
use std::collections::BTreeMap;

use super::payload::Payload;

use super::safe_error::SafeError;

/// The versions an intent expects of its canvases (`expectedVersions`): canvas id →
/// version, sorted by canvas id (the order the wire body writes them in).
pub type ExpectedVersions = BTreeMap<String, u64>;

/// Milliseconds since the Unix epoch. Due times are absolute so throttled timers lose nothing.
pub type Millis = u64;

/// The only wire protocol this build interprets (docs/protocol.md).
pub(crate) const PROTOCOL_VERSION: u32 = 1;

/// The operation type that travels in the exclusive upload lane.
pub const UPLOAD_KIND: &str = "asset.upload";

/// The operation type that may have no participants besides uploads.
pub(crate) const RUN_CANCEL_KIND: &str = "run.cancel";

/// A reference to a blob stored beside the ledger, sent as the `blob` part of an upload.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BlobRef {
    /// Key of the blob record in the ledger's blob store.
    #[serde(rename = "id")]
    pub id: String,
    /// Size in bytes.
    #[serde(rename = "size")]
    pub size: u64,
    /// MIME type, e.g. `image/png`.
    #[serde(rename = "mediaType", default)]
    pub media_type: String,
    /// Original file name, if any.
    #[serde(rename = "name", default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// An operation intent as stored: what the editor asked for, validated, with its sequence.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Intent {
    /// Operation id, unique in the ledger.
    #[serde(rename = "id")]
    pub id: String,
    /// Strictly increasing per ledger; ready operations are taken in this order.
    #[serde(rename = "sequence")]
    pub sequence: u64,
    /// Kind of operation, e.g. `shape.upsert`, `asset.upload`, `run.start`.
    #[serde(rename = "operationType")]
    pub operation_type: String,
    /// Canvases this operation touches.
    #[serde(rename = "canvasIds", default)]
    pub canvas_ids: Vec<String>,
    /// Operations that must resolve before this one is sent.
    #[serde(rename = "dependencies", default)]
    pub dependencies: Vec<String>,
    /// Opaque JSON body for the server, as checked at enqueue.
    #[serde(rename = "payload", default)]
    pub payload: Payload,
    /// Optimistic-concurrency guard per canvas.
    #[serde(
        rename = "expectedVersions",
        default,
        skip_serializing_if = "std::collections::BTreeMap::is_empty"
    )]
    pub expected_versions: ExpectedVersions,
    /// The run this operation belongs to (`run.start`, `run.cancel`).
    #[serde(rename = "runId", default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// A later pending intent with the same key supersedes this one until it is frozen.
    #[serde(
        rename = "coalesceKey",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub coalesce_key: Option<String>,
    /// The blob an upload carries (boxed: most operations have none, and a load moves
    /// 100 000 intents several times).
    #[serde(rename = "blob", default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<Box<BlobRef>>,
    /// Bumped when the host revises the intent.
    #[serde(rename = "revision", default)]
    pub revision: u32,
    /// The principal the intent was created under.
    #[serde(rename = "principal", default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

impl Intent {
    /// An intent with only what every intent has; every other field at its default.
    pub fn new(id: String, sequence: u64, operation_type: String) -> Self {
        Self {
            id,
            sequence,
            operation_type,
            canvas_ids: Vec::new(),
            dependencies: Vec::new(),
            payload: Payload::default(),
            expected_versions: ExpectedVersions::new(),
            run_id: None,
            coalesce_key: None,
            blob: None,
            revision: 0,
            principal: None,
        }
    }
}

/// Whether an operation still has work to do.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OperationPhase {
    /// Not yet settled.
    #[default]
    #[serde(rename = "pending")]
    Pending,
    /// Settled for good.
    #[serde(rename = "resolved")]
    Resolved,
}

/// How an operation or request ended.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Settlement {
    /// The server applied it.
    #[default]
    #[serde(rename = "applied")]
    Applied,
    /// The server refused it for good (conflict, validation, authorization denied).
    #[serde(rename = "rejected")]
    Rejected,
    /// The host discarded it; it was never applied by us.
    #[serde(rename = "discarded")]
    Discarded,
}

impl Settlement {
    /// The wire/JS spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Settlement::Applied => "applied",
            Settlement::Rejected => "rejected",
            Settlement::Discarded => "discarded",
        }
    }
}

/// The final result recorded on an operation.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct OperationOutcome {
    /// How it ended.
    #[serde(rename = "settlement")]
    pub settlement: Settlement,
    /// The request that carried it, if any.
    #[serde(rename = "requestId", default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Why it was rejected or discarded.
    #[serde(rename = "error", default, skip_serializing_if = "Option::is_none")]
    pub error: Option<SafeError>,
    /// The server's canonical state after the request, for rollback or confirmation.
    #[serde(rename = "canonical", default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<JsonText>,
    /// When it settled.
    #[serde(rename = "at")]
    pub at: Millis,
}

/// One operation in the ledger.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Operation {
    /// What the editor asked for.
    #[serde(rename = "intent")]
    pub intent: Intent,
    /// Pending or resolved.
    #[serde(rename = "phase")]
    pub phase: OperationPhase,
    /// Reasons it may not be sent; non-empty means blocked.
    #[serde(rename = "blockers", default)]
    pub blockers: Vec<String>,
    /// The frozen request currently carrying it, once frozen.
    #[serde(rename = "requestId", default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// How it ended, once resolved (boxed: a pending operation, the many a load moves
    /// around, has none).
    #[serde(rename = "outcome", default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Box<OperationOutcome>>,
    /// [`intent_digest`](crate::retention::intent_digest) of the intent as the host
    /// gave it, once the stored one differs: a `coalesce` hook merged an older payload into
    /// it, or a newer intent superseded it and its payload was dropped. The same intent
    /// enqueued again is recognised by it.
    #[serde(
        rename = "givenDigest",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub given_digest: Option<String>,
}

impl Operation {
    /// A freshly enqueued operation.
    pub fn new(intent: Intent) -> Self {
        Self {
            intent,
            phase: OperationPhase::Pending,
            blockers: Vec::new(),
            request_id: None,
            outcome: None,
            given_digest: None,
        }
    }

    /// Pending and unblocked (dependencies are checked by the scheduler).
    pub fn is_open(&self) -> bool {
        self.phase == OperationPhase::Pending && self.blockers.is_empty()
    }
}

/// Where a frozen request is in its life.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RequestPhase {
    /// Durable, never sent.
    #[default]
    #[serde(rename = "frozen")]
    Frozen,
    /// Sent at least once; the server may or may not have it.
    #[serde(rename = "dispatched")]
    Dispatched,
    /// The server has it and is still processing.
    #[serde(rename = "accepted")]
    Accepted,
    /// Applied or rejected for good.
    #[serde(rename = "resolved")]
    Resolved,
}

/// What the next attempt of a request does.
#[derive(
    serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord,
)]
pub enum RetryAction {
    /// Send the frozen body again (same key, same bytes).
    #[serde(rename = "submit")]
    Submit,
    /// Ask the server what became of it.
    #[serde(rename = "query")]
    Query,
}

impl RetryAction {
    /// The JS spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RetryAction::Submit => "submit",
            RetryAction::Query => "query",
        }
    }
}

/// A frozen request: its id is the idempotency key; `body` never changes once frozen.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct FrozenRequest {
    /// Request id = idempotency key.
    #[serde(rename = "id")]
    pub id: String,
    /// The operations this request carries, in sequence order.
    #[serde(rename = "operationIds")]
    pub operation_ids: Vec<String>,
    /// Request kind (the operation type).
    #[serde(rename = "kind")]
    pub kind: String,
    /// The canvas that owns the request, if any.
    #[serde(
        rename = "ownerCanvasId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub owner_canvas_id: Option<String>,
    /// Run id for run operations.
    #[serde(rename = "runId", default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Wire protocol version the body speaks.
    #[serde(rename = "protocolVersion")]
    pub protocol_version: u32,
    /// Sorted, unique canvases the request claims.
    #[serde(rename = "canvasIds")]
    pub canvas_ids: Vec<String>,
    /// Version guards sent with the body.
    #[serde(rename = "expectedVersions", default)]
    pub expected_versions: ExpectedVersions,
    /// The exact bytes sent on every submit.
    #[serde(rename = "body")]
    pub body: String,
    /// Digest of `body`, checked before every resend.
    #[serde(rename = "digest")]
    pub digest: String,
    /// Principal the request was created under.
    #[serde(rename = "principal", default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Intent revisions frozen into the body, one per operation.
    #[serde(rename = "revisions", default)]
    pub revisions: Vec<u32>,
    /// Where it is in its life.
    #[serde(rename = "phase")]
    pub phase: RequestPhase,
    /// Number of sends (submits and queries) so far.
    #[serde(rename = "attempt")]
    pub attempt: u32,
    /// Consecutive attempts with an unknown or failed outcome, bounded by `maxAttempts`.
    #[serde(rename = "failures", default)]
    pub failures: u32,
    /// Absolute due time of the next attempt.
    #[serde(rename = "retryAt", default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<Millis>,
    /// What the next attempt does.
    #[serde(
        rename = "retryAction",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub retry_action: Option<RetryAction>,
    /// How it ended.
    #[serde(rename = "outcome", default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Settlement>,
    /// Last error (bounded, no credentials).
    #[serde(rename = "error", default, skip_serializing_if = "Option::is_none")]
    pub error: Option<SafeError>,
    /// Canonical state from the server.
    #[serde(rename = "canonical", default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<JsonText>,
    /// Why it waits for the host (`unauthorized`, `dead_letter`, ...).
    #[serde(rename = "blocked", default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// When it was frozen.
    #[serde(rename = "frozenAt")]
    pub frozen_at: Millis,
}

impl FrozenRequest {
    /// Not yet applied or rejected.
    pub fn is_unresolved(&self) -> bool {
        self.phase != RequestPhase::Resolved
    }

    /// The safe next action when nothing more is known: a request that was never sent is
    /// submitted; one that may have reached the server is asked about first.
    pub fn safe_action(&self) -> RetryAction {
        if self.phase == RequestPhase::Frozen {
            RetryAction::Submit
        } else {
            RetryAction::Query
        }
    }

    /// The stored next action, or the safe one.
    pub fn next_action(&self) -> RetryAction {
        self.retry_action.unwrap_or_else(|| self.safe_action())
    }
}

/// The dispatcher lease with its fence token.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Lease {
    /// Who dispatches.
    #[serde(rename = "owner")]
    pub owner: String,
    /// Incremented by every take-over; writes carrying an older fence are refused.
    #[serde(rename = "fence")]
    pub fence: u64,
    /// When the lease lapses unless renewed.
    #[serde(rename = "expiresAt")]
    pub expires_at: Millis,
}

/// The largest fence a lease record holds: JS stores it as a number, exact up to 2^53 − 1.
pub const MAX_FENCE: u64 = (1 << 53) - 1;

impl Lease {
    /// Whether a stored fence is one a take-over can raise. One that is not (2^53 − 1
    /// take-overs do not happen: the record was written by something else) is set aside.
    pub fn fence_can_rise(fence: u64) -> bool {
        fence < MAX_FENCE
    }

    /// The fence a take-over stores after `previous` (the stored fence, or 0 for none or
    /// one that could not be read). Writes are checked for *equality* with the stored fence
    /// (`apply`, `renew`), so what shuts the old holder out is only that the new fence differs
    /// from its own: one that cannot rise starts again from 1.
    pub fn next_fence(previous: u64) -> u64 {
        if Self::fence_can_rise(previous) {
            previous + 1
        } else {
            1
        }
    }
}

/// Kinds of entries in the event log.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EventKind {
    /// An operation was frozen into a request and its canvases claimed.
    #[default]
    #[serde(rename = "claimed")]
    Claimed,
    /// An interrupted request was re-offered at recovery.
    #[serde(rename = "reclaimed")]
    Reclaimed,
    /// A request was sent (submit or query).
    #[serde(rename = "dispatched")]
    Dispatched,
    /// An operation settled (applied, rejected, discarded).
    #[serde(rename = "settled")]
    Settled,
    /// A retry was scheduled.
    #[serde(rename = "retry_scheduled")]
    RetryScheduled,
    /// An operation or request was blocked.
    #[serde(rename = "blocked")]
    Blocked,
    /// A request ran out of attempts.
    #[serde(rename = "dead_lettered")]
    DeadLettered,
    /// This dispatcher took the lease.
    #[serde(rename = "lease_acquired")]
    LeaseAcquired,
    /// This dispatcher lost the lease.
    #[serde(rename = "lease_lost")]
    LeaseLost,
}

/// One entry of the bounded, persisted event log.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct EventRecord {
    /// Position in the log, strictly increasing.
    #[serde(rename = "seq")]
    pub seq: u64,
    /// When it happened.
    #[serde(rename = "at")]
    pub at: Millis,
    /// What happened.
    #[serde(rename = "kind")]
    pub kind: EventKind,
    /// The request concerned.
    #[serde(rename = "requestId", default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The operation concerned.
    #[serde(
        rename = "operationId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub operation_id: Option<String>,
    /// The request's attempt number at the time.
    #[serde(rename = "attempt", default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The writer's fence at the time.
    #[serde(rename = "fence", default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<u64>,
    /// A short, safe detail (a reason or outcome).
    #[serde(rename = "detail", default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Small ledger-wide facts.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct LedgerMeta {
    /// The highest sequence ever assigned.
    #[serde(rename = "lastSequence")]
    pub last_sequence: u64,
    /// The highest event seq ever written.
    #[serde(rename = "lastEventSeq")]
    pub last_event_seq: u64,
}

#[cfg(test)]
mod tests {
    use super::{Lease, MAX_FENCE};

    #[test]
    fn k2_a_fence_rises_by_one_and_one_that_cannot_starts_again_from_1() {
        assert_eq!(Lease::next_fence(0), 1);
        assert_eq!(Lease::next_fence(41), 42);
        assert_eq!(Lease::next_fence(MAX_FENCE - 1), MAX_FENCE);
        // Saturated (or beyond): differs from the stored fence, and stays storable.
        assert_eq!(Lease::next_fence(MAX_FENCE), 1);
        assert_eq!(Lease::next_fence(u64::MAX), 1);
        assert!(!Lease::fence_can_rise(MAX_FENCE));
    }
}
