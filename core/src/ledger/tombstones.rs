//! Tombstones at hand (compacted in this session or looked up) and the counts of what
//! retention keeps: the retention policy as the ledger applies it.

use super::Ledger;
use crate::retention::{RetentionPolicy, Tombstone};

/// A tombstone at hand, with the stamp of its last use (kept, or answered by a look-up): the
/// least recently used leaves memory first.
#[derive(Debug)]
pub(super) struct AtHand {
    pub(super) used: u64,
    pub(super) tombstone: Tombstone,
}

impl Ledger {
    /// The tombstone of a compacted operation, if it is at hand (compacted in this session
    /// or looked up with [`Ledger::learn_tombstones`]).
    pub fn tombstone(&self, id: &str) -> Option<&Tombstone> {
        self.tombstones.get(id).map(|at| &at.tombstone)
    }

    /// Tombstones looked up in storage: kept at hand for the enqueue or the `known(ids)` that
    /// asked (the most recently used stay).
    pub fn learn_tombstones(&mut self, found: Vec<Tombstone>) {
        for tombstone in found {
            if !self.operations.contains_key(&tombstone.id) {
                self.keep_tombstone(tombstone);
            }
        }
    }

    /// A look-up of stored tombstones begins: the driver reads storage for the ids that are
    /// neither stored whole nor at hand, and answers with what memory holds once the read is
    /// done. Until [`Ledger::end_look_up`], no tombstone leaves memory, so an id in memory when
    /// the look-up began is still there when it ends (a batch that lands meanwhile turns an
    /// operation into its tombstone at hand, and would otherwise push older ones out: ids the
    /// look-up did not read, since they were at hand).
    pub fn begin_look_up(&mut self) {
        self.look_ups += 1;
    }

    /// A look-up is over (answered or failed): memory goes back to its limit, the least
    /// recently used first.
    pub fn end_look_up(&mut self) {
        self.look_ups = self.look_ups.saturating_sub(1);
        self.trim_memory();
    }

    /// Marks a tombstone at hand as just used (a look-up answered with it): it stays at hand
    /// longer than those not asked for since.
    pub fn touch_tombstone(&mut self, id: &str) {
        self.tombstone_uses += 1;
        let used = self.tombstone_uses;
        if let Some(at) = self.tombstones.get_mut(id) {
            self.tombstone_order.remove(&(at.used, id.to_owned()));
            at.used = used;
            self.tombstone_order.insert((used, id.to_owned()));
        }
    }

    /// Most tombstones kept at hand once no look-up is under way.
    pub fn memory_limit(&self) -> usize {
        self.memory_limit
    }

    /// Most tombstones kept at hand once no look-up is under way (`MEMORY_LIMIT`; tests lower
    /// it to reach the limit with few operations).
    pub fn set_memory_limit(&mut self, limit: usize) {
        self.memory_limit = limit;
        self.trim_memory();
    }

    pub(super) fn keep_tombstone(&mut self, mut tombstone: Tombstone) {
        self.forget_tombstone(&tombstone.id);
        if self.archive_keep == 0 {
            tombstone.whole = None;
        }
        if tombstone.whole.is_some() {
            self.whole_order
                .insert((tombstone.key, tombstone.id.clone()));
            if self.whole_order.len() > self.archive_keep {
                // The oldest whole copy at hand goes (the archive in storage still has it
                // while the policy keeps it).
                if let Some((_, id)) = self.whole_order.pop_first() {
                    if let Some(old) = self.tombstones.get_mut(&id) {
                        old.tombstone.whole = None;
                    } else if id == tombstone.id {
                        tombstone.whole = None;
                    }
                }
            }
        }
        self.tombstone_uses += 1;
        let used = self.tombstone_uses;
        self.tombstone_order.insert((used, tombstone.id.clone()));
        self.tombstones
            .insert(tombstone.id.clone(), AtHand { used, tombstone });
        self.trim_memory();
    }

    /// Forgets the least recently used tombstones past the memory limit (storage still has
    /// them), unless a look-up is under way.
    fn trim_memory(&mut self) {
        while self.look_ups == 0 && self.tombstones.len() > self.memory_limit {
            let Some((_, id)) = self.tombstone_order.pop_first() else {
                break;
            };
            self.forget_tombstone(&id);
        }
    }

    /// Drops a tombstone at hand (memory only).
    pub(super) fn forget_tombstone(&mut self, id: &str) {
        if let Some(old) = self.tombstones.remove(id) {
            self.tombstone_order.remove(&(old.used, id.to_owned()));
            if old.tombstone.whole.is_some() {
                self.whole_order.remove(&(old.tombstone.key, id.to_owned()));
            }
        }
    }

    /// Settled operations at hand whole in the archive's memory (compacted in this session or
    /// looked up, at most the policy's `settled`).
    pub fn archived_count(&self) -> usize {
        self.whole_order.len()
    }

    /// Settled operations kept whole.
    pub fn settled_count(&self) -> usize {
        self.resolved
    }

    /// [`Ledger::settled_count`] by a walk of every operation (the simulation's check).
    pub fn settled_count_walked(&self) -> usize {
        self.operations
            .values()
            .filter(|slot| slot.op.phase == crate::model::OperationPhase::Resolved)
            .count()
    }

    /// Tombstones stored, as counted at load plus those written since (bounded by the policy).
    pub fn tombstone_count(&self) -> u64 {
        self.tombstone_count
    }

    /// Adds the tombstones counted in storage as the load saw it (the browser store counts
    /// them after the load, off its transaction).
    pub fn add_tombstone_count(&mut self, stored: u64) {
        let total = self.tombstone_count.saturating_add(stored);
        if total > self.retain.tombstones as u64 {
            // Past the count: the next slice keeps the newest (a walk of the pages' hashes).
            self.trim_due = true;
            self.stalled = false;
        }
        self.tombstone_count = total.min(self.retain.tombstones as u64);
    }

    /// Tombstones this session has written or is writing (the batch in flight, and one
    /// durable but not yet forgotten): a count begun now sees them, so the driver subtracts
    /// this from what it counts.
    pub fn tombstones_written(&self) -> u64 {
        let in_flight = self.in_flight.as_ref().map_or(0, |b| b.compacted.len());
        self.written_tombstones + (in_flight + self.durably_compacted.0.len()) as u64
    }

    /// The highest tombstone key stored (0: no tombstone was ever written).
    pub fn last_tombstone_key(&self) -> u64 {
        self.last_tombstone_key
    }

    /// Sets the retention policy: the working stores keep nothing settled whole,
    /// the archive keeps what `policy` keeps.
    pub fn set_retention(&mut self, policy: RetentionPolicy) {
        self.archive_keep = if policy.keeps_nothing() {
            0
        } else {
            policy.settled
        };
        self.archive_ms = policy.settled_ms;
        self.retain = RetentionPolicy {
            settled: 0,
            settled_ms: 0,
            ..policy
        };
    }
}
