//! [`U64Set`]: a set of integers for the loader's check that no two operations share a
//! sequence.
//!
//! The loader notes up to hundreds of thousands of sequences while opening a ledger, so a
//! tree costs time, and `std`'s `HashSet` brings the hash table and SipHash code (with its
//! random keys) into the `.wasm` for this one use. Open addressing with linear probing over a
//! power-of-two table, multiplicative hashing and at most half the slots full is a few hundred
//! bytes of code and as fast. Nothing here comes from outside: sequences are checked by the
//! loader, and a colliding input only makes probes longer.

/// A set of `u64`.
#[derive(Debug, Clone, Default)]
pub struct U64Set {
    /// Slots; 0 marks an empty one (zero itself is kept in `zero`).
    slots: Vec<u64>,
    zero: bool,
    len: usize,
}

impl U64Set {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `value` is in the set.
    pub fn contains(&self, value: u64) -> bool {
        if value == 0 {
            return self.zero;
        }
        self.slots
            .get(self.find(value))
            .is_some_and(|&slot| slot == value)
    }

    /// Adds `value`; false when it was already there.
    pub fn insert(&mut self, value: u64) -> bool {
        if value == 0 {
            let added = !self.zero;
            self.zero = true;
            self.len += usize::from(added);
            return added;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let at = self.find(value);
        if self.slots[at] == value {
            return false;
        }
        self.slots[at] = value;
        self.len += 1;
        true
    }

    /// The slot holding `value`, or the empty slot where it would go (`slots` is never full;
    /// 0 when there are no slots).
    fn find(&self, value: u64) -> usize {
        let mask = self.slots.len().wrapping_sub(1);
        if self.slots.is_empty() {
            return 0;
        }
        // Fibonacci hashing: the top bits of the product spread consecutive sequences.
        let mut at = (value.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & mask;
        while self.slots[at] != 0 && self.slots[at] != value {
            at = (at + 1) & mask;
        }
        at
    }

    /// Doubles the table (16 slots at first) and puts every value back.
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, vec![0; size]);
        for value in old.into_iter().filter(|&value| value != 0) {
            let at = self.find(value);
            self.slots[at] = value;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn holds_what_a_hash_set_holds() {
        let mut rng = crate::testing::SimRng::new(0x2545_f491_4f6c_dd1d);
        let mut set = U64Set::new();
        let mut model = HashSet::new();
        for round in 0..20_000u64 {
            let state = rng.next_u64();
            // Dense runs (as sequences are), repeats, zero, the extremes and random values.
            let value = match state % 5 {
                0 => round,
                1 => state % 64,
                2 => [0, 1, u64::MAX, 1 << 53][(state >> 8) as usize % 4],
                3 => round * 4096,
                _ => state,
            };
            assert_eq!(set.insert(value), model.insert(value), "insert {value}");
            assert_eq!(set.len(), model.len());
            let probe = state.rotate_left(17) % 40_000;
            assert_eq!(
                set.contains(probe),
                model.contains(&probe),
                "contains {probe}"
            );
        }
        assert!(model.iter().all(|&value| set.contains(value)));
        assert!(!U64Set::new().contains(0) && !U64Set::new().contains(7));
    }
}
