//! A small sorted set in one allocation: the compact form a sorted set has
//! while it is within Redis's default listpack limits (128 members of at
//! most 64 bytes), where one buffer scanned linearly beats a skip list and
//! a hash index on memory (a 1-member set: about 30 bytes instead of a
//! kilobyte) and keeps pace on speed.
//!
//! Layout of `buf` (empty for an empty set, no allocation), `n` entries
//! sorted by `(score, member)`:
//!
//! ```text
//! [n: u8] [tag: u8; n] [end: u16 LE; n] [score: f64 LE; n] [member bytes …]
//! ```
//!
//! `tag[i]` is one byte of a hash of member `i`: a lookup by member scans
//! the tags (`memchr`, 16 or 32 at a time) and compares only the members
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
use std::hash::BuildHasher;

/// Most entries a small set holds (Redis's `zset-max-listpack-entries`
/// default); the owner converts to the skip list beyond.
pub const MAX_ENTRIES: usize = 128;
/// Longest member a small set holds (`zset-max-listpack-value` default).
pub const MAX_MEMBER: usize = 64;

/// One byte of a fixed hash of `m`.
#[inline]
fn tag_of(m: &[u8]) -> u8 {
    let h = foldhash::fast::FixedState::with_seed(0x5eed).hash_one(m);
    (h >> 56) as u8
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
    buf: Vec<u8>,
}

impl Small {
    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.first().map_or(0, |&n| usize::from(n))
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
    fn members_at(n: usize) -> usize {
        1 + 11 * n
    }

    #[inline]
    fn end(&self, n: usize, i: usize) -> usize {
        let p = Self::ends_at(n) + 2 * i;
        usize::from(u16::from_le_bytes([self.buf[p], self.buf[p + 1]]))
    }

    /// Score of entry `i` (`i < len`).
    #[inline]
    pub fn score_at(&self, i: usize) -> f64 {
        let p = Self::scores_at(self.len()) + 8 * i;
        f64::from_le_bytes(self.buf[p..p + 8].try_into().expect("8 bytes"))
    }

    /// Member of entry `i` (`i < len`).
    #[inline]
    pub fn member_at(&self, i: usize) -> &[u8] {
        let n = self.len();
        let start = if i == 0 { 0 } else { self.end(n, i - 1) };
        let base = Self::members_at(n);
        &self.buf[base + start..base + self.end(n, i)]
    }

    /// Entry `i` (`i < len`).
    #[inline]
    pub fn at(&self, i: usize) -> (&[u8], f64) {
        let n = self.len();
        let ends = &self.buf[Self::ends_at(n)..Self::scores_at(n)];
        let end = |j: usize| usize::from(u16::from_le_bytes([ends[2 * j], ends[2 * j + 1]]));
        let (start, stop) = (if i == 0 { 0 } else { end(i - 1) }, end(i));
        let sp = Self::scores_at(n) + 8 * i;
        let score = f64::from_le_bytes(self.buf[sp..sp + 8].try_into().expect("8 bytes"));
        let base = Self::members_at(n);
        (&self.buf[base + start..base + stop], score)
    }

