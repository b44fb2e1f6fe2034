//! The scheduler state machine (docs/guarantees.md says what it keeps). Sans-IO: every entry
//! point takes `now`; effects are queued and drained with [`Scheduler::poll_effect`].
//!
//! The ledger is the authority; everything else here (ready queue, retry queue, claims,
//! waiters, dependents, lane waiters, deferred retries, holds) is an index rebuilt by
//! [`Scheduler::start`].

mod attempt;
mod authorization;
mod batch;
mod batch_abort;
mod coalesce_hold;
mod completion;
mod enqueue;
mod host_actions;
mod inspect;
mod known;
mod pump;
mod recovery;
mod refusal;
mod saved;
mod storage;
mod wall_clock;

use crate::seq_set::SeqSet;
pub use pump::ACTIVE_MS;
use std::collections::VecDeque;
use std::collections::{BTreeMap, BTreeSet};

use super::backoff::Backoff;
use super::claims::CanvasClaims;
use super::config::SchedulerConfig;
use super::endpoint::EndpointHealth;
use super::error::{ErrorCode, SchedulerError};
use super::host::Host;
use super::io::{AttemptId, BatchNo, Effect, Report};
use super::ledger::{Ledger, LedgerSnapshot};
use super::model::{EventKind, Millis, RetryAction, UPLOAD_KIND};
use super::poison::PoisonWatch;
use super::ready_queue::ReadyQueue;
use super::retry_queue::{RetryEntry, RetryQueue};
use super::timers::{Timer, TimerTable};

pub use batch::{BatchEntry, BatchPayload};
pub use inspect::{Explanation, FlushOutcome, SchedulerStats, RELEASE_ACTIONS};
pub use known::{Compacted, Known};
pub use saved::{PendingEntry, Saved};
pub use storage::{storage_retry_delay, STORAGE_RETRY_MAX_MS};

/// Handle returned by [`Scheduler::hold`].
pub type HoldId = u64;

/// Where one attempt is between "decided to send" and "answer recorded".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Waiting for the batch holding its dispatch marker to be durable.
    Barrier(BatchNo),
    /// Frozen ahead: frozen in batch `BatchNo` while every slot was taken; it takes the
    /// next free slot, and is sent at once if that batch is durable and the lease is current.
    Ahead(BatchNo),
    /// Waiting for the host's authorization verdict ([`Effect::Authorize`]).
    Authorizing,
    /// On the wire.
    Sending,
    /// Answer recorded; waiting for that record to be durable before claims move.
    Completing(BatchNo),
}

#[derive(Clone, Debug)]
struct Attempt {
    id: AttemptId,
    action: RetryAction,
    kind: String,
    stage: Stage,
    /// The authorization step denied this attempt of a request the server may already
    /// have: it queries instead, and the denial stands only if the server never got it.
    denied: Option<String>,
    /// When the host put it on the wire (the round trip's start).
    sent_at: Option<Millis>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lifecycle {
    /// Created; `start()` not called yet.
    Idle,
    /// Started.
    Running,
    /// `stop()` was called; final.
    Closed,
}

/// Persistence progress (group commit, one batch in flight at a time).
#[derive(Debug, Default)]
struct PersistState {
    /// Number the next emitted batch gets (the "open" batch).
    next_no: BatchNo,
    /// The batch being written.
    in_flight: Option<BatchNo>,
    /// Everything up to this batch is durable.
    durable: BatchNo,
    /// Someone waits on the open batch even if it writes nothing.
    barrier_wanted: bool,
    /// Writes are failing: what waits to be written is tried again at a due time, and only
    /// what is durable is sent (`storage`).
    trouble: Option<storage::StorageTrouble>,
    /// An enqueue or `resume()` asks that the next batch be tried now, storage failing or not.
    try_now: bool,
    /// Batches whose write failed: their enqueues and `resume()`s were refused.
    refused: storage::Refusals,
    /// A `CommitSoon` is outstanding (group commit).
    commit_requested: bool,
    /// Inside `commit()`: write now.
    committing: bool,
    /// When the last compaction slice went out with a busy batch (retention under load).
    busy_slice_at: Option<Millis>,
    /// `coalesceMs`: the open batch holds only enqueues held back for coalescing, and waits
    /// until then to be written (see `after_held_call`).
    write_due: Option<Millis>,
    /// Requests resolved by an answer this turn: `commit()` lets their canvases and dependents
    /// go, once the host has had their `settled` events, into the batch that writes the answer.
    answered: Vec<String>,
}

/// Lease state of this dispatcher.
#[derive(Debug, Default)]
struct Leadership {
    /// The next batch must renew the lease.
    renew_wanted: bool,
    /// Our fence while we lead.
    fence: Option<u64>,
    /// A newer fence exists: we may never write again.
    fenced: bool,
    /// When the lease was last renewed (or taken).
    renewed_at: Millis,
}

/// Counters for `stats()`.
#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    scanned: u64,
    claimed: u64,
    raced: u64,
    retried: u64,
    sent: u64,
    settled: u64,
    passes: u64,
}

