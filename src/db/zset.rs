//! Sorted set storage, in two forms behind one [`ZSet`]: a small set is one
//! sorted buffer ([`small`]: up to 16 members of up to 64 bytes, measured
//! as where the buffer stops winning; a Redis 7.0 sorted set is a listpack
//! up to 128); past either limit, for good, an arena skip list with spans
//! (Redis's `zskiplist`) plus a member → node map ([`SkipList`]).
//!
//! Order is `(score, member)` with scores compared as doubles (`<`, `==`,
//! so `-0` equals `0`) and members compared bytewise (`memcmp`, shorter
//! first on a common prefix), exactly as Redis orders a sorted set.
//!
//! Every node keeps, per level, the index of the next node on that level
//! and the *span* (how many level-0 steps the link covers). Summing spans
//! while descending gives ranks in O(log n): rank of a member, element at
//! a rank, number of elements below a score or lexicographic bound. Range
//! queries are expressed as rank intervals and then walked along level 0.
//!
//! **Invariants:**
//! - `dict` and the skip list hold exactly the same members; `dict[m]` is
//!   the arena index of `m`'s node.
//! - For every node and level, `span` equals the number of level-0 links
//!   between the node and its `forward` on that level (or to the end of the
//!   list plus one for a `NIL` forward on the header: spans to `NIL` are
//!   not used).
//! - Scores are never NaN.

use std::cmp::Ordering;

use bytes::Bytes;

use super::Map;

mod small;

use small::{cmp_entry, Small};

const MAX_LEVEL: usize = 32;
const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;

#[derive(Debug, Clone, Copy)]
struct Link {
    forward: u32,
    span: u32,
}

/// Levels stored inline in a node; higher levels (1.6% of nodes with
/// p = 1/4) go to `extra`. Keeps a descent step to one cache miss.
const INLINE: usize = 3;

#[derive(Debug, Clone)]
#[repr(C)]
struct Node {
    score: f64,
    inline: [Link; INLINE],
    backward: u32,
    level: u8,
    member: Bytes,
    extra: Option<Box<[Link]>>,
}

impl Node {
    fn new(member: Bytes, score: f64, level: usize) -> Node {
        let empty = Link { forward: NIL, span: 0 };
        Node {
            score,
            inline: [empty; INLINE],
            backward: NIL,
            level: level as u8,
            member,
            extra: (level > INLINE).then(|| vec![empty; level - INLINE].into_boxed_slice()),
        }
    }

    #[inline]
    fn link(&self, l: usize) -> &Link {
        if l < INLINE {
            &self.inline[l]
        } else {
            &self.extra.as_ref().expect("level exists")[l - INLINE]
        }
    }

    #[inline]
    fn link_mut(&mut self, l: usize) -> &mut Link {
        if l < INLINE {
            &mut self.inline[l]
        } else {
            &mut self.extra.as_mut().expect("level exists")[l - INLINE]
        }
    }
}

/// The skip list form of a sorted set.
#[derive(Debug, Clone)]
pub struct SkipList {
    dict: Map<Bytes, u32>,
    nodes: Vec<Node>,
    free: Vec<u32>,
    level: usize,
    tail: u32,
    /// Nodes linked in the skip list.
    length: usize,
    rng: u64,
}

/// One end of a score range (`ZRANGEBYSCORE`): value and exclusivity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreBound {
    /// The score.
    pub value: f64,
    /// The end itself is outside the range (`(1.5`).
    pub exclusive: bool,
}

/// One end of a lexicographic range (`ZRANGEBYLEX`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// `-`
    NegInf,
    /// `+`
    PosInf,
    /// `[x` (`false`: inclusive) or `(x` (`true`: exclusive).
    Value(Bytes, bool),
}

impl SkipList {
    /// An empty skip list.
    pub fn new() -> SkipList {
        let head = Node::new(Bytes::new(), 0.0, MAX_LEVEL);
        SkipList {
            dict: Map::default(),
            nodes: vec![head],
            free: Vec::new(),
            level: 1,
            tail: NIL,
            length: 0,
            rng: 0x9E37_79B9_7F4A_7C15 ^ (rand::random::<u64>() | 1),
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.dict.len()
    }

    /// Length of the longest member (`OBJECT ENCODING` thresholds).
    pub fn max_member_len(&self) -> usize {
        self.dict.keys().map(|k| k.len()).max().unwrap_or(0)
    }

    /// Rough heap size in bytes.
    pub fn approx_size(&self) -> usize {
        self.nodes.iter().map(|n| n.member.len() + std::mem::size_of::<Node>() + 32).sum::<usize>()
            + self.dict.len() * 16
    }

    /// Score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.dict.get(member).map(|&i| self.nodes[i as usize].score)
    }

