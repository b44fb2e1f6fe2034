//! What a tab asks of the world (persist, send, authorize, timers), carried out, and its
//! enqueues acknowledged once durable.

use super::*;

impl World {
    /// Carries effects of one tab into the world, checking send-time invariants.
    pub(super) fn collect(&mut self, t: usize) {
        while let Some(effect) = self.tabs[t].scheduler.poll_effect() {
            match effect {
                Effect::Persist(batch) => self.tabs[t].persists.push(batch),
                Effect::Send(order) => {
                    if self.tabs[t].scheduler.is_storage_failing() {
                        self.counts.unwritten_sends += 1;
                    }
                    if !self.tabs[t].holds.is_empty() || !self.tabs[t].online {
                        self.fail(&format!("{} sent while held or offline", order.request.id));
                    }
                    self.check_send(t, &order);
                    if order.action == RetryAction::Submit {
                        // The copy sent is the durable one: the order check reads its
                        // sequence. An enqueue of the same id in a tab about to learn it was
                        // fenced may have numbered it otherwise, and is never written.
                        for id in &order.request.operation_ids {
                            let sent = self.tabs[t].scheduler.ledger().operation(id);
                            if let (Some(op), Some(entry)) = (sent, self.sequence_of.get_mut(id)) {
                                entry.0 = op.intent.sequence;
                            }
                        }
                    }
                    if self.faults_on && self.rng.chance(3) {
                        // The host failed before the request left (`headers()` threw): it
                        // never says the attempt was sent, and the server never sees it.
                        let status = AttemptStatus {
                            error: Some(SafeError::new("headers_unavailable", "Error")),
                            ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
                        };
                        self.tabs[t]
                            .scheduler
                            .on_answer(self.now, order.attempt, status);
                        continue;
                    }
                    self.tabs[t].scheduler.on_sent(self.now, order.attempt);
                    self.tabs[t].left += 1;
                    self.counts.batched += u64::from(order.request.operation_ids.len() > 1);
                    self.tabs[t].wire.push(*order);
                    let uploads = self.tabs[t]
                        .wire
                        .iter()
                        .filter(|o| o.request.kind == UPLOAD_KIND)
                        .count();
                    if self.tabs[t].wire.len() > self.config.concurrency || uploads > 1 {
                        self.fail("more in flight than concurrency allows, or two uploads");
                    }
                }
                Effect::Authorize(order) => {
                    self.check_send(t, &order);
                    self.tabs[t].authorizing.push(*order);
                }
                Effect::Abort(attempt) => self.tabs[t].wire.retain(|o| o.attempt != attempt),
                Effect::SetTimer(at) => self.tabs[t].timer = at,
                Effect::Report(Report::StorageFailed { error }) => {
                    // Once as storage starts failing, with the store's error.
                    if self.tabs[t].storage_failed {
                        self.fail("storage_failed reported twice without storage_recovered");
                    }
                    if error.code.is_empty() || !self.tabs[t].scheduler.is_storage_failing() {
                        self.fail(&format!("storage_failed out of place: {error:?}"));
                    }
                    self.tabs[t].storage_failed = true;
                    self.counts.storage_failures += 1;
                }
                Effect::Report(Report::StorageRecovered) => {
                    if !self.tabs[t].storage_failed || self.tabs[t].scheduler.is_storage_failing() {
                        self.fail("storage_recovered without storage_failed before it");
                    }
                    self.tabs[t].storage_failed = false;
                    self.counts.storage_recoveries += 1;
                }
                Effect::Report(Report::Settled { error: Some(e), .. })
                    if e.code == "superseded" =>
                {
                    self.counts.superseded += 1
                }
                Effect::Report(Report::Settled { error: Some(e), .. })
                    if e.code == "version_conflict" =>
                {
                    self.counts.conflicts += 1
                }
                Effect::Report(_) => {}
                Effect::CommitSoon => self.tabs[t].scheduler.commit(self.now),
            }
        }
        if self.tabs[t].scheduler.is_fenced() {
            // A tab that lost its lease drops its instance (the browser driver reloads it).
            self.tabs[t].scheduler.stop();
        }
    }

