//! Partial enqueue: which intents of an `enqueueMany(intents, { atomic:
//! false })` are stored and which are refused, each refusal with the code a lone `enqueue`
//! of that intent would get. The accepted ones are then admitted together, as an atomic
//! `enqueueMany` of exactly them would be: one persist batch, in call order, their sequences
//! as if the refused ones were absent.
//!
//! The checks run in this order, and a refusal is never taken back:
//! 1. each intent on its own, in call order: its fields, its id against the ids accepted
//!    before it in the call (`duplicate_operation`), then against the ledger (the same intent
//!    again is accepted, another intent under its id is `duplicate_operation`);
//! 2. dependencies neither accepted in the call nor known to the ledger (`unknown_dependency`);
//! 3. every new intent on a dependency cycle among the new ones (`dependency_cycle`);
//! 4. explicit sequences, in call order, against the one before (`invalid_sequence`).
//!
//! Refusing an intent refuses the new intents that depend on it (`unknown_dependency`), and
//! theirs, unless the ledger knows its id. Removing intents never makes a later check fail,
//! so one pass of each suffices: linear in the call, but for the ledger's look-ups.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{ErrorCode, SchedulerError};
use crate::intent::{check_fields, IntentInput, MAX_SAFE_INTEGER};

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

/// The call's intents as they are checked, with the dependency graph among the new ones.
struct Call<'l> {
    slots: Vec<Slot>,
    ledger: &'l dyn Holdings,
    /// For each slot, the slots of the new intents it depends on.
    dependencies: Vec<Vec<usize>>,
    /// For each slot, the slots of the new intents that depend on it.
    dependents: Vec<Vec<usize>>,
    /// Each new intent's id → its slot.
    fresh_ids: BTreeMap<String, usize>,
}

