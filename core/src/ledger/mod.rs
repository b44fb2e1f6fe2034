//! The ledger: operations, frozen requests, the lease, the event log. It is the only
//! authority; every transition marks what it changed, and [`Ledger::take_batch`] turns the
//! changes into one [`PersistBatch`](crate::io::PersistBatch) (group commit). A failed
//! batch is put back.
//!
//! This file holds the records, the reads and the transitions; `load` builds a ledger from
//! what storage held, `batch` takes and settles group commits, `compaction` picks what
//! leaves the working stores, `tombstones` keeps what retention leaves at hand, and `chain`
//! follows dependencies through replacement chains.

use std::collections::VecDeque;
use std::collections::{BTreeMap, BTreeSet};

use super::io::BatchNo;
use super::model::{
    EventKind, EventRecord, FrozenRequest, Lease, LedgerMeta, Millis, Operation, OperationOutcome,
    OperationPhase, RequestPhase, RetryAction,
};
use super::operation_pages::{Home, PageBook, PageHomes, PagePlan, StaleCopies, PAGE_LIMIT};
use super::retention::{RetentionPolicy, Tombstone};

/// Settlement error code of an operation a coalesced intent replaced.
pub(crate) const SUPERSEDED: &str = "superseded";
/// Detail of a [`SUPERSEDED`] error naming the operation that replaced it.
pub(crate) const REPLACED_BY: &str = "replacedBy";

mod batch;
mod chain;
mod compaction;
mod load;
mod rollback;
#[cfg(test)]
mod tests;
mod tombstones;

/// The durable records as loaded from storage.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LedgerSnapshot {
    /// Every operation record.
    pub operations: Vec<Operation>,
    /// Every request record.
    pub requests: Vec<FrozenRequest>,
    /// The lease record.
    pub lease: Option<Lease>,
    /// The event log, oldest first.
    pub events: Vec<EventRecord>,
    /// Ledger meta.
    pub meta: LedgerMeta,
    /// Every stored operation page with the ids whose current copy it holds (none: the page
    /// is garbage, deleted by the next batch). An operation in no list has its own record.
    pub operation_pages: PageHomes,
    /// Older copies still stored in pages (see `operation_pages::current_copies`).
    pub stale_copies: StaleCopies,
    /// Tombstones stored (counted at load).
    pub tombstone_count: u64,
    /// The highest tombstone key stored.
    pub last_tombstone_key: u64,
    /// Operations the load changed (blocked because a record they depend on was set aside):
    /// the first batch writes them back, so the next load finds them blocked too.
    pub amended: BTreeSet<String>,
}

#[derive(Debug, Default, Clone)]
struct Dirty {
    operations: BTreeSet<String>,
    requests: BTreeSet<String>,
    events: Vec<EventRecord>,
    trim_below: Option<u64>,
    /// Page numbers.
    stale_pages: BTreeSet<u64>,
    /// Something changed must be durable before the world learns of it (see
    /// [`Ledger::require_strict`]): the batch commits strict.
    strict: bool,
}

impl Dirty {
    fn merge_from(&mut self, older: Dirty) {
        self.operations.extend(older.operations);
        self.requests.extend(older.requests);
        let mut events = older.events;
        events.append(&mut self.events);
        self.events = events;
        self.trim_below = self.trim_below.max(older.trim_below);
        self.strict |= older.strict;
        self.stale_pages.extend(older.stale_pages);
    }

    fn is_empty(&self) -> bool {
        self.operations.is_empty()
            && self.requests.is_empty()
            && self.events.is_empty()
            && self.trim_below.is_none()
            && self.stale_pages.is_empty()
    }
}

/// An operation and where its current durable copy is.
#[derive(Debug)]
struct Slot {
    op: Operation,
    home: Home,
    /// Stored pages holding an older copy of it (usually none): compacting it deletes them.
    stale_in: BTreeSet<u64>,
}

/// A batch on its way to storage: what it wrote, and what changes once it is durable.
#[derive(Debug)]
struct InFlight {
    no: BatchNo,
    dirty: Dirty,
    plan: PagePlan,
    homes: Vec<(String, Home)>,
    /// Operations this batch folds from their records into a page (`loose` again if it fails).
    folded: Vec<String>,
    /// Operations this batch compacts, with their tombstones.
    compacted: Vec<Tombstone>,
    /// Requests this batch deletes (every operation they carried is compacted).
    dropped_requests: Vec<String>,
    /// Requests this batch writes with their dispatch marker (see [`Ledger::marker_durable`]).
    marked: Vec<String>,
}

