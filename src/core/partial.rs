//! Partial enqueue (issue 37 item 4): which intents of an `enqueueMany(intents, { atomic:
//! false })` are stored and which are refused, each refusal with the code a lone `enqueue`
//! of that intent would get. The accepted ones are then admitted together, as an atomic
//! `enqueueMany` of exactly them would be: one persist batch, in call order, their sequences
//! as if the refused ones were absent.
//!
//! Refusals only accumulate: an intent is refused for its own fields, for an id the call
//! already uses or the ledger holds with another intent, for a dependency that is neither
//! known to the ledger nor accepted in the call, for a dependency cycle inside the call, or
//! for an explicit sequence not above the one before it. Refusing one can refuse its
//! dependents (`unknown_dependency`); the checks run again until nothing more is refused.

use std::collections::BTreeSet;

use crate::core::error::{ErrorCode, SchedulerError};
use crate::core::intent::{check_fields, find_cycle, IntentInput, MAX_SAFE_INTEGER};

/// What became of one intent of the call: accepted (stored, or already there as the same
/// intent), or refused with a coded error.
pub type Verdict = Result<(), SchedulerError>;

/// What the checks need to know of the ledger (the scheduler's, or the stored one a tab
/// that does not dispatch reads in its inbox transaction).
pub trait Holdings {
    /// `None` when no operation has `input`'s id; `Some(Ok(()))` when the same intent is
    /// there already (accepted, nothing new stored); `Some(Err)` when another intent holds
    /// the id (`duplicate_operation`).
    fn holds(&self, input: &IntentInput) -> Option<Verdict>;
    /// Whether a dependency on `id` is known without this call (stored, compacted, queued).
    fn knows(&self, id: &str) -> bool;
    /// The highest sequence in the ledger, when explicit sequences are checked here (the
    /// dispatcher assigns them; `None` checks none).
    fn last_sequence(&self) -> Option<u64>;
}

/// The decision for a whole call.
#[derive(Debug, Default, PartialEq)]
pub struct Partition {
    /// One verdict per intent, in call order.
    pub verdicts: Vec<Verdict>,
    /// The accepted intents in call order (new ones and ones already held), to admit in one
    /// batch.
    pub accepted: Vec<IntentInput>,
}

/// Where one intent of the call stands while the call is checked.
enum Slot {
    Refused(SchedulerError),
    /// The ledger holds this same intent already.
    Held(IntentInput),
    /// New, accepted so far.
    Fresh(IntentInput),
}

/// Decides a partial enqueue. `slots` are the call's intents in order, each decoded or
/// already refused by the caller's decoding (an undecodable intent stays refused, with its
/// error, and is absent for the others' checks).
pub fn partition(
    slots: Vec<Result<IntentInput, SchedulerError>>,
    max_payload_bytes: usize,
    ledger: &impl Holdings,
) -> Partition {
    let mut ids = BTreeSet::new();
    let mut slots: Vec<Slot> = slots
        .into_iter()
        .map(|slot| {
            let input = match slot {
                Ok(input) => input,
                Err(error) => return Slot::Refused(error),
            };
            if let Err(error) = check_fields(&input, max_payload_bytes) {
                return Slot::Refused(error);
            }
            if ids.contains(input.id.as_str()) {
                return Slot::Refused(SchedulerError::new(
                    ErrorCode::DuplicateOperation,
                    format!("operation {} appears twice in the batch", input.id),
                ));
            }
            let slot = match ledger.holds(&input) {
                Some(Err(error)) => return Slot::Refused(error),
                Some(Ok(())) => Slot::Held(input),
                None => Slot::Fresh(input),
            };
            // Only an accepted intent takes its id: a later one with it is the duplicate.
            if let Slot::Held(input) | Slot::Fresh(input) = &slot {
                ids.insert(input.id.clone());
            }
            slot
        })
        .collect();
    while refuse_unknown_dependencies(&mut slots, ledger)
        || refuse_cycles(&mut slots)
        || refuse_sequences(&mut slots, ledger)
    {}
    let mut partition = Partition::default();
    for slot in slots {
        match slot {
            Slot::Refused(error) => partition.verdicts.push(Err(error)),
            Slot::Held(input) | Slot::Fresh(input) => {
                partition.verdicts.push(Ok(()));
                partition.accepted.push(input);
            }
        }
    }
    partition
}

