//! The browser driver: carries the core's effects out with the IndexedDB ledger, the fetch
//! transport and the browser clock. Single-threaded (`Rc<RefCell<…>>`); no borrow is held
//! across an `await` or a call into host code, so host callbacks may call back in.

mod adopt;
mod effects;
mod host;
pub(crate) mod promise;
mod send_hooks;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::web::task::spawn;
use web_sys::AbortController;

use canvas_scheduler_core::{
    intent::IntentInput, partial::Verdict, AttemptId, BatchNo, Clock, ErrorCode, Known, Millis,
    Quarantined, Report, Scheduler, SchedulerConfig, SchedulerError, TimerHandle,
};

use crate::web::clock::BrowserClock;
use crate::web::js_transport::JsTransport;
use crate::web::store::{unavailable, AcquireError, IdbLedger};
use crate::web::transport::FetchTransport;
use crate::web::wake::{is_online, WakeReason, WakeSignals};

/// How long after an open the stored tombstones are counted (off the open's path).
const COUNT_AFTER_MS: i32 = 100;

pub use adopt::Adoption;
pub use host::WebHost;
pub(crate) use promise::Signal;
pub use send_hooks::SendHooks;

/// How the host hears about reports (`onEvent` in the JS API).
pub type ReportSink = Rc<dyn Fn(&Report)>;

/// Where to keep the ledger and where to send requests.
#[derive(Clone)]
pub struct DriverOptions {
    /// IndexedDB database name (one ledger per user/workspace).
    pub database: String,
    /// Protocol v1 base URL.
    pub endpoint: String,
    /// Per-attempt timeout; the attempt is aborted and counts as `transport_unknown`.
    pub attempt_timeout_ms: u32,
    /// Records per page when loading the ledger.
    pub load_page_size: usize,
    /// Byte limit of one answer (`maxAnswerBytes`), for `fetch` and a custom transport alike.
    pub max_answer_bytes: usize,
    /// Scheduler options (group commit is always on in the browser).
    pub config: SchedulerConfig,
    /// The synchronous hooks (compile, participants).
    pub host: WebHost,
    /// The asynchronous hooks around each send (headers, authorize, classifyError).
    pub send_hooks: SendHooks,
    /// The host's own transport instead of `fetch`.
    pub js_transport: Option<JsTransport>,
}

struct State {
    scheduler: Scheduler<WebHost>,
    store: Rc<IdbLedger>,
    transport: Rc<FetchTransport>,
    js_transport: Option<Rc<JsTransport>>,
    clock: BrowserClock,
    /// The armed browser timer and when it is due.
    timer: Option<(TimerHandle, Millis)>,
    controllers: BTreeMap<AttemptId, AbortController>,
    barrier_waiters: Vec<(BatchNo, Signal)>,
    settle_waiters: Vec<Signal>,
    /// `whenSaved()` calls: woken after every step to check again.
    saved_waiters: Vec<Signal>,
    sink: Option<ReportSink>,
    wake: Option<WakeSignals>,
    send_hooks: Rc<SendHooks>,
}

/// A running scheduler in the browser.
#[derive(Clone)]
pub struct Driver {
    state: Rc<RefCell<State>>,
    /// Its host's key: inside its own `compile` or `participants`, reads find the scheduler
    /// the hook was handed (see [`Driver::read`]).
    key: u64,
}

fn not_leader(error: AcquireError) -> SchedulerError {
    match error {
        AcquireError::Held(lease) => SchedulerError::new(
            ErrorCode::NotLeader,
            format!(
                "another dispatcher holds the ledger until {}",
                lease.map_or(0, |l| l.expires_at)
            ),
        ),
        AcquireError::Storage(e) => unavailable(e),
    }
}

impl Driver {
    /// Opens the ledger, takes the lease and loads it (one transaction), ready to `start()`.
    /// Quarantined records are returned for the host to see.
    ///
    /// With `takeover` the lease is taken even from a live holder (the caller holds the
    /// Web Lock; the fence bump shuts the old holder out).
    pub async fn open(
        options: DriverOptions,
        sink: Option<ReportSink>,
        takeover: bool,
    ) -> Result<(Driver, Vec<Quarantined>), SchedulerError> {
        let store = IdbLedger::open(&options.database)
            .await
            .map_err(unavailable)?;
        Self::open_on(Rc::new(store), options, sink, takeover).await
    }

