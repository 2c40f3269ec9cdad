//! A list value. A small list (at most [`PACKED_MAX`] elements of at most
//! [`ELEM_MAX`] bytes) is packed: its elements end to end in one thin
//! buffer edited in place, each between two copies of its length byte (the
//! second lets the back be read and walked as cheaply as the front), as
//! Redis keeps a small list in one listpack. A longer list, or one holding
//! a longer element, is a ring of `Bytes` ([`super::list_ring`]). A list
//! becomes a ring when a push passes the limits and stays one (a list that
//! grew long mostly grows long again); a list rebuilt from a payload
//! (`RESTORE`, a load, `DEBUG RELOAD`) is packed again when it fits.
//!
//! A packed element reaches a reply by copy into the reply itself
//! ([`Reply::InlineBulk`]: no allocation, no reference count), which is
//! why the packed form stops at [`InlineBytes::MAX`] bytes an element: a
//! longer one would need a new `Bytes` for every read. A ring's short
//! element is copied the same way; a long one is shared by its `Bytes`.
//! The count limit is where the walks stop paying: at 32 elements every
//! list command measured faster packed than as a ring at the server, at 64
//! `LSET` was level and at 100 several were slower (BENCHMARKS.md, "Small
//! lists packed").
//!
//! The form is not what `OBJECT ENCODING` answers: that follows the
//! profile's Redis, by content (`cmd::generic`).

use std::fmt;
use std::ops::{Range, RangeBounds};

use bytes::Bytes;

use super::list_ring::{self, bounds, Ring};
use super::thin::ThinBuf;
use crate::protocol::{InlineBytes, Reply};

/// The most elements a packed list holds.
pub const PACKED_MAX: usize = 32;
/// The longest element a packed list holds (a reply's inline bytes).
pub const ELEM_MAX: usize = InlineBytes::MAX;

/// See the module docs. **Invariant:** `Packed`'s buffer holds exactly
/// `n <= PACKED_MAX` entries, each a length byte `<= ELEM_MAX`, that many
/// bytes, and the length byte again.
pub enum ListValue {
    /// Up to [`PACKED_MAX`] short elements in one buffer.
    Packed {
        /// How many.
        n: u8,
        /// The entries.
        buf: ThinBuf,
    },
    /// Any list.
    Ring(Ring),
}

/// A list's form, borrowed for a change (`ListValue::form_for`).
enum Form<'a> {
    Packed(&'a mut u8, &'a mut ThinBuf),
    Ring(&'a mut Ring),
}

/// An element taken out of a list: inline when short, else the ring's own
/// `Bytes` (or a copy of a packed one).
#[derive(Clone)]
pub enum Elem {
    Inline(InlineBytes),
    Shared(Bytes),
}

impl Elem {
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Elem::Inline(i) => i.as_bytes(),
            Elem::Shared(b) => b,
        }
    }
}

impl From<Elem> for Reply {
    #[inline]
    fn from(e: Elem) -> Reply {
        match e {
            Elem::Inline(i) => Reply::InlineBulk(i),
            Elem::Shared(b) => Reply::Bulk(b),
        }
    }
}

impl fmt::Debug for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&Bytes::copy_from_slice(self.as_bytes()), f)
    }
}

