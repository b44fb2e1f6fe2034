//! Compaction slices: which settled operations leave the working stores in a batch, with
//! their pages' other copies, and the trims of tombstones and the archive.

use std::collections::{BTreeMap, BTreeSet};

use super::chain::replaced_by;
use super::{Dirty, Ledger, Slot};
use crate::model::{Millis, Operation, OperationPhase};
use crate::operation_pages::Home;
use crate::retention::{
    tombstone_key, Tombstone, TombstoneTrim, ARCHIVE_TRIM_EVERY, KEYS_PER_MS, REWRITE_LIMIT,
    SCAN_LIMIT, SLICE_LIMIT,
};

/// What one compaction slice does.
#[derive(Debug, Default)]
pub(super) struct Slice {
    pub(super) victims: BTreeSet<String>,
    pub(super) tombstones: Vec<Tombstone>,
    /// Current copies in pages the slice deletes, written again: (id, page).
    pub(super) survivors: Vec<(String, u64)>,
    pub(super) requests: BTreeSet<String>,
    pub(super) trim: Option<TombstoneTrim>,
    pub(super) archive_trim: Option<TombstoneTrim>,
}

impl Slice {
    pub(super) fn is_victim(&self, id: &str) -> bool {
        self.victims.contains(id)
    }
}

impl Ledger {
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
    pub(super) fn copies_leaving(&self, dirty: &Dirty) -> BTreeMap<u64, usize> {
        let mut leaving: BTreeMap<u64, usize> = BTreeMap::new();
        for id in &dirty.operations {
            if let Some(Slot {
                home: Home::Page(no),
                ..
            }) = self.operations.get(id)
            {
                *leaving.entry(*no).or_default() += 1;
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
    pub(super) fn slice(&mut self, now: Millis, dirty: &Dirty, window: bool) -> Slice {
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
        let mut doomed: BTreeSet<u64> = BTreeSet::new();
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
        let mut chains = BTreeMap::new();
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
                pages.insert(no);
            }
            pages.retain(|no| self.pages.holds(*no) && !doomed.contains(no));
            let more: usize = pages
                .iter()
                .map(|no| {
                    let here = superseded_here.get(no).copied().unwrap_or(0);
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
                doomed.insert(no);
            }
            key = tombstone_key(now, key);
            if let Some(mut tombstone) = Tombstone::of(&slot.op, key) {
                // Superseded: its dependents are its replacement's, compacted or not.
                if let Some(next) = replaced_by(&slot.op) {
                    let end = self.walk(id).0;
                    tombstone.chain_end = (end != next).then(|| end.to_owned());
                    tombstone.replaced_by = Some(next.to_owned());
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
    pub(super) fn trim_archive(&mut self, now: Millis, slice: &mut Slice) {
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
    pub(super) fn chain_settled(&self, id: &str, memo: &mut BTreeMap<String, bool>) -> bool {
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
    pub(super) fn compactable(
        &self,
        op: &Operation,
        protected: &BTreeSet<String>,
        dirty: &Dirty,
    ) -> bool {
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
    pub(super) fn protected(&mut self) -> BTreeSet<String> {
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
}
