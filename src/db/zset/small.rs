//! A small sorted set in one allocation: the form a sorted set has while
//! it holds at most [`MAX_ENTRIES`] (16) members of at most [`MAX_MEMBER`]
//! (64) bytes, where one buffer beats a skip list and a hash index on
//! memory (a 1-member set: about 30 bytes instead of a kilobyte) and on
//! speed. Past 16 members the skip list is as fast or faster for lookups
//! (`ZSCORE`; `benches/zset_small.rs`, BENCHMARKS.md), so the form stops there,
//! short of Redis's listpack limit (128): `OBJECT ENCODING` is not this
//! form's business but the key's encoding mark's (`db::StrEnc`).
//!
//! Layout of `buf` (empty for an empty set, no allocation; room may follow
//! the content after removals, as a vector's capacity), `n` entries sorted
//! by `(score, member)`:
//!
//! ```text
//! [n | width << 5: u8] [tag: u8; n] [end: u16 LE; n] [score: W bytes LE; n] [member bytes …]
//! ```
//!
//! Scores take the narrowest [`Width`] holding every score of the set
//! exactly: a signed integer of 1, 2, 4 or 6 bytes (ranks, counters, the
//! millisecond timestamps of rate-limit windows and delayed queues), else
//! the double's 8 bytes. One width for all keeps entry `i`'s score at a
//! fixed place; an insert whose score needs more widens the set (Redis's
//! listpack stores integer scores as integers too, in 1 to 9 bytes each).
//! Removals and score changes keep the width, as a vector keeps its
//! capacity: finding whether the rest would fit a narrower one costs a
//! pass over every score, which a sliding window would pay at each step.
//!
//! `tag[i]` is one byte of a hash of member `i`: a lookup by member scans
//! the tags (eight at a time in a `u64`) and compares only the members
//! whose tag matches. `end[i]` is
//! where member `i` ends in the member area (it starts where `i - 1` ends),
//! so entry `i` is reached in O(1) and positions by score or member are a
//! binary search.
//!
//! **Invariants:** entries are strictly increasing by `(score, member)`
//! (scores compared as doubles, members bytewise); no score is NaN;
//! `n <= MAX_ENTRIES` and every member is at most `MAX_MEMBER` bytes (so
//! ends fit in a `u16`); `buf` is empty exactly when `n == 0`;
//! `tag[i] == tag_of(member i)`.

use std::cmp::Ordering;

/// Most entries a small set holds; the owner converts to the skip list
/// beyond. Measured, not Redis's `zset-max-listpack-entries` (128): up to
/// 16 members the buffer is not slower than the skip list on any
/// operation of `benches/zset_small.rs`; at 24 and 32 its `ZSCORE` is
/// (1.3-1.5x, a walk or a tag scan against one hash probe), at 64 and 128
/// its writes are.
pub const MAX_ENTRIES: usize = 16;
/// Up to this many entries a lookup compares members without their tags.
const DIRECT_SCAN: usize = 4;
/// Longest member a small set holds (`zset-max-listpack-value` default).
pub const MAX_MEMBER: usize = 64;

/// One byte of a cheap hash of `m`: one multiply per eight bytes, the top
/// byte kept. Members sharing a tag cost a comparison each, never a wrong
/// answer; a general-purpose hash of the member cost more than the whole
/// lookup in the skip list.
#[inline]
fn tag_of(m: &[u8]) -> u8 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let n = m.len();
    let mut h = (n as u64).wrapping_mul(K);
    let mut mix = |w: u64| h = (h ^ w).wrapping_mul(K) ^ (h >> 32);
    let words = m.chunks_exact(8);
    let rest = words.remainder();
    for w in words {
        mix(u64::from_le_bytes(w.try_into().expect("8 bytes")));
    }
    if n >= 8 && !rest.is_empty() {
        // The last eight bytes, overlapping the words already mixed.
        mix(u64::from_le_bytes(m[n - 8..].try_into().expect("8 bytes")));
    } else if !rest.is_empty() {
        mix(rest.iter().fold(0, |w, &b| (w << 8) | u64::from(b)));
    }
    (h >> 56) as u8
}

