//! Set storage, in two forms behind one [`SetValue`]: a small set is one
//! packed buffer, a large one a hash set (`IndexSet`). The form is
//! rlockd's own, measured, and says nothing to clients: `OBJECT ENCODING`
//! (intset, listpack, hashtable) comes from the key's encoding mark and the
//! content under Redis's thresholds (`db::StrEnc`, `cmd::generic`).
//!
//! The small form holds at most [`MAX_ENTRIES`] members of at most
//! [`MAX_MEMBER`] bytes, in insertion order:
//!
//! ```text
//! [n: u8] [len: u8; n] [member bytes …]
//! ```
//!
//! in a boxed slice (nothing allocated while empty) grown to exactly the
//! size an insert needs; a removal moves the bytes after the member down
//! and keeps the slice's size, so that a set that loses a member and gains
//! another (a queue's churn) allocates nothing, unless over half of it
//! would be spare, when it shrinks to fit.
//! A set of ten one-digit integers is 21 bytes where the hash set took
//! about 800. A look-up scans the lengths with a running offset, comparing
//! the last byte and then the bytes of a member of the right length only;
//! up to [`MAX_ENTRIES`] members that is about as fast as hashing the
//! member (`benches/set_small.rs`, BENCHMARKS.md).
//! An insert past either limit converts to the hash set, for good; a set
//! built whole (a `*STORE` result, `RESTORE`) starts small again when it
//! fits.
//!
//! Both forms keep insertion order, and removal from the small form (and
//! from a hash set of at most 128 members) shifts the members after it, so
//! `SSCAN`'s cursor (an index walked downward) and the order of
//! `SMEMBERS` are those the hash set alone gave.
//!
//! **Invariants:** `buf` is empty exactly when the small set is; `buf[0]`
//! is the number of entries `n`; the bytes in use (`1 + n` and the
//! lengths' sum) are at least half of `buf` and at most all of it;
//! members are distinct and each at most `MAX_MEMBER` bytes;
//! `n <= MAX_ENTRIES`.

use bytes::Bytes;
use indexmap::IndexSet;

use super::Hasher;

/// Most members the small form holds (see the module docs).
pub const MAX_ENTRIES: usize = 16;
/// Longest member the small form holds (`set-max-listpack-value`'s default).
pub const MAX_MEMBER: usize = 64;
/// A hash set up to this size removes by shifting (keeping insertion
/// order, as Redis 7.2's listpack does); larger ones swap the last member
/// into the hole.
const SHIFT_REMOVE_MAX: usize = 128;

/// The large form.
type Members = IndexSet<Bytes, Hasher>;

/// A set value (see the module docs). Two words (the tag lives in the
/// small buffer's pointer niche): held inline in `Value`.
#[derive(Debug, Clone)]
pub struct SetValue {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    Small(Box<[u8]>),
    Big(Box<Members>),
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue { repr: Repr::Small(Box::default()) }
    }
}

/// A small set's buffer, read.
#[derive(Clone, Copy)]
struct Small<'a> {
    /// Member lengths, in order.
    lens: &'a [u8],
    /// Member bytes, one after the other (then any spare bytes).
    data: &'a [u8],
}

impl<'a> Small<'a> {
    #[inline]
    fn of(buf: &'a [u8]) -> Small<'a> {
        let n = buf.first().map_or(0, |&n| usize::from(n));
        let (lens, data) = buf.get(1..).unwrap_or_default().split_at(n);
        Small { lens, data }
    }

    /// Bytes of the buffer in use: the count, the lengths, the members.
    #[inline]
    fn used(self) -> usize {
        1 + self.lens.len() + self.lens.iter().map(|&l| usize::from(l)).sum::<usize>()
    }

    /// Index of `m` and its offset in `data`. The lengths are scanned
    /// with a running sum (no load depends on the one before), and only a
    /// member of `m`'s length and last byte is compared whole.
    #[inline]
    fn find(self, m: &[u8]) -> Option<(usize, usize)> {
        let n = m.len();
        if n > MAX_MEMBER {
            return None;
        }
        let last = m.last().copied().unwrap_or(0);
        let mut off = 0;
        for (i, &len) in self.lens.iter().enumerate() {
            let len = usize::from(len);
            if len == n && (n == 0 || self.data[off + n - 1] == last) && &self.data[off..off + n] == m {
                return Some((i, off));
            }
            off += len;
        }
        None
    }
}

/// Walks a small set's members.
struct SmallIter<'a> {
    small: Small<'a>,
    i: usize,
    off: usize,
}