    /// Index of `member`.
    pub fn find(&self, member: &[u8]) -> Option<usize> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let tag = tag_of(member);
        let tags = &self.buf[Self::tags_at(n)..Self::tags_at(n) + n];
        memchr::memchr_iter(tag, tags).find(|&i| self.member_at(i) == member)
    }

    /// Number of leading entries for which `pred` holds (`pred` true then
    /// false along the order): a binary search.
    pub fn partition_point(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if pred(self.score_at(mid), self.member_at(mid)) {
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
        self.buf.capacity()
    }

    /// Rebuilds the buffer: entries `[0, cut)` of the old one, then
    /// `insert` if any, then entries `[resume, n)`.
    fn rebuild(&mut self, cut: usize, insert: Option<(&[u8], f64)>, resume: usize) {
        let n = self.len();
        let kept = cut + (n - resume);
        let new_n = kept + usize::from(insert.is_some());
        if new_n == 0 {
            self.buf = Vec::new();
            return;
        }
        if n == 0 {
            let (m, s) = insert.expect("one entry");
            let mut out = Vec::with_capacity(Self::members_at(1) + m.len());
            out.push(1);
            out.push(tag_of(m));
            out.extend_from_slice(&(m.len() as u16).to_le_bytes());
            out.extend_from_slice(&s.to_le_bytes());
            out.extend_from_slice(m);
            self.buf = out;
            return;
        }
        let old_members = |a: usize, b: usize| -> (usize, usize) {
            // Byte range in the old member area of entries [a, b).
            let s = if a == 0 { 0 } else { self.end(n, a - 1) };
            let e = if b == 0 { 0 } else { self.end(n, b - 1) };
            (s, e)
        };
        let (h0, h1) = old_members(0, cut);
        let (t0, t1) = old_members(resume, n);
        let ins_len = insert.map_or(0, |(m, _)| m.len());
        let total = Self::members_at(new_n) + (h1 - h0) + ins_len + (t1 - t0);
        let mut out = Vec::with_capacity(total);
        out.push(new_n as u8);
        let otags = Self::tags_at(n);
        out.extend_from_slice(&self.buf[otags..otags + cut]);
        if let Some((m, _)) = insert {
            out.push(tag_of(m));
        }
        out.extend_from_slice(&self.buf[otags + resume..otags + n]);
        for i in 0..cut {
            out.extend_from_slice(&(self.end(n, i) as u16).to_le_bytes());
        }
        let after = h1 + ins_len;
        if insert.is_some() {
            out.extend_from_slice(&(after as u16).to_le_bytes());
        }
        for i in resume..n {
            let e = self.end(n, i) - t0 + after;
            out.extend_from_slice(&(e as u16).to_le_bytes());
        }
        let osc = Self::scores_at(n);
        out.extend_from_slice(&self.buf[osc..osc + 8 * cut]);
        if let Some((_, s)) = insert {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out.extend_from_slice(&self.buf[osc + 8 * resume..osc + 8 * n]);
        let om = Self::members_at(n);
        out.extend_from_slice(&self.buf[om + h0..om + h1]);
        if let Some((m, _)) = insert {
            out.extend_from_slice(m);
        }
        out.extend_from_slice(&self.buf[om + t0..om + t1]);
        debug_assert_eq!(out.len(), total);
        self.buf = out;
    }

    /// Inserts a member known absent at its place; the caller keeps the
    /// limits (`len < MAX_ENTRIES`, `member.len() <= MAX_MEMBER`) and never
    /// passes NaN.
    pub fn insert_new(&mut self, member: &[u8], score: f64) {
        debug_assert!(self.len() < MAX_ENTRIES && member.len() <= MAX_MEMBER && !score.is_nan());
        let at = self.partition_point(|s, m| cmp_entry(s, m, score, member) == Ordering::Less);
        self.rebuild(at, Some((member, score)), at);
    }

    /// Gives entry `i` a new score, moving it where the order wants it.
    pub fn set_score(&mut self, i: usize, score: f64) {
        let n = self.len();
        let m = self.member_at(i);
        let after_prev = i == 0 || cmp_entry(self.score_at(i - 1), self.member_at(i - 1), score, m) == Ordering::Less;
        let before_next =
            i + 1 == n || cmp_entry(score, m, self.score_at(i + 1), self.member_at(i + 1)) == Ordering::Less;
        if after_prev && before_next {
            let p = Self::scores_at(n) + 8 * i;
            self.buf[p..p + 8].copy_from_slice(&score.to_le_bytes());
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
            self.buf = Vec::new();
            return;
        }
        let m = n - (hi - lo);
        let start = if lo == 0 { 0 } else { self.end(n, lo - 1) };
        let (gap_end, all) = (self.end(n, hi - 1), self.end(n, n - 1));
        let gone = gap_end - start;
        self.buf[0] = m as u8;
        self.buf.copy_within(Self::tags_at(n) + hi..Self::tags_at(n) + n, Self::tags_at(m) + lo);
        for j in 0..m {
            let (from, shift) = if j < lo { (j, 0) } else { (j + hi - lo, gone) };
            let e = (self.end(n, from) - shift) as u16;
            let at = Self::ends_at(m) + 2 * j;
            self.buf[at..at + 2].copy_from_slice(&e.to_le_bytes());
        }
        let (os, ns) = (Self::scores_at(n), Self::scores_at(m));
        self.buf.copy_within(os..os + 8 * lo, ns);
        self.buf.copy_within(os + 8 * hi..os + 8 * n, ns + 8 * lo);
        let (om, nm) = (Self::members_at(n), Self::members_at(m));
        self.buf.copy_within(om..om + start, nm);
        self.buf.copy_within(om + gap_end..om + all, nm + start);
        self.buf.truncate(nm + all - gone);
        if self.buf.capacity() > 2 * self.buf.len() + 64 {
            self.buf.shrink_to_fit();
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
        assert_eq!(self.buf.len(), Self::members_at(n) + self.end(n, n - 1));
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
}
