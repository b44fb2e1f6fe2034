//! A batch aborted as a whole: the server answered every operation of a request `batch_aborted`
//! ("not applied, only because another member failed"), so none of them is to blame: the
//! server's transaction failed (a serialization failure, a deadlock, a restart). Nothing was
//! applied and the key is spent, so each operation is frozen again under a new key, as after
//! any `batch_aborted`; unlike a batch with a member to blame, nothing settled, so sending them
//! again at once would make the same batch for ever, one request a round trip.
//!
//! Such an answer is a failure that may be the endpoint's, judged like any other
//! (`core::endpoint`: bad luck or an outage; `core::backoff`): it is no proper answer, so it
//! neither ends the endpoint's run of failures nor resets anyone's backoff. Each operation goes
//! again alone, no sooner than the wait the failure earned (held back as `coalesceMs` holds
//! are: on its own canvases, so per-canvas order holds). Its pacing follows the operation across
//! its new keys: an operation aborted again and again while others are answered backs off on
//! its own curve. Aborts never count toward the dead letter: the server kept nothing, and the
//! operation is sent again for as long as it takes, at most about once per `maxMs` in an
//! outage. This lives in memory: after a reload an operation may be batched once more.

use super::Scheduler;
use crate::host::Host;
use crate::io::{AttemptOutcome, AttemptStatus, OperationVerdict};
use crate::jitter;
use crate::model::{EventKind, FrozenRequest, Millis};
use crate::protocol::BATCH_ABORTED;

/// Whether an operation's verdict is `batch_aborted`: not applied, for another's failure.
pub(super) fn is_aborted(verdict: &OperationVerdict) -> bool {
    verdict
        .error
        .as_ref()
        .is_some_and(|e| e.code == BATCH_ABORTED)
}

/// Whether `status` aborts `request` as a whole: a verdict in which every operation of the
/// request answers `batch_aborted` (so none of them failed on its own).
pub(super) fn aborts_every_operation(request: &FrozenRequest, status: &AttemptStatus) -> bool {
    matches!(
        status.outcome,
        AttemptOutcome::Applied | AttemptOutcome::Rejected
    ) && !request.operation_ids.is_empty()
        && request.operation_ids.iter().all(|id| {
            status
                .operations
                .iter()
                .any(|v| &v.operation_id == id && is_aborted(v))
        })
}

impl<H: Host> Scheduler<H> {
    /// `request_id` was aborted as a whole (`aborts_every_operation`): resolve it (its
    /// operations are freed, `settle`), judge the failure, and hold each operation back until
    /// the wait it earned; it then goes alone.
    pub(super) fn aborted_as_a_whole(
        &mut self,
        now: Millis,
        request_id: &str,
        status: AttemptStatus,
    ) {
        let Some(request) = self.ledger.request(request_id).cloned() else {
            return;
        };
        let first = self.is_first_attempt(request_id);
        let (retry_after_ms, retry_at) = (status.retry_after_ms, status.retry_at);
        self.settle(now, request_id, status);
        let threshold = self.health.threshold();
        let answers = self.health.answers();
        let outage = self.health.failed(now, self.config.retry.max_ms, first);
        // One draw for the request: its operations come due together and go in their order.
        let draw = jitter::draw(request_id, request.attempt);
        for id in &request.operation_ids {
            let wait = self.abort_pacing.fail(id, outage, threshold, answers);
            let retry = &self.config.retry;
            let earned = retry.earned(wait, self.health.round_trip(), draw);
            let ours = retry_at.is_none() && retry_after_ms.is_none_or(|after| after <= earned);
            let due = retry.due_at(now, earned, retry_after_ms, retry_at);
            self.abort_pacing.scheduled(id, ours);
            self.alone.insert(id.clone());
            self.coalescing.hold(id, due);
            self.event(
                EventKind::RetryScheduled,
                now,
                Some(request_id),
                Some(id),
                Some(format!("submit at {due} after {BATCH_ABORTED}")),
            );
        }
    }

    /// Whether `id` was aborted as a whole and goes alone from now on.
    pub(super) fn goes_alone(&self, id: &str) -> bool {
        self.alone.contains(id)
    }

    /// Whether `id` is held back after an abort (not for `coalesceMs`).
    pub(super) fn paced_after_abort(&self, id: &str) -> bool {
        self.alone.contains(id) && self.coalescing.end_of(id).is_some()
    }

    /// The endpoint gave a proper answer: operations held back on the scheduler's own wait
    /// after an abort may go now, as retries do (`Backoff::reset`), except those aborted on
    /// their own.
    pub(super) fn abort_waits_over(&mut self) {
        for id in self.abort_pacing.reset() {
            if self.coalescing.end_of(&id).is_some() {
                self.coalescing.forget(&id);
                self.consider_ready(&id);
            }
        }
    }

    /// `id` is resolved or gone: forget its abort pacing.
    pub(super) fn forget_abort(&mut self, id: &str) {
        self.alone.remove(id);
        self.abort_pacing.forget(id);
    }
}
