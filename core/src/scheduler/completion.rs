//! Recording an answer: settle applied/rejected requests, schedule retries or
//! dead-letter, and — once that record is durable — release claims and wake what waited.

use super::Scheduler;
use crate::backoff::Wait;
use crate::host::Host;
use crate::io::{AttemptOutcome, AttemptStatus, Report, ANSWER_TOO_LARGE};
use crate::jitter;
use crate::model::{EventKind, Millis, OperationOutcome, RequestPhase, RetryAction, Settlement};
use crate::protocol::{INVALID_ANSWER, NOT_FOUND};
use crate::safe_error::SafeError;

impl<H: Host> Scheduler<H> {
    /// Records an attempt's outcome in the ledger.
    pub(super) fn complete(
        &mut self,
        now: Millis,
        request_id: &str,
        action: RetryAction,
        status: AttemptStatus,
    ) {
        match status.outcome {
            AttemptOutcome::Applied | AttemptOutcome::Rejected => {
                let aborted = self
                    .ledger
                    .request(request_id)
                    .is_some_and(|r| super::batch_abort::aborts_every_operation(r, &status));
                if aborted {
                    // No proper answer: a failure, paced (`batch_abort`).
                    return self.aborted_as_a_whole(now, request_id, status);
                }
                if action == RetryAction::Submit || self.lost_in_this_run(request_id) {
                    self.endpoint_answered(now, self.is_first_attempt(request_id));
                }
                self.settle(now, request_id, status)
            }
            AttemptOutcome::Accepted | AttemptOutcome::Unresolved => {
                if let Some(reason) = status.blocked.clone() {
                    self.block_request(now, request_id, &reason, status.error);
                    return;
                }
                self.retry_later(now, request_id, action, status);
            }
        }
    }

    /// An answer that leaves the request unresolved: count it toward the dead letter when it
    /// is poison's, and schedule the next attempt after the wait it earned.
    fn retry_later(
        &mut self,
        now: Millis,
        request_id: &str,
        action: RetryAction,
        status: AttemptStatus,
    ) {
        let accepted = status.outcome == AttemptOutcome::Accepted;
        let final_failure = !accepted && status.retryable == Some(false);
        let (wait, counts) = if final_failure {
            (None, true)
        } else {
            self.judge(now, request_id, action, &status)
        };
        let mut failures = 0;
        let mut attempt = 0;
        self.ledger.update_request(request_id, |r| {
            if accepted {
                r.phase = RequestPhase::Accepted;
            }
            if counts {
                r.failures = r.failures.saturating_add(1);
            }
            r.error = status.error.clone();
            failures = r.failures;
            attempt = r.attempt;
        });
        let spread = if counts {
            self.poison.counted(request_id, self.health.answers(), now)
        } else {
            0
        };
        let spent = counts
            && failures >= self.config.retry.max_attempts
            && spread >= self.config.retry.dead_letter_after_ms;
        if final_failure || spent {
            return self.dead_letter(now, request_id, status.error);
        }
        // A missing receipt is unknown, so the only write a retry may do is this same
        // frozen request; after a submit or an `accepted`, ask first.
        let next = if accepted || action == RetryAction::Submit {
            RetryAction::Query
        } else {
            RetryAction::Submit
        };
        self.schedule_next(now, request_id, next, wait, attempt, &status);
    }

    /// What an unresolved answer says of the endpoint and of the request: the wait it earned
    /// (`None` after "never received": decided by the failure before it) and whether it
    /// counts toward the dead letter.
    fn judge(
        &mut self,
        now: Millis,
        request_id: &str,
        action: RetryAction,
        status: &AttemptStatus,
    ) -> (Option<Wait>, bool) {
        let code = status.error.as_ref().map(|e| e.code.as_str());
        if status.outcome == AttemptOutcome::Accepted || code == Some(ANSWER_TOO_LARGE) {
            // An `accepted` (or 409 in progress) that never turns into a verdict counts,
            // so a server that only ever says "later" ends in a dead letter; so does an
            // answer too long to read (the endpoint works, the answer is the fault), where it
            // was once retried for ever. Both are the request's own.
            if action == RetryAction::Submit {
                self.endpoint_answered(now, self.is_first_attempt(request_id));
            }
            self.poison
                .outage_class_failure(request_id, self.health.answers());
            return (Some(self.backoff.own_failure(request_id)), true);
        }
        if action == RetryAction::Query && code == Some(NOT_FOUND) {
            // The server never received the request, which goes again. Not a proper
            // answer (a server whose write path is down answers it too): it tells nothing of
            // the endpoint.
            return (None, false);
        }
        // A failure that may be the endpoint's: bad luck, an outage or poison
        // (`core::endpoint`, `core::backoff`). It counts toward the dead letter only when the
        // request fails on its own (more misses in a row than random loss makes, while others
        // were answered), with a status from the server (a lost answer says nothing of the
        // request), and the endpoint answered others since its previous failure.
        let threshold = self.health.threshold();
        let answers = self.health.answers();
        if action == RetryAction::Submit {
            self.backoff.submit_failed(request_id, now);
        }
        let first = self.is_first_attempt(request_id);
        let outage = self.health.failed(now, self.config.retry.max_ms, first);
        let wait = self.backoff.fail(request_id, outage, threshold, answers);
        let answered_since = self.poison.outage_class_failure(request_id, answers);
        let counts = answered_since && self.backoff.is_own(request_id) && is_definite(code);
        (Some(wait), counts)
    }

