//! What crosses the sans-IO boundary: effects the core asks for, and the answers the driver
//! brings back (persist results, attempt statuses).

use super::json_text::JsonText;

use super::error::SchedulerError;
use super::model::{EventRecord, FrozenRequest, Lease, Millis, Operation, RetryAction, Settlement};
use super::operation_pages::OperationPage;
use super::retention::{Tombstone, TombstoneTrim};
use super::safe_error::SafeError;

/// Identifies one attempt (one send) so that a late answer to an older attempt is ignored.
pub type AttemptId = u64;

/// Number of a persist batch; batches are written in order, one at a time.
pub type BatchNo = u64;

/// How the store must treat the lease in this batch's transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseWrite {
    /// Extend our lease; refused unless the stored fence is still ours.
    Renew {
        /// New expiry.
        expires_at: Millis,
    },
}

/// A delta to write in one readwrite transaction (group commit).
#[derive(Clone, Debug, PartialEq)]
pub struct PersistBatch {
    /// Batch number; `Persisted(no)` makes everything up to it durable.
    pub no: BatchNo,
    /// The fence every write is checked against; `None` before any lease is held.
    pub fence: Option<u64>,
    /// The lease change, if any, evaluated first in the same transaction.
    pub lease: Option<LeaseWrite>,
    /// Operations written for the first time, as new pages (see `operation_pages`).
    pub operation_pages: Vec<OperationPage>,
    /// Operations written again, each as its own record, whole (superseding a page copy).
    pub operations: Vec<Operation>,
    /// Operation records to delete: their operations are folded into this batch's pages.
    pub drop_operations: Vec<String>,
    /// Pages to delete: every operation in them has a newer copy.
    pub drop_operation_pages: Vec<u64>,
    /// Request records to put, whole.
    pub requests: Vec<FrozenRequest>,
    /// Event records to append.
    pub events: Vec<EventRecord>,
    /// Event records with `seq` below this are deleted (the log is bounded).
    pub trim_events_below: Option<u64>,
    /// Tombstones of the operations this batch compacts (retention).
    pub tombstones: Vec<Tombstone>,
    /// Request records to delete: every operation they carried is compacted.
    pub drop_requests: Vec<String>,
    /// Upload blobs to delete: their operations are compacted.
    pub drop_blobs: Vec<String>,
    /// Tombstones past the policy to delete.
    pub trim_tombstones: Option<TombstoneTrim>,
    /// Archived operations (`settled` store, keyed as their tombstones) past the policy to
    /// delete: keyed below `below`, then all but the newest `keep`.
    pub trim_archive: Option<TombstoneTrim>,
    /// The batch may commit with relaxed durability: it holds only what a query
    /// recovers if a power loss drops it (answers, retry schedules, events, compaction,
    /// folding, lease renewals). A batch with an enqueue, a freeze, a first dispatch marker
    /// or a host call's change is strict, and flushes every relaxed one before it.
    pub relaxed: bool,
}

impl PersistBatch {
    /// Whether the batch writes nothing (it is still a barrier).
    pub fn is_empty(&self) -> bool {
        self.lease.is_none()
            && self.operation_pages.is_empty()
            && self.operations.is_empty()
            && self.drop_operations.is_empty()
            && self.drop_operation_pages.is_empty()
            && self.requests.is_empty()
            && self.events.is_empty()
            && self.trim_events_below.is_none()
            && self.tombstones.is_empty()
            && self.drop_requests.is_empty()
            && self.drop_blobs.is_empty()
            && self.trim_tombstones.is_none()
            && self.trim_archive.is_none()
    }
}

/// Why a persist failed.
#[derive(Clone, Debug, PartialEq)]
pub enum PersistFailure {
    /// Storage error: quota, aborted transaction, closed database.
    Storage(SafeError),
    /// The stored fence is newer than ours, or the lease is held by someone else.
    Fenced {
        /// The lease as found in storage.
        current: Option<Lease>,
    },
}

/// What the driver reports after writing a batch.
#[derive(Clone, Debug, PartialEq)]
pub enum PersistResult {
    /// Durable. If the batch took or renewed the lease, the lease as stored now.
    Done {
        /// The lease after the transaction.
        lease: Option<Lease>,
    },
    /// Not written.
    Failed(PersistFailure),
}

/// An order to send one attempt of a frozen request.
#[derive(Clone, Debug, PartialEq)]
pub struct SendOrder {
    /// The attempt this answer must name.
    pub attempt: AttemptId,
    /// Submit the body, or query by id.
    pub action: RetryAction,
    /// The frozen request (its `body` is sent byte for byte).
    pub request: FrozenRequest,
}

/// The server's (or the transport's) verdict on one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
pub enum AttemptOutcome {
    /// Applied; may carry canonical state.
    #[serde(rename = "applied")]
    Applied,
    /// Refused for good.
    #[serde(rename = "rejected")]
    Rejected,
    /// Received, still processing: query later.
    #[serde(rename = "accepted")]
    Accepted,
    /// Unknown or transient: retry (never a server's word).
    #[serde(skip)]
    Unresolved,
}

/// One operation's own verdict inside a batched answer.
#[derive(Clone, Debug, PartialEq)]
pub struct OperationVerdict {
    /// Which operation.
    pub operation_id: String,
    /// Applied or rejected.
    pub settlement: Settlement,
    /// Why, when rejected.
    pub error: Option<SafeError>,
    /// Canonical state for this operation.
    pub canonical: Option<JsonText>,
}

