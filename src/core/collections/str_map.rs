//! [`StrMap`]: a string-keyed map ordered by key, whose index is the same type whatever the
//! value.
//!
//! Every `BTreeMap<String, V>` type brings its own copy of the tree code into the `.wasm`
//! (5–11 KB before gzip each; 26 KB gzipped with the core's value types, ARCHITECTURE.md).
//! A `StrMap<V>` keeps its keys in one `BTreeMap<String, u64>` (one copy of the tree code,
//! shared with every string-keyed index of the core) that points into a slab of values; only
//! the slab, a plain `Vec`, is per value type. Lookups cost one index search and one slot;
//! iteration is in key order, as a `BTreeMap<String, V>`'s.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

/// The index: std's map from key to slot.
type KeyIndex = BTreeMap<String, u64>;

/// A map from `String` to `V`, iterated in key order.
#[derive(Debug, Clone)]
pub struct StrMap<V> {
    index: KeyIndex,
    slots: Vec<Option<V>>,
    /// Slots emptied by `remove`, reused before the slab grows.
    free: Vec<u64>,
}

impl<V> Default for StrMap<V> {
    fn default() -> Self {
        StrMap {
            index: KeyIndex::new(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<V: PartialEq> PartialEq for StrMap<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl<V> StrMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Whether `key` has a value.
    pub fn contains_key(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&V> {
        let at = *self.index.get(key)?;
        self.slots.get(at as usize)?.as_ref()
    }

    /// The value of `key`, to change in place.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        let at = *self.index.get(key)?;
        self.slots.get_mut(at as usize)?.as_mut()
    }

    /// Sets `key` to `value`, returning the value it replaces.
    pub fn insert(&mut self, key: String, value: V) -> Option<V> {
        // Where a new value would go; taken only if the key is new.
        let next = self.free.last().copied().unwrap_or(self.slots.len() as u64);
        match self.index.entry(key) {
            Entry::Occupied(slot) => return self.slots[*slot.get() as usize].replace(value),
            Entry::Vacant(slot) => {
                slot.insert(next);
            }
        }
        let at = place(&mut self.slots, &mut self.free, value);
        debug_assert_eq!(at, next);
        None
    }

    /// The value of `key`, inserting `make()` first when there is none.
    pub fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> V) -> &mut V {
        let at = match self.index.get(key) {
            Some(&at) => at,
            None => {
                let at = place(&mut self.slots, &mut self.free, make());
                self.index.insert(key.to_owned(), at);
                at
            }
        };
        self.slots[at as usize]
            .as_mut()
            .expect("an indexed slot holds a value")
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let at = self.index.remove(key)?;
        self.free.push(at);
        self.slots[at as usize].take()
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.index.clear();
        self.slots.clear();
        self.free.clear();
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &V)> + '_ {
        self.index
            .iter()
            .filter_map(|(key, &at)| Some((key, self.slots.get(at as usize)?.as_ref()?)))
    }

    /// The values in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.iter().map(|(_, value)| value)
    }

    /// The values, to change them (in no particular order).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.slots.iter_mut().flatten()
    }

    /// The values in key order, taken out of the map.
    pub fn into_values(self) -> impl Iterator<Item = V> {
        let mut slots = self.slots;
        self.index
            .into_values()
            .filter_map(move |at| slots.get_mut(at as usize)?.take())
    }
}

/// Puts `value` in a free slot, or a new one, and returns where.
fn place<V>(slots: &mut Vec<Option<V>>, free: &mut Vec<u64>, value: V) -> u64 {
    match free.pop() {
        Some(at) => {
            slots[at as usize] = Some(value);
            at
        }
        None => {
            slots.push(Some(value));
            (slots.len() - 1) as u64
        }
    }
}

