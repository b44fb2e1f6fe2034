//! Several tabs on one ledger. Every tab opens a [`Tab`]; exactly one of them
//! dispatches through a [`Driver`] at a time.
//!
//! - Election: the Web Lock `canvas-scheduler:{database}` decides who *may* lead (liveness:
//!   the browser releases it when its tab closes or crashes); the fenced lease decides
//!   who *can* write or send (safety: a former leader that wakes up is fenced out). A tab
//!   that holds the lock takes the lease over at once; a tab that sees the lease unrenewed
//!   for a whole lease period steals the lock (a frozen leader). Without Web Locks the lease
//!   alone decides: a tab takes it when it has expired.
//! - Enqueue: a tab that does not dispatch validates its intents, writes them durably to the
//!   shared inbox (one transaction, checked against the ledger), and wakes the leader over
//!   the `BroadcastChannel`; the leader adopts the inbox in order (and rescans it on a timer,
//!   so a lost message only delays it).
//! - Relay: the leader posts its events (with the operation record) to the channel; each tab
//!   delivers the ones about operations it enqueued. Host actions (flush, retry, discard,
//!   resume, settle, events) of a non-dispatching tab are asked of the leader.

pub mod action;
mod channel;
mod election;
pub mod events;
mod follower;
mod handover;
mod lifecycle;
mod locks;
mod partial;
mod relay;
mod saved_events;
mod views;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use wasm_bindgen::JsValue;

use canvas_scheduler_core::{
    intent::IntentInput, json_text::JsonText, ErrorCode, HoldId, Lease, Millis, SchedulerError,
    TimerHandle,
};

use crate::web::clock::BrowserClock;
use crate::web::driver::{Driver, DriverOptions, Signal};
use crate::web::json::to_js;
use crate::web::page_lifecycle::PageLifecycle;
use crate::web::store::{unavailable, IdbLedger};
use crate::web::wake::WakeSignals;

use channel::TabChannel;
pub use channel::TabMessage;
use follower::Pending;
use locks::{LockManager, LockRequest};
use views::OperationViews;

/// How the host hears events (`onEvent`): the event object.
pub type EventSink = Rc<dyn Fn(&JsValue)>;

/// What this tab is doing.
enum Role {
    /// Another tab dispatches (or nobody yet): enqueue goes to the inbox.
    Follower,
    /// Taking the lease and loading the ledger.
    Promoting,
    /// This tab dispatches.
    Leader(Driver),
    /// `stop()` was called.
    Closed,
}

struct TabState {
    options: DriverOptions,
    store: Rc<IdbLedger>,
    clock: BrowserClock,
    role: Role,
    started: bool,
    next_hold: u64,
    /// The host's holds, and the dispatcher's hold for each while this tab leads.
    holds: BTreeMap<u64, Option<HoldId>>,
    leader_owner: Option<String>,
    /// Operations this tab enqueued while not dispatching, not yet settled.
    mine: BTreeSet<String>,
    /// The latest record of each of `mine` relayed by the leader.
    views: OperationViews,
    /// Operations of `mine` the leader said something about, to read from the ledger (a
    /// relayed event is a hint, never delivered as it came), and the reads left to try.
    hinted: BTreeSet<String>,
    hint_reads: u32,
    /// The last block reason delivered for each of `mine` (each is delivered once).
    heard_blocked: BTreeMap<String, String>,
    /// Another tab has spoken on the channel: relay events while leading.
    relay: bool,
    channel: Option<Rc<TabChannel>>,
    locks: Option<LockManager>,
    /// Our lock request: held while leading, queued while following.
    lock: Option<Rc<LockRequest>>,
    /// The lock on this tab's `owner`, held while the tab is open: a second live tab of the
    /// ledger with the same owner is refused (`owner_in_use`).
    owner_lock: Option<LockRequest>,
    adopting: bool,
    adopt_again: bool,
    timer: Option<TimerHandle>,
    /// The lease as last seen by a follower, and since when it has been unchanged.
    watched: Option<(Option<Lease>, Millis)>,
    pending: BTreeMap<u64, Pending>,
    next_rid: u64,
    /// Inbox entries this tab has written, and how many of those an adoption pass of this
    /// tab (as leader) has certainly seen; inbox writes of this tab still under way.
    own_writes: u64,
    own_adopted: u64,
    inbox_writes_in_flight: usize,
    /// Direct enqueues of a newly elected tab waiting for those entries (per-tab order).
    inbox_waiters: Vec<Signal>,
    /// Woken when this tab's inbox writes under way are all done.
    inbox_idle: Vec<Signal>,
    /// Enqueues waiting for the next inbox append, and whether one is being written.
    inbox_queue: Vec<follower::Queued>,
    inbox_appending: bool,
    on_event: Option<EventSink>,
    /// A `pending` event is due within a frame; the count the last one said.
    pending_armed: bool,
    last_pending: Option<usize>,
    /// `visibilitychange` listener (a visible follower asks a hidden leader to hand over).
    visibility: Option<WakeSignals>,
    /// `pagehide` / `pageshow` / `freeze` / `resume` listeners (a Window only).
    lifecycle: Option<PageLifecycle>,
    /// The page is hidden in the back/forward cache or frozen: nothing dispatches here, and
    /// the tab holds no lock, queue place or channel (see `lifecycle.rs`).
    paused: bool,
    /// Counts pauses and resumptions: a join under way gives up when it changed.
    epoch: u64,
    /// The locks a pause let go, until the browser has taken them back: joining again waits
    /// for them (our own lock, not yet released, is not another tab's).
    releasing: Vec<js_sys::Promise>,
    /// Whether the origin's storage is persistent, as the browser last said (`stats()`).
    persisted: Option<bool>,
}

