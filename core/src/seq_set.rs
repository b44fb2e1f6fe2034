//! [`SeqSet`]: operations ordered by `(sequence, id)`, as the ready queue, the canvas waiters
//! and the upload lane take them. A `BTreeSet<(u64, String)>` with the calls
//! those places make, so each reads as the pair it means.

use std::collections::BTreeSet;

/// A set of `(sequence, id)` pairs, iterated by sequence, then id.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SeqSet(BTreeSet<(u64, String)>);

impl SeqSet {
    /// An empty set.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The number of pairs.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds a pair; false when it was already there.
    pub(crate) fn insert(&mut self, sequence: u64, id: &str) -> bool {
        self.0.insert((sequence, id.to_owned()))
    }

    /// Removes a pair; false when it was not there.
    pub(crate) fn remove(&mut self, sequence: u64, id: &str) -> bool {
        self.0.remove(&(sequence, id.to_owned()))
    }

    /// Whether a pair is in the set.
    pub(crate) fn contains(&self, sequence: u64, id: &str) -> bool {
        self.0.contains(&(sequence, id.to_owned()))
    }

    /// The lowest pair.
    pub(crate) fn first(&self) -> Option<(u64, &str)> {
        self.0
            .first()
            .map(|(sequence, id)| (*sequence, id.as_str()))
    }

    /// The lowest pair above `(sequence, id)`.
    pub(crate) fn after(&self, sequence: u64, id: &str) -> Option<(u64, &str)> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.0
            .range((Excluded((sequence, id.to_owned())), Unbounded))
            .next()
            .map(|(sequence, id)| (*sequence, id.as_str()))
    }

    /// Takes the lowest pair.
    pub(crate) fn pop_first(&mut self) -> Option<(u64, String)> {
        self.0.pop_first()
    }

    /// Removes every pair.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    /// The pairs in order.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &str)> + '_ {
        self.0.iter().map(|(sequence, id)| (*sequence, id.as_str()))
    }
}

impl FromIterator<(u64, String)> for SeqSet {
    fn from_iter<I: IntoIterator<Item = (u64, String)>>(pairs: I) -> Self {
        Self(pairs.into_iter().collect())
    }
}

impl Extend<(u64, String)> for SeqSet {
    fn extend<I: IntoIterator<Item = (u64, String)>>(&mut self, pairs: I) {
        self.0.extend(pairs);
    }
}

impl IntoIterator for SeqSet {
    type Item = (u64, String);
    type IntoIter = std::collections::btree_set::IntoIter<(u64, String)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}
