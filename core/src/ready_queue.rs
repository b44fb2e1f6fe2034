//! The ready queue: operations that may be examined, taken in `sequence` order.

use crate::seq_set::SeqSet;

/// Ready operations keyed by `(sequence, id)`; inserting twice is harmless.
#[derive(Debug, Default)]
pub(crate) struct ReadyQueue {
    entries: SeqSet,
}

impl ReadyQueue {
    /// Adds an operation; O(log n).
    pub(crate) fn push(&mut self, sequence: u64, id: &str) {
        self.entries.insert(sequence, id);
    }

    /// Replaces the whole queue with `entries`, built in one pass (a sort and a bulk build,
    /// where pushing each searched the tree once).
    pub(crate) fn replace_all(&mut self, entries: Vec<(u64, String)>) {
        self.entries = entries.into_iter().collect();
    }

    /// Takes the operation with the lowest sequence; O(log n).
    pub(crate) fn pop(&mut self) -> Option<(u64, String)> {
        self.entries.pop_first()
    }

    /// The operation after `(sequence, id)` in sequence order (`None` for `id`: the first).
    pub(crate) fn after(&self, cursor: Option<(u64, &str)>) -> Option<(u64, &str)> {
        match cursor {
            None => self.entries.first(),
            Some((sequence, id)) => self.entries.after(sequence, id),
        }
    }

    /// Queued operations in sequence order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &str)> + '_ {
        self.entries.iter()
    }

    /// Removes an operation if queued.
    pub(crate) fn remove(&mut self, sequence: u64, id: &str) -> bool {
        self.entries.remove(sequence, id)
    }

    /// Number of queued operations.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Drops everything (used when the scheduler stops).
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s1_pops_in_sequence_order_and_dedupes() {
        let mut queue = ReadyQueue::default();
        queue.push(3, "c");
        queue.push(1, "a");
        queue.push(2, "b");
        queue.push(1, "a");
        assert_eq!(queue.len(), 3);
        assert_eq!(queue.pop(), Some((1, "a".into())));
        assert!(queue.remove(3, "c"));
        assert_eq!(queue.pop(), Some((2, "b".into())));
        assert!(queue.pop().is_none());
    }
}