/// One tab's share of a ledger: dispatches when elected, enqueues through the inbox
/// otherwise. Single-threaded; no borrow is held across an `await` or a host call.
#[derive(Clone)]
pub struct Tab {
    state: Rc<RefCell<TabState>>,
}

fn closed() -> SchedulerError {
    SchedulerError::new(ErrorCode::SchedulerClosed, "the scheduler was stopped")
}

/// How often an enqueue or `whenSaved()` interrupted by a stopped dispatcher is tried again.
pub(super) const INTERRUPTED_TRIES: usize = 8;

/// What a call interrupted every time it was tried answers.
pub(super) fn interrupted() -> SchedulerError {
    SchedulerError::new(
        ErrorCode::StorageUnavailable,
        "the dispatching tab kept changing under this call; call it again",
    )
}

impl Tab {
    /// Opens the ledger and joins its tabs: leads at once when no other tab does, follows
    /// otherwise. `on_event` receives every event of this tab.
    ///
    /// # Errors
    ///
    /// Invalid options, or `storage_unavailable` when the ledger cannot be opened or (when
    /// this tab is elected at once) loaded.
    pub async fn open(
        options: DriverOptions,
        on_event: Option<EventSink>,
    ) -> Result<Tab, SchedulerError> {
        let mut options = options;
        options.config.keep_lease = true;
        options.config.validate()?;
        let store = IdbLedger::open(&options.database)
            .await
            .map_err(unavailable)?;
        let state = TabState {
            options,
            store: Rc::new(store),
            clock: BrowserClock::new(),
            role: Role::Follower,
            started: false,
            next_hold: 0,
            holds: BTreeMap::new(),
            leader_owner: None,
            mine: BTreeSet::new(),
            views: OperationViews::new(),
            hinted: BTreeSet::new(),
            hint_reads: 0,
            heard_blocked: BTreeMap::new(),
            relay: false,
            channel: None,
            locks: LockManager::get(),
            lock: None,
            owner_lock: None,
            adopting: false,
            adopt_again: false,
            timer: None,
            watched: None,
            pending: BTreeMap::new(),
            next_rid: 0,
            own_writes: 0,
            own_adopted: 0,
            inbox_writes_in_flight: 0,
            inbox_waiters: Vec::new(),
            inbox_idle: Vec::new(),
            inbox_queue: Vec::new(),
            inbox_appending: false,
            on_event,
            pending_armed: false,
            last_pending: None,
            visibility: None,
            lifecycle: None,
            paused: false,
            epoch: 0,
            releasing: Vec::new(),
            persisted: None,
        };
        let tab = Tab {
            state: Rc::new(RefCell::new(state)),
        };
        tab.claim_owner().await?;
        tab.open_channel();
        tab.elect_at_open().await?;
        tab.arm_tick();
        tab.watch_visibility();
        tab.watch_lifecycle();
        Ok(tab)
    }