/// A batch may compact a slice (see [`Ledger::take_batch_at`]); when is the scheduler's
/// decision (`Scheduler::maybe_flush`).
#[derive(Clone, Copy, Debug)]
pub struct Compact {
    /// Now.
    pub now: Millis,
    /// The batch is busy (other work rides in it): the slice examines a bounded window of
    /// the settled queue (`SCAN_LIMIT`) instead of all of it.
    pub window: bool,
}

/// The in-memory ledger with change tracking.
#[derive(Debug, Default)]
pub struct Ledger {
    operations: BTreeMap<String, Slot>,
    /// How many of `operations` are resolved (`stats().settledKept`, asked on every update of
    /// a badge or a worker's mirror: counted, never walked).
    resolved: usize,
    requests: BTreeMap<String, FrozenRequest>,
    /// Requests whose stored copy carries the dispatch marker (written before a first send):
    /// they may be sent again
    /// with nothing written first, while the lease lasts (storage failing, see `rollback`).
    marked: BTreeSet<String>,
    lease: Option<Lease>,
    events: VecDeque<EventRecord>,
    /// Stored events below this seq are past the log's limit (a load that read no event).
    event_floor: Option<u64>,
    meta: LedgerMeta,
    event_limit: usize,
    dirty: Dirty,
    pages: PageBook,
    in_flight: Option<InFlight>,
    /// Operations whose current copy became their own record, oldest first (with repeats
    /// and some that have moved on since): the candidates for folding into pages.
    loose: Vec<String>,
    /// Fold loose records into a page once this many have gathered (0: never).
    fold_at: usize,
    /// The retention policy as the working stores apply it: nothing settled is kept whole
    /// there (`settled` and `settled_ms` 0); the host's limits are the archive's.
    retain: RetentionPolicy,
    /// The archive (see `retention`): the newest this many settled operations stay whole...
    archive_keep: usize,
    /// ...while younger than this.
    archive_ms: Millis,
    /// Whole operations archived since the archive was last trimmed.
    archived_since_trim: usize,
    /// Tombstones at hand that carry their operation whole, by key then id (at most
    /// `archive_keep`: the oldest loses its copy first).
    whole_order: BTreeSet<(u64, String)>,
    /// Settled operations in the order they settled (some compacted since: skipped).
    settled: VecDeque<(Millis, String)>,
    /// Where in `settled` the next slice looks first (see [`Ledger::slice`]).
    scan_at: usize,
    /// Operations that name dependencies (some settled or gone since: skipped), so that a
    /// slice finds what unsettled work depends on without walking every operation.
    with_dependencies: BTreeSet<String>,
    /// Tombstones at hand: compacted in this session or looked up (at most `memory_limit`
    /// while no look-up is under way).
    tombstones: BTreeMap<String, tombstones::AtHand>,
    /// `tombstones` by last use then id: the least recently used is the first.
    tombstone_order: BTreeSet<(u64, String)>,
    /// Uses of tombstones at hand so far: the stamp of the next.
    tombstone_uses: u64,
    /// Look-ups of stored tombstones under way (see [`Ledger::begin_look_up`]): while one is,
    /// no tombstone leaves memory.
    look_ups: usize,
    /// Most tombstones at hand once no look-up is under way.
    memory_limit: usize,
    /// The highest tombstone key written.
    last_tombstone_key: u64,
    /// Tombstones stored, as counted at load plus those written since (at most the limit).
    tombstone_count: u64,
    /// The last slice found nothing it may compact: none runs until something settles.
    stalled: bool,
    /// The last slice compacted nothing, though some may go later (waiting for the other
    /// copies in their pages to settle): see [`Ledger::last_slice_idle`].
    idle_slice: bool,
    /// Settled entries slices have examined, in all (see [`Ledger::slice_examined`]).
    examined: u64,
    /// Tombstones past the policy may be stored (a count, a slice): the next slice trims.
    trim_due: bool,
    /// Tombstones and archived operations past the age limit may be stored (a load): the next
    /// slice trims by age (a range delete; the count is known later, see `add_tombstone_count`).
    age_trim_due: bool,
    /// Tombstones this session wrote (durable or in flight excluded), for a count taken later.
    written_tombstones: u64,
    /// What the last confirmed batch compacted, until [`Ledger::drop_compacted`].
    durably_compacted: (Vec<Tombstone>, Vec<String>),
}

