//! The end of a seed: faults healed, every tab given time until all work has settled, then
//! the final checks.

use super::*;

impl World {
    /// Heals the world and runs until nothing moves; then checks that nothing was lost.
    pub(super) fn finish(&mut self) {
        self.faults_on = false;
        let now = self.now;
        for t in 0..self.tabs.len() {
            let tab = &mut self.tabs[t];
            tab.paused_until = 0;
            for hold in tab.holds.drain(..) {
                tab.scheduler.release(now, hold);
            }
            if !tab.online {
                tab.online = true;
                tab.scheduler.set_online(now, true);
            }
            self.collect(t);
        }
        let mut heals = 0;
        // Timers fired since the last login: the user logged in gets up to 50 (a group
        // commit, a retry, a lease renewal) before the other user is let in.
        let mut timers_this_login = 0;
        for _ in 0..20_000 {
            let mut moved = false;
            for t in 0..self.tabs.len() {
                if !self.tabs[t].persists.is_empty() {
                    self.answer_persist(t, false);
                    moved = true;
                }
                if !self.tabs[t].authorizing.is_empty() {
                    let order = self.tabs[t].authorizing.remove(0);
                    self.tabs[t].scheduler.on_authorized(
                        self.now,
                        order.attempt,
                        Authorization::Allowed,
                    );
                    self.collect(t);
                    moved = true;
                }
                if !self.tabs[t].wire.is_empty() {
                    let order = self.tabs[t].wire.remove(0);
                    let status =
                        self.server
                            .handle(order.action, &order.request, ServerFaults::default());
                    self.tabs[t]
                        .scheduler
                        .on_answer(self.now, order.attempt, status);
                    self.collect(t);
                    moved = true;
                }
                if self.tabs[t].scheduler.is_leader() && self.intake_turn(t) {
                    moved = true;
                }
            }
            self.check_invariants();
            if moved {
                continue;
            }
            // Tabs that keep their lease alive always have a renewal timer: stop once every
            // durable operation is settled (a stranded one runs the loop out).
            if self.intake.is_empty()
                && self
                    .store
                    .snapshot()
                    .operations
                    .iter()
                    .all(|op| self.is_settled(op))
            {
                break;
            }
            if heals < 100 && self.heal() {
                heals += 1;
                continue;
            }
            // What is left may belong to the other user: it waits for their login.
            // Who is logged in is whoever the dispatching tab serves (a crash may have switched
            // users while an older tab of the first one kept the lease).
            if let Some(l) = self.leader() {
                let serves = self.tabs[l].scheduler.config().principal.as_deref();
                self.principal = if serves == Some("user-2") {
                    "user-2"
                } else {
                    "user-1"
                };
            }
            let unsettled: Vec<bool> = self
                .store
                .snapshot()
                .operations
                .iter()
                .filter(|op| !self.is_settled(op))
                .map(|op| op.intent.principal.as_deref() == Some(self.principal))
                .collect();
            let other_users_work = unsettled.iter().any(|mine| !mine);
            let own_work = unsettled.iter().any(|mine| *mine) || !self.intake.is_empty();
            let timer = self.tabs.iter().any(|t| t.timer.is_some());
            if other_users_work
                && self.counts.principal_switches < 1_000
                && (!own_work || !timer || timers_this_login >= 50)
            {
                self.log_in_as_the_other();
                timers_this_login = 0;
                continue;
            }
            if self
                .leader()
                .is_none_or(|l| !self.tabs[l].scheduler.is_leader())
                && self.open_tab()
            {
                continue;
            }
            let next = self.tabs.iter().filter_map(|t| t.timer).min();
            match next {
                Some(at) => {
                    timers_this_login += 1;
                    self.now = self.now.max(at);
                    for t in 0..self.tabs.len() {
                        if self.tabs[t].timer.is_some_and(|due| due <= self.now) {
                            self.tabs[t].timer = None;
                            self.tabs[t].scheduler.on_timer(self.now);
                            self.collect(t);
                        }
                    }
                }
                None if self.store.lease().is_some_and(|l| l.expires_at >= self.now)
                    && self
                        .leader()
                        .is_none_or(|l| !self.tabs[l].scheduler.is_leader()) =>
                {
                    self.now = self.store.lease().map_or(self.now, |l| l.expires_at) + 1;
                }
                None => break,
            }
        }
        // Storage healed, and no host calls resume(): a tab still failing its writes (work
        // settled meanwhile elsewhere) recovers by itself on its own wake-ups, or learns that
        // another took the lease.
        for t in 0..self.tabs.len() {
            for _ in 0..10 {
                let scheduler = &self.tabs[t].scheduler;
                if !scheduler.is_storage_failing() || scheduler.is_closed() {
                    break;
                }
                let Some(at) = self.tabs[t].timer.take() else {
                    self.fail("storage failing with no wake-up to try it again");
                };
                self.now = self.now.max(at);
                self.tabs[t].scheduler.on_timer(self.now);
                self.collect(t);
                while !self.tabs[t].persists.is_empty() {
                    self.answer_persist(t, false);
                }
            }
            let scheduler = &self.tabs[t].scheduler;
            if scheduler.is_storage_failing() && !scheduler.is_closed() {
                self.fail(&format!(
                    "{} still failing its writes after storage healed",
                    scheduler.config().owner
                ));
            }
        }
        // The intake is empty: every entry adopted or set aside.
        if let Some((key, entry)) = self.intake.iter().next() {
            self.fail(&format!(
                "intake entry {key} of {} left unadopted at the end",
                entry.origin
            ));
        }
        let durable = self.store.snapshot();
        // A discard the host was told is durable stays: never sent again, settled discarded.
        for id in &self.discarded {
            let settlement = match durable.operations.iter().find(|o| &o.intent.id == id) {
                Some(op) if op.phase == OperationPhase::Resolved => {
                    op.outcome.as_ref().map(|o| o.settlement)
                }
                Some(_) => None,
                None => self
                    .store
                    .tombstones_of([id.as_str()])
                    .pop()
                    .map(|t| t.settlement),
            };
            if settlement != Some(Settlement::Discarded) {
                self.fail(&format!(
                    "{id} was discarded durably, and ended {settlement:?}"
                ));
            }
        }
        // Nothing lost: every acknowledged operation ended applied, rejected or blocked with a reason.
        for id in &self.acknowledged {
            let Some(op) = durable.operations.iter().find(|o| &o.intent.id == id) else {
                // Set aside from the intake: refused for what the entry is (never for a
                // storage failure, a lost lease or a stopped tab, which leave it to be adopted).
                if let Some(code) = self.quarantined.get(id) {
                    if !ENQUEUE_CODES.contains(code) {
                        self.fail(&format!("{id} was set aside from the intake for {code}"));
                    }
                    continue;
                }
                // Compacted: settled for good, and applied at most once.
                let Some(tombstone) = self.store.tombstones_of([id.as_str()]).pop() else {
                    self.fail(&format!("acknowledged {id} is not in the durable ledger"));
                };
                let applied = self.server.applied.get(id).copied().unwrap_or(0);
                if tombstone.settlement == Settlement::Applied && applied != 1 {
                    self.fail(&format!("{id} compacted applied, applied {applied} times"));
                }
                continue;
            };
            match op.phase {
                OperationPhase::Resolved => {
                    let applied = self.server.applied.get(id).copied().unwrap_or(0);
                    let rejected = op
                        .outcome
                        .as_ref()
                        .is_some_and(|o| o.settlement.as_str() == "rejected");
                    if rejected && applied > 0 {
                        // A change the server kept is never reported rejected.
                        self.fail(&format!(
                            "{id} settled rejected but the server applied it: {:?} req {:?}",
                            op.outcome, op.request_id
                        ));
                    }
                    let settled_applied = op
                        .outcome
                        .as_ref()
                        .is_some_and(|o| o.settlement.as_str() == "applied");
                    if settled_applied && applied != 1 {
                        self.fail(&format!(
                            "{id} settled applied but the server applied it {applied} times"
                        ));
                    }
                }
                OperationPhase::Pending if self.is_settled(op) => {}
                OperationPhase::Pending if !op.blockers.is_empty() => {
                    self.fail(&format!(
                        "{id} still blocked at the end, after the host's resume and retry: {:?}",
                        op.blockers
                    ));
                }
                OperationPhase::Pending => {
                    let why = self.tabs.last().map(|t| t.scheduler.explain(self.now, id));
                    self.fail(&format!(
                        "{id} still pending and unblocked at the end: {why:?}"
                    ));
                }
            }
        }
    }
}
