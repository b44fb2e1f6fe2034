//! Scheduler options, validated once.

use super::backoff::Wait;
use super::error::{ErrorCode, SchedulerError};
use super::jitter;
use super::model::Millis;
use super::retention::RetentionPolicy;

/// Default payload limit for one intent, in serialized JSON bytes (documented in docs/options.md).
pub(crate) const DEFAULT_MAX_PAYLOAD_BYTES: usize = 256 * 1024;

/// The longest wait a server (`Retry-After`, `retryAfterMs`) or the host (`classifyError`'s
/// `retryAt`) can impose, unless `retry.maxMs` is longer: one day.
pub(crate) const MAX_WAIT_FLOOR_MS: Millis = 86_400_000;

/// The shortest pace of retries after bad luck (unless `retry.baseMs` is shorter): an
/// endpoint on the same machine answers within a millisecond, and retries are still spaced.
pub(crate) const MIN_PACE_MS: Millis = 20;

/// The latest time the ledger ever stores: JS numbers are exact integers up to 2^53 - 1, and
/// the browser store refuses a record holding a larger one.
pub const MAX_TIME: Millis = (1 << 53) - 1;

/// Retry delays and the attempt bound (the `retry` option: a member left out takes its
/// default, and `maxMs` at least 30 s or `baseMs`, as the module's reader does).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(from = "RetryOptions")]
pub struct RetryPolicy {
    /// First backoff step (500 ms), and the longest pace of retries after bad luck.
    pub base_ms: Millis,
    /// Backoff ceiling (30 000 ms).
    pub max_ms: Millis,
    /// Failed attempts before a request is dead-lettered.
    pub max_attempts: u32,
    /// The shortest time over which `max_attempts` counted failures may dead-letter a
    /// request (default 10 minutes), timed from its first counted failure.
    pub dead_letter_after_ms: Millis,
}

/// The default `retry.deadLetterAfterMs`: 10 minutes.
pub const DEFAULT_DEAD_LETTER_AFTER_MS: Millis = 600_000;

/// The `retry` option as given.
#[derive(serde::Deserialize)]
struct RetryOptions {
    #[serde(rename = "baseMs")]
    base_ms: Option<Millis>,
    #[serde(rename = "maxMs")]
    max_ms: Option<Millis>,
    #[serde(rename = "maxAttempts")]
    max_attempts: Option<u32>,
    #[serde(rename = "deadLetterAfterMs")]
    dead_letter_after_ms: Option<Millis>,
}

impl From<RetryOptions> for RetryPolicy {
    fn from(given: RetryOptions) -> Self {
        let defaults = Self::default();
        let base_ms = given.base_ms.unwrap_or(defaults.base_ms);
        Self {
            base_ms,
            max_ms: given.max_ms.unwrap_or(defaults.max_ms.max(base_ms)),
            max_attempts: given.max_attempts.unwrap_or(defaults.max_attempts),
            dead_letter_after_ms: given
                .dead_letter_after_ms
                .unwrap_or(defaults.dead_letter_after_ms),
        }
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            base_ms: 500,
            max_ms: 30_000,
            max_attempts: 20,
            dead_letter_after_ms: DEFAULT_DEAD_LETTER_AFTER_MS,
        }
    }
}

impl RetryPolicy {
    /// The backoff curve: `min(max, base · 2^min(step, 6))`, at least 1 ms.
    pub fn delay(&self, step: u32) -> Millis {
        let factor = 1u64 << step.min(6);
        self.base_ms.saturating_mul(factor).min(self.max_ms).max(1)
    }

    /// The pace of retries after bad luck: the endpoint's smoothed round trip (`baseMs` before
    /// the first answer), no less than [`MIN_PACE_MS`] and no more than `baseMs`.
    pub fn pace(&self, round_trip: Option<Millis>) -> Millis {
        round_trip
            .unwrap_or(self.base_ms)
            .clamp(MIN_PACE_MS.min(self.base_ms), self.base_ms)
            .max(1)
    }

