//! How long a failed request waits: bad luck is retried at the network's pace, an
//! outage and a request failing on its own back off.
//!
//! Each failure of a request is judged with the endpoint's state (`core::endpoint`):
//! - **Bad luck**: the endpoint is not judged down and the request has not missed as often in
//!   a row as random loss cannot fake. It waits about one round trip ([`Wait::Pace`]); its
//!   step does not grow. A flaky endpoint drains at its own pace.
//! - **Outage**: the endpoint's run of failures is longer than bad luck makes. The request
//!   backs off on the curve, one step a failure, and never waits less than the endpoint has
//!   been failing (up to `maxMs`): after `maxMs` of outage every canvas sends at most one
//!   request per `maxMs`. When the endpoint answers again the step starts over, and retries
//!   that waited on backoff alone are due at once.
//! - **Its own**: the request's *misses* (its failures in a row outside an outage) reached the
//!   endpoint's threshold, and others were answered meanwhile: it fails while the endpoint
//!   works, so it keeps to its own curve until it is resolved; other requests' answers
//!   neither reset its step nor bring it forward (a poisoned request does not retry at the
//!   healthy edits' pace). Alone on the wire, a request cannot tell its own failures from
//!   an outage; the endpoint's run judges it then. An `accepted` that never turns into a
//!   verdict, and an answer too long to read, are the request's own at once.
//!
//! A query's "never received" after a failed submit is not a proper answer (a server whose
//! write path is down answers it too): a request that was backing off resubmits after the
//! step its failure earned, never sooner; one that met bad luck resubmits at once.
//!
//! All of this lives in memory: a reload starts every request afresh. The failures counted
//! toward the dead letter (`core::poison`) are in the ledger and never reset here.

use std::collections::{BTreeMap, BTreeSet};

use super::model::Millis;

/// The wait a failure earned, before jitter and before any wait the server asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Bad luck: about one round trip.
    Pace,
    /// Backing off: the curve's `step`, and no less than `floor` ms (how long the endpoint
    /// has been failing, in an outage).
    Backoff {
        /// The step on the curve (0 for the first).
        step: u32,
        /// The shortest wait.
        floor: Millis,
    },
}

/// What the pacing knows of one failing request.
#[derive(Clone, Copy, Debug, Default)]
struct Pacing {
    /// Failures in a row outside an outage.
    misses: u32,
    /// The endpoint's proper answers at the first of them.
    answers_at_first_miss: u64,
    /// The step of the next backoff.
    step: u32,
    /// Failing on its own: it keeps its curve until resolved.
    own: bool,
    /// When its first failed submit was answered.
    submit_failed_at: Option<Millis>,
}

/// The pacing of requests waiting to be retried.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    requests: BTreeMap<String, Pacing>,
    /// Requests whose scheduled retry waits on the scheduler's own wait alone (not one the
    /// server or the host chose): those may go at once when the endpoint answers again.
    waiting: BTreeSet<String>,
}

impl Backoff {
    /// A failure of `request_id` that may be the endpoint's. `outage` is how long the endpoint
    /// has been failing when it is judged down (`None`: it may be bad luck); `threshold` is
    /// the misses in a row that random loss cannot fake (`EndpointHealth::threshold`), and
    /// `answers` the endpoint's proper answers so far.
    pub(crate) fn fail(
        &mut self,
        request_id: &str,
        outage: Option<Millis>,
        threshold: u32,
        answers: u64,
    ) -> Wait {
        let pacing = self.requests.entry(request_id.to_owned()).or_default();
        if outage.is_none() {
            if pacing.misses == 0 {
                pacing.answers_at_first_miss = answers;
            }
            pacing.misses = pacing.misses.saturating_add(1);
            pacing.own |= pacing.misses >= threshold && answers != pacing.answers_at_first_miss;
        }
        if pacing.own || outage.is_some() {
            let step = pacing.step;
            pacing.step = step.saturating_add(1);
            Wait::Backoff {
                step,
                floor: outage.unwrap_or(0),
            }
        } else {
            Wait::Pace
        }
    }

    /// A submit of `request_id` failed at `now` (it may still have been applied, its answer
    /// lost).
    pub(crate) fn submit_failed(&mut self, request_id: &str, now: Millis) {
        let pacing = self.requests.entry(request_id.to_owned()).or_default();
        pacing.submit_failed_at.get_or_insert(now);
    }

    /// When the first failed submit of `request_id` was answered, if one failed: a verdict a
    /// query finds later was reached by that submit or a later one, so the write path worked
    /// at that time or after it.
    pub(crate) fn submit_failed_at(&self, request_id: &str) -> Option<Millis> {
        self.requests.get(request_id)?.submit_failed_at
    }

    /// A failure that is the request's own whatever the endpoint does (an `accepted` that is
    /// not yet a verdict, an answer too long to read): it backs off on its own curve.
    pub(crate) fn own_failure(&mut self, request_id: &str) -> Wait {
        let pacing = self.requests.entry(request_id.to_owned()).or_default();
        pacing.own = true;
        let step = pacing.step;
        pacing.step = step.saturating_add(1);
        Wait::Backoff { step, floor: 0 }
    }

