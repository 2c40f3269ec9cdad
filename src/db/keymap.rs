//! The keyspace's map: keys in one dense sequence of slots, found through a
//! table of 32-bit positions.
//!
//! The shape is `IndexMap`'s — entries in insertion order (so `SCAN` walks
//! positions and `RANDOMKEY` picks one), `swap_remove` filling a hole with
//! the last entry, and a hash table of positions — with the costs every
//! stored key pays cut down:
//! * no 8-byte hash kept per key (a key's hash is computed again where the
//!   table needs it: when it grows, and for the entry a removal moves), and
//!   `u32` positions in the table, not `usize` (5 bytes a bucket with its
//!   control byte, not 9);
//! * the slots live in chunks of [`CHUNK_BYTES`] ([`Slots`]), not one
//!   vector: a vector that doubles holds up to twice the slots in use (on
//!   average about 40% more) and copies every entry when it grows, a pause
//!   of milliseconds under the core lock at a million keys; chunks hold at
//!   most one chunk more than in use and never move an entry.
//!
//! Measured in BENCHMARKS.md ("The keyspace's own cost per key").
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
    slots: Slots<(Key, V)>,
    hasher: Hasher,
}

impl<V> Default for KeyMap<V> {
    fn default() -> Self {
        KeyMap { table: HashTable::new(), slots: Slots::default(), hasher: Hasher::default() }
    }
}

/// The bytes of one full chunk of slots: a size class of the allocator
/// (jemalloc's 64 KiB), so a full chunk takes no more than it holds.
pub const CHUNK_BYTES: usize = 64 << 10;

/// A vector in chunks: position `i` is in chunk `i / per_chunk`. The first
/// chunk grows as a vector does (a database of a few keys holds a few
/// slots); the others are allocated whole. Chunks past the one position
/// `len` falls in are empty; at most one is kept (so a database that grows
/// and shrinks across a chunk's boundary does not allocate and free a
/// chunk each time).
#[derive(Clone)]
struct Slots<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots { chunks: Vec::new(), len: 0 }
    }
}

impl<T> Slots<T> {
    /// Slots in a full chunk.
    const PER_CHUNK: usize = {
        let n = CHUNK_BYTES / std::mem::size_of::<T>();
        assert!(n >= 2);
        n
    };

    fn with_capacity(n: usize) -> Slots<T> {
        let mut s = Slots::default();
        let mut left = n;
        while left > 0 {
            let take = left.min(Self::PER_CHUNK);
            s.chunks.push(Vec::with_capacity(if s.chunks.is_empty() { take } else { Self::PER_CHUNK }));
            left -= take;
        }
        s
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum()
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        // SAFETY: `i < len`, and every position below `len` is in its
        // chunk (the invariant of `Slots`).
        Some(unsafe { self.chunks.get_unchecked(i / Self::PER_CHUNK).get_unchecked(i % Self::PER_CHUNK) })
    }

    #[inline]
    fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i >= self.len {
            return None;
        }
        // SAFETY: as in `get`.
        Some(unsafe { self.chunks.get_unchecked_mut(i / Self::PER_CHUNK).get_unchecked_mut(i % Self::PER_CHUNK) })
    }

    /// The only slot, when there is exactly one.
    #[inline]
    fn only(&self) -> Option<&T> {
        if self.len == 1 {
            self.get(0)
        } else {
            None
        }
    }

    #[inline]
    fn push(&mut self, value: T) {
        let c = self.len / Self::PER_CHUNK;
        if c == self.chunks.len() {
            let cap = if c == 0 { 4.min(Self::PER_CHUNK) } else { Self::PER_CHUNK };
            self.chunks.push(Vec::with_capacity(cap));
        }
        let chunk = &mut self.chunks[c];
        if chunk.len() == chunk.capacity() {
            // The first chunk (or a clone's) doubles up to a full chunk.
            let want = (chunk.capacity() * 2).clamp(4, Self::PER_CHUNK);
            chunk.reserve_exact(want - chunk.len());
        }
        chunk.push(value);
        self.len += 1;
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        let c = self.len / Self::PER_CHUNK;
        let last = self.chunks[c].pop();
        // Keep one empty chunk past the last in use; free the rest.
        if self.chunks.len() > c + 2 || (self.chunks.len() == c + 2 && self.len % Self::PER_CHUNK < Self::PER_CHUNK / 2)
        {
            self.chunks.truncate(c + 1);
        }
        last
    }

    /// Removes position `i`, the last entry taking its place.
    #[inline]
    fn swap_remove(&mut self, i: usize) -> T {
        let last = self.pop().expect("in range");
        if i == self.len {
            return last;
        }
        std::mem::replace(self.get_mut(i).expect("in range"), last)
    }

    fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> + '_ {
        self.chunks.iter_mut().flat_map(|c| c.iter_mut())
    }

    /// Every slot in order, leaving only the first chunk's allocation.
    fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.len = 0;
        let rest = self.chunks.split_off(self.chunks.len().min(1));
        self.chunks.iter_mut().flat_map(|c| c.drain(..)).chain(rest.into_iter().flatten())
    }
}