/// How a set's scores are stored (see the module docs): the code is the
/// header byte's top three bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Width {
    I8 = 0,
    I16 = 1,
    I32 = 2,
    I48 = 3,
    F64 = 4,
}

impl Width {
    /// Bytes a score takes.
    #[inline(always)]
    pub fn bytes(self) -> usize {
        const BYTES: [u8; 5] = [1, 2, 4, 6, 8];
        usize::from(BYTES[self as usize])
    }

    #[inline(always)]
    fn from_header(h: u8) -> Width {
        const BY_CODE: [Width; 8] =
            [Width::I8, Width::I16, Width::I32, Width::I48, Width::F64, Width::F64, Width::F64, Width::F64];
        BY_CODE[usize::from(h >> 5)]
    }

    /// The narrowest width holding `score` exactly: an integer (not `-0`,
    /// whose sign a stored integer would lose) in the range of 1, 2, 4 or 6
    /// signed bytes, else a double.
    #[inline]
    pub fn of(score: f64) -> Width {
        const I48: f64 = (1u64 << 47) as f64;
        // (NaN is in no range.) Inside it, a conversion to an integer and
        // back keeps exactly the integral scores.
        if !(-I48..I48).contains(&score) {
            return Width::F64;
        }
        let i = score as i64;
        if i as f64 != score || (i == 0 && score.is_sign_negative()) {
            return Width::F64;
        }
        if i == i64::from(i as i8) {
            Width::I8
        } else if i == i64::from(i as i16) {
            Width::I16
        } else if i == i64::from(i as i32) {
            Width::I32
        } else {
            Width::I48
        }
    }

    /// Score `j` of a scores section of this width (`scores`: from the
    /// section's start to the buffer's end).
    #[inline(always)]
    pub fn read(self, scores: &[u8], j: usize) -> f64 {
        Scores::new(scores, self).get(j)
    }

    /// [`Width::read`] where fewer than eight bytes follow the score.
    #[cold]
    fn read_short(self, scores: &[u8], j: usize) -> f64 {
        match self {
            Width::I8 => f64::from(scores[j] as i8),
            Width::I16 => f64::from(i16::from_le_bytes([scores[2 * j], scores[2 * j + 1]])),
            Width::I32 => f64::from(i32::from_le_bytes(scores[4 * j..4 * j + 4].try_into().expect("4 bytes"))),
            Width::I48 => {
                let b = &scores[6 * j..6 * j + 6];
                let raw = u64::from_le_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]]);
                // Sign-extended from bit 47.
                ((raw as i64) >> 16) as f64
            }
            Width::F64 => f64::from_le_bytes(scores[8 * j..8 * j + 8].try_into().expect("8 bytes")),
        }
    }

    /// Writes `score` (which [`Width::of`] fits in this width) into `out`
    /// (`self.bytes()` long).
    #[inline]
    fn write(self, score: f64, out: &mut [u8]) {
        debug_assert!(Width::of(score) <= self);
        match self {
            Width::F64 => out.copy_from_slice(&score.to_le_bytes()),
            w => out.copy_from_slice(&(score as i64).to_le_bytes()[..w.bytes()]),
        }
    }
}

/// A set's scores section with its width: score `j` in O(1).
#[derive(Debug, Clone, Copy)]
pub struct Scores<'a> {
    /// From the section's start to the buffer's end: a score is read as
    /// the eight bytes starting where it does, whatever its width.
    bytes: &'a [u8],
    width: Width,
    /// Bytes a score takes, and the shift that keeps (and sign-extends)
    /// them in a 64-bit load.
    step: usize,
    shift: u32,
}