    /// A query found `request_id` never received: the wait its last failure earned when it was
    /// backing off (`floor`: how long the endpoint has been failing, in an outage), `None`
    /// when it met bad luck (it may go at once).
    pub(crate) fn never_received(&self, request_id: &str, floor: Option<Millis>) -> Option<Wait> {
        let pacing = self.requests.get(request_id)?;
        let step = pacing.step.checked_sub(1)?;
        (pacing.own || floor.is_some()).then_some(Wait::Backoff {
            step,
            floor: floor.unwrap_or(0),
        })
    }

    /// The retry of `request_id` is scheduled; `ours` when its due time is the scheduler's own
    /// wait, not a longer one the server (`Retry-After`) or the host (`retryAt`) chose.
    pub(crate) fn scheduled(&mut self, request_id: &str, ours: bool) {
        if ours {
            self.waiting.insert(request_id.to_owned());
        } else {
            self.waiting.remove(request_id);
        }
    }

    /// Whether `request_id` fails on its own (`core::poison` counts only such failures).
    pub(crate) fn is_own(&self, request_id: &str) -> bool {
        self.requests.get(request_id).is_some_and(|p| p.own)
    }

    /// The endpoint answered: every step starts again, except those of requests failing on
    /// their own. Returns the requests whose scheduled retry waited on the scheduler's own
    /// wait (they may go now).
    pub(crate) fn reset(&mut self) -> Vec<String> {
        for pacing in self.requests.values_mut().filter(|p| !p.own) {
            pacing.step = 0;
        }
        let requests = &self.requests;
        let (due, kept): (Vec<String>, Vec<String>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|id| !requests.get(id).is_some_and(|p| p.own));
        self.waiting = kept.into_iter().collect();
        due
    }

    /// `request_id` is resolved or gone: forget it.
    pub(crate) fn forget(&mut self, request_id: &str) {
        self.requests.remove(request_id);
        self.waiting.remove(request_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEP0: Wait = Wait::Backoff { step: 0, floor: 0 };

    #[test]
    fn s10_bad_luck_keeps_the_pace_and_an_outage_backs_off() {
        let mut backoff = Backoff::default();
        for answers in 0..4 {
            assert_eq!(backoff.fail("r1", None, 5, answers), Wait::Pace, "bad luck");
        }
        assert_eq!(
            backoff.fail("r1", Some(700), 5, 4),
            Wait::Backoff {
                step: 0,
                floor: 700
            },
            "the endpoint is down: back off, no less than it has been down"
        );
        assert_eq!(
            backoff.fail("r1", Some(2_000), 5, 4),
            Wait::Backoff {
                step: 1,
                floor: 2_000
            }
        );
        assert_eq!(
            backoff.never_received("r1", Some(2_100)),
            Some(Wait::Backoff {
                step: 1,
                floor: 2_100
            }),
            "a 404 after the failed submit keeps the step it earned"
        );
        backoff.scheduled("r1", true);
        assert_eq!(
            backoff.reset(),
            ["r1"],
            "the endpoint answered: r1 goes now"
        );
        assert_eq!(
            backoff.fail("r1", None, 5, 5),
            STEP0,
            "the fifth miss in a row outside the outage: its own, from the first step"
        );
        assert!(backoff.is_own("r1"));
    }

    #[test]
    fn s10_alone_on_the_wire_a_request_is_never_its_own() {
        let mut backoff = Backoff::default();
        for _ in 0..10 {
            assert_eq!(backoff.fail("r1", None, 3, 7), Wait::Pace);
        }
        assert!(!backoff.is_own("r1"), "nobody else was answered meanwhile");
        assert_eq!(backoff.fail("r1", None, 3, 8), STEP0, "now someone was");
    }

    #[test]
    fn k1_a_request_failing_on_its_own_keeps_its_curve() {
        let mut backoff = Backoff::default();
        for answers in 0..2 {
            assert_eq!(backoff.fail("p", None, 3, answers), Wait::Pace);
        }
        assert_eq!(backoff.never_received("p", None), None, "bad luck: at once");
        assert_eq!(backoff.fail("p", None, 3, 2), STEP0);
        assert_eq!(
            backoff.fail("p", None, 3, 3),
            Wait::Backoff { step: 1, floor: 0 }
        );
        backoff.scheduled("p", true);
        backoff.scheduled("q", true);
        assert_eq!(backoff.fail("q", None, 3, 3), Wait::Pace);
        assert_eq!(backoff.reset(), ["q"], "p waits its step out");
        assert_eq!(
            backoff.fail("p", None, 3, 4),
            Wait::Backoff { step: 2, floor: 0 },
            "poison keeps its step"
        );
        backoff.forget("p");
        assert!(!backoff.is_own("p"));
        assert_eq!(backoff.own_failure("a"), STEP0, "accepted: its own curve");
        assert_eq!(
            backoff.own_failure("a"),
            Wait::Backoff { step: 1, floor: 0 }
        );
    }

    #[test]
    fn s10_a_wait_the_server_chose_is_not_brought_forward() {
        let mut backoff = Backoff::default();
        backoff.fail("r", Some(0), 3, 0);
        backoff.scheduled("r", false);
        assert!(backoff.reset().is_empty());
    }
}
