//! A hash value: one packed allocation while small, an index map beyond.
//!
//! Most hashes in lock workloads hold one field (a Redisson lock: the
//! owner and its re-entry count). An `IndexMap` for that costs a hash table
//! allocation and an entries allocation beside the field's and value's own;
//! even a vector of `Bytes` pairs costs three allocations. A small hash is
//! instead packed in one boxed byte string, as Redis packs it in one
//! listpack: the lengths of its fields and values (a byte each), then the
//! pairs' bytes ([`Packed`]). Up to [`SMALL_MAX`] fields a lookup running
//! down the lengths is about as fast as hashing the field (measured:
//! `benches/hash_small.rs`, BENCHMARKS.md), and a value rewritten with the
//! same length (a re-entry count going from 1 to 2) is overwritten in
//! place, with no allocation. A hash of 10 short fields costs 163 bytes a
//! key instead of 1,375.
//!
//! Both forms keep insertion order and `IndexMap`'s removal semantics
//! (`swap_remove` moves the last pair into the hole, `shift_remove` closes
//! it), so `HSCAN`'s index walk and the listpack order Redis replies in are
//! the same whatever the representation. Which one is used is invisible to
//! commands (they see the API below, which hands out byte slices) and to
//! clients (`OBJECT ENCODING` follows Redis's listpack rules, not this).
//!
//! Field expiration (Redis 7.4's `HEXPIRE` family): a hash whose fields
//! are given a deadline moves, once and for good, to a third form,
//! [`HashValue::Ttl`], where each field carries its own optional deadline
//! beside its value ([`TtlField`]). The packed and map forms never hold a
//! deadline, so a hash without field TTLs (a lock) keeps its layout, size
//! and speed: the third variant is one more boxed arm, and the enum's size
//! does not change. A field whose deadline passed stays stored until a
//! command or the active expiry deletes it (as in Redis, `HLEN` counts it);
//! the readers that must skip it take the time ([`HashValue::live`]). The
//! database registers the key by its earliest field deadline
//! ([`TtlHash::registered`], `db::Db`'s field-expiry index).

use std::ops::Range;

use bytes::Bytes;

use super::Map;

/// Fields past which a hash moves to the index map (never back). Measured,
/// not Redis's `hash-max-listpack-entries` (128, which decides `OBJECT
/// ENCODING` alone): at 16 fields a lookup is at most ~1.3x the index map's
/// (a few nanoseconds), and writes, `HINCRBY` and walks are faster.
pub const SMALL_MAX: usize = 16;

/// The longest field or value a packed hash holds (its length is one byte);
/// a longer one moves the hash to the index map.
pub const PACKED_ELEM_MAX: usize = u8::MAX as usize;

/// A hash value (see the module docs).
#[derive(Debug, Clone)]
pub enum HashValue {
    /// Up to [`SMALL_MAX`] pairs of at most [`PACKED_ELEM_MAX`] bytes each.
    Packed(Packed),
    /// Larger hashes.
    Big(Box<Map<Bytes, Bytes>>),
    /// A hash some of whose fields have (or had) a deadline.
    Ttl(Box<TtlHash>),
}

/// A field of a [`TtlHash`]: its value and deadline (unix ms; 0: none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TtlField {
    pub value: Bytes,
    pub expire: u64,
}

/// The pairs of a hash with field deadlines, in insertion order.
#[derive(Debug, Clone, Default)]
pub struct TtlHash {
    map: Map<Bytes, TtlField>,
    /// The deadline the key is registered under in its database's
    /// field-expiry index (0: not registered). Never later than the
    /// earliest field deadline while one exists; kept by `db`.
    pub registered: u64,
}

impl TtlHash {
    /// The earliest field deadline.
    pub fn min_expire(&self) -> Option<u64> {
        self.map.values().map(|f| f.expire).filter(|&e| e != 0).min()
    }

    /// The fields whose deadline is `<= now`, in order.
    pub fn expired(&self, now: u64) -> Vec<Bytes> {
        self.map.iter().filter(|(_, f)| f.expire != 0 && f.expire <= now).map(|(k, _)| k.clone()).collect()
    }

