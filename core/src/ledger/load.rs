//! Building the ledger from what a load read, and the snapshot of what a crash-free store
//! would hold.

use std::collections::BTreeSet;

use super::{Ledger, LedgerSnapshot, Slot};
use crate::model::{Millis, Operation, OperationPhase, RequestPhase};
use crate::operation_pages::{Home, PageBook, PageHomes};

impl Ledger {
    /// A ledger holding already-validated durable records (nothing dirty).
    pub fn from_records(snapshot: LedgerSnapshot, event_limit: usize) -> Self {
        let mut ledger = Self::new(event_limit);
        let top = snapshot
            .operations
            .iter()
            .map(|op| op.intent.sequence)
            .max();
        ledger.meta.last_sequence = top.unwrap_or(0);
        // Built at once (a load's operations come in id order: built without a search per
        // operation); a repeated id keeps its last copy, as inserting one by one would.
        let homes = page_homes(&snapshot.operations, &snapshot.operation_pages);
        ledger.operations = snapshot
            .operations
            .into_iter()
            .enumerate()
            .map(|(at, op)| {
                let home = homes.as_ref().and_then(|h| h.get(at).copied());
                let home = home.unwrap_or(Home::Record);
                let stale_in = BTreeSet::new();
                (op.intent.id.clone(), Slot { op, home, stale_in })
            })
            .collect();
        ledger.with_dependencies = ledger
            .operations
            .iter()
            .filter(|(_, slot)| !slot.op.intent.dependencies.is_empty())
            .map(|(id, _)| id.clone())
            .collect();
        if homes.is_none() {
            for (no, ids) in &snapshot.operation_pages {
                for id in ids {
                    if let Some(slot) = ledger.operations.get_mut(id) {
                        slot.home = Home::Page(*no);
                    }
                }
            }
        }
        for (id, no) in &snapshot.stale_copies {
            if let Some(slot) = ledger.operations.get_mut(id) {
                slot.stale_in.insert(*no);
            }
        }
        let mut settled: Vec<(Millis, String)> = ledger
            .operations
            .iter()
            .filter_map(|(id, slot)| {
                let outcome = slot.op.outcome.as_ref()?;
                (slot.op.phase == OperationPhase::Resolved).then(|| (outcome.at, id.clone()))
            })
            .collect();
        settled.sort();
        ledger.resolved = settled.len();
        ledger.settled = settled.into();
        ledger.tombstone_count = snapshot.tombstone_count;
        ledger.last_tombstone_key = snapshot.last_tombstone_key;
        ledger.age_trim_due = true;
        ledger.trim_due = ledger.tombstone_count > ledger.retain.tombstones as u64;
        ledger.loose = ledger
            .operations
            .iter()
            .filter(|(_, slot)| slot.home == Home::Record)
            .map(|(id, _)| id.clone())
            .collect();
        let (pages, stale) = PageBook::from_loaded(snapshot.operation_pages);
        ledger.pages = pages;
        ledger.dirty.stale_pages = stale;
        ledger.dirty.operations = snapshot
            .amended
            .into_iter()
            .filter(|id| ledger.operations.contains_key(id))
            .collect();
        for request in snapshot.requests {
            // An operation frozen into this request and not written since (`freeze`) is
            // pending with no pointer: this unresolved request is the one carrying it.
            if request.is_unresolved() {
                for id in &request.operation_ids {
                    if let Some(slot) = ledger.operations.get_mut(id) {
                        let op = &mut slot.op;
                        if op.phase == OperationPhase::Pending && op.request_id.is_none() {
                            op.request_id = Some(request.id.clone());
                        }
                    }
                }
            }
            if request.phase != RequestPhase::Frozen {
                ledger.marked.insert(request.id.clone());
            }
            ledger.requests.insert(request.id.clone(), request);
        }
        ledger.lease = snapshot.lease;
        let mut events = snapshot.events;
        events.sort_by_key(|event| event.seq);
        ledger.meta.last_event_seq = events.last().map_or(0, |event| event.seq);
        // Storage trims whole pages, so it may hold a few events more than the limit.
        let excess = events.len().saturating_sub(ledger.event_limit);
        events.drain(..excess);
        ledger.events = events.into();
        let stored = snapshot
            .meta
            .last_sequence
            .min(crate::intent::MAX_SAFE_INTEGER);
        ledger.meta.last_sequence = ledger.meta.last_sequence.max(stored);
        ledger.meta.last_event_seq = ledger.meta.last_event_seq.max(snapshot.meta.last_event_seq);
        // A browser load reads none of the log (`events()` reads it when asked): what
        // storage holds past the limit goes with the first event written.
        if ledger.events.is_empty() {
            ledger.event_floor = ledger
                .meta
                .last_event_seq
                .checked_sub(ledger.event_limit as u64)
                .map(|below| below + 1);
        }
        ledger
    }

    /// A copy of every record (what a crash-free store would hold after all batches).
    pub fn snapshot(&self) -> LedgerSnapshot {
        let mut operation_pages: PageHomes =
            self.pages.pages().map(|(no, _)| (no, Vec::new())).collect();
        for (id, slot) in self.operations.iter() {
            if let Home::Page(no) = slot.home {
                if let Some(ids) = operation_pages.get_mut(&no) {
                    ids.push(id.clone());
                }
            }
        }
        LedgerSnapshot {
            operations: self.operations().cloned().collect(),
            requests: self.requests.values().cloned().collect(),
            lease: self.lease.clone(),
            events: self.events.iter().cloned().collect(),
            meta: self.meta.clone(),
            operation_pages,
            stale_copies: self
                .operations
                .iter()
                .flat_map(|(id, slot)| slot.stale_in.iter().map(|no| (id.clone(), *no)))
                .collect(),
            tombstone_count: self.tombstone_count,
            last_tombstone_key: self.last_tombstone_key,
            amended: BTreeSet::new(),
        }
    }
}

/// Where each of `operations` has its current copy: `Home::Page(no)` for the ids `pages`
/// lists, `Home::Record` for the rest; `None` unless the operations are in strict id order
/// (a load's are). A page lists its ids in order, so each id is looked for right after the
/// previous one first, then by a binary search: no map search per listed id.
pub(super) fn page_homes(operations: &[Operation], pages: &PageHomes) -> Option<Vec<Home>> {
    let ordered = operations
        .windows(2)
        .all(|pair| pair[0].intent.id < pair[1].intent.id);
    if !ordered {
        return None;
    }
    let mut homes = vec![Home::Record; operations.len()];
    let is = |at: usize, id: &str| operations.get(at).is_some_and(|op| op.intent.id == id);
    for (no, ids) in pages {
        let mut next = 0;
        for id in ids {
            let found = if is(next, id) {
                Some(next)
            } else {
                operations
                    .binary_search_by(|op| op.intent.id.as_str().cmp(id))
                    .ok()
            };
            if let Some(at) = found {
                homes[at] = Home::Page(*no);
                next = at + 1;
            }
        }
    }
    Some(homes)
}