impl PartialEq for Elem {
    fn eq(&self, other: &Elem) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

/// A ring's element as a reply: copied inline when short, shared when long.
#[inline]
fn ring_reply(b: &Bytes) -> Reply {
    match InlineBytes::new(b) {
        Some(i) => Reply::InlineBulk(i),
        None => Reply::Bulk(b.clone()),
    }
}

/// The element whose entry starts at `at`, and where the next starts.
#[inline]
fn entry(buf: &[u8], at: usize) -> (&[u8], usize) {
    let len = usize::from(buf[at]);
    (&buf[at + 1..at + 1 + len], at + 2 + len)
}

/// The element whose entry ends at `end`, and where that entry starts.
#[inline]
fn entry_before(buf: &[u8], end: usize) -> (&[u8], usize) {
    let len = usize::from(buf[end - 1]);
    (&buf[end - 1 - len..end - 1], end - 2 - len)
}

/// Where entry `i` of `n` starts (`buf.len()` for `i == n`), walked from
/// the nearer end.
#[inline]
fn offset(buf: &[u8], n: usize, i: usize) -> usize {
    if i <= n / 2 {
        let mut at = 0;
        for _ in 0..i {
            at += 2 + usize::from(buf[at]);
        }
        at
    } else {
        let mut at = buf.len();
        for _ in i..n {
            at -= 2 + usize::from(buf[at - 1]);
        }
        at
    }
}

/// `x`'s entry: its length, its bytes, its length again.
#[inline]
fn parts(x: &[u8]) -> [&[u8]; 3] {
    let len = std::slice::from_ref(&LENGTHS[x.len()]);
    [len, x, len]
}

/// Every length byte an element can have, to borrow from.
static LENGTHS: [u8; ELEM_MAX + 1] = {
    let mut t = [0u8; ELEM_MAX + 1];
    let mut i = 0;
    while i <= ELEM_MAX {
        t[i] = i as u8;
        i += 1;
    }
    t
};

/// A packed element, which always fits a reply's inline bytes.
#[inline]
fn inline(e: &[u8]) -> InlineBytes {
    InlineBytes::new(e).expect("a packed element is at most ELEM_MAX bytes")
}

#[inline]
fn fits(x: &[u8]) -> bool {
    x.len() <= ELEM_MAX
}

impl Default for ListValue {
    fn default() -> ListValue {
        ListValue::new()
    }
}

impl ListValue {
    /// An empty list (packed, nothing allocated).
    pub fn new() -> ListValue {
        ListValue::Packed { n: 0, buf: ThinBuf::default() }
    }

    /// An empty list in the form that `elems` will need.
    pub fn for_elements(elems: &[Bytes]) -> ListValue {
        if elems.len() <= PACKED_MAX && elems.iter().all(|e| fits(e)) {
            ListValue::new()
        } else {
            ListValue::Ring(Ring::with_capacity(elems.len()))
        }
    }