/// Decides a partial enqueue. `slots` are the call's intents in order, each decoded or
/// already refused by the caller's decoding (an undecodable intent stays refused, with its
/// error, and is absent for the others' checks). The ledger is a trait object: one copy of
/// these checks in the `.wasm` for both of its kinds.
pub fn partition(
    slots: Vec<Result<IntentInput, SchedulerError>>,
    max_payload_bytes: usize,
    ledger: &dyn Holdings,
) -> Partition {
    let mut ids = BTreeSet::new();
    let mut checked = Vec::with_capacity(slots.len());
    for slot in slots {
        let slot = match slot {
            Ok(input) => first_check(input, max_payload_bytes, &ids, ledger),
            Err(error) => Slot::Refused(error),
        };
        // Only an accepted intent takes its id: a later one with it is the duplicate.
        if let Slot::Held(input) | Slot::Fresh(input) = &slot {
            ids.insert(input.id.clone());
        }
        checked.push(slot);
    }
    let mut call = Call::new(checked, ledger);
    call.refuse_unknown_dependencies();
    call.refuse_cycles();
    call.refuse_sequences();
    let mut partition = Partition::default();
    for slot in call.slots {
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

/// An intent's own checks, in call order: its fields, its id against the ones accepted
/// before it in the call, then against the ledger.
fn first_check(
    input: IntentInput,
    max_payload_bytes: usize,
    ids: &BTreeSet<String>,
    ledger: &dyn Holdings,
) -> Slot {
    if let Err(error) = check_fields(&input, max_payload_bytes) {
        return Slot::Refused(error);
    }
    if ids.contains(input.id.as_str()) {
        return Slot::Refused(SchedulerError::new(
            ErrorCode::DuplicateOperation,
            format!("operation {} appears twice in the batch", input.id),
        ));
    }
    match ledger.holds(&input) {
        Some(Err(error)) => Slot::Refused(error),
        Some(Ok(())) => Slot::Held(input),
        None => Slot::Fresh(input),
    }
}

fn unknown(input: &IntentInput, dependency: &str) -> SchedulerError {
    SchedulerError::new(
        ErrorCode::UnknownDependency,
        format!("operation {} depends on unknown {dependency}", input.id),
    )
}

impl<'l> Call<'l> {
    fn new(slots: Vec<Slot>, ledger: &'l dyn Holdings) -> Self {
        let mut fresh_ids = BTreeMap::new();
        for (at, slot) in slots.iter().enumerate() {
            if let Slot::Fresh(input) = slot {
                fresh_ids.insert(input.id.clone(), at);
            }
        }
        let mut dependencies = vec![Vec::new(); slots.len()];
        let mut dependents = vec![Vec::new(); slots.len()];
        for (at, slot) in slots.iter().enumerate() {
            let Slot::Fresh(input) = slot else { continue };
            for dependency in &input.dependencies {
                if let Some(&on) = fresh_ids.get(dependency) {
                    dependencies[at].push(on);
                    dependents[on].push(at);
                }
            }
        }
        Self {
            slots,
            ledger,
            dependencies,
            dependents,
            fresh_ids,
        }
    }

    fn fresh(&self, at: usize) -> Option<&IntentInput> {
        match &self.slots[at] {
            Slot::Fresh(input) => Some(input),
            _ => None,
        }
    }

    /// Refuses the new intent at `at`, then every new intent that depends on it (and so on),
    /// unless the ledger knows its id.
    fn refuse(&mut self, at: usize, error: SchedulerError) {
        let mut work = vec![(at, error)];
        while let Some((at, error)) = work.pop() {
            let Some(input) = self.fresh(at) else {
                continue;
            };
            let id = input.id.clone();
            self.slots[at] = Slot::Refused(error);
            if self.ledger.knows(&id) {
                continue;
            }
            for &dependent in &self.dependents[at] {
                if let Some(input) = self.fresh(dependent) {
                    work.push((dependent, unknown(input, &id)));
                }
            }
        }
    }

    /// Refuses each new intent with a dependency neither in the call nor known.
    fn refuse_unknown_dependencies(&mut self) {
        let mut missing = Vec::new();
        for (at, slot) in self.slots.iter().enumerate() {
            let Slot::Fresh(input) = slot else { continue };
            // An intent already held in the call is known to the ledger.
            let dependencies = input.dependencies.iter();
            let mut absent = dependencies.filter(|d| !self.fresh_ids.contains_key(d.as_str()));
            if let Some(dependency) = absent.find(|d| !self.ledger.knows(d)) {
                missing.push((at, unknown(input, dependency)));
            }
        }
        for (at, error) in missing {
            self.refuse(at, error);
        }
    }

    /// Refuses every new intent on a dependency cycle among the new ones: each strongly
    /// connected component of more than one, or of one that depends on itself (Tarjan's
    /// algorithm, without recursion); then what depends on them.
    fn refuse_cycles(&mut self) {
        const NONE: usize = usize::MAX;
        let count = self.slots.len();
        let (mut index, mut low) = (vec![NONE; count], vec![0; count]);
        let mut on_stack = vec![false; count];
        let (mut stack, mut cycles) = (Vec::new(), Vec::new());
        let mut next_index = 0;
        for root in 0..count {
            if index[root] != NONE || self.fresh(root).is_none() {
                continue;
            }
            // (slot, how many of its dependencies were visited)
            let mut calls = vec![(root, 0)];
            while let Some(&(at, edge)) = calls.last() {
                if edge == 0 && index[at] == NONE {
                    (index[at], low[at]) = (next_index, next_index);
                    next_index += 1;
                    stack.push(at);
                    on_stack[at] = true;
                }
                if let Some(&on) = self.dependencies[at].get(edge) {
                    if let Some(call) = calls.last_mut() {
                        call.1 += 1;
                    }
                    if self.fresh(on).is_none() {
                        continue;
                    } else if index[on] == NONE {
                        calls.push((on, 0));
                    } else if on_stack[on] {
                        low[at] = low[at].min(index[on]);
                    }
                    continue;
                }
                calls.pop();
                if let Some(&(caller, _)) = calls.last() {
                    low[caller] = low[caller].min(low[at]);
                }
                if low[at] == index[at] {
                    let from = stack.iter().rposition(|&s| s == at).unwrap_or(0);
                    let component = stack.split_off(from);
                    let looped = component.len() > 1 || self.dependencies[at].contains(&at);
                    for &member in &component {
                        on_stack[member] = false;
                        if looped {
                            cycles.push((member, at));
                        }
                    }
                }
            }
        }
        // Every member is refused for its cycle before anything cascades: members are not
        // refused for each other.
        let mut refused = Vec::with_capacity(cycles.len());
        for &(member, through) in &cycles {
            let through = self
                .fresh(through)
                .map(|i| i.id.clone())
                .unwrap_or_default();
            let id = self.fresh(member).map(|i| i.id.clone()).unwrap_or_default();
            refused.push((member, id, through));
        }
        for (member, _, through) in &refused {
            let message = format!("dependencies form a cycle through {through}");
            self.slots[*member] =
                Slot::Refused(SchedulerError::new(ErrorCode::DependencyCycle, message));
        }
        for (member, id, _) in refused {
            if self.ledger.knows(&id) {
                continue;
            }
            for k in 0..self.dependents[member].len() {
                let dependent = self.dependents[member][k];
                if let Some(input) = self.fresh(dependent) {
                    let error = unknown(input, &id);
                    self.refuse(dependent, error);
                }
            }
        }
    }

    /// Refuses each new intent whose explicit sequence is not above the one before it (the
    /// ledger's, then each accepted new intent's, assigned or explicit).
    fn refuse_sequences(&mut self) {
        let Some(mut last) = self.ledger.last_sequence() else {
            return;
        };
        for at in 0..self.slots.len() {
            let Some(input) = self.fresh(at) else {
                continue;
            };
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
            self.refuse(at, error);
        }
    }
}
