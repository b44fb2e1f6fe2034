//! Admitting intents: strict validation of the whole batch first, then one change set (so a
//! whole `enqueueMany` lands in one transaction and bad input changes nothing).

use super::Scheduler;
use crate::error::{ErrorCode, SchedulerError};
use crate::host::Host;
use crate::intent::{
    check_fields, check_payload, find_cycle, into_intent, same_intent, IntentInput,
    MAX_SAFE_INTEGER,
};
use crate::io::BatchNo;
use crate::io::Report;
use crate::json_text::JsonText;
use crate::ledger::{Ledger, REPLACED_BY, SUPERSEDED};
use crate::model::{EventKind, Millis, Operation, OperationOutcome, OperationPhase, Settlement};
use crate::partial::{partition, Holdings, Partition, Verdict};
use crate::payload::Payload;
use crate::retention::{intent_digest, matches_digest};
use crate::safe_error::SafeError;
use std::collections::BTreeSet;

impl<H: Host> Scheduler<H> {
    /// Validates and admits intents; returns the barrier after which they are durable.
    /// Re-enqueueing an identical intent (e.g. after a failed write) is not an error.
    pub fn enqueue(
        &mut self,
        now: Millis,
        inputs: Vec<IntentInput>,
    ) -> Result<BatchNo, SchedulerError> {
        let principal = self.config.principal.clone();
        self.admit(now, inputs, principal)
    }

    /// Admits intents another tab wrote to the shared inbox, under the principal of the
    /// session that enqueued them (they are never sent under another). Validated like
    /// [`Scheduler::enqueue`]; re-adopting an admitted intent is harmless.
    pub fn adopt(
        &mut self,
        now: Millis,
        inputs: Vec<IntentInput>,
        principal: Option<String>,
    ) -> Result<BatchNo, SchedulerError> {
        self.admit(now, inputs, principal)
    }

    /// The ids an enqueue of `inputs` names (their own and their dependencies) that are
    /// neither stored whole nor a tombstone at hand: the driver looks them up among the
    /// stored tombstones ([`Scheduler::learn_tombstones`]) before it enqueues (retention:
    /// tombstones are read by key, never loaded).
    pub fn unknown_ids(&self, inputs: &[IntentInput]) -> Vec<String> {
        let own: BTreeSet<String> = inputs.iter().map(|input| input.id.clone()).collect();
        let mut unknown = BTreeSet::new();
        for input in inputs {
            let id = &input.id;
            if self.ledger.operation(id).is_none() && self.ledger.tombstone(id).is_none() {
                unknown.insert(id.to_owned());
            }
            for dependency in input.dependencies.iter().filter(|d| !own.contains(*d)) {
                // Its replacement chain too: a compacted superseded operation's tombstone
                // names the one its dependents follow.
                if let Some(gap) = self.ledger.dependency_gap(dependency) {
                    unknown.insert(gap.to_owned());
                }
            }
        }
        unknown.into_iter().collect()
    }

    /// The tombstones stored when the ledger was loaded, counted by the driver after the load.
    pub fn add_tombstone_count(&mut self, stored: u64) {
        self.ledger.add_tombstone_count(stored);
    }

    /// Tombstones the driver found for [`Scheduler::unknown_ids`].
    pub fn learn_tombstones(&mut self, found: Vec<crate::retention::Tombstone>) {
        self.ledger.learn_tombstones(found);
    }

    /// `enqueueMany(intents, { atomic: false })`: admits the intents of
    /// `slots` that are valid, in one batch and in call order, and refuses each other one
    /// with the error a lone [`Scheduler::enqueue`] of it would get ([`partition`]); a
    /// refused intent changes nothing. `slots` holds the caller's decoding errors in place.
    /// Returns a verdict per intent and the barrier after which the accepted ones are
    /// durable (`None`: none was accepted, nothing to wait for).
    ///
    /// # Errors
    ///
    /// What refuses the whole call: `scheduler_closed`, `lease_lost`. (Storage failing refuses
    /// nothing here: the accepted ones are tried, and refused together if the write fails.)
    pub fn enqueue_partial(
        &mut self,
        now: Millis,
        slots: Vec<Result<IntentInput, SchedulerError>>,
    ) -> Result<(Vec<Verdict>, Option<BatchNo>), SchedulerError> {
        self.check_admitting()?;
        self.note_activity(now);
        let principal = self.config.principal.clone();
        let holdings = LedgerHoldings {
            ledger: &self.ledger,
            principal: &principal,
        };
        let Partition { verdicts, accepted } =
            partition(slots, self.config.max_payload_bytes, &holdings);
        if accepted.is_empty() {
            return Ok((verdicts, None));
        }
        let barrier = self.admit(now, accepted, principal)?;
        Ok((verdicts, Some(barrier)))
    }

