//! The keyspace's map: keys in one dense vector, found through a table of
//! 32-bit positions.
//!
//! The shape is `IndexMap`'s — a vector of entries in insertion order (so
//! `SCAN` walks positions and `RANDOMKEY` picks one), `swap_remove` filling a
//! hole with the last entry, and a hash table of positions — with two costs
//! per key taken out, since every stored key pays them: the vector does not
//! keep each key's 8-byte hash (a key's hash is computed again where the
//! table needs it: when it grows, and for the entry a removal moves), and
//! the table holds `u32` positions, not `usize` (5 bytes a slot with its
//! control byte, not 9). Together about 14 bytes a key, measured in
//! BENCHMARKS.md ("The keyspace's own cost per key").
//!
//! Hashes are the hasher's over the key's bytes (`hash_one(&[u8])`): the
//! expiry index names keys by them and finds them again with
//! [`KeyMap::find_by_hash`].
//!
//! **Invariants:** the table holds exactly the positions `0..slots.len()`,
//! each once, each under the hash of the key at that position; keys are
//! unique; `slots.len() <= u32::MAX`.

use std::fmt;
use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::{Hasher, Key};

/// See the module docs.
#[derive(Clone)]
pub struct KeyMap<V> {
    table: HashTable<u32>,
    slots: Vec<(Key, V)>,
    hasher: Hasher,
}

impl<V> Default for KeyMap<V> {
    fn default() -> Self {
        KeyMap { table: HashTable::new(), slots: Vec::new(), hasher: Hasher::default() }
    }
}

#[inline]
fn pos(i: usize) -> u32 {
    u32::try_from(i).expect("at most 2^32 keys in one database")
}

impl<V> KeyMap<V> {
    /// Room for `capacity` keys, hashing with `hasher`.
    pub fn with_capacity_and_hasher(capacity: usize, hasher: Hasher) -> KeyMap<V> {
        KeyMap { table: HashTable::with_capacity(capacity), slots: Vec::with_capacity(capacity), hasher }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Keys the map holds without growing.
    pub fn capacity(&self) -> usize {
        self.table.capacity().min(self.slots.capacity())
    }

    #[inline]
    pub fn hasher(&self) -> &Hasher {
        &self.hasher
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Position of `key`. With no key or one (a test's database, a
    /// lock's), compared without hashing, as `IndexMap` does; that much is
    /// inlined into each caller (a call per lookup cost more than it).
    #[inline(always)]
    pub fn get_index_of(&self, key: &[u8]) -> Option<usize> {
        match &self.slots[..] {
            [] => None,
            [(only, _)] => (only[..] == *key).then_some(0),
            _ => self.find(key),
        }
    }

    #[inline]
    fn find(&self, key: &[u8]) -> Option<usize> {
        let slots = &self.slots;
        self.table.find(self.hash(key), |&i| slots[i as usize].0[..] == *key).map(|&i| i as usize)
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.get_index_of(key).map(|i| &self.slots[i].1)
    }

    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let i = self.get_index_of(key)?;
        Some(&mut self.slots[i].1)
    }

    #[inline]
    pub fn get_index(&self, i: usize) -> Option<(&Key, &V)> {
        self.slots.get(i).map(|(k, v)| (k, v))
    }

    #[inline]
    pub fn get_index_mut(&mut self, i: usize) -> Option<(&Key, &mut V)> {
        self.slots.get_mut(i).map(|(k, v)| (&*k, v))
    }

    /// The entry whose key hashes to `hash` and satisfies `is` (the expiry
    /// index's lookup: `is` checks the full hash and what else it needs).
    pub fn find_by_hash(&self, hash: u64, mut is: impl FnMut(&Key, &V) -> bool) -> Option<(&Key, &V)> {
        let slots = &self.slots;
        let &i = self.table.find(hash, |&i| {
            let (k, v) = &slots[i as usize];
            is(k, v)
        })?;
        self.get_index(i as usize)
    }

    /// Stores `value` under `key`: a key already there keeps its position
    /// (and its `Key`) and the old value is returned; a new one goes last.
    pub fn insert(&mut self, key: Key, value: V) -> Option<V> {
        let hash = self.hash(&key);
        let KeyMap { table, slots, hasher } = self;
        // One probe finds the key or the slot a new one takes.
        match table.entry(hash, |&i| slots[i as usize].0 == key, |&i| hasher.hash_one(&slots[i as usize].0[..])) {
            hashbrown::hash_table::Entry::Occupied(found) => {
                return Some(std::mem::replace(&mut slots[*found.get() as usize].1, value));
            }
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(pos(slots.len()));
            }
        }
        if slots.len() == slots.capacity() {
            // As `IndexMap` does: room up to what the table holds, so the
            // vector grows when the table does, not at every doubling of
            // its own.
            let room = table.capacity().saturating_sub(slots.len());
            if room <= 1 || slots.try_reserve_exact(room).is_err() {
                slots.reserve_exact(1);
            }
        }
        slots.push((key, value));
        None
    }

    /// Removes the entry at `i`, the last entry taking its place.
    pub fn swap_remove_index(&mut self, i: usize) -> Option<(Key, V)> {
        let hash = self.hash(&self.slots.get(i)?.0);
        let p = pos(i);
        match self.table.find_entry(hash, |&j| j == p) {
            Ok(found) => {
                found.remove();
            }
            Err(_) => unreachable!("every position is in the table under its key's hash"),
        }
        Some(self.fill_hole(i))
    }

    /// Removes `key`'s entry, the last entry taking its place.
    pub fn swap_remove_entry(&mut self, key: &[u8]) -> Option<(Key, V)> {
        if let [(only, _)] = &self.slots[..] {
            // As in `get_index_of`: one key, no hashing.
            if only[..] != *key {
                return None;
            }
            self.table.clear();
            return self.slots.pop();
        }
        let hash = self.hash(key);
        let slots = &self.slots;
        let found = self.table.find_entry(hash, |&i| slots[i as usize].0[..] == *key).ok()?;
        let i = *found.get() as usize;
        found.remove();
        Some(self.fill_hole(i))
    }

    /// Position `i` has left the table: the last entry moves into it.
    fn fill_hole(&mut self, i: usize) -> (Key, V) {
        let last = self.slots.len() - 1;
        if i != last {
            let hash = self.hash(&self.slots[last].0);
            let p = pos(last);
            *self.table.find_mut(hash, |&j| j == p).expect("the last position is in the table") = pos(i);
        }
        self.slots.swap_remove(i)
    }

    /// Entries in position order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &V)> + '_ {
        self.slots.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &Key> + '_ {
        self.slots.iter().map(|(k, _)| k)
    }

