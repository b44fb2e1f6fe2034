//! The life of an attempt after launch: the persist barrier, the send checks
//! and the answer; recording the answer is in `completion`.

use super::{Scheduler, Stage};
use crate::digest::body_digest;
use crate::error::ErrorCode;
use crate::host::Host;
use crate::io::{
    AttemptId, AttemptStatus, BatchNo, Effect, PersistFailure, PersistResult, Report, SendOrder,
};
use crate::model::{EventKind, Millis, RequestPhase, RetryAction, Settlement, PROTOCOL_VERSION};
use crate::safe_error::SafeError;

impl<H: Host> Scheduler<H> {
    /// The driver finished writing batch `no`.
    pub fn on_persisted(&mut self, now: Millis, no: BatchNo, result: PersistResult) {
        if self.is_closed() || self.persist.in_flight != Some(no) {
            return; // Nothing changes after stop; stale answers are ignored.
        }
        self.follow_clock(now);
        self.persist.in_flight = None;
        match result {
            PersistResult::Done { lease } => {
                self.ledger.confirm_batch(no);
                self.persist.durable = no;
                self.take_lease(now, lease);
                self.admissions_written(no);
                self.advance_attempts(now, no);
                if self.resume_barrier.is_some_and(|b| b <= no) {
                    self.resume_barrier = None;
                    if self.persist.trouble.is_none() {
                        self.reschedule_after_resume(now);
                    }
                }
                self.storage_written(now);
                // Retention: what the batch compacted goes once its attempts have finished
                // and resolved requests are released; a compacted request holds no canvas.
                for request in self.ledger.drop_compacted() {
                    self.retries.cancel(&request.id);
                    let woken = self.claims.release(&request.id, &request.canvas_ids);
                    self.wake(woken);
                }
                self.maybe_flush(now);
                self.pump(now);
            }
            PersistResult::Failed(PersistFailure::Storage(error)) => {
                self.storage_failed(now, no, error);
            }
            PersistResult::Failed(PersistFailure::Fenced { current }) => {
                self.ledger.restore_batch(no);
                self.lose_lease(now, current);
            }
        }
        self.sync_timer(now);
    }

    fn take_lease(&mut self, now: Millis, lease: Option<crate::model::Lease>) {
        let Some(lease) = lease else { return };
        if lease.owner != self.config.owner {
            return;
        }
        if Some(lease.fence) == self.lease.fence {
            self.lease.renewed_at = now;
            self.ledger.set_lease(Some(lease));
        }
    }

    /// A newer fence exists. Stop at once: abort what is on the wire, write nothing more.
    fn lose_lease(&mut self, now: Millis, current: Option<crate::model::Lease>) {
        let was_leader = self.is_leader();
        self.lease.fenced = true;
        self.ledger.set_lease(current);
        for attempt in std::mem::take(&mut self.active).into_values() {
            if attempt.stage == Stage::Sending {
                self.effects.push_back(Effect::Abort(attempt.id));
            }
        }
        self.retries.clear();
        self.ready.clear();
        self.event(EventKind::LeaseLost, now, None, None, None);
        self.report_error(
            ErrorCode::LeaseLost,
            "another dispatcher took the lease; this one stopped",
        );
        if was_leader {
            self.report(Report::LeaderChanged {
                leader: false,
                fence: None,
            });
        }
    }

    fn advance_attempts(&mut self, now: Millis, durable: BatchNo) {
        let due: Vec<(String, Stage)> = self
            .active
            .iter()
            .filter(|(_, a)| matches!(a.stage, Stage::Barrier(b) | Stage::Completing(b) if b <= durable))
            .map(|(id, a)| (id.clone(), a.stage))
            .collect();
        for (id, stage) in due {
            match stage {
                Stage::Barrier(_) => self.send(now, &id),
                Stage::Completing(_) => self.finish(now, &id),
                Stage::Authorizing | Stage::Sending | Stage::Ahead(_) => {}
            }
        }
    }

