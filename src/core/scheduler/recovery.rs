//! `start()` (S18, D1): rebuild every index from the ledger, validate the whole recovered
//! claim set before anything is sent, take the lease, and re-offer interrupted requests first.

use super::{Lifecycle, Scheduler};
use crate::core::error::{ErrorCode, SchedulerError};
use crate::core::host::Host;
use crate::core::model::{EventKind, Millis, PROTOCOL_VERSION};

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
                self.report(crate::core::io::Report::Error(error.clone()));
                return Err(error);
            }
        }
        self.lifecycle = Lifecycle::Running;
        let mut order: Vec<(u64, String)> = self
            .ledger
            .operations()
            .filter(|op| op.phase == crate::core::model::OperationPhase::Pending)
            .map(|op| (op.intent.sequence, op.intent.id.clone()))
            .collect();
        // The pending set built at once from ids in order (the ledger iterates by id): linear,
        // where inserting in sequence order searched the tree once per operation. Only when
        // nothing was indexed before start (always, as the driver opens; kept general).
        let listed = self.indexed.is_empty();
        if listed {
            self.indexed = order.iter().map(|(_, id)| id.clone()).collect();
        }
        order.sort();
        for (_, id) in order {
            self.index_as(&id, listed);
        }
        for (id, _) in unresolved {
            self.recover_request(now, &id);
        }
        self.lease.renewed_at = now;
        if self.is_leader() {
            let owner = self.config.owner.clone();
            self.event(EventKind::LeaseAcquired, now, None, None, Some(owner));
            self.report(crate::core::io::Report::LeaderChanged {
                leader: true,
                fence: self.lease.fence,
            });
        }
        self.maybe_flush(now);
        self.pump(now);
        self.sync_timer(now);
        Ok(())
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
        if self.config.principal.is_some() && request.principal != self.config.principal {
            return; // K3: it waits, claims held, for a session of its own principal.
        }
        let action = request.next_action();
        self.retries
            .schedule(id, request.retry_at.unwrap_or(now), action);
        self.event(
            EventKind::Reclaimed,
            now,
            Some(id),
            None,
            Some(action.as_str().into()),
        );
    }
}