    /// True if `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        self.dict.contains_key(member)
    }

    /// Redis `zslRandomLevel` (p = 1/4).
    fn random_level(&mut self) -> usize {
        let mut level = 1;
        loop {
            // xorshift64*
            let mut x = self.rng;
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            self.rng = x;
            let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 48;
            if (r & 0xFFFF) < 0x3FFF && level < MAX_LEVEL {
                level += 1;
            } else {
                return level;
            }
        }
    }

    #[inline]
    fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    #[inline]
    fn link(&self, i: u32, l: usize) -> Link {
        *self.nodes[i as usize].link(l)
    }

    #[inline]
    fn link_mut(&mut self, i: u32, l: usize) -> &mut Link {
        self.nodes[i as usize].link_mut(l)
    }

    /// Sets `member`'s score, adding it if needed. Returns true if added.
    /// The caller guarantees `score` is not NaN.
    pub fn insert(&mut self, member: Bytes, score: f64) -> bool {
        debug_assert!(!score.is_nan());
        if let Some(&i) = self.dict.get(&member[..]) {
            let old = self.node(i).score;
            if old == score {
                return false;
            }
            // In place when the order does not change (Redis zslUpdateScore).
            let back = self.node(i).backward;
            let fwd = self.link(i, 0).forward;
            let m = self.node(i).member.clone();
            let after_back = back == NIL || {
                let b = self.node(back);
                cmp_entry(b.score, &b.member, score, &m) == Ordering::Less
            };
            let before_fwd = fwd == NIL || {
                let f = self.node(fwd);
                cmp_entry(score, &m, f.score, &f.member) == Ordering::Less
            };
            if after_back && before_fwd {
                self.nodes[i as usize].score = score;
                return false;
            }
            self.unlink(i);
            self.free.push(i);
            let ni = self.link_new(m, score);
            *self.dict.get_mut(&member[..]).expect("present") = ni;
            return false;
        }
        let ni = self.link_new(member.clone(), score);
        self.dict.insert(member, ni);
        true
    }

    /// Inserts a node into the skip list (not the dict); returns its index.
    fn link_new(&mut self, member: Bytes, score: f64) -> u32 {
        let mut update = [HEAD; MAX_LEVEL];
        let mut rank = [0u32; MAX_LEVEL];
        let mut x = HEAD;
        for l in (0..self.level).rev() {
            rank[l] = if l == self.level - 1 { 0 } else { rank[l + 1] };
            loop {
                let lk = self.link(x, l);
                if lk.forward == NIL {
                    break;
                }
                let f = self.node(lk.forward);
                if cmp_entry(f.score, &f.member, score, &member) == Ordering::Less {
                    rank[l] += lk.span;
                    x = lk.forward;
                } else {
                    break;
                }
            }
            update[l] = x;
        }
        let level = self.random_level();
        let len = self.length as u32;
        if level > self.level {
            for l in self.level..level {
                rank[l] = 0;
                update[l] = HEAD;
                self.link_mut(HEAD, l).span = len;
            }
            self.level = level;
        }
        let node = Node::new(member, score, level);
        let ni = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        for l in 0..level {
            let u = update[l];
            let ul = self.link(u, l);
            let span_before = rank[0] - rank[l];
            *self.link_mut(ni, l) = Link { forward: ul.forward, span: ul.span - span_before };
            *self.link_mut(u, l) = Link { forward: ni, span: span_before + 1 };
        }
        for (l, &u) in update.iter().enumerate().take(self.level).skip(level) {
            self.link_mut(u, l).span += 1;
        }
        let back = if update[0] == HEAD { NIL } else { update[0] };
        self.nodes[ni as usize].backward = back;
        let f = self.link(ni, 0).forward;
        if f != NIL {
            self.nodes[f as usize].backward = ni;
        } else {
            self.tail = ni;
        }
        self.length += 1;
        ni
    }

    /// Unlinks node `i` from the skip list (not the dict, not the arena).
    fn unlink(&mut self, i: u32) {
        let (score, member) = {
            let n = self.node(i);
            (n.score, n.member.clone())
        };
        let mut update = [HEAD; MAX_LEVEL];
        let mut x = HEAD;
        for l in (0..self.level).rev() {
            loop {
                let f = self.link(x, l).forward;
                if f == NIL || f == i {
                    break;
                }
                let fnode = self.node(f);
                if cmp_entry(fnode.score, &fnode.member, score, &member) == Ordering::Less {
                    x = f;
                } else {
                    break;
                }
            }
            update[l] = x;
        }
        for (l, &u) in update.iter().enumerate().take(self.level) {
            let ul = self.link(u, l);
            if ul.forward == i {
                let il = self.link(i, l);
                *self.link_mut(u, l) = Link { forward: il.forward, span: ul.span + il.span - 1 };
            } else {
                self.link_mut(u, l).span = ul.span.wrapping_sub(1);
            }
        }
        let f = self.link(i, 0).forward;
        let b = self.node(i).backward;
        if f != NIL {
            self.nodes[f as usize].backward = b;
        } else {
            self.tail = b;
        }
        while self.level > 1 && self.link(HEAD, self.level - 1).forward == NIL {
            self.level -= 1;
        }
        self.length -= 1;
        self.nodes[i as usize].member = Bytes::new();
    }

    /// Removes `member`; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let i = self.dict.swap_remove(member)?;
        let score = self.node(i).score;
        self.unlink(i);
        self.free.push(i);
        if self.dict.is_empty() {
            self.clear();
        }
        Some(score)
    }

    fn clear(&mut self) {
        self.nodes.truncate(1);
        self.nodes.shrink_to(8);
        self.free = Vec::new();
        self.nodes[0] = Node::new(Bytes::new(), 0.0, MAX_LEVEL);
        self.level = 1;
        self.tail = NIL;
        self.length = 0;
    }

    /// 0-based rank of `member` in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let &i = self.dict.get(member)?;
        let (score, m) = (self.node(i).score, &self.node(i).member);
        // Count the elements strictly before (score, member), plus one.
        let below = self.count_while(|n| cmp_entry(n.score, &n.member, score, m) == Ordering::Less);
        Some(below)
    }

    /// Number of leading elements (in order) for which `pred` holds; `pred`
    /// must be monotone (true then false) along the order.
    fn count_while(&self, pred: impl Fn(&Node) -> bool) -> usize {
        let mut x = HEAD;
        let mut rank = 0usize;
        for l in (0..self.level).rev() {
            loop {
                let lk = self.link(x, l);
                if lk.forward != NIL && pred(self.node(lk.forward)) {
                    rank += lk.span as usize;
                    x = lk.forward;
                } else {
                    break;
                }
            }
        }
        rank
    }

    /// Node index at 0-based `rank`.
    fn node_at(&self, rank: usize) -> Option<u32> {
        if rank >= self.length {
            return None;
        }
        let target = rank + 1;
        let mut x = HEAD;
        let mut traversed = 0usize;
        for l in (0..self.level).rev() {
            loop {
                let lk = self.link(x, l);
                if lk.forward != NIL && traversed + lk.span as usize <= target {
                    traversed += lk.span as usize;
                    x = lk.forward;
                } else {
                    break;
                }
            }
            if traversed == target {
                return Some(x);
            }
        }
        None
    }

    /// Element at 0-based ascending `rank`.
    pub fn get_by_rank(&self, rank: usize) -> Option<(&Bytes, f64)> {
        self.node_at(rank).map(|i| {
            let n = self.node(i);
            (&n.member, n.score)
        })
    }

    /// Highest element.
    pub fn last(&self) -> Option<(&Bytes, f64)> {
        (self.tail != NIL).then(|| (&self.node(self.tail).member, self.node(self.tail).score))
    }

    /// Elements in ascending order from rank `start` (inclusive).
    pub fn iter_from(&self, start: usize) -> SkipIter<'_> {
        SkipIter { z: self, cur: self.node_at(start).unwrap_or(NIL), rev: false }
    }

    /// Elements in descending order from rank `start` (inclusive, an
    /// ascending rank) down to the lowest.
    pub fn iter_rev_from(&self, start: usize) -> SkipIter<'_> {
        SkipIter { z: self, cur: self.node_at(start).unwrap_or(NIL), rev: true }
    }

    /// Removes the elements with ranks in `[start, end)`; returns them in
    /// ascending order.
    pub fn remove_rank_range(&mut self, start: usize, end: usize) -> Vec<(Bytes, f64)> {
        let end = end.min(self.len());
        if start >= end {
            return Vec::new();
        }
        let out: Vec<(Bytes, f64)> = self.iter_from(start).take(end - start).map(|(m, s)| (m.clone(), s)).collect();
        for (m, _) in &out {
            self.remove(m);
        }
        out
    }

    /// Member at position `i` of the member map (random sampling, ZSCAN).
    pub fn entry_at(&self, i: usize) -> Option<(&Bytes, f64)> {
        self.dict.get_index(i).map(|(m, &n)| (m, self.node(n).score))
    }

    /// Checks every structural invariant (tests).
    #[cfg(test)]
    fn check(&self) {
        let mut count = 0usize;
        let mut x = self.link(HEAD, 0).forward;
        let mut prev = NIL;
        while x != NIL {
            let n = self.node(x);
            assert_eq!(n.backward, prev);
            if prev != NIL {
                let p = self.node(prev);
                assert_eq!(cmp_entry(p.score, &p.member, n.score, &n.member), Ordering::Less);
            }
            assert_eq!(self.dict.get(&n.member[..]), Some(&x));
            count += 1;
            prev = x;
            x = self.link(x, 0).forward;
        }
        assert_eq!(self.tail, prev);
        assert_eq!(count, self.dict.len());
        // Spans: positions by level-0 walk.
        let mut pos = std::collections::HashMap::new();
        pos.insert(HEAD, 0usize);
        let mut x = self.link(HEAD, 0).forward;
        let mut p = 1;
        while x != NIL {
            pos.insert(x, p);
            p += 1;
            x = self.link(x, 0).forward;
        }
        for l in 0..self.level {
            let mut x = HEAD;
            loop {
                let lk = self.link(x, l);
                if lk.forward == NIL {
                    break;
                }
                assert_eq!(pos[&x] + lk.span as usize, pos[&lk.forward], "span at level {l}");
                x = lk.forward;
            }
        }
    }
}