    /// The dispatch marker is durable: check the request once more, then send it.
    pub(super) fn send(&mut self, now: Millis, request_id: &str) {
        let Some(attempt) = self.active.get(request_id).cloned() else {
            return;
        };
        let Some(request) = self.ledger.request(request_id).cloned() else {
            self.active.remove(request_id);
            return;
        };
        if !self.may_send_now(now, request_id)
            || !request.is_unresolved()
            || request.blocked.is_some()
        {
            return self.unsent(now, &request);
        }
        if body_digest(&request.body) != request.digest {
            // A body that no longer matches its digest is never sent.
            self.active.remove(request_id);
            self.block_request(now, request_id, "digest_mismatch", None);
            self.report_error(
                ErrorCode::CorruptRecord,
                format!("request {request_id} body does not match its digest"),
            );
            self.slot_freed();
            return;
        }
        if request.protocol_version != PROTOCOL_VERSION {
            self.active.remove(request_id);
            self.block_request(now, request_id, "request_interpreter_unavailable", None);
            self.slot_freed();
            return;
        }
        if self.other_principal(&request.principal) {
            // Never sent with another principal's credentials; it waits for its own.
            self.active.remove(request_id);
            self.slot_freed();
            return;
        }
        if attempt.action == RetryAction::Submit && self.revision_changed(&request) {
            self.active.remove(request_id);
            self.resolve_stale(now, request_id);
            self.slot_freed();
            return;
        }
        if self.config.authorize {
            // The host's check runs before every send; `on_authorized` carries on.
            if let Some(active) = self.active.get_mut(request_id) {
                active.stage = Stage::Authorizing;
            }
            self.effects
                .push_back(Effect::Authorize(Box::new(SendOrder {
                    attempt: attempt.id,
                    action: attempt.action,
                    request,
                })));
            return;
        }
        self.dispatch(attempt.id, attempt.action, request);
    }

    /// Held, offline or resolved meanwhile: nothing was sent; run it again later.
    pub(super) fn unsent(&mut self, now: Millis, request: &crate::model::FrozenRequest) {
        self.active.remove(&request.id);
        if request.is_unresolved() && request.blocked.is_none() {
            self.retries
                .schedule(&request.id, now, request.safe_action());
        }
        self.slot_freed();
    }

    /// Puts the attempt on the wire.
    pub(super) fn dispatch(
        &mut self,
        attempt: AttemptId,
        action: RetryAction,
        request: crate::model::FrozenRequest,
    ) {
        if let Some(active) = self.active.get_mut(&request.id) {
            active.stage = Stage::Sending;
            active.action = action;
        }
        self.effects.push_back(Effect::Send(Box::new(SendOrder {
            attempt,
            action,
            request,
        })));
    }

    /// An operation's intent was revised after freezing. Only a request never sent may be
    /// dropped and re-frozen (a 404 does not prove a late copy will not arrive).
    fn revision_changed(&self, request: &crate::model::FrozenRequest) -> bool {
        // `attempt` was counted at launch: 1 means this is the first send, still unsent.
        // (revise() refuses once a request may have left, so later sends never qualify.)
        let unsent = request.phase == RequestPhase::Frozen || request.attempt <= 1;
        unsent
            && request
                .operation_ids
                .iter()
                .zip(&request.revisions)
                .any(|(id, revision)| {
                    self.ledger
                        .operation(id)
                        .is_some_and(|op| op.intent.revision != *revision)
                })
    }

    pub(super) fn resolve_stale(&mut self, now: Millis, request_id: &str) {
        let Some(request) = self.ledger.request(request_id).cloned() else {
            return;
        };
        self.ledger.update_request(request_id, |r| {
            r.phase = RequestPhase::Resolved;
            r.outcome = Some(Settlement::Rejected);
            r.error = Some(SafeError::new(
                "stale_revision",
                "the intent was revised after freezing",
            ));
        });
        for id in &request.operation_ids {
            self.ledger.update_operation(id, |op| op.request_id = None);
        }
        self.event(
            EventKind::Settled,
            now,
            Some(request_id),
            None,
            Some("stale_revision".into()),
        );
        self.release_request(&request.id);
    }

    /// Marks a request as waiting for the host; its operations report `blocked`.
    pub(super) fn block_request(
        &mut self,
        now: Millis,
        request_id: &str,
        reason: &str,
        error: Option<SafeError>,
    ) {
        self.retries.cancel(request_id);
        let Some(request) = self.ledger.request(request_id).cloned() else {
            return;
        };
        self.ledger.update_request(request_id, |r| {
            r.blocked = Some(reason.to_owned());
            if error.is_some() {
                r.error = error.clone();
            }
        });
        self.event(
            EventKind::Blocked,
            now,
            Some(request_id),
            None,
            Some(reason.to_owned()),
        );
        for id in request.operation_ids {
            self.report(Report::Blocked {
                operation_id: id,
                request_id: Some(request_id.to_owned()),
                reason: reason.to_owned(),
            });
        }
    }

