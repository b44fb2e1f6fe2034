//! What the scheduler knows of its endpoint: how often it gives a proper answer, how long a
//! round trip takes, and whether the failures of the moment are bad luck or an outage.
//!
//! A *proper answer* shows that the write path works: a submit answered with a verdict or
//! `accepted`, or with an answer too long to read (the endpoint works; the answer is the
//! fault), or a query that finds the verdict of a submit whose failure is news
//! ([`EndpointHealth::is_news`]: its answer was lost, and the write path worked then). A
//! *failure* is an attempt that may be the endpoint's: a transport error, 408, 421, 425, 429,
//! 5xx, a body that is not a protocol answer, a hook that failed. Any other answer to a query
//! is neither: a server whose write path is down still answers "never received" (404), or
//! the verdict of a request applied before its outage began.
//!
//! The failures since the last proper answer, over every request, are the endpoint's *run*.
//! A flaky endpoint makes short runs; an outage makes one long run. A run is judged an outage
//! once it is longer than random loss makes it at the rate the endpoint has shown: the
//! shortest run that happens by chance less than once in [`FAKED_ONCE_IN`] tries, given the
//! share of requests whose first attempt got a proper answer (at least [`MIN_RUN`], at most
//! [`MAX_RUN`] failures), or once it has lasted `maxMs` with at least 3 failures (at any rate
//! of attempts, a flaky endpoint answers something in that time). The bar is high because a
//! wrong call is costly: a flaky endpoint judged down makes its requests back off while each
//! attempt could succeed. An endpoint that has always answered is judged down after 3
//! failures in a row, one that failed one request in the last sixty after 5, one that
//! answers half of them after 30, and one that answers a third of them after 40. A proper
//! answer ends the run, and the outage with it.
//!
//! The share counts each request once, by its first attempt, over the last few dozen requests
//! outside outages: one request failing again and again (poison) does not make a working
//! endpoint look flaky. It starts from an even guess (1 answer in 2) that the first answers
//! soon outweigh. Everything here lives in memory: a reload starts from that guess again.

use super::model::Millis;

/// A run judged an outage happens by chance less often than once in this many tries.
pub(crate) const FAKED_ONCE_IN: u64 = 1_000_000_000;
/// The shortest run judged an outage (an endpoint that has always answered).
pub(crate) const MIN_RUN: u32 = 3;
/// The longest run needed to judge an outage (an endpoint that rarely answers).
pub const MAX_RUN: u32 = 40;
/// The guess before the first answer: 1 proper answer and 1 miss.
const PRIOR: (u32, u32) = (1, 1);
/// Once this many attempts are counted, both counts are halved (rounding down): the share
/// follows the endpoint's last few dozen attempts, and a miss long past is forgotten.
const WINDOW: u32 = 64;

/// The endpoint as the scheduler has seen it.
#[derive(Debug)]
pub(crate) struct EndpointHealth {
    /// Failures since the last proper answer, over every request.
    run: u32,
    /// Those of them that were a request's first attempt.
    first_misses: u32,
    /// When the run's first failure came.
    failing_since: Option<Millis>,
    /// When the run was judged an outage.
    judged_down_at: Option<Millis>,
    /// Proper answers and misses of requests' first attempts outside outages: the share, as
    /// of the last proper answer (a run is judged by the share seen before it).
    share: (u32, u32),
    /// Proper answers since the scheduler started (`core::backoff`, `core::poison`: whether
    /// others were answered meanwhile).
    answers: u64,
    /// The smoothed round trip of attempts the server answered (one eighth per sample).
    round_trip: Option<Millis>,
}

impl Default for EndpointHealth {
    fn default() -> Self {
        Self {
            run: 0,
            first_misses: 0,
            failing_since: None,
            judged_down_at: None,
            share: PRIOR,
            answers: 0,
            round_trip: None,
        }
    }
}

