//! The pump: due retries first, then up to `pump_budget` ready operations in
//! sequence order; each is checked against the upload lane and canvas claims, compiled,
//! frozen and launched behind the persist barrier.

use super::{Attempt, Scheduler, Stage};
use crate::digest::body_digest;
use crate::host::{Host, WireBody};
use crate::io::Effect;
use crate::ledger::{Compact, Ledger};
use crate::model::{
    EventKind, FrozenRequest, Millis, Operation, OperationPhase, RequestPhase, RetryAction,
    PROTOCOL_VERSION, RUN_CANCEL_KIND, UPLOAD_KIND,
};
use crate::safe_error::SafeError;
use std::collections::{BTreeMap, BTreeSet};

fn sorted_unique(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids.dedup();
    ids
}

/// Notes `op` as a dependent of each of its dependencies' targets (index and recovery share
/// this): resolving the target wakes it, and a target with dependents is never superseded.
pub(super) fn add_dependents(
    dependents: &mut BTreeMap<String, BTreeSet<String>>,
    ledger: &Ledger,
    op: &Operation,
) {
    for dependency in &op.intent.dependencies {
        dependents
            .entry(ledger.dependency_target(dependency).to_owned())
            .or_default()
            .insert(op.intent.id.clone());
    }
}

/// Least time between two compaction slices carried by busy batches (a slice is up to
/// `SLICE_LIMIT` operations, so up to about 1 000 a second are compacted while work goes on;
/// the rest waits for a quiet moment).
const BUSY_SLICE_MS: Millis = 250;

/// Settled operations in the working stores past which every batch carries a slice.
const COMPACT_BACKLOG: usize = 32;

/// How long after an enqueue the user counts as at work: meanwhile the main thread is theirs
/// (a drag enqueues every frame): no folds, and while more than `ACTIVE_BACKLOG` settled
/// operations wait, no quiet slices back to back (after a 2,000-record drag they took 15 ms
/// a frame for seconds, in the page) and a backlog's slices ride batches at most
/// every `ACTIVE_SLICE_GAP_MS`.
pub const ACTIVE_MS: Millis = 500;

/// Least time between two slices a held-back backlog sends with batches while the user is
/// at work (slices stay full size: small ones make small tombstone pages).
const ACTIVE_SLICE_GAP_MS: Millis = 100;

/// Settled operations waiting past which a backlog's slices are spaced while the user works
/// (two slices' worth: what per-batch slices keep up with in a burst).
const ACTIVE_BACKLOG: usize = 512;

impl<H: Host> Scheduler<H> {
    /// Adds an operation to the dependents index (once) and queues it if ready.
    pub(super) fn index(&mut self, id: &str) {
        let Some(op) = self.ledger.operation(id) else {
            return;
        };
        if op.phase != OperationPhase::Pending {
            return;
        }
        // One lookup for all of it (the coalesce, dependents and ready checks share it).
        let ready = self.is_ready_op(op).then_some(op.intent.sequence);
        if self.indexed.insert(id.to_owned()) {
            if let (Some(key), None) = (&op.intent.coalesce_key, &op.request_id) {
                // Indexed as enqueued (or unblocked): this one is the key's latest.
                self.coalescible.insert(key.clone(), id.to_owned());
            }
            add_dependents(&mut self.dependents, &self.ledger, op);
        }
        if let Some(sequence) = ready {
            self.ready.push(sequence, id);
        }
    }

    /// Pending, unblocked, not carried by an unresolved request, every dependency resolved.
    pub(super) fn is_ready(&self, id: &str) -> bool {
        self.ledger
            .operation(id)
            .is_some_and(|op| self.is_ready_op(op))
    }

    pub(super) fn is_ready_op(&self, op: &Operation) -> bool {
        op.is_open()
            && op
                .request_id
                .as_deref()
                .and_then(|r| self.ledger.request(r))
                .is_none_or(|r| !r.is_unresolved())
            && op
                .intent
                .dependencies
                .iter()
                .all(|d| self.ledger.dependency_met(d))
    }

    pub(super) fn consider_ready(&mut self, id: &str) {
        if let Some(op) = self.ledger.operation(id) {
            if self.is_ready_op(op) {
                let sequence = op.intent.sequence;
                self.ready.push(sequence, id);
            }
        }
    }

    /// Re-offers woken operations; they keep their reservations until they leave waiting.
    pub(super) fn wake(&mut self, woken: Vec<(u64, String)>) {
        for (_, id) in woken {
            self.consider_ready(&id);
        }
    }