    /// Records a verdict reached without sending, exactly like an answer.
    pub(super) fn answer_locally(
        &mut self,
        now: Millis,
        request_id: &str,
        action: RetryAction,
        status: AttemptStatus,
    ) {
        if let Some(active) = self.active.get_mut(request_id) {
            active.stage = Stage::Sending;
        }
        self.complete(now, request_id, action, status);
        if self.persist.trouble.is_some() {
            return self.answered_unwritten(now, request_id);
        }
        let barrier = self.want_barrier();
        if let Some(active) = self.active.get_mut(request_id) {
            active.stage = Stage::Completing(barrier);
        }
        self.maybe_flush(now);
    }

    /// The host put the attempt on the wire (`fetch` was called, or the host's transport
    /// function): logs `dispatched` and counts the send. Headers, a blob read or a request
    /// that could not be built end an attempt before this, and then nothing says it was sent.
    /// The entry asks for no write of its own: it goes with the next batch (the answer's).
    pub fn on_sent(&mut self, now: Millis, attempt: AttemptId) {
        let Some((request_id, action, _)) = self.sending(attempt) else {
            return;
        };
        if let Some(active) = self.active.get_mut(&request_id) {
            active.sent_at = Some(now);
        }
        self.counters.sent += 1;
        self.event(
            EventKind::Dispatched,
            now,
            Some(&request_id),
            None,
            Some(action.as_str().to_owned()),
        );
    }

    /// The request an attempt on the wire carries, its action and the denial it was sent
    /// after; `None` when the attempt is over, or after stop or a lost lease.
    fn sending(&self, attempt: AttemptId) -> Option<(String, RetryAction, Option<String>)> {
        if !self.is_running() || self.lease.fenced {
            return None;
        }
        self.active
            .iter()
            .find(|(_, a)| a.id == attempt && a.stage == Stage::Sending)
            .map(|(id, a)| (id.clone(), a.action, a.denied.clone()))
    }

    /// The driver's answer to a [`SendOrder`].
    pub fn on_answer(&mut self, now: Millis, attempt: AttemptId, status: AttemptStatus) {
        // A completion after stop changes nothing.
        let Some((request_id, action, denied)) = self.sending(attempt) else {
            return;
        };
        self.follow_clock(now);
        if let Some(sent_at) = self.active.get(&request_id).and_then(|a| a.sent_at) {
            self.note_round_trip(now, sent_at, &status);
        }
        let status = match denied {
            Some(reason) => Self::after_denial(status, &reason),
            None => status,
        };
        self.complete(now, &request_id, action, status);
        if self.persist.trouble.is_some() {
            self.answered_unwritten(now, &request_id);
        } else {
            let barrier = self.want_barrier();
            if let Some(active) = self.active.get_mut(&request_id) {
                active.stage = Stage::Completing(barrier);
            }
            // Its slot is free now: what is frozen next elsewhere joins the batch that writes
            // this answer. Its canvases wait for `commit()` (group commit), which runs after
            // this turn's reports reached the host: what is compiled next on them reads the
            // outcome, and joins that batch too. (Without group commit: once it is durable.)
            if self.config.group_commit
                && self
                    .ledger
                    .request(&request_id)
                    .is_some_and(|r| !r.is_unresolved())
            {
                self.persist.answered.push(request_id.clone());
            }
            self.slot_freed();
            self.pump(now);
            self.maybe_flush(now);
        }
        self.sync_timer(now);
    }

    /// An answer recorded while writes fail: it waits in memory for the next write that
    /// succeeds (a resolved request keeps its canvases until then), and what is due and may be
    /// sent without a write goes now (`storage`).
    fn answered_unwritten(&mut self, now: Millis, request_id: &str) {
        self.active.remove(request_id);
        self.retry_unwritten(now, request_id);
        self.slot_freed();
        self.pump(now);
    }
}