impl<'a> Scores<'a> {
    #[inline(always)]
    fn new(bytes: &'a [u8], width: Width) -> Scores<'a> {
        let step = width.bytes();
        Scores { bytes, width, step, shift: 64 - 8 * step as u32 }
    }

    /// Score `j`: one unaligned 8-byte load and a shift, the same code for
    /// every width; a score with fewer than eight bytes after it (the last
    /// of a set of short members) is read by its width.
    #[inline(always)]
    pub fn get(&self, j: usize) -> f64 {
        let at = self.step * j;
        let Some(b) = self.bytes.get(at..at + 8) else {
            return self.width.read_short(self.bytes, j);
        };
        let raw = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        if self.width == Width::F64 {
            f64::from_bits(raw)
        } else {
            (((raw << self.shift) as i64) >> self.shift) as f64
        }
    }
}

/// `(s1, m1)` against `(s2, m2)` in sorted set order.
#[inline]
pub fn cmp_entry(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> Ordering {
    if s1 < s2 {
        Ordering::Less
    } else if s1 > s2 {
        Ordering::Greater
    } else {
        m1.cmp(m2)
    }
}

/// A small sorted set (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Small {
    buf: Box<[u8]>,
}

impl Small {
    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.first().map_or(0, |&h| usize::from(h & 31))
    }

    /// The scores' width (any, for an empty set).
    #[inline]
    pub fn width(&self) -> Width {
        self.buf.first().map_or(Width::I8, |&h| Width::from_header(h))
    }

    #[inline]
    fn header(n: usize, w: Width) -> u8 {
        n as u8 | (w as u8) << 5
    }

    #[inline]
    fn tags_at(_n: usize) -> usize {
        1
    }

    #[inline]
    fn ends_at(n: usize) -> usize {
        1 + n
    }

    #[inline]
    fn scores_at(n: usize) -> usize {
        1 + 3 * n
    }

    #[inline]
    fn members_at(n: usize, w: Width) -> usize {
        1 + (3 + w.bytes()) * n
    }

    #[inline]
    fn end(&self, n: usize, i: usize) -> usize {
        let p = Self::ends_at(n) + 2 * i;
        usize::from(u16::from_le_bytes([self.buf[p], self.buf[p + 1]]))
    }

    /// Score of entry `i` (`i < len`).
    #[inline]
    pub fn score_at(&self, i: usize) -> f64 {
        self.width().read(&self.buf[Self::scores_at(self.len())..], i)
    }

    /// Member of entry `i` (`i < len`).
    #[inline]
    pub fn member_at(&self, i: usize) -> &[u8] {
        let n = self.len();
        let start = if i == 0 { 0 } else { self.end(n, i - 1) };
        let base = Self::members_at(n, self.width());
        &self.buf[base + start..base + self.end(n, i)]
    }

    /// Entry `i` (`i < len`).
    #[inline]
    pub fn at(&self, i: usize) -> (&[u8], f64) {
        let n = self.len();
        let ends = &self.buf[Self::ends_at(n)..Self::scores_at(n)];
        let end = |j: usize| usize::from(u16::from_le_bytes([ends[2 * j], ends[2 * j + 1]]));
        let (start, stop) = (if i == 0 { 0 } else { end(i - 1) }, end(i));
        let w = self.width();
        let score = w.read(&self.buf[Self::scores_at(n)..], i);
        let base = Self::members_at(n, w);
        (&self.buf[base + start..base + stop], score)
    }

    /// The sections an iteration reads: ends, scores, members.
    #[inline]
    pub fn sections(&self) -> (&[u8], Scores<'_>, &[u8]) {
        let n = self.len();
        let width = self.width();
        if n == 0 {
            return (&[], Scores::new(&[], width), &[]);
        }
        let b = &self.buf[..];
        let m = Self::members_at(n, width);
        (&b[Self::ends_at(n)..Self::scores_at(n)], Scores::new(&b[Self::scores_at(n)..], width), &b[m..])
    }

