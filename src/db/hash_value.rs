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
//! [`HashValue::Ttl`]: its pairs stay in one of the two other forms (packed
//! while small) and a vector beside them holds each field's deadline by
//! position ([`TtlHash`]), as Redis 7.4's listpack keeps the deadline beside
//! the field. The packed and map forms never hold a deadline, so a hash
//! without field TTLs (a lock) keeps its layout, size and speed: the third
//! variant is one more boxed arm, and the enum's size does not change. A field whose deadline passed stays stored until a
//! command or the active expiry deletes it (as in Redis, `HLEN` counts it);
//! the readers that must skip it take the time ([`HashValue::live`]). The
//! database registers the key by its earliest field deadline
//! ([`TtlHash::registered`], `db::Db`'s field-expiry index).

use std::ops::Range;

use bytes::Bytes;

use super::thin::ThinBuf;
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
    /// Up to `SMALL_MAX` (16) pairs of at most `PACKED_ELEM_MAX` (255) bytes each.
    Packed(Packed),
    /// Larger hashes.
    Big(Box<Map<Bytes, Bytes>>),
    /// A hash some of whose fields have (or had) a deadline.
    Ttl(Box<TtlHash>),
}

/// The pairs of a hash with field deadlines, in insertion order: the
/// pairs in a hash of the two other forms (packed while small, as a hash
/// without deadlines is), and their deadlines beside them by position, as
/// Redis 7.4's listpack keeps a field's deadline beside it. A field TTL on a
/// small hash costs its eight bytes and this box, not a move to a map.
#[derive(Debug, Clone, Default)]
pub struct TtlHash {
    /// Never [`HashValue::Ttl`].
    pairs: HashValue,
    /// **Invariant:** `expires[i]` is the deadline of pair `i` of `pairs`
    /// (unix ms; 0: none), and there are as many as pairs.
    expires: Vec<u64>,
    /// The deadline the key is registered under in its database's
    /// field-expiry index (0: not registered). Never later than the
    /// earliest field deadline while one exists; kept by `db`.
    pub registered: u64,
}

impl TtlHash {
    /// The earliest field deadline.
    pub fn min_expire(&self) -> Option<u64> {
        self.expires.iter().copied().filter(|&e| e != 0).min()
    }

    /// The fields whose deadline is `<= now`, in order.
    pub fn expired(&self, now: u64) -> Vec<Bytes> {
        self.pairs
            .keys()
            .zip(self.expires.iter())
            .filter(|&(_, &e)| e != 0 && e <= now)
            .map(|(k, _)| Bytes::copy_from_slice(k))
            .collect()
    }

    /// The fields with a deadline.
    pub fn volatile(&self) -> usize {
        self.expires.iter().filter(|&&e| e != 0).count()
    }

    /// The deadline of `field`'s position, if it is there.
    fn expire_of(&self, field: &[u8]) -> Option<u64> {
        self.pairs.index_of(field).map(|i| self.expires[i])
    }

    /// Changes the deadlines; while the pairs are packed they stay one
    /// exact allocation, as the pairs' buffer does (a large hash's grow as
    /// a vector does, so that adding a field is not a copy of them all).
    fn edit_expires(&mut self, change: impl FnOnce(&mut Vec<u64>)) {
        change(&mut self.expires);
        if self.pairs.is_packed() {
            self.expires.shrink_to_fit();
        }
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
    /// Behind a thin pointer: with `n` in the same word the packed form is
    /// 16 bytes, and so is the enum, its other forms in `n`'s spare values.
    buf: ThinBuf,
}

/// A packed hash's number of pairs, 0 to [`SMALL_MAX`]: a byte whose other
/// values are invalid, so that [`HashValue`]'s other forms fit in them and
/// the enum stays the size of a [`Packed`] (16 bytes).
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

    /// This buffer with pair `from` moved to position `to`.
    fn moved(&self, from: usize, to: usize) -> Packed {
        let pairs: Vec<(&[u8], &[u8])> = self.iter().collect();
        let mut order: Vec<usize> = (0..pairs.len()).collect();
        let x = order.remove(from);
        order.insert(to, x);
        let mut b = Vec::with_capacity(self.buf.len());
        b.extend(order.iter().map(|&i| pairs[i].0.len() as u8));
        b.extend(order.iter().map(|&i| pairs[i].1.len() as u8));
        for &i in &order {
            b.extend_from_slice(pairs[i].0);
            b.extend_from_slice(pairs[i].1);
        }
        Packed { n: self.n, buf: b.into() }
    }

