//! Why things are where they are: statistics with an idle reason, and `explain(id)`
//! for every state an operation can be in.

use std::collections::BTreeMap;

use super::{Lifecycle, Scheduler, Stage};
use crate::error::{ErrorCode, SchedulerError};
use crate::host::Host;
use crate::model::{Millis, OperationPhase, UPLOAD_KIND};

/// Why an operation is where it is.
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct Explanation {
    /// The operation.
    #[serde(rename = "operationId")]
    pub operation_id: String,
    /// `pending`, `in_flight`, `blocked` or `resolved`.
    #[serde(rename = "state")]
    pub state: &'static str,
    /// One of the idle reasons of `stats()`, or `ready`, `persisting`, `frozen_ahead`,
    /// `authorizing`, `sending`, `settled`, `blocked`, `other_principal`, `not_started`, `stopped`.
    #[serde(rename = "reason")]
    pub reason: String,
    /// The canvas that holds it back.
    #[serde(rename = "canvasId", skip_serializing_if = "Option::is_none")]
    pub canvas_id: Option<String>,
    /// The request carrying it or holding its canvas.
    #[serde(rename = "requestId", skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The dependency it waits for.
    #[serde(rename = "dependencyId", skip_serializing_if = "Option::is_none")]
    pub dependency_id: Option<String>,
    /// When its next attempt is due.
    #[serde(rename = "dueAt", skip_serializing_if = "Option::is_none")]
    pub due_at: Option<Millis>,
    /// Sends so far of its request.
    #[serde(rename = "attempt", skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Its blockers.
    #[serde(rename = "blockers")]
    pub blockers: Vec<String>,
    /// When its request is blocked (a dead letter, ...), the canvases that request holds:
    /// nothing else touching them is sent until the host releases them.
    #[serde(rename = "heldCanvasIds", skip_serializing_if = "Option::is_none")]
    pub held_canvas_ids: Option<Vec<String>>,
    /// How the host releases them: `["retry", "discard"]` (`retry(id)` sends the same frozen
    /// request again; `discard(id)` gives it up, with the user's consent).
    #[serde(rename = "release", skip_serializing_if = "Option::is_none")]
    pub release: Option<Vec<String>>,
}

impl Explanation {
    /// An explanation of `operation_id` with nothing decided yet (`pending`, no reason).
    fn of(operation_id: &str, request_id: Option<String>, blockers: Vec<String>) -> Self {
        Self {
            operation_id: operation_id.to_owned(),
            state: "pending",
            reason: String::new(),
            canvas_id: None,
            request_id,
            dependency_id: None,
            due_at: None,
            attempt: None,
            blockers,
            held_canvas_ids: None,
            release: None,
        }
    }
}

/// How the host releases what a blocked request holds.
pub const RELEASE_ACTIONS: [&str; 2] = ["retry", "discard"];

/// The result of `flush(id)`.
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct FlushOutcome {
    /// Whether an attempt started.
    #[serde(rename = "started")]
    pub started: bool,
    /// Where the operation is now, and why.
    #[serde(rename = "explanation")]
    pub explanation: Explanation,
}

/// Counters and the current idle reason.
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct SchedulerStats {
    /// Ready operations examined.
    #[serde(rename = "scanned")]
    pub scanned: u64,
    /// Operations frozen and claimed.
    #[serde(rename = "claimed")]
    pub claimed: u64,
    /// Examined operations that were no longer ready.
    #[serde(rename = "raced")]
    pub raced: u64,
    /// Retries launched.
    #[serde(rename = "retried")]
    pub retried: u64,
    /// Attempts sent.
    #[serde(rename = "sent")]
    pub sent: u64,
    /// Operations settled by an answer.
    #[serde(rename = "settled")]
    pub settled: u64,
    /// Pump passes.
    #[serde(rename = "passes")]
    pub passes: u64,
    /// Pending operations.
    #[serde(rename = "pending")]
    pub pending: usize,
    /// Attempts between launch and durable answer.
    #[serde(rename = "inFlight")]
    pub in_flight: usize,
    /// Operations in the ready queue.
    #[serde(rename = "ready")]
    pub ready: usize,
    /// Requests with a scheduled retry.
    #[serde(rename = "retryScheduled")]
    pub retry_scheduled: usize,
    /// Claimed canvases.
    #[serde(rename = "claimedCanvases")]
    pub claimed_canvases: usize,
    /// Why nothing is being sent, when nothing is.
    #[serde(rename = "idleReason")]
    pub idle_reason: Option<&'static str>,
    /// Whether this scheduler holds the lease.
    #[serde(rename = "leader")]
    pub leader: bool,
    /// Our lease owner id.
    #[serde(rename = "owner")]
    pub owner: String,
    /// Settled operations kept whole (retention).
    #[serde(rename = "settledKept")]
    pub settled_kept: usize,
    /// Tombstones of compacted operations stored (counted at open, plus those written since,
    /// at most the policy's count).
    #[serde(rename = "tombstones")]
    pub tombstones: u64,
    /// Our fence, when leading.
    #[serde(rename = "fence")]
    pub fence: Option<u64>,
    /// The dispatching tab's owner id when known: ours while we lead; the browser's
    /// tab layer fills it in for a tab that does not dispatch.
    #[serde(rename = "leaderOwner")]
    pub leader_owner: Option<String>,
}

