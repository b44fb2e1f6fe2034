//! Storage that fails and recovers by itself.
//!
//! A failed write (a full quota, an aborted transaction, a closed database) puts the
//! scheduler in trouble, reported once ([`Report::StorageFailed`]). What the failed batch
//! carried stays in memory and is written again, except the enqueues it carried: they are
//! refused and taken back (`refusal`). Meanwhile:
//!
//! - storage is tried again on a backoff of its own ([`StorageTrouble::retry_at`], the named
//!   wake-up `sync_timer` arms); an enqueue or `resume()` tries at once;
//! - requests whose dispatch marker is durable are still sent and their answers recorded in
//!   memory, while the lease last written is unexpired (the fence: a leader that cannot renew stops
//!   sending when its lease ends); nothing is frozen, since a freeze must be durable before
//!   its first send;
//! - claims stay held; host actions other than enqueue are refused (`storage_unavailable`).
//!
//! The first write that succeeds ends it ([`Report::StorageRecovered`]): resolved requests are
//! released and the rest rescheduled, as after `resume()`.

use super::{Scheduler, Stage};
use crate::error::ErrorCode;
use crate::host::Host;
use crate::io::{BatchNo, Report};
use crate::model::Millis;
use crate::safe_error::SafeError;

/// The first wait before storage is tried again; it doubles with each failure.
pub(super) const STORAGE_RETRY_BASE_MS: Millis = 1_000;

/// The longest wait between two tries.
pub const STORAGE_RETRY_MAX_MS: Millis = 15_000;

/// How many refused ranges [`Refusals`] remembers (older barriers are long answered).
const REFUSALS_KEPT: usize = 64;

/// Writes are failing.
#[derive(Clone, Debug)]
pub(super) struct StorageTrouble {
    /// The last storage error.
    pub error: SafeError,
    /// Failed writes in a row.
    pub failures: u32,
    /// When storage is tried again.
    pub retry_at: Millis,
}

/// The wait after `failures` failed writes in a row: 1 s, 2 s, 4 s, 8 s, then 15 s.
pub fn storage_retry_delay(failures: u32) -> Millis {
    let doublings = failures.saturating_sub(1).min(4);
    (STORAGE_RETRY_BASE_MS << doublings).min(STORAGE_RETRY_MAX_MS)
}

/// Batch numbers whose write failed, as inclusive ranges: a barrier among them says "not
/// written" for good (`barrier_state`): an enqueue's was refused, a host action's change
/// waits in memory for the next write that succeeds.
#[derive(Debug, Default)]
pub(super) struct Refusals {
    ranges: Vec<(BatchNo, BatchNo)>,
}

impl Refusals {
    fn add(&mut self, from: BatchNo, to: BatchNo) {
        match self.ranges.last_mut() {
            Some(last) if from <= last.1.saturating_add(1) => last.1 = last.1.max(to),
            _ => self.ranges.push((from, to)),
        }
        if self.ranges.len() > REFUSALS_KEPT {
            self.ranges.remove(0);
        }
    }

    pub(super) fn covers(&self, barrier: BatchNo) -> bool {
        self.ranges
            .iter()
            .any(|(from, to)| (*from..=*to).contains(&barrier))
    }
}

impl<H: Host> Scheduler<H> {
    /// Whether writes are failing (until one succeeds).
    pub fn is_storage_failing(&self) -> bool {
        self.persist.trouble.is_some()
    }

    /// The error storage last failed with, while it is failing.
    pub fn storage_error(&self) -> Option<&SafeError> {
        self.persist.trouble.as_ref().map(|t| &t.error)
    }

    /// When storage is tried again, while it is failing.
    pub fn storage_retry_at(&self) -> Option<Millis> {
        self.persist.trouble.as_ref().map(|t| t.retry_at)
    }

