//! A protocol-v1 server model (docs/protocol.md): applies a request at most once per idempotency
//! key, answers repeats with the stored outcome, 404s a query for an unknown key, and keeps the
//! order in which operations were applied per canvas, so invariants can be checked.

use std::collections::BTreeMap;

use serde_json::json;

use canvas_scheduler_core::{AttemptOutcome, AttemptStatus, FrozenRequest, RetryAction, SafeError};

/// What a request came to on the server.
#[derive(Clone, Debug, PartialEq)]
struct Stored {
    digest: String,
    outcome: AttemptOutcome,
    /// Queries left before an accepted run becomes applied.
    polls_left: u32,
    /// A refusal that applied nothing (a batch declined, or aborted as a whole): a repeat or
    /// a query gets it again.
    refused: Option<AttemptStatus>,
}

/// Fault switches for one answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerFaults {
    /// Answer 503 without applying.
    pub server_error: bool,
    /// Answer 429 with this Retry-After (ms) without applying.
    pub too_many: Option<u64>,
    /// Apply, then lose the answer (the client sees a transport error).
    pub drop_after_apply: bool,
    /// Lose the request before it arrives.
    pub drop_before_apply: bool,
    /// Answer 401 without applying: the login expired.
    pub unauthorized: bool,
    /// Answer 409 without a body without applying: still receiving an earlier copy.
    pub in_progress: bool,
    /// Abort a new request of several operations as a whole (a serialization failure, say):
    /// `rejected`, every operation's verdict `batch_aborted`, nothing applied; the answer is
    /// stored under the key. A request of one operation is handled as usual.
    pub abort_batch: bool,
}

/// The server's state.
#[derive(Clone, Debug, Default)]
pub struct SimServer {
    stored: BTreeMap<String, Stored>,
    versions: BTreeMap<String, u64>,
    /// Operation id → times applied (must never exceed 1).
    pub applied: BTreeMap<String, u32>,
    /// Canvas → operation ids in the order applied.
    pub order: BTreeMap<String, Vec<String>>,
    /// Keys received with a body other than the first one (must stay 0).
    pub key_reuse: u32,
    /// Submits received (including repeats).
    pub submits: u64,
    /// Queries received.
    pub queries: u64,
    /// A server without batches: it declines every request of several operations
    /// (`rejected`, `batch_not_supported`), applying none of them, and stores the decline.
    pub declines_batches: bool,
    /// Batches declined (submits of a new key).
    pub declined: u64,
    /// Batches aborted as a whole (`ServerFaults::abort_batch`, submits of a new key).
    pub aborted: u64,
}

impl SimServer {
    /// Handles one attempt as the wire would deliver it.
    pub fn handle(
        &mut self,
        action: RetryAction,
        request: &FrozenRequest,
        faults: ServerFaults,
    ) -> AttemptStatus {
        if faults.drop_before_apply {
            return AttemptStatus::transport_unknown("connection dropped");
        }
        if faults.server_error {
            return status(
                AttemptOutcome::Unresolved,
                Some(SafeError::new("http_503", "service unavailable")),
            );
        }
        if faults.unauthorized {
            return canvas_scheduler_core::protocol::map_answer(action, 401, None, None, 0);
        }
        if faults.in_progress {
            return canvas_scheduler_core::protocol::map_answer(action, 409, None, None, 0);
        }
        if let Some(after) = faults.too_many {
            let mut answer = status(
                AttemptOutcome::Unresolved,
                Some(SafeError::new("http_429", "too many requests")),
            );
            answer.retry_after_ms = Some(after);
            return answer;
        }
        let answer = match action {
            RetryAction::Submit => self.submit(request, faults.abort_batch),
            RetryAction::Query => self.query(&request.id),
        };
        if faults.drop_after_apply {
            return AttemptStatus::transport_unknown("connection dropped after apply");
        }
        answer
    }

