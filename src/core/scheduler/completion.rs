//! Recording an answer (S9, S10, K1, K4): settle applied/rejected requests, schedule retries or
//! dead-letter, and — once that record is durable — release claims and wake what waited.

use super::Scheduler;
use crate::core::host::Host;
use crate::core::io::{AttemptOutcome, AttemptStatus, Report, ANSWER_TOO_LARGE};
use crate::core::model::{
    EventKind, Millis, OperationOutcome, RequestPhase, RetryAction, Settlement,
};
use crate::core::protocol::NOT_FOUND;
use crate::core::safe_error::SafeError;

impl<H: Host> Scheduler<H> {
    /// Records an attempt's outcome in the ledger (S9, S10, K1, K4).
    pub(super) fn complete(
        &mut self,
        now: Millis,
        request_id: &str,
        action: RetryAction,
        status: AttemptStatus,
    ) {
        match status.outcome {
            AttemptOutcome::Applied | AttemptOutcome::Rejected => {
                self.settle(now, request_id, status)
            }
            AttemptOutcome::Accepted | AttemptOutcome::Unresolved => {
                if let Some(reason) = status.blocked.clone() {
                    self.block_request(now, request_id, &reason, status.error);
                    return;
                }
                let accepted = status.outcome == AttemptOutcome::Accepted;
                // S9: a query that finds nothing means the server never received the request,
                // which goes again. K1: it is not a proper answer (a server whose write path is
                // down answers it too), so it resets no backoff: the submit waits the step the
                // failed submit earned.
                let not_found = !accepted
                    && action == RetryAction::Query
                    && status.error.as_ref().is_some_and(|e| e.code == NOT_FOUND);
                let final_failure = !accepted && status.retryable == Some(false);
                // K1: an `accepted` (or 409 in progress) that never turns into a verdict counts,
                // so a server that only ever says "later" ends in a dead letter; a failure that
                // may be the endpoint's counts only once the endpoint answered others since.
                // An answer too long to read came from an endpoint that works: the failure is
                // this request's own (its answer), and it counts like one (K1), where it was
                // retried for ever while nothing else could be answered.
                let unreadable = status
                    .error
                    .as_ref()
                    .is_some_and(|e| e.code == ANSWER_TOO_LARGE);
                let counts = if accepted {
                    self.poison.answered();
                    true
                } else if not_found {
                    false
                } else if unreadable {
                    self.poison.answered();
                    self.poison.outage_class_failure(request_id);
                    true
                } else {
                    final_failure || self.poison.outage_class_failure(request_id)
                };
                let mut failures = 0;
                self.ledger.update_request(request_id, |r| {
                    if accepted {
                        r.phase = RequestPhase::Accepted;
                    }
                    if counts {
                        r.failures = r.failures.saturating_add(1);
                    }
                    r.error = status.error.clone();
                    failures = r.failures;
                });
                let spread = if counts {
                    self.poison.counted(request_id, now)
                } else {
                    0
                };
                let spent = counts
                    && failures >= self.config.retry.max_attempts
                    && spread >= self.config.retry.dead_letter_after_ms;
                if final_failure || spent {
                    return self.dead_letter(now, request_id, status.error);
                }
                // S9: a missing receipt is unknown, so the only write a retry may do is this
                // same frozen request; after a submit or an `accepted`, ask first.
                let next = if accepted || action == RetryAction::Submit {
                    RetryAction::Query
                } else {
                    RetryAction::Submit
                };
                // S10, clamped: no wait from outside is longer than max(maxMs, 24 h), and
                // the stored due time is always a storable number. Backoff counts the
                // request's failures since the endpoint last answered (`core::backoff`);
                // `Retry-After` only raises it (K1).
                let retry = self.config.retry.clone();
                let chosen = status.retry_after_ms.is_some() || status.retry_at.is_some();
                let due = if not_found {
                    match self.backoff.never_received(request_id, chosen) {
                        Some(step) => retry.due_at(now, step, status.retry_after_ms, None),
                        None => retry.due_at_once(now, status.retry_after_ms),
                    }
                } else {
                    let step = self.backoff.fail(request_id, chosen, counts);
                    retry.due_at(now, step, status.retry_after_ms, status.retry_at)
                };
                self.ledger.schedule_retry(request_id, due, next);
                // K6: the log says what the retry follows (the error's code, never its text).
                let after = status
                    .error
                    .as_ref()
                    .map(|error| format!(" after {}", error.code))
                    .unwrap_or_default();
                self.event(
                    EventKind::RetryScheduled,
                    now,
                    Some(request_id),
                    None,
                    Some(format!("{} at {due}{after}", next.as_str())),
                );
            }
        }
    }

