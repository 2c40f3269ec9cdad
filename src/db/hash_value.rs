//! A hash value: a vector of pairs while small, an index map beyond.
//!
//! Most hashes in lock workloads hold one field (a Redisson lock: the
//! owner and its re-entry count). An `IndexMap` for that costs a hash table
//! allocation and an entries allocation beside the field's and value's own;
//! a vector of pairs costs one, and a linear scan of up to [`SMALL_MAX`]
//! fields is as fast as hashing the field. Both keep insertion order and
//! `IndexMap`'s removal semantics (`swap_remove` moves the last pair into
//! the hole, `shift_remove` closes it), so `HSCAN`'s index walk and the
//! listpack order Redis replies in are the same whatever the representation.
//! Which one is used is invisible to commands (they see the API below) and
//! to clients (`OBJECT ENCODING` follows Redis's listpack rules, not this).

use bytes::Bytes;

use super::Map;

/// Fields past which a hash moves to the index map (never back).
pub const SMALL_MAX: usize = 8;

/// A hash value (see the module docs).
#[derive(Debug, Clone)]
pub enum HashValue {
    /// Up to [`SMALL_MAX`] pairs, in order.
    Small(Vec<(Bytes, Bytes)>),
    /// Larger hashes.
    Big(Box<Map<Bytes, Bytes>>),
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Small(Vec::new())
    }
}

impl PartialEq for HashValue {
    /// Same pairs in the same order.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl HashValue {
    pub fn len(&self) -> usize {
        match self {
            HashValue::Small(v) => v.len(),
            HashValue::Big(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn position(v: &[(Bytes, Bytes)], field: &[u8]) -> Option<usize> {
        v.iter().position(|(k, _)| k[..] == *field)
    }

    pub fn get(&self, field: impl AsRef<[u8]>) -> Option<&Bytes> {
        let field = field.as_ref();
        match self {
            HashValue::Small(v) => Self::position(v, field).map(|i| &v[i].1),
            HashValue::Big(m) => m.get(field),
        }
    }

    pub fn get_mut(&mut self, field: impl AsRef<[u8]>) -> Option<&mut Bytes> {
        let field = field.as_ref();
        match self {
            HashValue::Small(v) => Self::position(v, field).map(|i| &mut v[i].1),
            HashValue::Big(m) => m.get_mut(field),
        }
    }

    pub fn contains_key(&self, field: impl AsRef<[u8]>) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field`; the previous value if it existed (its position kept).
    pub fn insert(&mut self, field: Bytes, value: Bytes) -> Option<Bytes> {
        match self {
            HashValue::Small(v) => {
                if let Some(i) = Self::position(v, &field) {
                    return Some(std::mem::replace(&mut v[i].1, value));
                }
                if v.len() < SMALL_MAX {
                    // Exactly as many as needed (a plain push reserves four).
                    v.reserve_exact(1);
                    v.push((field, value));
                    return None;
                }
                let mut m: Map<Bytes, Bytes> = Map::with_capacity_and_hasher(v.len() + 1, Default::default());
                m.extend(v.drain(..));
                m.insert(field, value);
                *self = HashValue::Big(Box::new(m));
                None
            }
            HashValue::Big(m) => m.insert(field, value),
        }
    }

    /// Removes `field`, moving the last pair into its place.
    pub fn swap_remove(&mut self, field: impl AsRef<[u8]>) -> Option<Bytes> {
        let field = field.as_ref();
        match self {
            HashValue::Small(v) => Self::position(v, field).map(|i| v.swap_remove(i).1),
            HashValue::Big(m) => m.swap_remove(field),
        }
    }

    /// Removes `field`, keeping the order of the others.
    pub fn shift_remove(&mut self, field: impl AsRef<[u8]>) -> Option<Bytes> {
        let field = field.as_ref();
        match self {
            HashValue::Small(v) => Self::position(v, field).map(|i| v.remove(i).1),
            HashValue::Big(m) => m.shift_remove(field),
        }
    }

    pub fn get_index(&self, i: usize) -> Option<(&Bytes, &Bytes)> {
        match self {
            HashValue::Small(v) => v.get(i).map(|(k, val)| (k, val)),
            HashValue::Big(m) => m.get_index(i),
        }
    }

    /// The pairs in order.
    pub fn iter(&self) -> Iter<'_> {
        match self {
            HashValue::Small(v) => Iter::Small(v.iter()),
            HashValue::Big(m) => Iter::Big(m.iter()),
        }
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Bytes> + ExactSizeIterator {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Bytes> + ExactSizeIterator {
        self.iter().map(|(_, v)| v)
    }
}

/// The pairs of a [`HashValue`], in order.
pub enum Iter<'a> {
    Small(std::slice::Iter<'a, (Bytes, Bytes)>),
    Big(indexmap::map::Iter<'a, Bytes, Bytes>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Bytes, &'a Bytes);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(i) => i.next().map(|(k, v)| (k, v)),
            Iter::Big(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Small(i) => i.size_hint(),
            Iter::Big(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(i) => i.next_back().map(|(k, v)| (k, v)),
            Iter::Big(i) => i.next_back(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a HashValue {
    type Item = (&'a Bytes, &'a Bytes);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<(Bytes, Bytes)> for HashValue {
    fn from_iter<I: IntoIterator<Item = (Bytes, Bytes)>>(iter: I) -> Self {
        let mut h = HashValue::default();
        for (k, v) in iter {
            h.insert(k, v);
        }
        h
    }
}

impl Extend<(Bytes, Bytes)> for HashValue {
    fn extend<I: IntoIterator<Item = (Bytes, Bytes)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    /// The same operations on a HashValue and on an IndexMap leave the same
    /// pairs in the same order, across the move from small to big.
    #[test]
    fn behaves_as_an_index_map_across_the_move() {
        let mut h = HashValue::default();
        let mut m: Map<Bytes, Bytes> = Map::default();
        let mut seed = 7u64;
        for step in 0..4000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let f = b(&format!("f{}", (seed >> 33) % 14));
            let v = b(&step.to_string());
            match (seed >> 20) % 4 {
                0 | 1 => assert_eq!(h.insert(f.clone(), v.clone()), m.insert(f, v)),
                2 => assert_eq!(h.swap_remove(&f), m.swap_remove(&f[..])),
                _ => assert_eq!(h.shift_remove(&f), m.shift_remove(&f[..])),
            }
            assert_eq!(h.len(), m.len());
            assert!(h.iter().eq(m.iter()), "step {step}");
            for i in 0..m.len() {
                assert_eq!(h.get_index(i), m.get_index(i));
            }
            assert_eq!(h.get(&b"f3"[..]), m.get(&b"f3"[..]));
        }
        assert!(matches!(h, HashValue::Big(_)), "grew past SMALL_MAX at some point");
        assert!(h.iter().rev().eq(m.iter().rev()));
    }

    #[test]
    fn one_field_is_small() {
        let mut h = HashValue::default();
        h.insert(b("owner:1"), b("1"));
        assert!(matches!(&h, HashValue::Small(v) if v.len() == 1 && v.capacity() == 1));
        *h.get_mut("owner:1").expect("field") = b("2");
        assert_eq!(h.get("owner:1"), Some(&b("2")));
        assert!(h.contains_key(b"owner:1"));
        assert_eq!(h.keys().count(), 1);
    }
}