    /// Drops an operation's canvas reservation (it left the waiting state).
    pub(super) fn unwait(&mut self, id: &str) {
        if let Some((sequence, canvases)) = self.waiting.remove(id) {
            let woken = self.claims.unwait(sequence, id, &canvases);
            self.wake(woken);
        }
    }

    /// Blocks an operation for the host: it never blocks the others.
    pub(super) fn block_operation(&mut self, now: Millis, id: &str, reason: &str) {
        self.ledger.block_operation(id, reason);
        self.unwait(id);
        let request_id = self
            .ledger
            .operation(id)
            .and_then(|op| op.request_id.clone());
        self.event(
            EventKind::Blocked,
            now,
            None,
            Some(id),
            Some(reason.to_owned()),
        );
        self.report(crate::io::Report::Blocked {
            operation_id: id.to_owned(),
            request_id,
            reason: reason.to_owned(),
        });
    }

    /// One pump pass. Does nothing while held, stopped, offline or not leading; while storage
    /// fails, only due retries that need no write go (`storage`).
    pub(super) fn pump(&mut self, now: Millis) {
        if !self.may_dispatch() {
            self.withdraw_ahead(now);
            if self.persist.trouble.is_some() && self.sending_open() {
                self.run_due_retries(now);
            }
            return;
        }
        self.yielded = false;
        self.counters.passes += 1;
        // What was frozen ahead takes the free slots first: the send follows the answer
        // that freed the slot in the same turn, without waiting for a commit.
        self.promote_ahead(now);
        // Due retries run before new ready work.
        self.run_due_retries(now);
        // Examine at most `pump_budget` ready operations, then yield.
        let mut budget = self.ready.len().min(self.config.pump_budget);
        while self.has_room() && budget > 0 {
            budget -= 1;
            let Some((_, id)) = self.ready.pop() else {
                break;
            };
            self.counters.scanned += 1;
            self.examine(now, &id);
        }
        if !self.ready.is_empty() && self.has_room() {
            self.yielded = true;
        }
        self.sync_timer(now);
    }

    /// Launches due retries while slots are free (they go before new ready work).
    fn run_due_retries(&mut self, now: Millis) {
        while self.occupied() < self.config.concurrency {
            let Some(entry) = self.retries.pop_due(now) else {
                break;
            };
            let Some(request) = self.ledger.request(&entry.request_id) else {
                self.retries.cancel(&entry.request_id);
                continue;
            };
            if !request.is_unresolved()
                || request.blocked.is_some()
                || self.active.contains_key(&request.id)
            {
                self.retries.cancel(&entry.request_id);
                continue;
            }
            if !self.lane_free(&request.kind) {
                self.deferred.insert(entry.request_id.clone(), entry);
                continue;
            }
            self.retries.cancel(&entry.request_id);
            self.counters.retried += 1;
            self.launch(now, &entry.request_id, entry.action);
        }
    }