    /// The fields with a deadline.
    pub fn volatile(&self) -> usize {
        self.map.values().filter(|f| f.expire != 0).count()
    }
}

/// Up to [`SMALL_MAX`] pairs in one allocation (none while empty), the
/// lengths first, then the bytes:
///
/// ```text
/// [flen: u8; n] [vlen: u8; n] [field 0][value 0][field 1][value 1]…
/// ```
///
/// With the lengths side by side, a lookup runs down them adding up
/// offsets and touches the bytes only of a field of the right length
/// (its last byte first), instead of hopping from pair to pair through
/// lengths stored between them.
#[derive(Debug, Clone, Default)]
pub struct Packed {
    n: Count,
    buf: Box<[u8]>,
}

/// A packed hash's number of pairs, 0 to [`SMALL_MAX`]: a byte whose other
/// values are invalid, so that [`HashValue`]'s other forms fit in them and
/// the enum stays the size of a [`Packed`] (24 bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(u8)]
enum Count {
    #[default]
    N0,
    N1,
    N2,
    N3,
    N4,
    N5,
    N6,
    N7,
    N8,
    N9,
    N10,
    N11,
    N12,
    N13,
    N14,
    N15,
    N16,
}

impl Count {
    const ALL: [Count; SMALL_MAX + 1] = [
        Count::N0,
        Count::N1,
        Count::N2,
        Count::N3,
        Count::N4,
        Count::N5,
        Count::N6,
        Count::N7,
        Count::N8,
        Count::N9,
        Count::N10,
        Count::N11,
        Count::N12,
        Count::N13,
        Count::N14,
        Count::N15,
        Count::N16,
    ];

    #[inline]
    fn new(n: usize) -> Count {
        Count::ALL[n]
    }
}

impl From<Count> for usize {
    #[inline]
    fn from(n: Count) -> usize {
        n as usize
    }
}

/// `n` pairs of a packed buffer: its field lengths, value lengths and bytes.
#[inline]
fn sections(n: usize, buf: &[u8]) -> (&[u8], &[u8], &[u8]) {
    let (flens, rest) = buf.split_at(n);
    let (vlens, data) = rest.split_at(n);
    (flens, vlens, data)
}

impl Packed {
    /// Index of `field` and where its value lies in `buf`. A pair whose
    /// field differs in length or in its last byte (where `f1`/`f2` or
    /// `<uuid>:1`/`<uuid>:2` differ) is passed without a full comparison.
    #[inline]
    fn find(&self, field: &[u8]) -> Option<(usize, Range<usize>)> {
        let n = usize::from(self.n);
        let b = &self.buf[..];
        let want = field.len();
        let mut at = 2 * n;
        for i in 0..n {
            let (f, v) = (usize::from(b[i]), usize::from(b[n + i]));
            if f == want {
                let here = &b[at..at + f];
                if here.last() == field.last() && here == field {
                    return Some((i, at + f..at + f + v));
                }
            }
            at += f + v;
        }
        None
    }

    /// Pair `i` (< n).
    fn pair(&self, i: usize) -> (&[u8], &[u8]) {
        let n = usize::from(self.n);
        let (flens, vlens, data) = sections(n, &self.buf);
        let at: usize = flens[..i].iter().chain(&vlens[..i]).map(|&l| usize::from(l)).sum();
        let (f, v) = (usize::from(flens[i]), usize::from(vlens[i]));
        (&data[at..at + f], &data[at + f..at + f + v])
    }

    fn iter(&self) -> PackedIter<'_> {
        let (flens, vlens, data) = sections(usize::from(self.n), &self.buf);
        PackedIter { flens, vlens, data }
    }

    /// This buffer without pair `i`, whose value lies at `at`.
    fn without(&self, i: usize, at: Range<usize>) -> Packed {
        let n = usize::from(self.n);
        let b = &self.buf;
        let start = at.start - usize::from(b[i]);
        // flens before i; flens after i and vlens before i; vlens after i
        // and the bytes before the pair; the bytes after it.
        Packed::concat(&[&b[..i], &b[i + 1..n + i], &b[n + i + 1..start], &b[at.end..]], n - 1)
    }

    /// A buffer of `n` pairs made of `parts` (pieces of the old buffer and
    /// new bytes) end to end, sized exactly.
    fn concat(parts: &[&[u8]], n: usize) -> Packed {
        let len = parts.iter().map(|p| p.len()).sum();
        let mut b = Vec::with_capacity(len);
        for p in parts {
            b.extend_from_slice(p);
        }
        Packed { n: Count::new(n), buf: b.into_boxed_slice() }
    }
}

