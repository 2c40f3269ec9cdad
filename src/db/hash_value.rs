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
//! are given a deadline keeps them, once and for good, beside its pairs.
//! While packed, the deadlines are the buffer's tail, six bytes a field by
//! position and six for the deadline the key is registered under
//! ([`Packed`]), as Redis 7.4's listpack keeps a field's deadline beside
//! the field: a field TTL on a small hash costs its six bytes, not another
//! allocation. Beyond the packed form's limits such a hash is the boxed
//! [`HashValue::Ttl`] (an index map and a vector of deadlines). A hash
//! without field TTLs (a lock) keeps its layout, size and speed: the
//! packed form tests one flag where it must, and the enum's size does not
//! change. A field whose deadline passed stays stored until a command or
//! the active expiry deletes it (as in Redis, `HLEN` counts it); the
//! readers that must skip it take the time ([`HashValue::live`]). The
//! database registers the key by its earliest field deadline
//! ([`HashValue::registered`], `db::Db`'s field-expiry index).

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

/// The latest field deadline a hash holds (unix ms; Redis's
/// `EB_EXPIRE_TIME_MAX`, 2^48 - 1): a packed hash keeps a deadline in six
/// bytes. Commands accept up to 2^46 - 1 (Redis's `HFE_MAX_ABS_TIME_MSEC`);
/// a payload loaded with a later one is refused.
pub const DEADLINE_MAX: u64 = (1 << 48) - 1;

/// Bytes per deadline in a packed hash's tail.
const DL: usize = 6;

/// A deadline from the first [`DL`] bytes of `b` (little-endian).
#[inline]
fn read_deadline(b: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    x[..DL].copy_from_slice(&b[..DL]);
    u64::from_le_bytes(x)
}

/// `at` (at most [`DEADLINE_MAX`]) as a packed deadline.
#[inline]
fn deadline_bytes(at: u64) -> [u8; DL] {
    debug_assert!(at <= DEADLINE_MAX, "a deadline past 2^48 - 1: {at}");
    let b = at.to_le_bytes();
    [b[0], b[1], b[2], b[3], b[4], b[5]]
}

/// A hash value (see the module docs).
#[derive(Debug, Clone)]
pub enum HashValue {
    /// Up to `SMALL_MAX` (16) pairs of at most `PACKED_ELEM_MAX` (255)
    /// bytes each, with or without field deadlines.
    Packed(Packed),
    /// Larger hashes without field deadlines.
    Big(Box<Map<Bytes, Bytes>>),
    /// Larger hashes some of whose fields have (or had) a deadline.
    Ttl(Box<TtlHash>),
}

/// The pairs of a large hash with field deadlines, in insertion order,
/// and their deadlines beside them by position.
#[derive(Debug, Clone, Default)]
pub struct TtlHash {
    /// The pairs.
    pairs: Map<Bytes, Bytes>,
    /// **Invariant:** `expires[i]` is the deadline of pair `i` of `pairs`
    /// (unix ms; 0: none), and there are as many as pairs.
    expires: Vec<u64>,
    /// See [`HashValue::registered`].
    registered: u64,
}

/// Up to [`SMALL_MAX`] pairs in one allocation (none while empty), the
/// lengths first, then the bytes, then (a hash with field deadlines) each
/// pair's deadline (0: none) and the deadline the key is registered under,
/// six bytes each:
///
/// ```text
/// [flen: u8; n] [vlen: u8; n] [field 0][value 0][field 1][value 1]…
///     ttl only: [deadline: u48 LE; n] [registered: u48 LE]
/// ```
///
/// With the lengths side by side, a lookup runs down them adding up
/// offsets and touches the bytes only of a field of the right length
/// (its last byte first), instead of hopping from pair to pair through
/// lengths stored between them. A deadline is read and rewritten in place.
#[derive(Debug, Clone, Default)]
pub struct Packed {
    n: Count,
    /// The buffer ends with the deadlines (for good, once set).
    ttl: bool,
    /// Behind a thin pointer: with `n` and `ttl` in the same word the
    /// packed form is 16 bytes, and so is the enum, its other forms in
    /// `n`'s spare values.
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

/// `n` pairs of a packed buffer without its deadlines: its field lengths,
/// value lengths and bytes.
#[inline]
fn sections(n: usize, buf: &[u8]) -> (&[u8], &[u8], &[u8]) {
    let (flens, rest) = buf.split_at(n);
    let (vlens, data) = rest.split_at(n);
    (flens, vlens, data)
}

impl Packed {
    /// Where the pairs end and the deadlines (if any) begin.
    #[inline]
    fn body_end(&self) -> usize {
        let tail = if self.ttl { DL * (usize::from(self.n) + 1) } else { 0 };
        self.buf.len() - tail
    }