impl EndpointHealth {
    /// The endpoint gave a proper answer, to a request's `first` attempt or a later one: the
    /// run and any outage are over. The run counts toward the share only now that it proved to
    /// be bad luck: an outage tells nothing of how often the working endpoint answers.
    pub(crate) fn answered(&mut self, first: bool) {
        self.answers = self.answers.wrapping_add(1);
        if self.judged_down_at.is_none() {
            let (answers, misses) = self.share;
            let mut share = (
                answers.saturating_add(u32::from(first)),
                misses.saturating_add(self.first_misses),
            );
            while share.0.saturating_add(share.1) >= WINDOW {
                share = (share.0 / 2, share.1 / 2);
            }
            self.share = share;
        }
        self.restart();
    }

    /// Proper answers so far (any request).
    pub(crate) fn answers(&self) -> u64 {
        self.answers
    }

    /// An attempt (a request's `first` or a later one) failed in a way that may be the
    /// endpoint's, at `now`. Returns how long the endpoint has been failing when the run is
    /// (now) judged an outage, `None` while it may be bad luck. A run that has lasted
    /// `patience` ms (`maxMs`) with at least [`MIN_RUN`] failures is judged an outage however
    /// slowly its attempts came.
    pub(crate) fn failed(&mut self, now: Millis, patience: Millis, first: bool) -> Option<Millis> {
        self.run = self.run.saturating_add(1);
        self.first_misses = self.first_misses.saturating_add(u32::from(first));
        let since = *self.failing_since.get_or_insert(now);
        let long = self.run >= MIN_RUN && now.saturating_sub(since) >= patience;
        if self.judged_down_at.is_none() && (long || self.run >= self.threshold()) {
            self.judged_down_at = Some(now);
        }
        self.judged_down_at.map(|_| now.saturating_sub(since))
    }

    /// Whether what happened at `at` tells of the endpoint as it is judged now: with no run
    /// under way, anything does; during a run that may be bad luck, what happened since it
    /// began; once the run is judged an outage, what happened since that judgment.
    pub(crate) fn is_news(&self, at: Millis) -> bool {
        match (self.judged_down_at, self.failing_since) {
            (Some(judged), _) => at >= judged,
            (None, Some(since)) => at >= since,
            (None, None) => true,
        }
    }

    /// How long the endpoint has been failing, while it is judged down.
    pub(crate) fn outage_age(&self, now: Millis) -> Option<Millis> {
        self.failing_since
            .filter(|_| self.judged_down_at.is_some())
            .map(|since| now.saturating_sub(since))
    }

    /// The number of failures in a row that random loss fakes less than once in
    /// [`FAKED_ONCE_IN`] tries at the share of proper answers seen so far: the length of a run
    /// judged an outage, and of a request's own misses judged its own (`core::backoff`).
    pub(crate) fn threshold(&self) -> u32 {
        let (answers, misses) = self.share;
        let (misses, attempts) = (u64::from(misses), u64::from(answers) + u64::from(misses));
        let attempts = attempts.max(1);
        // The chance of `n` misses in a row, in parts of WHOLE.
        const WHOLE: u64 = 1_000_000_000_000;
        let mut chance = WHOLE;
        let mut n = 0;
        while chance > WHOLE / FAKED_ONCE_IN && n < MAX_RUN {
            chance = chance * misses / attempts;
            n += 1;
        }
        n.max(MIN_RUN)
    }

    /// The server answered an attempt `ms` after it left.
    pub(crate) fn round_trip_sample(&mut self, ms: Millis) {
        self.round_trip = Some(match self.round_trip {
            Some(smoothed) => smoothed - smoothed / 8 + ms / 8,
            None => ms,
        });
    }

    /// The smoothed round trip, once the server has answered.
    pub(crate) fn round_trip(&self) -> Option<Millis> {
        self.round_trip
    }

    /// Judges afresh (the network came back, the host asked to retry now): no run, no outage.
    /// The share of proper answers and the round trip stay.
    pub(crate) fn restart(&mut self) {
        self.run = 0;
        self.first_misses = 0;
        self.failing_since = None;
        self.judged_down_at = None;
    }