    fn submit(&mut self, request: &FrozenRequest, abort_batch: bool) -> AttemptStatus {
        self.submits += 1;
        if let Some(stored) = self.stored.get(&request.id) {
            if stored.digest != request.digest {
                self.key_reuse += 1;
                return status(
                    AttemptOutcome::Rejected,
                    Some(SafeError::new("idempotency_key_reused", "different body")),
                );
            }
            return stored
                .refused
                .clone()
                .unwrap_or_else(|| status(stored.outcome, None));
        }
        let batch = request.operation_ids.len() > 1;
        let refusal = if self.declines_batches && batch {
            self.declined += 1;
            Some(decline())
        } else if abort_batch && batch {
            self.aborted += 1;
            Some(aborted_batch_answer(&request.operation_ids))
        } else {
            None
        };
        if let Some(refusal) = refusal {
            self.stored.insert(
                request.id.clone(),
                Stored {
                    digest: request.digest.clone(),
                    outcome: AttemptOutcome::Rejected,
                    polls_left: 0,
                    refused: Some(refusal.clone()),
                },
            );
            return refusal;
        }
        let conflict = request
            .expected_versions
            .iter()
            .any(|(canvas, v)| self.versions.get(canvas).copied().unwrap_or(0) != *v);
        if conflict {
            self.stored.insert(
                request.id.clone(),
                Stored {
                    digest: request.digest.clone(),
                    outcome: AttemptOutcome::Rejected,
                    polls_left: 0,
                    refused: None,
                },
            );
            let mut answer = status(
                AttemptOutcome::Rejected,
                Some(SafeError::new("version_conflict", "stale version")),
            );
            answer.canonical = Some(json!({ "versions": self.versions }).into());
            return answer;
        }
        let accepted = request.kind == "run.start";
        self.apply(request);
        let outcome = if accepted {
            AttemptOutcome::Accepted
        } else {
            AttemptOutcome::Applied
        };
        self.stored.insert(
            request.id.clone(),
            Stored {
                digest: request.digest.clone(),
                outcome,
                polls_left: if accepted { 2 } else { 0 },
                refused: None,
            },
        );
        status(outcome, None)
    }

    fn apply(&mut self, request: &FrozenRequest) {
        for id in &request.operation_ids {
            *self.applied.entry(id.clone()).or_default() += 1;
            for canvas in &request.canvas_ids {
                self.order
                    .entry(canvas.clone())
                    .or_default()
                    .push(id.clone());
            }
        }
        for canvas in &request.canvas_ids {
            *self.versions.entry(canvas.clone()).or_default() += 1;
        }
    }

    fn query(&mut self, id: &str) -> AttemptStatus {
        self.queries += 1;
        let Some(stored) = self.stored.get_mut(id) else {
            return status(
                AttemptOutcome::Unresolved,
                Some(SafeError::new("not_found", "never received")),
            );
        };
        if let Some(refusal) = &stored.refused {
            return refusal.clone();
        }
        if stored.outcome == AttemptOutcome::Accepted {
            if stored.polls_left == 0 {
                stored.outcome = AttemptOutcome::Applied;
            } else {
                stored.polls_left -= 1;
            }
        }
        status(stored.outcome, None)
    }

    /// Whether the server has ever received this key.
    pub fn has(&self, request_id: &str) -> bool {
        self.stored.contains_key(request_id)
    }
}

/// The decline of a batch, as the wire carries it: 422 with a rejection body.
fn decline() -> AttemptStatus {
    canvas_scheduler_core::protocol::map_answer(
        RetryAction::Submit,
        422,
        Some(
            r#"{"outcome":"rejected","error":{"code":"batch_not_supported","message":"this server takes one operation a request"}}"#,
        ),
        None,
        0,
    )
}

/// A batch aborted as a whole, as the wire carries it: 409 with a rejection body whose every
/// operation answers `batch_aborted` (no member is to blame).
pub fn aborted_batch_answer(operation_ids: &[String]) -> AttemptStatus {
    let operations: Vec<_> = operation_ids
        .iter()
        .map(|id| {
            json!({
                "operationId": id,
                "outcome": "rejected",
                "error": {"code": "batch_aborted", "message": "the batch was aborted; nothing was applied"},
            })
        })
        .collect();
    let body = json!({
        "outcome": "rejected",
        "error": {"code": "serialization_failure", "message": "the transaction was aborted"},
        "operations": operations,
    });
    canvas_scheduler_core::protocol::map_answer(
        RetryAction::Submit,
        409,
        Some(&body.to_string()),
        None,
        0,
    )
}

fn status(outcome: AttemptOutcome, error: Option<SafeError>) -> AttemptStatus {
    AttemptStatus {
        error,
        ..AttemptStatus::outcome(outcome)
    }
}