#[inline]
fn pos(i: usize) -> u32 {
    u32::try_from(i).expect("at most 2^32 keys in one database")
}

impl<V> KeyMap<V> {
    /// Room for `capacity` keys, hashing with `hasher`.
    pub fn with_capacity_and_hasher(capacity: usize, hasher: Hasher) -> KeyMap<V> {
        KeyMap { table: HashTable::with_capacity(capacity), slots: Slots::with_capacity(capacity), hasher }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slots.len() == 0
    }

    /// Keys the map's table holds without growing (the slots grow and
    /// shrink a chunk at a time by themselves).
    pub fn capacity(&self) -> usize {
        self.table.capacity()
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
        match self.slots.len() {
            0 => None,
            1 => self.slots.only().and_then(|(only, _)| (only[..] == *key).then_some(0)),
            _ => self.find(key),
        }
    }

    #[inline]
    fn find(&self, key: &[u8]) -> Option<usize> {
        let slots = &self.slots;
        self.table.find(self.hash(key), |&i| slots_at(slots, i).0[..] == *key).map(|&i| i as usize)
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.get_index_of(key).and_then(|i| self.slots.get(i)).map(|s| &s.1)
    }

    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let i = self.get_index_of(key)?;
        self.slots.get_mut(i).map(|s| &mut s.1)
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
            let (k, v) = slots_at(slots, i);
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
        let at = |i: u32| &slots_at(slots, i).0;
        match table.entry(hash, |&i| *at(i) == key, |&i| hasher.hash_one(&at(i)[..])) {
            hashbrown::hash_table::Entry::Occupied(found) => {
                let i = *found.get();
                return Some(std::mem::replace(&mut slots.get_mut(i as usize).expect("in the table").1, value));
            }
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(pos(slots.len()));
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
        if let Some((only, _)) = self.slots.only() {
            // As in `get_index_of`: one key, no hashing.
            if only[..] != *key {
                return None;
            }
            self.table.clear();
            return self.slots.pop();
        }
        let hash = self.hash(key);
        let slots = &self.slots;
        let found = self.table.find_entry(hash, |&i| slots_at(slots, i).0[..] == *key).ok()?;
        let i = *found.get() as usize;
        found.remove();
        Some(self.fill_hole(i))
    }

    /// Position `i` has left the table: the last entry moves into it.
    fn fill_hole(&mut self, i: usize) -> (Key, V) {
        let last = self.slots.len() - 1;
        if i != last {
            let p = pos(last);
            let hash = self.hash(&slots_at(&self.slots, p).0);
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
        self.slots.drain()
    }
}

/// The slot at a position the table holds.
#[inline]
fn slots_at<V>(slots: &Slots<(Key, V)>, i: u32) -> &(Key, V) {
    slots.get(i as usize).expect("the table holds positions below the length")
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

    /// The slots take at most what is in use and two chunks more (the
    /// partly filled one and one spare), whatever the table's size; a
    /// database going back and forth across a chunk's boundary keeps its
    /// chunks; the first chunk grows from a few slots.
    #[test]
    fn slots_hold_about_what_is_used() {
        type S = Slots<(Key, u64)>;
        let per = S::PER_CHUNK;
        let size = std::mem::size_of::<(Key, u64)>();
        assert!(per * size <= CHUNK_BYTES && (per + 1) * size > CHUNK_BYTES);
        let mut m: KeyMap<u64> = KeyMap::default();
        m.insert(Key::new(b"one"), 1);
        assert!(m.slots.capacity() <= 4);
        for i in 0..(3 * per as u64 + 10) {
            m.insert(Key::new(format!("k{i}").as_bytes()), i);
            assert!(m.slots.capacity() <= m.len().max(4) * 2 && m.slots.capacity() <= m.len() + 2 * per);
        }
        // Across the boundary of the fourth chunk and back: no chunk freed
        // or allocated.
        let chunks = m.slots.chunks.len();
        for _ in 0..3 {
            for i in 0..20 {
                m.swap_remove_entry(format!("k{}", 3 * per as u64 + 9 - i).as_bytes()).expect("there");
            }
            assert_eq!(m.slots.chunks.len(), chunks);
            for i in 0..20 {
                m.insert(Key::new(format!("k{}", 3 * per as u64 + 9 - i).as_bytes()), 0);
            }
            assert_eq!(m.slots.chunks.len(), chunks);
        }
        // Emptied down to a few: the spare chunks are freed.
        while m.len() > 3 {
            m.swap_remove_index(0).expect("there");
        }
        assert!(m.slots.chunks.len() <= 2, "{} chunks", m.slots.chunks.len());
        assert_eq!(m.slots.iter().count(), 3);
        let n = m.drain().count();
        assert_eq!((n, m.len(), m.slots.chunks.len()), (3, 0, 1));
        m.insert(Key::new(b"again"), 5);
        assert_eq!(m.get(b"again"), Some(&5));
    }
}