/// The scheduler core. See the module docs.
pub struct Scheduler<H: Host> {
    config: SchedulerConfig,
    host: H,
    ledger: Ledger,
    lifecycle: Lifecycle,
    online: bool,
    ready: ReadyQueue,
    retries: RetryQueue,
    /// How long each failed request waits: bad luck, outage or its own.
    backoff: Backoff,
    /// The endpoint's answers, round trip and outages, as seen from here.
    health: EndpointHealth,
    /// Which failures count toward the dead letter (poison, not outages).
    poison: PoisonWatch,
    claims: CanvasClaims,
    /// Operation id → the canvases it waits on (reserved in `claims`).
    waiting: BTreeMap<String, (u64, Vec<String>)>,
    dependents: BTreeMap<String, BTreeSet<String>>,
    indexed: BTreeSet<String>,
    lane_waiters: SeqSet,
    /// Coalesce key → the latest pending operation carrying it.
    coalescible: BTreeMap<String, String>,
    deferred: BTreeMap<String, RetryEntry>,
    /// Holds not yet released (few: a vector).
    holds: Vec<HoldId>,
    next_hold: HoldId,
    active: BTreeMap<String, Attempt>,
    next_attempt: AttemptId,
    persist: PersistState,
    resume_barrier: Option<BatchNo>,
    lease: Leadership,
    effects: VecDeque<Effect>,
    yielded: bool,
    /// Until when the user counts as at work (an enqueue within `ACTIVE_MS`): maintenance
    /// that can wait (folds, quiet slices back to back) waits, and a backlog's slices are spaced.
    active_until: Millis,
    timer: Option<Millis>,
    /// What each wake-up is for (`core::timers`); `timer` is the earliest.
    timers: TimerTable,
    /// The latest `now` the host gave (`wall_clock`: a smaller one means the clock went back).
    clock_high: Millis,
    /// Operations held back by `coalesceMs` (`coalesce_hold`).
    coalescing: coalesce_hold::CoalesceHolds,
    counters: Counters,
    /// A `participants` or `compile` hook is running (the host may read meanwhile).
    in_hook: bool,
    /// The server declined a batch (`batch`): every request carries one operation from now on.
    batches_declined: bool,
    /// Operations of a batch aborted as a whole (`batch_abort`): each goes alone from now on.
    alone: BTreeSet<String>,
    /// How long each of them waits before it goes again, by operation id (`batch_abort`).
    abort_pacing: Backoff,
    /// Enqueues not yet written, oldest first (`refusal`), and the one under way with the
    /// length of the effect queue when it began.
    admissions: Vec<refusal::Admission>,
    admitting: Option<(refusal::Admission, usize)>,
}