/// Written as a JSON object, like the `BTreeMap` it stands for.
impl<V: crate::core::json::ToJson> crate::core::json::ToJson for StrMap<V> {
    fn write_json(&self, writer: &mut crate::core::json::Writer) {
        writer.object();
        for (key, value) in self.iter() {
            writer.member(key, value);
        }
        writer.end_object();
    }
}

/// A map in key order: a plain object through `serde_wasm_bindgen` (`claims()`).
impl<V: serde::Serialize> serde::Serialize for StrMap<V> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<V> FromIterator<(String, V)> for StrMap<V> {
    /// Builds the index in one pass (a sort, linear for keys already in order, as a load's
    /// are) instead of a search per key. A key given twice keeps its last
    /// value, as with `BTreeMap`.
    fn from_iter<I: IntoIterator<Item = (String, V)>>(entries: I) -> Self {
        let entries = entries.into_iter();
        // Sized up front: a load's slots are large and 100 000 of them; growing by doubling
        // would copy them all several times.
        let mut slots = Vec::with_capacity(entries.size_hint().0);
        let keys: Vec<(String, u64)> = entries
            .map(|(key, value)| {
                slots.push(Some(value));
                (key, (slots.len() - 1) as u64)
            })
            .collect();
        let index: KeyIndex = keys.into_iter().collect();
        let mut map = StrMap {
            index,
            slots,
            free: Vec::new(),
        };
        if map.index.len() < map.slots.len() {
            // Repeated keys: the values they replaced are unreachable; free their slots.
            let mut used = vec![false; map.slots.len()];
            for &at in map.index.values() {
                used[at as usize] = true;
            }
            for (at, slot) in map.slots.iter_mut().enumerate() {
                if !used[at] {
                    *slot = None;
                    map.free.push(at as u64);
                }
            }
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_btree_map_under_inserts_and_removes() {
        let mut map = StrMap::new();
        let mut model = BTreeMap::new();
        // A fixed pseudo-random walk over a few keys: replaces, removes and slot reuse.
        let mut x: u64 = 7;
        for step in 0..2000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = format!("k{}", (x >> 33) % 23);
            match (x >> 20) % 4 {
                0 => assert_eq!(map.remove(&key), model.remove(&key), "step {step}"),
                1 => assert_eq!(map.get(&key), model.get(&key), "step {step}"),
                _ => assert_eq!(
                    map.insert(key.clone(), step),
                    model.insert(key, step),
                    "step {step}"
                ),
            }
            assert_eq!(map.len(), model.len());
            assert!(map.iter().eq(model.iter()), "order at step {step}");
        }
        assert!(map.slots.len() <= 23, "removed slots are reused");
    }

    #[test]
    fn collects_in_key_order_keeping_the_last_of_a_repeated_key() {
        let entries = [("b", 1), ("a", 2), ("b", 3), ("c", 4)];
        let map: StrMap<i32> = entries.iter().map(|&(k, v)| (k.to_owned(), v)).collect();
        let model: BTreeMap<String, i32> =
            entries.iter().map(|&(k, v)| (k.to_owned(), v)).collect();
        assert!(map.iter().eq(model.iter()));
        assert_eq!(map.free, [0], "the replaced value's slot is free");
        let mut map = map;
        map.insert("d".to_owned(), 5);
        assert_eq!(map.slots.len(), 4, "the free slot is reused");
        assert_eq!(map.get("d"), Some(&5));
    }

    #[test]
    fn get_or_insert_with_inserts_once_and_changes_in_place() {
        let mut map: StrMap<Vec<u8>> = StrMap::new();
        map.get_or_insert_with("a", Vec::new).push(1);
        map.get_or_insert_with("a", || vec![9]).push(2);
        assert_eq!(map.get("a"), Some(&vec![1, 2]));
        *map.get_mut("a").expect("present") = vec![3];
        assert_eq!(map.values().collect::<Vec<_>>(), [&vec![3]]);
        map.clear();
        assert!(map.is_empty() && map.get("a").is_none());
    }
}