    /// A batch failed with a storage error: its enqueues are refused and taken back, its other
    /// changes wait in memory, and storage is tried again on the backoff.
    pub(super) fn storage_failed(&mut self, now: Millis, no: BatchNo, error: SafeError) {
        self.ledger.restore_batch(no);
        // Every enqueue not yet written is refused: the one this batch carried and those
        // waiting for the next (they would depend on it, or replace what it replaced).
        self.refuse_admissions();
        let from = self.persist.durable.saturating_add(1);
        self.persist.refused.add(from, self.persist.next_no);
        // The open batch's number is spent: what is asked from now on waits for the next.
        self.persist.next_no += 1;
        self.persist.try_now = false;
        self.persist.answered.clear();
        let first = self.persist.trouble.is_none();
        let failures = self
            .persist
            .trouble
            .as_ref()
            .map_or(1, |t| t.failures.saturating_add(1));
        self.persist.trouble = Some(StorageTrouble {
            error: error.clone(),
            failures,
            retry_at: now.saturating_add(storage_retry_delay(failures)),
        });
        self.withdraw_unwritten(now);
        if first {
            self.report(Report::StorageFailed {
                error: error.clone(),
            });
            self.report_error(
                ErrorCode::StorageUnavailable,
                format!(
                    "{}: {} (nothing lost; the scheduler tries again on its own)",
                    error.code, error.message
                ),
            );
        }
    }

    /// Attempts that waited for the failed write (a dispatch marker, an answer's record, an
    /// authorization) leave their places; claims stay held. Retries go on in memory: a request
    /// whose dispatch marker is durable may be sent again while the lease lasts.
    fn withdraw_unwritten(&mut self, now: Millis) {
        // An answer whose write failed may have let its canvases go (`commit()`): they are
        // held again until a write records it.
        for id in self.attempts_in(|stage| matches!(stage, Stage::Completing(_))) {
            if let Some(request) = self.ledger.request(&id) {
                let free: Vec<String> = request
                    .canvas_ids
                    .iter()
                    .filter(|c| self.claims.holder(c).is_none())
                    .cloned()
                    .collect();
                let _ = self.claims.claim(&id, &free);
            }
        }
        for id in self.attempts_in(|stage| *stage != Stage::Sending) {
            self.active.remove(&id);
            self.retry_unwritten(now, &id);
        }
        self.slot_freed();
    }

    /// An attempt ended while writes fail: an unresolved request is retried at its stored due
    /// time (now if none); a resolved one keeps its claims until a write records it.
    pub(super) fn retry_unwritten(&mut self, now: Millis, id: &str) {
        let Some(request) = self.ledger.request(id) else {
            return;
        };
        if request.is_unresolved() && request.blocked.is_none() {
            let due = request.retry_at.unwrap_or(now);
            let action = request.next_action();
            self.retries.schedule(id, due, action);
        }
    }

    /// A write succeeded: if storage was failing, it works again.
    pub(super) fn storage_written(&mut self, now: Millis) {
        if self.persist.trouble.take().is_none() {
            return;
        }
        self.report(Report::StorageRecovered);
        // Answers recorded meanwhile are durable now: resolved requests let their canvases
        // go, the rest are offered again (as `resume()` does).
        self.reschedule_after_resume(now);
    }

    /// Whether a batch may be written now: always, unless storage is failing and neither the
    /// retry is due nor a call asked to try now.
    pub(super) fn may_write(&self, now: Millis) -> bool {
        match &self.persist.trouble {
            Some(trouble) => self.persist.try_now || now >= trouble.retry_at,
            None => true,
        }
    }

    /// Whether request `id` may be sent while writes fail: its dispatch marker is durable and
    /// the lease last written is ours and unexpired.
    pub(super) fn sendable_unwritten(&self, now: Millis, id: &str) -> bool {
        self.ledger.marker_durable(id)
            && self
                .ledger
                .lease()
                .is_some_and(|l| Some(l.fence) == self.lease.fence && l.expires_at > now)
    }

    /// Whether this attempt of request `id` may go on the wire now.
    pub(super) fn may_send_now(&self, now: Millis, id: &str) -> bool {
        if self.persist.trouble.is_some() {
            self.sending_open() && self.sendable_unwritten(now, id)
        } else {
            self.may_dispatch()
        }
    }
}
