//! A database's expiry index: deadlines in order, each naming its key by
//! the key's hash in the database map.
//!
//! Active expiry and `volatile-ttl` eviction need the keys in deadline
//! order. Keeping `(deadline, key)` pairs cost a clone of every key with a
//! TTL (and the shared header that cloning a stored key allocates): about
//! 100 bytes per key in all. `(deadline, hash)` pairs are 16 bytes; the key
//! is found again through the map's own hash table
//! ([`super::Db::key_expiring`]), checking the full hash and the entry's
//! deadline, so a different key whose hash shares the table's probe
//! position is never taken for it. Two keys with the same 64-bit hash and
//! the same deadline share one pair with a count of two.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// See the module docs.
#[derive(Debug, Default, Clone)]
pub struct ExpiryIndex {
    pairs: BTreeMap<(u64, u64), u32>,
    /// Keys with a deadline (the counts' sum).
    len: usize,
}

impl ExpiryIndex {
    pub fn insert(&mut self, at: u64, hash: u64) {
        *self.pairs.entry((at, hash)).or_insert(0) += 1;
        self.len += 1;
    }

    /// Removes one key's pair; false if there was none.
    pub fn remove(&mut self, at: u64, hash: u64) -> bool {
        let Some(count) = self.pairs.get_mut(&(at, hash)) else { return false };
        *count -= 1;
        if *count == 0 {
            self.pairs.remove(&(at, hash));
        }
        self.len -= 1;
        true
    }

    /// The earliest deadline and the hash of a key that has it.
    pub fn first(&self) -> Option<(u64, u64)> {
        self.pairs.first_key_value().map(|(k, _)| *k)
    }

    /// Removes the earliest pair: its deadline, hash, and how many keys
    /// share it (almost always one).
    pub fn pop_first(&mut self) -> Option<(u64, u64, u32)> {
        let ((at, hash), count) = self.pairs.pop_first()?;
        self.len -= count as usize;
        Some((at, hash, count))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every pair in deadline order, with its count (tests).
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, u32)> + '_ {
        self.pairs.iter().map(|(&(at, hash), &count)| (at, hash, count))
    }
}

/// A database's field-expiry index: `(deadline, hash of key)` pairs of the
/// hashes with field deadlines, earliest first, in a binary heap (16 bytes
/// a pair, no node overhead: a B-tree map's nodes, filled to about two
/// thirds by deadlines arriving in order, cost about 37 bytes a pair).
/// Unlike [`ExpiryIndex`] a pair is never removed before it is due: the
/// database keeps in each hash the deadline it is registered under and
/// drops a stale pair when it pops it, so a heap's lack of removal costs
/// nothing; equal pairs are popped together.
#[derive(Debug, Default, Clone)]
pub struct FieldIndex {
    heap: BinaryHeap<Reverse<(u64, u64)>>,
}

impl FieldIndex {
    pub fn insert(&mut self, at: u64, hash: u64) {
        self.heap.push(Reverse((at, hash)));
    }

    /// The earliest deadline and the hash of a key registered under it.
    pub fn first(&self) -> Option<(u64, u64)> {
        self.heap.peek().map(|r| r.0)
    }

    /// Removes the earliest pair and those equal to it: its deadline,
    /// hash, and how many there were (almost always one). Gives memory
    /// back as the heap empties.
    pub fn pop_first(&mut self) -> Option<(u64, u64, u32)> {
        let Reverse(pair) = self.heap.pop()?;
        let mut count = 1;
        while self.heap.peek().is_some_and(|r| r.0 == pair) {
            self.heap.pop();
            count += 1;
        }
        let cap = self.heap.capacity();
        if cap > 64 && self.heap.len() < cap / 4 {
            self.heap.shrink_to(cap / 2);
        }
        Some((pair.0, pair.1, count))
    }

    /// The pairs held, stale ones included (tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_pairs_count_their_keys() {
        let mut x = ExpiryIndex::default();
        x.insert(10, 7);
        x.insert(10, 7);
        x.insert(5, 9);
        assert_eq!((x.len(), x.first()), (3, Some((5, 9))));
        assert!(x.remove(10, 7));
        assert_eq!(x.len(), 2);
        assert_eq!(x.iter().collect::<Vec<_>>(), vec![(5, 9, 1), (10, 7, 1)]);
        assert!(!x.remove(11, 7));
        assert_eq!(x.pop_first(), Some((5, 9, 1)));
        x.insert(10, 7);
        assert_eq!(x.pop_first(), Some((10, 7, 2)));
        assert!(x.is_empty());
    }

    /// The field index pops in deadline order, equal pairs together, and
    /// gives its memory back as it empties.
    #[test]
    fn field_index_pops_in_order_merging_equal_pairs() {
        let mut x = FieldIndex::default();
        let mut seed = 5u64;
        let mut model = Vec::new();
        for _ in 0..10_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let pair = ((seed >> 40) % 500, (seed >> 20) % 3);
            x.insert(pair.0, pair.1);
            model.push(pair);
        }
        assert_eq!((x.len(), x.first()), (10_000, model.iter().min().copied()));
        model.sort_unstable();
        let mut want = Vec::new();
        for p in model {
            match want.last_mut() {
                Some((q, n)) if *q == p => *n += 1,
                _ => want.push((p, 1u32)),
            }
        }
        let mut got = Vec::new();
        while let Some((at, hash, n)) = x.pop_first() {
            got.push(((at, hash), n));
        }
        assert_eq!(got, want);
        assert!(x.is_empty() && x.heap.capacity() <= 64, "memory given back: {}", x.heap.capacity());
    }
}