    /// Tries to freeze and launch one ready operation.
    pub(super) fn examine(&mut self, now: Millis, id: &str) {
        if !self.is_ready(id) {
            self.counters.raced += 1;
            return;
        }
        let Some(op) = self.ledger.operation(id) else {
            return;
        };
        let intent = op.intent.clone();
        if self.other_principal(&intent.principal) {
            // Another principal's work is never frozen or sent under ours.
            return;
        }
        let kind = intent.operation_type.clone();
        if !self.may_freeze(&kind) {
            self.lane_waiters.insert(intent.sequence, id);
            return;
        }
        let canvases = match self.ask_host(|host, reads| host.participants(&intent, reads)) {
            Ok(list) => sorted_unique(list),
            Err(error) => return self.compile_failed(now, id, error),
        };
        if canvases.is_empty() && kind != UPLOAD_KIND && kind != RUN_CANCEL_KIND {
            return self.block_operation(now, id, "missing_participants");
        }
        let occupied = self.claims.occupied(intent.sequence, &canvases);
        if !occupied.is_empty() || self.held_for_coalescing(now, id) {
            // Wait on the claimed canvases and reserve the rest against later operations
            // (held back for `coalesceMs`: wait on its own canvases, reserving them all).
            self.claims.wait(intent.sequence, id, &canvases);
            self.waiting
                .insert(id.to_owned(), (intent.sequence, canvases));
            return;
        }
        let request_id = self.host.create_request_id();
        let compiled = match self.ask_host(|host, reads| host.compile(&intent, &request_id, reads))
        {
            Ok(compiled) => compiled,
            Err(error) => return self.compile_failed(now, id, error),
        };
        if sorted_unique(compiled.canvas_ids.clone()) != canvases {
            return self.block_operation(now, id, "participant_mismatch");
        }
        let members = self.gather_batch(now, &intent, &compiled, &canvases, &request_id);
        let kind = compiled.kind.unwrap_or(kind);
        let mut operation_ids = vec![id.to_owned()];
        operation_ids.extend(members.iter().map(|m| m.intent.id.clone()));
        let mut revisions = vec![intent.revision];
        revisions.extend(members.iter().map(|m| m.intent.revision));
        let payload = if members.is_empty() {
            compiled.payload.clone()
        } else {
            Self::batch_payload(&intent, &compiled.payload, &members)
        };
        let body = WireBody {
            id: &request_id,
            operation_ids: &operation_ids,
            kind: &kind,
            owner_canvas_id: compiled.owner_canvas_id.as_deref(),
            run_id: compiled.run_id.as_deref(),
            protocol_version: compiled.protocol_version.unwrap_or(PROTOCOL_VERSION),
            payload: &payload,
            canvas_ids: &canvases,
            expected_versions: &compiled.expected_versions,
        };
        let body = serde_json::to_string(&body).unwrap_or_default();
        let request = FrozenRequest {
            id: request_id.clone(),
            operation_ids,
            kind,
            owner_canvas_id: compiled.owner_canvas_id,
            run_id: compiled.run_id,
            protocol_version: compiled.protocol_version.unwrap_or(PROTOCOL_VERSION),
            canvas_ids: canvases.clone(),
            expected_versions: compiled.expected_versions,
            digest: body_digest(&body),
            body,
            principal: intent.principal.clone(),
            revisions,
            phase: RequestPhase::Frozen,
            attempt: 0,
            failures: 0,
            retry_at: None,
            retry_action: None,
            outcome: None,
            error: None,
            canonical: None,
            blocked: None,
            frozen_at: now,
        };
        self.ledger.freeze(request);
        if let Err(error) = self.claims.claim(&request_id, &canvases) {
            // Unreachable by construction (checked above); never send on a conflict.
            self.report(crate::io::Report::Error(error));
            return;
        }
        self.unwait(id);
        self.counters.claimed += 1;
        self.event(EventKind::Claimed, now, Some(&request_id), Some(id), None);
        for member in &members {
            self.unwait(&member.intent.id);
            self.counters.claimed += 1;
            self.event(
                EventKind::Claimed,
                now,
                Some(&request_id),
                Some(&member.intent.id),
                None,
            );
        }
        self.launch(now, &request_id, RetryAction::Submit);
    }

    /// Calls a host hook with the scheduler as it stands, for the host's reads (see
    /// [`Host`]); while it runs the scheduler is busy, not idle.
    pub(super) fn ask_host<T>(&mut self, hook: impl FnOnce(&H, &Self) -> T) -> T {
        self.in_hook = true;
        let out = hook(&self.host, self);
        self.in_hook = false;
        out
    }

    fn compile_failed(&mut self, now: Millis, id: &str, error: SafeError) {
        // The message is the blocker (`compile_failed` if none), and it is reported.
        let reason = if error.message.trim().is_empty() {
            "compile_failed".to_owned()
        } else {
            error.message.clone()
        };
        self.report_error(
            crate::error::ErrorCode::InvalidIntent,
            format!("compile failed for {id}: {reason}"),
        );
        self.block_operation(now, id, &reason);
    }

    /// Counts the attempt in the ledger and waits for it to be durable before sending.
    /// While storage fails, a request whose dispatch marker is durable goes at once, counted in
    /// memory, while the lease lasts; any other waits for storage (`storage`).
    pub(super) fn launch(&mut self, now: Millis, request_id: &str, action: RetryAction) {
        if self.active.contains_key(request_id) {
            return;
        }
        if self.persist.trouble.is_some() {
            return self.launch_unwritten(now, request_id, action);
        }
        if !self.may_dispatch() {
            return;
        }
        let Some(kind) = self.ledger.request(request_id).map(|r| r.kind.clone()) else {
            return;
        };
        self.ledger.mark_sent(request_id, action);
        self.lease.renew_wanted = true;
        self.next_attempt += 1;
        let barrier = self.want_barrier();
        let stage = if self.occupied() < self.config.concurrency {
            Stage::Barrier(barrier)
        } else {
            Stage::Ahead(barrier)
        };
        if matches!(stage, Stage::Ahead(_)) {
            // Never sent yet; if the page goes before it is, recovery submits it again.
            self.ledger
                .schedule_retry(request_id, now, RetryAction::Submit);
        }
        self.active.insert(
            request_id.to_owned(),
            Attempt {
                id: self.next_attempt,
                action,
                kind,
                stage,
                denied: None,
                sent_at: None,
            },
        );
        self.maybe_flush(now);
    }

