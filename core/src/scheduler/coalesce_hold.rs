//! `coalesceMs`: an operation with a `coalesceKey` is held back that long after it
//! was enqueued before it may be frozen, so a drag's updates replace each other in the ledger
//! (`supersede`) instead of each being frozen and sent: the drag sends its last position.
//!
//! A held operation waits on its own canvases, as an operation waits on a claimed canvas
//! (`claims.wait`): it reserves them, so a later operation touching them waits behind it and
//! per-canvas order holds. When the hold ends (a wake-up at the earliest end) it is offered
//! to the ready queue again; when a newer intent supersedes it, leaving the waiters wakes the
//! next one. Holds live in memory: after a reload nothing is held.

use std::collections::{BTreeMap, BTreeSet};

use super::Scheduler;
use crate::host::Host;
use crate::model::Millis;

/// Operations held back, by id and by end.
#[derive(Debug, Default)]
pub(super) struct CoalesceHolds {
    until: BTreeMap<String, Millis>,
    by_end: BTreeSet<(Millis, String)>,
}

impl CoalesceHolds {
    /// Holds `id` until `end`.
    pub(super) fn hold(&mut self, id: &str, end: Millis) {
        if let Some(previous) = self.until.insert(id.to_owned(), end) {
            self.by_end.remove(&(previous, id.to_owned()));
        }
        self.by_end.insert((end, id.to_owned()));
    }

    /// When `id`'s hold ends, if it is held.
    pub(super) fn end_of(&self, id: &str) -> Option<Millis> {
        self.until.get(id).copied()
    }

    /// Forgets `id`'s hold.
    pub(super) fn forget(&mut self, id: &str) {
        if let Some(end) = self.until.remove(id) {
            self.by_end.remove(&(end, id.to_owned()));
        }
    }

    /// The earliest end of a hold.
    pub(super) fn next_end(&self) -> Option<Millis> {
        self.by_end.first().map(|(end, _)| *end)
    }

    /// Takes every hold that ended at `now`.
    pub(super) fn take_ended(&mut self, now: Millis) -> Vec<String> {
        let mut ended = Vec::new();
        while let Some((end, id)) = self.by_end.first().cloned() {
            if end > now {
                break;
            }
            self.by_end.pop_first();
            self.until.remove(&id);
            ended.push(id);
        }
        ended
    }

    /// Moves every end `by` ms earlier (the wall clock went back by that much).
    pub(super) fn shift_earlier(&mut self, by: Millis) {
        for end in self.until.values_mut() {
            *end = end.saturating_sub(by);
        }
        self.by_end = self
            .until
            .iter()
            .map(|(id, end)| (*end, id.clone()))
            .collect();
    }

    /// Drops every hold.
    pub(super) fn clear(&mut self) {
        self.until.clear();
        self.by_end.clear();
    }
}

impl<H: Host> Scheduler<H> {
    /// An operation just admitted: held back `coalesceMs` if it has a `coalesceKey`.
    pub(super) fn hold_for_coalescing(&mut self, now: Millis, id: &str) {
        let coalesce_ms = self.config.coalesce_ms;
        let keyed = self
            .ledger
            .operation(id)
            .is_some_and(|op| op.intent.coalesce_key.is_some());
        if coalesce_ms > 0 && keyed {
            self.coalescing.hold(id, now.saturating_add(coalesce_ms));
        }
    }

    /// Whether `id` is held back at `now`; a hold that ended is forgotten.
    pub(super) fn held_for_coalescing(&mut self, now: Millis, id: &str) -> bool {
        match self.coalescing.end_of(id) {
            Some(end) if end > now => true,
            Some(_) => {
                self.coalescing.forget(id);
                false
            }
            None => false,
        }
    }

    /// Offers every operation whose hold ended to the ready queue.
    pub(super) fn release_ended_holds(&mut self, now: Millis) {
        for id in self.coalescing.take_ended(now) {
            self.consider_ready(&id);
        }
    }
}