impl Ledger {
    /// An empty ledger keeping at most `event_limit` events.
    pub fn new(event_limit: usize) -> Self {
        Self {
            event_limit: event_limit.max(1),
            fold_at: PAGE_LIMIT,
            memory_limit: super::retention::MEMORY_LIMIT,
            ..Self::default()
        }
    }

    /// An operation by id.
    pub fn operation(&self, id: &str) -> Option<&Operation> {
        self.operations.get(id).map(|slot| &slot.op)
    }

    /// A request by id.
    pub fn request(&self, id: &str) -> Option<&FrozenRequest> {
        self.requests.get(id)
    }

    /// Every operation, by id.
    pub fn operations(&self) -> impl Iterator<Item = &Operation> {
        self.operations.values().map(|slot| &slot.op)
    }

    /// Every request, by id.
    pub fn requests(&self) -> impl Iterator<Item = &FrozenRequest> {
        self.requests.values()
    }

    /// Number of operations.
    pub fn operation_count(&self) -> usize {
        self.operations.len()
    }

    /// The lease as last known.
    pub fn lease(&self) -> Option<&Lease> {
        self.lease.as_ref()
    }

    /// Ledger meta.
    pub fn meta(&self) -> &LedgerMeta {
        &self.meta
    }

    /// Events with `seq > after`, at most `limit`.
    pub fn events_after(&self, after: u64, limit: usize) -> Vec<EventRecord> {
        self.events
            .iter()
            .filter(|event| event.seq > after)
            .take(limit)
            .cloned()
            .collect()
    }

    /// Records the lease as the store now holds it.
    pub fn set_lease(&mut self, lease: Option<Lease>) {
        self.lease = lease;
    }

    /// Admits a new operation and advances the sequence counter.
    pub fn insert_operation(&mut self, operation: Operation) {
        // No meta write: the operation record carries its sequence and a load takes the
        // highest one (`from_records`, the loader), so one record fewer per enqueue.
        self.meta.last_sequence = self.meta.last_sequence.max(operation.intent.sequence);
        self.dirty.operations.insert(operation.intent.id.clone());
        self.dirty.strict = true;
        self.forget_tombstone(&operation.intent.id);
        let slot = Slot {
            op: operation,
            home: Home::Unwritten,
            stale_in: BTreeSet::new(),
        };
        if slot.op.phase == OperationPhase::Resolved {
            self.resolved += 1;
        }
        if !slot.op.intent.dependencies.is_empty() {
            self.with_dependencies.insert(slot.op.intent.id.clone());
        }
        let replaced = self.operations.insert(slot.op.intent.id.clone(), slot);
        if replaced.is_some_and(|old| old.op.phase == OperationPhase::Resolved) {
            self.resolved -= 1;
        }
    }

    /// Freezes a request and points its operations at it.
    ///
    /// Only the request is written: its `operationIds` are the durable pointer, and a load
    /// points each pending operation without one back at the unresolved request that lists
    /// it ([`Ledger::from_records`]). That saves rewriting every operation at freeze (a third
    /// of the operation writes). An operation changed for another reason in the same batch
    /// is written with the pointer anyway.
    pub fn freeze(&mut self, request: FrozenRequest) {
        for id in &request.operation_ids {
            if let Some(slot) = self.operations.get_mut(id) {
                slot.op.request_id = Some(request.id.clone());
            }
        }
        self.dirty.requests.insert(request.id.clone());
        self.dirty.strict = true;
        self.requests.insert(request.id.clone(), request);
    }

    /// The next batch commits strict: it carries a change the host or the server learns of
    /// before a later strict write would have flushed it (an enqueue's acknowledgement, a
    /// freeze, a host call's promise). Answers, retry schedules and events need not: a power
    /// loss that drops them leaves the request unresolved, and a query recovers it.
    pub fn require_strict(&mut self) {
        self.dirty.strict = true;
    }

    fn request_mut(&mut self, id: &str) -> Option<&mut FrozenRequest> {
        let request = self.requests.get_mut(id)?;
        self.dirty.requests.insert(id.to_owned());
        Some(request)
    }

