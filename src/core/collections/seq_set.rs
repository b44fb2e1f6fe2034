//! [`SeqSet`]: operations ordered by `(sequence, id)`, on the [`KeyIndex`] every ordered
//! collection of the core shares.
//!
//! A `BTreeSet<(u64, String)>` is one more copy of the B-tree code in the `.wasm` (about 8 KB
//! before gzip). A `SeqSet` keys the [`KeyIndex`] that [`StrMap`] and [`StrSet`] use by the
//! sequence in sixteen hex digits followed by the id: byte order of such keys is the order of
//! the pairs (fixed width, most significant digit first), so the set
//! pops, iterates and compares exactly as the tuple set did. The value is the sequence, so
//! reading it back parses nothing.
//!
//! [`StrMap`]: super::str_map::StrMap
//! [`StrSet`]: super::str_set::StrSet

use super::key_index::KeyIndex;

/// Hex digits of the sequence at the start of a key.
const WIDTH: usize = 16;

/// A set of `(sequence, id)` pairs, iterated by sequence, then id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeqSet(KeyIndex);

/// The key of a pair: the sequence in fixed-width hex, then the id.
fn key(sequence: u64, id: &str) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut key = String::with_capacity(WIDTH + id.len());
    for shift in (0..WIDTH).rev() {
        key.push(char::from(
            DIGITS[((sequence >> (shift * 4)) & 0xf) as usize],
        ));
    }
    key.push_str(id);
    key
}

/// The id of a key (its digits are ASCII, so `WIDTH` is a char boundary).
fn id_of(key: &str) -> &str {
    key.get(WIDTH..).unwrap_or_default()
}

/// A key taken out of the set back into its pair.
fn into_pair(mut key: String, sequence: u64) -> (u64, String) {
    key.replace_range(..WIDTH.min(key.len()), "");
    (sequence, key)
}

impl SeqSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds a pair; false when it was already there. O(log n).
    pub fn insert(&mut self, sequence: u64, id: &str) -> bool {
        self.0
            .insert_if_absent(key(sequence, id), sequence)
            .is_none()
    }

    /// Removes a pair; false when it was not there.
    pub fn remove(&mut self, sequence: u64, id: &str) -> bool {
        self.0.remove(&key(sequence, id)).is_some()
    }

    /// Whether a pair is in the set.
    pub fn contains(&self, sequence: u64, id: &str) -> bool {
        self.0.contains_key(&key(sequence, id))
    }

    /// The lowest pair.
    pub fn first(&self) -> Option<(u64, &str)> {
        self.0
            .first_key_value()
            .map(|(key, &sequence)| (sequence, id_of(key)))
    }

    /// Takes the lowest pair.
    pub fn pop_first(&mut self) -> Option<(u64, String)> {
        self.0
            .pop_first()
            .map(|(key, sequence)| into_pair(key, sequence))
    }

    /// Removes every pair.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// The pairs in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &str)> + '_ {
        self.0.iter().map(|(key, &sequence)| (sequence, id_of(key)))
    }
}

/// Built in one pass (a sort and a bulk build), as `BTreeSet`'s `collect` is.
impl FromIterator<(u64, String)> for SeqSet {
    fn from_iter<I: IntoIterator<Item = (u64, String)>>(pairs: I) -> Self {
        Self(
            pairs
                .into_iter()
                .map(|(sequence, id)| (key(sequence, &id), sequence))
                .collect(),
        )
    }
}

impl Extend<(u64, String)> for SeqSet {
    fn extend<I: IntoIterator<Item = (u64, String)>>(&mut self, pairs: I) {
        for (sequence, id) in pairs {
            self.insert(sequence, &id);
        }
    }
}

impl IntoIterator for SeqSet {
    type Item = (u64, String);
    type IntoIter =
        std::iter::Map<<KeyIndex as IntoIterator>::IntoIter, fn((String, u64)) -> (u64, String)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0
            .into_iter()
            .map((|(key, sequence)| into_pair(key, sequence)) as fn(_) -> _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn orders_and_holds_pairs_as_the_tuple_set_does() {
        // Pseudo-random pairs, ids of varied lengths sharing prefixes, sequences across the
        // whole range a ledger uses (below 2^53) and the widths of their hex forms.
        let mut rng = crate::testing::SimRng::new(0x9e37_79b9_7f4a_7c15);
        let mut next = || rng.next_u64();
        let mut model = BTreeSet::new();
        let mut set = SeqSet::new();
        for _ in 0..2_000 {
            let sequence = match next() % 4 {
                0 => next() % 20,
                1 => next() % (1 << 53),
                2 => (1 << (next() % 53)) - 1,
                _ => next() % 300,
            };
            let id: String = (0..next() % 5)
                .map(|i| ["a", "ab", "b", "é"][(i + next() % 4) as usize % 4])
                .collect();
            match next() % 3 {
                0 => assert_eq!(
                    set.remove(sequence, &id),
                    model.remove(&(sequence, id.clone()))
                ),
                _ => assert_eq!(
                    set.insert(sequence, &id),
                    model.insert((sequence, id.clone()))
                ),
            }
            assert_eq!(
                set.contains(sequence, &id),
                model.contains(&(sequence, id.clone()))
            );
            assert_eq!(set.len(), model.len());
            assert_eq!(set.first(), model.first().map(|(s, i)| (*s, i.as_str())));
        }
        let pairs: Vec<(u64, &str)> = set.iter().collect();
        let expected: Vec<(u64, &str)> = model.iter().map(|(s, i)| (*s, i.as_str())).collect();
        assert_eq!(pairs, expected);
        let rebuilt: SeqSet = model.iter().cloned().collect();
        assert_eq!(rebuilt, set, "collect builds the same set");
        let mut popped = Vec::new();
        while let Some(pair) = set.pop_first() {
            popped.push(pair);
        }
        assert_eq!(popped, model.iter().cloned().collect::<Vec<_>>());
        assert!(set.is_empty());
        assert_eq!(
            rebuilt.into_iter().collect::<Vec<_>>(),
            model.into_iter().collect::<Vec<_>>()
        );
    }

    #[test]
    fn extend_and_clear() {
        let mut set = SeqSet::new();
        set.extend([
            (2, "b".to_owned()),
            (1, "z".to_owned()),
            (2, "b".to_owned()),
        ]);
        assert_eq!(set.iter().collect::<Vec<_>>(), [(1, "z"), (2, "b")]);
        assert_eq!(set.iter().next_back(), Some((2, "b")));
        set.clear();
        assert!(set.is_empty() && set.first().is_none());
    }
}