    /// The wait a failure earned (`core::backoff`), with jitter: `draw` is in
    /// `0..jitter::SCALE` (`core::jitter`, from the request and its attempt). Bad luck waits
    /// from half to one and a half times the pace; backing off waits the curve's step (or
    /// the floor, up to `maxMs`) plus up to a quarter more, so a wait at the cap is never
    /// shorter than `maxMs` and requests that failed together do not retry together.
    pub fn earned(&self, wait: Wait, round_trip: Option<Millis>, draw: u64) -> Millis {
        let draw = draw.min(jitter::SCALE - 1);
        match wait {
            Wait::Pace => {
                let pace = self.pace(round_trip);
                (pace / 2 + pace.saturating_mul(draw) / jitter::SCALE).max(1)
            }
            Wait::Backoff { step, floor } => {
                let step = self.delay(step).max(floor.min(self.max_ms));
                step.saturating_add(step.saturating_mul(draw) / (4 * jitter::SCALE))
            }
        }
    }

    /// The longest wait anything from outside may ask for: `max(maxMs, 24 h)`.
    pub fn max_wait(&self) -> Millis {
        self.max_ms.max(MAX_WAIT_FLOOR_MS)
    }

    /// The absolute due time of the next attempt, `earned` ms from `now` by the
    /// scheduler's own pacing ([`RetryPolicy::earned`]). The server's `Retry-After` wins, then
    /// the host's `retryAt`, then the earned wait; `Retry-After` only raises the wait, never
    /// below what was earned; a wait from outside is clamped to
    /// [`RetryPolicy::max_wait`], every sum saturates, and the result is at least `now + 1`
    /// and never past [`MAX_TIME`], so the record that stores it is always storable.
    pub fn due_at(
        &self,
        now: Millis,
        earned: Millis,
        retry_after_ms: Option<Millis>,
        retry_at: Option<Millis>,
    ) -> Millis {
        let wait = match (retry_after_ms, retry_at) {
            (Some(after), _) => after.min(self.max_wait()).max(earned),
            (None, Some(at)) => at.saturating_sub(now),
            (None, None) => earned,
        };
        now.saturating_add(wait.clamp(1, self.max_wait()))
            .min(MAX_TIME)
    }

    /// The due time of an attempt that may go at once (a resubmit after a query's "never
    /// received" with no failure behind it), later only if the server asked (clamped).
    pub fn due_at_once(&self, now: Millis, retry_after_ms: Option<Millis>) -> Millis {
        let wait = retry_after_ms.unwrap_or(0).min(self.max_wait()).max(1);
        now.saturating_add(wait).min(MAX_TIME)
    }

    /// A due time read back from storage (or anywhere else), no later than a full wait
    /// from `now`: a ledger written with a far-future `retryAt` does not wait for ever.
    pub fn bounded_due(&self, now: Millis, stored: Millis) -> Millis {
        stored
            .min(now.saturating_add(self.max_wait()))
            .min(MAX_TIME)
    }
}

/// The default `batch.maxOperations`: on by default, since a canvas editor's changes come in
/// bursts (a selection moved, a paste, a drag's last frame), and a request each costs a round
/// trip and a server transaction each. A server that cannot take batches declines them, and the
/// scheduler falls back to one operation a request (`scheduler::batch`).
pub const DEFAULT_BATCH_MAX_OPERATIONS: usize = 32;

/// The default `batch.maxBytes`: the payload bytes of one batch.
pub const DEFAULT_BATCH_MAX_BYTES: usize = 64 * 1024;

/// The default `coalesceMs`: two frames at 60 Hz, so a drag's updates of one record (same
/// `coalesceKey`) replace each other before one is written and sent. Only intents with a
/// `coalesceKey` are held.
pub(crate) const DEFAULT_COALESCE_MS: Millis = 32;

