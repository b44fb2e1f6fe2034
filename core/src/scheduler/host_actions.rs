//! Host actions: hold/release, resume, stop, flush, retry and
//! discard.

use super::{HoldId, Lifecycle, Scheduler, Stage};
use crate::error::{ErrorCode, SchedulerError};
use crate::host::Host;
use crate::io::{BatchNo, Effect, Report};
use crate::model::{EventKind, Millis, OperationOutcome, OperationPhase, RequestPhase, Settlement};
use crate::safe_error::SafeError;

use super::inspect::FlushOutcome;

impl<H: Host> Scheduler<H> {
    /// Acquired synchronously; nothing new starts and timers are cleared while held.
    pub fn hold(&mut self, now: Millis) -> Result<HoldId, SchedulerError> {
        if self.is_closed() {
            return Err(SchedulerError::new(
                ErrorCode::SchedulerClosed,
                "hold() after stop()",
            ));
        }
        self.next_hold += 1;
        self.holds.push(self.next_hold);
        self.withdraw_ahead(now);
        self.sync_timer(now);
        Ok(self.next_hold)
    }

    /// Releases a hold; releasing twice is harmless. The last release pumps.
    pub fn release(&mut self, now: Millis, hold: HoldId) {
        let Some(at) = self.holds.iter().position(|&held| held == hold) else {
            return;
        };
        self.holds.swap_remove(at);
        if !self.holds.is_empty() || !self.is_running() {
            return;
        }
        self.pump(now);
        self.sync_timer(now);
    }

    /// Writes again now (storage failing or not: the scheduler also tries on its own, see
    /// `storage`); once durable, release resolved requests and reschedule the rest, blocked
    /// `unauthorized` ones included. Returns the barrier to await, or `None` when not running.
    pub fn resume(&mut self, now: Millis) -> Option<BatchNo> {
        if !self.is_running() || self.lease.fenced {
            return None;
        }
        self.persist.try_now = true;
        self.ledger.require_strict();
        let barrier = self.want_barrier();
        self.resume_barrier = Some(barrier);
        self.maybe_flush(now);
        self.sync_timer(now);
        Some(barrier)
    }

    /// The host's "retry now" (`retryAllNow()`): every backoff starts again, failures from
    /// here are judged afresh, and every scheduled retry is due now, including waits the
    /// server asked for. Blocked requests (unauthorized, dead letters) stay as they are:
    /// `resume()` and `retry(id)` are for them.
    pub fn retry_all_now(&mut self, now: Millis) {
        self.health.restart();
        self.backoff.reset();
        let scheduled: Vec<String> = self
            .ledger
            .requests()
            .filter(|r| r.retry_at.is_some())
            .map(|r| r.id.clone())
            .collect();
        self.retry_now(now, scheduled);
        if self.is_running() {
            self.pump(now);
        }
        self.sync_timer(now);
    }

    pub(super) fn reschedule_after_resume(&mut self, now: Millis) {
        let requests: Vec<(String, bool)> = self
            .ledger
            .requests()
            .filter(|r| !self.active.contains_key(&r.id))
            .map(|r| (r.id.clone(), r.is_unresolved()))
            .collect();
        for (id, unresolved) in requests {
            if unresolved {
                // The same re-offer as at start: stored due time and action, unauthorized
                // tried again, other principals' requests left waiting.
                self.recover_request(now, &id);
            } else {
                self.release_request(&id);
            }
        }
        let indexed: Vec<String> = self.indexed.iter().cloned().collect();
        for id in indexed {
            self.consider_ready(&id);
        }
    }

    /// Final. Aborts what is on the wire, clears timers; later answers change nothing.
    pub fn stop(&mut self) {
        self.stop_releasing(true);
    }