    /// As [`Driver::open`], on a connection the caller already has (the tab layer shares
    /// one connection between its inbox writes and its dispatcher).
    pub async fn open_on(
        store: Rc<IdbLedger>,
        options: DriverOptions,
        sink: Option<ReportSink>,
        takeover: bool,
    ) -> Result<(Driver, Vec<Quarantined>), SchedulerError> {
        let clock = BrowserClock::new();
        let config = SchedulerConfig {
            group_commit: true,
            // With an `authorize` hook every send waits for its verdict.
            authorize: options.send_hooks.authorize.is_some(),
            ..options.config
        };
        config.validate()?;
        let loaded = store
            .acquire_and_load(
                &config.owner,
                clock.now(),
                config.lease_ms,
                options.load_page_size,
                takeover,
            )
            .await
            .map_err(not_leader)?;
        let key = crate::web::host_code::new_key();
        let host = WebHost {
            key,
            ..options.host
        };
        let scheduler = Scheduler::new(config, host, loaded.snapshot)?;
        let transport = FetchTransport::new(&options.endpoint, options.attempt_timeout_ms)
            .with_max_answer_bytes(options.max_answer_bytes);
        let state = State {
            scheduler,
            store,
            transport: Rc::new(transport),
            js_transport: options.js_transport.map(Rc::new),
            clock,
            timer: None,
            controllers: BTreeMap::new(),
            barrier_waiters: Vec::new(),
            settle_waiters: Vec::new(),
            saved_waiters: Vec::new(),
            sink,
            wake: None,
            send_hooks: Rc::new(options.send_hooks),
        };
        let driver = Driver {
            state: Rc::new(RefCell::new(state)),
            key,
        };
        // Retention: the tombstones are counted (and the index of their pages filled) a
        // moment after the open, off its path (an open reads no settled history).
        // The count sees what this session wrote before it began: that part is subtracted.
        let weak = Rc::downgrade(&driver.state);
        let store = driver.store();
        spawn(async move {
            crate::web::clock::sleep(COUNT_AFTER_MS).await;
            let Some(state) = weak.upgrade() else { return };
            let written = state.borrow().scheduler.ledger().tombstones_written();
            drop(state);
            let counted = store.count_tombstones();
            if let (Some(count), Some(state)) = (counted.await, weak.upgrade()) {
                let stored = count.saturating_sub(written);
                state.borrow_mut().scheduler.add_tombstone_count(stored);
            }
        });
        driver.watch_wake_signals();
        Ok((driver, loaded.quarantined))
    }

    /// Due times are absolute; a throttled background timer may fire late, so work is
    /// re-checked when the page becomes visible and when the network comes back.
    fn watch_wake_signals(&self) {
        let (weak, key) = (Rc::downgrade(&self.state), self.key);
        let signals = WakeSignals::new(move |reason| {
            let Some(state) = weak.upgrade() else { return };
            let driver = Driver { state, key };
            match reason {
                WakeReason::Visible => driver.wake(),
                WakeReason::Online => driver.set_online(true),
                WakeReason::Offline => driver.set_online(false),
            }
        });
        // Without listeners (an unusual global) the scheduler still works on its timers alone.
        self.state.borrow_mut().wake = signals.ok();
        if !is_online() {
            self.set_online(false);
        }
    }

    /// The ledger store (for fault injection in tests and for the API's blob writes).
    pub fn store(&self) -> Rc<IdbLedger> {
        self.state.borrow().store.clone()
    }

    /// Runs `f` on the scheduler with the current time, then carries out its effects.
    fn with<T>(&self, f: impl FnOnce(&mut Scheduler<WebHost>, Millis) -> T) -> T {
        let out = {
            let mut state = self.state.borrow_mut();
            let now = state.clock.now();
            f(&mut state.scheduler, now)
        };
        self.run();
        out
    }