impl<'a> Iterator for SmallIter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let len = usize::from(*self.small.lens.get(self.i)?);
        let start = self.off;
        self.i += 1;
        self.off += len;
        Some(&self.small.data[start..self.off])
    }
}

impl<'a> SmallIter<'a> {
    fn new(buf: &'a [u8]) -> SmallIter<'a> {
        SmallIter { small: Small::of(buf), i: 0, off: 0 }
    }
}

/// The members of a set, as byte strings, in the set's order.
pub struct Iter<'a>(IterRepr<'a>);

enum IterRepr<'a> {
    Small(SmallIter<'a>),
    Big(indexmap::set::Iter<'a, Bytes>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        match &mut self.0 {
            IterRepr::Small(it) => it.next(),
            IterRepr::Big(it) => it.next().map(|b| &b[..]),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Small(it) => (it.small.lens.len() - it.i, Some(it.small.lens.len() - it.i)),
            IterRepr::Big(it) => it.size_hint(),
        }
    }
}

impl SetValue {
    /// An empty set (small, nothing allocated).
    pub fn new() -> SetValue {
        SetValue::default()
    }

    /// A set of `members` (distinct or not), in the small form when they
    /// fit it.
    pub fn from_members<'a>(members: impl IntoIterator<Item = &'a [u8]>) -> SetValue {
        let mut s = SetValue::new();
        for m in members {
            s.insert(m);
        }
        s
    }

    /// A set of `members` (distinct), in the small form when they fit it;
    /// the hash set keeps the `Bytes` given.
    pub fn from_distinct(members: Vec<Bytes>) -> SetValue {
        if members.len() <= MAX_ENTRIES && members.iter().all(|m| m.len() <= MAX_MEMBER) {
            return SetValue::from_members(members.iter().map(|m| &m[..]));
        }
        let mut big = Members::with_capacity_and_hasher(members.len(), Hasher::default());
        big.extend(members);
        SetValue { repr: Repr::Big(Box::new(big)) }
    }

    /// True while in the small form (tests, benches).
    pub fn is_small(&self) -> bool {
        matches!(self.repr, Repr::Small(_))
    }

    /// Converts to the hash set (benches; a write past the small form's
    /// limits converts by itself).
    pub fn to_big(&mut self) {
        if let Repr::Small(_) = &self.repr {
            let mut big = Members::with_capacity_and_hasher(self.len(), Hasher::default());
            big.extend(self.to_vec());
            self.repr = Repr::Big(Box::new(big));
        }
    }

    /// Number of members.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Small(buf) => buf.first().map_or(0, |&n| usize::from(n)),
            Repr::Big(s) => s.len(),
        }
    }

    /// True when the set has no member.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True if `m` is a member.
    #[inline]
    pub fn contains(&self, m: &[u8]) -> bool {
        match &self.repr {
            Repr::Small(buf) => Small::of(buf).find(m).is_some(),
            Repr::Big(s) => s.contains(m),
        }
    }

    /// Adds `m` (copied); false if it was a member already.
    pub fn insert(&mut self, m: &[u8]) -> bool {
        if let Repr::Small(buf) = &mut self.repr {
            let small = Small::of(buf);
            if small.find(m).is_some() {
                return false;
            }
            let n = small.lens.len();
            if n < MAX_ENTRIES && m.len() <= MAX_MEMBER {
                let used = if n == 0 { 1 } else { small.used() };
                let need = used + 1 + m.len();
                if need > buf.len() {
                    let mut v = std::mem::take(buf).into_vec();
                    v.resize(need, 0);
                    *buf = v.into_boxed_slice();
                }
                buf.copy_within(1 + n..used, 2 + n);
                buf[0] = n as u8 + 1;
                buf[1 + n] = m.len() as u8;
                buf[used + 1..need].copy_from_slice(m);
                return true;
            }
            self.to_big();
        }
        match &mut self.repr {
            Repr::Big(s) => s.insert(Bytes::copy_from_slice(m)),
            Repr::Small(_) => unreachable!("converted above"),
        }
    }

    /// Removes `m`; false if it was not a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Small(buf) => match Small::of(buf).find(m) {
                Some((i, off)) => {
                    Self::small_remove(buf, i, off);
                    true
                }
                None => false,
            },
            Repr::Big(s) if s.len() <= SHIFT_REMOVE_MAX => s.shift_remove(m),
            Repr::Big(s) => s.swap_remove(m),
        }
    }

    /// Removes member `i`, whose bytes start at `off` in the data: the
    /// bytes after it move down and the buffer keeps its size (the next
    /// insert may need no allocation) unless over half of it would be
    /// spare.
    fn small_remove(buf: &mut Box<[u8]>, i: usize, off: usize) {
        if buf[0] == 1 {
            *buf = Box::default();
            return;
        }
        let small = Small::of(buf);
        let (n, len, mut used) = (small.lens.len(), usize::from(small.lens[i]), small.used());
        let at = 1 + n + off;
        buf.copy_within(at + len..used, at);
        used -= len;
        buf.copy_within(2 + i..used, 1 + i);
        used -= 1;
        buf[0] -= 1;
        if buf.len() > 2 * used {
            let mut v = std::mem::take(buf).into_vec();
            v.truncate(used);
            *buf = v.into_boxed_slice();
        }
    }

    /// Removes and returns the member at index `i` (`i < len`).
    pub fn remove_index(&mut self, i: usize) -> Bytes {
        match &mut self.repr {
            Repr::Small(buf) => {
                let small = Small::of(buf);
                let off: usize = small.lens[..i].iter().map(|&l| usize::from(l)).sum();
                let m = Bytes::copy_from_slice(&small.data[off..off + usize::from(small.lens[i])]);
                Self::small_remove(buf, i, off);
                m
            }
            Repr::Big(s) if s.len() <= SHIFT_REMOVE_MAX => s.shift_remove_index(i).expect("index"),
            Repr::Big(s) => s.swap_remove_index(i).expect("index"),
        }
    }

    /// Removes every member (the small form, nothing allocated).
    pub fn clear(&mut self) {
        *self = SetValue::new();
    }

    /// The members in the set's order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Small(buf) => Iter(IterRepr::Small(SmallIter::new(buf))),
            Repr::Big(s) => Iter(IterRepr::Big(s.iter())),
        }
    }

    /// The members as owned byte strings, in the set's order (a reply's):
    /// a small set's are slices of one copy of its bytes (in the server
    /// each allocation also costs the counting allocator's atomic add, so
    /// one copy and a reference count per member beat a copy per member).
    pub fn to_vec(&self) -> Vec<Bytes> {
        match &self.repr {
            Repr::Small(buf) if buf.first() == Some(&1) => SmallIter::new(buf).map(Bytes::copy_from_slice).collect(),
            Repr::Small(buf) => {
                let small = Small::of(buf);
                let all = Bytes::copy_from_slice(&small.data[..small.used() - 1 - small.lens.len()]);
                let mut off = 0;
                small
                    .lens
                    .iter()
                    .map(|&l| {
                        let start = off;
                        off += usize::from(l);
                        all.slice(start..off)
                    })
                    .collect()
            }
            Repr::Big(s) => s.iter().cloned().collect(),
        }
    }

    /// The members by index: in place for the hash set, gathered once for
    /// the small form (for callers that pick many indices).
    pub fn indexed(&self) -> Indexed<'_> {
        match &self.repr {
            Repr::Small(_) => Indexed::Small(self.to_vec()),
            Repr::Big(s) => Indexed::Big(s),
        }
    }

    /// Heap bytes held (`MEMORY USAGE`): the buffer, or per member its
    /// bytes and about 40 bytes of table and `Bytes`.
    pub fn heap_size(&self) -> usize {
        match &self.repr {
            Repr::Small(buf) => buf.len(),
            Repr::Big(s) => s.iter().map(|m| m.len() + 40).sum(),
        }
    }
}