    /// Moves the run's start and judgment `by` ms earlier (the wall clock went back by that
    /// much).
    pub(crate) fn shift_earlier(&mut self, by: Millis) {
        self.failing_since = self.failing_since.map(|at| at.saturating_sub(by));
        self.judged_down_at = self.judged_down_at.map(|at| at.saturating_sub(by));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_share(answers: u32, attempts: u32) -> EndpointHealth {
        EndpointHealth {
            share: (answers, attempts - answers),
            ..EndpointHealth::default()
        }
    }

    #[test]
    fn the_run_judged_an_outage_is_as_long_as_random_loss_cannot_fake() {
        assert_eq!(with_share(20, 20).threshold(), MIN_RUN, "always answered");
        assert_eq!(with_share(19, 20).threshold(), 7, "0.05^7 < 10^-9 < 0.05^6");
        assert_eq!(
            with_share(16, 20).threshold(),
            13,
            "0.2^13 < 10^-9 < 0.2^12"
        );
        assert_eq!(
            with_share(13, 20).threshold(),
            20,
            "0.35^20 < 10^-9 < 0.35^19"
        );
        assert_eq!(
            with_share(10, 20).threshold(),
            30,
            "0.5^30 < 10^-9 < 0.5^29"
        );
        assert_eq!(with_share(7, 20).threshold(), MAX_RUN, "0.65^40 > 10^-9");
        assert_eq!(with_share(0, 20).threshold(), MAX_RUN, "never answered");
        assert_eq!(
            EndpointHealth::default().threshold(),
            30,
            "not yet heard: an even share"
        );
        assert_eq!(
            with_share(63, 64).threshold(),
            5,
            "one miss in the window: 0.016^5 < 10^-9"
        );
    }

    #[test]
    fn a_long_run_is_an_outage_until_a_proper_answer() {
        let mut health = with_share(20, 20);
        assert_eq!(
            health.failed(100, 60_000, true),
            None,
            "one failure is bad luck"
        );
        assert_eq!(health.failed(150, 60_000, true), None);
        assert_eq!(
            health.failed(400, 60_000, true),
            Some(300),
            "three in a row: down since the first"
        );
        assert_eq!(health.outage_age(1_100), Some(1_000));
        assert!(!health.is_news(300), "before the outage was judged");
        assert!(health.is_news(400));
        assert_eq!(health.failed(2_000, 60_000, true), Some(1_900));
        health.answered(true);
        assert_eq!(
            health.share,
            (20, 0),
            "an outage tells nothing of the share"
        );
        assert_eq!(health.answers(), 1);
        assert_eq!(health.outage_age(2_100), None);
        assert_eq!(
            health.failed(2_200, 60_000, true),
            None,
            "a new run starts as bad luck"
        );
        let mut slow = with_share(0, 20);
        assert_eq!(slow.failed(10_000, 30_000, true), None);
        assert_eq!(
            slow.failed(30_000, 30_000, true),
            None,
            "two failures are not a run"
        );
        assert_eq!(
            slow.failed(40_000, 30_000, true),
            Some(30_000),
            "three failures over maxMs: down, however slowly they came"
        );
        let before = health.threshold();
        health.answered(true);
        assert_eq!(health.share, (21, 1), "one miss, one answer");
        assert!(
            health.threshold() > before,
            "a flakier endpoint needs a longer run"
        );
    }

    #[test]
    fn the_share_follows_the_last_few_dozen_attempts() {
        let mut health = EndpointHealth::default();
        for _ in 0..100 {
            health.failed(0, 60_000, true);
            health.failed(0, 60_000, true);
            health.answered(true);
        }
        let (answers, misses) = health.share;
        assert!(answers + misses < WINDOW);
        assert!(
            misses.abs_diff(2 * answers) <= 2,
            "a third: {answers}, {misses}"
        );
        assert_eq!(health.threshold(), MAX_RUN);
        for _ in 0..200 {
            health.answered(true);
        }
        assert_eq!(health.share.1, 0, "old misses are forgotten");
        assert_eq!(health.threshold(), MIN_RUN);
    }

    #[test]
    fn the_round_trip_is_smoothed() {
        let mut health = EndpointHealth::default();
        assert_eq!(health.round_trip(), None);
        health.round_trip_sample(40);
        assert_eq!(health.round_trip(), Some(40));
        health.round_trip_sample(800);
        assert_eq!(
            health.round_trip(),
            Some(135),
            "one eighth of a slow sample"
        );
    }
}
