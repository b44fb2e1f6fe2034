//! [`StrSet`]: a set of strings ordered by value, on the same [`KeyIndex`] as [`StrMap`]'s.
//!
//! A `BTreeSet<String>` (or `BTreeSet<&str>`) is its own copy of the tree code in the `.wasm`
//! (7–10 KB before gzip each); a `StrSet` is a [`KeyIndex`] whose values are unused. A set of
//! borrowed strings becomes a set of owned ones: the sets that check a batch hold a few ids.
//!
//! [`StrMap`]: super::str_map::StrMap

use super::key_index::{KeyIndex, Keys};

/// A set of strings, iterated in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StrSet(KeyIndex);

impl StrSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of strings.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `value` is in the set.
    pub fn contains(&self, value: &str) -> bool {
        self.0.contains_key(value)
    }

    /// Adds `value`; false when it was already there.
    pub fn insert(&mut self, value: String) -> bool {
        self.0.insert_if_absent(value, 0).is_none()
    }

    /// Adds `value` (copied only when it is new); false when it was already there.
    pub fn insert_str(&mut self, value: &str) -> bool {
        !self.contains(value) && self.insert(value.to_owned())
    }

    /// Removes `value`; false when it was not there.
    pub fn remove(&mut self, value: &str) -> bool {
        self.0.remove(value).is_some()
    }

    /// Removes every string.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// The strings in order.
    pub fn iter(&self) -> Keys<'_> {
        self.0.keys()
    }
}

/// Built in one pass (a sort and a bulk build), as `BTreeSet`'s `collect` is.
impl FromIterator<String> for StrSet {
    fn from_iter<I: IntoIterator<Item = String>>(values: I) -> Self {
        Self(values.into_iter().map(|value| (value, 0)).collect())
    }
}

impl Extend<String> for StrSet {
    fn extend<I: IntoIterator<Item = String>>(&mut self, values: I) {
        for value in values {
            self.insert(value);
        }
    }
}

impl IntoIterator for StrSet {
    type Item = String;
    type IntoIter =
        std::iter::Map<<KeyIndex as IntoIterator>::IntoIter, fn((String, u64)) -> String>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().map((|(key, _)| key) as fn(_) -> _)
    }
}

impl<'a> IntoIterator for &'a StrSet {
    type Item = &'a String;
    type IntoIter = Keys<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.keys()
    }
}

impl<const N: usize> From<[&str; N]> for StrSet {
    fn from(values: [&str; N]) -> Self {
        values.into_iter().map(str::to_owned).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_each_string_once_in_order() {
        let mut set = StrSet::new();
        assert!(set.insert("b".to_owned()));
        assert!(set.insert_str("a"));
        assert!(!set.insert("b".to_owned()), "already there");
        assert!(!set.insert_str("a"), "already there");
        assert_eq!(set.len(), 2);
        assert!(set.contains("a") && !set.contains("c"));
        assert_eq!(set.iter().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(set.iter().next_back().map(String::as_str), Some("b"));
        assert!(set.remove("a") && !set.remove("a"));
        set.extend(["d".to_owned(), "c".to_owned(), "d".to_owned()]);
        assert_eq!(set.clone().into_iter().collect::<Vec<_>>(), ["b", "c", "d"]);
        let collected: StrSet = ["d", "b", "c", "b"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        assert_eq!(collected, set, "collect dedups and orders");
        assert_eq!(StrSet::from(["c", "b", "d"]), set);
        set.clear();
        assert!(set.is_empty());
    }
}