    /// Recovers and starts dispatching.
    pub fn start(&self) -> Result<(), SchedulerError> {
        self.with(|s, now| s.start(now))
    }

    /// Durable enqueue: resolves once the intents are in IndexedDB.
    pub async fn enqueue(&self, intents: Vec<IntentInput>) -> Result<(), SchedulerError> {
        self.begin_look_up();
        let learnt = self.learn_tombstones(&intents).await;
        let admitted = learnt.and_then(|()| self.with(|s, now| s.enqueue(now, intents)));
        self.end_look_up();
        self.wait_written(admitted?).await
    }

    /// Partial enqueue (`enqueueMany(intents, { atomic: false })`): the core decides what is
    /// stored ([`Scheduler::enqueue_partial`]); resolves once the accepted intents are in
    /// IndexedDB, with a verdict per intent.
    pub async fn enqueue_partial(
        &self,
        slots: Vec<Result<IntentInput, SchedulerError>>,
    ) -> Result<Vec<Verdict>, SchedulerError> {
        let mut decoded = Vec::with_capacity(slots.len());
        for input in slots.iter().flatten() {
            decoded.push(input.clone());
        }
        self.begin_look_up();
        let learnt = self.learn_tombstones(&decoded).await;
        let admitted = learnt.and_then(|()| self.with(|s, now| s.enqueue_partial(now, slots)));
        self.end_look_up();
        let (verdicts, barrier) = admitted?;
        if let Some(barrier) = barrier {
            self.wait_written(barrier).await?;
        }
        Ok(verdicts)
    }

    /// An enqueue (or an adoption) begins to look its ids up: from the first round of
    /// [`Driver::learn_tombstones`] until the intents are admitted, no tombstone leaves memory
    /// ([`Scheduler::begin_look_up`]), so an id at hand when a round began, and so not read,
    /// is still known when they are admitted. Ended by [`Driver::end_look_up`] on every path.
    pub(crate) fn begin_look_up(&self) {
        self.state.borrow_mut().scheduler.begin_look_up();
    }

    /// See [`Driver::begin_look_up`].
    pub(crate) fn end_look_up(&self) {
        self.state.borrow_mut().scheduler.end_look_up();
    }

    /// Most tombstones kept at hand (`MEMORY_LIMIT`): tests lower it to reach the limit with
    /// few operations.
    pub fn set_memory_limit(&self, limit: usize) {
        self.state.borrow_mut().scheduler.set_memory_limit(limit);
    }

    /// Retention: looks up, by id, the stored tombstones of the ids `intents` name that the
    /// scheduler does not hold (none when the ledger has no tombstones), so an intent already
    /// settled and compacted is known and never sent twice. Called between
    /// [`Driver::begin_look_up`] and [`Driver::end_look_up`].
    pub(crate) async fn learn_tombstones(
        &self,
        intents: &[IntentInput],
    ) -> Result<(), SchedulerError> {
        // Round after round while a round finds some: a superseded operation's tombstone
        // names its replacement, which may be compacted too.
        for _ in 0..canvas_scheduler_core::retention::LOOKUP_ROUNDS {
            let (store, unknown) = {
                let state = self.state.borrow();
                let ledger = state.scheduler.ledger();
                if ledger.tombstone_count() == 0 && ledger.last_tombstone_key() == 0 {
                    return Ok(());
                }
                (state.store.clone(), state.scheduler.unknown_ids(intents))
            };
            if unknown.is_empty() {
                return Ok(());
            }
            let found = store
                .leader_tombstones(&unknown)
                .await
                .map_err(unavailable)?;
            if found.is_empty() {
                return Ok(());
            }
            self.state.borrow_mut().scheduler.learn_tombstones(found);
        }
        Ok(())
    }

    /// The record of each of `ids` as `operation(id)` answers it, in order: what the
    /// scheduler holds, else what the ledger's tombstones and archive hold. The core decides
    /// what to read and answers once it is read, with nothing leaving memory meanwhile
    /// ([`Scheduler::begin_known`]): a batch that lands during the read does not make an id
    /// that was at hand, and so not read, unknown.
    pub async fn known(&self, ids: Vec<String>) -> Result<Vec<Option<Known>>, SchedulerError> {
        let (store, unread) = {
            let mut state = self.state.borrow_mut();
            let unread = state.scheduler.begin_known(&ids);
            (state.store.clone(), unread)
        };
        let found = store.tombstones(&unread).await;
        let mut state = self.state.borrow_mut();
        match found {
            Ok(found) => Ok(state.scheduler.end_known(&ids, found)),
            Err(error) => {
                state.scheduler.end_look_up();
                Err(unavailable(error))
            }
        }
    }

