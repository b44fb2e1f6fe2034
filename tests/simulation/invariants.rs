//! The invariants, checked after every step and before every send.

use super::*;

impl World {
    pub(super) fn check_send(&mut self, t: usize, order: &SendOrder) {
        // Never sent with another principal's credentials.
        if order.request.principal != self.tabs[t].scheduler.config().principal {
            self.fail(&format!(
                "{} of {:?} sent by a tab of {:?}",
                order.request.id,
                order.request.principal,
                self.tabs[t].scheduler.config().principal
            ));
        }
        // A tab whose lease another took over may still send a query it had scheduled: a
        // query changes nothing on the server, and the tab learns it is fenced at its next
        // write; a submit needs its dispatch marker durable first, which it cannot write.
        // Such a query may name a request the new holder has since settled and compacted
        // (retention), so the store is no measure of it: the checks below are for the rest.
        let holds_lease = self
            .store
            .lease()
            .is_some_and(|lease| lease.owner == self.tabs[t].scheduler.config().owner);
        if order.action == RetryAction::Query && !holds_lease {
            return;
        }
        // Retention: a compacted operation is never sent again, and an upload's blob stays
        // while the upload can be sent.
        for op in &order.request.operation_ids {
            if !self.store.tombstones_of([op.as_str()]).is_empty() {
                self.fail(&format!("{op} sent after it was compacted"));
            }
        }
        if order.request.kind == UPLOAD_KIND {
            for op in &order.request.operation_ids {
                let blob = self
                    .store
                    .operation(op)
                    .and_then(|o| o.intent.blob.as_ref().map(|b| b.id.clone()));
                if blob.is_some_and(|id| !self.store.blobs.contains(&id)) {
                    self.fail(&format!("{op} sent after its blob was deleted"));
                }
            }
        }
        // The frozen body and the dispatch marker are durable before the first byte.
        let Some(durable) = self.store.request(&order.request.id) else {
            self.fail(&format!("{} sent before it was durable", order.request.id));
        };
        if durable.body != order.request.body || durable.digest != order.request.digest {
            self.fail("sent body differs from the durable frozen body");
        }
        // Nothing sent that was never durable: an enqueue refused (its write failed) is not.
        for op in &order.request.operation_ids {
            if self.store.operation(op).is_none() {
                self.fail(&format!("{op} sent, but its enqueue was never written"));
            }
        }
        let failing = self.tabs[t].scheduler.is_storage_failing();
        if failing {
            // Its authorization step may end after storage works again: the same attempt.
            self.tabs[t].unwritten_attempts.insert(order.attempt);
        }
        if self.tabs[t].unwritten_attempts.contains(&order.attempt) {
            // Launched while writes failed: only a request whose dispatch marker is durable
            // is sent (its count of attempts waits in memory), and, as long as writes fail,
            // only while the lease last written is this tab's and unexpired (the fence).
            if durable.phase == RequestPhase::Frozen {
                self.fail("sent while storage fails, with no durable dispatch marker");
            }
            let owner = &self.tabs[t].scheduler.config().owner;
            let leased = self
                .store
                .lease()
                .is_some_and(|lease| &lease.owner == owner && lease.expires_at > self.now);
            if failing && !leased {
                self.fail("sent while storage fails, past the lease last written");
            }
        } else if durable.attempt < order.request.attempt {
            self.fail(&format!(
                "dispatch marker not durable before send: {} attempt {} stored {}",
                order.request.id, order.request.attempt, durable.attempt
            ));
        }
        for op in &order.request.operation_ids {
            let deps = self
                .store
                .operation(op)
                .map(|o| o.intent.dependencies.clone())
                .unwrap_or_default();
            for dep in deps {
                // A superseded dependency is met by what replaced it (it never reaches the server).
                let (resolved, discarded) = self.dependency_state(&dep);
                if !resolved {
                    self.fail(&format!("{op} sent before its dependency {dep} resolved"));
                }
                // Dependents of a discarded operation wait; the host's retry() sends them anyway.
                if discarded && !self.host_retried.contains(op) {
                    self.fail(&format!(
                        "{op} sent after its dependency {dep} was discarded"
                    ));
                }
            }
        }
    }

