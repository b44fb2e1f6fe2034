//! Group commit: the changes taken into one batch, confirmed once durable or put back when
//! the write fails; loose records folded into pages.

use std::collections::BTreeSet;

use super::{Compact, Dirty, InFlight, Ledger, Slot};
use crate::io::{BatchNo, LeaseWrite, PersistBatch};
use crate::model::{FrozenRequest, OperationPhase, RequestPhase};
use crate::operation_pages::{Home, PAGE_LIMIT};

impl Ledger {
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

    /// Whether anything waits to be written.
    pub fn has_changes(&self) -> bool {
        !self.dirty.is_empty()
    }

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
                        .get(id.as_str())
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
        let marked = batch
            .requests
            .iter()
            .filter(|r| r.phase != RequestPhase::Frozen)
            .map(|r| r.id.clone())
            .collect();
        self.in_flight = Some(InFlight {
            no,
            marked,
            dirty,
            plan,
            homes,
            folded,
            compacted: slice.tombstones,
            dropped_requests: slice.requests.into_iter().collect(),
        });
        batch
    }

    /// Up to a page of operations to fold from their own records into a page, once `fold_at`
    /// loose records have gathered: oldest first, each once, only those whose record is their
    /// current copy and that this batch does not write anyway (their memory is their record;
    /// a pointer set by `freeze` and not written yet is written with them, as any write does).
    pub(super) fn fold_candidates(&mut self, dirty: &Dirty) -> Vec<String> {
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
                self.marked.extend(batch.marked);
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
                                slot.stale_in.insert(old);
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
        for id in &requests {
            self.marked.remove(id);
        }
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
}
