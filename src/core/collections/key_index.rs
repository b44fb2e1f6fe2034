//! [`KeyIndex`]: string keys in order, each with a `u64` — the one ordered map the core needs.
//!
//! Every ordered collection here ([`StrMap`]'s index, [`StrSet`], [`SeqSet`], retry tokens,
//! expected versions) maps a string to an integer. `std`'s `BTreeMap<String, u64>` did that
//! with about 15 KB of tree code in the `.wasm` (node balancing, merging, stealing, bulk
//! build). A `KeyIndex` keeps the pairs sorted in chunks of at most `SPLIT` entries: a
//! lookup is two binary searches (over the chunks' last keys, then in one chunk), an insert
//! or removal moves at most one chunk's entries (a few KB of memory), and a full chunk splits
//! in two before it would grow past `SPLIT` and merges into a neighbour when it shrinks
//! below a quarter. That is a B+ tree of height two: as fast as the std tree at the sizes a ledger
//! reaches (hundreds of thousands of keys), in a fraction of the code.
//!
//! [`StrMap`]: super::str_map::StrMap
//! [`StrSet`]: super::str_set::StrSet
//! [`SeqSet`]: super::seq_set::SeqSet

use crate::core::json::{FromJson, JsonError, Reader, ToJson, Writer};

/// Most entries a chunk holds; inserting into a full one splits it in halves.
const SPLIT: usize = 512;
/// Entries per chunk when built from a sorted sequence, leaving room to grow in place.
const FILL: usize = SPLIT / 2;
/// A chunk smaller than this merges with a neighbour when they fit in one.
const MERGE_BELOW: usize = SPLIT / 4;

/// The iterator of [`KeyIndex::keys`].
pub type Keys<'a> = std::iter::Map<Pairs<'a>, fn(&'a (String, u64)) -> &'a String>;

/// The pairs of a [`KeyIndex`] in order, walking its chunks. Its own iterator rather than
/// `Flatten`: every `find`, `filter` or `any` over a `Flatten` brings its own `try_fold`
/// into the `.wasm`; over this one they are plain loops on `next`.
#[derive(Clone, Debug)]
pub struct Pairs<'a> {
    chunks: &'a [Vec<(String, u64)>],
    /// Chunk and position of the next pair from the front.
    front: (usize, usize),
    /// Chunk and end position (exclusive) of the next pair from the back.
    back: (usize, usize),
    /// Pairs not yet yielded from either end.
    left: usize,
}

impl<'a> Iterator for Pairs<'a> {
    type Item = &'a (String, u64);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let (mut chunk, mut pos) = self.front;
        while pos >= self.chunks.get(chunk)?.len() {
            chunk += 1;
            pos = 0;
        }
        self.front = (chunk, pos + 1);
        self.left -= 1;
        self.chunks.get(chunk)?.get(pos)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for Pairs<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let (mut chunk, mut end) = self.back;
        while end == 0 {
            chunk = chunk.checked_sub(1)?;
            end = self.chunks.get(chunk)?.len();
        }
        self.back = (chunk, end - 1);
        self.left -= 1;
        self.chunks.get(chunk)?.get(end - 1)
    }
}

impl ExactSizeIterator for Pairs<'_> {}

/// The pairs of a [`KeyIndex`] taken out of it, in order.
#[derive(Debug)]
pub struct IntoPairs {
    chunks: std::vec::IntoIter<Vec<(String, u64)>>,
    current: std::vec::IntoIter<(String, u64)>,
}

impl Iterator for IntoPairs {
    type Item = (String, u64);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(pair) = self.current.next() {
                return Some(pair);
            }
            self.current = self.chunks.next()?.into_iter();
        }
    }
}

/// String keys in order, each with a `u64`.
#[derive(Clone, Default)]
pub struct KeyIndex {
    /// Sorted, non-empty chunks, each sorted, every key below the next chunk's first.
    chunks: Vec<Vec<(String, u64)>>,
    len: usize,
}