/// A set's members by index ([`SetValue::indexed`]).
pub enum Indexed<'a> {
    Small(Vec<Bytes>),
    Big(&'a Members),
}

impl Indexed<'_> {
    /// Member `i` (`i < len`).
    #[inline]
    pub fn get(&self, i: usize) -> &[u8] {
        match self {
            Indexed::Small(v) => &v[i],
            Indexed::Big(s) => s.get_index(i).expect("index"),
        }
    }

    /// Member `i` as an owned byte string.
    #[inline]
    pub fn bytes(&self, i: usize) -> Bytes {
        match self {
            Indexed::Small(v) => v[i].clone(),
            Indexed::Big(s) => s.get_index(i).expect("index").clone(),
        }
    }
}

impl<'a> FromIterator<&'a [u8]> for SetValue {
    fn from_iter<I: IntoIterator<Item = &'a [u8]>>(iter: I) -> Self {
        SetValue::from_members(iter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks the invariants of the module docs.
    fn check(s: &SetValue) {
        if let Repr::Small(buf) = &s.repr {
            let members: Vec<&[u8]> = s.iter().collect();
            assert_eq!(buf.is_empty(), members.is_empty());
            assert!(members.len() <= MAX_ENTRIES);
            assert_eq!(members.len(), s.len());
            let distinct: std::collections::HashSet<&[u8]> = members.iter().copied().collect();
            assert_eq!(distinct.len(), members.len());
            assert!(members.iter().all(|m| m.len() <= MAX_MEMBER));
            let used = members.iter().map(|m| 1 + m.len()).sum::<usize>() + usize::from(!buf.is_empty());
            assert!(used <= buf.len() && buf.len() <= 2 * used, "{used} bytes used of {}", buf.len());
        }
    }

    fn names(s: &SetValue) -> Vec<String> {
        s.iter().map(|m| String::from_utf8(m.to_vec()).unwrap()).collect()
    }

    #[test]
    fn small_insert_remove_keep_insertion_order() {
        let mut s = SetValue::new();
        assert!(s.is_small() && s.is_empty());
        for m in ["b", "a", "", "10", "-0", "01", " 1", "9223372036854775808"] {
            assert!(s.insert(m.as_bytes()), "{m}");
            check(&s);
        }
        assert!(!s.insert(b"a"));
        assert!(!s.insert(b""));
        assert_eq!(s.len(), 8);
        assert!(s.contains(b"") && s.contains(b"-0") && !s.contains(b"0") && !s.contains(b"1"));
        assert!(s.remove(b"a"));
        assert!(!s.remove(b"a"));
        check(&s);
        assert_eq!(names(&s), ["b", "", "10", "-0", "01", " 1", "9223372036854775808"]);
        assert_eq!(&s.remove_index(1)[..], b"");
        assert_eq!(names(&s), ["b", "10", "-0", "01", " 1", "9223372036854775808"]);
        for m in names(&s) {
            assert!(s.remove(m.as_bytes()));
            check(&s);
        }
        assert!(s.is_empty() && s.is_small());
        assert_eq!(s.heap_size(), 0);
    }

    #[test]
    fn churn_reuses_the_buffer_and_spare_room_stays_under_half() {
        let mut s = SetValue::from_members([&b"first-member"[..], b"x"]);
        let before = s.heap_size();
        for t in 0..100 {
            assert!(s.remove(if t == 0 { b"x" } else { b"y" }));
            check(&s);
            assert!(s.insert(b"y"));
            check(&s);
            assert_eq!(s.heap_size(), before, "a member of the same length fits the room left");
        }
        // Removing most of a big buffer shrinks it.
        let long: Vec<Vec<u8>> = (0..8).map(|i| vec![b'a' + i; 60]).collect();
        let mut t = SetValue::from_members(long.iter().map(|m| &m[..]));
        for m in &long[1..] {
            assert!(t.remove(m));
            check(&t);
        }
        assert!(t.heap_size() <= 2 * (1 + 1 + 60));
        assert_eq!(t.iter().collect::<Vec<_>>(), [&long[0][..]]);
    }

    #[test]
    fn converts_past_the_entries_limit_and_never_back() {
        let mut s = SetValue::new();
        for i in 0..MAX_ENTRIES {
            assert!(s.insert(i.to_string().as_bytes()));
        }
        assert!(s.is_small());
        assert!(!s.insert(b"3"), "a present member converts nothing");
        assert!(s.is_small());
        assert!(s.insert(b"x"));
        assert!(!s.is_small());
        assert_eq!(s.len(), MAX_ENTRIES + 1);
        let mut want: Vec<String> = (0..MAX_ENTRIES).map(|i| i.to_string()).collect();
        want.push("x".into());
        assert_eq!(names(&s), want, "conversion keeps insertion order");
        for m in &want[1..] {
            assert!(s.remove(m.as_bytes()));
        }
        assert_eq!(names(&s), ["0"]);
        assert!(!s.is_small(), "no conversion back");
        s.clear();
        assert!(s.is_small());
    }

    #[test]
    fn converts_past_the_member_length_limit() {
        let mut s = SetValue::new();
        let long = vec![b'x'; MAX_MEMBER];
        assert!(s.insert(&long));
        assert!(s.is_small());
        check(&s);
        let longer = vec![b'y'; MAX_MEMBER + 1];
        assert!(!s.contains(&longer));
        assert!(s.insert(&longer));
        assert!(!s.is_small());
        assert!(s.contains(&long) && s.contains(&longer));
        // Built whole, a set that fits starts small again.
        let rebuilt = SetValue::from_members([&long[..], b"a"]);
        assert!(rebuilt.is_small());
        let too_long = SetValue::from_members([&longer[..]]);
        assert!(!too_long.is_small());
    }

    #[test]
    fn the_two_forms_answer_alike() {
        let mut small = SetValue::new();
        let mut big = SetValue::new();
        big.to_big();
        let members: Vec<String> = (0..MAX_ENTRIES).map(|i| format!("member:{}", i * 7 % 11)).collect();
        for m in &members {
            assert_eq!(small.insert(m.as_bytes()), big.insert(m.as_bytes()));
        }
        assert!(small.is_small() && !big.is_small());
        assert_eq!(names(&small), names(&big));
        assert_eq!(small.to_vec(), big.to_vec());
        for probe in ["member:3", "member:11", "member:", "", "member:33"] {
            assert_eq!(small.contains(probe.as_bytes()), big.contains(probe.as_bytes()), "{probe}");
        }
        let (si, bi) = (small.indexed(), big.indexed());
        for i in 0..small.len() {
            assert_eq!(si.get(i), bi.get(i));
            assert_eq!(si.bytes(i), bi.bytes(i));
        }
        assert_eq!(small.remove_index(3), big.remove_index(3));
        assert_eq!(small.remove(b"member:5"), big.remove(b"member:5"));
        assert_eq!(names(&small), names(&big));
        check(&small);
    }

    #[test]
    fn stays_two_words() {
        assert_eq!(std::mem::size_of::<SetValue>(), 16);
    }
}
