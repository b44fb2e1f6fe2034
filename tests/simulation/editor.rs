//! What the editor does: enqueues (atomic, partial, again after settling) and host actions.

use super::*;

impl World {
    /// Tombstones of ids tab `l` does not hold, looked up by id as the driver does: round
    /// after round while a round finds some (a replacement chain, link by link).
    pub(super) fn learn_tombstones(&mut self, l: usize, intents: &[IntentInput]) {
        for _ in 0..LOOKUP_ROUNDS {
            let unknown = self.tabs[l].scheduler.unknown_ids(intents);
            let found = self.store.tombstones_of(unknown.iter().map(String::as_str));
            if found.is_empty() {
                break;
            }
            self.tabs[l].scheduler.learn_tombstones(found);
        }
    }

    /// An enqueue as the driver makes it: tombstones of ids the scheduler does not hold are
    /// looked up by id first.
    pub(super) fn enqueue(&mut self, l: usize, intents: Vec<IntentInput>) -> Result<u64, ()> {
        self.learn_tombstones(l, &intents);
        self.tabs[l]
            .scheduler
            .enqueue(self.now, intents)
            .map_err(|_| ())
    }

    /// An intent enqueued before, enqueued again by the session that recorded it: whole,
    /// replaced by a coalesced one (its payload dropped) or compacted, it is the same intent,
    /// never `duplicate_operation`.
    pub(super) fn enqueue_again(&mut self, l: usize, intent: &IntentInput) -> Result<u64, ()> {
        self.learn_tombstones(l, std::slice::from_ref(intent));
        let recorded = self.sequence_of.get(&intent.id).map(|(_, user)| *user);
        let principal = self.tabs[l].scheduler.config().principal.clone();
        match self.tabs[l]
            .scheduler
            .enqueue(self.now, vec![intent.clone()])
        {
            Ok(barrier) => Ok(barrier),
            Err(error) => {
                let same_session = recorded.is_some()
                    && principal.as_deref() == recorded
                    && !self.revised.contains(&intent.id);
                if error.code == ErrorCode::DuplicateOperation && same_session {
                    let stored = self.tabs[l]
                        .scheduler
                        .ledger()
                        .operation(&intent.id)
                        .cloned();
                    self.fail(&format!(
                        "{} enqueued again by its own principal was refused: {}\ninput {intent:?}\nstored {stored:?}",
                        intent.id, error.message
                    ));
                }
                Err(())
            }
        }
    }

    /// A partial enqueue of `intents` and one invalid intent at a random
    /// place: that one is refused, alone, and never reaches the ledger; the barrier and the
    /// intents admitted (`Err` when none was, or the call was refused whole).
    pub(super) fn enqueue_partial(
        &mut self,
        l: usize,
        intents: Vec<IntentInput>,
    ) -> Result<(u64, Vec<IntentInput>), ()> {
        self.learn_tombstones(l, &intents);
        let bad_at = self.rng.below(intents.len() as u64 + 1) as usize;
        let mut slots: Vec<Result<IntentInput, _>> = intents.iter().cloned().map(Ok).collect();
        let Some(first) = intents.first() else {
            return Err(());
        };
        let bad = IntentInput {
            id: "not an id!".into(),
            ..first.clone()
        };
        slots.insert(bad_at, Ok(bad));
        let (mut verdicts, barrier) = self.tabs[l]
            .scheduler
            .enqueue_partial(self.now, slots)
            .map_err(|_| ())?;
        assert_eq!(
            verdicts[bad_at].as_ref().map_err(|e| e.code()),
            Err("invalid_intent"),
            "the invalid intent is refused"
        );
        assert!(self.tabs[l]
            .scheduler
            .ledger()
            .operation("not an id!")
            .is_none());
        let _ = verdicts.remove(bad_at);
        let admitted: Vec<IntentInput> = intents
            .into_iter()
            .zip(&verdicts)
            .filter(|(_, verdict)| verdict.is_ok())
            .map(|(intent, _)| intent)
            .collect();
        match barrier {
            Some(barrier) if !admitted.is_empty() => {
                self.counts.partial_enqueues += 1;
                Ok((barrier, admitted))
            }
            _ => Err(()),
        }
    }

    /// What the editor may do at any time: hold and release, go offline and online, resume,
    /// flush, retry, discard or revise an operation. A refused action changes nothing.
    pub(super) fn host_action(&mut self, l: usize) {
        self.counts.host_actions += 1;
        let now = self.now;
        let ids: Vec<String> = self.tabs[l]
            .scheduler
            .ledger()
            .operations()
            .map(|o| o.intent.id.clone())
            .collect();
        let pick = if ids.is_empty() {
            "op0".to_owned() // unknown: must be refused
        } else {
            ids[self.rng.below(ids.len() as u64) as usize].clone()
        };
        let before = ledger_state(&self.tabs[l].scheduler);
        let tab = &mut self.tabs[l];
        let refused = match self.rng.below(8) {
            0 if tab.holds.is_empty() => match tab.scheduler.hold(now) {
                Ok(hold) => {
                    tab.holds.push(hold);
                    None
                }
                Err(e) => Some(e),
            },
            0 => {
                for hold in tab.holds.drain(..) {
                    tab.scheduler.release(now, hold);
                }
                None
            }
            1 => {
                tab.online = !tab.online;
                tab.scheduler.set_online(now, tab.online);
                None
            }
            2 if self.rng.chance(50) => {
                let _ = tab.scheduler.resume(now);
                None
            }
            2 => {
                // The host's "retry now": every scheduled retry is due at once.
                tab.scheduler.retry_all_now(now);
                None
            }
            3 => tab.scheduler.flush(now, &pick).err(),
            4 => {
                let result = tab.scheduler.retry(now, &pick);
                if result.is_ok() {
                    self.host_retried.insert(pick.clone());
                }
                result.err()
            }
            5 => match tab.scheduler.discard(now, &pick) {
                Ok(barrier) => {
                    tab.pending_discards.push((barrier, pick.clone()));
                    None
                }
                Err(error) => Some(error),
            },
            _ => {
                let revised = tab
                    .scheduler
                    .ledger()
                    .operation(&pick)
                    .map(|op| IntentInput {
                        payload: serde_json::json!({ "shapeId": pick, "revised": now }).into(),
                        expected_versions: None,
                        ..common::of_kind(
                            &pick,
                            &op.intent.operation_type,
                            &op.intent
                                .canvas_ids
                                .iter()
                                .map(String::as_str)
                                .collect::<Vec<_>>(),
                        )
                    });
                match revised {
                    Some(mut input) => {
                        input.dependencies = tab
                            .scheduler
                            .ledger()
                            .operation(&pick)
                            .map(|op| op.intent.dependencies.clone())
                            .unwrap_or_default();
                        tab.scheduler.revise(now, input).err()
                    }
                    None => None,
                }
            }
        };
        if std::env::var("SIM_TRACE").is_ok() {
            eprintln!(
                "step {} host action on {pick}: {refused:?}",
                self.counts.steps
            );
        }
        let revised = self.tabs[l].scheduler.ledger().operation(&pick);
        if revised.is_some_and(|op| op.intent.revision > 0) {
            self.revised.insert(pick.clone());
        }
        if let Some(error) = refused {
            self.counts.refused += 1;
            if error.code().is_empty() || error.message.is_empty() {
                self.fail(&format!("a refusal without code or message: {error:?}"));
            }
            if ledger_state(&self.tabs[l].scheduler) != before {
                self.fail(&format!(
                    "a refused host action changed the ledger: {error}"
                ));
            }
        }
        self.collect(l);
    }
}