    /// Applies tab `t`'s batch to the store, checking the retention invariants first: what
    /// it compacts is settled (in the durable ledger, or in this very batch), no unresolved
    /// request carries it, and each blob it deletes belongs to such an upload.
    pub(super) fn apply(&mut self, t: usize, batch: &PersistBatch) -> PersistResult {
        if batch.fence.is_some() && self.store.lease().map(|l| l.fence) == batch.fence {
            let ledger = self.tabs[t].scheduler.ledger();
            // The tab's ledger is the authority: the batch writes what it says.
            let sendable = |id: &str| {
                let unsettled = ledger
                    .operation(id)
                    .or_else(|| self.store.operation(id))
                    .is_none_or(|o| o.phase != OperationPhase::Resolved);
                let carried = ledger
                    .requests()
                    .any(|r| r.is_unresolved() && r.operation_ids.iter().any(|o| o == id));
                unsettled || carried
            };
            for tombstone in &batch.tombstones {
                if sendable(&tombstone.id) {
                    self.fail(&format!("{} compacted while unsettled", tombstone.id));
                }
            }
            for blob in &batch.drop_blobs {
                let owner = ledger
                    .operations()
                    .find(|o| o.intent.blob.as_ref().is_some_and(|b| &b.id == blob));
                if owner.is_none_or(|o| sendable(&o.intent.id)) {
                    self.fail(&format!("blob {blob} deleted while its upload can be sent"));
                }
            }
        }
        let result = self.store.apply(batch);
        if matches!(result, PersistResult::Done { .. }) {
            self.counts.compacted += batch.tombstones.len() as u64;
        }
        result
    }

    pub(super) fn count_folds(&mut self, batch: &PersistBatch, result: &PersistResult) {
        if matches!(result, PersistResult::Done { .. }) {
            self.counts.folded += batch.drop_operations.len() as u64;
        }
    }

    pub(super) fn acknowledge(&mut self, t: usize) {
        let mut still = Vec::new();
        for (barrier, ids) in std::mem::take(&mut self.tabs[t].pending_acks) {
            match self.tabs[t].scheduler.barrier_state(barrier) {
                Some(true) => self.acknowledged.extend(ids),
                Some(false) => {
                    // Refused: the editor was told (it may enqueue them again). An enqueue
                    // whose write failed leaves nothing behind: what was not written is gone.
                    let scheduler = &self.tabs[t].scheduler;
                    let storage = !scheduler.is_closed() && !scheduler.is_fenced();
                    for id in ids.iter().filter(|_| storage) {
                        let written =
                            self.acknowledged.contains(id) || self.store.operation(id).is_some();
                        if !written && scheduler.ledger().operation(id).is_some() {
                            self.fail(&format!("refused {id} is still in the ledger"));
                        }
                    }
                    if storage {
                        self.counts.refused_enqueues += ids.len() as u64;
                    }
                }
                None => still.push((barrier, ids)),
            }
        }
        let tab = &mut self.tabs[t];
        tab.pending_acks = still;
        let mut still = Vec::new();
        for (barrier, id) in tab.pending_discards.drain(..) {
            match tab.scheduler.barrier_state(barrier) {
                Some(true) => {
                    self.discarded.insert(id);
                }
                Some(false) => {}
                None => still.push((barrier, id)),
            }
        }
        tab.pending_discards = still;
        // An adoption whose batch failed or was fenced leaves its entries in the intake (the
        // driver's wait for the barrier fails, and nothing is cleared).
        let verdict = match &tab.adoption {
            Some(AdoptionPass {
                barrier: Some(barrier),
                durable: false,
                ..
            }) => tab.scheduler.barrier_state(*barrier),
            _ => None,
        };
        match verdict {
            Some(true) => {
                if let Some(pass) = tab.adoption.as_mut() {
                    pass.durable = true;
                    self.adopted_durable
                        .extend(pass.adopted.iter().map(|(key, _)| *key));
                }
            }
            Some(false) => tab.adoption = None,
            None => {}
        }
    }

    /// Answers tab `t`'s oldest persist batch: written to the store, or failed (`fail`), then
    /// what follows from the answer collected and the enqueues it made durable acknowledged.
    pub(super) fn answer_persist(&mut self, t: usize, fail: bool) {
        let batch = self.tabs[t].persists.remove(0);
        let result = if fail && self.now < self.storage_full_until {
            MemoryStore::failure("QuotaExceededError")
        } else if fail {
            MemoryStore::failure("AbortError")
        } else {
            self.apply(t, &batch)
        };
        self.count_folds(&batch, &result);
        self.tabs[t]
            .scheduler
            .on_persisted(self.now, batch.no, result);
        self.collect(t);
        self.acknowledge(t);
    }
}