    /// Score of `member` (`ZSCORE`, the hottest lookup): the entries are
    /// walked once, ends, scores and members side by side, which beats
    /// hashing the member for the tags at every size this form has.
    #[inline]
    pub fn score_of(&self, member: &[u8]) -> Option<f64> {
        let n = self.len();
        let Some(&last) = member.last() else {
            return self.find(member).map(|i| self.score_at(i));
        };
        let (ends, scores, members) = self.sections();
        let mut start = 0;
        for i in 0..n {
            let stop = usize::from(u16::from_le_bytes([ends[2 * i], ends[2 * i + 1]]));
            // Length, then the last byte (where names like `req:<n>`
            // differ), then the whole member.
            if stop - start == member.len() && members[stop - 1] == last && members[start..stop] == *member {
                return Some(scores.get(i));
            }
            start = stop;
        }
        None
    }

    /// Index of `member`.
    pub fn find(&self, member: &[u8]) -> Option<usize> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let b = &self.buf[..];
        let tags = &b[Self::tags_at(n)..Self::ends_at(n)];
        let ends = &b[Self::ends_at(n)..Self::scores_at(n)];
        let members = &b[Self::members_at(n, self.width())..];
        let end = |j: usize| usize::from(u16::from_le_bytes([ends[2 * j], ends[2 * j + 1]]));
        // Lengths first: most members sharing a tag differ in length.
        let is = |i: usize| {
            let stop = end(i);
            let start = if i == 0 { 0 } else { end(i - 1) };
            stop - start == member.len() && &members[start..stop] == member
        };
        // A few members are compared directly: cheaper than hashing the
        // one asked for.
        if n <= DIRECT_SCAN {
            return (0..n).find(|&i| is(i));
        }
        let tag = tag_of(member);
        // Eight tags at a time: a byte of `x` is zero where the tag
        // matches; the bit trick flags every such byte (and, rarely, a
        // byte above one after a borrow), each checked against the member.
        const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
        const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
        let wanted = ONES * u64::from(tag);
        let words = tags.chunks_exact(8);
        let rest = words.remainder();
        for (k, w) in words.enumerate() {
            let x = u64::from_le_bytes(w.try_into().expect("8 bytes")) ^ wanted;
            let mut hits = x.wrapping_sub(ONES) & !x & HIGHS;
            while hits != 0 {
                let i = 8 * k + (hits.trailing_zeros() / 8) as usize;
                if is(i) {
                    return Some(i);
                }
                hits &= hits - 1;
            }
        }
        let base = n - rest.len();
        rest.iter().enumerate().find(|&(j, &t)| t == tag && is(base + j)).map(|(j, _)| base + j)
    }

    /// Number of leading entries for which `pred` holds (`pred` true then
    /// false along the order): a binary search.
    pub fn partition_point(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        // The sections once, not an entry's offsets recomputed per probe.
        let (ends, scores, members) = self.sections();
        let end = |j: usize| usize::from(u16::from_le_bytes([ends[2 * j], ends[2 * j + 1]]));
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let start = if mid == 0 { 0 } else { end(mid - 1) };
            if pred(scores.get(mid), &members[start..end(mid)]) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// [`partition_point`](Self::partition_point) of a predicate on the
    /// score alone (score ranges): the members are not read.
    #[inline]
    pub fn partition_point_score(&self, pred: impl Fn(f64) -> bool) -> usize {
        let n = self.len();
        if n == 0 {
            return 0;
        }
        let scores = Scores::new(&self.buf[Self::scores_at(n)..], self.width());
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if pred(scores.get(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Length of the longest member.
    pub fn max_member_len(&self) -> usize {
        let n = self.len();
        let mut prev = 0;
        let mut max = 0;
        for i in 0..n {
            let e = self.end(n, i);
            max = max.max(e - prev);
            prev = e;
        }
        max
    }

    /// Bytes allocated.
    pub fn heap_size(&self) -> usize {
        self.buf.len()
    }

    /// Bytes in use: `buf` may hold room after them.
    fn content_len(&self) -> usize {
        let n = self.len();
        if n == 0 {
            0
        } else {
            Self::members_at(n, self.width()) + self.end(n, n - 1)
        }
    }

    /// The buffer of a set holding one entry.
    fn single(member: &[u8], score: f64) -> Box<[u8]> {
        let w = Width::of(score);
        let mut out = vec![0; Self::members_at(1, w) + member.len()];
        out[0] = Self::header(1, w);
        out[1] = tag_of(member);
        out[2..4].copy_from_slice(&(member.len() as u16).to_le_bytes());
        w.write(score, &mut out[4..4 + w.bytes()]);
        out[4 + w.bytes()..].copy_from_slice(member);
        out.into_boxed_slice()
    }

    /// Rewrites the scores at width `w` (every score fits it).
    fn rewrite_scores(&mut self, w: Width) {
        let (n, old) = (self.len(), self.width());
        if w == old || n == 0 {
            return;
        }
        let (os, members) = (Self::scores_at(n), Self::members_at(n, old));
        let content = self.content_len();
        let mut out = Vec::with_capacity(Self::members_at(n, w) + content - members);
        out.extend_from_slice(&self.buf[..os]);
        out[0] = Self::header(n, w);
        out.resize(Self::members_at(n, w), 0);
        for j in 0..n {
            let at = os + w.bytes() * j;
            w.write(old.read(&self.buf[os..], j), &mut out[at..at + w.bytes()]);
        }
        out.extend_from_slice(&self.buf[members..content]);
        self.buf = out.into_boxed_slice();
    }

    /// Inserts a member known absent at its place; the caller keeps the
    /// limits (`len < MAX_ENTRIES`, `member.len() <= MAX_MEMBER`) and never
    /// passes NaN.
    pub fn insert_new(&mut self, member: &[u8], score: f64) {
        debug_assert!(self.len() < MAX_ENTRIES && member.len() <= MAX_MEMBER && !score.is_nan());
        let at = self.partition_point(|s, m| cmp_entry(s, m, score, member) == Ordering::Less);
        if self.buf.is_empty() {
            self.buf = Self::single(member, score);
        } else {
            self.rewrite_scores(self.width().max(Width::of(score)));
            self.insert_at(at, member, score);
        }
    }

    /// Inserts entry `i` in place (`0 < len`, order and limits kept by the
    /// caller, the score fitting the set's width): the buffer grows by one
    /// entry and every section moves right, the highest first, so no byte
    /// is overwritten before it is read.
    fn insert_at(&mut self, i: usize, member: &[u8], score: f64) {
        let n = self.len();
        let w = self.width();
        let wb = w.bytes();
        let len = member.len();
        let total = self.end(n, n - 1);
        let p = if i == 0 { 0 } else { self.end(n, i - 1) };
        let (om, nm) = (Self::members_at(n, w), Self::members_at(n + 1, w));
        let (os, ns) = (Self::scores_at(n), Self::scores_at(n + 1));
        let (oe, ne) = (Self::ends_at(n), Self::ends_at(n + 1));
        // Room for exactly one entry more, unless a removal left it: a
        // small set's memory is its length.
        if self.buf.len() < nm + total + len {
            let mut v = std::mem::take(&mut self.buf).into_vec();
            v.reserve_exact(nm + total + len - v.len());
            v.resize(nm + total + len, 0);
            self.buf = v.into_boxed_slice();
        }
        let b = &mut self.buf;
        b.copy_within(om + p..om + total, nm + p + len);
        b.copy_within(om..om + p, nm);
        b[nm + p..nm + p + len].copy_from_slice(member);
        b.copy_within(os + wb * i..os + wb * n, ns + wb * (i + 1));
        b.copy_within(os..os + wb * i, ns);
        w.write(score, &mut b[ns + wb * i..ns + wb * (i + 1)]);
        b.copy_within(oe + 2 * i..oe + 2 * n, ne + 2 * (i + 1));
        b.copy_within(oe..oe + 2 * i, ne);
        b[ne + 2 * i..ne + 2 * i + 2].copy_from_slice(&((p + len) as u16).to_le_bytes());
        for j in i + 1..=n {
            let at = ne + 2 * j;
            let e = u16::from_le_bytes([b[at], b[at + 1]]) + len as u16;
            b[at..at + 2].copy_from_slice(&e.to_le_bytes());
        }
        let ot = Self::tags_at(n);
        b.copy_within(ot + i..ot + n, ot + i + 1);
        b[ot + i] = tag_of(member);
        b[0] = Self::header(n + 1, w);
    }

    /// Gives entry `i` a new score, moving it where the order wants it.
    pub fn set_score(&mut self, i: usize, score: f64) {
        let n = self.len();
        let m = self.member_at(i);
        let after_prev = i == 0 || cmp_entry(self.score_at(i - 1), self.member_at(i - 1), score, m) == Ordering::Less;
        let before_next =
            i + 1 == n || cmp_entry(score, m, self.score_at(i + 1), self.member_at(i + 1)) == Ordering::Less;
        let w = self.width();
        if after_prev && before_next && Width::of(score) <= w {
            let p = Self::scores_at(n) + w.bytes() * i;
            w.write(score, &mut self.buf[p..p + w.bytes()]);
            return;
        }
        let member = m.to_vec();
        self.remove_range(i, i + 1);
        self.insert_new(&member, score);
    }

    /// Removes entries `[lo, hi)`, in place: every section moves left (or
    /// stays), so one pass from the left never overwrites bytes not yet
    /// read.
    pub fn remove_range(&mut self, lo: usize, hi: usize) {
        let n = self.len();
        if lo >= hi {
            return;
        }
        if hi - lo == n {
            self.buf = Box::default();
            return;
        }
        let m = n - (hi - lo);
        let w = self.width();
        let wb = w.bytes();
        let start = if lo == 0 { 0 } else { self.end(n, lo - 1) };
        let (gap_end, all) = (self.end(n, hi - 1), self.end(n, n - 1));
        let gone = gap_end - start;
        self.buf.copy_within(Self::tags_at(n) + hi..Self::tags_at(n) + n, Self::tags_at(m) + lo);
        for j in 0..m {
            let (from, shift) = if j < lo { (j, 0) } else { (j + hi - lo, gone) };
            let e = (self.end(n, from) - shift) as u16;
            let at = Self::ends_at(m) + 2 * j;
            self.buf[at..at + 2].copy_from_slice(&e.to_le_bytes());
        }
        let (os, ns) = (Self::scores_at(n), Self::scores_at(m));
        self.buf.copy_within(os..os + wb * lo, ns);
        self.buf.copy_within(os + wb * hi..os + wb * n, ns + wb * lo);
        let (om, nm) = (Self::members_at(n, w), Self::members_at(m, w));
        self.buf.copy_within(om..om + start, nm);
        self.buf.copy_within(om + gap_end..om + all, nm + start);
        self.buf[0] = Self::header(m, w);
        let content = nm + all - gone;
        if self.buf.len() > 2 * content + 64 {
            self.buf = self.buf[..content].into();
        }
    }

    /// Checks the invariants (tests).
    #[cfg(test)]
    pub fn check(&self) {
        let n = self.len();
        assert_eq!(self.buf.is_empty(), n == 0);
        if n == 0 {
            return;
        }
        assert!(n <= MAX_ENTRIES);
        assert!(self.buf.len() >= self.content_len());
        assert!((0..n).all(|i| Width::of(self.score_at(i)) <= self.width()), "every score fits the width");
        for i in 0..n {
            assert!(!self.score_at(i).is_nan());
            assert!(self.member_at(i).len() <= MAX_MEMBER);
            assert_eq!(self.buf[Self::tags_at(n) + i], tag_of(self.member_at(i)));
            if i > 0 {
                let (a, b) = (self.at(i - 1), self.at(i));
                assert_eq!(cmp_entry(a.1, a.0, b.1, b.0), Ordering::Less);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_entries_sorted_with_equal_scores_by_member() {
        let mut s = Small::default();
        assert_eq!(s.heap_size(), 0, "an empty set allocates nothing");
        s.insert_new(b"b", 1.0);
        s.insert_new(b"a", 1.0);
        s.insert_new(b"", 1.0);
        s.insert_new(b"z", f64::NEG_INFINITY);
        s.insert_new(b"y", f64::INFINITY);
        s.insert_new(b"ab", 1.0);
        s.check();
        let all: Vec<(&[u8], f64)> = (0..s.len()).map(|i| s.at(i)).collect();
        assert_eq!(
            all,
            vec![
                (&b"z"[..], f64::NEG_INFINITY),
                (&b""[..], 1.0),
                (&b"a"[..], 1.0),
                (&b"ab"[..], 1.0),
                (&b"b"[..], 1.0),
                (&b"y"[..], f64::INFINITY)
            ]
        );
        assert_eq!(s.find(b"ab"), Some(3));
        assert_eq!(s.find(b""), Some(1));
        assert_eq!(s.find(b"c"), None);
        s.set_score(1, 2.0);
        s.check();
        assert_eq!(s.find(b""), Some(4));
        s.set_score(4, 1.5);
        assert_eq!(s.find(b""), Some(4), "an update keeping the order stays in place");
        s.remove_range(0, 2);
        s.check();
        assert_eq!(s.len(), 4);
        assert_eq!(s.member_at(0), b"ab");
        s.remove_range(0, 4);
        assert_eq!((s.len(), s.heap_size()), (0, 0));
    }

    #[test]
    fn holds_the_limits() {
        let mut s = Small::default();
        let long = vec![b'x'; MAX_MEMBER];
        for i in 0..MAX_ENTRIES {
            let mut m = long.clone();
            m[..3].copy_from_slice(format!("{i:03}").as_bytes());
            s.insert_new(&m, (i % 7) as f64);
        }
        s.check();
        assert_eq!(s.len(), MAX_ENTRIES);
        assert_eq!(s.max_member_len(), MAX_MEMBER);
        let first = s.partition_point(|sc, _| sc < 3.0);
        assert!(s.score_at(first) == 3.0 && s.score_at(first - 1) == 2.0);
    }

    #[test]
    fn tags_spread_over_members_alike() {
        for shape in [
            |i: usize| format!("req:{i:012}"),
            |i: usize| format!("{i}"),
            |i: usize| format!("6f1c2a9e-1b2c-4d3e-8f90-{i:04}ab12cd34:1"),
            |i: usize| format!("lock-owner-{i:03}-of-the-queue-with-a-long-name"),
        ] {
            let tags: std::collections::HashSet<u8> = (0..64).map(|i| tag_of(shape(i).as_bytes())).collect();
            assert!(tags.len() >= 40, "{} distinct tags of 64 for {}", tags.len(), shape(0));
        }
    }

    /// Scores of every width, mixed in one set, against a model through
    /// random inserts, score changes and removals: each score reads back
    /// bit for bit (`-0` keeps its sign), and the width always holds them
    /// all (an insert widens it).
    #[test]
    fn scores_take_the_narrowest_width_and_read_back_exactly() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let kinds: [fn(&mut rand::rngs::SmallRng) -> f64; 9] = [
            |r| r.random_range(-128..128) as f64,
            |r| r.random_range(-40_000..40_000) as f64,
            |r| r.random_range(-3_000_000_000i64..3_000_000_000) as f64,
            |r| (1_733_400_000_000i64 + r.random_range(0..100_000)) as f64,
            |r| [(1i64 << 47) as f64, -((1i64 << 47) as f64), ((1i64 << 47) - 1) as f64][r.random_range(0..3)],
            |r| r.random_range(-1000..1000) as f64 + 0.5,
            |_| -0.0,
            |r| [f64::INFINITY, f64::NEG_INFINITY, 1e300, 5e-324][r.random_range(0..4)],
            |r| r.random_range(0..2) as f64,
        ];
        for round in 0..300 {
            let mut s = Small::default();
            let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
            for _ in 0..60 {
                let member = format!("m{}", rng.random_range(0..24)).into_bytes();
                let score = kinds[rng.random_range(0..kinds.len())](&mut rng);
                match (s.find(&member), rng.random_range(0..3)) {
                    (Some(i), 0) => {
                        s.remove_range(i, i + 1);
                        model.retain(|(_, m)| *m != member);
                    }
                    (Some(i), _) => {
                        s.set_score(i, score);
                        model.iter_mut().find(|(_, m)| *m == member).expect("in the model").0 = score;
                    }
                    (None, _) if s.len() < MAX_ENTRIES => {
                        s.insert_new(&member, score);
                        model.push((score, member));
                    }
                    (None, _) => {
                        let lo = rng.random_range(0..s.len());
                        let hi = rng.random_range(lo..=s.len());
                        let gone: Vec<Vec<u8>> = (lo..hi).map(|i| s.member_at(i).to_vec()).collect();
                        s.remove_range(lo, hi);
                        model.retain(|(_, m)| !gone.contains(m));
                    }
                }
                s.check();
                model.sort_by(|a, b| cmp_entry(a.0, &a.1, b.0, &b.1));
                let got: Vec<(u64, Vec<u8>)> =
                    (0..s.len()).map(|i| (s.at(i).1.to_bits(), s.at(i).0.to_vec())).collect();
                let want: Vec<(u64, Vec<u8>)> = model.iter().map(|(sc, m)| (sc.to_bits(), m.clone())).collect();
                assert_eq!(got, want, "round {round}");
                let (_, scores, _) = s.sections();
                for (i, (sc, m)) in model.iter().enumerate() {
                    assert_eq!(scores.get(i).to_bits(), sc.to_bits());
                    assert_eq!(s.score_of(m).map(f64::to_bits), Some(sc.to_bits()));
                }
                assert!(s.heap_size() >= s.content_len() && (s.len() > 0 || s.heap_size() == 0));
            }
        }
        // The widths' sizes: ten members of small integers take a byte a
        // score, timestamps six, fractions eight.
        let mut small = Small::default();
        let mut stamps = Small::default();
        for j in 0..10 {
            small.insert_new(format!("member:{j}").as_bytes(), j as f64);
            stamps.insert_new(format!("member:{j}").as_bytes(), (1_733_400_000_000i64 + 137 * j) as f64);
        }
        assert_eq!((small.width(), small.heap_size()), (Width::I8, 1 + 10 * (3 + 1) + 80));
        assert_eq!((stamps.width(), stamps.heap_size()), (Width::I48, 1 + 10 * (3 + 6) + 80));
        small.insert_new(b"half", 0.5);
        assert_eq!(small.width(), Width::F64);
        let mut widths = Small::default();
        for (score, w) in
            [(-128.0, Width::I8), (300.0, Width::I16), (-70_000.0, Width::I32), (1e12, Width::I48), (-0.0, Width::F64)]
        {
            assert_eq!(Width::of(score), w, "{score}");
            widths.insert_new(format!("{score}").as_bytes(), score);
            assert_eq!(widths.width(), w);
            widths.check();
        }
    }
}