/// Limits for request batching (several operations in one frozen request): on by default
/// ([`DEFAULT_BATCH_MAX_OPERATIONS`], [`DEFAULT_BATCH_MAX_BYTES`]); a member of the `batch`
/// option left out takes its default, and `maxOperations: 1` turns batching off.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct BatchLimits {
    /// Most operations in one request; 1 disables batching.
    #[serde(rename = "maxOperations", default = "batch_max_operations")]
    pub max_operations: usize,
    /// Most payload bytes in one request.
    #[serde(rename = "maxBytes", default = "batch_max_bytes")]
    pub max_bytes: usize,
    /// The operation types that may batch (exact names); `None`: every kind that can
    /// (see `scheduler::batch`: uploads and runs never do).
    #[serde(rename = "kinds", default)]
    pub kinds: Option<Vec<String>>,
}

fn batch_max_operations() -> usize {
    DEFAULT_BATCH_MAX_OPERATIONS
}

fn batch_max_bytes() -> usize {
    DEFAULT_BATCH_MAX_BYTES
}

impl BatchLimits {
    /// No batching: one operation a request.
    pub fn off() -> Self {
        Self {
            max_operations: 1,
            ..Self::default()
        }
    }
}

impl Default for BatchLimits {
    fn default() -> Self {
        Self {
            max_operations: batch_max_operations(),
            max_bytes: batch_max_bytes(),
            kinds: None,
        }
    }
}

/// Everything the core needs to know about its host's choices. Its derive reads the data
/// options of `Scheduler.open` under their JS names (a member left out keeps its default); the
/// hooks, `database`, `endpoint` and the timeouts of the web layer are not the core's. The
/// module reads options by hand (`api/options.rs`: the ranges, the refusals of unknown keys and
/// of hostile objects); [`validate`](Self::validate) checks what either read.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct SchedulerConfig {
    /// Requests in flight at most.
    #[serde(rename = "concurrency")]
    pub concurrency: usize,
    /// Retry policy.
    #[serde(rename = "retry")]
    pub retry: RetryPolicy,
    /// Ready operations examined per pump pass before yielding.
    #[serde(skip)]
    pub pump_budget: usize,
    /// The principal requests are created and sent under.
    #[serde(rename = "principal")]
    pub principal: Option<String>,
    /// The host has an authorization step: every send first asks it
    /// ([`Effect::Authorize`](super::io::Effect::Authorize)) and waits for the verdict.
    #[serde(skip)]
    pub authorize: bool,
    /// Largest payload accepted at enqueue.
    #[serde(rename = "maxPayloadBytes")]
    pub max_payload_bytes: usize,
    /// Request batching limits.
    #[serde(rename = "batch")]
    pub batch: BatchLimits,
    /// Events kept in the log.
    #[serde(rename = "eventLogLimit")]
    pub event_log_limit: usize,
    /// This dispatcher's lease owner id.
    #[serde(rename = "owner")]
    pub owner: String,
    /// Lease duration.
    #[serde(rename = "leaseMs")]
    pub lease_ms: Millis,
    /// Group commit: instead of writing at once, ask the driver for one
    /// [`Effect::CommitSoon`](super::io::Effect::CommitSoon) per turn of the event loop, so all
    /// changes of that turn share one transaction.
    #[serde(skip)]
    pub group_commit: bool,
    /// Renew the lease on its interval even when idle, held or offline (other tabs take
    /// a lease that stops being renewed as the sign of a frozen leader).
    #[serde(skip)]
    pub keep_lease: bool,
    /// Operations stored as their own records are folded into a page (one record) once this
    /// many have gathered, in a batch of its own while the scheduler is quiet (0: never). Not
    /// an option of the JS API: the default is a page; tests lower it to fold often.
    #[serde(skip)]
    pub fold_records_at: usize,
    /// How long settled operations stay whole, and how many tombstones stay (the `retain`
    /// option; docs/guarantees.md, "Retention and known()").
    #[serde(rename = "retain")]
    pub retain: RetentionPolicy,
    /// `coalesceMs`: how long an operation with a `coalesceKey` is held back before
    /// it may be frozen, so a newer one with its key replaces it first (0: not held; default
    /// [`DEFAULT_COALESCE_MS`]).
    #[serde(rename = "coalesceMs")]
    pub coalesce_ms: Millis,
}

