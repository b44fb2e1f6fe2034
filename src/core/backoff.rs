//! Backoff that follows the endpoint (S10): a request's wait grows with its failures since the
//! endpoint last answered properly, not with every attempt it ever made.
//!
//! A failed attempt of a request is its *step*; the wait is `retry.delay(step)`. A proper
//! answer from the endpoint (a verdict) shows it is up again: every step goes back to 0 and
//! retries waiting on backoff alone are due now. Going `online` and the host's `retryAllNow()`
//! do the same. A query's "never received" after a failed submit is *not* such an answer (a
//! server whose write path is down still answers it, K1): the submit it sends waits the step
//! the failure earned. A wait the server asked for (`Retry-After`) raises the wait but still
//! earns a step; like one the host set (`retryAt`), only `retryAllNow()` moves it. A request
//! whose last failure counted toward its dead letter (`core::poison`: the endpoint answered
//! others meanwhile) failed on its own: another request's verdict neither resets its step nor
//! brings its retry forward, so a poisoned request keeps to its backoff curve.
//!
//! Steps live in memory: a reload starts every request at step 0. The failures counted toward
//! the dead letter (K1) are the request's own, in the ledger, and are never reset here.

use std::collections::{BTreeMap, BTreeSet};

/// Backoff steps of requests waiting to be retried.
#[derive(Debug, Default)]
pub struct Backoff {
    /// Request id → failed attempts since the endpoint last answered.
    steps: BTreeMap<String, u64>,
    /// Requests whose scheduled retry waits on backoff alone.
    waiting: BTreeSet<String>,
    /// Requests that failed on their own (a failure counted toward the dead letter, K1).
    own: BTreeSet<String>,
}

impl Backoff {
    /// Counts a failed attempt of `request_id` and returns its step (0 for the first failure
    /// since the endpoint last answered). `chosen_wait` is true when the server or the host
    /// chose the wait: it still earns a step (K1: `Retry-After: 0` cannot keep the wait short),
    /// but the retry no longer waits on backoff alone.
    /// `own` is true when the failure counted toward the dead letter: from then on until the
    /// request is forgotten, its step survives [`Backoff::reset`].
    pub fn fail(&mut self, request_id: &str, chosen_wait: bool, own: bool) -> u32 {
        let step = self.steps.get(request_id).copied().unwrap_or(0);
        self.steps
            .insert(request_id.to_owned(), step.saturating_add(1));
        // Once a request failed on its own it stays so until it is resolved: an outage-class
        // failure in between proves nothing about the request.
        if own {
            self.own.insert(request_id.to_owned());
        }
        if chosen_wait || self.own.contains(request_id) {
            self.waiting.remove(request_id);
        } else {
            self.waiting.insert(request_id.to_owned());
        }
        u32::try_from(step).unwrap_or(u32::MAX)
    }

    /// A query found `request_id` never received: the step its last failure earned (`None`
    /// if it has not failed since the endpoint last answered: then it may go at once). The
    /// resubmit waits on backoff alone unless `chosen_wait`.
    pub fn never_received(&mut self, request_id: &str, chosen_wait: bool) -> Option<u32> {
        let step = self.steps.get(request_id).copied()?.checked_sub(1)?;
        if chosen_wait {
            self.waiting.remove(request_id);
        } else {
            self.waiting.insert(request_id.to_owned());
        }
        Some(u32::try_from(step).unwrap_or(u32::MAX))
    }

    /// The endpoint answered: every step starts again, except those of requests failing on
    /// their own. Returns the requests whose scheduled retry waited on backoff alone (they may
    /// go now).
    pub fn reset(&mut self) -> Vec<String> {
        let kept: Vec<(String, u64)> = self
            .own
            .iter()
            .filter_map(|id| self.steps.get(id).map(|s| (id.clone(), *s)))
            .collect();
        self.steps.clear();
        for (id, step) in kept {
            self.steps.insert(id, step);
        }
        let waiting = self.waiting.iter().cloned().collect();
        self.waiting.clear();
        waiting
    }

    /// `request_id` is resolved or gone: forget it.
    pub fn forget(&mut self, request_id: &str) {
        self.steps.remove(request_id);
        self.waiting.remove(request_id);
        self.own.remove(request_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s10_steps_grow_with_failures_and_start_again_when_the_endpoint_answers() {
        let mut backoff = Backoff::default();
        assert_eq!(backoff.fail("r1", false, false), 0);
        assert_eq!(backoff.fail("r1", false, false), 1);
        assert_eq!(
            backoff.fail("r1", true, false),
            2,
            "K1: a chosen wait still earns a step"
        );
        assert_eq!(backoff.fail("r1", false, false), 3);
        assert_eq!(
            backoff.never_received("r1", false),
            Some(3),
            "K1: a 404 after the failed submit keeps the step it earned"
        );
        assert_eq!(backoff.never_received("r3", false), None);
        assert_eq!(backoff.fail("r2", true, false), 0);
        assert_eq!(backoff.fail("p", false, false), 0);
        assert_eq!(backoff.fail("p", false, true), 1);
        assert_eq!(backoff.reset(), ["r1"], "only r1 waits on backoff alone");
        assert_eq!(backoff.fail("r1", false, false), 0);
        assert_eq!(
            backoff.fail("p", false, false),
            2,
            "K1: poison keeps its step"
        );
        assert_eq!(backoff.reset(), ["r1"], "p waits its step out");
        assert_eq!(backoff.fail("p", false, false), 3);
        backoff.forget("r1");
        backoff.forget("p");
        assert!(backoff.reset().is_empty());
    }
}
