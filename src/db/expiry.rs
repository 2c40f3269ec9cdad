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

use std::collections::BTreeMap;

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
}