    /// Opens the transaction of the batch an enqueue is about to make (see
    /// [`IdbLedger::open_ahead`]), unless a batch is being written: the enqueue then goes into
    /// the batch made once that one is done, in a later turn, and a transaction opened now
    /// would only read the lease and queue behind it, ahead of that batch.
    pub fn open_ahead(&self) {
        let state = self.state.borrow();
        if !state.scheduler.is_writing() {
            state.store.open_ahead();
        }
    }

    /// Writes again now (the scheduler also tries on its own while storage fails), then
    /// releases and reschedules; `storage_unavailable` if that write fails. A connection closed under us
    /// (`versionchange` from another tab, `close`) is opened again first.
    pub async fn resume(&self) -> Result<(), SchedulerError> {
        let store = self.state.borrow().store.clone();
        if !store.is_open() {
            store.reopen().await.map_err(unavailable)?;
        }
        match self.with(|s, now| s.resume(now)) {
            Some(barrier) => self.wait_written(barrier).await,
            None => Ok(()),
        }
    }

    /// Nothing new starts until the returned hold is released.
    pub fn hold(&self) -> Result<canvas_scheduler_core::HoldId, SchedulerError> {
        self.with(|s, now| s.hold(now))
    }

    /// Releases a hold (idempotent).
    pub fn release(&self, hold: canvas_scheduler_core::HoldId) {
        self.with(|s, now| s.release(now, hold));
    }

    /// Final; aborts in-flight fetches and clears the timer.
    pub fn stop(&self) {
        self.stop_with(true);
    }

    /// As [`Driver::stop`], for a paused page whose lead another tab takes over (the core's
    /// [`Scheduler::stop_keeping_lease`]): no last write.
    pub fn stop_keeping_lease(&self) {
        self.stop_with(false);
    }

    fn stop_with(&self, release_lease: bool) {
        self.with(|s, _| match release_lease {
            true => s.stop(),
            false => s.stop_keeping_lease(),
        });
        let timer = self.state.borrow_mut().timer.take();
        if let Some((handle, _)) = timer {
            self.state.borrow().clock.clear_timer(handle);
        }
        self.state.borrow_mut().wake = None;
        let waiters = std::mem::take(&mut self.state.borrow_mut().settle_waiters);
        for waiter in waiters {
            waiter.resolve();
        }
        let waiters = std::mem::take(&mut self.state.borrow_mut().saved_waiters);
        for waiter in waiters {
            waiter.resolve();
        }
    }

    /// Resolves once every operation unsettled now is settled or blocked (the
    /// decision is the core's [`Scheduler::saved_state`]); `scheduler_closed` on `stop()`.
    pub async fn when_saved(&self) -> Result<canvas_scheduler_core::Saved, SchedulerError> {
        let mut covered = self.inspect(|s, _| s.saved_mark());
        let mut settled = 0;
        loop {
            let signal = {
                let mut state = self.state.borrow_mut();
                if state.scheduler.is_closed() {
                    return Err(SchedulerError::new(
                        ErrorCode::SchedulerClosed,
                        "the scheduler was stopped before everything was saved",
                    ));
                }
                let now = state.clock.now();
                if let Some(saved) = state.scheduler.saved_state(now, &mut covered, &mut settled) {
                    return Ok(saved);
                }
                let signal = Signal::new();
                state.saved_waiters.push(signal.clone());
                signal
            };
            signal.wait().await;
        }
    }

    /// Resolves once nothing is in flight, including work started while waiting.
    pub async fn settle(&self) {
        loop {
            let signal = {
                let mut state = self.state.borrow_mut();
                if state.scheduler.in_flight() == 0 || state.scheduler.is_closed() {
                    return;
                }
                let signal = Signal::new();
                state.settle_waiters.push(signal.clone());
                signal
            };
            signal.wait().await;
        }
    }