/// Iterator over `(member, score)` along level 0.
pub struct SkipIter<'a> {
    z: &'a SkipList,
    cur: u32,
    rev: bool,
}

impl<'a> Iterator for SkipIter<'a> {
    type Item = (&'a Bytes, f64);

    fn next(&mut self) -> Option<Self::Item> {
        if self.cur == NIL {
            return None;
        }
        let n = self.z.node(self.cur);
        self.cur = if self.rev { n.backward } else { n.inline[0].forward };
        Some((&n.member, n.score))
    }
}

/// A sorted set: the small form ([`small`]) while it holds at most
/// [`small::MAX_ENTRIES`] members of at most [`small::MAX_MEMBER`] bytes,
/// the skip list from the first write that would cross either, for good
/// (as a Redis 7.0 listpack becomes a skip list and never goes back). A set
/// built anew (a `*STORE` result, `RESTORE`) starts small again.
///
/// The form is this value's own business: what `OBJECT ENCODING` answers,
/// and what follows from it (`ZSCAN` in one call, `-0` stored as `0`),
/// comes from the key's encoding mark (`db::StrEnc`), which follows the
/// configured thresholds (Redis's: 128 members by default, where this form
/// stops at 32). Replies never depend on the form.
#[derive(Debug, Clone)]
pub struct ZSet {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    Small(Small),
    Big(Box<SkipList>),
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet::new()
    }
}

impl ZSet {
    /// An empty sorted set (small, nothing allocated).
    pub fn new() -> ZSet {
        ZSet { repr: Repr::Small(Small::default()) }
    }