    /// How many elements.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            ListValue::Packed { n, .. } => usize::from(*n),
            ListValue::Ring(r) => r.len(),
        }
    }

    /// No element.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the list is in its packed form.
    pub fn is_packed(&self) -> bool {
        matches!(self, ListValue::Packed { .. })
    }

    /// The elements in order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        self.range(..)
    }

    /// Elements `range` (positions in order).
    pub fn range(&self, range: impl RangeBounds<usize>) -> Iter<'_> {
        let Range { start, end } = bounds(range, self.len());
        match self {
            ListValue::Packed { n, buf } => {
                let n = usize::from(*n);
                let front = offset(buf, n, start);
                // The range's end from its start or from the list's end,
                // whichever walk is shorter.
                let back = if end - start <= n - end {
                    (start..end).fold(front, |at, _| at + 2 + usize::from(buf[at]))
                } else {
                    offset(buf, n, end)
                };
                Iter::Packed { buf, front, back, left: end - start }
            }
            ListValue::Ring(r) => Iter::Ring(r.range(start..end)),
        }
    }

    /// Element `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        match self {
            ListValue::Packed { n, buf } => {
                let n = usize::from(*n);
                (i < n).then(|| entry(buf, offset(buf, n, i)).0)
            }
            ListValue::Ring(r) => r.get(i).map(|b| &b[..]),
        }
    }

    /// Element `i` as a bulk reply.
    pub fn reply_at(&self, i: usize) -> Option<Reply> {
        match self {
            ListValue::Packed { .. } => self.get(i).map(|e| Reply::InlineBulk(inline(e))),
            ListValue::Ring(r) => r.get(i).map(ring_reply),
        }
    }

    /// Elements `range` as bulk replies.
    pub fn replies(&self, range: impl RangeBounds<usize>) -> Vec<Reply> {
        match self {
            ListValue::Packed { .. } => self.range(range).map(|e| Reply::InlineBulk(inline(e))).collect(),
            ListValue::Ring(r) => {
                let Range { start, end } = bounds(range, r.len());
                r.range(start..end).map(ring_reply).collect()
            }
        }
    }

    /// Makes a packed list a ring with room for `extra` more.
    #[cold]
    fn make_ring(&mut self, extra: usize) {
        if let ListValue::Packed { n, buf } = self {
            let mut r = Ring::with_capacity(usize::from(*n) + extra);
            let mut at = 0;
            for _ in 0..*n {
                let (e, next) = entry(buf, at);
                r.push_back(Bytes::copy_from_slice(e));
                at = next;
            }
            *self = ListValue::Ring(r);
        }
    }

    /// The form that takes `extra` more elements, one of them `len` bytes
    /// long: the packed one while it fits, else the ring (made here, once).
    #[inline]
    fn form_for(&mut self, len: usize, extra: usize) -> Form<'_> {
        if let ListValue::Packed { n, .. } = self {
            if usize::from(*n) + extra > PACKED_MAX || len > ELEM_MAX {
                self.make_ring(extra);
            }
        }
        match self {
            ListValue::Packed { n, buf } => Form::Packed(n, buf),
            ListValue::Ring(r) => Form::Ring(r),
        }
    }

    /// Appends a copy of `x` (RPUSH).
    pub fn push_back(&mut self, x: &[u8]) {
        match self.form_for(x.len(), 1) {
            Form::Packed(n, buf) => {
                let end = buf.len();
                buf.splice(end..end, &parts(x));
                *n += 1;
            }
            Form::Ring(r) => r.push_back(Bytes::copy_from_slice(x)),
        }
    }

    /// Prepends a copy of `x` (LPUSH).
    pub fn push_front(&mut self, x: &[u8]) {
        match self.form_for(x.len(), 1) {
            Form::Packed(n, buf) => {
                buf.splice(0..0, &parts(x));
                *n += 1;
            }
            Form::Ring(r) => r.push_front(Bytes::copy_from_slice(x)),
        }
    }

    /// Pushes an element taken out of a list: a ring takes a shared one
    /// as it is.
    pub fn push_elem(&mut self, front: bool, x: Elem) {
        match (self.form_for(x.as_bytes().len(), 1), x) {
            (Form::Ring(r), Elem::Shared(b)) if front => r.push_front(b),
            (Form::Ring(r), Elem::Shared(b)) => r.push_back(b),
            (_, x) if front => self.push_front(x.as_bytes()),
            (_, x) => self.push_back(x.as_bytes()),
        }
    }

    /// Takes the first element out (LPOP).
    pub fn pop_front(&mut self) -> Option<Elem> {
        match self {
            ListValue::Packed { n, buf } => {
                if *n == 0 {
                    return None;
                }
                let (e, next) = entry(buf, 0);
                let out = Elem::Inline(inline(e));
                buf.splice(0..next, &[]);
                *n -= 1;
                Some(out)
            }
            ListValue::Ring(r) => r.pop_front().map(Elem::Shared),
        }
    }

    /// Takes the last element out (RPOP).
    pub fn pop_back(&mut self) -> Option<Elem> {
        match self {
            ListValue::Packed { n, buf } => {
                if *n == 0 {
                    return None;
                }
                let end = buf.len();
                let (e, at) = entry_before(buf, end);
                let out = Elem::Inline(inline(e));
                buf.splice(at..end, &[]);
                *n -= 1;
                Some(out)
            }
            ListValue::Ring(r) => r.pop_back().map(Elem::Shared),
        }
    }

    /// Pops up to `count` from the front, in pop order.
    pub fn pop_front_n(&mut self, count: usize) -> Vec<Elem> {
        let k = count.min(self.len());
        match self {
            ListValue::Packed { n, buf } => {
                let mut out = Vec::with_capacity(k);
                let mut at = 0;
                for _ in 0..k {
                    let (e, next) = entry(buf, at);
                    out.push(Elem::Inline(inline(e)));
                    at = next;
                }
                buf.splice(0..at, &[]);
                *n -= k as u8;
                out
            }
            ListValue::Ring(r) => (0..k).map(|_| Elem::Shared(r.pop_front().expect("counted"))).collect(),
        }
    }

    /// Pops up to `count` from the back, in pop order (last first).
    pub fn pop_back_n(&mut self, count: usize) -> Vec<Elem> {
        let k = count.min(self.len());
        match self {
            ListValue::Packed { n, buf } => {
                let end = buf.len();
                let mut out = Vec::with_capacity(k);
                let mut from = end;
                for _ in 0..k {
                    let (e, at) = entry_before(buf, from);
                    out.push(Elem::Inline(inline(e)));
                    from = at;
                }
                buf.splice(from..end, &[]);
                *n -= k as u8;
                out
            }
            ListValue::Ring(r) => (0..k).map(|_| Elem::Shared(r.pop_back().expect("counted"))).collect(),
        }
    }

    /// Replaces element `i` (`i < len`) with `x`.
    pub fn set(&mut self, i: usize, x: &[u8]) {
        assert!(i < self.len(), "set {i} in a list of {}", self.len());
        match self.form_for(x.len(), 0) {
            Form::Packed(n, buf) => {
                let at = offset(buf, usize::from(*n), i);
                let end = at + 2 + usize::from(buf[at]);
                buf.splice(at..end, &parts(x));
            }
            Form::Ring(r) => r[i] = Bytes::copy_from_slice(x),
        }
    }

    /// Inserts `x` at position `i` (`i <= len`).
    pub fn insert(&mut self, i: usize, x: &[u8]) {
        assert!(i <= self.len(), "insert at {i} in a list of {}", self.len());
        match self.form_for(x.len(), 1) {
            Form::Packed(n, buf) => {
                let at = offset(buf, usize::from(*n), i);
                buf.splice(at..at, &parts(x));
                *n += 1;
            }
            Form::Ring(r) => r.insert(i, Bytes::copy_from_slice(x)),
        }
    }

    /// The first position holding `x`.
    pub fn position(&self, x: &[u8]) -> Option<usize> {
        self.iter().position(|e| e == x)
    }

    /// `LREM`: removes the elements equal to `x`, the first `limit` of
    /// them (all for 0), or the last `limit` when `from_back`. Returns how
    /// many.
    pub fn remove_eq(&mut self, x: &[u8], limit: u64, from_back: bool) -> u64 {
        match self {
            ListValue::Packed { n, buf } => {
                let mut matches = 0u64;
                let mut at = 0;
                for _ in 0..*n {
                    let (e, next) = entry(buf, at);
                    matches += u64::from(e == x);
                    at = next;
                }
                let take = if limit == 0 { matches } else { matches.min(limit) };
                if take == 0 {
                    return 0;
                }
                // From the back: the first `matches - take` matches stay.
                let mut keep = if from_back { matches - take } else { 0 };
                let (mut read, mut write, mut removed) = (0, 0, 0u64);
                let b: &mut [u8] = buf;
                for _ in 0..*n {
                    let len = 2 + usize::from(b[read]);
                    let hit = b[read + 1..read + len - 1] == *x;
                    if hit && keep == 0 && removed < take {
                        removed += 1;
                    } else {
                        if hit && keep > 0 {
                            keep -= 1;
                        }
                        b.copy_within(read..read + len, write);
                        write += len;
                    }
                    read += len;
                }
                let end = buf.len();
                buf.splice(write..end, &[]);
                *n -= removed as u8;
                removed
            }
            ListValue::Ring(l) => {
                let mut removed = 0u64;
                if !from_back {
                    let mut i = 0;
                    while i < l.len() {
                        if l[i][..] == *x {
                            l.remove(i);
                            removed += 1;
                            if limit != 0 && removed == limit {
                                break;
                            }
                        } else {
                            i += 1;
                        }
                    }
                } else {
                    let mut i = l.len();
                    while i > 0 {
                        i -= 1;
                        if l[i][..] == *x {
                            l.remove(i);
                            removed += 1;
                            if removed == limit {
                                break;
                            }
                        }
                    }
                }
                removed
            }
        }
    }

    /// `LTRIM`: keeps positions `keep` only.
    pub fn retain_range(&mut self, keep: Range<usize>) {
        let Range { start, end } = bounds(keep, self.len());
        match self {
            ListValue::Packed { n, buf } => {
                let from = offset(buf, usize::from(*n), start);
                let to = offset(buf, usize::from(*n), end);
                let len = buf.len();
                buf.splice(to..len, &[]);
                buf.splice(0..from, &[]);
                *n = (end - start) as u8;
            }
            ListValue::Ring(r) => {
                r.truncate(end);
                drop(r.drain(..start));
            }
        }
    }

    /// Makes the list a ring whatever its size (a bench's reference form).
    pub fn unpack(&mut self) {
        self.make_ring(0);
    }

    /// Packs a ring that fits the packed form again (a list rebuilt, as a
    /// load rebuilds it: `DEBUG RELOAD`).
    pub fn repack(&mut self) {
        if let ListValue::Ring(r) = self {
            if r.len() <= PACKED_MAX && r.iter().all(|e| fits(e)) {
                let mut packed = ListValue::new();
                for e in r.iter() {
                    packed.push_back(e);
                }
                *self = packed;
            }
        }
    }

    /// Removes every element.
    pub fn clear(&mut self) {
        *self = ListValue::new();
    }
}

