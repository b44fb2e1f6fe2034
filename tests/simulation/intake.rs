//! The shared inbox, the intake store outside the fence: appends by any awake
//! tab, the dispatching tab's adoption passes, and their clearing once durable.

use super::*;

impl World {
    /// Tab `t` appends an enqueue to the intake, checked as a tab that does not dispatch checks
    /// it (without the ledger); acknowledged once appended. Any awake tab may: one that follows,
    /// the leader (the inbox needs no lease), or one that takes itself for the leader after another
    /// took the lease over (it has not written since).
    pub(super) fn append_intake(&mut self, t: usize) {
        let config = self.tabs[t].scheduler.config();
        let (origin, principal) = (config.owner.clone(), config.principal.clone());
        let max_payload = config.max_payload_bytes;
        let stale = self.tabs[t].scheduler.is_leader()
            && self
                .store
                .lease()
                .is_some_and(|lease| lease.owner != origin);
        let intents = self.random_intents();
        if check_batch(&intents, max_payload).is_err() {
            return;
        }
        for intent in &intents {
            if let Some(blob) = &intent.blob {
                self.store.blobs.insert(blob.id.clone());
            }
        }
        self.next_intake += 1;
        self.intake.insert(
            self.next_intake,
            IntakeEntry {
                origin,
                principal,
                intents: intents.clone(),
            },
        );
        self.counts.intake_appends += 1;
        self.counts.stale_appends += u64::from(stale);
        self.acknowledged
            .extend(intents.iter().map(|i| i.id.clone()));
        self.intents.extend(intents);
    }

    /// The dispatching tab's turn at the intake, as its driver takes it (on a wake, on its
    /// timer): a pass whose adoption is durable is cleared; with none under way, a new one runs.
    pub(super) fn intake_turn(&mut self, l: usize) -> bool {
        if self.tabs[l]
            .adoption
            .as_ref()
            .is_some_and(|pass| pass.durable)
        {
            self.clear_intake(l);
            return true;
        }
        self.adopt_intake(l)
    }

    /// One adoption pass, as `Driver::adopt_inbox` runs it: every entry in intake order, the
    /// tombstones of ids the tab does not hold looked up first, admitted under the entry's own
    /// principal; a refusal about the entry sets it aside, any other ends the pass with the
    /// rest left in the intake. Whether it adopted or refused anything.
    pub(super) fn adopt_intake(&mut self, l: usize) -> bool {
        if self.tabs[l].adoption.is_some()
            || self.intake.is_empty()
            || self.tabs[l].scheduler.is_closed()
        {
            return false;
        }
        let entries: Vec<(u64, IntakeEntry)> =
            self.intake.iter().map(|(k, e)| (*k, e.clone())).collect();
        let mut pass = AdoptionPass {
            barrier: None,
            adopted: Vec::new(),
            refused: Vec::new(),
            durable: false,
        };
        for (key, entry) in entries {
            self.learn_tombstones(l, &entry.intents);
            let ledger = self.tabs[l].scheduler.ledger();
            let new: Vec<String> = entry
                .intents
                .iter()
                .filter(|i| ledger.operation(&i.id).is_none() && ledger.tombstone(&i.id).is_none())
                .map(|i| i.id.clone())
                .collect();
            let admitted = self.tabs[l].scheduler.adopt(
                self.now,
                entry.intents.clone(),
                entry.principal.clone(),
            );
            match admitted {
                Ok(barrier) => {
                    pass.barrier = Some(barrier);
                    pass.adopted.push((key, new));
                    self.counts.readopted += u64::from(self.adopted_durable.contains(&key));
                    for intent in &entry.intents {
                        if let Some(op) = self.tabs[l].scheduler.ledger().operation(&intent.id) {
                            let user = if op.intent.principal.as_deref() == Some("user-2") {
                                "user-2"
                            } else {
                                "user-1"
                            };
                            self.sequence_of
                                .insert(intent.id.clone(), (op.intent.sequence, user));
                        }
                    }
                }
                Err(error) if error.code.refuses_inbox_entry() => {
                    pass.refused.push((key, error.code()))
                }
                Err(_) => break,
            }
        }
        if pass.adopted.is_empty() && pass.refused.is_empty() {
            return false;
        }
        pass.durable = pass.barrier.is_none();
        self.tabs[l].adoption = Some(pass);
        self.collect(l);
        true
    }

    /// Clears a durable pass's entries from the intake; those it refused are set aside.
    pub(super) fn clear_intake(&mut self, l: usize) {
        let Some(pass) = self.tabs[l].adoption.take() else {
            return;
        };
        let mut adopted = pass.adopted;
        adopted.sort_by_key(|(key, _)| *key);
        for (key, new) in adopted {
            let Some(entry) = self.intake.remove(&key) else {
                continue; // cleared by another tab's pass that adopted it too
            };
            // Each tab's intake order is its operations' order: the entry's sequences all
            // follow those of the same tab's entry before it, whoever adopted which.
            let ledger = self.tabs[l].scheduler.ledger();
            // Admitted under the principal of the session that appended it.
            for id in &new {
                let principal = ledger.operation(id).map(|o| &o.intent.principal);
                if principal.is_some_and(|p| *p != entry.principal) {
                    self.fail(&format!(
                        "{id} appended by {:?} adopted as {principal:?}",
                        entry.principal
                    ));
                }
            }
            let seqs: Vec<u64> = new
                .iter()
                .filter_map(|id| ledger.operation(id).map(|o| o.intent.sequence))
                .collect();
            let (Some(first), Some(end)) = (seqs.iter().min(), seqs.iter().max()) else {
                continue; // compacted since
            };
            if let Some((before, seq)) = self.intake_order.get(&entry.origin) {
                if *before < key && seq >= first {
                    self.fail(&format!(
                        "intake entries {before} and {key} of {} admitted out of order",
                        entry.origin
                    ));
                }
            }
            self.intake_order.insert(entry.origin, (key, *end));
        }
        for (key, code) in pass.refused {
            if let Some(entry) = self.intake.remove(&key) {
                self.counts.intake_refused += 1;
                self.quarantined
                    .extend(entry.intents.iter().map(|i| (i.id.clone(), code)));
            }
        }
    }
}
