//! What the ledger knows of an id (retention): the operation whole, or the tombstone it was
//! compacted to; and the look-up of `known(ids)`, which reads storage for what memory does
//! not hold.
//!
//! An id is always somewhere: in the working ledger until the batch that compacts it is
//! durable, then a tombstone at hand, then (once pushed out of memory) only in storage. A
//! look-up decides what to read when it begins and answers when the read is done; batches land
//! meanwhile, and each that compacts would push older tombstones out of memory: ids the read
//! skipped because they were at hand. So while a look-up is under way nothing leaves memory
//! ([`Ledger::begin_look_up`](crate::ledger::Ledger::begin_look_up)), and an id known
//! when it began is known when it ends.

use std::collections::BTreeMap;

use super::Scheduler;
use crate::host::Host;
use crate::json_text::JsonText;
use crate::ledger::{REPLACED_BY, SUPERSEDED};
use crate::model::{Millis, Operation, OperationOutcome, OperationPhase, Settlement};
use crate::retention::Tombstone;
use crate::safe_error::SafeError;

/// What the ledger knows of an id: the operation whole, or the tombstone it was compacted to.
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum Known {
    /// Stored whole.
    Operation(Box<Operation>),
    /// Settled and compacted (retention).
    Tombstone(Compacted),
}

impl From<&Tombstone> for Known {
    /// Whole while the archive keeps it, else its tombstone.
    fn from(tombstone: &Tombstone) -> Self {
        match &tombstone.whole {
            Some(op) => Known::Operation(op.clone()),
            None => Known::Tombstone(Compacted::from(tombstone)),
        }
    }
}

/// A compacted operation as `operation(id)` answers it: `{ id, compacted: true, outcome,
/// settledAt, principal?, replacedBy? }`.
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct Compacted {
    /// The operation id.
    #[serde(rename = "id")]
    pub id: String,
    /// Always true: tells this shape from an operation record.
    #[serde(rename = "compacted")]
    pub compacted: bool,
    /// How it settled.
    #[serde(rename = "outcome")]
    pub outcome: Settlement,
    /// When it settled.
    #[serde(rename = "settledAt")]
    pub settled_at: Millis,
    /// Its principal.
    #[serde(rename = "principal", skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// A coalesced intent superseded it (`outcome` is then `discarded`): the operation that
    /// replaced it, as its record said before it was compacted.
    #[serde(rename = "replacedBy", skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<String>,
}

impl Compacted {
    /// The settled record a tab reports for it when nothing more is known: its id, resolved,
    /// with its outcome (no request or canonical answer: the tombstone keeps none; a
    /// superseded one's error names what replaced it, as the record did).
    pub fn settled_record(&self) -> Operation {
        let mut op = Operation::default();
        op.intent.id.clone_from(&self.id);
        op.intent.principal.clone_from(&self.principal);
        op.phase = OperationPhase::Resolved;
        let error = self.replaced_by.as_ref().map(|next| {
            SafeError::new(SUPERSEDED, &format!("replaced by {next}"))
                .with_details(JsonText::member(REPLACED_BY, next))
        });
        op.outcome = Some(Box::new(OperationOutcome {
            settlement: self.outcome,
            at: self.settled_at,
            error,
            ..Default::default()
        }));
        op
    }
}

impl From<&Tombstone> for Compacted {
    fn from(t: &Tombstone) -> Self {
        Self {
            id: t.id.clone(),
            compacted: true,
            outcome: t.settlement,
            settled_at: t.settled_at,
            principal: t.principal.clone(),
            replaced_by: t.replaced_by.clone(),
        }
    }
}

impl<H: Host> Scheduler<H> {
    /// The operation `id` whole, or its tombstone when it was compacted and the tombstone is
    /// at hand (compacted in this session, or looked up: see `learn_tombstones`).
    pub fn known(&self, id: &str) -> Option<Known> {
        if let Some(op) = self.operation_view(id) {
            return Some(Known::Operation(Box::new(op.clone())));
        }
        self.ledger
            .tombstone(id)
            .map(|t| Known::Tombstone(Compacted::from(t)))
    }

    /// The operation `id` whole: in the ledger, or compacted with its archived copy at hand.
    pub(super) fn operation_view(&self, id: &str) -> Option<&Operation> {
        self.ledger
            .operation(id)
            .or_else(|| self.ledger.tombstone(id)?.whole.as_deref())
    }

    /// Begins `known(ids)`: the ids memory does not hold (neither stored whole nor a tombstone
    /// at hand), which the driver reads from storage, then hands to
    /// [`Scheduler::end_known`] (or, when the read fails, calls [`Scheduler::end_look_up`]).
    /// Until then nothing leaves memory.
    pub fn begin_known(&mut self, ids: &[String]) -> Vec<String> {
        self.begin_look_up();
        let mut unread: Vec<String> = ids
            .iter()
            .filter(|id| self.ledger.operation(id).is_none() && self.ledger.tombstone(id).is_none())
            .cloned()
            .collect();
        unread.sort_unstable();
        unread.dedup();
        unread
    }

    /// Ends `known(ids)` with the tombstones storage held for the ids [`Scheduler::begin_known`]
    /// named: in order, what memory holds now (an operation enqueued meanwhile included), else
    /// what storage held, else `None` (never stored, or its tombstone is gone). The tombstones
    /// it answered with stay at hand for `operation(id)` and `explain(id)`, the most recently
    /// asked first, as many as memory keeps.
    pub fn end_known(&mut self, ids: &[String], mut found: Vec<Tombstone>) -> Vec<Option<Known>> {
        let by_id: BTreeMap<&str, &Tombstone> = found.iter().map(|t| (t.id.as_str(), t)).collect();
        let answers: Vec<Option<Known>> = ids
            .iter()
            .map(|id| {
                self.known(id)
                    .or_else(|| by_id.get(id.as_str()).map(|t| Known::from(*t)))
            })
            .collect();
        for id in ids {
            self.ledger.touch_tombstone(id);
        }
        // Memory keeps at most its limit of them: the newest.
        found.sort_unstable_by_key(|t| t.key);
        let kept = self.ledger.memory_limit();
        found.drain(..found.len().saturating_sub(kept));
        self.ledger.learn_tombstones(found);
        self.end_look_up();
        answers
    }

    /// A look-up of stored tombstones begins (`known(ids)`, or the rounds before an enqueue,
    /// [`Scheduler::unknown_ids`]): until [`Scheduler::end_look_up`], no tombstone leaves
    /// memory, so what the look-up did not read because memory had it is still there when it
    /// answers or admits.
    pub fn begin_look_up(&mut self) {
        self.ledger.begin_look_up();
    }

    /// A look-up begun with [`Scheduler::begin_look_up`] or [`Scheduler::begin_known`] is over.
    pub fn end_look_up(&mut self) {
        self.ledger.end_look_up();
    }

    /// Most tombstones kept at hand (`MEMORY_LIMIT`): tests lower it to reach the limit with
    /// few operations.
    pub fn set_memory_limit(&mut self, limit: usize) {
        self.ledger.set_memory_limit(limit);
    }
}