    /// The owner names one live tab (the channel addresses answers and handovers to it,
    /// the lease is taken in its name): a second tab of the ledger with the same owner is
    /// refused with `owner_in_use` until the first stops or closes. Without Web Locks there
    /// is nothing to ask; the default owner is random.
    async fn claim_owner(&self) -> Result<(), SchedulerError> {
        let Some(locks) = self.state.borrow().locks.clone() else {
            return Ok(());
        };
        let name = format!("{}:owner:{}", self.lock_name(), self.owner());
        let request = locks.request(&name, true, false);
        if request.granted().await != locks::Grant::Granted {
            return Err(SchedulerError::new(
                ErrorCode::OwnerInUse,
                format!(
                    "another open tab of this ledger has owner {}; give each tab its own",
                    self.owner()
                ),
            ));
        }
        self.state.borrow_mut().owner_lock = Some(request);
        Ok(())
    }

    /// Asks the browser, without waiting, to keep the origin's storage persistent (with
    /// `ask`; else only reads whether it is), for `stats().persisted`.
    pub fn ask_persistence(&self, ask: bool) {
        let weak = Rc::downgrade(&self.state);
        crate::web::task::spawn(async move {
            let persisted = crate::web::persist::persistence(ask).await;
            if let Some(state) = weak.upgrade() {
                state.borrow_mut().persisted = persisted;
            }
        });
    }

    /// This tab's owner id.
    pub fn owner(&self) -> String {
        self.state.borrow().options.config.owner.clone()
    }

    /// The dispatcher, while this tab leads.
    pub fn driver(&self) -> Option<Driver> {
        match &self.state.borrow().role {
            Role::Leader(driver) => Some(driver.clone()),
            _ => None,
        }
    }

    /// The ledger store (blobs are written by whichever tab enqueues).
    pub fn store(&self) -> Rc<IdbLedger> {
        self.state.borrow().store.clone()
    }

    fn is_closed(&self) -> bool {
        matches!(self.state.borrow().role, Role::Closed)
    }

    /// Before an enqueue: while this tab dispatches, opens the transaction its batch will be
    /// written in (a follower's intents go through the inbox, in transactions of their own).
    pub fn open_ahead(&self) {
        if let Some(driver) = self.driver() {
            driver.open_ahead();
        }
    }

    /// Durable enqueue: through the dispatcher while leading, through the inbox otherwise.
    ///
    /// # Errors
    ///
    /// The codes of [`Driver::enqueue`] and of the inbox checks.
    ///
    /// A dispatcher stopped under the enqueue (the page paused, or the lead was lost) may or
    /// may not have written the intents in its last write: they are enqueued again through
    /// whoever dispatches now, where an intent already stored unchanged is not added twice.
    pub async fn enqueue(&self, intents: Vec<IntentInput>) -> Result<(), SchedulerError> {
        if self.is_closed() {
            return Err(closed());
        }
        let mut result = Err(interrupted());
        for _ in 0..INTERRUPTED_TRIES {
            match self.enqueue_here_or_inbox(intents.clone()).await {
                Some(done) => {
                    result = done;
                    break;
                }
                None => continue,
            }
        }
        self.note_pending();
        result
    }

    /// `None`: the dispatcher was stopped under the enqueue ([`Tab::stopped_under`]).
    async fn enqueue_here_or_inbox(
        &self,
        intents: Vec<IntentInput>,
    ) -> Option<Result<(), SchedulerError>> {
        match self.driver() {
            Some(driver) => {
                if let Err(error) = self.after_own_inbox().await {
                    return Some(Err(error));
                }
                // Kept until settled, so this tab still hears them if it stops leading.
                let ids: Vec<String> = intents.iter().map(|i| i.id.clone()).collect();
                let fresh: Vec<String> = {
                    let mut state = self.state.borrow_mut();
                    ids.into_iter()
                        .filter(|id| state.mine.insert(id.clone()))
                        .collect()
                };
                let result = driver.enqueue(intents).await;
                if result.is_err() {
                    let mut state = self.state.borrow_mut();
                    for id in &fresh {
                        state.mine.remove(id);
                    }
                }
                match result {
                    Err(_) if self.stopped_under(&driver) => None,
                    other => Some(other),
                }
            }
            None => Some(self.enqueue_to_inbox(intents).await),
        }
    }