/// The longest `coalesceMs`: a hold is for a frame or two, not a debounce of seconds.
pub const MAX_COALESCE_MS: Millis = 1_000;

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            concurrency: 2,
            retry: RetryPolicy::default(),
            pump_budget: 64,
            principal: None,
            authorize: false,
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            batch: BatchLimits::default(),
            event_log_limit: 1_000,
            owner: "dispatcher".to_owned(),
            lease_ms: 5_000,
            group_commit: false,
            keep_lease: false,
            fold_records_at: crate::operation_pages::PAGE_LIMIT,
            retain: RetentionPolicy::default(),
            coalesce_ms: DEFAULT_COALESCE_MS,
        }
    }
}

impl SchedulerConfig {
    /// Checks every option; the first bad one is reported.
    pub fn validate(&self) -> Result<(), SchedulerError> {
        if self.concurrency < 1 {
            return Err(SchedulerError::new(
                ErrorCode::InvalidConcurrency,
                "concurrency must be an integer >= 1",
            ));
        }
        let bad = |message: &str| Err(SchedulerError::new(ErrorCode::InvalidOptions, message));
        if self.retry.base_ms < 1 || self.retry.max_ms < self.retry.base_ms {
            return bad("retry.baseMs must be >= 1 and retry.maxMs >= retry.baseMs");
        }
        if self.retry.max_attempts < 1 {
            return bad("retry.maxAttempts must be >= 1");
        }
        if self.pump_budget < 1 {
            return bad("pump budget must be >= 1");
        }
        if self.batch.max_operations < 1 || self.batch.max_bytes < 1 {
            return bad("batch.maxOperations and batch.maxBytes must be >= 1");
        }
        if self.lease_ms < 1_000 {
            return bad("leaseMs must be >= 1000");
        }
        if self.owner.is_empty() {
            return bad("owner must be non-empty");
        }
        if self.coalesce_ms > MAX_COALESCE_MS {
            return bad("coalesceMs must be an integer from 0 to 1000");
        }
        Ok(())
    }