    /// As [`Scheduler::stop`], for a page that pauses while another tab takes the lead over
    /// (it takes the lease over with a higher fence, which shuts this one out): no last
    /// write at all, not even of changes still unwritten. A write begun now commits only once
    /// the page has run its lease read's answer, and a page frozen before that (kept in the
    /// back/forward cache) holds its transaction open; Chromium evicts a cached page whose
    /// transaction another tab waits for. The host aborts the batches still being written
    /// too: what they and the unwritten changes carried is what a crash at this moment
    /// loses, and the next dispatcher recovers it (an attempt on the wire is asked about).
    pub fn stop_keeping_lease(&mut self) {
        self.stop_releasing(false);
    }

    fn stop_releasing(&mut self, release_lease: bool) {
        if self.is_closed() {
            return;
        }
        if self.is_leader() && self.persist.trouble.is_none() && release_lease {
            // Hand the ledger over at once (a reload or another tab need not wait for the
            // lease to lapse): a last fenced write with the lease expiring now, carrying
            // whatever was still unwritten. Its answer is ignored like every late callback.
            let no = self.persist.next_no;
            self.persist.next_no += 1;
            let release = crate::io::LeaseWrite::Renew { expires_at: 0 };
            let batch = self
                .ledger
                .take_batch(no, self.lease.fence, Some(release), false);
            self.effects.push_back(Effect::Persist(batch));
        }
        self.lifecycle = Lifecycle::Closed;
        for attempt in std::mem::take(&mut self.active).into_values() {
            if attempt.stage == Stage::Sending {
                self.effects.push_back(Effect::Abort(attempt.id));
            }
        }
        self.retries.clear();
        self.ready.clear();
        self.coalescing.clear();
        self.timers = Default::default();
        if self.timer.take().is_some() {
            self.effects.push_back(Effect::SetTimer(None));
        }
    }

    /// Run that operation now if it is claimable; otherwise say why.
    pub fn flush(
        &mut self,
        now: Millis,
        operation_id: &str,
    ) -> Result<FlushOutcome, SchedulerError> {
        let op = self.operation_view(operation_id).cloned().ok_or_else(|| {
            SchedulerError::new(
                ErrorCode::UnknownOperation,
                format!("no operation {operation_id}"),
            )
        })?;
        if self.is_closed() {
            return Err(SchedulerError::new(
                ErrorCode::SchedulerClosed,
                "flush() after stop()",
            ));
        }
        let mut started = false;
        if self.may_dispatch() && op.phase == OperationPhase::Pending && op.blockers.is_empty() {
            let request = op
                .request_id
                .as_deref()
                .and_then(|r| self.ledger.request(r))
                .cloned();
            match request {
                Some(request) if request.is_unresolved() => {
                    if request.blocked.is_none()
                        && !self.active.contains_key(&request.id)
                        && self.lane_free(&request.kind)
                    {
                        let action = request.next_action();
                        self.retries.cancel(&request.id);
                        self.deferred.remove(&request.id);
                        self.launch(now, &request.id, action);
                        started = self.active.contains_key(&request.id);
                    }
                }
                _ => {
                    // The host asks for it now: a `coalesceMs` hold ends here, and so does
                    // its write's wait.
                    self.coalescing.forget(operation_id);
                    self.persist.write_due = None;
                    let first_in_line = self.examine_earlier_in_line(now, &op);
                    if first_in_line
                        && self.occupied() < self.config.concurrency
                        && self.is_ready(operation_id)
                    {
                        self.ready.remove(op.intent.sequence, operation_id);
                        self.examine(now, operation_id);
                        started = self
                            .ledger
                            .operation(operation_id)
                            .and_then(|o| o.request_id.clone())
                            .is_some_and(|r| self.active.contains_key(&r));
                        if !started {
                            self.consider_ready(operation_id);
                        }
                    }
                }
            }
        }
        self.sync_timer(now);
        let explanation = self.explain(now, operation_id)?;
        Ok(FlushOutcome {
            started,
            explanation,
        })
    }