impl<H: Host> Scheduler<H> {
    /// A scheduler over already-validated durable records. Call [`Scheduler::start`] to run.
    pub fn new(
        config: SchedulerConfig,
        host: H,
        records: LedgerSnapshot,
    ) -> Result<Self, SchedulerError> {
        config.validate()?;
        // The driver takes the lease and loads the ledger in one transaction; we lead only
        // if the loaded lease is ours. An instance never acquires with a stale in-memory view.
        let fence = records
            .lease
            .as_ref()
            .filter(|l| l.owner == config.owner)
            .map(|l| l.fence);
        let mut ledger = Ledger::from_records(records, config.event_log_limit);
        ledger.set_fold_at(config.fold_records_at);
        ledger.set_retention(config.retain.clone());
        Ok(Self {
            config,
            host,
            ledger,
            lifecycle: Lifecycle::Idle,
            online: true,
            ready: ReadyQueue::default(),
            retries: RetryQueue::default(),
            backoff: Backoff::default(),
            health: EndpointHealth::default(),
            poison: PoisonWatch::default(),
            claims: CanvasClaims::default(),
            waiting: BTreeMap::new(),
            dependents: BTreeMap::new(),
            indexed: BTreeSet::new(),
            lane_waiters: SeqSet::new(),
            coalescible: BTreeMap::new(),
            deferred: BTreeMap::new(),
            holds: Vec::new(),
            next_hold: 0,
            active: BTreeMap::new(),
            next_attempt: 0,
            persist: PersistState {
                next_no: 1,
                ..PersistState::default()
            },
            resume_barrier: None,
            lease: Leadership {
                fence,
                ..Leadership::default()
            },
            effects: VecDeque::new(),
            yielded: false,
            active_until: 0,
            timer: None,
            timers: TimerTable::default(),
            clock_high: 0,
            coalescing: coalesce_hold::CoalesceHolds::default(),
            counters: Counters::default(),
            in_hook: false,
            batches_declined: false,
            alone: BTreeSet::new(),
            abort_pacing: Backoff::default(),
            admissions: Vec::new(),
            admitting: None,
        })
    }

    /// The next effect to carry out, in order.
    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// The ledger as this scheduler knows it.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The host this scheduler calls.
    pub fn host(&self) -> &H {
        &self.host
    }

    /// The options in force.
    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// Requests between "decided to send" and "answer durable", and those frozen ahead (the
    /// `concurrency` bound counts the sent and unanswered among these).
    pub fn in_flight(&self) -> usize {
        self.active.len()
    }

    /// Whether a batch is being written: what changes now goes into the next one, made when
    /// it is done (one transaction in flight at a time).
    pub fn is_writing(&self) -> bool {
        self.persist.in_flight.is_some()
    }

    /// Whether a newer fence exists: this instance may never write again.
    pub fn is_fenced(&self) -> bool {
        self.lease.fenced
    }

    /// Whether `start()` was called (and `stop()` was not): the ledger is recovered, and
    /// every unsettled operation is known to the scheduler.
    pub fn is_running(&self) -> bool {
        self.lifecycle == Lifecycle::Running
    }

    /// Whether `stop()` was called.
    pub fn is_closed(&self) -> bool {
        self.lifecycle == Lifecycle::Closed
    }

    /// Whether this scheduler holds the lease.
    pub fn is_leader(&self) -> bool {
        self.lease.fence.is_some() && !self.lease.fenced
    }

    /// Whether the write behind a barrier returned by `enqueue`/`resume`/`retry`/`discard`/
    /// `revise` is durable (`Some(true)`), failed or never will happen (`Some(false)`: the
    /// enqueues it carried were refused and left nothing behind; a host action's change waits
    /// in memory for the next write; or the scheduler stopped or lost its lease), or is still
    /// pending.
    pub fn barrier_state(&self, barrier: BatchNo) -> Option<bool> {
        if self.persist.refused.covers(barrier) {
            Some(false)
        } else if barrier <= self.persist.durable {
            Some(true)
        } else if self.lease.fenced || self.is_closed() {
            Some(false)
        } else {
            None
        }
    }

    /// Tells the scheduler whether the network is reachable (re-check due work on `online`).
    pub fn set_online(&mut self, now: Millis, online: bool) {
        let back = online && !self.online;
        self.online = online;
        if !online {
            self.withdraw_ahead(now);
        }
        if back {
            // The network came back: what waited on backoff goes now, and failures from
            // here are judged afresh.
            self.health.restart();
            let waiting = self.backoff.reset();
            self.retry_now(now, waiting);
        }
        if online {
            self.pump(now);
        }
        self.sync_timer(now);
    }

    fn report(&mut self, report: Report) {
        // Reporting is an effect; the driver swallows whatever the host's handler throws.
        self.effects.push_back(Effect::Report(report));
    }

    fn report_error(&mut self, code: ErrorCode, message: impl Into<String>) {
        self.report(Report::Error(SchedulerError::new(code, message)));
    }