    /// A tab elected while intents it enqueued still sit in the inbox sends nothing of its
    /// own directly until they are adopted, so its enqueue order stays its sequence order
    /// (per-canvas order). Waiters resume in the order they came, after each adoption pass.
    async fn after_own_inbox(&self) -> Result<(), SchedulerError> {
        for _ in 0..100 {
            let signal = {
                let mut state = self.state.borrow_mut();
                if state.own_adopted >= state.own_writes && state.inbox_writes_in_flight == 0 {
                    return Ok(());
                }
                let signal = Signal::new();
                state.inbox_waiters.push(signal.clone());
                signal
            };
            let this = self.clone();
            crate::web::task::spawn(async move { this.adopt().await });
            signal.wait().await;
        }
        Err(SchedulerError::new(
            ErrorCode::StorageUnavailable,
            "intents this tab enqueued earlier cannot be moved out of the inbox; call resume()",
        ))
    }

    /// Whether `driver`, which this tab led with, was stopped while the tab stays open (a
    /// pause, a lost lead): a call it failed may go on through whoever dispatches now.
    pub(super) fn stopped_under(&self, driver: &Driver) -> bool {
        !self.is_closed() && driver.inspect(|s, _| s.is_closed())
    }

    /// Starts dispatching now if this tab leads, and whenever it is elected later.
    ///
    /// # Errors
    ///
    /// `scheduler_closed`, or the dispatcher's own errors.
    pub fn start(&self) -> Result<(), SchedulerError> {
        if self.is_closed() {
            return Err(closed());
        }
        self.state.borrow_mut().started = true;
        match self.driver() {
            Some(driver) => driver.start(),
            None => Ok(()),
        }
    }

    /// A hold of this tab's dispatching: in force while this tab leads.
    ///
    /// # Errors
    ///
    /// `scheduler_closed`.
    pub fn hold(&self) -> Result<u64, SchedulerError> {
        if self.is_closed() {
            return Err(closed());
        }
        let inner = match self.driver() {
            Some(driver) => Some(driver.hold()?),
            None => None,
        };
        let mut state = self.state.borrow_mut();
        state.next_hold += 1;
        let id = state.next_hold;
        state.holds.insert(id, inner);
        Ok(id)
    }

    /// Releases a hold (idempotent).
    pub fn release(&self, hold: u64) {
        let inner = self.state.borrow_mut().holds.remove(&hold).flatten();
        if let (Some(inner), Some(driver)) = (inner, self.driver()) {
            driver.release(inner);
        }
    }

    /// Final: stops dispatching (handing the lease over at once), leaves the election and
    /// the channel.
    pub fn stop(&self) {
        let (role, lock, timer) = {
            let mut state = self.state.borrow_mut();
            let role = std::mem::replace(&mut state.role, Role::Closed);
            (role, state.lock.take(), state.timer.take())
        };
        if let Role::Leader(driver) = role {
            driver.stop();
            let owner = self.owner();
            self.post(&TabMessage::Gone { owner });
        }
        if let Some(lock) = lock {
            lock.release();
        }
        if let Some(timer) = timer {
            use canvas_scheduler_core::Clock;
            self.state.borrow().clock.clear_timer(timer);
        }
        let pending = std::mem::take(&mut self.state.borrow_mut().pending);
        for (_, waiter) in pending {
            waiter.finish(Err(closed()));
        }
        let waiters = std::mem::take(&mut self.state.borrow_mut().inbox_waiters);
        for waiter in waiters {
            waiter.resolve();
        }
        let mut state = self.state.borrow_mut();
        state.channel = None;
        state.visibility = None;
        state.lifecycle = None;
        if let Some(lock) = state.owner_lock.take() {
            lock.release();
        }
    }

    /// Delivers an event to this tab's host.
    fn emit(&self, event: &JsValue) {
        let sink = self.state.borrow().on_event.clone();
        if let Some(sink) = sink {
            sink(event);
        }
        self.note_pending();
    }

    /// Delivers an event built as JSON.
    fn emit_json(&self, event: &JsonText) {
        self.emit(&to_js(event));
    }

    /// Posts to the other tabs.
    fn post(&self, message: &TabMessage) {
        let channel = self.state.borrow().channel.clone();
        if let Some(channel) = channel {
            channel.post(message);
        }
    }
}