    /// Whether the end of a dependency's chain is resolved, and discarded: a compacted one
    /// (a tombstone) is resolved as its tombstone says.
    pub(super) fn dependency_state(&self, id: &str) -> (bool, bool) {
        match self.dependency_target(id) {
            Some(op) => (op.phase == OperationPhase::Resolved, is_discarded(op)),
            None => {
                let mut end = id.to_owned();
                let mut op = self.store.operation(id);
                while let Some(next) = op.and_then(replaced_by) {
                    op = self.store.operation(&next);
                    end = next;
                }
                // A superseded operation's tombstone names its replacement: its
                // `discarded` is not the host's, the replacement's end decides.
                match self.store.tombstones_of([end.as_str()]).first() {
                    Some(t) => match &t.replaced_by {
                        Some(next) if *next != end => self.dependency_state(next),
                        _ => (true, t.settlement == Settlement::Discarded),
                    },
                    None => (false, false),
                }
            }
        }
    }

    /// The durable operation a dependency on `id` waits for: itself, or the intent that
    /// superseded it (its outcome's `replacedBy`), to the end of the chain.
    pub(super) fn dependency_target(&self, id: &str) -> Option<&Operation> {
        let mut op = self.store.operation(id)?;
        for _ in 0..10_000 {
            let next = op
                .outcome
                .as_ref()
                .and_then(|o| o.error.as_ref())
                .filter(|e| e.code == "superseded")
                .and_then(|e| e.details.as_ref())
                .and_then(|d| d.members())
                .and_then(|m| m.str("replacedBy").map(|s| s.into_owned()));
            match next {
                Some(next) => op = self.store.operation(&next)?,
                None => return Some(op),
            }
        }
        self.fail(&format!("the replacements of {id} go round in a cycle"));
    }

    /// Resolved, or held for good by a discarded dependency: blocked `dependency_discarded`,
    /// or waiting for an operation that is (the host decides; it may discard or retry).
    pub(super) fn is_settled(&self, op: &Operation) -> bool {
        match op.phase {
            OperationPhase::Resolved => true,
            OperationPhase::Pending if !op.blockers.is_empty() => {
                op.blockers.iter().all(|b| b == "dependency_discarded")
            }
            OperationPhase::Pending => op.intent.dependencies.iter().any(|dep| {
                // A compacted dependency is settled for good: it holds nothing back.
                self.dependency_target(dep)
                    .is_some_and(|d| d.phase == OperationPhase::Pending && self.is_settled(d))
            }),
        }
    }