    /// Schedules `next` after the wait the failure earned, with jitter, or later if the server
    /// or the host asked: `Retry-After` only raises the wait; no wait from outside is longer
    /// than max(maxMs, 24 h), and the stored due time is always a storable number. A resubmit
    /// after "never received" waits the step its failure earned when the request was backing
    /// off, and goes at once after bad luck.
    fn schedule_next(
        &mut self,
        now: Millis,
        request_id: &str,
        next: RetryAction,
        wait: Option<Wait>,
        attempt: u32,
        status: &AttemptStatus,
    ) {
        let wait = wait.or_else(|| {
            self.backoff
                .never_received(request_id, self.health.outage_age(now))
        });
        let retry = &self.config.retry;
        let (due, ours) = match wait {
            Some(wait) => {
                let draw = jitter::draw(request_id, attempt);
                let earned = retry.earned(wait, self.health.round_trip(), draw);
                let ours = status.retry_at.is_none()
                    && status.retry_after_ms.is_none_or(|after| after <= earned);
                let due = retry.due_at(now, earned, status.retry_after_ms, status.retry_at);
                (due, ours)
            }
            None => (retry.due_at_once(now, status.retry_after_ms), true),
        };
        self.backoff.scheduled(request_id, ours);
        self.ledger.schedule_retry(request_id, due, next);
        // The log says what the retry follows (the error's code, never its text).
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

    /// Whether the attempt just answered was the request's first.
    pub(super) fn is_first_attempt(&self, request_id: &str) -> bool {
        self.ledger
            .request(request_id)
            .is_some_and(|r| r.attempt <= 1)
    }

    /// Whether a verdict a query finds for `request_id` is news of the endpoint: the write path
    /// applied one of its submits whose answer was lost, at the first one's failure or later
    /// (`Backoff::submit_failed_at`), and that is news if it is within the current run, or
    /// since the run was judged an outage (`EndpointHealth::is_news`).
    fn lost_in_this_run(&self, request_id: &str) -> bool {
        self.backoff
            .submit_failed_at(request_id)
            .is_some_and(|at| self.health.is_news(at))
    }

    /// The driver's answer to an attempt that left `sent_at`: the round trip, when the
    /// server answered it (a transport error may come at once or after a long timeout).
    pub(super) fn note_round_trip(&mut self, now: Millis, sent_at: Millis, status: &AttemptStatus) {
        let code = status.error.as_ref().map(|e| e.code.as_str());
        let answered = status.outcome != AttemptOutcome::Unresolved
            || is_definite(code)
            || matches!(code, Some(NOT_FOUND | ANSWER_TOO_LARGE));
        if answered {
            self.health.round_trip_sample(now.saturating_sub(sent_at));
        }
    }

    /// Applied or rejected: the request and its operations are resolved for good.
    pub(super) fn settle(&mut self, now: Millis, request_id: &str, status: AttemptStatus) {
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
            let aborted = verdict.is_some_and(super::batch_abort::is_aborted);
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
            self.forget_abort(id);
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

    /// Out of attempts. Terminal and visible; claims stay until the host retries or discards.
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

    /// Releases a resolved request's canvases and wakes waiters and dependents.
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
    /// The endpoint gave a proper answer to a submit (a verdict, `accepted`, an answer too long
    /// to read), the request's `first` attempt or a later one: its write path works. Its run of failures and any outage are over
    /// (`core::endpoint`), backoff starts again, and retries that waited on backoff alone are
    /// due now (`core::backoff`). An answer to a query shows only that reads work: in a write
    /// outage a query still finds the verdict of a request applied before it.
    pub(super) fn endpoint_answered(&mut self, now: Millis, first: bool) {
        self.health.answered(first);
        let waiting = self.backoff.reset();
        self.retry_now(now, waiting);
        self.abort_waits_over();
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

/// Whether a failure's code is a status the server gave (`http_<status>`, a body that is not a
/// protocol answer), not a lost answer or a hook of the host that failed.
fn is_definite(code: Option<&str>) -> bool {
    code.is_some_and(|code| code.starts_with("http_") || code == INVALID_ANSWER)
}
