//! `start()`: rebuild every index from the ledger, validate the whole recovered
//! claim set before anything is sent, take the lease, and re-offer interrupted requests first.

use super::{Lifecycle, Scheduler};
use crate::error::{ErrorCode, SchedulerError};
use crate::host::Host;
use crate::model::{EventKind, Millis, Operation, OperationPhase, PROTOCOL_VERSION};

impl<H: Host> Scheduler<H> {
    /// Starts (or keeps running). A claim conflict in the recovered ledger sends nothing.
    pub fn start(&mut self, now: Millis) -> Result<(), SchedulerError> {
        match self.lifecycle {
            Lifecycle::Closed => {
                return Err(SchedulerError::new(
                    ErrorCode::SchedulerClosed,
                    "start() after stop()",
                ));
            }
            Lifecycle::Running => return Ok(()),
            Lifecycle::Idle => {}
        }
        if !self.is_leader() {
            return Err(SchedulerError::new(
                ErrorCode::NotLeader,
                "the loaded ledger's lease is not ours: take the lease, then load and start",
            ));
        }
        self.claims.clear();
        let unresolved: Vec<(String, Vec<String>)> = self
            .ledger
            .requests()
            .filter(|r| r.is_unresolved())
            .map(|r| (r.id.clone(), r.canvas_ids.clone()))
            .collect();
        for (id, canvases) in &unresolved {
            if let Err(error) = self.claims.claim(id, canvases) {
                self.claims.clear();
                self.report(crate::io::Report::Error(error.clone()));
                return Err(error);
            }
        }
        self.lifecycle = Lifecycle::Running;
        self.index_pending();
        for (id, _) in unresolved {
            self.recover_request(now, &id);
        }
        self.lease.renewed_at = now;
        if self.is_leader() {
            let owner = self.config.owner.clone();
            self.event(EventKind::LeaseAcquired, now, None, None, Some(owner));
            self.report(crate::io::Report::LeaderChanged {
                leader: true,
                fence: self.lease.fence,
            });
        }
        self.maybe_flush(now);
        self.pump(now);
        self.sync_timer(now);
        Ok(())
    }

    /// Indexes every pending operation. One pass over the ledger, in id order, with no
    /// search by id and no sort (a big ledger has 100 000 of them); the pending set and the
    /// ready queue are built at once. Whatever was indexed before start (intents enqueued
    /// while idle) is rebuilt with the rest: these indexes are derived from the ledger alone,
    /// and nothing is waiting or in flight before start.
    fn index_pending(&mut self) {
        let pending: Vec<(&Operation, bool)> = self
            .ledger
            .operations()
            .filter(|op| op.phase == OperationPhase::Pending)
            .map(|op| (op, self.is_ready_op(op)))
            .collect();
        self.dependents.clear();
        self.coalescible.clear();
        self.indexed = pending.iter().map(|(op, _)| op.intent.id.clone()).collect();
        let mut ready = Vec::new();
        for (op, is_ready) in pending {
            let id = &op.intent.id;
            if let (Some(key), None) = (&op.intent.coalesce_key, &op.request_id) {
                // The latest intent with a key is the one a new one supersedes.
                let later = match self.coalescible.get(key) {
                    Some(other) => self
                        .ledger
                        .operation(other)
                        .is_none_or(|other| other.intent.sequence < op.intent.sequence),
                    None => true,
                };
                if later {
                    self.coalescible.insert(key.clone(), id.clone());
                }
            }
            super::pump::add_dependents(&mut self.dependents, &self.ledger, op);
            if is_ready {
                ready.push((op.intent.sequence, id.clone()));
            }
        }
        self.ready.replace_all(ready);
    }

    pub(super) fn recover_request(&mut self, now: Millis, id: &str) {
        let Some(request) = self.ledger.request(id).cloned() else {
            return;
        };
        match request.blocked.as_deref() {
            // A new session may carry new credentials: an unauthorized request is tried again.
            Some("unauthorized") => self.ledger.update_request(id, |r| r.blocked = None),
            Some(_) => return, // dead letters and the like wait for the host
            None => {}
        }
        if request.protocol_version != PROTOCOL_VERSION {
            self.block_request(now, id, "request_interpreter_unavailable", None);
            return;
        }
        if self.other_principal(&request.principal) {
            return; // It waits, claims held, for a session of its own principal.
        }
        let action = request.next_action();
        self.retries.schedule(
            id,
            self.config
                .retry
                .bounded_due(now, request.retry_at.unwrap_or(now)),
            action,
        );
        self.event(
            EventKind::Reclaimed,
            now,
            Some(id),
            None,
            Some(action.as_str().into()),
        );
    }
}