    fn launch_unwritten(&mut self, now: Millis, request_id: &str, action: RetryAction) {
        if !self.sending_open() || !self.sendable_unwritten(now, request_id) {
            // It waits for storage: the first write that succeeds offers it again.
            return;
        }
        let Some(kind) = self.ledger.request(request_id).map(|r| r.kind.clone()) else {
            return;
        };
        self.ledger.mark_sent(request_id, action);
        self.next_attempt += 1;
        self.active.insert(
            request_id.to_owned(),
            Attempt {
                id: self.next_attempt,
                action,
                kind,
                stage: Stage::Barrier(self.persist.durable),
                denied: None,
                sent_at: None,
            },
        );
        self.send(now, request_id);
    }

    /// Gives free slots to requests frozen ahead, oldest first. One whose freeze is durable
    /// is sent now if the lease renewed with it (or since) is unexpired; otherwise it waits
    /// in its slot for its batch, or for a new one that renews the lease and proves the fence.
    fn promote_ahead(&mut self, now: Millis) {
        while self.occupied() < self.config.concurrency {
            let Some((id, batch)) = self
                .active
                .iter()
                .filter_map(|(id, a)| match a.stage {
                    Stage::Ahead(batch) => Some((a.id, id, batch)),
                    _ => None,
                })
                .min()
                .map(|(_, id, batch)| (id.clone(), batch))
            else {
                return;
            };
            let durable = batch <= self.persist.durable;
            let lease_current = self
                .ledger
                .lease()
                .is_some_and(|l| Some(l.fence) == self.lease.fence && l.expires_at > now);
            let stage = if durable && !lease_current {
                self.lease.renew_wanted = true;
                let renewal = self.want_barrier();
                self.maybe_flush(now);
                Stage::Barrier(renewal)
            } else {
                Stage::Barrier(batch)
            };
            if let Some(attempt) = self.active.get_mut(&id) {
                attempt.stage = stage;
            }
            if durable && lease_current {
                self.send(now, &id);
            }
        }
    }

    /// Sending stopped (held, offline, stopped, storage failed or lease lost): requests frozen
    /// ahead leave their places and are submitted again later (this session never sent them).
    pub(super) fn withdraw_ahead(&mut self, now: Millis) {
        for id in self.attempts_in(|stage| matches!(stage, Stage::Ahead(_))) {
            self.active.remove(&id);
            self.retries.schedule(&id, now, RetryAction::Submit);
        }
    }

    /// Settling this turn's answers, before their batch goes: a resolved request's canvases and
    /// dependents go now, to what is frozen into the batch that writes its answer. Nothing
    /// frozen there is sent before that batch is durable, so the server still sees them
    /// in order, and a crash or a failed write loses both together.
    fn release_answered(&mut self, now: Millis) {
        let answered = std::mem::take(&mut self.persist.answered);
        if answered.is_empty() || self.persist.trouble.is_some() || !self.is_running() {
            return;
        }
        for id in answered {
            let completing = self
                .active
                .get(&id)
                .is_some_and(|a| matches!(a.stage, Stage::Completing(_)));
            if completing {
                self.release_request(&id);
            }
        }
        self.pump(now);
    }

    /// A slot (and maybe the upload lane) freed: re-offer deferred retries and lane waiters.
    pub(super) fn slot_freed(&mut self) {
        for entry in std::mem::take(&mut self.deferred).into_values() {
            self.retries.requeue(entry);
        }
        if self.lane_free(UPLOAD_KIND) {
            for (_, id) in std::mem::take(&mut self.lane_waiters) {
                self.consider_ready(&id);
            }
        }
    }

    /// Group commit: the turn ended; write what it changed in one batch.
    pub fn commit(&mut self, now: Millis) {
        self.persist.commit_requested = false;
        self.release_answered(now);
        self.persist.committing = true;
        self.maybe_flush(now);
        self.persist.committing = false;
        self.sync_timer(now);
    }