/// Fits a packed hash.
fn fits(field: &[u8], value: &[u8]) -> bool {
    field.len() <= PACKED_ELEM_MAX && value.len() <= PACKED_ELEM_MAX
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Packed(Packed::default())
    }
}

impl PartialEq for HashValue {
    /// Same pairs in the same order.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl HashValue {
    /// Number of fields (those past their deadline included).
    pub fn len(&self) -> usize {
        match self {
            HashValue::Packed(p) => usize::from(p.n),
            HashValue::Big(m) => m.len(),
            HashValue::Ttl(t) => t.map.len(),
        }
    }

    /// No fields.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `field`.
    pub fn get(&self, field: impl AsRef<[u8]>) -> Option<&[u8]> {
        let field = field.as_ref();
        match self {
            HashValue::Packed(p) => p.find(field).map(|(_, at)| &p.buf[at]),
            HashValue::Big(m) => m.get(field).map(|v| &v[..]),
            HashValue::Ttl(t) => t.map.get(field).map(|f| &f.value[..]),
        }
    }

    /// Whether `field` is there.
    pub fn contains_key(&self, field: impl AsRef<[u8]>) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field` to `value` (an existing field keeps its position and
    /// its deadline); whether the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let p = match self {
            HashValue::Packed(p) => p,
            HashValue::Ttl(t) => {
                return match t.map.get_mut(field) {
                    Some(f) => {
                        f.value = Bytes::copy_from_slice(value);
                        false
                    }
                    None => {
                        let f = TtlField { value: Bytes::copy_from_slice(value), expire: 0 };
                        t.map.insert(Bytes::copy_from_slice(field), f);
                        true
                    }
                };
            }
            HashValue::Big(m) => {
                return match m.get_mut(field) {
                    Some(v) => {
                        *v = Bytes::copy_from_slice(value);
                        false
                    }
                    None => {
                        m.insert(Bytes::copy_from_slice(field), Bytes::copy_from_slice(value));
                        true
                    }
                };
            }
        };
        if fits(field, value) {
            match p.find(field) {
                Some((_, at)) if at.len() == value.len() => {
                    p.buf[at].copy_from_slice(value);
                    return false;
                }
                Some((i, at)) => {
                    // vlens[i] and the value change.
                    let n = usize::from(p.n);
                    let b = &p.buf;
                    *p = Packed::concat(
                        &[&b[..n + i], &[value.len() as u8], &b[n + i + 1..at.start], value, &b[at.end..]],
                        n,
                    );
                    return false;
                }
                None if p.n == Count::N0 => {
                    // A lock's hash, created by its first field.
                    let (f, v) = (field.len() as u8, value.len() as u8);
                    *p = Packed::concat(&[&[f, v], field, value], 1);
                    return true;
                }
                None if usize::from(p.n) < SMALL_MAX => {
                    let n = usize::from(p.n);
                    let (flens, vlens, data) = sections(n, &p.buf);
                    let parts: [&[u8]; 7] =
                        [flens, &[field.len() as u8], vlens, &[value.len() as u8], data, field, value];
                    *p = Packed::concat(&parts, n + 1);
                    return true;
                }
                None => {}
            }
        }
        // Too many fields or too long an element: to the index map.
        self.to_big();
        self.insert(field, value)
    }

    /// Removes `field`, moving the last pair into its place; whether it was there.
    pub fn swap_remove(&mut self, field: impl AsRef<[u8]>) -> bool {
        let field = field.as_ref();
        match self {
            HashValue::Packed(p) => {
                let Some((i, at)) = p.find(field) else { return false };
                let n = usize::from(p.n);
                if i + 1 == n {
                    *p = p.without(i, at);
                } else {
                    // The last pair takes the removed one's place.
                    let b = &p.buf;
                    let (lf, lv) = (b[n - 1], b[2 * n - 1]);
                    let last = b.len() - usize::from(lf) - usize::from(lv);
                    let start = at.start - usize::from(b[i]);
                    let parts: [&[u8]; 9] = [
                        &b[..i],
                        &[lf],
                        &b[i + 1..n - 1],
                        &b[n..n + i],
                        &[lv],
                        &b[n + i + 1..2 * n - 1],
                        &b[2 * n..start],
                        &b[last..],
                        &b[at.end..last],
                    ];
                    *p = Packed::concat(&parts, n - 1);
                }
                true
            }
            HashValue::Big(m) => m.swap_remove(field).is_some(),
            HashValue::Ttl(t) => t.map.swap_remove(field).is_some(),
        }
    }

    /// Removes `field`, keeping the order of the others; whether it was there.
    pub fn shift_remove(&mut self, field: impl AsRef<[u8]>) -> bool {
        let field = field.as_ref();
        match self {
            HashValue::Packed(p) => {
                let Some((i, at)) = p.find(field) else { return false };
                *p = p.without(i, at);
                true
            }
            HashValue::Big(m) => m.shift_remove(field).is_some(),
            HashValue::Ttl(t) => t.map.shift_remove(field).is_some(),
        }
    }

    /// Pair `i` in order.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match self {
            HashValue::Packed(p) => (i < usize::from(p.n)).then(|| p.pair(i)),
            HashValue::Big(m) => m.get_index(i).map(|(k, v)| (&k[..], &v[..])),
            HashValue::Ttl(t) => t.map.get_index(i).map(|(k, f)| (&k[..], &f.value[..])),
        }
    }

    /// The pairs in order (fields past their deadline included).
    pub fn iter(&self) -> Iter<'_> {
        match self {
            HashValue::Packed(p) => Iter::Packed(p.iter()),
            HashValue::Big(m) => Iter::Big(m.iter()),
            HashValue::Ttl(t) => Iter::Ttl(t.map.iter()),
        }
    }

    /// True while in the packed form (tests, benches).
    pub fn is_packed(&self) -> bool {
        matches!(self, HashValue::Packed(_))
    }

    /// Moves a packed hash to the index map (benches; a write past the
    /// packed form's limits moves it by itself).
    pub fn to_big(&mut self) {
        if let HashValue::Packed(p) = self {
            let mut m: Map<Bytes, Bytes> = Map::with_capacity_and_hasher(usize::from(p.n), Default::default());
            m.extend(p.iter().map(|(f, v)| (Bytes::copy_from_slice(f), Bytes::copy_from_slice(v))));
            *self = HashValue::Big(Box::new(m));
        }
    }

    /// The form with field deadlines, if this is it.
    #[inline]
    pub fn ttls(&self) -> Option<&TtlHash> {
        match self {
            HashValue::Ttl(t) => Some(t),
            _ => None,
        }
    }

    /// [`ttls`](Self::ttls), mutable.
    #[inline]
    pub fn ttls_mut(&mut self) -> Option<&mut TtlHash> {
        match self {
            HashValue::Ttl(t) => Some(t),
            _ => None,
        }
    }

    /// Moves to the form with field deadlines (same pairs, same order).
    pub fn make_ttl(&mut self) -> &mut TtlHash {
        if !matches!(self, HashValue::Ttl(_)) {
            let mut map: Map<Bytes, TtlField> = Map::with_capacity_and_hasher(self.len(), Default::default());
            map.extend(
                self.iter().map(|(k, v)| {
                    (Bytes::copy_from_slice(k), TtlField { value: Bytes::copy_from_slice(v), expire: 0 })
                }),
            );
            *self = HashValue::Ttl(Box::new(TtlHash { map, registered: 0 }));
        }
        self.ttls_mut().expect("just made")
    }

    /// `None`: no such field; `Some(0)`: no deadline; else its deadline.
    pub fn field_expire(&self, field: &[u8]) -> Option<u64> {
        match self {
            HashValue::Ttl(t) => t.map.get(field).map(|f| f.expire),
            _ => self.get(field).map(|_| 0),
        }
    }

    /// Sets (`at` > 0) or removes (`at` == 0) the deadline of an existing
    /// field; false if there is no such field. Setting one moves the hash
    /// to the form with deadlines.
    ///
    /// `ordered` (the hash is a `listpackex` for Redis): the field moves
    /// where Redis's listpack keeps it, fields with a deadline first by
    /// deadline (a field goes before those with the same one), then those
    /// without, a field that loses its deadline going last.
    pub fn set_field_expire(&mut self, field: &[u8], at: u64, ordered: bool) -> bool {
        if at == 0 && !matches!(self, HashValue::Ttl(_)) {
            return self.contains_key(field);
        }
        if !self.contains_key(field) {
            return false;
        }
        let t = self.make_ttl();
        let i = t.map.get_index_of(field).expect("present");
        let had = t.map[i].expire;
        t.map[i].expire = at;
        if ordered && (at != 0 || had != 0) {
            let (k, f) = t.map.shift_remove_index(i).expect("present");
            let to = if at == 0 {
                t.map.len()
            } else {
                t.map.values().position(|g| g.expire == 0 || g.expire >= at).unwrap_or(t.map.len())
            };
            t.map.shift_insert(to, k, f);
        }
        true
    }

    /// Whether `field` exists and its deadline is `<= now`.
    #[inline]
    pub fn is_expired(&self, field: &[u8], now: u64) -> bool {
        match self {
            HashValue::Ttl(t) => t.map.get(field).is_some_and(|f| f.expire != 0 && f.expire <= now),
            _ => false,
        }
    }

    /// The pairs whose deadline has not passed at `now`, in order.
    pub fn live(&self, now: u64) -> Vec<(&[u8], &[u8])> {
        match self {
            HashValue::Ttl(t) => t
                .map
                .iter()
                .filter(|(_, f)| f.expire == 0 || f.expire > now)
                .map(|(k, f)| (&k[..], &f.value[..]))
                .collect(),
            _ => self.iter().collect(),
        }
    }

    /// The pairs with their deadlines (0: none), in order.
    pub fn iter_expire(&self) -> impl Iterator<Item = (&[u8], &[u8], u64)> + '_ {
        let ttl = self.ttls();
        self.iter()
            .enumerate()
            .map(move |(i, (k, v))| (k, v, ttl.map_or(0, |t| t.map.get_index(i).map_or(0, |(_, f)| f.expire))))
    }

    /// The fields in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &[u8]> + ExactSizeIterator {
        self.iter().map(|(k, _)| k)
    }

    /// The values in order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &[u8]> + ExactSizeIterator {
        self.iter().map(|(_, v)| v)
    }
}

/// The pairs of a packed hash: the lengths of those that remain and their
/// bytes.
pub struct PackedIter<'a> {
    flens: &'a [u8],
    vlens: &'a [u8],
    data: &'a [u8],
}

impl<'a> Iterator for PackedIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (&f, flens) = self.flens.split_first()?;
        let (&v, vlens) = self.vlens.split_first()?;
        let (field, rest) = self.data.split_at(usize::from(f));
        let (value, rest) = rest.split_at(usize::from(v));
        (self.flens, self.vlens, self.data) = (flens, vlens, rest);
        Some((field, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.flens.len(), Some(self.flens.len()))
    }
}

impl DoubleEndedIterator for PackedIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let (&f, flens) = self.flens.split_last()?;
        let (&v, vlens) = self.vlens.split_last()?;
        let (rest, value) = self.data.split_at(self.data.len() - usize::from(v));
        let (rest, field) = rest.split_at(rest.len() - usize::from(f));
        (self.flens, self.vlens, self.data) = (flens, vlens, rest);
        Some((field, value))
    }
}

/// The pairs of a [`HashValue`], in order.
pub enum Iter<'a> {
    Packed(PackedIter<'a>),
    Big(indexmap::map::Iter<'a, Bytes, Bytes>),
    Ttl(indexmap::map::Iter<'a, Bytes, TtlField>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Packed(i) => i.next(),
            Iter::Big(i) => i.next().map(|(k, v)| (&k[..], &v[..])),
            Iter::Ttl(i) => i.next().map(|(k, f)| (&k[..], &f.value[..])),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Packed(i) => i.size_hint(),
            Iter::Big(i) => i.size_hint(),
            Iter::Ttl(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Packed(i) => i.next_back(),
            Iter::Big(i) => i.next_back().map(|(k, v)| (&k[..], &v[..])),
            Iter::Ttl(i) => i.next_back().map(|(k, f)| (&k[..], &f.value[..])),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a HashValue {
    type Item = (&'a [u8], &'a [u8]);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<F: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(F, V)> for HashValue {
    fn from_iter<I: IntoIterator<Item = (F, V)>>(iter: I) -> Self {
        let mut h = HashValue::default();
        h.extend(iter);
        h
    }
}

impl<F: AsRef<[u8]>, V: AsRef<[u8]>> Extend<(F, V)> for HashValue {
    fn extend<I: IntoIterator<Item = (F, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k.as_ref(), v.as_ref());
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
    /// pairs in the same order, across the move from packed to big (by
    /// count, and by an element too long to pack).
    #[test]
    fn behaves_as_an_index_map_across_the_move() {
        for long_every in [0u64, 97] {
            let mut h = HashValue::default();
            let mut m: Map<Bytes, Bytes> = Map::default();
            let mut seed = 7u64 + long_every;
            let mut moved = false;
            for step in 0..4000u64 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let f = b(&format!("f{}", (seed >> 33) % (SMALL_MAX as u64 + 6)));
                let v = if long_every > 0 && step % long_every == 0 {
                    b(&"x".repeat(PACKED_ELEM_MAX + 1))
                } else {
                    b(&"v".repeat((step % 5) as usize))
                };
                match (seed >> 20) % 4 {
                    0 | 1 => assert_eq!(h.insert(&f, &v), m.insert(f, v).is_none()),
                    2 => assert_eq!(h.swap_remove(&f), m.swap_remove(&f[..]).is_some()),
                    _ => assert_eq!(h.shift_remove(&f), m.shift_remove(&f[..]).is_some()),
                }
                moved |= matches!(h, HashValue::Big(_));
                assert_eq!(h.len(), m.len());
                assert!(h.iter().eq(m.iter().map(|(k, v)| (&k[..], &v[..]))), "step {step}");
                assert!(h.iter().rev().eq(m.iter().rev().map(|(k, v)| (&k[..], &v[..]))), "step {step}");
                for i in 0..=m.len() {
                    assert_eq!(h.get_index(i), m.get_index(i).map(|(k, v)| (&k[..], &v[..])));
                }
                assert_eq!(h.get(b"f3"), m.get(&b"f3"[..]).map(|v| &v[..]));
            }
            assert!(moved, "grew past the packed form at some point");
        }
    }

    /// A long field moves a hash of one pair to the map.
    #[test]
    fn a_long_element_moves_to_the_map() {
        let mut h = HashValue::default();
        assert!(h.insert(b"a", b"1"));
        let long = vec![b'f'; PACKED_ELEM_MAX];
        assert!(h.insert(&long, b"2"), "255 bytes still pack");
        assert!(matches!(h, HashValue::Packed(_)));
        let longer = vec![b'f'; PACKED_ELEM_MAX + 1];
        assert!(!h.insert(b"a", &longer));
        assert!(matches!(h, HashValue::Big(_)));
        assert!(h.keys().eq([&b"a"[..], &long[..]]));
        assert_eq!(h.get(b"a"), Some(&longer[..]));
    }

    /// A Redisson lock's hash: one allocation of exactly the pair's bytes,
    /// and a count rewritten in place.
    #[test]
    fn one_field_is_one_exact_allocation() {
        let mut h = HashValue::default();
        assert!(h.insert(b"owner:1", b"1"));
        let HashValue::Packed(p) = &h else { panic!("packed") };
        assert_eq!(p.buf.len(), 2 + 7 + 1);
        let before = p.buf.as_ptr();
        assert!(!h.insert(b"owner:1", b"2"));
        let HashValue::Packed(p) = &h else { panic!("packed") };
        assert_eq!(p.buf.as_ptr(), before, "same length: overwritten in place");
        assert_eq!(h.get("owner:1"), Some(&b"2"[..]));
        assert!(!h.insert(b"owner:1", b"10"));
        assert_eq!(h.get("owner:1"), Some(&b"10"[..]));
        assert!(h.contains_key(b"owner:1"));
        assert!(!h.contains_key(b"owner"));
        assert_eq!(h.keys().count(), 1);
        assert!(h.shift_remove(b"owner:1"));
        assert!(h.is_empty());
        assert!(!h.swap_remove(b"owner:1"));
    }

    /// The enum keeps its size with the third form, and a field deadline
    /// moves a hash there keeping order; `HSET`-style inserts keep the
    /// deadline, removal takes it.
    #[test]
    fn field_deadlines_live_in_the_ttl_form() {
        assert_eq!(std::mem::size_of::<HashValue>(), 24);
        let mut h: HashValue = [("a", "1"), ("b", "2"), ("c", "3")].into_iter().collect();
        assert!(h.ttls().is_none());
        assert_eq!(h.field_expire(b"a"), Some(0));
        assert!(h.set_field_expire(b"a", 0, false), "no deadline to remove: stays packed");
        assert!(h.ttls().is_none());
        assert!(h.set_field_expire(b"b", 100, false));
        assert!(h.keys().eq([&b"a"[..], b"b", b"c"]));
        assert_eq!(h.field_expire(b"b"), Some(100));
        assert!(!h.insert(b"b", b"22"));
        assert_eq!(h.field_expire(b"b"), Some(100));
        assert!(h.is_expired(b"b", 100) && !h.is_expired(b"b", 99) && !h.is_expired(b"a", 1000));
        assert_eq!(h.live(100), vec![(&b"a"[..], &b"1"[..]), (&b"c"[..], &b"3"[..])]);
        assert_eq!(h.ttls().map(|t| (t.min_expire(), t.expired(100))), Some((Some(100), vec![Bytes::from("b")])));
        assert!(h.shift_remove(b"b"));
        assert_eq!(h.ttls().and_then(|t| t.min_expire()), None);
        assert_eq!(h.len(), 2);
    }

    /// In a `listpackex` the fields with a deadline come first, by
    /// deadline, a field going before those with the same one; the others
    /// follow, a field that loses its deadline going last (redis 8.2.3).
    #[test]
    fn listpackex_order() {
        let mut h: HashValue = [("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")].into_iter().collect();
        let keys = |h: &HashValue| h.keys().map(|k| String::from_utf8_lossy(k).into_owned()).collect::<Vec<_>>();
        for f in [b"c", b"b", b"a"] {
            h.set_field_expire(f, 40, true);
        }
        assert_eq!(keys(&h), ["a", "b", "c", "d"]);
        h.set_field_expire(b"d", 40, true);
        assert_eq!(keys(&h), ["d", "a", "b", "c"]);
        h.set_field_expire(b"b", 30, true);
        assert_eq!(keys(&h), ["b", "d", "a", "c"]);
        h.set_field_expire(b"b", 40, true);
        assert_eq!(keys(&h), ["b", "d", "a", "c"]);
        h.set_field_expire(b"c", 40, true);
        assert_eq!(keys(&h), ["c", "b", "d", "a"]);
        h.set_field_expire(b"c", 0, true);
        assert_eq!(keys(&h), ["b", "d", "a", "c"]);
        h.insert(b"e", b"5");
        h.set_field_expire(b"e", 50, true);
        assert_eq!(keys(&h), ["b", "d", "a", "e", "c"]);
    }

    /// Empty fields and values pack too.
    #[test]
    fn empty_elements() {
        let h: HashValue = [("", ""), ("a", ""), ("", "b")].into_iter().collect();
        assert_eq!(h.len(), 2);
        assert!(h.iter().eq([(&b""[..], &b"b"[..]), (&b"a"[..], &b""[..])]));
    }
}