    /// What refuses any enqueue, whatever its intents: a stopped scheduler, a lost lease.
    /// While storage fails an enqueue is tried at once (`storage`): refused if that write
    /// fails, with nothing left behind.
    fn check_admitting(&self) -> Result<(), SchedulerError> {
        self.check_open()?;
        if self.lease.fenced {
            return Err(SchedulerError::new(
                ErrorCode::LeaseLost,
                "another dispatcher owns this ledger",
            ));
        }
        Ok(())
    }

    fn admit(
        &mut self,
        now: Millis,
        inputs: Vec<IntentInput>,
        principal: Option<String>,
    ) -> Result<BatchNo, SchedulerError> {
        self.check_admitting()?;
        self.note_activity(now);
        let fresh = self.validate_batch(&inputs, &principal)?;
        if fresh.is_empty() {
            // Everything is already in the ledger: written (nothing to wait for), or wait for
            // the write that carries it (refused with it if that write fails).
            if inputs
                .iter()
                .all(|input| !self.ledger.is_unwritten(&input.id))
            {
                return Ok(self.persist.durable);
            }
            return Ok(self.open_barrier());
        }
        // Recorded until written: a failed write takes it back (`refusal`).
        let keys = fresh
            .iter()
            .filter_map(|input| input.coalesce_key.clone())
            .collect();
        self.begin_admission(keys);
        let mut sequence = self.ledger.meta().last_sequence;
        let mut admitted = Vec::with_capacity(fresh.len());
        for input in fresh {
            sequence = input.sequence.unwrap_or(sequence + 1);
            let intent = into_intent(input, sequence, principal.clone());
            admitted.push(intent.id.clone());
            self.note_inserted(&intent.id);
            self.ledger.insert_operation(Operation::new(intent));
        }
        for id in &admitted {
            if self.depends_on_discarded(id) {
                // As the dependents a discard finds are: never silently sent.
                self.block_operation(now, id, "dependency_discarded");
            } else {
                self.supersede(now, id);
                self.hold_for_coalescing(now, id);
            }
            self.index(id);
        }
        self.end_admission();
        // While storage fails, the enqueue is its try (`storage`).
        self.persist.try_now = true;
        // A hold exists only with `coalesceMs` set.
        let held = admitted
            .iter()
            .all(|id| self.coalescing.end_of(id).is_some());
        Ok(if held {
            self.after_held_call(now)
        } else {
            self.after_call(now)
        })
    }

    /// Whether a dependency of `id` ends at an operation the host discarded.
    fn depends_on_discarded(&self, id: &str) -> bool {
        self.ledger.operation(id).is_some_and(|op| {
            op.intent.dependencies.iter().any(|d| {
                // The end of the replacement chain, whole or compacted: a superseded one's
                // `discarded` is not the host's.
                self.ledger.dependency_settlement(d) == Some(Settlement::Discarded)
            })
        })
    }

