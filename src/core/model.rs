//! The ledger model of SPEC §1 as serde types: operations, frozen requests, the lease,
//! the event log. These are exactly the records the ledger store persists.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::payload::Payload;

use super::safe_error::SafeError;

/// Milliseconds since the Unix epoch. Due times are absolute so throttled timers lose nothing.
pub type Millis = u64;

/// The only wire protocol this build interprets (SPEC §7).
pub const PROTOCOL_VERSION: u32 = 1;

/// The operation type that travels in the exclusive upload lane (S3).
pub const UPLOAD_KIND: &str = "asset.upload";

/// The operation type that may have no participants besides uploads (S5).
pub const RUN_CANCEL_KIND: &str = "run.cancel";

/// A reference to a blob stored beside the ledger (W1), sent as the `blob` part of an upload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BlobRef {
    /// Key of the blob record in the ledger's blob store.
    pub id: String,
    /// Size in bytes.
    pub size: u64,
    /// MIME type, e.g. `image/png`.
    #[serde(default)]
    pub media_type: String,
    /// Original file name, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// An operation intent as stored: what the editor asked for, validated, with its sequence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Intent {
    /// Operation id, unique in the ledger.
    pub id: String,
    /// Strictly increasing per ledger; ready operations are taken in this order (S1).
    pub sequence: u64,
    /// Kind of operation, e.g. `shape.upsert`, `asset.upload`, `run.start`.
    pub operation_type: String,
    /// Canvases this operation touches.
    #[serde(default)]
    pub canvas_ids: Vec<String>,
    /// Operations that must resolve before this one is sent.
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// Opaque JSON body for the server, as checked at enqueue.
    #[serde(default)]
    pub payload: Payload,
    /// Optimistic-concurrency guard per canvas.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub expected_versions: BTreeMap<String, u64>,
    /// The run this operation belongs to (`run.start`, `run.cancel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// A later pending intent with the same key supersedes this one until it is frozen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesce_key: Option<String>,
    /// The blob an upload carries (boxed: most operations have none, and a load moves
    /// 100 000 intents several times).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<Box<BlobRef>>,
    /// Bumped when the host revises the intent (K8).
    #[serde(default)]
    pub revision: u32,
    /// The principal the intent was created under (K3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

/// Whether an operation still has work to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationPhase {
    /// Not yet settled.
    Pending,
    /// Settled for good.
    Resolved,
}

/// How an operation or request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Settlement {
    /// The server applied it.
    Applied,
    /// The server refused it for good (conflict, validation, authorization denied).
    Rejected,
    /// The host discarded it; it was never applied by us.
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationOutcome {
    /// How it ended.
    pub settlement: Settlement,
    /// The request that carried it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Why it was rejected or discarded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<SafeError>,
    /// The server's canonical state after the request, for rollback or confirmation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<Value>,
    /// When it settled.
    pub at: Millis,
}

/// One operation in the ledger (SPEC §1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// What the editor asked for.
    pub intent: Intent,
    /// Pending or resolved.
    pub phase: OperationPhase,
    /// Reasons it may not be sent; non-empty means blocked.
    #[serde(default)]
    pub blockers: Vec<String>,
    /// The frozen request currently carrying it, once frozen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// How it ended, once resolved (boxed: a pending operation, the many a load moves
    /// around, has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Box<OperationOutcome>>,
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
        }
    }

    /// Pending and unblocked (dependencies are checked by the scheduler).
    pub fn is_open(&self) -> bool {
        self.phase == OperationPhase::Pending && self.blockers.is_empty()
    }
}

/// Where a frozen request is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestPhase {
    /// Durable, never sent.
    Frozen,
    /// Sent at least once; the server may or may not have it.
    Dispatched,
    /// The server has it and is still processing.
    Accepted,
    /// Applied or rejected for good.
    Resolved,
}

/// What the next attempt of a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryAction {
    /// Send the frozen body again (same key, same bytes).
    Submit,
    /// Ask the server what became of it.
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

/// A frozen request: its id is the idempotency key; `body` never changes once frozen (S7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrozenRequest {
    /// Request id = idempotency key.
    pub id: String,
    /// The operations this request carries, in sequence order.
    pub operation_ids: Vec<String>,
    /// Request kind (the operation type).
    pub kind: String,
    /// The canvas that owns the request, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_canvas_id: Option<String>,
    /// Run id for run operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Wire protocol version the body speaks.
    pub protocol_version: u32,
    /// Sorted, unique canvases the request claims (S4).
    pub canvas_ids: Vec<String>,
    /// Version guards sent with the body.
    #[serde(default)]
    pub expected_versions: BTreeMap<String, u64>,
    /// The exact bytes sent on every submit.
    pub body: String,
    /// Digest of `body`, checked before every resend (D5).
    pub digest: String,
    /// Principal the request was created under (K3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Intent revisions frozen into the body, one per operation (K8).
    #[serde(default)]
    pub revisions: Vec<u32>,
    /// Where it is in its life.
    pub phase: RequestPhase,
    /// Number of sends (submits and queries) so far.
    pub attempt: u32,
    /// Consecutive attempts with an unknown or failed outcome, bounded by `maxAttempts` (K1).
    #[serde(default)]
    pub failures: u32,
    /// Absolute due time of the next attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<Millis>,
    /// What the next attempt does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_action: Option<RetryAction>,
    /// How it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Settlement>,
    /// Last error (bounded, no credentials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<SafeError>,
    /// Canonical state from the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<Value>,
    /// Why it waits for the host (`unauthorized`, `dead_letter`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// When it was frozen.
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

/// The dispatcher lease with its fence token (K2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// Who dispatches.
    pub owner: String,
    /// Incremented by every take-over; writes carrying an older fence are refused.
    pub fence: u64,
    /// When the lease lapses unless renewed.
    pub expires_at: Millis,
}

/// Kinds of entries in the event log (K6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// An operation was frozen into a request and its canvases claimed.
    Claimed,
    /// An interrupted request was re-offered at recovery.
    Reclaimed,
    /// A request was sent (submit or query).
    Dispatched,
    /// An operation settled (applied, rejected, discarded).
    Settled,
    /// A retry was scheduled.
    RetryScheduled,
    /// An operation or request was blocked.
    Blocked,
    /// A request ran out of attempts.
    DeadLettered,
    /// This dispatcher took the lease.
    LeaseAcquired,
    /// This dispatcher lost the lease.
    LeaseLost,
}

/// One entry of the bounded, persisted event log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRecord {
    /// Position in the log, strictly increasing.
    pub seq: u64,
    /// When it happened.
    pub at: Millis,
    /// What happened.
    pub kind: EventKind,
    /// The request concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The operation concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// The request's attempt number at the time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The writer's fence at the time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<u64>,
    /// A short, safe detail (a reason or outcome).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Small ledger-wide facts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerMeta {
    /// The highest sequence ever assigned.
    pub last_sequence: u64,
    /// The highest event seq ever written.
    pub last_event_seq: u64,
}
