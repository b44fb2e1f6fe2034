//! A page that leaves or is frozen pauses its tab, and a page that comes back joins again
//! ([`crate::web::page_lifecycle`]), with no host code.
//!
//! Pausing a dispatching tab stops its dispatcher as `stop()` does (in-flight fetches are
//! aborted: each request stays recorded as dispatched, and whoever dispatches next asks the
//! server what became of it before sending anything again), then lets the Web Lock go, so the
//! tab waiting next takes over at once, taking the lease over. With Web Locks the pause makes
//! no write and aborts the batches still being written: a batch commits only once the page
//! has run its lease read's answer, a page frozen before that holds its transaction open, and
//! Chromium evicts a page in its back/forward cache whose transaction another tab waits for.
//! What those batches and the changes still unwritten carried is lost as in a crash, and
//! recovered as after one. Without Web Locks a last fenced write gives the lease up (with
//! whatever waits), so the next tab need not wait for it to lapse. Any tab, paused, leaves the election queue, closes its
//! channel and lets its owner lock go: a page kept in the back/forward cache then holds
//! nothing another tab waits for. Coming back, it claims its owner again, reopens the
//! channel and is elected as at open (leading again when no other tab does). An enqueue or a
//! `whenSaved()` that a pause interrupted goes on through the new route (see
//! [`Tab::enqueue`]); `stop()` stays final.

use canvas_scheduler_core::SchedulerError;

use crate::web::page_lifecycle::{PageEvent, PageLifecycle};
use crate::web::task::spawn;
use crate::web::wake::is_hidden;

use super::{events, Role, Tab, TabMessage};

impl Tab {
    /// Listens for the page leaving and coming back (in a Window; a worker is told by its page).
    pub(super) fn watch_lifecycle(&self) {
        let weak = std::rc::Rc::downgrade(&self.state);
        let lifecycle = PageLifecycle::watch(move |event| {
            let Some(state) = weak.upgrade() else { return };
            match event {
                PageEvent::Hidden => Tab { state }.pause(),
                PageEvent::Shown => Tab { state }.unpause(),
            }
        });
        self.state.borrow_mut().lifecycle = lifecycle;
    }

    /// Whether this tab is paused (its page hidden in the back/forward cache, or frozen).
    pub(super) fn is_paused(&self) -> bool {
        self.state.borrow().paused
    }

    /// The page left or froze: stop dispatching and hold nothing other tabs wait for.
    /// Synchronous: a frozen page runs nothing after the event. Idempotent.
    pub fn pause(&self) {
        let (driver, lock, timer, owner_lock) = {
            let mut state = self.state.borrow_mut();
            if state.paused || matches!(state.role, Role::Closed) {
                return;
            }
            state.paused = true;
            state.epoch += 1;
            // A tab still loading (`Promoting`) sees `Follower` and stops what it opened.
            let driver = match std::mem::replace(&mut state.role, Role::Follower) {
                Role::Leader(driver) => Some(driver),
                _ => None,
            };
            if driver.is_some() {
                state.leader_owner = None;
                for inner in state.holds.values_mut() {
                    *inner = None;
                }
            }
            state.watched = None;
            (
                driver,
                state.lock.take(),
                state.timer.take(),
                state.owner_lock.take(),
            )
        };
        if let Some(driver) = driver {
            // With Web Locks the next tab takes the lease over at once; without them it waits
            // for a lease given up (or lapsed).
            let has_locks = self.state.borrow().locks.is_some();
            match has_locks {
                true => {
                    driver.stop_keeping_lease();
                    // No batch left open in a page that may be frozen next.
                    self.store().abort_open_batches();
                }
                false => driver.stop(),
            }
            self.emit_json(&events::leader_changed(false, None, None));
            let owner = self.owner();
            self.post(&TabMessage::Gone { owner });
        }
        let mut releasing = Vec::new();
        if let Some(lock) = lock {
            lock.release();
            releasing.push(lock.ended());
        }
        if let Some(timer) = timer {
            use canvas_scheduler_core::Clock;
            self.state.borrow().clock.clear_timer(timer);
        }
        if let Some(lock) = owner_lock {
            lock.release();
            releasing.push(lock.ended());
        }
        let mut state = self.state.borrow_mut();
        state.channel = None;
        state.releasing.extend(releasing);
    }

    /// The page is back (restored from the back/forward cache, or resumed): join the tabs
    /// again as at open. Idempotent.
    pub fn unpause(&self) {
        let epoch = {
            let mut state = self.state.borrow_mut();
            if !state.paused || matches!(state.role, Role::Closed) {
                return;
            }
            state.paused = false;
            state.epoch += 1;
            state.epoch
        };
        let this = self.clone();
        spawn(async move {
            let releasing = std::mem::take(&mut this.state.borrow_mut().releasing);
            for released in releasing {
                let _ = wasm_bindgen_futures::JsFuture::from(released).await;
            }
            if !this.still(epoch) {
                return;
            }
            if let Err(error) = this.claim_owner().await {
                this.owner_taken(epoch, &error);
                return;
            }
            if !this.still(epoch) {
                return this.let_go_after_pause();
            }
            this.open_channel();
            this.repost_pending();
            if this.elect_at_open().await.is_err() && this.still(epoch) {
                // Could not load (storage): let another tab try, and queue again.
                this.give_up_lock();
                this.queue_for_lock();
            }
            if !this.still(epoch) {
                return this.let_go_after_pause();
            }
            this.arm_tick();
            if !is_hidden() {
                this.ask_to_lead();
            }
        });
    }

    /// Whether no pause or stop came since `epoch`.
    fn still(&self, epoch: u64) -> bool {
        let state = self.state.borrow();
        state.epoch == epoch && !matches!(state.role, Role::Closed)
    }

    /// A pause (or `stop()`) came while joining again: what the join took since is let go.
    fn let_go_after_pause(&self) {
        let (lock, owner_lock) = {
            let mut state = self.state.borrow_mut();
            state.channel = None;
            (state.lock.take(), state.owner_lock.take())
        };
        let mut state = self.state.borrow_mut();
        for lock in lock.iter().map(|l| &**l).chain(owner_lock.as_ref()) {
            lock.release();
            state.releasing.push(lock.ended());
        }
    }

    /// While paused, another live tab opened with this tab's owner: this one stays paused
    /// (two live tabs must not share an owner) and says so with an `error` event.
    fn owner_taken(&self, epoch: u64, error: &SchedulerError) {
        if self.still(epoch) {
            let mut state = self.state.borrow_mut();
            state.paused = true;
            state.epoch += 1;
        }
        self.emit_json(&events::event_json(&canvas_scheduler_core::Report::Error(
            error.clone(),
        )));
    }
}