    /// A buffer of `n` pairs made of `parts` (pieces of the old buffer and
    /// new bytes) end to end, sized exactly.
    fn concat(parts: &[&[u8]], n: usize) -> Packed {
        Packed { n: Count::new(n), buf: ThinBuf::concat(parts) }
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
            HashValue::Ttl(t) => t.pairs.len(),
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
            HashValue::Ttl(t) => t.pairs.get(field),
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
                let new = t.pairs.insert(field, value);
                if new {
                    t.edit_expires(|e| e.push(0));
                }
                return new;
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
            HashValue::Ttl(t) => {
                let Some(i) = t.pairs.index_of(field) else { return false };
                t.pairs.swap_remove(field);
                t.edit_expires(|e| {
                    e.swap_remove(i);
                });
                true
            }
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
            HashValue::Ttl(t) => {
                let Some(i) = t.pairs.index_of(field) else { return false };
                t.pairs.shift_remove(field);
                t.edit_expires(|e| {
                    e.remove(i);
                });
                true
            }
        }
    }

    /// Pair `i` in order.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match self {
            HashValue::Packed(p) => (i < usize::from(p.n)).then(|| p.pair(i)),
            HashValue::Big(m) => m.get_index(i).map(|(k, v)| (&k[..], &v[..])),
            HashValue::Ttl(t) => t.pairs.get_index(i),
        }
    }

    /// The pairs in order (fields past their deadline included).
    pub fn iter(&self) -> Iter<'_> {
        match self {
            HashValue::Packed(p) => Iter::Packed(p.iter()),
            HashValue::Big(m) => Iter::Big(m.iter()),
            HashValue::Ttl(t) => t.pairs.iter(),
        }
    }

    /// Position of `field`.
    pub fn index_of(&self, field: &[u8]) -> Option<usize> {
        match self {
            HashValue::Packed(p) => p.find(field).map(|(i, _)| i),
            HashValue::Big(m) => m.get_index_of(field),
            HashValue::Ttl(t) => t.pairs.index_of(field),
        }
    }

    /// Moves pair `from` to position `to`, shifting those between.
    fn move_index(&mut self, from: usize, to: usize) {
        match self {
            HashValue::Packed(p) => *p = p.moved(from, to),
            HashValue::Big(m) => m.move_index(from, to),
            HashValue::Ttl(t) => {
                t.pairs.move_index(from, to);
                t.edit_expires(|e| {
                    let x = e.remove(from);
                    e.insert(to, x);
                });
            }
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
            let pairs = std::mem::take(self);
            let expires = vec![0; pairs.len()];
            *self = HashValue::Ttl(Box::new(TtlHash { pairs, expires, registered: 0 }));
        }
        self.ttls_mut().expect("just made")
    }

    /// `None`: no such field; `Some(0)`: no deadline; else its deadline.
    pub fn field_expire(&self, field: &[u8]) -> Option<u64> {
        match self {
            HashValue::Ttl(t) => t.expire_of(field),
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
        let i = t.pairs.index_of(field).expect("present");
        let had = std::mem::replace(&mut t.expires[i], at);
        if ordered && (at != 0 || had != 0) {
            // Where it goes among the others (positions without it).
            let others = || t.expires.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &e)| e);
            let last = t.expires.len() - 1;
            let to = if at == 0 { last } else { others().position(|e| e == 0 || e >= at).unwrap_or(last) };
            if to != i {
                self.move_index(i, to);
            }
        }
        true
    }

    /// Whether `field` exists and its deadline is `<= now`.
    #[inline]
    pub fn is_expired(&self, field: &[u8], now: u64) -> bool {
        match self {
            HashValue::Ttl(t) => t.expire_of(field).is_some_and(|e| e != 0 && e <= now),
            _ => false,
        }
    }

    /// The pairs whose deadline has not passed at `now`, in order.
    pub fn live(&self, now: u64) -> Vec<(&[u8], &[u8])> {
        match self {
            HashValue::Ttl(t) => {
                t.pairs.iter().zip(t.expires.iter()).filter(|&(_, &e)| e == 0 || e > now).map(|(p, _)| p).collect()
            }
            _ => self.iter().collect(),
        }
    }

    /// The pairs with their deadlines (0: none), in order.
    pub fn iter_expire(&self) -> impl Iterator<Item = (&[u8], &[u8], u64)> + '_ {
        let expires = self.ttls().map_or(&[][..], |t| &t.expires[..]);
        self.iter().enumerate().map(move |(i, (k, v))| (k, v, expires.get(i).copied().unwrap_or(0)))
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
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Packed(i) => i.next(),
            Iter::Big(i) => i.next().map(|(k, v)| (&k[..], &v[..])),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Packed(i) => i.size_hint(),
            Iter::Big(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Packed(i) => i.next_back(),
            Iter::Big(i) => i.next_back().map(|(k, v)| (&k[..], &v[..])),
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
        assert_eq!(std::mem::size_of::<HashValue>(), 16);
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

    /// A hash with field deadlines against a model (an index map of value
    /// and deadline, moved as a listpackex moves a field): the same pairs,
    /// deadlines and order after every step, across the packed form's
    /// limit, with deadlines set, moved and removed.
    #[test]
    fn ttl_form_behaves_as_its_model() {
        let mut h = HashValue::default();
        let mut m: Map<Bytes, (Bytes, u64)> = Map::default();
        let mut seed = 11u64;
        let mut was_big = false;
        for step in 0..6000u64 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let f = b(&format!("f{}", (seed >> 33) % (SMALL_MAX as u64 + 6)));
            let v = b(&"v".repeat((step % 4) as usize));
            let at = [0, 0, 5, 7, 7, 9][((seed >> 12) % 6) as usize];
            let ordered = (seed >> 40).is_multiple_of(2);
            match (seed >> 20) % 6 {
                0 | 1 => {
                    let new = !m.contains_key(&f[..]);
                    match m.get_mut(&f[..]) {
                        Some(e) => e.0 = v.clone(),
                        None => {
                            m.insert(f.clone(), (v.clone(), 0));
                        }
                    }
                    assert_eq!(h.insert(&f, &v), new);
                }
                2 => assert_eq!(h.swap_remove(&f), m.swap_remove(&f[..]).is_some()),
                3 => assert_eq!(h.shift_remove(&f), m.shift_remove(&f[..]).is_some()),
                _ => {
                    let present = m.contains_key(&f[..]);
                    if present && (h.ttls().is_some() || at != 0) {
                        let i = m.get_index_of(&f[..]).expect("present");
                        let had = std::mem::replace(&mut m[i].1, at);
                        if ordered && (at != 0 || had != 0) {
                            let (k, e) = m.shift_remove_index(i).expect("present");
                            let to = if at == 0 {
                                m.len()
                            } else {
                                m.values().position(|g| g.1 == 0 || g.1 >= at).unwrap_or(m.len())
                            };
                            m.shift_insert(to, k, e);
                        }
                    }
                    assert_eq!(h.set_field_expire(&f, at, ordered), present);
                }
            }
            was_big |= matches!(&h, HashValue::Ttl(t) if !t.pairs.is_packed());
            assert!(
                h.iter_expire().eq(m.iter().map(|(k, (v, e))| (&k[..], &v[..], *e))),
                "step {step}: {:?}",
                h.iter_expire().collect::<Vec<_>>()
            );
            if let Some(t) = h.ttls() {
                assert_eq!(t.expires.len(), t.pairs.len());
                assert_eq!(t.min_expire(), m.values().map(|e| e.1).filter(|&e| e != 0).min());
                assert_eq!(t.volatile(), m.values().filter(|e| e.1 != 0).count());
                assert!(t
                    .expired(7)
                    .iter()
                    .map(|k| &k[..])
                    .eq(m.iter().filter(|(_, e)| e.1 != 0 && e.1 <= 7).map(|(k, _)| &k[..])));
                assert_eq!(h.live(7).len(), m.values().filter(|e| e.1 == 0 || e.1 > 7).count());
            }
            for (k, (_, e)) in &m {
                assert_eq!(h.field_expire(k), Some(*e));
                assert_eq!(h.is_expired(k, 7), *e != 0 && *e <= 7);
            }
        }
        assert!(h.ttls().is_some() && was_big, "went through the map form with deadlines");
    }

    /// Empty fields and values pack too.
    #[test]
    fn empty_elements() {
        let h: HashValue = [("", ""), ("a", ""), ("", "b")].into_iter().collect();
        assert_eq!(h.len(), 2);
        assert!(h.iter().eq([(&b""[..], &b"b"[..]), (&b"a"[..], &b""[..])]));
    }
}
