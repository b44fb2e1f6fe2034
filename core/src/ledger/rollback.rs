//! Storage that fails: taking back what a refused enqueue added, and knowing what may be sent
//! with nothing written first.
//!
//! An enqueue whose write failed is refused, and leaves nothing behind
//! (`Scheduler::refuse_admissions` decides what goes): its operations were never written, the
//! requests frozen from them never left (nothing leaves before its freeze is written), and the operations it replaced (coalescing) are
//! put back as storage still holds them. A request whose stored copy carries its dispatch
//! marker may be sent again while writes fail: nothing about it needs writing first.

use std::collections::BTreeSet;

use super::Ledger;
use crate::model::{FrozenRequest, Operation, OperationPhase};
use crate::operation_pages::Home;

impl Ledger {
    /// Whether the stored copy of request `id` carries its dispatch marker: a send of it needs
    /// no write first (its retries and queries; a revision already takes it as possibly sent).
    pub fn marker_durable(&self, id: &str) -> bool {
        self.marked.contains(id)
    }

    /// Whether operation `id` is held and was never written (its enqueue's write is pending).
    pub fn is_unwritten(&self, id: &str) -> bool {
        self.operations
            .get(id)
            .is_some_and(|slot| slot.home == Home::Unwritten)
    }

    /// Removes an operation that was never written (its enqueue was refused) and returns it;
    /// `None`, changing nothing, if it was written.
    pub fn forget_unwritten(&mut self, id: &str) -> Option<Operation> {
        if self.operations.get(id)?.home != Home::Unwritten {
            return None;
        }
        let slot = self.operations.remove(id)?;
        if slot.op.phase == OperationPhase::Resolved {
            self.resolved -= 1;
        }
        self.with_dependencies.remove(id);
        self.dirty.operations.remove(id);
        Some(slot.op)
    }

    /// Puts an operation back as it was before a refused enqueue replaced it: storage still
    /// holds that copy, since the write that replaced it failed. It is written again with the
    /// next batch (other changes to it, a host's revision say, stand).
    pub fn restore_operation(&mut self, op: Operation) {
        let id = op.intent.id.clone();
        let Some(slot) = self.operations.get_mut(&id) else {
            return;
        };
        let was = slot.op.phase == OperationPhase::Resolved;
        let is = op.phase == OperationPhase::Resolved;
        slot.op = op;
        match (was, is) {
            (true, false) => self.resolved -= 1,
            (false, true) => self.resolved += 1,
            _ => {}
        }
        self.dirty.operations.insert(id);
    }

    /// Drops a request that was never written (frozen from a refused enqueue's operations),
    /// and its operations' pointers to it.
    pub fn forget_unwritten_request(&mut self, id: &str) -> Option<FrozenRequest> {
        let request = self.requests.remove(id)?;
        self.dirty.requests.remove(id);
        self.marked.remove(id);
        for op_id in &request.operation_ids {
            if let Some(slot) = self.operations.get_mut(op_id) {
                if slot.op.request_id.as_deref() == Some(id) {
                    slot.op.request_id = None;
                }
            }
        }
        Some(request)
    }

    /// Drops the unwritten events that name one of `operations` or `requests` (the log never
    /// tells of what a refused enqueue did).
    pub fn forget_events_of(&mut self, operations: &BTreeSet<String>, requests: &BTreeSet<String>) {
        let named = |id: &Option<String>, set: &BTreeSet<String>| {
            id.as_ref().is_some_and(|id| set.contains(id))
        };
        let gone = |event: &crate::model::EventRecord| {
            named(&event.operation_id, operations) || named(&event.request_id, requests)
        };
        let dropped: BTreeSet<u64> = self
            .dirty
            .events
            .iter()
            .filter(|event| gone(event))
            .map(|event| event.seq)
            .collect();
        if dropped.is_empty() {
            return;
        }
        self.dirty
            .events
            .retain(|event| !dropped.contains(&event.seq));
        self.events.retain(|event| !dropped.contains(&event.seq));
    }

    /// Sets the sequence counter back (a refused enqueue took sequences it no longer holds).
    pub fn set_last_sequence(&mut self, sequence: u64) {
        self.meta.last_sequence = sequence;
    }
}
