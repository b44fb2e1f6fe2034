//! The authorization step as an effect out and a verdict in: before every send the core asks
//! [`Effect::Authorize`] and waits; [`Scheduler::on_authorized`] reads the host's verdict.
//!
//! - Allowed: the attempt goes on the wire.
//! - The check failed (the hook threw, or answered anything but `{allowed: boolean}`):
//!   nothing is sent, and the attempt is retried like any unresolved one.
//! - Denied, for a request the server cannot have (its first submit): rejected for good.
//! - Denied, for a request the server may already have (any earlier attempt, a query due, or
//!   accepted): the attempt becomes a query. The server's own verdict settles it; if the
//!   server has no record of it, the request is blocked `unauthorized` (with the denial's
//!   reason) for the host to retry or discard, never rejected: a 404 does not prove a late
//!   copy of an earlier submit will not arrive (as `revise` holds), and a change the
//!   server kept is never reported rejected.

use super::{Scheduler, Stage};
use crate::host::{Authorization, Host};
use crate::io::{AttemptId, AttemptOutcome, AttemptStatus};
use crate::model::{FrozenRequest, Millis, RequestPhase, RetryAction};
use crate::protocol::{NOT_FOUND, UNAUTHORIZED};

impl<H: Host> Scheduler<H> {
    /// The host's verdict on the [`Effect::Authorize`](crate::io::Effect::Authorize)
    /// of `attempt`. A verdict for an attempt that is no longer waiting (stopped, fenced,
    /// storage failed) changes nothing.
    pub fn on_authorized(&mut self, now: Millis, attempt: AttemptId, verdict: Authorization) {
        if !self.is_running() || self.lease.fenced {
            return;
        }
        self.follow_clock(now);
        let Some((request_id, action)) = self
            .active
            .iter()
            .find(|(_, a)| a.id == attempt && a.stage == Stage::Authorizing)
            .map(|(id, a)| (id.clone(), a.action))
        else {
            return;
        };
        let Some(request) = self.ledger.request(&request_id).cloned() else {
            self.active.remove(&request_id);
            self.slot_freed();
            self.sync_timer(now);
            return;
        };
        if !self.may_send_now(now, &request_id)
            || !request.is_unresolved()
            || request.blocked.is_some()
        {
            // Held, offline, discarded or resolved while the host decided.
            self.unsent(now, &request);
        } else {
            match verdict {
                Authorization::Allowed => self.dispatch(attempt, action, request),
                Authorization::Unavailable(message) => {
                    let status = AttemptStatus::authorization_unavailable(&message);
                    self.answer_locally(now, &request_id, action, status);
                }
                Authorization::TimedOut(timeout_ms) => {
                    let status = AttemptStatus::hook_timeout("authorize", timeout_ms);
                    self.answer_locally(now, &request_id, action, status);
                }
                Authorization::Denied(reason) if may_have_been_received(&request, action) => {
                    if let Some(active) = self.active.get_mut(&request_id) {
                        active.denied = Some(reason);
                    }
                    self.dispatch(attempt, RetryAction::Query, request);
                }
                Authorization::Denied(reason) => {
                    let status = AttemptStatus::denied(&reason);
                    self.answer_locally(now, &request_id, action, status);
                }
            }
        }
        self.sync_timer(now);
    }

    /// The answer to the query a denial asked for: the server's own verdict if it has the
    /// request (applied, rejected, still processing); if it has no record of it yet, the
    /// request waits blocked `unauthorized` with the denial as its error (claims kept, no
    /// retry, the host decides: `resume()`/`retry()` check again, `discard()` gives up), since
    /// the denied body may not be sent again and a late copy may still apply; otherwise (no
    /// answer) the query is retried, and the check runs again first.
    pub(super) fn after_denial(status: AttemptStatus, reason: &str) -> AttemptStatus {
        let not_yet_received = status.outcome == AttemptOutcome::Unresolved
            && status.blocked.is_none()
            && status.error.as_ref().is_some_and(|e| e.code == NOT_FOUND);
        if not_yet_received {
            AttemptStatus {
                error: AttemptStatus::denied(reason).error,
                blocked: Some(UNAUTHORIZED.to_owned()),
                ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
            }
        } else {
            status
        }
    }
}

/// Whether the server may hold `request`: an attempt before this one, a query due, or an
/// answer that it is still processing. (`attempt` counts this attempt: 1 is the first.)
pub(super) fn may_have_been_received(request: &FrozenRequest, action: RetryAction) -> bool {
    action == RetryAction::Query || request.attempt > 1 || request.phase == RequestPhase::Accepted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safe_error::SafeError;

    fn request(attempt: u32, phase: RequestPhase) -> FrozenRequest {
        FrozenRequest {
            attempt,
            phase,
            ..FrozenRequest::default()
        }
    }

    #[test]
    fn k3_only_a_first_submit_cannot_have_been_received() {
        assert!(!may_have_been_received(
            &request(1, RequestPhase::Dispatched),
            RetryAction::Submit
        ));
        assert!(may_have_been_received(
            &request(2, RequestPhase::Dispatched),
            RetryAction::Submit
        ));
        assert!(may_have_been_received(
            &request(1, RequestPhase::Dispatched),
            RetryAction::Query
        ));
        assert!(may_have_been_received(
            &request(1, RequestPhase::Accepted),
            RetryAction::Submit
        ));
    }

    #[test]
    fn k3_a_denial_after_a_404_blocks_for_the_host_and_never_rejects() {
        type S = Scheduler<crate::host::CountingHost>;
        let not_found = AttemptStatus {
            error: Some(SafeError::new(NOT_FOUND, "unknown key")),
            ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
        };
        let denied = S::after_denial(not_found, "read-only");
        assert_eq!(denied.outcome, AttemptOutcome::Unresolved);
        assert_eq!(denied.blocked.as_deref(), Some(UNAUTHORIZED));
        let error = denied.error.unwrap();
        assert_eq!(
            (error.code.as_str(), error.message.as_str()),
            ("authorization_denied", "read-only")
        );
        for outcome in [
            AttemptOutcome::Applied,
            AttemptOutcome::Rejected,
            AttemptOutcome::Accepted,
            AttemptOutcome::Unresolved,
        ] {
            let status = AttemptStatus::outcome(outcome);
            assert_eq!(S::after_denial(status.clone(), "read-only"), status);
        }
    }
}
