//! An in-memory ledger store: applies a [`PersistBatch`] atomically under the lease's fence rules,
//! exactly as the IndexedDB store does in one readwrite transaction.

use std::collections::{BTreeMap, BTreeSet};

use canvas_scheduler_core::{
    operation_pages::current_copies, retention::Tombstone, EventRecord, FrozenRequest, Lease,
    LeaseWrite, LedgerMeta, LedgerSnapshot, Millis, Operation, PersistBatch, PersistFailure,
    PersistResult, SafeError,
};

/// Durable state of one ledger.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    /// Operations written again, one record each (they supersede page copies).
    operations: BTreeMap<String, Operation>,
    /// Operation pages, keyed by page number (as the browser store keeps them).
    operation_pages: BTreeMap<u64, Vec<Operation>>,
    requests: BTreeMap<String, FrozenRequest>,
    lease: Option<Lease>,
    /// The event log in pages, one per batch, keyed by the page's last seq (as the browser
    /// store keeps it).
    events: BTreeMap<u64, Vec<EventRecord>>,
    meta: LedgerMeta,
    /// Tombstones of compacted operations, by key (as the browser store keeps them).
    tombstones: BTreeMap<u64, Tombstone>,
    /// Tombstone keys by operation id (the browser store's unique `id` index); an entry whose
    /// key no longer holds that id (trimmed) is stale and ignored.
    tombstone_keys: BTreeMap<String, u64>,
    /// The archive: settled operations whole, keyed as their tombstones (`settled` store).
    archive: BTreeMap<u64, Operation>,
    /// Upload blobs stored (their ids).
    pub blobs: BTreeSet<String>,
    /// Batches written.
    pub writes: u64,
    /// Operation copies written (in pages and as records): what the batches cost in
    /// operations, which a burst must not make quadratic.
    pub operation_copies: u64,
    /// Relaxed commits since the last strict one, over the state before them: what a
    /// power loss may drop, any suffix of them ([`MemoryStore::power_loss`]).
    volatile: Option<Volatile>,
    /// Benchmarks: keep no copy of the state before relaxed commits (the power-loss model
    /// clones the whole store at each first relaxed commit after a strict one, a cost of
    /// this test store, not of the core); `power_loss` then drops nothing.
    pub durable_only: bool,
}

/// The state before the first relaxed commit not yet flushed, and the relaxed batches since.
#[derive(Clone, Debug)]
struct Volatile {
    before: Box<MemoryStore>,
    batches: Vec<PersistBatch>,
}

impl MemoryStore {
    /// A store holding exactly these records (e.g. a hand-corrupted ledger).
    pub fn from_snapshot(snapshot: LedgerSnapshot) -> Self {
        Self {
            operations: snapshot
                .operations
                .into_iter()
                .map(|o| (o.intent.id.clone(), o))
                .collect(),
            operation_pages: BTreeMap::new(),
            requests: snapshot
                .requests
                .into_iter()
                .map(|r| (r.id.clone(), r))
                .collect(),
            lease: snapshot.lease,
            events: snapshot
                .events
                .into_iter()
                .map(|e| (e.seq, vec![e]))
                .collect(),
            meta: snapshot.meta,
            tombstones: BTreeMap::new(),
            tombstone_keys: BTreeMap::new(),
            archive: BTreeMap::new(),
            blobs: BTreeSet::new(),
            writes: 0,
            operation_copies: 0,
            volatile: None,
            durable_only: false,
        }
    }

    /// Everything durable, as `start()` would load it.
    /// Each operation's current copy (its record, else its newest page copy), in id order.
    pub fn snapshot(&self) -> LedgerSnapshot {
        let records: BTreeSet<String> = self.operations.keys().cloned().collect();
        let (paged, operation_pages, stale_copies) =
            current_copies(self.operation_pages.clone().into_iter().collect(), |id| {
                records.contains(id)
            });
        let mut operations: Vec<Operation> = self.operations.values().cloned().collect();
        operations.extend(paged);
        operations.sort_by(|a, b| a.intent.id.cmp(&b.intent.id));
        LedgerSnapshot {
            operations,
            requests: self.requests.values().cloned().collect(),
            lease: self.lease.clone(),
            events: self.events.values().flatten().cloned().collect(),
            meta: self.meta.clone(),
            operation_pages,
            stale_copies,
            tombstone_count: self.tombstones.len() as u64,
            last_tombstone_key: self.tombstones.keys().next_back().copied().unwrap_or(0),
            amended: BTreeSet::new(),
        }
    }