/// Everything the driver learned from one attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptStatus {
    /// The verdict.
    pub outcome: AttemptOutcome,
    /// Error detail (transport_unknown, http status, server error).
    pub error: Option<SafeError>,
    /// Retry-After, in ms from now (wins over backoff).
    pub retry_after_ms: Option<Millis>,
    /// Canonical state for the whole request.
    pub canonical: Option<JsonText>,
    /// The request must wait for the host (e.g. `unauthorized` on 401/403).
    pub blocked: Option<String>,
    /// `Some(false)` means the error will not go away by retrying.
    pub retryable: Option<bool>,
    /// An absolute time before which not to retry.
    pub retry_at: Option<Millis>,
    /// Per-operation verdicts of a batched request.
    pub operations: Vec<OperationVerdict>,
}

/// The error code of an answer longer than `maxAnswerBytes` ([`AttemptStatus::answer_too_large`]).
pub(crate) const ANSWER_TOO_LARGE: &str = "answer_too_large";

impl AttemptStatus {
    /// A bare status with only an outcome.
    pub fn outcome(outcome: AttemptOutcome) -> Self {
        Self {
            outcome,
            error: None,
            retry_after_ms: None,
            canonical: None,
            blocked: None,
            retryable: None,
            retry_at: None,
            operations: Vec::new(),
        }
    }

    /// The authorization step denied the send: failed for good, reason bounded to 256 chars.
    pub fn denied(reason: &str) -> Self {
        let reason: String = reason.chars().take(256).collect();
        Self {
            error: Some(SafeError::with_fallback(
                "authorization_denied",
                &reason,
                "authorization_denied",
            )),
            ..Self::outcome(AttemptOutcome::Rejected)
        }
    }

    /// The authorization check itself failed: retryable, nothing was sent.
    pub fn authorization_unavailable(message: &str) -> Self {
        Self {
            error: Some(SafeError::new("authorization_unavailable", message)),
            retryable: Some(true),
            ..Self::outcome(AttemptOutcome::Unresolved)
        }
    }

    /// A host hook (`hook`) did not settle within `timeout_ms` (`attemptTimeoutMs`):
    /// unresolved (the attempt is retried like any other), the hook named in the details.
    pub fn hook_timeout(hook: &str, timeout_ms: u32) -> Self {
        let error = SafeError::new(
            "hook_timeout",
            &format!("{hook}() did not settle within {timeout_ms} ms"),
        )
        .with_details(JsonText::member("hook", hook));
        Self {
            error: Some(error),
            ..Self::outcome(AttemptOutcome::Unresolved)
        }
    }

    /// An answer longer than the transport's byte limit (`maxAnswerBytes`): not read, and
    /// unknown like a lost one (the server may have applied the request), so it is retried;
    /// each counts toward the dead letter (the endpoint answered, the answer is the fault).
    pub fn answer_too_large(limit: usize) -> Self {
        Self {
            error: Some(SafeError::new(
                ANSWER_TOO_LARGE,
                &format!("the answer is longer than {limit} bytes: not read"),
            )),
            ..Self::outcome(AttemptOutcome::Unresolved)
        }
    }

    /// The transport threw, the network failed or the attempt was aborted.
    pub fn transport_unknown(message: &str) -> Self {
        Self {
            error: Some(SafeError::new("transport_unknown", message)),
            ..Self::outcome(AttemptOutcome::Unresolved)
        }
    }
}

/// Things the host hears about (`onEvent`); reporting can never fail the scheduler.
#[derive(Clone, Debug, PartialEq)]
pub enum Report {
    /// An operation settled.
    Settled {
        /// Which operation.
        operation_id: String,
        /// The request that carried it, if any.
        request_id: Option<String>,
        /// Applied, rejected or discarded.
        settlement: Settlement,
        /// Why, when not applied.
        error: Option<SafeError>,
        /// The server's canonical state.
        canonical: Option<JsonText>,
    },
    /// An operation now waits for the host.
    Blocked {
        /// Which operation.
        operation_id: String,
        /// Its request, if frozen.
        request_id: Option<String>,
        /// Why.
        reason: String,
    },
    /// A request ran out of attempts.
    DeadLettered {
        /// Which operation(s).
        operation_ids: Vec<String>,
        /// Which request.
        request_id: String,
        /// The last error.
        error: Option<SafeError>,
        /// The canvases it holds until the host calls `retry` or `discard`.
        held_canvas_ids: Vec<String>,
    },
    /// A failure the host should know about.
    Error(SchedulerError),
    /// A write failed (quota, aborted transaction, closed database): reported once as storage
    /// starts failing. The scheduler retries on its own; enqueues whose write fails are
    /// refused and leave nothing behind.
    StorageFailed {
        /// The storage error; its `code` is the error's name (e.g. `QuotaExceededError`).
        error: SafeError,
    },
    /// A write succeeded after [`Report::StorageFailed`]: everything waiting was written.
    StorageRecovered,
    /// This dispatcher gained or lost the lease.
    LeaderChanged {
        /// Whether we now lead.
        leader: bool,
        /// Our fence, when leading.
        fence: Option<u64>,
    },
}

/// An effect the driver must carry out, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Write this delta in one transaction, then call `on_persisted`.
    Persist(PersistBatch),
    /// Send this attempt, then call `on_answer`.
    Send(Box<SendOrder>),
    /// Ask the host's authorization step whether this attempt may be sent (under the
    /// session's principal), then call `on_authorized` with its verdict. Nothing is sent
    /// until then; only with [`SchedulerConfig::authorize`](super::config::SchedulerConfig).
    Authorize(Box<SendOrder>),
    /// Abort this in-flight attempt (its answer will be ignored).
    Abort(AttemptId),
    /// Wake the core at this absolute time (`None`: no wake-up wanted).
    SetTimer(Option<Millis>),
    /// Tell the host.
    Report(Report),
    /// Group commit: call `commit()` once the current turn of the event loop ends.
    CommitSoon,
}