    /// True while in the small form (tests, benches).
    pub fn is_small(&self) -> bool {
        matches!(self.repr, Repr::Small(_))
    }

    /// Number of members.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Small(s) => s.len(),
            Repr::Big(z) => z.len(),
        }
    }

    /// True without members.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Length of the longest member (`OBJECT ENCODING` thresholds).
    pub fn max_member_len(&self) -> usize {
        match &self.repr {
            Repr::Small(s) => s.max_member_len(),
            Repr::Big(z) => z.max_member_len(),
        }
    }

    /// Rough heap size in bytes.
    pub fn approx_size(&self) -> usize {
        match &self.repr {
            Repr::Small(s) => s.heap_size(),
            Repr::Big(z) => z.approx_size(),
        }
    }

    /// Score of `member`.
    #[inline]
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.repr {
            Repr::Small(s) => s.score_of(member),
            Repr::Big(z) => z.score(member),
        }
    }

    /// True if `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.repr {
            Repr::Small(s) => s.find(member).is_some(),
            Repr::Big(z) => z.contains(member),
        }
    }

    /// Converts to the skip list (past a threshold; `zset-max-listpack-*`
    /// lowered below the small form's limits).
    pub fn to_skiplist(&mut self) {
        if let Repr::Small(s) = &self.repr {
            let mut z = SkipList::new();
            for i in 0..s.len() {
                let (m, sc) = s.at(i);
                z.insert(Bytes::copy_from_slice(m), sc);
            }
            self.repr = Repr::Big(Box::new(z));
        }
    }

    /// Sets `member`'s score, adding it if needed. Returns true if added.
    /// The caller guarantees `score` is not NaN.
    pub fn insert(&mut self, member: Bytes, score: f64) -> bool {
        debug_assert!(!score.is_nan());
        if let Repr::Small(s) = &mut self.repr {
            if let Some(i) = s.find(&member) {
                if s.score_at(i) != score {
                    s.set_score(i, score);
                }
                return false;
            }
            if s.len() < small::MAX_ENTRIES && member.len() <= small::MAX_MEMBER {
                s.insert_new(&member, score);
                return true;
            }
            self.to_skiplist();
        }
        match &mut self.repr {
            Repr::Big(z) => z.insert(member, score),
            Repr::Small(_) => unreachable!("converted above"),
        }
    }

    /// Removes `member`; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.repr {
            Repr::Small(s) => {
                let i = s.find(member)?;
                let score = s.score_at(i);
                s.remove_range(i, i + 1);
                Some(score)
            }
            Repr::Big(z) => z.remove(member),
        }
    }

    /// 0-based rank of `member` in ascending order.
    #[inline]
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.repr {
            Repr::Small(s) => s.find(member),
            Repr::Big(z) => z.rank(member),
        }
    }

    /// Element at 0-based ascending `rank`.
    pub fn get_by_rank(&self, rank: usize) -> Option<(&[u8], f64)> {
        match &self.repr {
            Repr::Small(s) => (rank < s.len()).then(|| s.at(rank)),
            Repr::Big(z) => z.get_by_rank(rank).map(|(m, sc)| (&m[..], sc)),
        }
    }

    /// Lowest element.
    pub fn first(&self) -> Option<(&[u8], f64)> {
        self.get_by_rank(0)
    }

    /// Highest element.
    pub fn last(&self) -> Option<(&[u8], f64)> {
        match &self.repr {
            Repr::Small(s) => s.len().checked_sub(1).map(|i| s.at(i)),
            Repr::Big(z) => z.last().map(|(m, sc)| (&m[..], sc)),
        }
    }

    /// Elements in ascending order from rank `start` (inclusive).
    pub fn iter_from(&self, start: usize) -> Iter<'_> {
        Iter(match &self.repr {
            Repr::Small(s) => Walk::small(s, start, false),
            Repr::Big(z) => Walk::Big(z.iter_from(start)),
        })
    }

    /// Elements in descending order from rank `start` (inclusive, an
    /// ascending rank) down to the lowest.
    pub fn iter_rev_from(&self, start: usize) -> Iter<'_> {
        Iter(match &self.repr {
            Repr::Small(s) => Walk::small(s, if start < s.len() { start + 1 } else { 0 }, true),
            Repr::Big(z) => Walk::Big(z.iter_rev_from(start)),
        })
    }

    /// All elements in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }

    /// Number of leading elements for which `pred(score, member)` holds
    /// (`pred` true then false along the order).
    fn count_while(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        match &self.repr {
            Repr::Small(s) => s.partition_point(pred),
            Repr::Big(z) => z.count_while(|n| pred(n.score, &n.member)),
        }
    }

    /// Number of elements below `min` (the rank of the first element in a
    /// range starting at `min`).
    pub fn score_lower(&self, min: ScoreBound) -> usize {
        if min.exclusive {
            self.count_while_score(|s| s <= min.value)
        } else {
            self.count_while_score(|s| s < min.value)
        }
    }

    /// [`count_while`](Self::count_while) of a predicate on the score.
    fn count_while_score(&self, pred: impl Fn(f64) -> bool) -> usize {
        match &self.repr {
            Repr::Small(s) => s.partition_point_score(pred),
            Repr::Big(z) => z.count_while(|n| pred(n.score)),
        }
    }

    /// Number of elements at or below `max` (one past the rank of the last
    /// element in a range ending at `max`).
    pub fn score_upper(&self, max: ScoreBound) -> usize {
        if max.exclusive {
            self.count_while_score(|s| s < max.value)
        } else {
            self.count_while_score(|s| s <= max.value)
        }
    }

    /// Rank interval `[lo, hi)` of the elements with scores in `[min, max]`.
    pub fn score_range(&self, min: ScoreBound, max: ScoreBound) -> (usize, usize) {
        let lo = self.score_lower(min);
        let hi = self.score_upper(max).max(lo);
        (lo, hi)
    }

    /// Rank interval `[lo, hi)` of the members in the lexicographic range,
    /// walked from the lowest element (`ZRANGE … BYLEX`, `ZLEXCOUNT`,
    /// `ZREMRANGEBYLEX`). Meaningful when all scores are equal; otherwise
    /// Redis leaves the result unspecified, but a small set (listpack on
    /// Redis) gives the answer of Redis's linear walk, every time.
    pub fn lex_range(&self, min: &LexBound, max: &LexBound) -> (usize, usize) {
        if self.listpack_sized() {
            return self.lex_walk(min, max, false);
        }
        self.lex_descend(min, max)
    }

    /// Like [`lex_range`](Self::lex_range), walked from the highest element
    /// (`ZREVRANGEBYLEX`, `ZRANGE … BYLEX REV`).
    pub fn lex_range_rev(&self, min: &LexBound, max: &LexBound) -> (usize, usize) {
        if self.listpack_sized() {
            return self.lex_walk(min, max, true);
        }
        self.lex_descend(min, max)
    }

    /// Within Redis's default listpack limits (128 members of ≤ 64 bytes).
    fn listpack_sized(&self) -> bool {
        self.len() <= 128 && self.max_member_len() <= 64
    }

    /// Redis's listpack lex walk (`zzlFirstInLexRange` / `zzlLastInLexRange`
    /// then elements while in range).
    fn lex_walk(&self, min: &LexBound, max: &LexBound, rev: bool) -> (usize, usize) {
        let gte_min = |m: &[u8]| match min {
            LexBound::NegInf => true,
            LexBound::PosInf => false,
            LexBound::Value(v, excl) => m > &v[..] || (!*excl && m == &v[..]),
        };
        let lte_max = |m: &[u8]| match max {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Value(v, excl) => m < &v[..] || (!*excl && m == &v[..]),
        };
        let members: Vec<&[u8]> = self.iter().map(|(m, _)| m).collect();
        let empty_range = match (min, max) {
            (LexBound::PosInf, _) | (_, LexBound::NegInf) => true,
            (LexBound::Value(a, ax), LexBound::Value(b, bx)) => a > b || (a == b && (*ax || *bx)),
            _ => false,
        };
        let (Some(first), Some(last)) = (members.first(), members.last()) else {
            return (0, 0);
        };
        if empty_range || !gte_min(last) || !lte_max(first) {
            return (0, 0);
        }
        if rev {
            let Some(k) = members.iter().rposition(|m| lte_max(m)) else { return (0, 0) };
            if !gte_min(members[k]) {
                return (0, 0);
            }
            let lo = k - members[..k].iter().rev().take_while(|m| gte_min(m)).count();
            (lo, k + 1)
        } else {
            let Some(lo) = members.iter().position(|m| gte_min(m)) else { return (0, 0) };
            if !lte_max(members[lo]) {
                return (0, 0);
            }
            (lo, lo + 1 + members[lo + 1..].iter().take_while(|m| lte_max(m)).count())
        }
    }

    /// The descent (`zslFirstInLexRange`…): O(log n) on the skip list, a
    /// binary search on the small form.
    fn lex_descend(&self, min: &LexBound, max: &LexBound) -> (usize, usize) {
        let lo = match min {
            LexBound::NegInf => 0,
            LexBound::PosInf => self.len(),
            LexBound::Value(v, true) => self.count_while(|_, m| m <= &v[..]),
            LexBound::Value(v, false) => self.count_while(|_, m| m < &v[..]),
        };
        let hi = match max {
            LexBound::NegInf => 0,
            LexBound::PosInf => self.len(),
            LexBound::Value(v, true) => self.count_while(|_, m| m < &v[..]),
            LexBound::Value(v, false) => self.count_while(|_, m| m <= &v[..]),
        };
        (lo, hi.max(lo))
    }

    /// Removes the elements with ranks in `[start, end)`; returns them in
    /// ascending order.
    pub fn remove_rank_range(&mut self, start: usize, end: usize) -> Vec<(Bytes, f64)> {
        match &mut self.repr {
            Repr::Small(s) => {
                let end = end.min(s.len());
                if start >= end {
                    return Vec::new();
                }
                let out = (start..end)
                    .map(|i| {
                        let (m, sc) = s.at(i);
                        (Bytes::copy_from_slice(m), sc)
                    })
                    .collect();
                s.remove_range(start, end);
                out
            }
            Repr::Big(z) => z.remove_rank_range(start, end),
        }
    }

    /// Member at position `i` of the set's stable order: its rank in the
    /// small form, its place in the member map in the skip list's (random
    /// sampling, ZSCAN's cursor).
    pub fn entry_at(&self, i: usize) -> Option<(&[u8], f64)> {
        match &self.repr {
            Repr::Small(s) => (i < s.len()).then(|| s.at(i)),
            Repr::Big(z) => z.entry_at(i).map(|(m, sc)| (&m[..], sc)),
        }
    }

    /// Checks every structural invariant (tests).
    #[cfg(test)]
    fn check(&self) {
        match &self.repr {
            Repr::Small(s) => s.check(),
            Repr::Big(z) => z.check(),
        }
    }
}

