//! Tombstones at hand (compacted in this session or looked up) and the counts of what
//! retention keeps: the retention policy as the ledger applies it.

use super::Ledger;
use crate::core::retention::{RetentionPolicy, Tombstone, MEMORY_LIMIT};

impl Ledger {
    /// The tombstone of a compacted operation, if it is at hand (compacted in this session
    /// or looked up with [`Ledger::learn_tombstones`]).
    pub fn tombstone(&self, id: &str) -> Option<&Tombstone> {
        self.tombstones.get(id)
    }

    /// Tombstones looked up in storage: kept at hand for the enqueue that asked.
    pub fn learn_tombstones(&mut self, found: Vec<Tombstone>) {
        for tombstone in found {
            if !self.operations.contains_key(&tombstone.id) {
                self.keep_tombstone(tombstone);
            }
        }
    }

    pub(super) fn keep_tombstone(&mut self, mut tombstone: Tombstone) {
        self.forget_tombstone(&tombstone.id);
        if self.tombstones.len() >= MEMORY_LIMIT {
            // Forget the oldest at hand (the order index, not a walk: a slice keeps up to 256
            // a batch); storage still has it.
            if let Some((_, id)) = self.tombstone_order.pop_first() {
                self.forget_tombstone(&id);
            }
        }
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
                        old.whole = None;
                    } else if id == tombstone.id {
                        tombstone.whole = None;
                    }
                }
            }
        }
        self.tombstone_order
            .insert((tombstone.key, tombstone.id.clone()));
        self.tombstones.insert(tombstone.id.clone(), tombstone);
    }

    /// Drops a tombstone at hand (memory only).
    pub(super) fn forget_tombstone(&mut self, id: &str) {
        if let Some(old) = self.tombstones.remove(id) {
            self.tombstone_order.remove(&(old.key, old.id.clone()));
            if old.whole.is_some() {
                self.whole_order.remove(&(old.key, old.id));
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
    #[cfg(any(test, feature = "testing"))]
    pub fn settled_count_walked(&self) -> usize {
        self.operations
            .values()
            .filter(|slot| slot.op.phase == crate::core::model::OperationPhase::Resolved)
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

    /// Sets the retention policy: the working stores keep nothing settled whole (issue 38),
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
