//! Enqueues until their write: what each admission changed, so that one whose write fails is
//! refused and leaves nothing behind (`storage`).
//!
//! An admission records how to undo itself as it goes (the operations it inserted, those it
//! replaced as they were, the coalescing pointers and sequence counter before it), and holds
//! back what it would tell the host (an operation it superseded, one it found blocked) until
//! its write succeeds: a refused enqueue replaced nothing the host heard of. Once its batch
//! is durable the record goes. A failed batch refuses every admission not yet written (later
//! ones may depend on it or replace what it replaced), newest first.

use std::collections::BTreeSet;

use super::Scheduler;
use crate::host::Host;
use crate::io::{BatchNo, Effect, Report};
use crate::model::Operation;

/// One step that undoes part of an admission.
#[derive(Debug)]
enum Undo {
    /// The sequence counter before it.
    LastSequence(u64),
    /// A coalesce key's latest pending operation before it.
    Coalescible(String, Option<String>),
    /// An operation it inserted.
    Inserted(String),
    /// An operation it replaced (coalescing), as it was.
    Replaced(Box<Operation>),
}

/// An enqueue (or an adoption) not yet written.
#[derive(Debug, Default)]
pub(super) struct Admission {
    /// The batch that writes it.
    barrier: BatchNo,
    undo: Vec<Undo>,
    /// What the host hears once it is written.
    reports: Vec<Report>,
}

impl<H: Host> Scheduler<H> {
    /// Starts recording an admission of operations with these coalesce keys.
    pub(super) fn begin_admission(&mut self, keys: BTreeSet<String>) {
        let mut admission = Admission::default();
        admission
            .undo
            .push(Undo::LastSequence(self.ledger.meta().last_sequence));
        for key in keys {
            let latest = self.coalescible.get(&key).cloned();
            admission.undo.push(Undo::Coalescible(key, latest));
        }
        self.admitting = Some((admission, self.effects.len()));
    }

    /// Records that the admission under way inserted `id`.
    pub(super) fn note_inserted(&mut self, id: &str) {
        if let Some((admission, _)) = self.admitting.as_mut() {
            admission.undo.push(Undo::Inserted(id.to_owned()));
        }
    }

    /// Records an operation the admission under way is about to replace, as it is now.
    pub(super) fn note_replaced(&mut self, op: Operation) {
        if let Some((admission, _)) = self.admitting.as_mut() {
            admission.undo.push(Undo::Replaced(Box::new(op)));
        }
    }

    /// Ends the admission under way: what it would have told the host waits for its write.
    pub(super) fn end_admission(&mut self) {
        let Some((mut admission, mark)) = self.admitting.take() else {
            return;
        };
        let mut kept = Vec::new();
        for effect in self.effects.drain(mark.min(self.effects.len())..) {
            match effect {
                Effect::Report(report) => admission.reports.push(report),
                other => kept.push(other),
            }
        }
        self.effects.extend(kept);
        // The batch open now writes it: the barrier the enqueue returns.
        admission.barrier = self.persist.next_no;
        self.admissions.push(admission);
    }

    /// Batch `durable` is written: the admissions it carried stand, and the host hears what
    /// they did.
    pub(super) fn admissions_written(&mut self, durable: BatchNo) {
        let written = self
            .admissions
            .iter()
            .take_while(|a| a.barrier <= durable)
            .count();
        for admission in self.admissions.drain(..written).collect::<Vec<_>>() {
            for report in admission.reports {
                self.report(report);
            }
        }
    }

    /// A write failed: every admission not yet written is refused, newest first. The
    /// requests frozen from its operations go (never sent: their freeze was not written), what
    /// it replaced is put back
    /// and offered again, and the host never hears of it.
    pub(super) fn refuse_admissions(&mut self) {
        let admissions = std::mem::take(&mut self.admissions);
        if admissions.is_empty() {
            return;
        }
        let inserted: BTreeSet<String> = admissions
            .iter()
            .flat_map(|a| &a.undo)
            .filter_map(|undo| match undo {
                Undo::Inserted(id) => Some(id.clone()),
                _ => None,
            })
            .collect();
        let frozen: BTreeSet<String> = self
            .ledger
            .requests()
            .filter(|r| r.operation_ids.iter().any(|id| inserted.contains(id)))
            .map(|r| r.id.clone())
            .collect();
        for id in &frozen {
            self.forget_request(id);
        }
        self.ledger.forget_events_of(&inserted, &frozen);
        for admission in admissions.into_iter().rev() {
            for undo in admission.undo.into_iter().rev() {
                self.undo(undo);
            }
        }
    }

    /// A request frozen from a refused enqueue's operations: it never left (its freeze was
    /// not written), so it goes with its claims; its other operations are ready again.
    fn forget_request(&mut self, id: &str) {
        self.active.remove(id);
        self.retries.cancel(id);
        self.deferred.remove(id);
        let Some(request) = self.ledger.forget_unwritten_request(id) else {
            return;
        };
        let woken = self.claims.release(id, &request.canvas_ids);
        self.wake(woken);
        for op in &request.operation_ids {
            self.consider_ready(op);
        }
    }

    fn undo(&mut self, undo: Undo) {
        match undo {
            Undo::LastSequence(sequence) => self.ledger.set_last_sequence(sequence),
            Undo::Coalescible(key, Some(latest)) => {
                self.coalescible.insert(key, latest);
            }
            Undo::Coalescible(key, None) => {
                self.coalescible.remove(&key);
            }
            Undo::Inserted(id) => self.forget_operation(&id),
            Undo::Replaced(op) => {
                let id = op.intent.id.clone();
                self.ledger.restore_operation(*op);
                self.index(&id);
            }
        }
    }

    /// Takes an operation a refused enqueue inserted out of every index.
    fn forget_operation(&mut self, id: &str) {
        let Some(op) = self.ledger.forget_unwritten(id) else {
            return;
        };
        let sequence = op.intent.sequence;
        self.indexed.remove(id);
        self.ready.remove(sequence, id);
        self.lane_waiters.remove(sequence, id);
        self.unwait(id);
        self.coalescing.forget(id);
        self.dependents.remove(id);
        for dependents in self.dependents.values_mut() {
            dependents.remove(id);
        }
    }
}
