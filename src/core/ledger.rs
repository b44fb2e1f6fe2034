//! The ledger (SPEC §1): operations, frozen requests, the lease, the event log. It is the only
//! authority; every transition marks what it changed, and [`Ledger::take_batch`] turns the
//! changes into one [`PersistBatch`] (group commit). A failed batch is put back.

use crate::core::collections::str_map::StrMap;
use std::collections::BTreeSet;
use std::collections::VecDeque;

use super::io::{BatchNo, LeaseWrite, PersistBatch};
use super::model::{
    EventKind, EventRecord, FrozenRequest, Lease, LedgerMeta, Millis, Operation, OperationOutcome,
    OperationPhase, RequestPhase, RetryAction, Settlement,
};
use super::operation_pages::{
    insert_sorted, Home, PageBook, PageHomes, PagePlan, StaleCopies, PAGE_LIMIT,
};
use super::retention::{
    tombstone_key, RetentionPolicy, Tombstone, TombstoneTrim, ARCHIVE_TRIM_EVERY, KEYS_PER_MS,
    MEMORY_LIMIT, REWRITE_LIMIT, SCAN_LIMIT, SLICE_LIMIT,
};

/// Settlement error code of an operation a coalesced intent replaced.
pub const SUPERSEDED: &str = "superseded";
/// Detail of a [`SUPERSEDED`] error naming the operation that replaced it.
pub const REPLACED_BY: &str = "replacedBy";

