//! A visible tab is preferred as the dispatcher, where it can be done safely: a hidden
//! leader with nothing in flight hands over to a visible follower that asks. The leader
//! stops first (the lease is given up, nothing is in flight), then the visible tab steals
//! the lock and takes the lease with a higher fence. If it never comes, the old leader,
//! still holding the lock, leads again.

use std::cell::Cell;
use std::rc::Rc;

use crate::web::task::spawn;

use canvas_scheduler_core::Clock;

use super::{events, Role, Tab, TabMessage};
use crate::web::wake::{is_hidden, WakeReason, WakeSignals};

/// How long a leader that handed over waits for the visible tab to take the lock.
const HANDOVER_WAIT_MS: u64 = 2_000;

impl Tab {
    /// Follows this tab's visibility: a follower that becomes visible asks for the lead.
    pub(super) fn watch_visibility(&self) {
        let weak = Rc::downgrade(&self.state);
        let signals = WakeSignals::new(move |reason| {
            let Some(state) = weak.upgrade() else { return };
            if reason == WakeReason::Visible {
                Tab { state }.ask_to_lead();
            }
        });
        self.state.borrow_mut().visibility = signals.ok();
        if !is_hidden() {
            self.ask_to_lead();
        }
    }

    pub(super) fn ask_to_lead(&self) {
        if matches!(self.state.borrow().role, Role::Follower) && !self.is_paused() {
            let from = self.owner();
            self.post(&TabMessage::Visible { from });
        }
    }

    /// A visible follower asked: hand over when hidden and idle.
    pub(super) fn on_visible_follower(&self, to: String) {
        let Some(driver) = self.driver() else { return };
        if !is_hidden() || driver.inspect(|s, _| s.in_flight()) > 0 {
            return;
        }
        let lock = {
            let mut state = self.state.borrow_mut();
            let Some(lock) = state.lock.take() else {
                return; // without Web Locks there is nothing to hand over safely
            };
            state.role = Role::Follower;
            state.leader_owner = Some(to.clone());
            for inner in state.holds.values_mut() {
                *inner = None;
            }
            lock
        };
        driver.stop(); // gives the lease up; nothing was in flight
        self.emit_json(&events::leader_changed(false, Some(&to), None));
        self.post(&TabMessage::Handover { to });
        let stolen = Rc::new(Cell::new(false));
        {
            let this = self.clone();
            let lock = lock.clone();
            let stolen = stolen.clone();
            spawn(async move {
                lock.finished().await;
                stolen.set(true);
                if matches!(this.state.borrow().role, Role::Follower) {
                    this.queue_for_lock();
                }
            });
        }
        let weak = Rc::downgrade(&self.state);
        self.state.borrow().clock.set_timer(
            HANDOVER_WAIT_MS,
            Box::new(move || {
                let Some(state) = weak.upgrade() else { return };
                let tab = Tab { state };
                if stolen.get() {
                    return;
                }
                let idle = matches!(tab.state.borrow().role, Role::Follower)
                    && tab.state.borrow().lock.is_none()
                    && !tab.is_paused();
                if !idle {
                    lock.release(); // stopped (or queued again) meanwhile
                    return;
                }
                // Nobody came: we still hold the lock, so we lead again.
                tab.state.borrow_mut().lock = Some(lock.clone());
                tab.watch_lock(lock);
                spawn(async move {
                    if tab.promote(true).await.is_err() {
                        tab.give_up_lock();
                        tab.queue_for_lock();
                    }
                });
            }),
        );
    }

    /// The hidden leader handed over to us: take the lock.
    pub(super) fn on_handover(&self, to: &str) {
        if to == self.owner() && matches!(self.state.borrow().role, Role::Follower) {
            self.steal_lock();
        }
    }
}