    /// The pairs' part of the buffer and the deadlines' (empty without).
    #[inline]
    fn split(&self) -> (&[u8], &[u8]) {
        self.buf.split_at(self.body_end())
    }

    /// The deadline of pair `i` (< n) of a hash with deadlines.
    #[inline]
    fn deadline(&self, i: usize) -> u64 {
        read_deadline(&self.split().1[DL * i..])
    }

    /// Sets the deadline of pair `i` (< n; `n` itself: the registration)
    /// in place.
    #[inline]
    fn set_deadline(&mut self, i: usize, at: u64) {
        let at_byte = self.body_end() + DL * i;
        self.buf[at_byte..at_byte + DL].copy_from_slice(&deadline_bytes(at));
    }

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
        let (flens, vlens, data) = sections(n, self.split().0);
        let at: usize = flens[..i].iter().chain(&vlens[..i]).map(|&l| usize::from(l)).sum();
        let (f, v) = (usize::from(flens[i]), usize::from(vlens[i]));
        (&data[at..at + f], &data[at + f..at + f + v])
    }

    fn iter(&self) -> PackedIter<'_> {
        let (flens, vlens, data) = sections(usize::from(self.n), self.split().0);
        PackedIter { flens, vlens, data }
    }

    /// This buffer without pair `i`, whose value lies at `at`.
    fn without(&self, i: usize, at: Range<usize>) -> Packed {
        let n = usize::from(self.n);
        let (body, tail) = self.split();
        let start = at.start - usize::from(body[i]);
        // flens before i; flens after i and vlens before i; vlens after i
        // and the bytes before the pair; the bytes after it; the
        // deadlines but i's.
        let pairs = [&body[..i], &body[i + 1..n + i], &body[n + i + 1..start], &body[at.end..]];
        if self.ttl {
            let [a, b, c, d] = pairs;
            Packed::concat(&[a, b, c, d, &tail[..DL * i], &tail[DL * (i + 1)..]], n - 1, true)
        } else {
            Packed::concat(&pairs, n - 1, false)
        }
    }

    /// This buffer with pair `from` moved to position `to`.
    fn moved(&self, from: usize, to: usize) -> Packed {
        let n = usize::from(self.n);
        let pairs: Vec<(&[u8], &[u8])> = self.iter().collect();
        let mut order: Vec<usize> = (0..n).collect();
        let x = order.remove(from);
        order.insert(to, x);
        let mut b = Vec::with_capacity(self.buf.len());
        b.extend(order.iter().map(|&i| pairs[i].0.len() as u8));
        b.extend(order.iter().map(|&i| pairs[i].1.len() as u8));
        for &i in &order {
            b.extend_from_slice(pairs[i].0);
            b.extend_from_slice(pairs[i].1);
        }
        if self.ttl {
            let tail = self.split().1;
            for &i in &order {
                b.extend_from_slice(&tail[DL * i..DL * (i + 1)]);
            }
            b.extend_from_slice(&tail[DL * n..]);
        }
        Packed { n: self.n, ttl: self.ttl, buf: b.into() }
    }

    /// A buffer of `n` pairs made of `parts` (pieces of the old buffer and
    /// new bytes) end to end, sized exactly.
    fn concat(parts: &[&[u8]], n: usize, ttl: bool) -> Packed {
        Packed { n: Count::new(n), ttl, buf: ThinBuf::concat(parts) }
    }
}