/// Refuses each new intent with a dependency neither known nor accepted in the call; true
/// when it refused one.
fn refuse_unknown_dependencies(slots: &mut [Slot], ledger: &impl Holdings) -> bool {
    let accepted: BTreeSet<String> = slots
        .iter()
        .filter_map(|slot| match slot {
            Slot::Held(input) | Slot::Fresh(input) => Some(input.id.clone()),
            Slot::Refused(_) => None,
        })
        .collect();
    let mut refused = false;
    for slot in slots.iter_mut() {
        let Slot::Fresh(input) = slot else { continue };
        let unknown = input
            .dependencies
            .iter()
            .find(|d| !accepted.contains(d.as_str()) && !ledger.knows(d));
        if let Some(dependency) = unknown {
            let message = format!("operation {} depends on unknown {dependency}", input.id);
            *slot = Slot::Refused(SchedulerError::new(ErrorCode::UnknownDependency, message));
            refused = true;
        }
    }
    refused
}

/// Refuses every new intent on a dependency cycle among the new ones; true when it refused
/// one.
fn refuse_cycles(slots: &mut [Slot]) -> bool {
    let fresh: Vec<IntentInput> = slots
        .iter()
        .filter_map(|slot| match slot {
            Slot::Fresh(input) => Some(input.clone()),
            _ => None,
        })
        .collect();
    let Some(through) = find_cycle(&fresh) else {
        return false;
    };
    let on_cycle = cycle_through(&fresh, &through);
    for slot in slots.iter_mut() {
        if let Slot::Fresh(input) = slot {
            if on_cycle.contains(input.id.as_str()) {
                let message = format!("dependencies form a cycle through {through}");
                *slot = Slot::Refused(SchedulerError::new(ErrorCode::DependencyCycle, message));
            }
        }
    }
    true
}

/// The ids on a cycle through `start`: those it reaches that reach it back.
fn cycle_through(batch: &[IntentInput], start: &str) -> BTreeSet<String> {
    let reach = |from: &str, forward: bool| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(id) = stack.pop() {
            let next: Vec<&String> = if forward {
                let deps = batch.iter().find(|i| i.id == id).map(|i| &i.dependencies);
                deps.into_iter().flatten().collect()
            } else {
                let dependents = batch.iter().filter(|i| i.dependencies.contains(&id));
                dependents.map(|i| &i.id).collect()
            };
            for n in next {
                if seen.insert(n.clone()) {
                    stack.push(n.clone());
                }
            }
        }
        seen
    };
    let ahead = reach(start, true);
    reach(start, false)
        .into_iter()
        .filter(|id| ahead.contains(id))
        .collect()
}

/// Refuses each new intent whose explicit sequence is not above the one before it (the
/// ledger's, then each accepted new intent's, assigned or explicit); true when it refused
/// one.
fn refuse_sequences(slots: &mut [Slot], ledger: &impl Holdings) -> bool {
    let Some(mut last) = ledger.last_sequence() else {
        return false;
    };
    let mut refused = false;
    for slot in slots.iter_mut() {
        let Slot::Fresh(input) = slot else { continue };
        let error = match input.sequence {
            Some(sequence) if sequence <= last => SchedulerError::new(
                ErrorCode::InvalidSequence,
                format!("sequence {sequence} must exceed {last}"),
            ),
            Some(sequence) => {
                last = sequence;
                continue;
            }
            None if last >= MAX_SAFE_INTEGER => SchedulerError::new(
                ErrorCode::InvalidSequence,
                "no sequence left below 2^53: the ledger's sequence space is exhausted",
            ),
            None => {
                last += 1;
                continue;
            }
        };
        *slot = Slot::Refused(error);
        refused = true;
    }
    refused
}
