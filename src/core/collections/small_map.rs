//! [`SmallMap`]: a map kept as a vector sorted by key, for maps of a handful of entries.
//!
//! Every `BTreeMap<K, V>` type brings its own copy of the tree code into the `.wasm` (about
//! 5–9 KB before gzip each); this is a binary search over a `Vec` and costs a fraction of
//! that. Inserting is linear in the length, so it is for maps that stay small (waiting
//! answers, live attempts, holds) or are filled in key order (ids from a counter).

use std::borrow::Borrow;

/// Entries sorted by key, no key twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmallMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        SmallMap {
            entries: Vec::new(),
        }
    }
}

impl<K: Ord, V> SmallMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn find<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// Sets `key` to `value`, returning the value it replaces.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(at) => Some(std::mem::replace(&mut self.entries[at].1, value)),
            Err(at) => {
                self.entries.insert(at, (key, value));
                None
            }
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove<Q: Ord + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let at = self.find(key).ok()?;
        Some(self.entries.remove(at).1)
    }

    /// The value of `key`.
    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        let at = self.find(key).ok()?;
        Some(&self.entries[at].1)
    }

    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values in key order, to change in place.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<K, V> IntoIterator for SmallMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::SmallMap;

    #[test]
    fn keeps_entries_sorted_and_unique() {
        let mut map = SmallMap::new();
        assert_eq!(map.insert(5, "e"), None);
        assert_eq!(map.insert(1, "a"), None);
        assert_eq!(map.insert(3, "c"), None);
        assert_eq!(map.insert(3, "C"), Some("c"));
        assert_eq!(map.keys().copied().collect::<Vec<_>>(), vec![1, 3, 5]);
        assert_eq!(map.get(&3), Some(&"C"));
        assert_eq!(map.get(&4), None);
        assert_eq!(map.remove(&1), Some("a"));
        assert_eq!(map.remove(&1), None);
        assert_eq!(map.len(), 2);
        for value in map.values_mut() {
            *value = "x";
        }
        assert_eq!(
            map.into_iter().collect::<Vec<_>>(),
            vec![(3, "x"), (5, "x")]
        );

        let mut by_name: SmallMap<String, u8> = SmallMap::new();
        by_name.insert("b".to_owned(), 2);
        by_name.insert("a".to_owned(), 1);
        assert_eq!(by_name.get("a"), Some(&1));
        assert_eq!(by_name.remove("b"), Some(2));
    }
}