    /// Coalescing: a new intent with a `coalesceKey` replaces the pending, not yet frozen
    /// operation with the same key, kind, canvases and principal (a later absolute update
    /// supersedes an earlier one). Never once frozen, never one that others depend on. With a
    /// `coalesce` hook the new payload is the hook's merge of both (diffs); a merge that fails
    /// or outgrows `maxPayloadBytes` replaces nothing, and both are sent in order. The
    /// replaced operation keeps no payload: it is written without one in this same batch.
    fn supersede(&mut self, now: Millis, new_id: &str) {
        let Some(new) = self.ledger.operation(new_id).map(|o| o.intent.clone()) else {
            return;
        };
        let Some(key) = new.coalesce_key.clone() else {
            return;
        };
        let previous = self.coalescible.insert(key, new_id.to_owned());
        let Some(old_id) = previous else { return };
        let Some(old) = self.ledger.operation(&old_id).cloned() else {
            return;
        };
        // Dependents (the new intent among them) need the old one on the server first.
        let has_dependents = new
            .dependencies
            .iter()
            .any(|d| self.ledger.dependency_target(d) == old_id)
            || self.dependents.get(&old_id).is_some_and(|d| {
                d.iter().any(|dep| {
                    self.ledger
                        .operation(dep)
                        .is_some_and(|o| o.phase == OperationPhase::Pending)
                })
            });
        let replaceable = old.phase == OperationPhase::Pending
            && old.request_id.is_none()
            && old.blockers.is_empty()
            && !has_dependents
            && old.intent.operation_type == new.operation_type
            && old.intent.canvas_ids == new.canvas_ids
            && old.intent.principal == new.principal;
        if !replaceable {
            return;
        }
        self.note_replaced(old.clone());
        let merged = match self.host.coalesce(&old.intent, &new, self) {
            Ok(merged) => merged,
            Err(error) => {
                self.coalesce_failed(&old_id, new_id, error);
                return;
            }
        };
        if let Some(payload) = merged {
            if let Err(error) = check_payload(&payload, self.config.max_payload_bytes) {
                let error = SafeError::new("coalesce_failed", &error.message);
                self.coalesce_failed(&old_id, new_id, error);
                return;
            }
            self.ledger
                .update_operation(new_id, |op| replace_payload(op, payload));
        }
        // The replacement is named in the details too: dependencies on the old one wait for
        // it (Ledger::dependency_target), across reloads.
        let error = SafeError::new(SUPERSEDED, &format!("replaced by {new_id}"))
            .with_details(JsonText::member(REPLACED_BY, new_id));
        self.ledger.resolve_operation(
            &old_id,
            OperationOutcome {
                settlement: Settlement::Discarded,
                request_id: None,
                error: Some(error.clone()),
                canonical: None,
                at: now,
            },
        );
        self.ledger
            .update_operation(&old_id, |op| replace_payload(op, Payload::default()));
        self.indexed.remove(&old_id);
        self.coalescing.forget(&old_id);
        self.forget_abort(&old_id);
        self.ready.remove(old.intent.sequence, &old_id);
        self.lane_waiters.remove(old.intent.sequence, &old_id);
        self.unwait(&old_id);
        self.event(
            EventKind::Settled,
            now,
            None,
            Some(&old_id),
            Some("superseded".into()),
        );
        self.report(Report::Settled {
            operation_id: old_id,
            request_id: None,
            settlement: Settlement::Discarded,
            error: Some(error),
            canonical: None,
        });
    }

    /// The host's `coalesce` hook failed: nothing is replaced (both are sent, in order), and
    /// the host hears why, as an `error` event.
    fn coalesce_failed(&mut self, old_id: &str, new_id: &str, error: SafeError) {
        let message = format!(
            "coalesce({old_id}, {new_id}) failed, both are sent: {}",
            error.message
        );
        self.report(Report::Error(SchedulerError::new(
            ErrorCode::CoalesceFailed,
            message,
        )));
    }