    /// Renew every lease/3, but at least every 250 ms apart.
    pub fn renew_interval(&self) -> Millis {
        (self.lease_ms / 3).max(250)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s10_backoff_doubles_to_the_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay(0), 500);
        assert_eq!(policy.delay(1), 1_000);
        assert_eq!(policy.delay(5), 16_000);
        assert_eq!(policy.delay(6), 30_000);
        assert_eq!(policy.delay(60), 30_000);
        let tiny = RetryPolicy {
            base_ms: 1,
            max_ms: 1,
            max_attempts: 1,
            dead_letter_after_ms: 0,
        };
        assert_eq!(tiny.delay(0), 1);
    }

    #[test]
    fn s10_a_wait_from_outside_is_clamped_and_the_due_time_is_storable() {
        let policy = RetryPolicy::default();
        let now = 1_700_000_000_000;
        let day = MAX_WAIT_FLOOR_MS;
        // Retry-After: 10000000000000 (seconds) is 10^16 ms: past 2^53 - 1 unclamped.
        assert_eq!(
            policy.due_at(now, 0, Some(10_000_000_000_000_000), None),
            now + day
        );
        assert_eq!(policy.due_at(now, 0, Some(u64::MAX), None), now + day);
        assert_eq!(policy.due_at(now, 0, Some(7_000), None), now + 7_000);
        assert_eq!(
            policy.due_at(now, 500, Some(0), None),
            now + 500,
            "Retry-After: 0 never lowers the wait below what was earned"
        );
        assert_eq!(policy.due_at(now, 4_000, Some(1_000), None), now + 4_000);
        assert_eq!(policy.due_at(now, 4_000, Some(9_000), None), now + 9_000);
        assert_eq!(policy.due_at(now, 0, None, Some(u64::MAX)), now + day);
        assert_eq!(policy.due_at(now, 0, None, Some(now - 5)), now + 1);
        assert_eq!(
            policy.due_at(now, 0, None, Some(now + 60_000)),
            now + 60_000
        );
        assert_eq!(policy.due_at(now, 4_000, None, None), now + 4_000);
        assert_eq!(policy.due_at(now, 0, None, None), now + 1, "at least 1 ms");
        // Saturating and bounded even with a clock at the end of time.
        assert_eq!(policy.due_at(u64::MAX, 0, Some(u64::MAX), None), MAX_TIME);
        assert_eq!(policy.due_at(MAX_TIME, 30_000, None, None), MAX_TIME);
        // A longer retry.maxMs raises the clamp.
        let patient = RetryPolicy {
            max_ms: 2 * day,
            ..RetryPolicy::default()
        };
        assert_eq!(patient.due_at(now, 0, Some(u64::MAX), None), now + 2 * day);
        assert_eq!(policy.bounded_due(now, MAX_TIME), now + day);
        assert_eq!(policy.bounded_due(now, now + 5), now + 5);
    }

    #[test]
    fn s10_bad_luck_waits_about_a_round_trip_and_backoff_at_least_its_step() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.pace(None), 500, "before any answer: baseMs");
        assert_eq!(policy.pace(Some(40)), 40);
        assert_eq!(
            policy.pace(Some(1)),
            MIN_PACE_MS,
            "spaced even on a fast network"
        );
        assert_eq!(policy.pace(Some(9_000)), 500, "never longer than baseMs");
        let last = jitter::SCALE - 1;
        assert_eq!(policy.earned(Wait::Pace, Some(40), 0), 20);
        assert_eq!(policy.earned(Wait::Pace, Some(40), last), 59);
        let step = |step, floor| Wait::Backoff { step, floor };
        assert_eq!(policy.earned(step(0, 0), Some(40), 0), 500);
        assert_eq!(policy.earned(step(0, 0), Some(40), last), 624);
        assert_eq!(policy.earned(step(9, 0), None, 0), 30_000, "the cap");
        assert_eq!(
            policy.earned(step(9, 0), None, last),
            37_492,
            "at the cap, jitter only lengthens the wait"
        );
        assert_eq!(
            policy.earned(step(0, 7_000), None, 0),
            7_000,
            "an outage's floor"
        );
        assert_eq!(
            policy.earned(step(0, 3_600_000), None, 0),
            30_000,
            "the floor stops at maxMs"
        );
        let tiny = RetryPolicy {
            base_ms: 5,
            ..RetryPolicy::default()
        };
        assert_eq!(tiny.pace(Some(40)), 5, "baseMs below the shortest pace");
    }

    #[test]
    fn s2_concurrency_must_be_at_least_one() {
        let config = SchedulerConfig {
            concurrency: 0,
            ..SchedulerConfig::default()
        };
        assert_eq!(config.validate().unwrap_err().code(), "invalid_concurrency");
        assert!(SchedulerConfig::default().validate().is_ok());
    }

    #[test]
    fn k2_renew_interval_is_a_third_but_at_least_250ms() {
        let config = SchedulerConfig {
            lease_ms: 5_000,
            ..SchedulerConfig::default()
        };
        assert_eq!(config.renew_interval(), 1_666);
        let short = SchedulerConfig {
            lease_ms: 1_000,
            ..SchedulerConfig::default()
        };
        assert_eq!(short.renew_interval(), 333);
    }
}
