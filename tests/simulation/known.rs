//! `known(ids)` under way while the world steps: the dispatching tab's look-up begins in one
//! step (its read of storage sees the store as it was then) and answers a step or more later,
//! batches having landed meanwhile, compaction pushing tombstones out of a small memory. Every
//! id stored (whole or as a tombstone) when it began and when it answered is answered, and
//! `explain(id)` answers whatever `operation(id)` answers. Drawn from a stream of its own, so
//! the rest of the world draws what it drew without it.

use canvas_scheduler_core::retention::Tombstone;

use super::*;

/// A `known(ids)` of a dispatching tab, its read done, its answer not yet given.
pub(super) struct KnownLookUp {
    owner: String,
    ids: Vec<String>,
    /// What the read found (the store as it was when the look-up began).
    found: Vec<Tombstone>,
    /// The ids stored then, whole or as a tombstone.
    stored: BTreeSet<String>,
}

impl World {
    /// Whether the store holds `id`, whole or as a tombstone.
    fn stores(&self, id: &str) -> bool {
        self.store.operation(id).is_some() || !self.store.tombstones_of([id]).is_empty()
    }

    /// Now and then a look-up of every id ever made begins, or the one under way answers.
    pub(super) fn known_turn(&mut self) {
        match self.look_up.take() {
            Some(look_up) if self.look_up_rng.chance(50) => self.end_known(look_up),
            Some(look_up) => self.look_up = Some(look_up),
            None if self.look_up_rng.chance(20) => self.begin_known(),
            None => {}
        }
    }

    fn begin_known(&mut self) {
        let Some(l) = self.leader().filter(|&l| self.leads(l)) else {
            return;
        };
        let ids: Vec<String> = (1..=self.next_op).map(|n| format!("op{n}")).collect();
        let unread = self.tabs[l].scheduler.begin_known(&ids);
        let found = self.store.tombstones_of(unread.iter().map(String::as_str));
        let stored = ids.iter().filter(|id| self.stores(id)).cloned().collect();
        self.look_up = Some(KnownLookUp {
            owner: self.tabs[l].scheduler.config().owner.clone(),
            ids,
            found,
            stored,
        });
    }

    /// Whether tab `t` dispatches and holds the lease in the store: what it has not written
    /// itself, no other tab has.
    fn leads(&self, t: usize) -> bool {
        let tab = &self.tabs[t];
        tab.scheduler.is_leader()
            && !tab.scheduler.is_closed()
            && self
                .store
                .lease()
                .is_some_and(|lease| lease.owner == tab.scheduler.config().owner)
    }

    fn end_known(&mut self, look_up: KnownLookUp) {
        // A tab that died took its look-up with it.
        let Some(t) = self.tabs.iter().position(|tab| {
            tab.scheduler.config().owner == look_up.owner && !tab.scheduler.is_closed()
        }) else {
            return;
        };
        let answers = self.tabs[t]
            .scheduler
            .end_known(&look_up.ids, look_up.found);
        if !self.leads(t) {
            return; // another tab took over meanwhile: it writes what this one does not see
        }
        for (id, answer) in look_up.ids.iter().zip(&answers) {
            let must = look_up.stored.contains(id) && self.stores(id);
            self.counts.known_checked += u64::from(must);
            if must && answer.is_none() {
                self.fail(&format!(
                    "known({id}) answered nothing, though it was stored when the look-up began and still is"
                ));
            }
            let scheduler = &self.tabs[t].scheduler;
            let operation = scheduler.known(id).is_some();
            if operation != scheduler.explain(self.now, id).is_ok() {
                self.fail(&format!(
                    "operation({id}) {} but explain({id}) {}",
                    if operation { "answers" } else { "does not" },
                    if operation { "does not" } else { "does" }
                ));
            }
        }
    }
}