impl<H: Host> Scheduler<H> {
    /// A gate that stops everything, if any (in the words of the idle reasons).
    fn gate(&self) -> Option<&'static str> {
        match self.lifecycle {
            Lifecycle::Idle => return Some("not_started"),
            Lifecycle::Closed => return Some("stopped"),
            Lifecycle::Running => {}
        }
        if self.persist.trouble.is_some() {
            Some("storage_unavailable")
        } else if !self.is_leader() {
            Some("not_leader")
        } else if !self.holds.is_empty() {
            Some("held")
        } else if !self.online {
            Some("offline")
        } else {
            None
        }
    }

    /// Explains one operation; an unknown id is an error. A compacted one at hand (its
    /// tombstone, without the archive's whole copy) is `resolved` as it settled.
    pub fn explain(&self, now: Millis, operation_id: &str) -> Result<Explanation, SchedulerError> {
        let Some(op) = self.operation_view(operation_id) else {
            let tombstone = self.ledger.tombstone(operation_id).ok_or_else(|| {
                SchedulerError::new(
                    ErrorCode::UnknownOperation,
                    format!("no operation {operation_id}"),
                )
            })?;
            let mut out = Explanation::of(operation_id, None, Vec::new());
            out.state = "resolved";
            out.reason = tombstone.settlement.as_str().to_owned();
            return Ok(out);
        };
        let mut out = Explanation::of(operation_id, op.request_id.clone(), op.blockers.clone());
        if op.phase == OperationPhase::Resolved {
            out.state = "resolved";
            out.reason = op
                .outcome
                .as_ref()
                .map_or("settled", |o| o.settlement.as_str())
                .to_owned();
            return Ok(out);
        }
        let request = op
            .request_id
            .as_deref()
            .and_then(|r| self.ledger.request(r))
            .filter(|r| r.is_unresolved());
        if let Some(request) = request.filter(|r| r.blocked.is_some()) {
            out.held_canvas_ids = Some(request.canvas_ids.clone());
            out.release = Some(RELEASE_ACTIONS.map(String::from).to_vec());
        }
        if let Some(first) = op.blockers.first() {
            out.state = "blocked";
            out.reason = first.clone();
            return Ok(out);
        }
        if let Some(request) = request {
            out.attempt = Some(request.attempt);
            if let Some(blocked) = &request.blocked {
                out.state = "blocked";
                out.reason = blocked.clone();
                return Ok(out);
            }
            if let Some(active) = self.active.get(&request.id) {
                if matches!(active.stage, Stage::Ahead(_)) {
                    // Frozen and durable, its canvases claimed, but not sent: it waits for
                    // a slot (the attempt it will make is not one of its sends yet).
                    out.state = "pending";
                    out.reason = "frozen_ahead".into();
                    out.attempt = Some(request.attempt.saturating_sub(1));
                    return Ok(out);
                }
                out.state = "in_flight";
                out.reason = match active.stage {
                    Stage::Authorizing => "authorizing",
                    Stage::Sending => "sending",
                    Stage::Barrier(_) | Stage::Completing(_) | Stage::Ahead(_) => "persisting",
                }
                .to_owned();
                return Ok(out);
            }
            out.due_at = request
                .retry_at
                .or_else(|| self.retries.due_of(&request.id));
            if self.other_principal(&request.principal) {
                out.reason = "other_principal".into();
            } else if let Some(gate) = self.gate() {
                out.reason = gate.into();
            } else if self.deferred.contains_key(&request.id) {
                out.reason = "waiting_lane".into();
            } else {
                out.reason = "retry_scheduled".into();
            }
            return Ok(out);
        }
        if let Some(dep) = op
            .intent
            .dependencies
            .iter()
            .map(|d| self.ledger.dependency_target(d))
            .find(|d| !self.ledger.is_resolved(d))
        {
            out.reason = "waiting_dependency".into();
            out.dependency_id = Some(dep.to_owned());
            return Ok(out);
        }
        if self.other_principal(&op.intent.principal) {
            out.reason = "other_principal".into();
            return Ok(out);
        }
        if let Some(gate) = self.gate() {
            out.reason = gate.into();
            return Ok(out);
        }
        if self.lane_waiters.contains(op.intent.sequence, operation_id) {
            out.reason = "waiting_lane".into();
            return Ok(out);
        }
        if let Some(end) = self
            .coalescing
            .end_of(operation_id)
            .filter(|end| *end > now)
        {
            // `coalesceMs`: held back so a newer intent with its key can replace it; or held
            // back after its batch was aborted as a whole, until the wait that earned.
            out.reason = if self.paced_after_abort(operation_id) {
                "retry_scheduled"
            } else {
                "coalescing"
            }
            .into();
            out.due_at = Some(end);
            return Ok(out);
        }
        if let Some((_, canvases)) = self.waiting.get(operation_id) {
            out.reason = "waiting_canvas".into();
            for canvas in canvases {
                if let Some(holder) = self.claims.holder(canvas) {
                    out.canvas_id = Some(canvas.clone());
                    out.request_id = Some(holder.to_owned());
                    return Ok(out);
                }
                if let Some((_, earlier)) = self
                    .claims
                    .first_waiter(canvas)
                    .filter(|(s, _)| *s < op.intent.sequence)
                {
                    out.canvas_id = Some(canvas.clone());
                    out.dependency_id = Some(earlier.to_owned());
                    return Ok(out);
                }
            }
            // Its canvas was released and it is queued again.
        }
        out.reason = if op.intent.operation_type == UPLOAD_KIND && !self.lane_free(UPLOAD_KIND) {
            "waiting_lane"
        } else {
            "ready"
        }
        .into();
        Ok(out)
    }

    /// Counters, sizes and the idle reason.
    pub fn stats(&self) -> SchedulerStats {
        let pending = self.indexed.len();
        SchedulerStats {
            scanned: self.counters.scanned,
            claimed: self.counters.claimed,
            raced: self.counters.raced,
            retried: self.counters.retried,
            sent: self.counters.sent,
            settled: self.counters.settled,
            passes: self.counters.passes,
            pending,
            in_flight: self.occupied(),
            ready: self.ready.len(),
            retry_scheduled: self.retries.len(),
            claimed_canvases: self.claims.len(),
            idle_reason: self.idle_reason(),
            leader: self.is_leader(),
            owner: self.config.owner.clone(),
            settled_kept: self.ledger.settled_count() + self.ledger.archived_count(),
            tombstones: self.ledger.tombstone_count(),
            fence: self.lease.fence,
            leader_owner: self.is_leader().then(|| self.config.owner.clone()),
        }
    }

    fn idle_reason(&self) -> Option<&'static str> {
        if !self.active.is_empty() || self.in_hook {
            return None;
        }
        if let Some(gate) = self.gate() {
            return Some(gate);
        }
        if !self.ready.is_empty() {
            return None;
        }
        if !self.retries.is_empty() {
            return Some("retry_scheduled");
        }
        if !self.deferred.is_empty() || !self.lane_waiters.is_empty() {
            return Some("waiting_lane");
        }
        if !self.waiting.is_empty() {
            return Some("waiting_canvas");
        }
        if self.indexed.is_empty() {
            Some("no_work")
        } else {
            Some("waiting_dependency")
        }
    }

    /// Canvas → request holding it.
    pub fn claims(&self) -> BTreeMap<String, String> {
        self.claims.snapshot()
    }
}