    /// Operation pages stored, and records stored (for tests of the layout).
    pub fn record_counts(&self) -> (usize, usize) {
        (self.operation_pages.len(), self.operations.len())
    }

    /// The stored tombstones of `ids` (looked up by id, as an enqueue does).
    /// Each carries its archived copy when the archive still has it.
    pub fn tombstones_of<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Vec<Tombstone> {
        let ids: BTreeSet<&str> = ids.into_iter().collect();
        self.tombstones
            .values()
            .filter(|t| ids.contains(t.id.as_str()))
            .map(|t| Tombstone {
                whole: self
                    .archive
                    .get(&t.key)
                    .filter(|op| op.intent.id == t.id)
                    .map(|op| Box::new(op.clone())),
                ..t.clone()
            })
            .collect()
    }

    /// Every archived operation, by key.
    pub fn archived(&self) -> impl Iterator<Item = &Operation> {
        self.archive.values()
    }

    /// Every stored tombstone, by key.
    pub fn tombstones(&self) -> impl Iterator<Item = &Tombstone> {
        self.tombstones.values()
    }

    /// A durable request.
    pub fn request(&self, id: &str) -> Option<&FrozenRequest> {
        self.requests.get(id)
    }

    /// A durable operation.
    pub fn operation(&self, id: &str) -> Option<&Operation> {
        self.operations.get(id).or_else(|| {
            self.operation_pages
                .values()
                .rev()
                .flatten()
                .find(|op| op.intent.id == id)
        })
    }

    /// The durable lease.
    pub fn lease(&self) -> Option<&Lease> {
        self.lease.as_ref()
    }

    /// Applies a batch, or refuses all of it.
    pub fn apply(&mut self, batch: &PersistBatch) -> PersistResult {
        // Every write of a dispatcher carries its fence and is refused when stale.
        if batch.fence.is_none() || self.lease.as_ref().map(|l| l.fence) != batch.fence {
            return PersistResult::Failed(PersistFailure::Fenced {
                current: self.lease.clone(),
            });
        }
        // The browser store refuses a record holding an integer JS cannot represent exactly
        // (codec.rs); so does this one, so every native test proves each record storable.
        let unstorable = batch
            .requests
            .iter()
            .map(|request| serde_json::to_string(request).unwrap_or_default())
            .chain(
                batch
                    .events
                    .iter()
                    .map(|event| serde_json::to_string(event).unwrap_or_default()),
            )
            .any(|text| canvas_scheduler_core::json_text::exceeds_js_integers(&text));
        if unstorable {
            return Self::failure("unstorable_record");
        }
        // A strict commit flushes every relaxed one before it; a relaxed one stays
        // volatile until then.
        if batch.relaxed && !self.durable_only {
            if self.volatile.is_none() {
                self.volatile = Some(Volatile {
                    before: Box::new(self.clone()),
                    batches: Vec::new(),
                });
            }
            if let Some(volatile) = self.volatile.as_mut() {
                volatile.batches.push(batch.clone());
            }
        } else {
            self.volatile = None;
        }
        match &batch.lease {
            Some(LeaseWrite::Renew { expires_at }) => {
                if let Some(lease) = self.lease.as_mut() {
                    lease.expires_at = *expires_at;
                }
            }
            None => {}
        }
        for page in &batch.operation_pages {
            self.operation_pages
                .insert(page.no, page.operations.clone());
        }
        for op in &batch.operations {
            self.operations.insert(op.intent.id.clone(), op.clone());
        }
        for id in &batch.drop_operations {
            self.operations.remove(id);
        }
        for no in &batch.drop_operation_pages {
            self.operation_pages.remove(no);
        }
        for request in &batch.requests {
            self.requests.insert(request.id.clone(), request.clone());
        }
        if let Some(last) = batch.events.last() {
            self.events.insert(last.seq, batch.events.clone());
        }
        // Whole pages only: a page is dropped once its last event is below the trim.
        if let Some(below) = batch.trim_events_below {
            self.events = self.events.split_off(&below);
        }
        for id in &batch.drop_requests {
            self.requests.remove(id);
        }
        for id in &batch.drop_blobs {
            self.blobs.remove(id);
        }
        for tombstone in &batch.tombstones {
            if let Some(old) = self
                .tombstone_keys
                .insert(tombstone.id.clone(), tombstone.key)
            {
                if self
                    .tombstones
                    .get(&old)
                    .is_some_and(|t| t.id == tombstone.id)
                {
                    self.tombstones.remove(&old);
                }
            }
            let mut stored = tombstone.clone();
            if let Some(whole) = stored.whole.take() {
                self.archive.insert(stored.key, *whole);
            }
            self.tombstones.insert(tombstone.key, stored);
        }
        if let Some(trim) = &batch.trim_tombstones {
            trim_map(&mut self.tombstones, trim);
        }
        if let Some(trim) = &batch.trim_archive {
            trim_map(&mut self.archive, trim);
        }
        self.writes += 1;
        self.operation_copies += batch.operations.len() as u64
            + batch
                .operation_pages
                .iter()
                .map(|page| page.operations.len() as u64)
                .sum::<u64>();
        PersistResult::Done {
            lease: self.lease.clone(),
        }
    }