impl KeyIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunk holding `key` or where it would go, and its place in that chunk (`Err`: not
    /// there, insert at). No chunks: `(0, Err(0))`.
    fn locate(&self, key: &str) -> (usize, Result<usize, usize>) {
        let at = self
            .chunks
            .partition_point(|chunk| chunk.last().is_some_and(|(last, _)| last.as_str() < key));
        let at = at.min(self.chunks.len().saturating_sub(1));
        match self.chunks.get(at) {
            Some(chunk) => (at, chunk.binary_search_by(|(k, _)| k.as_str().cmp(key))),
            None => (0, Err(0)),
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&u64> {
        match self.locate(key) {
            (at, Ok(pos)) => self.chunks.get(at)?.get(pos).map(|(_, value)| value),
            _ => None,
        }
    }

    /// Whether `key` is there.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `value`, returning the value it replaces.
    pub fn insert(&mut self, key: String, value: u64) -> Option<u64> {
        match self.locate(&key) {
            (at, Ok(pos)) => Some(std::mem::replace(&mut self.chunks[at][pos].1, value)),
            (at, Err(pos)) => {
                self.insert_at(at, pos, key, value);
                None
            }
        }
    }

    /// Adds `key` with `value` unless it is there; returns its value when it was (and then
    /// changes nothing).
    pub fn insert_if_absent(&mut self, key: String, value: u64) -> Option<u64> {
        match self.locate(&key) {
            (at, Ok(pos)) => Some(self.chunks[at][pos].1),
            (at, Err(pos)) => {
                self.insert_at(at, pos, key, value);
                None
            }
        }
    }

    /// Inserts at `pos` of chunk `at`, splitting a full chunk in halves first: a chunk's
    /// buffer never grows past `SPLIT` entries (it would double to twice that).
    fn insert_at(&mut self, mut at: usize, mut pos: usize, key: String, value: u64) {
        if self.chunks.is_empty() {
            self.chunks.push(Vec::new());
        }
        let chunk = &mut self.chunks[at];
        if chunk.len() >= SPLIT {
            let mid = chunk.len() / 2;
            let upper = chunk.split_off(mid);
            self.chunks.insert(at + 1, upper);
            if pos > mid {
                at += 1;
                pos -= mid;
            }
        }
        self.chunks[at].insert(pos, (key, value));
        self.len += 1;
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<u64> {
        let (at, Ok(pos)) = self.locate(key) else {
            return None;
        };
        let (_, value) = self.chunks[at].remove(pos);
        self.shrunk(at);
        Some(value)
    }

    /// The first key and its value.
    pub fn first_key_value(&self) -> Option<(&String, &u64)> {
        let (key, value) = self.chunks.first()?.first()?;
        Some((key, value))
    }

    /// Takes the first key and its value.
    pub fn pop_first(&mut self) -> Option<(String, u64)> {
        let chunk = self.chunks.first_mut()?;
        let first = (!chunk.is_empty()).then(|| chunk.remove(0))?;
        self.shrunk(0);
        Some(first)
    }

    /// After a removal from chunk `at`: drops it when empty, merges it with a neighbour when
    /// small and they fit together.
    fn shrunk(&mut self, at: usize) {
        self.len -= 1;
        let size = self.chunks[at].len();
        if size == 0 {
            self.chunks.remove(at);
            return;
        }
        if size >= MERGE_BELOW {
            return;
        }
        let fits = |other: Option<&Vec<(String, u64)>>| {
            other.is_some_and(|other| other.len() + size <= SPLIT)
        };
        if fits(self.chunks.get(at + 1)) {
            let next = self.chunks.remove(at + 1);
            self.chunks[at].extend(next);
        } else if at > 0 && fits(self.chunks.get(at - 1)) {
            let this = self.chunks.remove(at);
            self.chunks[at - 1].extend(this);
        }
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.len = 0;
    }

    /// The keys and values in key order.
    pub fn iter(&self) -> <&KeyIndex as IntoIterator>::IntoIter {
        self.into_iter()
    }

    /// The keys in order.
    pub fn keys(&self) -> Keys<'_> {
        self.pairs().map(|(key, _)| key)
    }

    /// The pairs in key order.
    pub fn pairs(&self) -> Pairs<'_> {
        Pairs {
            chunks: &self.chunks,
            front: (0, 0),
            back: (self.chunks.len(), 0),
            left: self.len,
        }
    }

    /// The values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &u64> + '_ {
        self.pairs().map(|(_, value)| value)
    }

    /// Appends a key at or after the last one (`from_iter` feeds it sorted keys): an equal key
    /// takes the new value, as a later duplicate does in a `BTreeMap`'s `collect`.
    fn push_sorted(&mut self, key: String, value: u64) {
        if let Some(last) = self.chunks.last_mut().and_then(|chunk| chunk.last_mut()) {
            if last.0 == key {
                last.1 = value;
                return;
            }
        }
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < FILL => chunk.push((key, value)),
            _ => {
                let mut chunk = Vec::with_capacity(FILL);
                chunk.push((key, value));
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }
}

/// Equal when they hold the same pairs, however chunked.
impl PartialEq for KeyIndex {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Eq for KeyIndex {}

impl std::fmt::Debug for KeyIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl KeyIndex {
    /// Builds the index from pairs in any order; what every `collect()` into a `KeyIndex`
    /// comes down to, so the sort and the build are in the `.wasm` once, not once per
    /// iterator type collected from (ten of them, inlined where each load step collects).
    #[inline(never)]
    fn from_pairs(mut pairs: Vec<(String, u64)>) -> Self {
        // Stable: equal keys stay in arrival order, so the last one is pushed last. Keys that
        // arrive in order (a load's, by key) skip the sort and its scratch memory.
        if !pairs.windows(2).all(|pair| pair[0].0 <= pair[1].0) {
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
        }
        let mut index = Self::new();
        for (key, value) in pairs {
            index.push_sorted(key, value);
        }
        index
    }
}

/// Built in one pass after a sort if the keys are not in order already (a later duplicate
/// key wins, as in `BTreeMap`'s).
impl FromIterator<(String, u64)> for KeyIndex {
    fn from_iter<I: IntoIterator<Item = (String, u64)>>(pairs: I) -> Self {
        Self::from_pairs(pairs.into_iter().collect())
    }
}

impl<const N: usize> From<[(String, u64); N]> for KeyIndex {
    fn from(pairs: [(String, u64); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl IntoIterator for KeyIndex {
    type Item = (String, u64);
    type IntoIter = IntoPairs;

    fn into_iter(self) -> Self::IntoIter {
        IntoPairs {
            chunks: self.chunks.into_iter(),
            current: Vec::new().into_iter(),
        }
    }
}

impl<'a> IntoIterator for &'a KeyIndex {
    type Item = (&'a String, &'a u64);
    type IntoIter = std::iter::Map<Pairs<'a>, fn(&'a (String, u64)) -> (&'a String, &'a u64)>;

    fn into_iter(self) -> Self::IntoIter {
        self.pairs().map(|(key, value)| (key, value))
    }
}

/// A JSON object of integers, members in key order.
impl ToJson for KeyIndex {
    fn write_json(&self, writer: &mut Writer) {
        writer.object();
        for (key, value) in self.iter() {
            writer.member(key, value);
        }
        writer.end_object();
    }

    fn absent(&self) -> bool {
        self.is_empty()
    }
}

/// A later duplicate member replaces an earlier one, as serde_json's map did.
impl FromJson for KeyIndex {
    fn read_json(reader: &mut Reader<'_>) -> Result<Self, JsonError> {
        reader.object()?;
        let mut index = Self::new();
        while let Some(key) = reader.key()? {
            let value = u64::read_json(reader)?;
            index.insert(key.into_owned(), value);
        }
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn check(index: &KeyIndex, model: &BTreeMap<String, u64>) {
        assert_eq!(index.len(), model.len());
        assert!(
            index.iter().eq(model.iter()),
            "same pairs in the same order"
        );
        assert!(index.iter().rev().eq(model.iter().rev()));
        // Both ends at once, as a double-ended iterator may be used.
        let (mut ours, mut theirs) = (index.iter(), model.iter());
        for step in 0..model.len() + 2 {
            assert_eq!(ours.len(), theirs.len());
            if step % 3 == 0 {
                assert_eq!(ours.next_back(), theirs.next_back());
            } else {
                assert_eq!(ours.next(), theirs.next());
            }
        }
        assert!(index.clone().into_iter().eq(model.clone().into_iter()));
        assert_eq!(index.first_key_value(), model.first_key_value());
        for chunk in &index.chunks {
            assert!(
                !chunk.is_empty() && chunk.len() <= SPLIT,
                "chunk of {}",
                chunk.len()
            );
        }
    }

    /// Random inserts, replacements, removals and pops against a `BTreeMap`, through enough
    /// keys to split and merge chunks many times.
    #[test]
    fn behaves_as_a_btree_map() {
        let mut rng = crate::testing::SimRng::new(0x853c_49e6_748f_ea9b);
        let mut next = move || rng.next_u64();
        let mut index = KeyIndex::new();
        let mut model = BTreeMap::new();
        for round in 0..40_000u64 {
            // Keys from a range that grows then shrinks, so the index fills and empties.
            let span = if round < 20_000 { 5_000 } else { 300 };
            let key = format!("k{:05}", next() % span);
            match next() % 8 {
                0..=3 => assert_eq!(
                    index.insert(key.clone(), round),
                    model.insert(key.clone(), round)
                ),
                4 => {
                    let expected = model.get(&key).copied();
                    assert_eq!(index.insert_if_absent(key.clone(), round), expected);
                    model.entry(key.clone()).or_insert(round);
                }
                5 | 6 => assert_eq!(index.remove(&key), model.remove(&key)),
                _ => assert_eq!(index.pop_first(), model.pop_first()),
            }
            assert_eq!(index.get(&key), model.get(&key));
            assert_eq!(index.contains_key(&key), model.contains_key(&key));
            if round % 997 == 0 {
                check(&index, &model);
            }
        }
        check(&index, &model);
        while index.pop_first().is_some() {}
        assert!(index.is_empty() && index.chunks.is_empty());
    }

    #[test]
    fn collects_sorted_with_the_last_duplicate_winning() {
        let pairs: Vec<(String, u64)> = (0..3_000u64)
            .map(|i| (format!("{:04}", (i * 7919) % 2_000), i))
            .collect();
        let index: KeyIndex = pairs.iter().cloned().collect();
        let model: BTreeMap<String, u64> = pairs.into_iter().collect();
        check(&index, &model);
        assert!(index.clone().into_iter().eq(model.into_iter()));
        let small = KeyIndex::from([("b".to_owned(), 2), ("a".to_owned(), 1)]);
        assert_eq!(small.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(small.values().copied().collect::<Vec<_>>(), [1, 2]);
        assert_eq!(format!("{small:?}"), r#"{"a": 1, "b": 2}"#);
    }

    #[test]
    fn equality_ignores_chunking() {
        let built: KeyIndex = (0..2_000u64).map(|i| (format!("{i:05}"), i)).collect();
        let mut grown = KeyIndex::new();
        for i in (0..2_000u64).rev() {
            grown.insert(format!("{i:05}"), i);
        }
        assert_ne!(
            built.chunks.len(),
            grown.chunks.len(),
            "chunked differently"
        );
        assert_eq!(built, grown);
        grown.insert("00000".to_owned(), 9);
        assert_ne!(built, grown);
    }

    #[test]
    fn reads_and_writes_json_objects_of_integers() {
        let index: KeyIndex = crate::core::json::from_str(r#"{"b":2,"a":1,"b":3}"#).expect("read");
        assert_eq!(
            index,
            KeyIndex::from([("a".to_owned(), 1), ("b".to_owned(), 3)])
        );
        assert_eq!(crate::core::json::to_string(&index), r#"{"a":1,"b":3}"#);
        assert!(crate::core::json::from_str::<KeyIndex>(r#"{"a":-1}"#).is_err());
    }
}