    /// Canvas order for a targeted run: the earlier ready operations a pump pass would have
    /// examined before `op` and whose canvases (as their intents list them) reach it, sharing one
    /// with it or with a later one of them (each reserves its canvases for the next), are examined
    /// first, in sequence order,
    /// so a flush never sends an operation ahead of an earlier one on the same canvas. At most
    /// a pump pass's worth; returns whether every one of them was examined.
    fn examine_earlier_in_line(&mut self, now: Millis, op: &crate::model::Operation) -> bool {
        let earlier: Vec<(u64, &str)> = self
            .ready
            .iter()
            .take_while(|(sequence, _)| *sequence < op.intent.sequence)
            .collect();
        // Latest first: an operation joins when it shares a canvas with `op` or with one
        // that joined after it.
        let mut reach: Vec<&str> = op.intent.canvas_ids.iter().map(String::as_str).collect();
        let mut connected: Vec<(u64, String)> = Vec::new();
        for &(sequence, id) in earlier.iter().rev() {
            let Some(other) = self.ledger.operation(id) else {
                continue;
            };
            let canvases = &other.intent.canvas_ids;
            if canvases.iter().any(|c| reach.contains(&c.as_str())) {
                for canvas in canvases {
                    if !reach.contains(&canvas.as_str()) {
                        reach.push(canvas);
                    }
                }
                connected.push((sequence, id.to_owned()));
            }
        }
        connected.reverse();
        let all = connected.len() <= self.config.pump_budget;
        for (sequence, id) in connected.into_iter().take(self.config.pump_budget) {
            if self.occupied() >= self.config.concurrency {
                return false;
            }
            self.ready.remove(sequence, &id);
            self.examine(now, &id);
        }
        all
    }

    /// Revises a pending operation's payload and version guards. An unfrozen intent is
    /// simply replaced. A frozen request that has not left yet is resolved `stale_revision`
    /// in the same write as the revision (its dispatch marker may land, it is never sent)
    /// and the operation is frozen again from the new intent. Once the request may have
    /// reached the server the revision is refused (`invalid_state`): sending it as it stands
    /// would drop the revision, and freezing it again would let a late copy of the first
    /// one apply it twice (a query's 404 cannot rule that out). Canvases, dependencies and
    /// kind may not change.
    pub fn revise(
        &mut self,
        now: Millis,
        input: crate::intent::IntentInput,
    ) -> Result<BatchNo, SchedulerError> {
        self.check_host_action(&input.id)?;
        crate::intent::check_fields(&input, self.config.max_payload_bytes)?;
        let op = self
            .ledger
            .operation(&input.id)
            .cloned()
            .ok_or_else(|| unknown(&input.id))?;
        if op.phase == OperationPhase::Resolved {
            return Err(invalid_state(&input.id, "it is already resolved"));
        }
        let unsent_request = match op
            .request_id
            .as_deref()
            .and_then(|r| self.ledger.request(r))
            .filter(|r| r.is_unresolved())
        {
            // Frozen: never launched. Attempt 1 waiting for its dispatch marker or its
            // authorization: not sent yet.
            Some(request)
                if request.phase == RequestPhase::Frozen
                    || (request.attempt <= 1
                        && self.active.get(&request.id).is_some_and(|a| {
                            matches!(
                                a.stage,
                                Stage::Barrier(_) | Stage::Ahead(_) | Stage::Authorizing
                            )
                        })) =>
            {
                Some(request.id.clone())
            }
            Some(_) => {
                return Err(invalid_state(
                    &input.id,
                    "its request may have reached the server; enqueue a new operation instead",
                ))
            }
            None => None,
        };
        if op.intent.canvas_ids != input.canvas_ids
            || op.intent.dependencies != input.dependencies
            || op.intent.operation_type != input.operation_type
        {
            return Err(SchedulerError::new(
                ErrorCode::InvalidIntent,
                "a revision may change only payload and expectedVersions",
            ));
        }
        self.ledger.update_operation(&input.id, |o| {
            o.intent.payload = input.payload;
            o.intent.expected_versions = input.expected_versions.unwrap_or_default();
            o.intent.revision = o.intent.revision.saturating_add(1);
        });
        if let Some(request_id) = unsent_request {
            if self.active.remove(&request_id).is_some() {
                self.slot_freed();
            }
            self.resolve_stale(now, &request_id);
        }
        Ok(self.after_call(now))
    }