/// Iterator over `(member, score)` in order (or reverse order).
pub struct Iter<'a>(Walk<'a>);

enum Walk<'a> {
    /// The small form's sections ([`Small::sections`]); `next`: the next
    /// index forward, or one past it backward (0: done); `at`: where the
    /// member of the entry before `next` ends, forward (a running offset).
    Small {
        ends: &'a [u8],
        scores: small::Scores<'a>,
        members: &'a [u8],
        next: usize,
        at: usize,
        rev: bool,
    },
    Big(SkipIter<'a>),
}

impl<'a> Walk<'a> {
    fn small(s: &'a Small, next: usize, rev: bool) -> Walk<'a> {
        let (ends, scores, members) = s.sections();
        let end = |j: usize| usize::from(u16::from_le_bytes([ends[2 * j], ends[2 * j + 1]]));
        let at = if rev || next == 0 || next > s.len() { 0 } else { end(next - 1) };
        Walk::Small { ends, scores, members, next, at, rev }
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Walk::Small { ends, scores, members, next, at, rev } => {
                let end = |j: usize| usize::from(u16::from_le_bytes([ends[2 * j], ends[2 * j + 1]]));
                let score = |j: usize| scores.get(j);
                if *rev {
                    let i = next.checked_sub(1)?;
                    *next = i;
                    let start = if i == 0 { 0 } else { end(i - 1) };
                    Some((&members[start..end(i)], score(i)))
                } else {
                    let i = *next;
                    if 2 * i >= ends.len() {
                        return None;
                    }
                    *next += 1;
                    let (start, stop) = (*at, end(i));
                    *at = stop;
                    Some((&members[start..stop], score(i)))
                }
            }
            Walk::Big(it) => it.next().map(|(m, sc)| (&m[..], sc)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use rand::{Rng, SeedableRng};

    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
    struct F(f64);
    impl Eq for F {}
    #[allow(clippy::derive_ord_xor_partial_ord)]
    impl Ord for F {
        fn cmp(&self, o: &Self) -> Ordering {
            self.0.partial_cmp(&o.0).expect("no NaN")
        }
    }

    struct Model {
        order: BTreeSet<(F, Vec<u8>)>,
        scores: HashMap<Vec<u8>, f64>,
    }

    impl Model {
        fn sorted(&self) -> Vec<(Vec<u8>, f64)> {
            self.order.iter().map(|(s, m)| (m.clone(), s.0)).collect()
        }
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn orders_by_score_then_member() {
        let mut z = ZSet::new();
        assert!(z.insert(b("b"), 1.0));
        assert!(z.insert(b("a"), 1.0));
        assert!(z.insert(b("c"), 0.5));
        assert!(!z.insert(b("c"), 2.0));
        let v: Vec<_> = z.iter().map(|(m, s)| (m.to_vec(), s)).collect();
        assert_eq!(v, vec![(b"a".to_vec(), 1.0), (b"b".to_vec(), 1.0), (b"c".to_vec(), 2.0)]);
        assert_eq!(z.rank(b"c"), Some(2));
        assert_eq!(z.get_by_rank(1).map(|(m, _)| m.to_vec()), Some(b"b".to_vec()));
        assert_eq!(z.remove(b"a"), Some(1.0));
        assert_eq!(z.rank(b"b"), Some(0));
        z.check();
    }

    #[test]
    fn score_and_lex_ranges() {
        let mut z = ZSet::new();
        for (i, m) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            z.insert(b(m), i as f64);
        }
        let inc = |v| ScoreBound { value: v, exclusive: false };
        let exc = |v| ScoreBound { value: v, exclusive: true };
        assert_eq!(z.score_range(inc(1.0), inc(3.0)), (1, 4));
        assert_eq!(z.score_range(exc(1.0), exc(3.0)), (2, 3));
        assert_eq!(z.score_range(inc(3.0), inc(1.0)), (3, 3));
        assert_eq!(z.score_range(inc(f64::NEG_INFINITY), inc(f64::INFINITY)), (0, 5));
        let mut l = ZSet::new();
        for m in ["a", "b", "c", "d"] {
            l.insert(b(m), 0.0);
        }
        assert_eq!(l.lex_range(&LexBound::Value(b("b"), false), &LexBound::PosInf), (1, 4));
        assert_eq!(l.lex_range(&LexBound::Value(b("b"), true), &LexBound::Value(b("d"), true)), (2, 3));
        assert_eq!(l.lex_range(&LexBound::NegInf, &LexBound::Value(b("bb"), false)), (0, 2));
        let (lo, hi) = l.lex_range(&LexBound::PosInf, &LexBound::NegInf);
        assert_eq!(lo, hi, "an inverted range is empty");
        // Both walks agree with the descent when members are in lex order.
        for (min, max) in [
            (LexBound::NegInf, LexBound::PosInf),
            (LexBound::Value(b("b"), false), LexBound::Value(b("c"), true)),
            (LexBound::Value(b("a"), true), LexBound::PosInf),
        ] {
            assert_eq!(l.lex_walk(&min, &max, false), l.lex_descend(&min, &max));
            assert_eq!(l.lex_walk(&min, &max, true), l.lex_descend(&min, &max));
        }
    }

    /// Every read of `a` and `b` (same content, any forms) answers alike.
    fn same_answers(a: &ZSet, b: &ZSet, rng: &mut rand::rngs::SmallRng) {
        assert_eq!(a.len(), b.len());
        let all: Vec<(Vec<u8>, f64)> = a.iter().map(|(m, s)| (m.to_vec(), s)).collect();
        assert_eq!(all, b.iter().map(|(m, s)| (m.to_vec(), s)).collect::<Vec<_>>());
        let rev: Vec<(Vec<u8>, f64)> =
            b.iter_rev_from(b.len().saturating_sub(1)).map(|(m, s)| (m.to_vec(), s)).collect();
        assert_eq!(rev, all.iter().rev().cloned().collect::<Vec<_>>());
        for (i, (m, s)) in all.iter().enumerate() {
            assert_eq!((a.rank(m), b.rank(m)), (Some(i), Some(i)));
            assert_eq!((a.score(m), b.score(m)), (Some(*s), Some(*s)));
            assert_eq!(a.get_by_rank(i), b.get_by_rank(i));
        }
        assert_eq!((a.first(), a.last()), (b.first(), b.last()));
        assert_eq!(a.max_member_len(), b.max_member_len());
        for _ in 0..20 {
            let bound = |rng: &mut rand::rngs::SmallRng| ScoreBound {
                value: match rng.random_range(0..8) {
                    0 => f64::NEG_INFINITY,
                    1 => f64::INFINITY,
                    _ => f64::from(rng.random_range(-12..12)) / 2.0,
                },
                exclusive: rng.random_bool(0.5),
            };
            let (min, max) = (bound(rng), bound(rng));
            assert_eq!(a.score_range(min, max), b.score_range(min, max));
            let lex = |rng: &mut rand::rngs::SmallRng| match rng.random_range(0..5) {
                0 => LexBound::NegInf,
                1 => LexBound::PosInf,
                _ => LexBound::Value(Bytes::from(format!("m{}", rng.random_range(0..160))), rng.random_bool(0.5)),
            };
            let (min, max) = (lex(rng), lex(rng));
            assert_eq!(a.lex_range(&min, &max), b.lex_range(&min, &max));
            assert_eq!(a.lex_range_rev(&min, &max), b.lex_range_rev(&min, &max));
        }
    }

    #[test]
    fn small_and_skiplist_forms_agree() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(40);
        for round in 0..40 {
            let (mut a, mut b) = (ZSet::new(), ZSet::new());
            b.to_skiplist();
            let members = if round % 2 == 0 { 100 } else { 160 };
            for _ in 0..400 {
                let m = Bytes::from(format!("m{}", rng.random_range(0..members)));
                match rng.random_range(0..10) {
                    0..=5 => {
                        let s = f64::from(rng.random_range(-8..8)) / 2.0;
                        assert_eq!(a.insert(m.clone(), s), b.insert(m, s));
                    }
                    6..=7 => assert_eq!(a.remove(&m), b.remove(&m)),
                    8 => {
                        let n = a.len();
                        let lo = rng.random_range(0..=n);
                        let hi = (lo + rng.random_range(0..4)).min(n);
                        assert_eq!(a.remove_rank_range(lo, hi), b.remove_rank_range(lo, hi));
                    }
                    _ => same_answers(&a, &b, &mut rng),
                }
                a.check();
                b.check();
                assert!(!b.is_small());
            }
            same_answers(&a, &b, &mut rng);
        }
    }

    #[test]
    fn converts_past_either_limit_and_never_back() {
        let mut z = ZSet::new();
        for i in 0..small::MAX_ENTRIES {
            z.insert(Bytes::from(format!("{i}")), i as f64);
        }
        assert!(z.is_small());
        assert!(!z.insert(b("0"), -1.0), "an update");
        assert!(z.is_small());
        z.insert(b("one more"), 0.5);
        assert!(!z.is_small());
        z.check();
        while z.len() > 1 {
            let (m, _) = z.first().expect("not empty");
            let m = m.to_vec();
            z.remove(&m);
        }
        assert!(!z.is_small(), "a skip list never goes back");
        let mut z = ZSet::new();
        z.insert(Bytes::from(vec![b'x'; small::MAX_MEMBER]), 1.0);
        assert!(z.is_small());
        z.insert(Bytes::from(vec![b'y'; small::MAX_MEMBER + 1]), 1.0);
        assert!(!z.is_small());
        assert_eq!(z.max_member_len(), small::MAX_MEMBER + 1);
    }

    #[test]
    fn infinities_and_equal_scores_order_in_both_forms() {
        for big in [false, true] {
            let mut z = ZSet::new();
            if big {
                z.to_skiplist();
            }
            for (m, s) in [("b", f64::INFINITY), ("a", f64::INFINITY), ("z", f64::NEG_INFINITY), ("c", 0.0), ("", -0.0)]
            {
                z.insert(b(m), s);
            }
            let order: Vec<Vec<u8>> = z.iter().map(|(m, _)| m.to_vec()).collect();
            assert_eq!(order, [&b"z"[..], b"", b"c", b"a", b"b"].map(|m| m.to_vec()));
            let all = ScoreBound { value: f64::NEG_INFINITY, exclusive: false };
            let top = ScoreBound { value: f64::INFINITY, exclusive: false };
            assert_eq!(z.score_range(all, top), (0, 5));
            let open_top = ScoreBound { value: f64::INFINITY, exclusive: true };
            assert_eq!(z.score_range(all, open_top), (0, 3));
            let zero = ScoreBound { value: 0.0, exclusive: false };
            assert_eq!(z.score_range(zero, zero), (1, 3), "-0 and 0 compare equal");
        }
    }

    #[test]
    fn random_operations_match_a_btreeset_model() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut z = ZSet::new();
        let mut m = Model { order: BTreeSet::new(), scores: HashMap::new() };
        for step in 0..20_000 {
            let member = format!("m{}", rng.random_range(0..500)).into_bytes();
            match rng.random_range(0..10) {
                0..=5 => {
                    let score = f64::from(rng.random_range(-50..50)) / 4.0;
                    let added = z.insert(Bytes::from(member.clone()), score);
                    let old = m.scores.insert(member.clone(), score);
                    assert_eq!(added, old.is_none());
                    if let Some(o) = old {
                        m.order.remove(&(F(o), member.clone()));
                    }
                    m.order.insert((F(score), member));
                }
                6..=7 => {
                    let got = z.remove(&member);
                    let want = m.scores.remove(&member);
                    assert_eq!(got, want);
                    if let Some(o) = want {
                        m.order.remove(&(F(o), member));
                    }
                }
                8 => {
                    let sorted = m.sorted();
                    let got = z.rank(&member);
                    let want = sorted.iter().position(|(x, _)| *x == member);
                    assert_eq!(got, want);
                    if !sorted.is_empty() {
                        let r = rng.random_range(0..sorted.len());
                        let (gm, gs) = z.get_by_rank(r).expect("rank in range");
                        assert_eq!((gm, gs), (&sorted[r].0[..], sorted[r].1));
                    }
                }
                _ => {
                    let sorted = m.sorted();
                    let a = f64::from(rng.random_range(-60..60)) / 4.0;
                    let c = f64::from(rng.random_range(-60..60)) / 4.0;
                    let (ae, ce) = (rng.random_bool(0.5), rng.random_bool(0.5));
                    let min = ScoreBound { value: a, exclusive: ae };
                    let max = ScoreBound { value: c, exclusive: ce };
                    let (lo, hi) = z.score_range(min, max);
                    let want: Vec<(Vec<u8>, f64)> = sorted
                        .iter()
                        .filter(|(_, s)| (if ae { *s > a } else { *s >= a }) && (if ce { *s < c } else { *s <= c }))
                        .cloned()
                        .collect();
                    let got: Vec<(Vec<u8>, f64)> =
                        z.iter_from(lo).take(hi - lo).map(|(m, s)| (m.to_vec(), s)).collect();
                    assert_eq!(got, want);
                    if hi > lo {
                        let rev: Vec<(Vec<u8>, f64)> =
                            z.iter_rev_from(hi - 1).take(hi - lo).map(|(m, s)| (m.to_vec(), s)).collect();
                        let mut w = want.clone();
                        w.reverse();
                        assert_eq!(rev, w);
                    }
                }
            }
            assert_eq!(z.len(), m.scores.len());
            if step % 1000 == 0 {
                z.check();
                let all: Vec<(Vec<u8>, f64)> = z.iter().map(|(m, s)| (m.to_vec(), s)).collect();
                assert_eq!(all, m.sorted());
            }
        }
        z.check();
        // Remove by rank ranges until empty.
        while !z.is_empty() {
            let n = z.len();
            let s = rng.random_range(0..n);
            let e = (s + rng.random_range(1..20)).min(n);
            let sorted = m.sorted();
            let removed = z.remove_rank_range(s, e);
            let want: Vec<(Bytes, f64)> = sorted[s..e].iter().map(|(m, s)| (Bytes::from(m.clone()), *s)).collect();
            assert_eq!(removed, want);
            for (mm, sc) in &want {
                m.order.remove(&(F(*sc), mm.to_vec()));
                m.scores.remove(&mm[..]);
            }
            z.check();
        }
        assert!(z.first().is_none() && z.last().is_none());
    }

    #[test]
    fn lex_ranges_match_model() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let mut z = ZSet::new();
        let mut all = BTreeSet::new();
        for _ in 0..300 {
            let s: String = (0..rng.random_range(1..4)).map(|_| rng.random_range(b'a'..b'e') as char).collect();
            z.insert(Bytes::from(s.clone()), 0.0);
            all.insert(s);
        }
        let sorted: Vec<&String> = all.iter().collect();
        for _ in 0..500 {
            let pick = |rng: &mut rand::rngs::SmallRng| -> LexBound {
                match rng.random_range(0..6) {
                    0 => LexBound::NegInf,
                    1 => LexBound::PosInf,
                    _ => {
                        let s: String =
                            (0..rng.random_range(1..4)).map(|_| rng.random_range(b'a'..b'e') as char).collect();
                        LexBound::Value(Bytes::from(s), rng.random_bool(0.5))
                    }
                }
            };
            let (min, max) = (pick(&mut rng), pick(&mut rng));
            let gte = |x: &str| match &min {
                LexBound::NegInf => true,
                LexBound::PosInf => false,
                LexBound::Value(v, ex) => {
                    if *ex {
                        x.as_bytes() > &v[..]
                    } else {
                        x.as_bytes() >= &v[..]
                    }
                }
            };
            let lte = |x: &str| match &max {
                LexBound::NegInf => false,
                LexBound::PosInf => true,
                LexBound::Value(v, ex) => {
                    if *ex {
                        x.as_bytes() < &v[..]
                    } else {
                        x.as_bytes() <= &v[..]
                    }
                }
            };
            let want: Vec<&String> = sorted.iter().filter(|x| gte(x) && lte(x)).cloned().collect();
            let (lo, hi) = z.lex_range(&min, &max);
            let got: Vec<String> =
                z.iter_from(lo).take(hi - lo).map(|(m, _)| String::from_utf8(m.to_vec()).unwrap()).collect();
            assert_eq!(got.iter().collect::<Vec<_>>(), want);
        }
    }
}
