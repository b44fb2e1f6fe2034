//! Tabs come and go: opened, crashed, paused past their lease, the power cut, another user
//! logged in.

use super::*;

impl World {
    /// Opens a tab that takes the lease and loads the ledger, if the lease is free.
    pub(super) fn open_tab(&mut self) -> bool {
        self.next_tab += 1;
        let config = SchedulerConfig {
            owner: format!("tab-{}", self.next_tab),
            principal: Some(self.principal.to_owned()),
            ..self.config.clone()
        };
        if self
            .store
            .acquire(&config.owner, self.now, config.lease_ms)
            .is_err()
        {
            return false;
        }
        let host = CountingHost::new(&format!("t{}", self.next_tab));
        let mut scheduler = match Scheduler::new(config, host, self.store.snapshot()) {
            Ok(s) => s,
            Err(e) => self.fail(&format!("new: {e}")),
        };
        if self.config.retain != RetentionPolicy::default() {
            // Memory keeps a few tombstones: nearly every look-up reads storage, and a batch
            // that compacts pushes tombstones out of memory.
            scheduler.set_memory_limit(2 + (self.seed % 7) as usize);
        }
        self.tabs.push(Tab {
            scheduler,
            persists: Vec::new(),
            wire: Vec::new(),
            timer: None,
            paused_until: 0,
            storage_failed: false,
            pending_acks: Vec::new(),
            pending_discards: Vec::new(),
            holds: Vec::new(),
            online: true,
            authorizing: Vec::new(),
            left: 0,
            saved_watches: Vec::new(),
            adoption: None,
            unwritten_attempts: BTreeSet::new(),
        });
        let t = self.tabs.len() - 1;
        // The new leader adopts the intake before it starts: before recovery sends.
        self.adopt_intake(t);
        if let Err(e) = self.tabs[t].scheduler.start(self.now) {
            self.fail(&format!("start: {e}"));
        }
        self.collect(t);
        true
    }

    /// The host does what an editor does for a blocked operation once things are well: a new
    /// login (`resume()`) for unauthorized requests, `retry()` for dead letters. Returns
    /// whether it did anything.
    pub(super) fn heal(&mut self) -> bool {
        let Some(l) = self
            .leader()
            .filter(|&l| self.tabs[l].scheduler.is_leader())
        else {
            return false;
        };
        let now = self.now;
        let scheduler = &mut self.tabs[l].scheduler;
        let blocked: Vec<(String, String)> = scheduler
            .ledger()
            .requests()
            .filter(|r| r.is_unresolved())
            .filter_map(|r| Some((r.blocked.clone()?, r.operation_ids.first()?.clone())))
            .collect();
        if blocked.is_empty() {
            return false;
        }
        if blocked.iter().any(|(why, _)| why == "unauthorized") {
            let _ = scheduler.resume(now);
        }
        for (why, op) in &blocked {
            if why != "unauthorized" {
                if let Err(e) = scheduler.retry(now, op) {
                    self.fail(&format!("retry({op}) of a request blocked {why}: {e}"));
                }
            }
        }
        self.collect(l);
        true
    }

    /// The tab dies: unanswered attempts may still reach the server; an in-flight batch may
    /// or may not have committed. Then it restarts from durable state only.
    pub(super) fn crash(&mut self, t: usize) {
        if std::env::var("SIM_TRACE").is_ok() {
            eprintln!(
                "step {} crash of {}",
                self.counts.steps,
                self.tabs[t].scheduler.config().owner
            );
        }
        let tab = self.tabs.remove(t);
        self.die(tab);
        if self.rng.chance(10) {
            // The user comes back as someone else: the first one's work waits for them.
            self.switch_principal();
        }
        let _ = self.open_tab();
    }

    /// The machine loses power: every tab dies at once, as in [`World::crash`], and
    /// storage keeps only a prefix of the relaxed commits since the last strict one. What it
    /// drops (answers, retry schedules, events, compaction) a query recovers.
    pub(super) fn power_loss(&mut self) {
        if std::env::var("SIM_TRACE").is_ok() {
            eprintln!("step {} power loss", self.counts.steps);
        }
        while !self.tabs.is_empty() {
            let tab = self.tabs.remove(0);
            self.die(tab);
        }
        let rng = &mut self.rng;
        self.counts.relaxed_lost +=
            self.store.power_loss(|n| rng.below(n as u64 + 1) as usize) as u64;
        self.counts.power_losses += 1;
        let _ = self.open_tab();
    }

    /// A tab's end: what it had on the wire may reach the server, its batch being written
    /// may land.
    pub(super) fn die(&mut self, mut tab: Tab) {
        for order in tab.wire.drain(..) {
            if self.rng.chance(50) {
                let _ = self
                    .server
                    .handle(order.action, &order.request, ServerFaults::default());
            }
        }
        if let Some(batch) = tab.persists.first() {
            if self.rng.chance(50) {
                let _ = self.store.apply(batch);
            }
        }
        tab.scheduler.stop();
    }

    pub(super) fn switch_principal(&mut self) {
        self.principal = if self.principal == "user-1" {
            "user-2"
        } else {
            "user-1"
        };
        self.counts.principal_switches += 1;
    }

    /// The other user logs in: every open tab closes (logout), the lease lapses, and a tab of
    /// the other principal takes the ledger.
    pub(super) fn log_in_as_the_other(&mut self) {
        for mut tab in self.tabs.drain(..) {
            tab.scheduler.stop();
        }
        self.switch_principal();
        self.now = self.now.max(self.store.lease().map_or(0, |l| l.expires_at)) + 1;
        if !self.open_tab() {
            self.fail("no tab could take the lapsed lease");
        }
    }
}