    /// Notes an enqueue: the user is at work for the next `ACTIVE_MS`.
    pub(super) fn note_activity(&mut self, now: Millis) {
        self.active_until = now.saturating_add(pump::ACTIVE_MS);
    }

    /// Whether an enqueue came within the last `ACTIVE_MS` (see `active_until`).
    pub(super) fn user_active(&self, now: Millis) -> bool {
        now < self.active_until
    }

    /// Nothing to write, nothing in flight and nothing that could be dispatched now: the time
    /// to fold loose records into a page. (A fold costs ~25 ms of IndexedDB work; done in
    /// busy batches it held back the writes that sends wait for.)
    fn is_quiet(&self) -> bool {
        !self.ledger.has_changes()
            && !self.persist.barrier_wanted
            && self.active.is_empty()
            && (self.ready.is_empty() || !self.may_dispatch())
    }

    /// Whether work recorded under `principal` belongs to another principal than this
    /// session's. An omitted principal is one of its own (anonymous), never a wildcard: an
    /// anonymous session never sends a named principal's work, nor the reverse.
    fn other_principal(&self, principal: &Option<String>) -> bool {
        *principal != self.config.principal
    }

    /// Whether new attempts may start now.
    fn may_dispatch(&self) -> bool {
        self.sending_open() && self.persist.trouble.is_none()
    }

    /// Whether anything may be sent now, storage failing or not (see `storage`).
    fn sending_open(&self) -> bool {
        self.is_running() && self.holds.is_empty() && self.online && self.is_leader()
    }

    /// Attempts that hold a concurrency slot: from the decision to send until the answer
    /// arrives. An answered attempt waiting for its write keeps its claims but no slot,
    /// so the next requests are frozen into the batch that writes the answer.
    fn occupied(&self) -> usize {
        self.active
            .values()
            .filter(|a| !matches!(a.stage, Stage::Completing(_) | Stage::Ahead(_)))
            .count()
    }

