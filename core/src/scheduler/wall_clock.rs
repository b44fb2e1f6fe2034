//! A wall clock set back: the host's `now` is `Date.now()`, which a user or NTP may
//! move backwards at any time, while the timers the driver arms (`setTimeout`) count real time.
//! Every wait the core keeps in memory is an absolute due time on the old clock, so after the
//! clock went back by an hour a retry due in 30 s would look an hour away when its timer
//! fires, and wait that hour again.
//!
//! The core remembers the latest `now` it was given. A `now` below it means the clock went
//! back by the difference: every due time kept in memory (scheduled retries, the lease's
//! renewal, the dead-letter window, the start of the endpoint's run of failures, `coalesceMs`
//! holds) moves back by as much, so each wait keeps what was left of it in real time and stays
//! on the retry curve. Stored times (`retryAt` of a request) are not
//! rewritten: the next answer stores fresh ones, and after a reload a stored due time waits at
//! most `max(maxMs, 24 h)` (`RetryPolicy::bounded_due`). A clock moved forward needs nothing:
//! waits end early, never late.

use super::Scheduler;
use crate::host::Host;
use crate::model::Millis;

impl<H: Host> Scheduler<H> {
    /// Follows the host's clock: called with the `now` of every event that may schedule or
    /// wait (timers, answers, persists, sends, host actions).
    pub(super) fn follow_clock(&mut self, now: Millis) {
        if now < self.clock_high {
            let back = self.clock_high - now;
            self.retries.shift_earlier(back);
            self.poison.shift_earlier(back);
            self.health.shift_earlier(back);
            self.coalescing.shift_earlier(back);
            self.lease.renewed_at = self.lease.renewed_at.saturating_sub(back);
            // The armed wake-up was for the old clock: the next sync arms a fresh one.
            self.timer = None;
        }
        self.clock_high = now;
    }
}