    /// Takes the lease if it is free, expired or already `owner`'s, bumping the fence; the
    /// caller then loads the snapshot (the browser store does both in one transaction).
    pub fn acquire(
        &mut self,
        owner: &str,
        now: Millis,
        lease_ms: Millis,
    ) -> Result<Lease, Option<Lease>> {
        let free = self
            .lease
            .as_ref()
            .is_none_or(|l| l.expires_at <= now || l.owner == owner);
        if !free {
            return Err(self.lease.clone());
        }
        // The acquiring transaction is strict: it flushes the relaxed commits before it.
        self.volatile = None;
        let lease = Lease {
            owner: owner.to_owned(),
            fence: Lease::next_fence(self.lease.as_ref().map_or(0, |l| l.fence)),
            expires_at: now + lease_ms,
        };
        self.lease = Some(lease.clone());
        Ok(lease)
    }

    /// The machine loses power: of the relaxed commits since the last strict one, only
    /// the first `keep(n)` of `n` survive (any suffix is lost). Blobs are stored strict on
    /// their own: they stay, but for those a lost commit deleted, which come back.
    pub fn power_loss(&mut self, keep: impl FnOnce(usize) -> usize) -> usize {
        let Some(volatile) = self.volatile.take() else {
            return 0;
        };
        let total = volatile.batches.len();
        let kept = keep(total).min(total);
        let (mut blobs, writes, copies) = (
            std::mem::take(&mut self.blobs),
            self.writes,
            self.operation_copies,
        );
        for batch in &volatile.batches[kept..] {
            blobs.extend(batch.drop_blobs.iter().cloned());
        }
        *self = *volatile.before;
        for batch in &volatile.batches[..kept] {
            let _ = self.apply(batch);
        }
        // What survived is on disk now.
        self.volatile = None;
        self.blobs = blobs;
        self.writes = writes;
        self.operation_copies = copies;
        total - kept
    }

    /// A storage failure result (quota, aborted transaction).
    pub fn failure(code: &str) -> PersistResult {
        PersistResult::Failed(PersistFailure::Storage(SafeError::new(
            code,
            "simulated storage failure",
        )))
    }
}

/// Deletes every entry keyed below `trim.below`, then all but the newest `trim.keep`.
fn trim_map<V>(map: &mut BTreeMap<u64, V>, trim: &canvas_scheduler_core::retention::TombstoneTrim) {
    *map = map.split_off(&trim.below);
    let excess = map.len().saturating_sub(trim.keep);
    match map.keys().nth(excess).copied() {
        Some(cut) => *map = map.split_off(&cut),
        None => map.clear(),
    }
}