    /// Emits the open batch if nothing is being written (one transaction in flight at a time).
    pub(super) fn maybe_flush(&mut self, now: Millis) {
        // Held enqueues wait for their write (`after_held_call`) unless a commit is under way.
        if let Some(due) = self.persist.write_due {
            if now < due && !self.persist.committing {
                return;
            }
            self.persist.write_due = None;
        }
        if self.persist.commit_requested && !self.persist.committing {
            return;
        }
        if self.persist.in_flight.is_some()
            || !self.may_write(now)
            || self.lease.fenced
            || self.lifecycle == super::Lifecycle::Closed
        {
            return;
        }
        let trouble = self.persist.trouble.is_some();
        if trouble {
            // A try of failing storage: it renews the lease (so sending may go on once it is
            // written) and goes even with nothing else to write.
            self.lease.renew_wanted = true;
            self.persist.barrier_wanted = true;
        }
        let lease_write = if self.lease.renew_wanted && self.lease.fence.is_some() {
            Some(crate::io::LeaseWrite::Renew {
                expires_at: now + self.config.lease_ms,
            })
        } else {
            None
        };
        // While the user works: no fold, and no quiet slices while the backlog is past what
        // slices keep up with (a drag's superseded versions); a burst's last page still
        // goes in the quiet moment after it.
        let active = self.user_active(now);
        let held_back = active && self.ledger.settled_count() > ACTIVE_BACKLOG;
        let quiet = self.is_quiet() && !held_back;
        let fold = self.ledger.wants_fold() && quiet && !active;
        // Retention: a slice of its own while quiet, with every batch when the policy keeps
        // nothing whole (compacted as it settles), and while busy with a batch at most every
        // BUSY_SLICE_MS, so that what settles past the policy is compacted within about a
        // second even while work never stops (a reopen reads no settled history).
        let busy_due = self
            .persist
            .busy_slice_at
            .is_none_or(|at| now >= at.saturating_add(BUSY_SLICE_MS));
        // Past COMPACT_BACKLOG settled operations a slice goes with the next batch anyway:
        // tombstone pages stay a few dozen long, and a tab closed right after a burst leaves
        // few settled operations for the next open to read. While the user works and the
        // backlog is past what slices keep up with (a drag's superseded versions: tens of
        // thousands), at most one every ACTIVE_SLICE_GAP_MS, so a drag's frames do not each
        // pay for a slice; a burst's backlog stays small, and its slices go with every batch.
        let backlog_due = !held_back
            || self
                .persist
                .busy_slice_at
                .is_none_or(|at| now >= at.saturating_add(ACTIVE_SLICE_GAP_MS));
        // After a slice that compacted nothing (a burst's settled operations waiting for the
        // rest of their pages), the next waits for BUSY_SLICE_MS like any busy one.
        let backlog = self.ledger.settled_count() >= COMPACT_BACKLOG
            && backlog_due
            && !self.ledger.last_slice_idle();
        // A try of failing storage writes only what waits: the smallest write that can work.
        let fold = fold && !trouble;
        let compact = (self.is_leader()
            && !trouble
            && (quiet || busy_due || backlog || self.config.retain.keeps_nothing())
            && self.ledger.wants_compaction(now))
        .then_some(Compact {
            now,
            window: !quiet,
        });
        if !self.ledger.has_changes()
            && !self.persist.barrier_wanted
            && lease_write.is_none()
            && !fold
            && (!quiet || compact.is_none())
        {
            return;
        }
        if self.config.group_commit && !self.persist.committing {
            // Everything changed in this turn goes into the one transaction `commit()` writes.
            if !self.persist.commit_requested {
                self.persist.commit_requested = true;
                self.effects.push_back(Effect::CommitSoon);
            }
            return;
        }
        let no = self.persist.next_no;
        self.persist.next_no += 1;
        self.persist.in_flight = Some(no);
        self.persist.barrier_wanted = false;
        self.persist.try_now = false;
        self.persist.write_due = None;
        self.lease.renew_wanted = false;
        if compact.is_some() && !quiet {
            self.persist.busy_slice_at = Some(now);
        }
        let batch = self
            .ledger
            .take_batch_at(no, self.lease.fence, lease_write, fold, compact);
        self.effects.push_back(Effect::Persist(batch));
    }
}