    /// The requests whose attempt is at a `stage` that `pick` accepts.
    fn attempts_in(&self, pick: impl Fn(&Stage) -> bool) -> Vec<String> {
        self.active
            .iter()
            .filter(|(_, a)| pick(&a.stage))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Requests frozen ahead, waiting for a slot (at most `concurrency`).
    fn ahead(&self) -> usize {
        self.active
            .values()
            .filter(|a| matches!(a.stage, Stage::Ahead(_)))
            .count()
    }

    /// Whether one more request may be frozen now: into a free slot, or ahead of one.
    fn has_room(&self) -> bool {
        self.occupied() < self.config.concurrency || self.ahead() < self.config.concurrency
    }

    fn lane_free(&self, kind: &str) -> bool {
        self.occupied() < self.config.concurrency
            && (kind != UPLOAD_KIND
                || !self
                    .active
                    .values()
                    .any(|a| a.kind == UPLOAD_KIND && !matches!(a.stage, Stage::Completing(_))))
    }

    /// Whether an operation of `kind` may be frozen now: an upload only into a free slot and
    /// a free lane, any other kind also ahead of the slots.
    fn may_freeze(&self, kind: &str) -> bool {
        self.lane_free(kind) || (kind != UPLOAD_KIND && self.has_room())
    }

    /// The batch number a change made now becomes durable with.
    fn open_barrier(&mut self) -> BatchNo {
        if self.ledger.has_changes() || self.persist.barrier_wanted {
            self.persist.next_no
        } else if let Some(no) = self.persist.in_flight {
            no
        } else {
            self.persist.durable
        }
    }

    fn want_barrier(&mut self) -> BatchNo {
        self.persist.barrier_wanted = true;
        self.persist.next_no
    }

    fn event(
        &mut self,
        kind: EventKind,
        now: Millis,
        request: Option<&str>,
        operation: Option<&str>,
        detail: Option<String>,
    ) {
        let mut record = Ledger::event(kind, now);
        record.request_id = request.map(str::to_owned);
        record.operation_id = operation.map(str::to_owned);
        record.attempt = request
            .and_then(|id| self.ledger.request(id))
            .map(|r| r.attempt);
        record.fence = self.lease.fence;
        record.detail = detail;
        self.ledger.append_event(record);
    }

    /// Sets each named timer (`core::timers`) from the state, then arms the single wake-up the
    /// driver keeps at the earliest of them. Dispatch wake-ups are cleared while held,
    /// stopped, offline or failing.
    fn sync_timer(&mut self, now: Millis) {
        self.follow_clock(now);
        let dispatching = self.may_dispatch();
        // While storage fails, retries still fall due (`storage`: some go with no write).
        let retrying = dispatching || (self.persist.trouble.is_some() && self.sending_open());
        let pump_at = (self.yielded && dispatching).then_some(now);
        let retry_at = (retrying && self.occupied() < self.config.concurrency)
            .then(|| self.retries.peek().map(|entry| entry.due_at))
            .flatten();
        let hold_end = dispatching.then(|| self.coalescing.next_end()).flatten();
        // A renewal already requested or being written needs no wake-up.
        let renew_at = (self.keeps_lease_alive()
            && !self.lease.renew_wanted
            && self.persist.in_flight.is_none())
        .then(|| self.lease.renewed_at + self.config.renew_interval());
        // Retention: wake when the oldest settled operation outgrows the age limit. One due
        // already runs with the next quiet batch (a wake-up now would find the same work).
        let compact_at = (self.is_leader() && !self.is_closed() && self.persist.trouble.is_none())
            .then(|| self.ledger.compaction_due())
            .flatten()
            .filter(|at| *at > now);
        // Maintenance held back while the user works runs once they pause.
        let quiet_at = (self.active_until > now
            && self.is_leader()
            && !self.is_closed()
            && (self.ledger.settled_count() > 0 || self.ledger.wants_fold()))
        .then_some(self.active_until);
        // A held enqueue's write; one already in flight or requested needs no wake-up.
        let write_at = self
            .persist
            .write_due
            .filter(|_| self.persist.in_flight.is_none() && !self.persist.commit_requested);
        // Storage failing: the next try of the write (`storage`).
        let storage_retry_at = self
            .persist
            .trouble
            .as_ref()
            .filter(|_| {
                !self.is_closed()
                    && !self.lease.fenced
                    && self.persist.in_flight.is_none()
                    && !self.persist.commit_requested
            })
            // A held enqueue's write (`coalesceMs`) goes no sooner.
            .map(|trouble| trouble.retry_at.max(self.persist.write_due.unwrap_or(0)));
        let timers = &mut self.timers;
        timers.set(Timer::Pump, pump_at);
        timers.set(Timer::Retry, retry_at);
        timers.set(Timer::CoalesceHold, hold_end);
        timers.set(Timer::LeaseRenewal, renew_at);
        timers.set(Timer::Compaction, compact_at);
        timers.set(Timer::QuietWork, quiet_at);
        timers.set(Timer::HeldWrite, write_at);
        timers.set(Timer::StorageRetry, storage_retry_at);
        let desired = self.timers.next_timeout();
        if desired != self.timer {
            self.timer = desired;
            self.effects.push_back(Effect::SetTimer(desired));
        }
    }

    /// The named timers as the last step left them: what the scheduler waits for, and when.
    pub fn timers(&self) -> &TimerTable {
        &self.timers
    }

    /// Whether the lease should be renewed on the renewal interval: while work runs, and with
    /// [`SchedulerConfig::keep_lease`] (several tabs) whenever this dispatcher is open, so
    /// an idle, held or offline leader is not mistaken for a frozen one.
    fn keeps_lease_alive(&self) -> bool {
        self.is_leader()
            && !self.is_closed()
            && self.persist.trouble.is_none()
            && ((self.may_dispatch() && self.has_work()) || self.config.keep_lease)
    }

    fn has_work(&self) -> bool {
        !self.active.is_empty() || !self.retries.is_empty() || !self.ready.is_empty()
    }

    /// The timer armed through `SetTimer` fired.
    pub fn on_timer(&mut self, now: Millis) {
        if self.is_closed() {
            return;
        }
        self.timer = None;
        self.follow_clock(now);
        self.yielded = false;
        if self.keeps_lease_alive() && now >= self.lease.renewed_at + self.config.renew_interval() {
            self.lease.renew_wanted = true;
        }
        self.maybe_flush(now);
        self.release_ended_holds(now);
        self.pump(now);
        self.sync_timer(now);
    }
}
