//! Operation pages: the operations a persist batch writes for the first time go to storage
//! together, as one record (a page, keyed by a number that only grows), instead of one record
//! each. Reading 100 000 pending operations back then costs a few hundred records instead of
//! 100 000 — per-record cost, not bytes, is what bounds a load in IndexedDB.
//!
//! A page is written once and never changed. A later change of one of its operations is
//! written as that operation's own record in `operations`, which supersedes the page's copy;
//! the batch that supersedes a page's last current copy also deletes the page. So every
//! operation has exactly one current durable copy: its record if it has one, else its copy
//! in the newest page holding it ([`current_copies`]).
//!
//! A batch with a single new operation writes it as a record instead (`Ledger::take_batch`):
//! for one operation a page only adds cost. Records gathered that way (one enqueue per turn,
//! as a stream of edits produces) and by later writes are folded back into pages: once
//! `fold_records_at` (a page's worth) have gathered and the scheduler is quiet (nothing to
//! write, nothing in flight, nothing to dispatch), a batch of its own puts up to a page of
//! them, unchanged since written, into a new page and deletes their records in the same
//! transaction (`Ledger::fold_candidates`). About 25 ms of IndexedDB work per 256 (the
//! deletes), once per 256 records; a load then reads pages, not one record each.
//!
use std::collections::{BTreeMap, BTreeSet};

use super::model::Operation;

/// Most operations in one page (a bigger batch writes several pages).
pub const PAGE_LIMIT: usize = 256;

/// Where an operation's current durable copy is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// Nowhere yet: the next batch writes it into a new page.
    Unwritten,
    /// In this page.
    Page(u64),
    /// In its own record.
    Record,
}

/// A page as written: its number and its operations (new ones in id order, then folded ones).
#[derive(Clone, Debug, PartialEq)]
pub struct OperationPage {
    /// The page's key; above every page written before.
    pub no: u64,
    /// The operations, at least one.
    pub operations: Vec<Operation>,
}

/// What one batch does to the pages, applied when the batch is durable.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PagePlan {
    /// New pages: number and how many operations.
    pub written: Vec<(u64, usize)>,
    /// Pages whose copies the batch supersedes, one entry per superseded copy.
    pub superseded: Vec<u64>,
    /// Pages the batch deletes (no current copy left).
    pub dropped: Vec<u64>,
}

/// Each stored page, by page number, with the ids whose current copy it holds.
pub type PageHomes = BTreeMap<u64, Vec<String>>;

/// Older copies still stored: an operation id and a page holding a superseded copy of it.
pub type StaleCopies = Vec<(String, u64)>;

/// The ids current in page `no`, if it is listed.
pub fn homes_of(homes: &PageHomes, no: u64) -> Option<&Vec<String>> {
    homes.get(&no)
}

/// The stored pages and how many current copies each still holds, by page number.
#[derive(Clone, Debug, Default)]
pub struct PageBook {
    current: BTreeMap<u64, usize>,
    /// The ids each stored page was written (or loaded) with, by page number: a superset of
    /// those whose current copy it still holds, so a slice that deletes a page finds the
    /// copies to write again among its own ids, not by a scan of every operation.
    members: PageHomes,
    next: u64,
}

impl PageBook {
    /// The book of a loaded ledger: each stored page with the ids current in it. Pages
    /// holding none are returned, to be deleted by the next batch.
    pub fn from_loaded(pages: PageHomes) -> (Self, BTreeSet<u64>) {
        let mut book = Self {
            next: pages.last_key_value().map_or(1, |(no, _)| no + 1),
            ..Self::default()
        };
        let mut empty = BTreeSet::new();
        for (no, ids) in pages {
            if ids.is_empty() {
                empty.insert(no);
            } else {
                book.current.insert(no, ids.len());
                book.members.insert(no, ids);
            }
        }
        (book, empty)
    }

    /// Splits `fresh` (operations never written, in id order, then those folded from records)
    /// into new pages, and works out
    /// which pages lose their last current copy when the copies in `superseded` (one page
    /// number per operation now written as its own record) and the pages in `stale` go.
    pub fn plan(
        &mut self,
        fresh: Vec<Operation>,
        superseded: Vec<u64>,
        stale: &BTreeSet<u64>,
    ) -> (Vec<OperationPage>, PagePlan) {
        let mut pages = Vec::new();
        let mut plan = PagePlan::default();
        let mut fresh = fresh.into_iter().peekable();
        while fresh.peek().is_some() {
            let operations: Vec<Operation> = fresh.by_ref().take(PAGE_LIMIT).collect();
            // Numbers are never reused, even when the batch fails: a page written by a batch
            // whose answer was lost must never be overwritten by a different page.
            let no = self.next;
            self.next += 1;
            plan.written.push((no, operations.len()));
            pages.push(OperationPage { no, operations });
        }
        // Copies each touched page loses.
        let mut losses: BTreeMap<u64, usize> = BTreeMap::new();
        for no in &superseded {
            *losses.entry(*no).or_default() += 1;
        }
        let mut dropped = stale.clone();
        for (no, lost) in losses {
            if self.current_in(no) <= lost {
                dropped.insert(no);
            }
        }
        plan.dropped = dropped.into_iter().collect();
        plan.superseded = superseded;
        (pages, plan)
    }