/// The elements of a range, in order (either way).
pub enum Iter<'a> {
    Packed { buf: &'a [u8], front: usize, back: usize, left: usize },
    Ring(list_ring::Iter<'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        match self {
            Iter::Packed { buf, front, left, .. } => {
                if *left == 0 {
                    return None;
                }
                let (e, next) = entry(buf, *front);
                *front = next;
                *left -= 1;
                Some(e)
            }
            Iter::Ring(r) => r.next().map(|b| &b[..]),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Iter::Packed { left, .. } => *left,
            Iter::Ring(r) => r.size_hint().0,
        };
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Packed { buf, back, left, .. } => {
                if *left == 0 {
                    return None;
                }
                let (e, at) = entry_before(buf, *back);
                *back = at;
                *left -= 1;
                Some(e)
            }
            Iter::Ring(r) => r.next_back().map(|b| &b[..]),
        }
    }
}

impl Clone for ListValue {
    fn clone(&self) -> ListValue {
        match self {
            ListValue::Packed { n, buf } => ListValue::Packed { n: *n, buf: buf.clone() },
            ListValue::Ring(r) => ListValue::Ring(r.clone()),
        }
    }
}

impl PartialEq for ListValue {
    fn eq(&self, other: &ListValue) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for ListValue {}

impl fmt::Debug for ListValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter().map(Bytes::copy_from_slice)).finish()
    }
}