    #[cfg(test)]
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.slots.iter().map(|(_, v)| v)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.slots.iter_mut().map(|(_, v)| v)
    }

    /// Every entry, in position order, leaving the map empty (its
    /// allocations kept).
    pub fn drain(&mut self) -> impl Iterator<Item = (Key, V)> + '_ {
        self.table.clear();
        self.slots.drain(..)
    }
}

impl<V: fmt::Debug> fmt::Debug for KeyMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The map against a model (a vector of pairs with the same swap
    /// removal) through random inserts, replacements and removals by key and
    /// by position, across growth: same positions, same lookups, and the
    /// table's invariant checked after each step.
    #[test]
    fn behaves_as_its_model() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut m: KeyMap<u32> = KeyMap::default();
        let mut model: Vec<(Vec<u8>, u32)> = Vec::new();
        for step in 0..20_000u32 {
            let name = format!("key:{}", rng.random_range(0..600)).repeat(1 + rng.random_range(0..4));
            match rng.random_range(0..10) {
                0..=5 => {
                    let old = m.insert(Key::new(name.as_bytes()), step);
                    match model.iter_mut().find(|(k, _)| k == name.as_bytes()) {
                        Some(slot) => assert_eq!(old, Some(std::mem::replace(&mut slot.1, step))),
                        None => {
                            assert_eq!(old, None);
                            model.push((name.into_bytes(), step));
                        }
                    }
                }
                6..=7 => {
                    let gone = m.swap_remove_entry(name.as_bytes()).map(|(_, v)| v);
                    let at = model.iter().position(|(k, _)| k == name.as_bytes());
                    assert_eq!(gone, at.map(|i| model.swap_remove(i).1));
                }
                _ if !model.is_empty() => {
                    let i = rng.random_range(0..model.len());
                    let (k, v) = m.swap_remove_index(i).expect("in range");
                    let (mk, mv) = model.swap_remove(i);
                    assert_eq!((&k[..], v), (&mk[..], mv));
                }
                _ => assert!(m.swap_remove_index(0).is_none()),
            }
            assert_eq!(m.len(), model.len());
            if step % 97 == 0 {
                for (i, (k, v)) in model.iter().enumerate() {
                    assert_eq!(m.get_index_of(k), Some(i));
                    assert_eq!(m.get_index(i).map(|(k, v)| (k.to_vec(), *v)), Some((k.clone(), *v)));
                    let h = m.hasher().hash_one(&k[..]);
                    assert_eq!(m.find_by_hash(h, |key, _| key[..] == k[..]).map(|(_, v)| *v), Some(*v));
                }
                assert_eq!(m.table.len(), m.slots.len());
                assert!(m.get(b"absent").is_none());
            }
        }
        let n = m.len();
        assert_eq!(m.drain().count(), n);
        assert!(m.is_empty() && m.get_index_of(b"key:1").is_none());
    }

    /// The vector grows to what the table holds, as `IndexMap`'s does (the
    /// memory figures of BENCHMARKS.md depend on it).
    #[test]
    fn grows_with_its_table() {
        let mut m: KeyMap<()> = KeyMap::default();
        for i in 0..10_000 {
            m.insert(Key::new(format!("k{i}").as_bytes()), ());
            assert!(m.slots.capacity() <= m.table.capacity().max(m.slots.len()));
        }
        assert_eq!(m.slots.capacity(), m.table.capacity());
    }
}