    /// The batch carrying `plan` is durable.
    pub fn confirm(&mut self, plan: &PagePlan) {
        self.current.extend(plan.written.iter().copied());
        for no in &plan.superseded {
            if let Some(left) = self.current.get_mut(no) {
                *left = left.saturating_sub(1);
            }
        }
        for no in &plan.dropped {
            self.current.remove(no);
            self.members.remove(no);
        }
    }

    /// `id` was written into page `no` by the batch just confirmed.
    pub fn note_member(&mut self, no: u64, id: String) {
        self.members.entry(no).or_default().push(id);
    }

    /// The ids page `no` was written with (none when it is not stored); the current copies it
    /// holds are those among them whose home is still this page.
    pub fn members_of(&self, no: u64) -> &[String] {
        self.members.get(&no).map_or(&[], |ids| ids.as_slice())
    }

    /// How many current copies page `no` holds (0 when it is not stored).
    pub fn current_in(&self, no: u64) -> usize {
        self.current.get(&no).copied().unwrap_or(0)
    }

    /// Whether page `no` is stored.
    pub fn holds(&self, no: u64) -> bool {
        self.current.contains_key(&no)
    }

    /// Stored pages and their current copies, in page order.
    pub fn pages(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        self.current.iter().map(|(&no, &left)| (no, left))
    }
}