    fn operation_mut(&mut self, id: &str) -> Option<&mut Operation> {
        let slot = self.operations.get_mut(id)?;
        self.dirty.operations.insert(id.to_owned());
        Some(&mut slot.op)
    }

    /// Counts a send; a submit marks the request dispatched (the conservative marker: it may have
    /// left).
    pub fn mark_sent(&mut self, id: &str, action: RetryAction) -> Option<u32> {
        let request = self.request_mut(id)?;
        request.attempt = request.attempt.saturating_add(1);
        let first = action == RetryAction::Submit && request.phase == RequestPhase::Frozen;
        if first {
            request.phase = RequestPhase::Dispatched;
        }
        request.retry_at = None;
        request.retry_action = None;
        let attempt = request.attempt;
        if first {
            // The dispatch marker is durable before the first byte is sent.
            self.dirty.strict = true;
        }
        Some(attempt)
    }

    /// Stores the absolute due time and action of the next attempt.
    pub fn schedule_retry(&mut self, id: &str, due_at: Millis, action: RetryAction) {
        if let Some(request) = self.request_mut(id) {
            request.retry_at = Some(due_at);
            request.retry_action = Some(action);
        }
    }

    /// Applies `edit` to a request and marks it changed.
    pub fn update_request(&mut self, id: &str, edit: impl FnOnce(&mut FrozenRequest)) {
        if let Some(request) = self.request_mut(id) {
            edit(request);
        }
    }

    /// Applies `edit` to an operation and marks it changed.
    pub fn update_operation(&mut self, id: &str, edit: impl FnOnce(&mut Operation)) {
        if let Some(op) = self.operation_mut(id) {
            edit(op);
        }
    }

    /// Settles an operation for good.
    pub fn resolve_operation(&mut self, id: &str, outcome: OperationOutcome) {
        // A stalled ledger stays stalled when an operation is superseded: it may go only once
        // its replacement's chain settles, and that chain ends in the operation just enqueued
        // (whose settlement clears it). A drag that supersedes a version a frame then pays for
        // no slice a frame that would walk the whole chain to find it unsettled.
        let superseded = outcome.error.as_ref().is_some_and(|e| e.code == SUPERSEDED);
        if let Some(op) = self.operation_mut(id) {
            let first = op.phase != OperationPhase::Resolved;
            op.phase = OperationPhase::Resolved;
            op.blockers.clear();
            let at = outcome.at;
            op.outcome = Some(Box::new(outcome));
            if first {
                self.resolved += 1;
                self.settled.push_back((at, id.to_owned()));
            }
            self.stalled &= superseded;
        }
        // One whose pages hold no other current copy may go at once: the next slice looks.
        if self.operations.get(id).is_some_and(|slot| {
            !matches!(slot.home, Home::Page(_))
                && slot
                    .stale_in
                    .iter()
                    .all(|no| self.pages.current_in(*no) == 0)
        }) {
            self.idle_slice = false;
        }
    }

    /// Adds a blocker to an operation (idempotent).
    pub fn block_operation(&mut self, id: &str, reason: &str) {
        if let Some(op) = self.operation_mut(id) {
            if !op.blockers.iter().any(|b| b == reason) {
                op.blockers.push(reason.to_owned());
            }
        }
    }

    /// Appends to the bounded event log.
    pub fn append_event(&mut self, mut event: EventRecord) {
        // No meta write either: the log always keeps its newest entries, whose keys are the
        // highest `seq`, and a load takes the highest.
        self.meta.last_event_seq += 1;
        event.seq = self.meta.last_event_seq;
        self.events.push_back(event.clone());
        self.dirty.events.push(event);
        if let Some(below) = self.event_floor.take() {
            self.dirty.trim_below = self.dirty.trim_below.max(Some(below));
        }
        while self.events.len() > self.event_limit {
            if let Some(dropped) = self.events.pop_front() {
                self.dirty.trim_below = Some(dropped.seq + 1);
            }
        }
    }

    /// A new event record for `append_event` (its seq is assigned there).
    pub fn event(kind: EventKind, at: Millis) -> EventRecord {
        EventRecord {
            seq: 0,
            at,
            kind,
            request_id: None,
            operation_id: None,
            attempt: None,
            fence: None,
            detail: None,
        }
    }
}
