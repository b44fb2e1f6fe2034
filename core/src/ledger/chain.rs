//! Dependencies through replacement chains: a coalesced intent supersedes an operation, and a
//! dependency on the replaced one waits for the end of its chain.

use super::{Ledger, REPLACED_BY, SUPERSEDED};
use crate::model::{Operation, OperationPhase, Settlement};
use crate::retention::Tombstone;

/// The operation that superseded `op`, from its outcome's `replacedBy` detail.
pub(super) fn replaced_by(op: &Operation) -> Option<&str> {
    let error = op.outcome.as_ref()?.error.as_ref()?;
    if op.phase != OperationPhase::Resolved || error.code != SUPERSEDED {
        return None;
    }
    let details = error.details.as_ref()?;
    // As this crate writes it (`{"replacedBy":"…"}`): read without parsing, since replacement
    // chains are walked hop by hop (a drag's chain is as long as the drag). Any other text
    // is read as JSON.
    if let Some(id) = details
        .text()
        .strip_prefix(r#"{"replacedBy":""#)
        .and_then(|rest| rest.strip_suffix(r#""}"#))
        .filter(|id| !id.contains(['"', '\\']))
    {
        return Some(id);
    }
    let raw = details.members()?.get(REPLACED_BY)?;
    // Operation ids never need escapes: the raw member is the id in quotes.
    raw.strip_prefix('"')?
        .strip_suffix('"')
        .filter(|next| !next.contains('\\'))
}

/// Where a replacement chain ends (see [`Ledger::dependency_settlement`]).
pub(super) enum ChainEnd<'a> {
    /// A stored operation.
    Stored(&'a Operation),
    /// A tombstone at hand.
    Compacted(&'a Tombstone),
    /// An id neither stored nor at hand.
    Unknown,
    /// A cycle (corrupt storage).
    Cycle,
}

impl Ledger {
    /// Whether a dependency is settled for good.
    pub fn is_resolved(&self, id: &str) -> bool {
        self.operations
            .get(id)
            .is_some_and(|slot| slot.op.phase == OperationPhase::Resolved)
    }

    /// The operation a dependency on `id` waits for: `id` itself or, when a coalesced intent
    /// superseded it, the one that replaced it (to the end of the chain). The replaced one
    /// never reaches the server; its state travels with its replacement.
    pub fn dependency_target<'a>(&'a self, id: &'a str) -> &'a str {
        self.chain_end(id).0
    }

    /// The stored operation at the end of a dependency's chain (see
    /// [`Ledger::dependency_target`]); `None` when it is not stored.
    pub fn dependency_end<'a>(&'a self, id: &'a str) -> Option<&'a Operation> {
        self.chain_end(id).1
    }

    /// Whether a dependency on `id` is met: its target is resolved, or compacted (no longer
    /// stored: only an operation settled, with its whole replacement chain, is compacted, and
    /// enqueue admits no dependency on an id it knows neither stored nor as a tombstone).
    pub fn dependency_met(&self, id: &str) -> bool {
        match self.dependency_end(id) {
            Some(op) => op.phase == OperationPhase::Resolved,
            // Missing, or a cycle (corrupt storage: never met).
            None => !self.operations.contains_key(self.dependency_target(id)),
        }
    }

    /// How a dependency on `id` settled, following replacements through stored operations
    /// and, once compacted, through the tombstones at hand (a superseded operation's tombstone
    /// names its replacement): the end's settlement, `None` while it is unsettled or when the
    /// chain leaves what is stored and at hand (see [`Ledger::dependency_gap`]).
    pub fn dependency_settlement(&self, id: &str) -> Option<Settlement> {
        match self.walk(id).1 {
            ChainEnd::Stored(op) if op.phase == OperationPhase::Resolved => {
                op.outcome.as_ref().map(|o| o.settlement)
            }
            ChainEnd::Compacted(tombstone) => Some(tombstone.settlement),
            _ => None,
        }
    }

    /// The first id on a dependency's replacement chain that is neither stored nor a
    /// tombstone at hand: the driver looks it up before an enqueue that names `id`.
    pub fn dependency_gap<'a>(&'a self, id: &'a str) -> Option<&'a str> {
        match self.walk(id) {
            (gap, ChainEnd::Unknown) => Some(gap),
            _ => None,
        }
    }

    /// [`Ledger::chain_end`] through tombstones at hand too. Bounded like it (a cycle ends
    /// [`ChainEnd::Cycle`]).
    pub(super) fn walk<'a>(&'a self, id: &'a str) -> (&'a str, ChainEnd<'a>) {
        let mut target = id;
        for _ in 0..=self.operations.len() + self.tombstones.len() {
            let next = if let Some(slot) = self.operations.get(target) {
                match replaced_by(&slot.op) {
                    Some(next) => next,
                    None => return (target, ChainEnd::Stored(&slot.op)),
                }
            } else if let Some(tombstone) = self.tombstone(target) {
                match tombstone.chain_end() {
                    Some(next) => next,
                    None => return (target, ChainEnd::Compacted(tombstone)),
                }
            } else {
                return (target, ChainEnd::Unknown);
            };
            target = next;
        }
        (target, ChainEnd::Cycle)
    }

    /// Walks a replacement chain, one lookup per hop: its last id and that operation. Bounded:
    /// the chain comes from storage, which is not trusted to be acyclic, and no chain without
    /// a cycle is longer than the ledger (a cycle ends with no operation).
    pub(super) fn chain_end<'a>(&'a self, id: &'a str) -> (&'a str, Option<&'a Operation>) {
        let mut target = id;
        for _ in 0..=self.operations.len() {
            let Some(slot) = self.operations.get(target) else {
                return (target, None);
            };
            match replaced_by(&slot.op) {
                Some(next) => target = next,
                None => return (target, Some(&slot.op)),
            }
        }
        (target, None)
    }
}