    /// Applied or rejected: the request and its operations are resolved for good.
    fn settle(&mut self, now: Millis, request_id: &str, status: AttemptStatus) {
        let Some(request) = self.ledger.request(request_id).cloned() else {
            return;
        };
        let settlement = if status.outcome == AttemptOutcome::Applied {
            Settlement::Applied
        } else {
            Settlement::Rejected
        };
        self.retries.cancel(request_id);
        self.backoff.forget(request_id);
        self.poison.forget(request_id);
        self.poison.answered();
        self.endpoint_answered(now);
        self.ledger.update_request(request_id, |r| {
            r.phase = RequestPhase::Resolved;
            r.outcome = Some(settlement);
            r.error = status.error.clone();
            r.canonical = status.canonical.clone();
            r.retry_at = None;
            r.retry_action = None;
        });
        // A batch the server declined applied nothing: each operation goes again alone.
        let declined = super::batch::declines_batch(&request, &status);
        self.batches_declined |= declined;
        // A batch's shared canonical state is stored once, on the request; each operation
        // stores only its own (its settled event still carries the shared one).
        let shared_canonical = request.operation_ids.len() == 1;
        for id in &request.operation_ids {
            let verdict = status.operations.iter().find(|v| &v.operation_id == id);
            let aborted = verdict
                .is_some_and(|v| v.error.as_ref().is_some_and(|e| e.code == "batch_aborted"));
            if declined || aborted {
                // Declined, or an atomic batch failed because of another member: this one
                // was not applied, so it is frozen again on its own once the batch's claims
                // are released.
                self.ledger.update_operation(id, |op| op.request_id = None);
                continue;
            }
            let outcome = OperationOutcome {
                settlement: verdict.map_or(settlement, |v| v.settlement),
                request_id: Some(request_id.to_owned()),
                // An operation's own verdict wins; the request's error and canonical state
                // (e.g. a version conflict's canvases) stand in where it says nothing.
                error: verdict
                    .and_then(|v| v.error.clone())
                    .or_else(|| status.error.clone()),
                canonical: verdict
                    .and_then(|v| v.canonical.clone())
                    .or_else(|| status.canonical.clone().filter(|_| shared_canonical)),
                at: now,
            };
            self.ledger.resolve_operation(id, outcome.clone());
            self.indexed.remove(id);
            self.counters.settled += 1;
            self.event(
                EventKind::Settled,
                now,
                Some(request_id),
                Some(id),
                Some(outcome.settlement.as_str().into()),
            );
            self.report(Report::Settled {
                operation_id: id.clone(),
                request_id: Some(request_id.to_owned()),
                settlement: outcome.settlement,
                error: outcome.error,
                canonical: outcome.canonical.or_else(|| status.canonical.clone()),
            });
        }
    }

    /// K1: out of attempts. Terminal and visible; claims stay until the host retries or discards.
    fn dead_letter(&mut self, now: Millis, request_id: &str, error: Option<SafeError>) {
        let Some(request) = self.ledger.request(request_id).cloned() else {
            return;
        };
        self.retries.cancel(request_id);
        self.backoff.forget(request_id);
        self.poison.forget(request_id);
        self.ledger.update_request(request_id, |r| {
            r.blocked = Some("dead_letter".into());
            r.retry_at = None;
            r.retry_action = None;
        });
        for id in &request.operation_ids {
            self.ledger.block_operation(id, "dead_letter");
        }
        self.event(
            EventKind::DeadLettered,
            now,
            Some(request_id),
            None,
            error.as_ref().map(|e| e.code.clone()),
        );
        self.report(Report::DeadLettered {
            operation_ids: request.operation_ids.clone(),
            request_id: request_id.to_owned(),
            error,
            held_canvas_ids: request.canvas_ids.clone(),
        });
    }

    /// The answer is durable: release claims of a resolved request or queue its retry.
    pub(super) fn finish(&mut self, _now: Millis, request_id: &str) {
        self.active.remove(request_id);
        if let Some(request) = self.ledger.request(request_id).cloned() {
            if !request.is_unresolved() {
                self.release_request(request_id);
            } else if request.blocked.is_none() {
                if let (Some(due), Some(action)) = (request.retry_at, request.retry_action) {
                    self.retries.schedule(request_id, due, action);
                }
            }
        }
        self.slot_freed();
    }

    /// Releases a resolved request's canvases and wakes waiters and dependents (S9).
    pub(super) fn release_request(&mut self, request_id: &str) {
        let Some(request) = self.ledger.request(request_id).cloned() else {
            return;
        };
        self.retries.cancel(request_id);
        let woken = self.claims.release(request_id, &request.canvas_ids);
        self.wake(woken);
        for id in &request.operation_ids {
            self.consider_ready(id);
            for dependent in self.dependents_of(id) {
                self.consider_ready(&dependent);
            }
        }
    }
}

impl<H: Host> Scheduler<H> {
    /// The endpoint gave a proper answer (a verdict): backoff
    /// starts again, and retries that waited on backoff alone are due now (`core::backoff`).
    pub(super) fn endpoint_answered(&mut self, now: Millis) {
        let waiting = self.backoff.reset();
        self.retry_now(now, waiting);
    }

    /// Makes the scheduled retries of `requests` due now (in the ledger and the retry queue);
    /// requests on the wire, blocked or without a scheduled retry are left as they are.
    pub(super) fn retry_now(&mut self, now: Millis, requests: Vec<String>) {
        for id in requests {
            if self.active.contains_key(&id) || !self.retries.is_scheduled(&id) {
                continue;
            }
            let Some(action) = self
                .ledger
                .request(&id)
                .filter(|r| r.blocked.is_none())
                .and_then(|r| r.retry_action)
            else {
                continue;
            };
            self.ledger.schedule_retry(&id, now, action);
            self.retries.schedule(&id, now, action);
        }
    }
}
