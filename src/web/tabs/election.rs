//! Who dispatches: the Web Lock for liveness, the fenced lease for safety.

use std::rc::Rc;

use crate::web::task::spawn;

use canvas_scheduler_core::{Clock, ErrorCode, Report, SchedulerError};

use super::events;
use super::locks::{Grant, LockRequest};
use super::{Role, Tab, TabMessage};
use crate::web::driver::{Driver, ReportSink};

impl Tab {
    /// The name of this ledger's Web Lock and `BroadcastChannel`.
    pub(super) fn lock_name(&self) -> String {
        format!("canvas-scheduler:{}", self.state.borrow().options.database)
    }

    /// How often a leader rescans the inbox and a follower checks the lease.
    fn tick_ms(&self) -> u64 {
        (self.state.borrow().options.config.lease_ms / 2).clamp(250, 1_000)
    }

    /// At open: lead now if the lock is free (or, without Web Locks, if the lease is), else
    /// follow and queue for the lock. Storage failures while loading reject `open()`.
    pub(super) async fn elect_at_open(&self) -> Result<(), SchedulerError> {
        let locks = self.state.borrow().locks.clone();
        let Some(locks) = locks else {
            return match self.promote(false).await {
                Err(error) if error.code == ErrorCode::NotLeader => {
                    self.say_hello();
                    Ok(())
                }
                other => other,
            };
        };
        let request = Rc::new(locks.request(&self.lock_name(), true, false));
        if request.granted().await == Grant::Granted {
            self.state.borrow_mut().lock = Some(request.clone());
            self.watch_lock(request);
            if let Err(error) = self.promote(true).await {
                self.give_up_lock();
                return Err(error);
            }
        } else {
            self.queue_for_lock();
            self.say_hello();
        }
        Ok(())
    }

    /// Waits in the lock's queue; when granted, takes over.
    pub(super) fn queue_for_lock(&self) {
        if self.is_paused() {
            return; // joins again when the page is back
        }
        let locks = self.state.borrow().locks.clone();
        let Some(locks) = locks else { return };
        self.request_lock(Rc::new(locks.request(&self.lock_name(), false, false)));
    }

    /// Steals the lock from a leader that stopped renewing its lease (frozen).
    pub(super) fn steal_lock(&self) {
        if self.is_paused() {
            return;
        }
        let locks = self.state.borrow().locks.clone();
        let Some(locks) = locks else { return };
        self.give_up_lock();
        self.request_lock(Rc::new(locks.request(&self.lock_name(), false, true)));
    }

    fn request_lock(&self, request: Rc<LockRequest>) {
        self.state.borrow_mut().lock = Some(request.clone());
        let this = self.clone();
        spawn(async move {
            if request.granted().await != Grant::Granted {
                return;
            }
            let current = this.state.borrow().lock.clone();
            let ours = current.is_some_and(|c| Rc::ptr_eq(&c, &request));
            if !ours || !matches!(this.state.borrow().role, Role::Follower) {
                request.release();
                return;
            }
            this.watch_lock(request);
            if this.promote(true).await.is_err() {
                // Could not load (storage): let another tab try, and queue again.
                this.give_up_lock();
                this.queue_for_lock();
            }
        });
    }

    /// When a held lock ends without our release (stolen: we were judged frozen), stop
    /// dispatching; the fence already shuts this tab out.
    pub(super) fn watch_lock(&self, request: Rc<LockRequest>) {
        let this = self.clone();
        spawn(async move {
            request.finished().await;
            let current = this.state.borrow().lock.clone();
            if current.is_some_and(|c| Rc::ptr_eq(&c, &request)) {
                this.state.borrow_mut().lock = None;
                this.demote();
            }
        });
    }

    pub(super) fn give_up_lock(&self) {
        let lock = self.state.borrow_mut().lock.take();
        if let Some(lock) = lock {
            lock.release();
        }
    }

    /// Takes the lease (`takeover`: even from a live holder; only with the lock) and loads
    /// the ledger, then adopts the inbox and starts if the host started this tab.
    pub(super) async fn promote(&self, takeover: bool) -> Result<(), SchedulerError> {
        let (options, store) = {
            let mut state = self.state.borrow_mut();
            if !matches!(state.role, Role::Follower) || state.paused {
                return Ok(());
            }
            state.role = Role::Promoting;
            (state.options.clone(), state.store.clone())
        };
        let opened = Driver::open_on(store, options, Some(self.report_sink()), takeover).await;
        let (driver, quarantined) = match opened {
            Ok(opened) => opened,
            Err(error) => {
                let mut state = self.state.borrow_mut();
                if matches!(state.role, Role::Promoting) {
                    state.role = Role::Follower;
                }
                return Err(error);
            }
        };
        if !matches!(self.state.borrow().role, Role::Promoting) {
            driver.stop(); // stopped meanwhile
            return Ok(());
        }
        for record in &quarantined {
            self.emit_json(&events::quarantined(
                record.store,
                &record.key,
                &record.reason,
            ));
        }
        let holds: Vec<u64> = self.state.borrow().holds.keys().copied().collect();
        for hold in holds {
            let inner = driver.hold().ok();
            self.state.borrow_mut().holds.insert(hold, inner);
        }
        let owner = self.owner();
        let fence = driver.inspect(|s, _| s.stats().fence);
        {
            let mut state = self.state.borrow_mut();
            state.role = Role::Leader(driver.clone());
            state.leader_owner = Some(owner.clone());
            state.watched = None;
        }
        self.post(&TabMessage::Leader {
            owner: owner.clone(),
            fence,
        });
        self.emit_json(&events::leader_changed(true, Some(&owner), fence));
        self.adopt().await;
        self.catch_up().await;
        let started = if self.state.borrow().started {
            driver.start()
        } else {
            driver.wake(); // renews the lease until the host starts this tab
            Ok(())
        };
        // Once started: a `whenSaved()` asked of the old leader covers what recovery finds.
        self.serve_pending_locally();
        started
    }