    pub(super) fn check_invariants(&self) {
        // `dispatched` counts the attempts that left, not the sends ordered.
        for (t, tab) in self.tabs.iter().enumerate() {
            let sent = tab.scheduler.stats().sent;
            if sent != tab.left {
                self.fail(&format!("tab {t} counts {sent} sends, {} left", tab.left));
            }
            // stats().settledKept is a counter kept beside the ledger: it equals the walk.
            let ledger = tab.scheduler.ledger();
            if ledger.settled_count() != ledger.settled_count_walked() {
                self.fail(&format!(
                    "tab {t} counts {} settled operations kept, {} are",
                    ledger.settled_count(),
                    ledger.settled_count_walked()
                ));
            }
        }
        if let Some((op, n)) = self.server.applied.iter().find(|(_, n)| **n > 1) {
            self.fail(&format!("server applied {op} {n} times"));
        }
        if self.server.key_reuse > 0 {
            self.fail("an idempotency key was reused with another body");
        }
        // No two unresolved requests share a canvas, in the store and in each tab.
        let mut owners: BTreeMap<String, String> = BTreeMap::new();
        for request in self
            .store
            .snapshot()
            .requests
            .iter()
            .filter(|r| r.is_unresolved())
        {
            for canvas in &request.canvas_ids {
                if let Some(other) = owners.insert(canvas.clone(), request.id.clone()) {
                    self.fail(&format!("{other} and {} both claim {canvas}", request.id));
                }
            }
        }
        // Explain never says `no_work` (or nothing) while an operation is pending and unblocked.
        for tab in self
            .tabs
            .iter()
            .filter(|t| t.scheduler.is_leader() && !t.scheduler.is_closed())
        {
            let pending: Vec<String> = tab
                .scheduler
                .ledger()
                .operations()
                .filter(|o| o.phase == OperationPhase::Pending && o.blockers.is_empty())
                .map(|o| o.intent.id.clone())
                .collect();
            if !pending.is_empty() && tab.scheduler.stats().idle_reason == Some("no_work") {
                self.fail("stats say no_work while operations are pending");
            }
            for id in pending {
                match tab.scheduler.explain(self.now, &id) {
                    Ok(why) if why.reason != "no_work" && !why.reason.is_empty() => {}
                    other => self.fail(&format!("explain({id}) = {other:?}")),
                }
            }
        }
        if !self.with_dependencies {
            // Without dependencies nothing may hold an earlier operation back: per-canvas order,
            // for each user (another user's work waits for their login, not theirs).
            for (canvas, ops) in &self.server.order {
                for user in ["user-1", "user-2"] {
                    let seqs: Vec<u64> = ops
                        .iter()
                        .filter_map(|o| self.sequence_of.get(o))
                        .filter(|(_, principal)| *principal == user)
                        .map(|(sequence, _)| *sequence)
                        .collect();
                    if seqs.windows(2).any(|w| w[0] > w[1]) {
                        self.fail(&format!(
                            "canvas {canvas} applied out of {user}'s sequence order: {ops:?} {seqs:?}"
                        ));
                    }
                }
            }
        }
    }

    /// `whenSaved()` never resolves while an operation it covers may still be sent.
    /// The leader takes a watch now and then; once the core says saved, every covered op
    /// still unsettled must be blocked (by a blocker or its request) and on no wire.
    pub(super) fn check_saved(&mut self) {
        if let Some(l) = self.leader() {
            if self.rng.chance(5) {
                let mark = self.tabs[l].scheduler.saved_mark();
                self.tabs[l].saved_watches.push((mark, 0));
            }
        }
        let now = self.now;
        let mut resolved: Vec<(usize, Vec<String>)> = Vec::new();
        for (t, tab) in self.tabs.iter_mut().enumerate() {
            if tab.scheduler.is_closed() {
                tab.saved_watches.clear(); // stop() rejects them
                continue;
            }
            let scheduler = &tab.scheduler;
            tab.saved_watches.retain_mut(|(covered, settled)| {
                match scheduler.saved_state(now, covered, settled) {
                    Some(saved) => {
                        resolved.push((t, saved.blocked));
                        false
                    }
                    None => true,
                }
            });
        }
        for (t, blocked) in resolved {
            self.counts.saved_resolved += 1;
            let tab = &self.tabs[t];
            let ledger = tab.scheduler.ledger();
            for id in &blocked {
                let Some(op) = ledger.operation(id) else {
                    self.fail(&format!("whenSaved: blocked {id} is not in the ledger"));
                };
                let request_blocked = op
                    .request_id
                    .as_deref()
                    .and_then(|r| ledger.request(r))
                    .is_some_and(|r| r.blocked.is_some());
                if op.blockers.is_empty() && !request_blocked {
                    self.fail(&format!("whenSaved resolved while {id} may still be sent"));
                }
                let on_wire = tab
                    .wire
                    .iter()
                    .chain(tab.authorizing.iter())
                    .any(|o| o.request.operation_ids.contains(id));
                if on_wire {
                    self.fail(&format!("whenSaved resolved while {id} is in flight"));
                }
            }
        }
    }
}