    /// Clears a dead letter (or another host-resolvable block) and runs it again with the
    /// same frozen request; an unknown outcome is queried first.
    pub fn retry(&mut self, now: Millis, operation_id: &str) -> Result<BatchNo, SchedulerError> {
        self.check_host_action(operation_id)?;
        let op = self
            .ledger
            .operation(operation_id)
            .cloned()
            .ok_or_else(|| unknown(operation_id))?;
        let request = op
            .request_id
            .as_deref()
            .and_then(|r| self.ledger.request(r))
            .cloned()
            .filter(|r| r.is_unresolved());
        match request {
            Some(request)
                if request.blocked.as_deref().is_some_and(|b| {
                    b != "digest_mismatch" && b != "request_interpreter_unavailable"
                }) =>
            {
                self.ledger.update_request(&request.id, |r| {
                    r.blocked = None;
                    r.failures = 0;
                });
                for id in &request.operation_ids {
                    self.ledger
                        .update_operation(id, |o| o.blockers.retain(|b| b != "dead_letter"));
                }
                let action = request.safe_action();
                self.ledger.schedule_retry(&request.id, now, action);
                self.retries.schedule(&request.id, now, action);
                self.event(
                    EventKind::RetryScheduled,
                    now,
                    Some(&request.id),
                    Some(operation_id),
                    Some("host retry".into()),
                );
            }
            Some(_) => return Err(invalid_state(operation_id, "its request is not blocked")),
            None if !op.blockers.is_empty() => {
                self.ledger
                    .update_operation(operation_id, |o| o.blockers.clear());
                self.index(operation_id);
            }
            None => return Err(invalid_state(operation_id, "it is not blocked")),
        }
        Ok(self.after_call(now))
    }

    /// Resolves an operation as discarded. Its dependents are blocked
    /// `dependency_discarded`, never silently sent. A request that may be on the wire or
    /// retrying (not blocked) cannot be discarded.
    pub fn discard(&mut self, now: Millis, operation_id: &str) -> Result<BatchNo, SchedulerError> {
        self.check_host_action(operation_id)?;
        let op = self
            .ledger
            .operation(operation_id)
            .cloned()
            .ok_or_else(|| unknown(operation_id))?;
        if op.phase == OperationPhase::Resolved {
            return Err(invalid_state(operation_id, "it is already resolved"));
        }
        let request = op
            .request_id
            .as_deref()
            .and_then(|r| self.ledger.request(r))
            .cloned()
            .filter(|r| r.is_unresolved());
        let mut discarded = vec![operation_id.to_owned()];
        if let Some(request) = &request {
            if request.blocked.is_none() || self.active.contains_key(&request.id) {
                return Err(invalid_state(
                    operation_id,
                    "its request is on its way or waiting for a retry, so it may still reach \
                     the server; only an operation not yet frozen into a request, or one whose \
                     request is blocked (a dead letter, unauthorized) with no attempt under \
                     way, can be discarded",
                ));
            }
            self.ledger.update_request(&request.id, |r| {
                r.phase = RequestPhase::Resolved;
                r.outcome = Some(Settlement::Discarded);
                r.retry_at = None;
                r.retry_action = None;
            });
            discarded = request.operation_ids.clone();
        }
        for id in &discarded {
            self.ledger.resolve_operation(
                id,
                OperationOutcome {
                    settlement: Settlement::Discarded,
                    request_id: request.as_ref().map(|r| r.id.clone()),
                    error: Some(SafeError::new("discarded", "discarded by the host")),
                    canonical: None,
                    at: now,
                },
            );
            self.indexed.remove(id);
            self.forget_abort(id);
            self.unwait(id);
            if let Some(sequence) = self.ledger.operation(id).map(|o| o.intent.sequence) {
                self.ready.remove(sequence, id);
                self.lane_waiters.remove(sequence, id);
            }
            self.event(
                EventKind::Settled,
                now,
                request.as_ref().map(|r| r.id.as_str()),
                Some(id),
                Some("discarded".into()),
            );
            self.report(Report::Settled {
                operation_id: id.clone(),
                request_id: request.as_ref().map(|r| r.id.clone()),
                settlement: Settlement::Discarded,
                error: None,
                canonical: None,
            });
            for dependent in self.dependents_of(id) {
                if self
                    .ledger
                    .operation(&dependent)
                    .is_some_and(|o| o.phase == OperationPhase::Pending)
                {
                    self.block_operation(now, &dependent, "dependency_discarded");
                }
            }
        }
        if let Some(request) = &request {
            self.release_request(&request.id);
        }
        Ok(self.after_call(now))
    }