    /// Stops dispatching after losing the lock or the lease; follows and queues again.
    pub(super) fn demote(&self) {
        let driver = {
            let mut state = self.state.borrow_mut();
            match std::mem::replace(&mut state.role, Role::Follower) {
                Role::Leader(driver) => Some(driver),
                Role::Closed => {
                    state.role = Role::Closed;
                    return;
                }
                Role::Promoting => None, // `promote` sees this and stops what it opened
                Role::Follower => return,
            }
        };
        let Some(driver) = driver else {
            self.give_up_lock();
            self.queue_for_lock();
            return;
        };
        {
            let mut state = self.state.borrow_mut();
            state.leader_owner = None;
            for inner in state.holds.values_mut() {
                *inner = None;
            }
        }
        driver.stop();
        self.give_up_lock();
        self.emit_json(&events::leader_changed(false, None, None));
        self.queue_for_lock();
        self.say_hello();
    }

    /// The dispatcher's reports: delivered here, relayed to the other tabs; a lost lease
    /// makes this tab follow.
    fn report_sink(&self) -> ReportSink {
        let weak = Rc::downgrade(&self.state);
        Rc::new(move |report: &Report| {
            let Some(state) = weak.upgrade() else { return };
            let tab = Tab { state };
            match report {
                // The tab announces leadership itself, with the leader's identity.
                Report::LeaderChanged { leader: true, .. } => {}
                Report::LeaderChanged { leader: false, .. } => {
                    let tab = tab.clone();
                    spawn(async move { tab.demote() });
                }
                other => tab.on_report(other),
            }
        })
    }

    pub(super) fn arm_tick(&self) {
        let delay = self.tick_ms();
        let weak = Rc::downgrade(&self.state);
        let mut state = self.state.borrow_mut();
        if matches!(state.role, Role::Closed) || state.paused {
            return;
        }
        let handle = state.clock.set_timer(
            delay,
            Box::new(move || {
                let Some(state) = weak.upgrade() else { return };
                let tab = Tab { state };
                tab.state.borrow_mut().timer = None;
                tab.tick();
                tab.arm_tick();
            }),
        );
        state.timer = Some(handle);
    }

    /// Leader: rescan the inbox. Loading: say so. Follower: watch the lease.
    fn tick(&self) {
        let this = self.clone();
        match self.state.borrow().role {
            Role::Leader(_) => spawn(async move { this.adopt().await }),
            Role::Promoting => {
                let owner = this.owner();
                this.post(&TabMessage::Loading { owner });
            }
            Role::Follower => spawn(async move {
                this.watch_lease().await;
                this.confirm_hinted().await;
            }),
            Role::Closed => {}
        }
    }

    /// A follower reads the lease: who leads, and whether the leader still renews. A lease
    /// expired and unchanged for a whole lease period means a frozen (or vanished) leader.
    async fn watch_lease(&self) {
        let store = self.store();
        let Ok(lease) = store.read_lease().await else {
            return;
        };
        let (now, lease_ms, has_locks) = {
            let state = self.state.borrow();
            (
                state.clock.now(),
                state.options.config.lease_ms,
                state.locks.is_some(),
            )
        };
        let live = lease.as_ref().filter(|l| l.expires_at > now).cloned();
        let frozen_since = {
            let mut state = self.state.borrow_mut();
            if !matches!(state.role, Role::Follower) {
                return;
            }
            if let Some(live) = &live {
                if state.leader_owner.as_deref() != Some(live.owner.as_str()) {
                    state.leader_owner = Some(live.owner.clone());
                }
                state.watched = None;
                None
            } else {
                match &state.watched {
                    Some((seen, since)) if *seen == lease => Some(*since),
                    _ => {
                        state.watched = Some((lease.clone(), now));
                        Some(now)
                    }
                }
            }
        };
        let Some(since) = frozen_since else { return };
        if !has_locks {
            // The lease alone decides: take it now that it has expired.
            let _ = self.promote(false).await;
        } else if now.saturating_sub(since) >= lease_ms {
            self.state.borrow_mut().watched = None;
            self.steal_lock();
        }
    }

    fn say_hello(&self) {
        let from = self.owner();
        self.post(&TabMessage::Hello { from });
    }
}