impl FromIterator<Bytes> for ListValue {
    fn from_iter<I: IntoIterator<Item = Bytes>>(iter: I) -> ListValue {
        let mut l = ListValue::new();
        for x in iter {
            l.push_back(&x);
        }
        l
    }
}

impl<'a> IntoIterator for &'a ListValue {
    type Item = &'a [u8];
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    fn elem(rng: &mut rand::rngs::SmallRng, round: u32, step: u32) -> Vec<u8> {
        use rand::Rng;
        // Mostly short (packed), now and then one that only a ring holds,
        // and the boundary lengths.
        let len = match rng.random_range(0..60) {
            0 => ELEM_MAX + 1 + rng.random_range(0..40),
            1 | 2 => ELEM_MAX,
            3 | 4 => 0,
            _ => rng.random_range(1..12),
        };
        let seed = format!("e{round}:{step}:");
        seed.bytes().cycle().take(len).collect()
    }

    /// Random operations against a `VecDeque` as the model, across the
    /// packed form's limits: the same contents, lengths and returns, and
    /// the packed form exactly while the model fits it and no push has
    /// passed its limits.
    #[test]
    fn behaves_as_a_vecdeque() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for round in 0..300 {
            let mut l = ListValue::new();
            let mut m: VecDeque<Vec<u8>> = VecDeque::new();
            let mut grown = false;
            let steps = if round % 3 == 0 { 60 } else { 200 };
            for step in 0..steps {
                let x = elem(&mut rng, round, step);
                let len = m.len();
                let mut pushed = true;
                match rng.random_range(0..14) {
                    0..=2 => {
                        l.push_back(&x);
                        m.push_back(x.clone());
                    }
                    3 | 4 => {
                        l.push_front(&x);
                        m.push_front(x.clone());
                    }
                    5 => assert_eq!(l.pop_front().map(|e| e.as_bytes().to_vec()), m.pop_front()),
                    6 => assert_eq!(l.pop_back().map(|e| e.as_bytes().to_vec()), m.pop_back()),
                    7 => {
                        let i = rng.random_range(0..=len);
                        l.insert(i, &x);
                        m.insert(i, x.clone());
                    }
                    8 if len > 0 => {
                        let i = rng.random_range(0..len);
                        l.set(i, &x);
                        m[i] = x.clone();
                    }
                    9 => {
                        let k = rng.random_range(0..len + 3);
                        let (front, got) =
                            if rng.random() { (true, l.pop_front_n(k)) } else { (false, l.pop_back_n(k)) };
                        let want: Vec<Vec<u8>> = (0..k.min(len))
                            .map(|_| if front { m.pop_front() } else { m.pop_back() }.expect("counted"))
                            .collect();
                        assert!(got.iter().map(Elem::as_bytes).eq(want.iter().map(|v| &v[..])));
                    }
                    10 if len > 0 => {
                        // LREM of an element present (or of a fresh one).
                        let target = if rng.random() { m[rng.random_range(0..len)].clone() } else { x.clone() };
                        let limit = rng.random_range(0..3u64);
                        let from_back = limit > 0 && rng.random();
                        let got = l.remove_eq(&target, limit, from_back);
                        let mut removed = 0u64;
                        if from_back {
                            let mut i = m.len();
                            while i > 0 && removed < limit {
                                i -= 1;
                                if m[i] == target {
                                    m.remove(i);
                                    removed += 1;
                                }
                            }
                        } else {
                            let mut i = 0;
                            while i < m.len() && (limit == 0 || removed < limit) {
                                if m[i] == target {
                                    m.remove(i);
                                    removed += 1;
                                } else {
                                    i += 1;
                                }
                            }
                        }
                        assert_eq!(got, removed);
                        pushed = false;
                    }
                    11 if len > 0 => {
                        let a = rng.random_range(0..=len);
                        let b = rng.random_range(a..=len);
                        l.retain_range(a..b);
                        m.truncate(b);
                        m.drain(..a);
                    }
                    12 if len > 0 => {
                        let a = rng.random_range(0..=len);
                        let b = rng.random_range(a..=len);
                        assert!(l.range(a..b).eq(m.range(a..b).map(|v| &v[..])));
                        assert!(l.range(a..).rev().eq(m.range(a..).rev().map(|v| &v[..])));
                        let replies = l.replies(a..b);
                        assert!(replies.iter().map(|r| r.as_bulk().expect("bulk")).eq(m.range(a..b).map(|v| &v[..])));
                        let i = rng.random_range(0..len);
                        assert_eq!(l.reply_at(i).and_then(|r| r.as_bulk().map(<[u8]>::to_vec)), Some(m[i].clone()));
                        assert_eq!(l.position(&m[i]), m.iter().position(|v| *v == m[i]));
                    }
                    13 if step % 40 == 0 => {
                        l.clear();
                        m.clear();
                        grown = false;
                        pushed = false;
                    }
                    _ => pushed = false,
                }
                if pushed && (m.len() > PACKED_MAX || m.iter().any(|v| v.len() > ELEM_MAX)) {
                    grown = true;
                }
                assert_eq!(l.len(), m.len());
                assert!(l.iter().eq(m.iter().map(|v| &v[..])), "round {round} step {step}");
                assert_eq!(l.get(l.len()), None);
                assert_eq!(l.is_packed(), !grown, "round {round} step {step}: packed while it fits");
                let copy = l.clone();
                assert_eq!(copy, l);
            }
            let collected: ListValue = m.iter().map(|v| Bytes::copy_from_slice(v)).collect();
            assert_eq!(collected, l);
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<ListValue>(), 16);
        let l = ListValue::default();
        assert!(l.is_empty() && l.iter().next().is_none() && l.is_packed());
        // A moved element stays shared in a ring.
        let big = Bytes::from(vec![7u8; 100]);
        let mut r = ListValue::new();
        r.push_elem(false, Elem::Shared(big.clone()));
        assert!(!r.is_packed());
        let e = r.pop_front().expect("one");
        assert!(matches!(&e, Elem::Shared(b) if b.as_ptr() == big.as_ptr()));
        r.push_elem(true, e);
        assert_eq!(r.get(0), Some(&big[..]));
        assert!(matches!(r.reply_at(0), Some(Reply::Bulk(_))));
        let p: ListValue = [Bytes::from_static(b"x")].into_iter().collect();
        assert!(p.is_packed() && matches!(p.reply_at(0), Some(Reply::InlineBulk(_))));
        assert!(!ListValue::for_elements(&[big]).is_packed());
        // A ring that shrank packs again when rebuilt.
        let mut l = ListValue::new();
        for i in 0..=PACKED_MAX {
            l.push_back(format!("{i}").as_bytes());
        }
        assert!(!l.is_packed());
        l.pop_back();
        l.repack();
        assert!(l.is_packed());
        assert!(l.iter().eq((0..PACKED_MAX)
            .map(|i| format!("{i}").into_bytes())
            .collect::<Vec<_>>()
            .iter()
            .map(|v| &v[..])));
    }
}