/// The current copy of every operation, given the pages (in page order) and which ids have
/// their own record: a record supersedes every page copy, a newer page an older one.
/// Returns the current page copies in id order, for every page the ids current in it
/// (possibly none), and every stale copy (an id and the page holding an older copy of it):
/// compaction must delete those pages too, or the older copy would be current again.
pub fn current_copies(
    pages: Vec<(u64, Vec<Operation>)>,
    is_record: impl Fn(&str) -> bool,
) -> (Vec<Operation>, PageHomes, StaleCopies) {
    let mut homes: PageHomes = pages.iter().map(|(no, _)| (*no, Vec::new())).collect();
    // (id, page, place in page) of every page copy no record supersedes, sorted by id. The
    // sort is stable and pages come in order, so the last copy of an id is its newest.
    // Borrowed ids and positions, not the operations: they are large and a load has 100 000
    // of them. A sort, not a map: pages hold runs of ordered ids, which the sort takes in
    // linear time where a tree searches once per copy.
    let total = pages.iter().map(|(_, ops)| ops.len()).sum();
    let mut copies: Vec<(&str, usize, usize)> = Vec::with_capacity(total);
    let mut stale: StaleCopies = Vec::new();
    for (page, (no, ops)) in pages.iter().enumerate() {
        for (place, op) in ops.iter().enumerate() {
            if is_record(&op.intent.id) {
                stale.push((op.intent.id.clone(), *no));
            } else {
                copies.push((&op.intent.id, page, place));
            }
        }
    }
    copies.sort_by(|a, b| a.0.cmp(b.0));
    for (at, copy) in copies.iter().enumerate() {
        if copies.get(at + 1).is_some_and(|next| next.0 == copy.0) {
            if let Some((no, _)) = pages.get(copy.1) {
                stale.push((copy.0.to_owned(), *no));
            }
        }
    }
    let order: Vec<(usize, usize)> = copies
        .iter()
        .enumerate()
        .filter(|(at, copy)| copies.get(at + 1).is_none_or(|next| next.0 != copy.0))
        .map(|(_, &(_, page, place))| (page, place))
        .collect();
    let mut pages: Vec<(u64, Vec<Option<Operation>>)> = pages
        .into_iter()
        .map(|(no, ops)| (no, ops.into_iter().map(Some).collect()))
        .collect();
    let mut current: Vec<Operation> = Vec::with_capacity(order.len());
    for (page, place) in order {
        let Some((_, ops)) = pages.get_mut(page) else {
            continue;
        };
        let Some(op) = ops.get_mut(place).and_then(Option::take) else {
            continue;
        };
        if let Some(ids) = pages.get(page).and_then(|(no, _)| homes.get_mut(no)) {
            ids.push(op.intent.id.clone());
        }
        current.push(op);
    }
    (current, homes, stale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(id: &str, sequence: u64) -> Operation {
        crate::test_support::pending_upsert(id, sequence, "c")
    }

    #[test]
    fn a_batch_is_cut_into_pages_of_at_most_the_limit() {
        let mut book = PageBook::default();
        let fresh: Vec<Operation> = (1..=PAGE_LIMIT as u64 + 1)
            .map(|i| op(&format!("o{i:04}"), i))
            .collect();
        let (pages, plan) = book.plan(fresh, Vec::new(), &BTreeSet::new());
        assert_eq!(pages.len(), 2);
        assert_eq!(pages[0].operations.len(), PAGE_LIMIT);
        assert_eq!(pages[1].operations.len(), 1);
        assert!(pages[0].no < pages[1].no);
        assert_eq!(
            plan.written,
            vec![(pages[0].no, PAGE_LIMIT), (pages[1].no, 1)]
        );
        assert!(plan.dropped.is_empty());
    }

    #[test]
    fn a_page_is_dropped_with_its_last_current_copy_and_not_before() {
        let mut book = PageBook::default();
        let (pages, plan) = book.plan(vec![op("a", 1), op("b", 2)], Vec::new(), &BTreeSet::new());
        book.confirm(&plan);
        let no = pages[0].no;
        let (_, first) = book.plan(Vec::new(), vec![no], &BTreeSet::new());
        assert!(first.dropped.is_empty(), "one copy is still current");
        book.confirm(&first);
        let (_, second) = book.plan(Vec::new(), vec![no], &BTreeSet::new());
        assert_eq!(second.dropped, vec![no]);
        book.confirm(&second);
        assert_eq!(book.pages().count(), 0);
    }

    #[test]
    fn a_page_knows_its_ids_from_its_write_or_its_load_until_it_is_dropped() {
        let (mut book, empty) = PageBook::from_loaded(PageHomes::from([
            (2, vec!["x".to_owned()]),
            (3, Vec::new()),
        ]));
        assert_eq!(empty, BTreeSet::from([3]));
        assert_eq!(book.members_of(2), ["x".to_owned()]);
        assert!(book.members_of(3).is_empty());
        let (pages, plan) = book.plan(vec![op("a", 1), op("b", 2)], Vec::new(), &BTreeSet::new());
        let no = pages[0].no;
        book.confirm(&plan);
        book.note_member(no, "a".to_owned());
        book.note_member(no, "b".to_owned());
        assert_eq!(book.members_of(no), ["a".to_owned(), "b".to_owned()]);
        let (_, drop) = book.plan(Vec::new(), vec![no, no, 2], &BTreeSet::new());
        book.confirm(&drop);
        assert!(book.members_of(no).is_empty() && book.members_of(2).is_empty());
    }

    #[test]
    fn an_unconfirmed_plan_changes_no_count_and_no_number_is_reused() {
        let mut book = PageBook::default();
        let (first, plan) = book.plan(vec![op("a", 1)], Vec::new(), &BTreeSet::new());
        book.confirm(&plan);
        let (_, failed) = book.plan(vec![op("b", 2)], vec![first[0].no], &BTreeSet::new());
        assert_eq!(failed.dropped, vec![first[0].no]);
        // The batch failed: nothing confirmed, the next plan starts from the same counts.
        let (again, retry) = book.plan(vec![op("b", 2)], vec![first[0].no], &BTreeSet::new());
        assert_eq!(retry.dropped, vec![first[0].no]);
        assert!(again[0].no > failed.written[0].0);
    }

    #[test]
    fn records_supersede_pages_and_newer_pages_older_ones() {
        let pages = vec![
            (3, vec![op("a", 1), op("b", 2)]),
            (7, vec![op("b", 2), op("c", 3)]),
            (9, vec![op("d", 4)]),
        ];
        let records = std::collections::BTreeSet::from(["c".to_owned(), "d".to_owned()]);
        let (current, homes, stale) = current_copies(pages, |id| records.contains(id));
        assert_eq!(
            stale,
            vec![
                ("c".to_owned(), 7),
                ("d".to_owned(), 9),
                ("b".to_owned(), 3)
            ],
            "c and d have records, b a newer page copy"
        );
        let located: Vec<&str> = current.iter().map(|op| op.intent.id.as_str()).collect();
        assert_eq!(located, vec!["a", "b"]);
        assert_eq!(homes_of(&homes, 3), Some(&vec!["a".to_owned()]));
        assert_eq!(homes_of(&homes, 7), Some(&vec!["b".to_owned()]));
        assert_eq!(homes_of(&homes, 9), Some(&Vec::new()), "nothing current");
        let (book, empty) = PageBook::from_loaded(homes);
        assert_eq!(empty, BTreeSet::from([9]));
        assert_eq!(book.pages().collect::<Vec<_>>(), vec![(3, 1), (7, 1)]);
    }
}
