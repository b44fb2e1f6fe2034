//! Dead letters for poison, not outages or bad luck.
//!
//! A failure that may be the endpoint's — a transport error, 408, 421, 425, 429, 5xx — never
//! marks a request as poison on its own. It counts toward `maxAttempts` only when all of this
//! holds: the request fails on its own (`core::backoff`: more misses in a row than random loss
//! makes at the endpoint's rate, while others were answered), the failure is a status the
//! server gave (a lost answer says nothing of the request), and the endpoint gave a *proper
//! answer* (a submit answered with a verdict or `accepted`, `core::endpoint`) since this
//! request's previous failure. While the endpoint fails every request, no failure counts. A
//! query's answer is not a proper answer: a server whose write path is down answers them.
//!
//! The time of a request's first counted failure is kept too: `maxAttempts` counted failures
//! dead-letter it only once `deadLetterAfterMs` has passed since then. Both live in memory, so a
//! reload starts the window again (later, never sooner); the count itself is in the ledger.

use std::collections::BTreeMap;

use super::model::Millis;

/// What the dead-letter rule knows of each failing request.
#[derive(Clone, Copy, Debug)]
struct Watch {
    /// The endpoint's proper-answer count at this request's previous failure.
    answers_seen: u64,
    /// When a failure of this request first counted in this session.
    first_counted: Option<Millis>,
}

/// The failing requests and what the endpoint had answered at their last failure.
#[derive(Debug, Default)]
pub(crate) struct PoisonWatch {
    requests: BTreeMap<String, Watch>,
}

impl PoisonWatch {
    /// A failure of `request_id` that may be the endpoint's (transport, 408, 425, 429, 5xx),
    /// when the endpoint has given `answers` proper answers in all
    /// (`EndpointHealth::answers`): whether it answered some request properly since this
    /// request's previous failure.
    pub(crate) fn outage_class_failure(&mut self, request_id: &str, answers: u64) -> bool {
        match self.requests.get_mut(request_id) {
            Some(watch) => {
                let counts = watch.answers_seen != answers;
                watch.answers_seen = answers;
                counts
            }
            None => {
                self.requests.insert(
                    request_id.to_owned(),
                    Watch {
                        answers_seen: answers,
                        first_counted: None,
                    },
                );
                false
            }
        }
    }

    /// A failure of `request_id` counted at `now`, with `answers` proper answers so far:
    /// returns how long ago its first counted failure was (0 for this one).
    pub(crate) fn counted(&mut self, request_id: &str, answers: u64, now: Millis) -> Millis {
        let watch = self.requests.entry(request_id.to_owned()).or_insert(Watch {
            answers_seen: answers,
            first_counted: None,
        });
        watch.answers_seen = answers;
        let first = *watch.first_counted.get_or_insert(now);
        now.saturating_sub(first)
    }

    /// Moves every first-counted time `by` ms earlier (the wall clock went back by that much).
    pub(crate) fn shift_earlier(&mut self, by: Millis) {
        for watch in self.requests.values_mut() {
            watch.first_counted = watch.first_counted.map(|at| at.saturating_sub(by));
        }
    }

    #[cfg(test)]
    /// The first counted failure of `request_id` in this session, if any (for `explain`).
    pub(crate) fn first_counted(&self, request_id: &str) -> Option<Millis> {
        self.requests.get(request_id).and_then(|w| w.first_counted)
    }

    /// `request_id` is resolved, dead-lettered or gone.
    pub(crate) fn forget(&mut self, request_id: &str) {
        self.requests.remove(request_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k1_failures_count_only_when_the_endpoint_answered_since_the_last_one() {
        let mut watch = PoisonWatch::default();
        assert!(
            !watch.outage_class_failure("r1", 0),
            "a first failure proves nothing"
        );
        assert!(
            !watch.outage_class_failure("r1", 0),
            "nothing answered: an outage"
        );
        assert!(
            watch.outage_class_failure("r1", 1),
            "others are answered: poison"
        );
        assert!(!watch.outage_class_failure("r1", 1));
        assert_eq!(watch.counted("r1", 1, 1_000), 0);
        assert_eq!(watch.counted("r1", 1, 61_000), 60_000);
        assert_eq!(watch.first_counted("r1"), Some(1_000));
        watch.forget("r1");
        assert_eq!(watch.first_counted("r1"), None);
        assert!(!watch.outage_class_failure("r1", 1));
    }
}