    /// Checks a batch against itself and the ledger; returns the intents not yet admitted
    /// (an id already held is the same intent again only as [`held`] says).
    fn validate_batch(
        &self,
        inputs: &[IntentInput],
        principal: &Option<String>,
    ) -> Result<Vec<IntentInput>, SchedulerError> {
        if inputs.is_empty() {
            return Err(SchedulerError::new(
                ErrorCode::InvalidIntent,
                "no intents given",
            ));
        }
        let mut ids = BTreeSet::new();
        let mut fresh = Vec::new();
        // Each fresh intent's index in the call (errors name it).
        let mut at_index = Vec::new();
        let mut last_sequence = self.ledger.meta().last_sequence;
        for (index, input) in inputs.iter().enumerate() {
            let at = |error: SchedulerError| error.of_intent(index);
            check_fields(input, self.config.max_payload_bytes).map_err(at)?;
            if !ids.insert(input.id.clone()) {
                return Err(at(SchedulerError::new(
                    ErrorCode::DuplicateOperation,
                    format!("operation {} appears twice in the batch", input.id),
                )));
            }
            match held(&self.ledger, input, principal) {
                Some(Ok(())) => continue,
                Some(Err(error)) => return Err(at(error)),
                None => {}
            }
            match input.sequence {
                Some(sequence) if sequence <= last_sequence => {
                    return Err(at(SchedulerError::new(
                        ErrorCode::InvalidSequence,
                        format!("sequence {sequence} must exceed {last_sequence}"),
                    )));
                }
                Some(sequence) => last_sequence = sequence,
                None if last_sequence >= MAX_SAFE_INTEGER => {
                    // Sequences must stay exact JS integers; the ledger's space is used up.
                    return Err(at(SchedulerError::new(
                        ErrorCode::InvalidSequence,
                        "no sequence left below 2^53: the ledger's sequence space is exhausted",
                    )));
                }
                None => last_sequence += 1,
            }
            fresh.push(input.clone());
            at_index.push(index);
        }
        for (input, &index) in fresh.iter().zip(&at_index) {
            for dependency in &input.dependencies {
                if !ids.contains(dependency.as_str())
                    && self.ledger.operation(dependency).is_none()
                    && self.ledger.tombstone(dependency).is_none()
                {
                    return Err(SchedulerError::new(
                        ErrorCode::UnknownDependency,
                        format!("operation {} depends on unknown {dependency}", input.id),
                    )
                    .of_intent(index));
                }
            }
        }
        if let Some(at) = find_cycle(&fresh) {
            return Err(SchedulerError::new(
                ErrorCode::DependencyCycle,
                format!("dependencies form a cycle through {at}"),
            ));
        }
        Ok(fresh)
    }
}

/// Gives `op` another payload, first keeping the digest of the intent as the host gave it
/// (by which [`held`] still knows it).
fn replace_payload(op: &mut Operation, payload: Payload) {
    op.given_digest
        .get_or_insert_with(|| intent_digest(&op.intent));
    op.intent.payload = payload;
}

/// Whether the ledger holds `input`'s id (see [`Holdings::holds`]). An id already stored is
/// the same intent again only under the same principal: another principal's operation
/// with that id is `duplicate_operation`.
fn held(ledger: &Ledger, input: &IntentInput, principal: &Option<String>) -> Option<Verdict> {
    if let Some(stored) = ledger.operation(&input.id) {
        // A merged or dropped payload: the intent as given is known by its digest.
        let same = match &stored.given_digest {
            Some(digest) => matches_digest(input, digest, stored.intent.sequence),
            None => same_intent(&stored.intent, input),
        };
        if same && stored.intent.principal == *principal {
            return Some(Ok(()));
        }
        return Some(Err(SchedulerError::new(
            ErrorCode::DuplicateOperation,
            format!(
                "operation {} is already in the ledger with another intent",
                input.id
            ),
        )));
    }
    let tombstone = ledger.tombstone(&input.id)?;
    // Settled and compacted: the same intent again resolves as if it were whole, and is
    // never sent again.
    if tombstone.matches(input) && tombstone.principal == *principal {
        return Some(Ok(()));
    }
    Some(Err(SchedulerError::new(
        ErrorCode::DuplicateOperation,
        format!(
            "operation {} was settled (compacted) with another intent",
            input.id
        ),
    )))
}

/// The scheduler's ledger as a partial enqueue's checks see it.
struct LedgerHoldings<'a> {
    ledger: &'a Ledger,
    principal: &'a Option<String>,
}

impl Holdings for LedgerHoldings<'_> {
    fn holds(&self, input: &IntentInput) -> Option<Verdict> {
        held(self.ledger, input, self.principal)
    }

    fn knows(&self, id: &str) -> bool {
        self.ledger.operation(id).is_some() || self.ledger.tombstone(id).is_some()
    }

    fn last_sequence(&self) -> Option<u64> {
        Some(self.ledger.meta().last_sequence)
    }
}