    /// A host action that writes (retry, discard, revise): refused after stop, and while
    /// storage is failing (it would change what a failed write left waiting; enqueues try).
    pub(super) fn check_writable(&self) -> Result<(), SchedulerError> {
        self.check_open()?;
        if let Some(trouble) = &self.persist.trouble {
            return Err(SchedulerError::new(
                ErrorCode::StorageUnavailable,
                format!(
                    "storage is failing ({}); the scheduler tries again on its own, resume() tries now",
                    trouble.error.code
                ),
            ));
        }
        Ok(())
    }

    /// Refused after `stop()`.
    pub(super) fn check_open(&self) -> Result<(), SchedulerError> {
        if self.is_closed() {
            return Err(SchedulerError::new(
                ErrorCode::SchedulerClosed,
                "the scheduler was stopped",
            ));
        }
        Ok(())
    }

    /// The end of a call that changed the ledger: its write is ordered (the barrier the call's
    /// promise waits for), and what it made ready is dispatched.
    pub(super) fn after_call(&mut self, now: Millis) -> BatchNo {
        self.persist.write_due = None;
        self.order_write(now)
    }

    /// After an enqueue whose every operation is held back by `coalesceMs` (a drag
    /// writes and sends its last position, not every one): its write waits until the first
    /// hold of the open batch would end, so the updates of a drag made meanwhile share one
    /// transaction, each replaced one written without its payload. Its promise still says
    /// durable: it resolves with that write. Any other call, or a commit already asked for,
    /// writes it at once; other writes that come up meanwhile (an answer's) wait with it, at
    /// most `coalesceMs`.
    pub(super) fn after_held_call(&mut self, now: Millis) -> BatchNo {
        let due = now.saturating_add(self.config.coalesce_ms);
        self.persist.write_due.get_or_insert(due);
        self.order_write(now)
    }

    /// Orders the call's write (now, or at `persist.write_due`) and dispatches what it made
    /// ready; the barrier is the one the call's promise waits for.
    fn order_write(&mut self, now: Millis) -> BatchNo {
        // The call's promise says its change is durable: not one a power loss may drop.
        self.ledger.require_strict();
        let barrier = self.want_barrier();
        self.maybe_flush(now);
        self.pump(now);
        self.sync_timer(now);
        barrier
    }

    /// The operations that named `id` as a dependency.
    pub(super) fn dependents_of(&self, id: &str) -> Vec<String> {
        self.dependents
            .get(id)
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn check_host_action(&self, operation_id: &str) -> Result<(), SchedulerError> {
        self.check_writable()?;
        if self.ledger.operation(operation_id).is_none() {
            // Compacted (its tombstone at hand): settled, as a whole one would say.
            if self.ledger.tombstone(operation_id).is_some() {
                return Err(invalid_state(operation_id, "it is already resolved"));
            }
            return Err(unknown(operation_id));
        }
        Ok(())
    }
}

fn unknown(operation_id: &str) -> SchedulerError {
    SchedulerError::new(
        ErrorCode::UnknownOperation,
        format!("no operation {operation_id}"),
    )
}

fn invalid_state(operation_id: &str, why: &str) -> SchedulerError {
    SchedulerError::new(
        ErrorCode::InvalidState,
        format!("operation {operation_id}: {why}"),
    )
}