/// The operation that superseded `op`, from its outcome's `replacedBy` detail.
fn replaced_by(op: &Operation) -> Option<&str> {
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
enum ChainEnd<'a> {
    /// A stored operation.
    Stored(&'a Operation),
    /// A tombstone at hand.
    Compacted(&'a Tombstone),
    /// An id neither stored nor at hand.
    Unknown,
    /// A cycle (corrupt storage).
    Cycle,
}

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
    /// Page numbers, sorted.
    stale_pages: Vec<u64>,
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
        for no in older.stale_pages {
            insert_sorted(&mut self.stale_pages, no);
        }
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
    stale_in: Vec<u64>,
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
    operations: StrMap<Slot>,
    /// How many of `operations` are resolved (`stats().settledKept`, asked on every update of
    /// a badge or a worker's mirror: counted, never walked).
    resolved: usize,
    requests: StrMap<FrozenRequest>,
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
    /// Tombstones at hand: compacted in this session or looked up (at most `MEMORY_LIMIT`).
    tombstones: StrMap<Tombstone>,
    /// `tombstones` by key then id: the oldest at hand is the first.
    tombstone_order: BTreeSet<(u64, String)>,
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
            ..Self::default()
        }
    }

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
                let stale_in = Vec::new();
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
                insert_sorted(&mut slot.stale_in, *no);
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
            .min(crate::core::intent::MAX_SAFE_INTEGER);
        ledger.meta.last_sequence = ledger.meta.last_sequence.max(stored);
        ledger.meta.last_event_seq = ledger.meta.last_event_seq.max(snapshot.meta.last_event_seq);
        // A browser load reads none of the log (issue 38: `events()` reads it when asked): what
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

    /// Folds loose records into a page once `at` of them have gathered (0: never). A ledger
    /// filled one enqueue per turn would otherwise stay one record per operation, and a load
    /// costs per record.
    pub fn set_fold_at(&mut self, at: usize) {
        self.fold_at = at;
    }

    /// Whether enough loose records have gathered to fold (a page of one saves nothing).
    pub fn wants_fold(&self) -> bool {
        self.fold_at > 0 && self.loose.len() >= self.fold_at.max(2)
    }

    /// A copy of every record (what a crash-free store would hold after all batches).
    pub fn snapshot(&self) -> LedgerSnapshot {
        let mut operation_pages: PageHomes =
            self.pages.pages().map(|(no, _)| (no, Vec::new())).collect();
        for (id, slot) in self.operations.iter() {
            if let Home::Page(no) = slot.home {
                if let Ok(at) = operation_pages.binary_search_by_key(&no, |(n, _)| *n) {
                    operation_pages[at].1.push(id.clone());
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

    // ----- reads -----

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

    /// The tombstone of a compacted operation, if it is at hand (compacted in this session
    /// or looked up with [`Ledger::learn_tombstones`]).
    pub fn tombstone(&self, id: &str) -> Option<&Tombstone> {
        self.tombstones.get(id)
    }

    /// Tombstones looked up in storage: kept at hand for the enqueue that asked.
    pub fn learn_tombstones(&mut self, found: Vec<Tombstone>) {
        for tombstone in found {
            if !self.operations.contains_key(&tombstone.id) {
                self.keep_tombstone(tombstone);
            }
        }
    }

    fn keep_tombstone(&mut self, mut tombstone: Tombstone) {
        self.forget_tombstone(&tombstone.id);
        if self.tombstones.len() >= MEMORY_LIMIT {
            // Forget the oldest at hand (the order index, not a walk: a slice keeps up to 256
            // a batch); storage still has it.
            if let Some((_, id)) = self.tombstone_order.pop_first() {
                self.forget_tombstone(&id);
            }
        }
        if self.archive_keep == 0 {
            tombstone.whole = None;
        }
        if tombstone.whole.is_some() {
            self.whole_order
                .insert((tombstone.key, tombstone.id.clone()));
            if self.whole_order.len() > self.archive_keep {
                // The oldest whole copy at hand goes (the archive in storage still has it
                // while the policy keeps it).
                if let Some((_, id)) = self.whole_order.pop_first() {
                    if let Some(old) = self.tombstones.get_mut(&id) {
                        old.whole = None;
                    } else if id == tombstone.id {
                        tombstone.whole = None;
                    }
                }
            }
        }
        self.tombstone_order
            .insert((tombstone.key, tombstone.id.clone()));
        self.tombstones.insert(tombstone.id.clone(), tombstone);
    }

    /// Drops a tombstone at hand (memory only).
    fn forget_tombstone(&mut self, id: &str) {
        if let Some(old) = self.tombstones.remove(id) {
            self.tombstone_order.remove(&(old.key, old.id.clone()));
            if old.whole.is_some() {
                self.whole_order.remove(&(old.key, old.id));
            }
        }
    }

    /// Settled operations at hand whole in the archive's memory (compacted in this session or
    /// looked up, at most the policy's `settled`).
    pub fn archived_count(&self) -> usize {
        self.whole_order.len()
    }

    /// Settled operations kept whole.
    pub fn settled_count(&self) -> usize {
        self.resolved
    }

    /// [`Ledger::settled_count`] by a walk of every operation (the simulation's check).
    #[cfg(any(test, feature = "testing"))]
    pub fn settled_count_walked(&self) -> usize {
        self.operations
            .values()
            .filter(|slot| slot.op.phase == OperationPhase::Resolved)
            .count()
    }

    /// Tombstones stored, as counted at load plus those written since (bounded by the policy).
    pub fn tombstone_count(&self) -> u64 {
        self.tombstone_count
    }

    /// Adds the tombstones counted in storage as the load saw it (the browser store counts
    /// them after the load, off its transaction).
    pub fn add_tombstone_count(&mut self, stored: u64) {
        let total = self.tombstone_count.saturating_add(stored);
        if total > self.retain.tombstones as u64 {
            // Past the count: the next slice keeps the newest (a walk of the pages' hashes).
            self.trim_due = true;
            self.stalled = false;
        }
        self.tombstone_count = total.min(self.retain.tombstones as u64);
    }

    /// Tombstones this session has written or is writing (the batch in flight, and one
    /// durable but not yet forgotten): a count begun now sees them, so the driver subtracts
    /// this from what it counts.
    pub fn tombstones_written(&self) -> u64 {
        let in_flight = self.in_flight.as_ref().map_or(0, |b| b.compacted.len());
        self.written_tombstones + (in_flight + self.durably_compacted.0.len()) as u64
    }

    /// The highest tombstone key stored (0: no tombstone was ever written).
    pub fn last_tombstone_key(&self) -> u64 {
        self.last_tombstone_key
    }

    /// Sets the retention policy: the working stores keep nothing settled whole (issue 38),
    /// the archive keeps what `policy` keeps.
    pub fn set_retention(&mut self, policy: RetentionPolicy) {
        self.archive_keep = if policy.keeps_nothing() {
            0
        } else {
            policy.settled
        };
        self.archive_ms = policy.settled_ms;
        self.retain = RetentionPolicy {
            settled: 0,
            settled_ms: 0,
            ..policy
        };
    }

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
    fn walk<'a>(&'a self, id: &'a str) -> (&'a str, ChainEnd<'a>) {
        let mut target = id;
        for _ in 0..=self.operations.len() + self.tombstones.len() {
            let next = if let Some(slot) = self.operations.get(target) {
                match replaced_by(&slot.op) {
                    Some(next) => next,
                    None => return (target, ChainEnd::Stored(&slot.op)),
                }
            } else if let Some(tombstone) = self.tombstones.get(target) {
                match tombstone.replaced_by.as_deref() {
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
    fn chain_end<'a>(&'a self, id: &'a str) -> (&'a str, Option<&'a Operation>) {
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

    /// Whether anything waits to be written.
    pub fn has_changes(&self) -> bool {
        !self.dirty.is_empty()
    }

    // ----- group commit -----

    /// Moves every change into a batch; the batch's keys are kept until it is confirmed.
    /// Operations never written go into new pages (unless there is just one); the others are
    /// written as their own records, superseding their page copies. With `fold` (the scheduler
    /// is quiet) and enough loose records gathered, up to a page of them is folded into a new
    /// page (`operation_pages`).
    pub fn take_batch(
        &mut self,
        no: BatchNo,
        fence: Option<u64>,
        lease: Option<LeaseWrite>,
        fold: bool,
    ) -> PersistBatch {
        self.take_batch_at(no, fence, lease, fold, None)
    }

    /// [`Ledger::take_batch`], compacting a slice when `compact` is given and one is due (see
    /// `retention`). The scheduler gives it while quiet, in every batch when the policy keeps
    /// nothing whole (a settled operation is then compacted in the batch that records its
    /// settlement, its blob with it), and in a busy batch at most every `BUSY_SLICE_MS`.
    /// Operations this batch writes are left to a later slice unless nothing is kept whole.
    pub fn take_batch_at(
        &mut self,
        no: BatchNo,
        fence: Option<u64>,
        lease: Option<LeaseWrite>,
        fold: bool,
        compact: Option<Compact>,
    ) -> PersistBatch {
        let dirty = std::mem::take(&mut self.dirty);
        // A lease renewal may be relaxed: a power loss that drops it ends every tab anyway,
        // and an earlier expiry only lets the next one take over sooner.
        let relaxed = !dirty.strict;
        let busy = matches!(compact, Some(Compact { window: true, .. }));
        let slice = match compact {
            Some(c) if self.wants_compaction(c.now) => Some(self.slice(c.now, &dirty, c.window)),
            _ => None,
        };
        let slice = slice.unwrap_or_default();
        let fold = fold && slice.victims.is_empty();
        let mut fresh = Vec::new();
        let mut rewritten = Vec::new();
        let mut superseded = Vec::new();
        let mut homes = Vec::with_capacity(dirty.operations.len());
        for id in &dirty.operations {
            let Some(slot) = self.operations.get(id) else {
                continue;
            };
            if slice.is_victim(id) {
                continue;
            }
            match slot.home {
                Home::Unwritten => {
                    fresh.push(slot.op.clone());
                    continue;
                }
                Home::Page(page) => superseded.push(page),
                Home::Record => {}
            }
            rewritten.push(slot.op.clone());
            homes.push((id.clone(), Home::Record));
        }
        // A lone new operation (one enqueue in a turn) is written as its own record: a page
        // of one costs more to store (the page object and its index entry: +0.1 ms per
        // enqueue, measured A/B) and saves nothing on a load.
        if fresh.len() == 1 {
            if let Some(op) = fresh.pop() {
                homes.push((op.intent.id.clone(), Home::Record));
                rewritten.push(op);
            }
        }
        let folded = if fold {
            self.fold_candidates(&dirty)
        } else {
            Vec::new()
        };
        fresh.extend(
            folded
                .iter()
                .filter_map(|id| self.operations.get(id))
                .map(|slot| slot.op.clone()),
        );
        for victim in &slice.victims {
            if let Some(Slot {
                home: Home::Page(page),
                ..
            }) = self.operations.get(victim)
            {
                superseded.push(*page);
            }
        }
        for (id, page) in &slice.survivors {
            if let Some(slot) = self.operations.get(id) {
                superseded.push(*page);
                if busy {
                    // While work goes on (a policy that keeps nothing whole compacts each
                    // operation as it settles, page or no page), the rest of a page go to
                    // records of their own: the next of them to settle drops its record,
                    // where a new page of them was written again with every batch, quadratic
                    // in a burst's size (400 operations of one `enqueueMany` wrote 46.7 MB).
                    // Quiet time folds them back into pages.
                    rewritten.push(slot.op.clone());
                    homes.push((id.clone(), Home::Record));
                } else {
                    fresh.push(slot.op.clone());
                }
            }
        }
        let (pages, plan) = self.pages.plan(fresh, superseded, &dirty.stale_pages);
        for page in &pages {
            homes.extend(
                page.operations
                    .iter()
                    .map(|op| (op.intent.id.clone(), Home::Page(page.no))),
            );
        }
        let mut drop_operations = folded.clone();
        drop_operations.extend(
            slice
                .victims
                .iter()
                .filter(|id| {
                    self.operations
                        .get(id)
                        .is_some_and(|slot| slot.home == Home::Record)
                })
                .cloned(),
        );
        let drop_blobs = slice
            .victims
            .iter()
            .filter_map(|id| self.operations.get(id)?.op.intent.blob.as_ref())
            .map(|blob| blob.id.clone())
            .collect();
        let batch = PersistBatch {
            no,
            fence,
            lease,
            operation_pages: pages,
            operations: rewritten,
            drop_operations,
            drop_operation_pages: plan.dropped.clone(),
            requests: dirty
                .requests
                .iter()
                .filter(|id| !slice.requests.contains::<str>(id))
                .filter_map(|id| self.requests.get(id).cloned())
                .collect(),
            events: dirty.events.clone(),
            trim_events_below: dirty.trim_below,
            tombstones: slice.tombstones.clone(),
            drop_requests: slice.requests.iter().cloned().collect(),
            drop_blobs,
            trim_tombstones: slice.trim.clone(),
            trim_archive: slice.archive_trim.clone(),
            relaxed,
        };
        self.in_flight = Some(InFlight {
            no,
            dirty,
            plan,
            homes,
            folded,
            compacted: slice.tombstones,
            dropped_requests: slice.requests.into_iter().collect(),
        });
        batch
    }

    /// Whether a compaction slice (or a tombstone trim) is due at `now`.
    pub fn wants_compaction(&mut self, now: Millis) -> bool {
        if self.trim_due || self.age_trim_due {
            return true;
        }
        if self.stalled {
            return false;
        }
        while let Some((_, id)) = self.settled.front() {
            if self.is_resolved(id) {
                break;
            }
            self.settled.pop_front();
            self.scan_at = self.scan_at.saturating_sub(1);
        }
        self.settled.front().is_some_and(|(at, _)| {
            self.settled.len() > self.retain.settled
                || at.saturating_add(self.retain.settled_ms) <= now
        })
    }

    /// Whether the last slice compacted nothing, and nothing has happened since that may let
    /// one go: no page was left without current copies, no operation settled whose pages
    /// hold no other current copy, and the batch now open does not take a page's last ones.
    /// Settled operations that wait for the rest of their page (a burst written as pages,
    /// sent one by one) stay so until the page's last copy is written elsewhere, and a slice
    /// that looks at them again meanwhile finds nothing again: the scheduler then runs the
    /// next busy slice at its usual pace rather than with every batch (each such slice looked
    /// up every waiting entry: half the core's time per operation while a 400-operation
    /// `enqueueMany` was sent, 85 % at 4 000).
    pub fn last_slice_idle(&self) -> bool {
        self.idle_slice
            && !self
                .copies_leaving(&self.dirty)
                .iter()
                .any(|(no, n)| self.pages.current_in(*no) <= *n)
    }

    /// How many current copies each page loses to the operations in `dirty` (written again
    /// elsewhere by the batch that carries them), by page number.
    fn copies_leaving(&self, dirty: &Dirty) -> Vec<(u64, usize)> {
        let mut leaving: Vec<(u64, usize)> = Vec::new();
        for id in &dirty.operations {
            if let Some(Slot {
                home: Home::Page(no),
                ..
            }) = self.operations.get(id)
            {
                match leaving.binary_search_by_key(no, |(page, _)| *page) {
                    Ok(at) => leaving[at].1 += 1,
                    Err(at) => leaving.insert(at, (*no, 1)),
                }
            }
        }
        leaving
    }

    /// Settled entries slices have examined since the ledger was made: their work, which a
    /// burst must not make quadratic.
    pub fn slice_examined(&self) -> u64 {
        self.examined
    }

    /// When the oldest settled operation outgrows the age limit (`None`: no slice to wait
    /// for, or one is due already by count).
    pub fn compaction_due(&self) -> Option<Millis> {
        if self.stalled {
            return None;
        }
        self.settled
            .iter()
            .find(|(_, id)| self.is_resolved(id))
            .map(|(at, _)| at.saturating_add(self.retain.settled_ms))
    }

    /// Picks a slice: the oldest settled operations past the policy that may go (settled,
    /// their request resolved, their replacement chain settled, on no unsettled operation's
    /// dependency chain, not the one holding the ledger's highest sequence), at most `SLICE_LIMIT`, and at most `REWRITE_LIMIT` other copies in
    /// the pages that must go with them.
    fn slice(&mut self, now: Millis, dirty: &Dirty, window: bool) -> Slice {
        let mut slice = Slice::default();
        if std::mem::take(&mut self.trim_due)
            || self.tombstone_count > self.retain.tombstones as u64
        {
            slice.trim = Some(TombstoneTrim::at(now, &self.retain));
            self.age_trim_due = false;
        } else if std::mem::take(&mut self.age_trim_due) {
            // By age only (a range delete): keeping the newest by count walks every page.
            slice.trim = Some(TombstoneTrim {
                keep: usize::MAX,
                ..TombstoneTrim::at(now, &self.retain)
            });
        }
        // Entries of operations compacted (or no longer settled) are dropped from the front as
        // slices go (`wants_compaction`); the rest once they outnumber the live ones.
        if self.settled.len() > 2 * self.resolved + SCAN_LIMIT {
            let operations = &self.operations;
            self.settled.retain(|(_, id)| {
                operations
                    .get(id)
                    .is_some_and(|slot| slot.op.phase == OperationPhase::Resolved)
            });
            self.scan_at = 0;
        }
        // Past the count: every entry but the last `settled`. Those are live and the newest:
        // an entry goes dead only when compacted, and only an entry with at least `settled`
        // entries after it is compacted (entries are only appended), so no dead entry is
        // among the last `settled` positions.
        let excess = self.settled.len().saturating_sub(self.retain.settled);
        let protected = self.protected();
        let settled_ms = self.retain.settled_ms;
        let past_policy = |at: usize, settled_at: Millis| {
            at < excess || settled_at.saturating_add(settled_ms) <= now
        };
        let mut doomed: Vec<u64> = Vec::new();
        let mut cost = 0;
        // Page copies this batch supersedes anyway (the operations it writes again): a page
        // whose other copies all go so is dropped by the batch's own plan, with nothing to
        // write again, so the settled operations it held may go with it (a burst's last page).
        let superseded_here = self.copies_leaving(dirty);
        let mut key = self.last_tombstone_key;
        // A busy slice examines at most SCAN_LIMIT entries, from where the last one stopped
        // (then from the oldest again): entries that may not go yet (their replacement chain
        // or request unsettled, as in a long drag) cost each busy batch at most a window, not
        // the whole queue, and the entries behind them are still reached. A quiet slice looks
        // as far as it takes.
        let mut limit = if window { SCAN_LIMIT } else { usize::MAX };
        let mut chains = StrMap::new();
        let start = if self.scan_at < self.settled.len() {
            self.scan_at
        } else {
            0
        };
        let mut at = start;
        let mut wrapped = false;
        let mut examined = 0;
        let mut covered = false;
        while slice.victims.len() < SLICE_LIMIT {
            if examined == limit {
                break;
            }
            if wrapped && at >= start {
                covered = true;
                break;
            }
            let Some(id) = self
                .settled
                .get(at)
                .filter(|(settled_at, _)| past_policy(at, *settled_at))
                .map(|(_, id)| id)
            else {
                if wrapped || start == 0 {
                    covered = true;
                    break;
                }
                wrapped = true;
                at = 0;
                continue;
            };
            at += 1;
            examined += 1;
            let Some(slot) = self.operations.get(id) else {
                continue;
            };
            if !self.compactable(&slot.op, &protected, dirty) {
                continue;
            }
            let mut pages = slot.stale_in.clone();
            if let Home::Page(no) = slot.home {
                insert_sorted(&mut pages, no);
            }
            pages.retain(|no| self.pages.holds(*no) && doomed.binary_search(no).is_err());
            let more: usize = pages
                .iter()
                .map(|no| {
                    let here = superseded_here
                        .binary_search_by_key(no, |(page, _)| *page)
                        .map_or(0, |at| superseded_here[at].1);
                    self.pages.current_in(*no).saturating_sub(here)
                })
                .sum();
            // While work goes on, one whose page still holds current copies of others waits
            // for them (they settle soon and the page then goes by itself) rather than have
            // the page written again in every busy batch; a quiet slice rewrites it. A policy
            // that keeps nothing whole compacts it as it settles all the same (its blob goes).
            let waits = window && more > 0 && self.archive_keep > 0;
            let over_budget = !slice.victims.is_empty() && cost + more > REWRITE_LIMIT;
            if over_budget {
                // Past the rewrite budget only copies in pages already going may go: they
                // sit near the ones that doomed them (settle order is close to page order),
                // so a quiet slice too looks at most SCAN_LIMIT further, and a backlog of n
                // costs its slices O(n) in all, not O(n) each.
                limit = limit.min(examined.saturating_add(SCAN_LIMIT));
            }
            if waits || over_budget || !self.chain_settled(id, &mut chains) {
                continue;
            }
            cost += more;
            for no in pages {
                insert_sorted(&mut doomed, no);
            }
            key = tombstone_key(now, key);
            if let Some(mut tombstone) = Tombstone::of(&slot.op, key) {
                // Superseded: its dependents are its replacement's, compacted or not.
                if replaced_by(&slot.op).is_some() {
                    tombstone.replaced_by = Some(self.walk(id).0.to_owned());
                }
                if self.archive_keep > 0
                    && tombstone.settled_at.saturating_add(self.archive_ms) > now
                {
                    tombstone.whole = Some(Box::new(slot.op.clone()));
                    self.archived_since_trim += 1;
                }
                slice.victims.insert(id.clone());
                slice.tombstones.push(tombstone);
            }
        }
        self.scan_at = at;
        self.examined += examined as u64;
        self.idle_slice = slice.victims.is_empty();
        if slice.victims.is_empty() {
            // Nothing may go anywhere in the queue: none runs until something settles. (A
            // busy window with nothing leaves the next slice to look further.)
            self.stalled = covered;
            self.trim_archive(now, &mut slice);
            return slice;
        }
        // The other current copies in the pages that go are written again, into new pages.
        // Found among the doomed pages' own ids (a scan of every operation cost each slice
        // O(ledger): 1.2 s of an 8 s quiet compaction after a 2 000-record drag, in Chromium).
        for &no in &doomed {
            for id in self.pages.members_of(no) {
                let here = self
                    .operations
                    .get(id)
                    .is_some_and(|slot| slot.home == Home::Page(no));
                if here && !slice.victims.contains(id) && !dirty.operations.contains(id) {
                    slice.survivors.push((id.clone(), no));
                }
            }
        }
        // A resolved request goes once every operation it carried is compacted (its last
        // request, or an earlier one a revision replaced: a request with no operation left
        // would load as foreign).
        for request in self.requests.values() {
            let all_gone = !request.is_unresolved()
                && request
                    .operation_ids
                    .iter()
                    .any(|id| slice.victims.contains(id))
                && request
                    .operation_ids
                    .iter()
                    .all(|id| slice.victims.contains(id) || !self.operations.contains_key(id));
            if all_gone {
                slice.requests.insert(request.id.clone());
            }
        }
        if slice.trim.is_none()
            && self.tombstone_count + slice.tombstones.len() as u64 > self.retain.tombstones as u64
        {
            slice.trim = Some(TombstoneTrim::at(now, &self.retain));
        }
        self.trim_archive(now, &mut slice);
        slice
    }

    /// The archive: past its count or its age, by key ranges (a cursor step over the keys it
    /// keeps), every `ARCHIVE_TRIM_EVERY` archived and with every tombstone trim (each open).
    fn trim_archive(&mut self, now: Millis, slice: &mut Slice) {
        // A small archive is trimmed at each addition (exact), a large one every so often.
        let every = ARCHIVE_TRIM_EVERY.min(self.archive_keep.max(1));
        if slice.trim.is_some() || self.archived_since_trim >= every {
            self.archived_since_trim = 0;
            slice.archive_trim = Some(TombstoneTrim {
                below: now
                    .saturating_sub(self.archive_ms)
                    .saturating_mul(KEYS_PER_MS),
                keep: self.archive_keep,
            });
        }
    }

    /// Whether the replacement chain `id` heads has settled (the last check of
    /// [`Ledger::slice`], the one that walks: a chain is as long as a drag).
    /// `memo` keeps every id walked in this slice with its answer: the versions of one dragged
    /// record share their chain's end, so a slice walks each chain once, not once a version.
    fn chain_settled(&self, id: &str, memo: &mut StrMap<bool>) -> bool {
        let mut path: Vec<&str> = Vec::new();
        let mut target = id;
        let settled = loop {
            if let Some(known) = memo.get(target) {
                break *known;
            }
            // Not stored, or a cycle (storage is not trusted): as `dependency_end`'s `None`.
            let Some(slot) = self.operations.get(target) else {
                break true;
            };
            if path.len() > self.operations.len() {
                break true;
            }
            path.push(target);
            match replaced_by(&slot.op) {
                Some(next) => target = next,
                None => break slot.op.phase == OperationPhase::Resolved,
            }
        };
        for walked in path {
            memo.insert(walked.to_owned(), settled);
        }
        settled
    }

    /// Whether `op` may be compacted now, but for its replacement chain ([`Ledger::slice`]
    /// asks [`Ledger::chain_settled`] last).
    fn compactable(&self, op: &Operation, protected: &BTreeSet<String>, dirty: &Dirty) -> bool {
        let id = op.intent.id.as_str();
        let carrier = op
            .request_id
            .as_ref()
            .or(op.outcome.as_ref().and_then(|o| o.request_id.as_ref()));
        op.phase == OperationPhase::Resolved
            && op.outcome.is_some()
            && (self.retain.keeps_nothing() || !dirty.operations.contains(id))
            && carrier
                .and_then(|r| self.requests.get(r))
                .is_none_or(|r| !r.is_unresolved())
            && !protected.contains(id)
            // The ledger's highest sequence is derived from its operations at load (nothing
            // else stores it): the operation holding it stays whole, so a reload never hands
            // out a sequence again.
            && op.intent.sequence < self.meta.last_sequence
    }

    /// Every operation on the dependency chain of an unsettled operation: a dependent needs
    /// it whole (its outcome, its replacement).
    fn protected(&mut self) -> BTreeSet<String> {
        let mut protected = BTreeSet::new();
        let operations = &self.operations;
        self.with_dependencies
            .retain(|id| operations.contains_key(id));
        for id in &self.with_dependencies {
            let Some(slot) = self.operations.get(id) else {
                continue;
            };
            if slot.op.phase == OperationPhase::Resolved {
                continue;
            }
            for dependency in &slot.op.intent.dependencies {
                let mut target = dependency.as_str();
                for _ in 0..=self.operations.len() {
                    if !protected.insert(target.to_owned()) {
                        break;
                    }
                    match self.operations.get(target).and_then(|s| replaced_by(&s.op)) {
                        Some(next) => target = next,
                        None => break,
                    }
                }
            }
        }
        protected
    }

    /// Up to a page of operations to fold from their own records into a page, once `fold_at`
    /// loose records have gathered: oldest first, each once, only those whose record is their
    /// current copy and that this batch does not write anyway (their memory is their record;
    /// a pointer set by `freeze` and not written yet is written with them, as any write does).
    fn fold_candidates(&mut self, dirty: &Dirty) -> Vec<String> {
        if !self.wants_fold() {
            return Vec::new();
        }
        let mut picked = BTreeSet::new();
        let mut used = 0;
        for id in &self.loose {
            if picked.len() == PAGE_LIMIT {
                break;
            }
            used += 1;
            let is_record = self
                .operations
                .get(id)
                .is_some_and(|slot| slot.home == Home::Record);
            if is_record && !dirty.operations.contains(id) {
                picked.insert(id.clone());
            }
        }
        self.loose.drain(..used);
        if picked.len() < 2 {
            // One record as a page saves nothing; it stays loose.
            self.loose.extend(picked);
            return Vec::new();
        }
        picked.into_iter().collect()
    }

    /// The batch is durable: its operations' copies are now where it wrote them.
    pub fn confirm_batch(&mut self, no: BatchNo) {
        if self.in_flight.as_ref().is_some_and(|batch| batch.no == no) {
            if let Some(batch) = self.in_flight.take() {
                self.pages.confirm(&batch.plan);
                // A page gone frees the settled copies it held for a slice that skipped them.
                if !batch.plan.dropped.is_empty() {
                    self.stalled = false;
                }
                // A page left with no current copy frees the settled ones that waited for it.
                let emptied = batch
                    .plan
                    .superseded
                    .iter()
                    .any(|no| self.pages.current_in(*no) == 0);
                if emptied || !batch.plan.dropped.is_empty() {
                    self.idle_slice = false;
                }
                self.durably_compacted = (batch.compacted, batch.dropped_requests);
                for (id, home) in batch.homes {
                    if let Some(slot) = self.operations.get_mut(&id) {
                        if let Home::Page(old) = slot.home {
                            if home != slot.home && self.pages.holds(old) {
                                insert_sorted(&mut slot.stale_in, old);
                            }
                        }
                        slot.stale_in.retain(|no| self.pages.holds(*no));
                        slot.home = home;
                        match home {
                            Home::Record => self.loose.push(id),
                            Home::Page(no) => self.pages.note_member(no, id),
                            Home::Unwritten => {}
                        }
                    }
                }
            }
        }
    }

    /// Forgets what the last confirmed batch compacted (called once the scheduler has
    /// finished the attempts that batch completed: they still read their request). Returns
    /// the requests forgotten.
    pub fn drop_compacted(&mut self) -> Vec<FrozenRequest> {
        let (compacted, requests) = std::mem::take(&mut self.durably_compacted);
        for tombstone in compacted {
            if let Some(slot) = self.operations.remove(&tombstone.id) {
                if slot.op.phase == OperationPhase::Resolved {
                    self.resolved -= 1;
                }
            }
            self.last_tombstone_key = self.last_tombstone_key.max(tombstone.key);
            self.tombstone_count += 1;
            self.written_tombstones += 1;
            self.keep_tombstone(tombstone);
        }
        self.tombstone_count = self.tombstone_count.min(self.retain.tombstones as u64);
        requests
            .iter()
            .filter_map(|id| self.requests.remove(id))
            .collect()
    }

    /// The batch failed: its changes are dirty again, ahead of newer ones (every operation
    /// keeps the copy it had, so the retry writes the same kind of record).
    pub fn restore_batch(&mut self, no: BatchNo) {
        if let Some(batch) = self.in_flight.take() {
            if batch.no == no {
                self.dirty.merge_from(batch.dirty);
                self.loose.extend(batch.folded);
            } else {
                self.in_flight = Some(batch);
            }
        }
    }

    /// Records the lease as the store now holds it.
    pub fn set_lease(&mut self, lease: Option<Lease>) {
        self.lease = lease;
    }

    // ----- transitions -----

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
            stale_in: Vec::new(),
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

    /// Freezes a request and points its operations at it (S7).
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
    /// loss that drops them leaves the request unresolved, and a query recovers it (W1).
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

    /// Counts a send; a submit marks the request dispatched (the conservative marker of S7).
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
            // S7: the dispatch marker is durable before the first byte is sent.
            self.dirty.strict = true;
        }
        Some(attempt)
    }

    /// Stores the absolute due time and action of the next attempt (S10).
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

    /// Appends to the bounded event log (K6).
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

/// What one compaction slice does.
#[derive(Debug, Default)]
struct Slice {
    victims: BTreeSet<String>,
    tombstones: Vec<Tombstone>,
    /// Current copies in pages the slice deletes, written again: (id, page).
    survivors: Vec<(String, u64)>,
    requests: BTreeSet<String>,
    trim: Option<TombstoneTrim>,
    archive_trim: Option<TombstoneTrim>,
}

impl Slice {
    fn is_victim(&self, id: &str) -> bool {
        self.victims.contains(id)
    }
}

/// Where each of `operations` has its current copy: `Home::Page(no)` for the ids `pages`
/// lists, `Home::Record` for the rest; `None` unless the operations are in strict id order
/// (a load's are). A page lists its ids in order, so each id is looked for right after the
/// previous one first, then by a binary search: no map search per listed id.
fn page_homes(operations: &[Operation], pages: &PageHomes) -> Option<Vec<Home>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn op(id: &str, sequence: u64) -> Operation {
        crate::testing::pending_upsert(id, sequence, "c")
    }

    #[test]
    fn page_homes_match_listed_ids_of_ordered_operations() {
        let pages: PageHomes = vec![
            (4, vec!["b".into(), "d".into(), "gone".into()]),
            (9, vec!["a".into(), "c".into()]),
            (11, vec!["c".into()]),
        ];
        let in_order = [op("a", 1), op("b", 2), op("c", 3), op("d", 4), op("e", 5)];
        assert_eq!(
            page_homes(&in_order, &pages),
            Some(vec![
                Home::Page(9),
                Home::Page(4),
                Home::Page(11),
                Home::Page(4),
                Home::Record
            ])
        );
        let shuffled = [op("b", 2), op("a", 1)];
        assert_eq!(
            page_homes(&shuffled, &pages),
            None,
            "searched by the caller"
        );
        assert_eq!(page_homes(&[], &pages), Some(Vec::new()));
        assert_eq!(
            page_homes(&in_order[..1], &Vec::new()),
            Some(vec![Home::Record])
        );
    }

    #[test]
    fn a_snapshot_out_of_id_order_loads_with_the_same_homes() {
        let pages: PageHomes = vec![(4, vec!["b".into()]), (9, vec!["a".into()])];
        let snapshot = |operations: Vec<Operation>| LedgerSnapshot {
            operations,
            operation_pages: pages.clone(),
            ..LedgerSnapshot::default()
        };
        let ordered = Ledger::from_records(snapshot(vec![op("a", 1), op("b", 2), op("c", 3)]), 10);
        let shuffled = Ledger::from_records(snapshot(vec![op("c", 3), op("b", 2), op("a", 1)]), 10);
        for ledger in [&ordered, &shuffled] {
            let snap = ledger.snapshot();
            assert_eq!(snap.operation_pages, pages);
            assert_eq!(ledger.operations().count(), 3);
        }
    }

    fn replaced(ledger: &mut Ledger, id: &str, by: &str) {
        let details = crate::core::json::JsonText::object(|d| d.member(REPLACED_BY, by));
        ledger.resolve_operation(
            id,
            OperationOutcome {
                settlement: crate::core::model::Settlement::Discarded,
                request_id: None,
                error: Some(
                    crate::core::safe_error::SafeError::new(SUPERSEDED, "replaced")
                        .with_details(details),
                ),
                canonical: None,
                at: 1,
            },
        );
    }

    /// Writes everything changed in one batch and confirms it, with a slice when `compact`.
    fn commit(ledger: &mut Ledger, no: BatchNo, compact: Option<Millis>) -> PersistBatch {
        let compact = compact.map(|now| Compact { now, window: false });
        let batch = ledger.take_batch_at(no, None, None, false, compact);
        ledger.confirm_batch(no);
        batch
    }

    #[test]
    fn a_supersede_leaves_a_stalled_ledger_stalled_until_the_chain_it_extends_settles() {
        let mut ledger = Ledger::new(100);
        ledger.set_retention(crate::core::retention::RetentionPolicy::default());
        ledger.insert_operation(op("a", 1));
        ledger.insert_operation(op("b", 2));
        replaced(&mut ledger, "a", "b");
        commit(&mut ledger, 1, None);
        assert!(
            ledger.wants_compaction(10),
            "a is settled and past the policy"
        );
        let batch = commit(&mut ledger, 2, Some(10));
        assert!(
            batch.tombstones.is_empty(),
            "a's chain ends in b, unsettled"
        );
        assert!(!ledger.wants_compaction(11), "stalled: nothing may go");
        // A drag: b replaced by c, a frame later. Still nothing may go (the chain ends in c).
        ledger.insert_operation(op("c", 3));
        replaced(&mut ledger, "b", "c");
        commit(&mut ledger, 3, None);
        assert!(
            !ledger.wants_compaction(12),
            "a supersede runs no slice that must find nothing"
        );
        // The chain's end settles: the slice runs and takes the chain (but c, which holds the
        // ledger's highest sequence).
        ledger.resolve_operation(
            "c",
            OperationOutcome {
                settlement: crate::core::model::Settlement::Applied,
                request_id: None,
                error: None,
                canonical: None,
                at: 13,
            },
        );
        commit(&mut ledger, 4, None);
        assert!(ledger.wants_compaction(14));
        let batch = commit(&mut ledger, 5, Some(14));
        let mut gone: Vec<&str> = batch.tombstones.iter().map(|t| t.id.as_str()).collect();
        gone.sort_unstable();
        assert_eq!(gone, ["a", "b"]);
    }

    #[test]
    fn a_dependency_on_a_replaced_operation_targets_the_end_of_its_chain() {
        let mut ledger = Ledger::new(100);
        for (i, id) in ["a", "b", "c", "x", "y"].into_iter().enumerate() {
            ledger.insert_operation(op(id, i as u64 + 1));
        }
        replaced(&mut ledger, "a", "b");
        replaced(&mut ledger, "b", "c");
        assert_eq!(ledger.dependency_target("a"), "c");
        assert_eq!(ledger.dependency_target("c"), "c");
        assert!(!ledger.dependency_met("a"), "c is still pending");
        // Corrupt storage: a cycle ends after as many hops as there are operations.
        replaced(&mut ledger, "x", "y");
        replaced(&mut ledger, "y", "x");
        assert!(["x", "y"].contains(&ledger.dependency_target("x")));
    }
}