/// Sets `field` to `value` in an index map; whether the field is new.
#[inline]
fn map_insert(m: &mut Map<Bytes, Bytes>, field: &[u8], value: &[u8]) -> bool {
    match m.get_mut(field) {
        Some(v) => {
            *v = Bytes::copy_from_slice(value);
            false
        }
        None => {
            m.insert(Bytes::copy_from_slice(field), Bytes::copy_from_slice(value));
            true
        }
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
            HashValue::Ttl(t) => t.pairs.get(field).map(|v| &v[..]),
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
            HashValue::Big(m) => return map_insert(m, field, value),
            HashValue::Ttl(t) => {
                let new = map_insert(&mut t.pairs, field, value);
                if new {
                    t.expires.push(0);
                }
                return new;
            }
        };
        if fits(field, value) {
            match p.find(field) {
                Some((_, at)) if at.len() == value.len() => {
                    p.buf[at].copy_from_slice(value);
                    return false;
                }
                Some((i, at)) => {
                    // vlens[i] and the value change (the deadlines follow).
                    let n = usize::from(p.n);
                    let b = &p.buf;
                    *p = Packed::concat(
                        &[&b[..n + i], &[value.len() as u8], &b[n + i + 1..at.start], value, &b[at.end..]],
                        n,
                        p.ttl,
                    );
                    return false;
                }
                None if p.n == Count::N0 && !p.ttl => {
                    // A lock's hash, created by its first field.
                    let (f, v) = (field.len() as u8, value.len() as u8);
                    *p = Packed::concat(&[&[f, v], field, value], 1, false);
                    return true;
                }
                None if usize::from(p.n) < SMALL_MAX => {
                    let n = usize::from(p.n);
                    let (body, tail) = p.split();
                    let (flens, vlens, data) = sections(n, body);
                    let (fl, vl) = ([field.len() as u8], [value.len() as u8]);
                    *p = if p.ttl {
                        // A new field has no deadline; the registration stays last.
                        let parts =
                            [flens, &fl, vlens, &vl, data, field, value, &tail[..DL * n], &[0; DL], &tail[DL * n..]];
                        Packed::concat(&parts, n + 1, true)
                    } else {
                        Packed::concat(&[flens, &fl, vlens, &vl, data, field, value], n + 1, false)
                    };
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
                    // The last pair (and its deadline) takes the removed one's place.
                    let (b, tail) = p.split();
                    let (lf, lv) = (b[n - 1], b[2 * n - 1]);
                    let last = b.len() - usize::from(lf) - usize::from(lv);
                    let start = at.start - usize::from(b[i]);
                    let pairs: [&[u8]; 9] = [
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
                    *p = if p.ttl {
                        let d = |j: usize, k: usize| &tail[DL * j..DL * k];
                        let deadlines = [d(0, i), d(n - 1, n), d(i + 1, n - 1), d(n, n + 1)];
                        Packed::concat(&[&pairs[..], &deadlines[..]].concat(), n - 1, true)
                    } else {
                        Packed::concat(&pairs, n - 1, false)
                    };
                }
                true
            }
            HashValue::Big(m) => m.swap_remove(field).is_some(),
            HashValue::Ttl(t) => {
                let Some((i, _, _)) = t.pairs.swap_remove_full(field) else { return false };
                t.expires.swap_remove(i);
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
                let Some((i, _, _)) = t.pairs.shift_remove_full(field) else { return false };
                t.expires.remove(i);
                true
            }
        }
    }

    /// Pair `i` in order.
    pub fn get_index(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match self {
            HashValue::Packed(p) => (i < usize::from(p.n)).then(|| p.pair(i)),
            HashValue::Big(m) => m.get_index(i).map(|(k, v)| (&k[..], &v[..])),
            HashValue::Ttl(t) => t.pairs.get_index(i).map(|(k, v)| (&k[..], &v[..])),
        }
    }

    /// The pairs in order (fields past their deadline included).
    pub fn iter(&self) -> Iter<'_> {
        match self {
            HashValue::Packed(p) => Iter::Packed(p.iter()),
            HashValue::Big(m) => Iter::Big(m.iter()),
            HashValue::Ttl(t) => Iter::Big(t.pairs.iter()),
        }
    }

    /// Position of `field`.
    pub fn index_of(&self, field: &[u8]) -> Option<usize> {
        match self {
            HashValue::Packed(p) => p.find(field).map(|(i, _)| i),
            HashValue::Big(m) => m.get_index_of(field),
            HashValue::Ttl(t) => t.pairs.get_index_of(field),
        }
    }

    /// Moves pair `from` to position `to`, shifting those between.
    fn move_index(&mut self, from: usize, to: usize) {
        match self {
            HashValue::Packed(p) => *p = p.moved(from, to),
            HashValue::Big(m) => m.move_index(from, to),
            HashValue::Ttl(t) => {
                t.pairs.move_index(from, to);
                let x = t.expires.remove(from);
                t.expires.insert(to, x);
            }
        }
    }

    /// True while in the packed form, with or without deadlines (tests,
    /// benches).
    pub fn is_packed(&self) -> bool {
        matches!(self, HashValue::Packed(_))
    }

    /// Moves a packed hash to the index map, with its deadlines if it has
    /// any (benches; a write past the packed form's limits moves it by
    /// itself).
    pub fn to_big(&mut self) {
        if let HashValue::Packed(p) = self {
            let mut m: Map<Bytes, Bytes> = Map::with_capacity_and_hasher(usize::from(p.n), Default::default());
            m.extend(p.iter().map(|(f, v)| (Bytes::copy_from_slice(f), Bytes::copy_from_slice(v))));
            *self = if p.ttl {
                let n = usize::from(p.n);
                let expires = (0..n).map(|i| p.deadline(i)).collect();
                HashValue::Ttl(Box::new(TtlHash { pairs: m, expires, registered: p.deadline(n) }))
            } else {
                HashValue::Big(Box::new(m))
            };
        }
    }

    /// Whether the hash is in a form with field deadlines (it has, or had,
    /// one: Redis's `listpackex` or a hashtable with its metadata).
    #[inline]
    pub fn has_ttls(&self) -> bool {
        match self {
            HashValue::Packed(p) => p.ttl,
            HashValue::Big(_) => false,
            HashValue::Ttl(_) => true,
        }
    }

    /// Moves to the form with field deadlines (same pairs, same order,
    /// none with a deadline yet; nothing if it is there).
    pub fn make_ttl(&mut self) {
        match self {
            HashValue::Packed(p) if !p.ttl => {
                let n = usize::from(p.n);
                let tail = vec![0u8; DL * (n + 1)];
                *p = Packed::concat(&[&p.buf, &tail], n, true);
            }
            HashValue::Big(_) => {
                let HashValue::Big(m) = std::mem::take(self) else { unreachable!("matched") };
                let expires = vec![0; m.len()];
                *self = HashValue::Ttl(Box::new(TtlHash { pairs: *m, expires, registered: 0 }));
            }
            _ => {}
        }
    }

    /// The deadline of pair `i` (< len; 0: none).
    #[inline]
    fn deadline(&self, i: usize) -> u64 {
        match self {
            HashValue::Packed(p) if p.ttl => p.deadline(i),
            HashValue::Ttl(t) => t.expires[i],
            _ => 0,
        }
    }

    /// Sets the deadline of pair `i` (< len) of a hash with deadlines.
    fn set_deadline(&mut self, i: usize, at: u64) {
        match self {
            HashValue::Packed(p) if p.ttl => p.set_deadline(i, at),
            HashValue::Ttl(t) => t.expires[i] = at,
            _ => unreachable!("a hash without deadlines"),
        }
    }

    /// The deadlines by position (0: none; all 0 without the form).
    fn deadlines(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.len()).map(|i| self.deadline(i))
    }

    /// The earliest field deadline.
    pub fn min_expire(&self) -> Option<u64> {
        if !self.has_ttls() {
            return None;
        }
        self.deadlines().filter(|&e| e != 0).min()
    }

    /// The fields whose deadline is `<= now`, in order.
    pub fn expired(&self, now: u64) -> Vec<Bytes> {
        if !self.has_ttls() {
            return Vec::new();
        }
        self.keys()
            .zip(self.deadlines())
            .filter(|&(_, e)| e != 0 && e <= now)
            .map(|(k, _)| Bytes::copy_from_slice(k))
            .collect()
    }

    /// The fields with a deadline.
    pub fn volatile(&self) -> usize {
        self.deadlines().filter(|&e| e != 0).count()
    }

    /// The deadline the key is registered under in its database's
    /// field-expiry index (0: not registered, or no deadlines form).
    /// Never later than the earliest field deadline while one exists;
    /// kept by `db`.
    #[inline]
    pub fn registered(&self) -> u64 {
        match self {
            HashValue::Packed(p) if p.ttl => p.deadline(usize::from(p.n)),
            HashValue::Ttl(t) => t.registered,
            _ => 0,
        }
    }

    /// Sets [`registered`](Self::registered) (a hash with deadlines).
    pub fn set_registered(&mut self, at: u64) {
        match self {
            HashValue::Packed(p) if p.ttl => p.set_deadline(usize::from(p.n), at),
            HashValue::Ttl(t) => t.registered = at,
            _ => debug_assert_eq!(at, 0, "registering a hash without deadlines"),
        }
    }

    /// `None`: no such field; `Some(0)`: no deadline; else its deadline.
    pub fn field_expire(&self, field: &[u8]) -> Option<u64> {
        self.index_of(field).map(|i| self.deadline(i))
    }

    /// Sets (`at` > 0, at most [`DEADLINE_MAX`]) or removes (`at` == 0) the
    /// deadline of an existing field; false if there is no such field.
    /// Setting one moves the hash to the form with deadlines.
    ///
    /// `ordered` (the hash is a `listpackex` for Redis): the field moves
    /// where Redis's listpack keeps it, fields with a deadline first by
    /// deadline (a field goes before those with the same one), then those
    /// without, a field that loses its deadline going last.
    pub fn set_field_expire(&mut self, field: &[u8], at: u64, ordered: bool) -> bool {
        let Some(i) = self.index_of(field) else { return false };
        if at == 0 && !self.has_ttls() {
            return true;
        }
        self.make_ttl();
        let had = self.deadline(i);
        self.set_deadline(i, at);
        if ordered && (at != 0 || had != 0) {
            // Where it goes among the others (positions without it).
            let last = self.len() - 1;
            let to = if at == 0 {
                last
            } else {
                let mut others = self.deadlines().enumerate().filter(|&(j, _)| j != i).map(|(_, e)| e);
                others.position(|e| e == 0 || e >= at).unwrap_or(last)
            };
            if to != i {
                self.move_index(i, to);
            }
        }
        true
    }

    /// Whether `field` exists and its deadline is `<= now`.
    #[inline]
    pub fn is_expired(&self, field: &[u8], now: u64) -> bool {
        self.has_ttls() && self.field_expire(field).is_some_and(|e| e != 0 && e <= now)
    }

    /// The pairs whose deadline has not passed at `now`, in order.
    pub fn live(&self, now: u64) -> Vec<(&[u8], &[u8])> {
        if !self.has_ttls() {
            return self.iter().collect();
        }
        self.iter().zip(self.deadlines()).filter(|&(_, e)| e == 0 || e > now).map(|(p, _)| p).collect()
    }

    /// The pairs with their deadlines (0: none), in order.
    pub fn iter_expire(&self) -> impl Iterator<Item = (&[u8], &[u8], u64)> + '_ {
        self.iter().zip(self.deadlines()).map(|((k, v), e)| (k, v, e))
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

    /// The enum keeps its size with deadlines, and a field deadline
    /// moves a hash to the form with them keeping order; `HSET`-style
    /// inserts keep the deadline, removal takes it.
    #[test]
    fn field_deadlines_live_in_the_ttl_form() {
        assert_eq!(std::mem::size_of::<HashValue>(), 16);
        let mut h: HashValue = [("a", "1"), ("b", "2"), ("c", "3")].into_iter().collect();
        assert!(!h.has_ttls());
        assert_eq!(h.field_expire(b"a"), Some(0));
        assert!(h.set_field_expire(b"a", 0, false), "no deadline to remove: stays packed");
        assert!(!h.has_ttls());
        assert!(h.set_field_expire(b"b", 100, false));
        assert!(h.keys().eq([&b"a"[..], b"b", b"c"]));
        assert_eq!(h.field_expire(b"b"), Some(100));
        assert!(!h.insert(b"b", b"22"));
        assert_eq!(h.field_expire(b"b"), Some(100));
        assert!(h.is_expired(b"b", 100) && !h.is_expired(b"b", 99) && !h.is_expired(b"a", 1000));
        assert_eq!(h.live(100), vec![(&b"a"[..], &b"1"[..]), (&b"c"[..], &b"3"[..])]);
        assert_eq!((h.min_expire(), h.expired(100)), (Some(100), vec![Bytes::from("b")]));
        assert!(h.shift_remove(b"b"));
        assert!(h.has_ttls() && h.is_packed(), "the form stays, packed");
        assert_eq!(h.min_expire(), None);
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
    /// deadlines, registration and order after every step, packed (rounds
    /// that stay within 16 fields) and across the packed form's limit, with
    /// deadlines set (the latest a packed hash holds among them), moved
    /// and removed.
    #[test]
    fn ttl_form_behaves_as_its_model() {
        let (mut was_packed, mut was_big) = (false, false);
        let mut seed = 11u64;
        for round in 0..12u64 {
            let mut h = HashValue::default();
            let mut m: Map<Bytes, (Bytes, u64)> = Map::default();
            let mut registered = 0;
            let names = if round % 3 == 2 { SMALL_MAX as u64 + 6 } else { SMALL_MAX as u64 };
            for step in 0..1500u64 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let f = b(&format!("f{}", (seed >> 33) % names));
                let v = b(&"v".repeat(((step + round) % 4) as usize));
                let at = [0, 0, 5, 7, 7, 9, DEADLINE_MAX][((seed >> 12) % 7) as usize];
                let ordered = (seed >> 40).is_multiple_of(2);
                match (seed >> 20) % 7 {
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
                    4 if h.has_ttls() => {
                        registered = (seed >> 8) & DEADLINE_MAX;
                        h.set_registered(registered);
                    }
                    _ => {
                        let present = m.contains_key(&f[..]);
                        if present && (h.has_ttls() || at != 0) {
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
                was_big |= matches!(&h, HashValue::Ttl(_));
                was_packed |= h.has_ttls() && h.is_packed() && h.len() > 3;
                assert!(
                    h.iter_expire().eq(m.iter().map(|(k, (v, e))| (&k[..], &v[..], *e))),
                    "round {round} step {step}: {:?}",
                    h.iter_expire().collect::<Vec<_>>()
                );
                assert!(h.iter().rev().eq(m.iter().rev().map(|(k, (v, _))| (&k[..], &v[..]))));
                assert_eq!(h.registered(), registered, "round {round} step {step}");
                if let HashValue::Ttl(t) = &h {
                    assert_eq!(t.expires.len(), t.pairs.len());
                }
                if h.has_ttls() {
                    assert_eq!(h.min_expire(), m.values().map(|e| e.1).filter(|&e| e != 0).min());
                    assert_eq!(h.volatile(), m.values().filter(|e| e.1 != 0).count());
                    assert!(h
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
        }
        assert!(was_packed && was_big, "both forms with deadlines");
    }

    /// A field deadline on a one-field hash: the same one allocation, six
    /// bytes longer per field and six for the registration, read and
    /// rewritten in place.
    #[test]
    fn a_deadline_is_six_bytes_in_the_buffer() {
        let mut h = HashValue::default();
        h.insert(b"owner:1", b"1");
        assert!(h.set_field_expire(b"owner:1", 1_700_000_000_000, true));
        let HashValue::Packed(p) = &h else { panic!("packed") };
        assert_eq!(p.buf.len(), 2 + 7 + 1 + 6 + 6);
        let before = p.buf.as_ptr();
        h.set_registered(1_700_000_000_000);
        assert!(h.set_field_expire(b"owner:1", 1_700_000_000_500, true));
        assert!(!h.insert(b"owner:1", b"2"));
        let HashValue::Packed(p) = &h else { panic!("packed") };
        assert_eq!(p.buf.as_ptr(), before, "rewritten in place");
        assert_eq!((h.field_expire(b"owner:1"), h.registered()), (Some(1_700_000_000_500), 1_700_000_000_000));
        assert!(h.insert(b"owner:2", b"1"));
        assert_eq!(h.field_expire(b"owner:2"), Some(0));
        assert_eq!(h.registered(), 1_700_000_000_000);
    }

    /// Empty fields and values pack too.
    #[test]
    fn empty_elements() {
        let h: HashValue = [("", ""), ("a", ""), ("", "b")].into_iter().collect();
        assert_eq!(h.len(), 2);
        assert!(h.iter().eq([(&b""[..], &b"b"[..]), (&b"a"[..], &b""[..])]));
    }
}