    /// Tells the scheduler whether the network is up.
    pub fn set_online(&self, online: bool) {
        self.with(|s, now| s.set_online(now, online));
    }

    /// Wakes the scheduler now (visibility change, leadership change): due times are absolute,
    /// so a throttled timer delays work but never loses it.
    pub fn wake(&self) {
        self.with(|s, now| s.on_timer(now));
    }

    /// Reads the scheduler.
    pub fn inspect<T>(&self, f: impl FnOnce(&Scheduler<WebHost>, Millis) -> T) -> T {
        let state = self.state.borrow();
        let now = state.clock.now();
        f(&state.scheduler, now)
    }

    /// Reads the scheduler for the host's synchronous reads (`stats`, `operation`, `explain`,
    /// `claims`, `pending`). Inside this scheduler's own `compile` or `participants` the state
    /// is borrowed by the step: the read answers from the scheduler the hook was handed, as
    /// it stands between two operations.
    ///
    /// # Errors
    ///
    /// `invalid_state` when the state is borrowed by anything else (host code that the step
    /// runs without handing it the scheduler, such as a replaced `crypto.randomUUID`).
    pub fn read<T>(
        &self,
        reader: impl FnOnce(&Scheduler<WebHost>, Millis) -> T,
    ) -> Result<T, SchedulerError> {
        if let Ok(state) = self.state.try_borrow() {
            let now = state.clock.now();
            return Ok(reader(&state.scheduler, now));
        }
        let now = BrowserClock::new().now();
        crate::web::host_code::read(self.key, |scheduler| reader(scheduler, now)).ok_or_else(|| {
            SchedulerError::new(
                ErrorCode::InvalidState,
                "the scheduler is in the middle of a step: read it from compile, participants or afterwards",
            )
        })
    }

    /// Runs a host action (flush, retry, discard, revise) and carries out its effects.
    pub fn act<T>(&self, f: impl FnOnce(&mut Scheduler<WebHost>, Millis) -> T) -> T {
        self.with(f)
    }

    /// Waits until a host action's write is durable; `storage_unavailable` if it failed (what
    /// it changed stays in memory and goes with the next write that succeeds) or never can.
    pub async fn wait_barrier(&self, barrier: BatchNo) -> Result<(), SchedulerError> {
        self.wait_for(
            barrier,
            "what it changed is written once storage works again",
        )
        .await
    }

    /// Waits for the write an enqueue or `resume()` made: `storage_unavailable` when it failed
    /// (an enqueue is then refused and leaves nothing behind) or never can.
    pub async fn wait_written(&self, barrier: BatchNo) -> Result<(), SchedulerError> {
        self.wait_for(
            barrier,
            "an enqueue it carried was refused and kept nothing: enqueue it again",
        )
        .await
    }

    async fn wait_for(&self, barrier: BatchNo, then: &str) -> Result<(), SchedulerError> {
        loop {
            let signal = {
                let mut state = self.state.borrow_mut();
                match state.scheduler.barrier_state(barrier) {
                    Some(true) => return Ok(()),
                    Some(false) => return Err(not_written(&state.scheduler, then)),
                    None => {
                        let signal = Signal::new();
                        state.barrier_waiters.push((barrier, signal.clone()));
                        signal
                    }
                }
            };
            signal.wait().await;
        }
    }
}

/// Why a write did not happen, as the caller's error.
fn not_written(scheduler: &Scheduler<WebHost>, then: &str) -> SchedulerError {
    let why = match scheduler.storage_error() {
        Some(error) => format!("{}: {}", error.code, error.message),
        None if scheduler.is_closed() => "the scheduler was stopped".to_owned(),
        None if scheduler.is_fenced() => "another dispatcher took the ledger".to_owned(),
        None => "storage failed".to_owned(),
    };
    SchedulerError::new(
        ErrorCode::StorageUnavailable,
        format!("the write did not become durable ({why}); {then} (the scheduler tries storage again on its own, and says storage_recovered)"),
    )
}
