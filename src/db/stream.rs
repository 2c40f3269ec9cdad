//! Stream values (Redis 7.0 `t_stream.c` semantics, our own storage).
//!
//! Entries live in a `BTreeMap` keyed by the 128-bit id `(ms, seq)`, so
//! ranges, trimming from the front and lookups are logarithmic. Redis keeps
//! entries in listpack nodes of at most `stream-node-max-entries` (100)
//! entries each, and its approximate (`~`) trimming and `XINFO STREAM`'s
//! radix-tree figures depend on those nodes; [`Stream`] keeps the node
//! boundaries as a second small map (first id of node → entry counts), so
//! both answer as Redis does without storing listpacks.
//!
//! A stream also keeps its counters (last id, max deleted id, entries added,
//! first id) and its consumer groups (last delivered id, entries read, a
//! PEL keyed by id, consumers with their own PEL index). Node sizes are
//! counted with the listpack encodings (`stream-node-max-bytes`), so
//! approximate `~` trimming removes whole nodes as Redis does.
//! Group-only changes (`XREADGROUP`, `XACK`, `XCLAIM`, `XGROUP` …) count as
//! dirty but do not signal the key, as in Redis 7.0: WATCH stays valid.
//!
//! Redis 8.2's reference policies ([`RefPolicy`]: `XDELEX`, `XACKDEL`,
//! `XADD`/`XTRIM`'s `KEEPREF | DELREF | ACKED`) decide what a deletion does
//! to the groups: nothing, drop the id from every PEL, or spare an entry a
//! group still needs ([`Stream::is_referenced`]).

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;

/// An entry id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(&self) -> bool {
        self.ms == 0 && self.seq == 0
    }

    /// The next id (`None` past the last possible one).
    pub fn incr(&self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(StreamId::new(self.ms + 1, 0))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous id (`None` before 0-0).
    pub fn decr(&self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(StreamId::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    /// `ms-seq`.
    pub fn to_bytes(self) -> Bytes {
        Bytes::from(format!("{}-{}", self.ms, self.seq))
    }

    /// The big-endian 16-byte key Redis stores it under (radix tree).
    fn key_bytes(&self) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&self.ms.to_be_bytes());
        k[8..].copy_from_slice(&self.seq.to_be_bytes());
        k
    }
}

/// Field-value pairs of one entry.
pub type Fields = Vec<(Bytes, Bytes)>;

/// A pending (delivered, not acknowledged) entry of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingEntry {
    pub consumer: Bytes,
    /// Last delivery, unix ms on the server clock.
    pub delivery_time: u64,
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Debug, Clone, Default)]
pub struct Consumer {
    /// Last time the consumer was seen (read or claimed), unix ms.
    pub seen_time: u64,
    /// Last time it was given entries (read new ones or claimed some), unix
    /// ms; None if never (Redis 7.2's `active_time`, -1).
    pub active_time: Option<u64>,
    /// Its own pending entries (details in the group's PEL).
    pub pel: std::collections::BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Debug, Clone)]
pub struct Group {
    pub last_id: StreamId,
    /// Logical read counter; `None` when unknown (Redis's -1).
    pub entries_read: Option<u64>,
    pub pel: BTreeMap<StreamId, PendingEntry>,
    /// Consumers by name, sorted (Redis's radix tree order).
    pub consumers: BTreeMap<Bytes, Consumer>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: Option<u64>) -> Group {
        Group { last_id, entries_read, pel: BTreeMap::new(), consumers: BTreeMap::new() }
    }

    /// Removes `id` from the group PEL and its consumer's PEL.
    pub fn unpend(&mut self, id: &StreamId) -> bool {
        match self.pel.remove(id) {
            Some(p) => {
                if let Some(c) = self.consumers.get_mut(&p.consumer) {
                    c.pel.remove(id);
                }
                true
            }
            None => false,
        }
    }
}

/// One listpack node as Redis would hold it: its counts, its size in
/// bytes and its master fields (which decide where Redis starts a new node).
#[derive(Debug, Clone)]
struct Node {
    /// Entries ever appended to the node (deleted ones included).
    total: u32,
    /// Entries still present.
    live: u32,
    /// The last id appended to the node (deleted or not).
    last: StreamId,
    /// Bytes of the listpack (`lpBytes`) but for its first two elements
    /// (the live and deleted counts, whose encodings grow with them).
    bytes: usize,
    /// The master entry's field names.
    fields: Vec<Bytes>,
}

/// Where Redis closes a listpack node: `stream-node-max-entries` entries
/// (deleted ones included), or an entry that would take it to
/// `stream-node-max-bytes` (counting the entry's raw field and value
/// lengths, as Redis does). 0 means no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_bytes: u64,
    pub max_entries: i64,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits { max_bytes: 4096, max_entries: 100 }
    }
}

impl NodeLimits {
    /// The default LIMIT of a `~` trim: 100 nodes' worth of entries.
    pub fn approx_trim_limit(&self) -> u64 {
        let limit = self.max_entries.saturating_mul(100);
        if limit <= 0 {
            10_000
        } else {
            limit.min(1_000_000) as u64
        }
    }
}

/// Largest listpack Redis builds whatever `stream-node-max-bytes` says.
const LISTPACK_MAX_SIZE: u64 = 1 << 30;

/// Listpack layout sizes (Redis's `listpack.c` encodings).
mod lp {
    /// Header (total bytes, element count) plus the end byte.
    pub const EMPTY: usize = 7;

    fn backlen(enc: usize) -> usize {
        match enc {
            0..=127 => 1,
            128..=16382 => 2,
            16383..=2097150 => 3,
            2097151..=268435454 => 4,
            _ => 5,
        }
    }

    /// An integer element.
    pub fn int(v: i64) -> usize {
        let enc = match v {
            0..=127 => 1,
            -4096..=4095 => 2,
            -32768..=32767 => 3,
            -8388608..=8388607 => 4,
            -2147483648..=2147483647 => 5,
            _ => 9,
        };
        enc + backlen(enc)
    }

    /// A string element (stored as an integer when it reads as one).
    pub fn string(s: &[u8]) -> usize {
        if let Some(v) = crate::num::parse_i64_strict(s) {
            return int(v);
        }
        let n = s.len();
        let header = if n < 64 {
            1
        } else if n < 4096 {
            2
        } else {
            5
        };
        header + n + backlen(header + n)
    }
}

/// A node as DUMP writes it: master id, master field names, live entries.
pub type DumpNode<'a> = (StreamId, &'a [Bytes], Vec<(StreamId, &'a Fields)>);

/// A stream.
#[derive(Debug, Clone, Default)]
pub struct Stream {
    entries: BTreeMap<StreamId, Fields>,
    /// First id of each node → its counts.
    nodes: BTreeMap<StreamId, Node>,
    pub last_id: StreamId,
    pub max_deleted_id: StreamId,
    pub entries_added: u64,
    /// First entry id (0-0 when empty), as Redis records it.
    pub first_id: StreamId,
    /// Groups by name, sorted as Redis lists them.
    pub groups: BTreeMap<Bytes, Group>,
}

/// How to trim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

/// What deleting an entry does to the consumer groups' references to it
/// (Redis 8.2's `KEEPREF | DELREF | ACKED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RefPolicy {
    /// Delete the entry, leave the PELs as they are (what `XDEL` does).
    #[default]
    KeepRef,
    /// Delete the entry and drop its id from every group's PEL.
    DelRef,
    /// Delete the entry only if no group still needs it.
    Acked,
}

/// How a group's lag and read counter are worked out: Redis 7.0's rules,
/// or those Redis 8.0 has (lag after trimming and deletions before the
/// first entry; the fixes of Redis's issues 13337 and 13957).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LagRules {
    Redis70,
    Since80,
}

/// The reply codes of `XDELEX` and `XACKDEL`, one per id.
pub mod del_code {
    /// Not in the stream (`XDELEX`), not pending in the group (`XACKDEL`).
    pub const NOT_FOUND: i64 = -1;
    /// Deleted (`XACKDEL`: acknowledged, and deleted if it was there).
    pub const DELETED: i64 = 1;
    /// Kept (`ACKED`): a group has it pending or has not delivered it yet.
    pub const REFERENCED: i64 = 2;
}

/// Bytes one entry takes in its node's listpack: flags, id deltas from the
/// master id, the field names unless they match the master's, the values,
/// and the element count.
fn entry_bytes(master: &StreamId, id: &StreamId, fields: &Fields, same_fields: bool) -> usize {
    let n = fields.len() as i64;
    let mut b = lp::int(if same_fields { 2 } else { 0 })
        + lp::int(id.ms.wrapping_sub(master.ms) as i64)
        + lp::int(id.seq.wrapping_sub(master.seq) as i64);
    if !same_fields {
        b += lp::int(n);
    }
    for (f, v) in fields {
        if !same_fields {
            b += lp::string(f);
        }
        b += lp::string(v);
    }
    b + lp::int(if same_fields { n + 3 } else { 2 * n + 4 })
}

impl Node {
    /// The listpack's size with its current counts.
    fn lp_bytes(&self) -> usize {
        self.bytes + lp::int(i64::from(self.live)) + lp::int(i64::from(self.total - self.live))
    }
}

impl Stream {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, id: &StreamId) -> Option<&Fields> {
        self.entries.get(id)
    }

    pub fn contains(&self, id: &StreamId) -> bool {
        self.entries.contains_key(id)
    }

    /// The last entry's id, or 0-0 (Redis's `streamLastValidID`).
    pub fn last_entry_id(&self) -> StreamId {
        self.entries.keys().next_back().copied().unwrap_or_default()
    }

    pub fn first_entry(&self) -> Option<(&StreamId, &Fields)> {
        self.entries.iter().next()
    }

    pub fn last_entry(&self) -> Option<(&StreamId, &Fields)> {
        self.entries.iter().next_back()
    }

    /// Entries with `start <= id <= end`, ascending.
    pub fn range(&self, start: StreamId, end: StreamId) -> impl DoubleEndedIterator<Item = (&StreamId, &Fields)> {
        let r = if start <= end { Some(start..=end) } else { None };
        r.into_iter().flat_map(move |r| self.entries.range(r))
    }

    /// Appends an entry whose id the caller checked is above `last_id`.
    pub fn append(&mut self, id: StreamId, fields: Fields, limits: NodeLimits) {
        let raw: usize = fields.iter().map(|(f, v)| f.len() + v.len()).sum();
        let max_bytes = if limits.max_bytes == 0 || limits.max_bytes > LISTPACK_MAX_SIZE {
            LISTPACK_MAX_SIZE
        } else {
            limits.max_bytes
        };
        let tail = self.nodes.iter_mut().next_back().filter(|(_, n)| {
            // Redis's checks: bytes first, then the entry count.
            ((n.lp_bytes() + raw) as u64) < max_bytes
                && (limits.max_entries == 0 || i64::from(n.total) < limits.max_entries)
        });
        match tail {
            Some((master, n)) => {
                let same = n.fields.len() == fields.len() && n.fields.iter().zip(&fields).all(|(a, (b, _))| a == b);
                n.bytes += entry_bytes(master, &id, &fields, same);
                n.total += 1;
                n.live += 1;
                n.last = id;
            }
            None => {
                let names: Vec<Bytes> = fields.iter().map(|(f, _)| f.clone()).collect();
                let master = lp::EMPTY
                    + lp::int(names.len() as i64)
                    + names.iter().map(|f| lp::string(f)).sum::<usize>()
                    + lp::int(0);
                let bytes = master + entry_bytes(&id, &id, &fields, true);
                self.nodes.insert(id, Node { total: 1, live: 1, last: id, bytes, fields: names });
            }
        }
        if self.entries.is_empty() {
            self.first_id = id;
        }
        self.entries.insert(id, fields);
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Removes one entry; true if it existed. Updates the node counts and
    /// the first id, not `max_deleted_id` (XDEL does that).
    /// A node left empty goes unless `keep_node` (Redis keeps a node
    /// whose entries an exact trim flagged deleted one by one).
    fn remove_entry(&mut self, id: &StreamId, keep_node: bool) -> bool {
        if self.entries.remove(id).is_none() {
            return false;
        }
        if let Some((&start, n)) = self.nodes.range_mut(..=*id).next_back() {
            n.live -= 1;
            if n.live == 0 && !keep_node {
                self.nodes.remove(&start);
            }
        }
        true
    }

    fn refresh_first_id(&mut self) {
        self.first_id = self.entries.keys().next().copied().unwrap_or_default();
    }

    /// XDEL of one id: true if it was there.
    pub fn delete(&mut self, id: &StreamId) -> bool {
        if !self.remove_entry(id, false) {
            return false;
        }
        if *id > self.max_deleted_id {
            self.max_deleted_id = *id;
        }
        if *id == self.first_id {
            self.refresh_first_id();
        }
        true
    }

    /// Trims from the front; returns the number of entries removed.
    /// `approx` removes whole nodes only; `limit` (0 = none) caps the
    /// entries removed, checked per node as Redis does.
    ///
    /// Under `DelRef` and `Acked` no node goes whole: each entry is looked
    /// at (`Acked` skips the ones a group needs and carries on to the next
    /// node while the node was one the trim wanted gone; `DelRef` drops the
    /// deleted ids from the PELs), so an approximate trim removes nothing,
    /// as in Redis 8.2. Trimming never moves `max_deleted_id`.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64, policy: RefPolicy) -> u64 {
        use std::ops::Bound::{Excluded, Unbounded};
        let mut deleted: u64 = 0;
        // Nodes before this one were trimmed as far as the policy allows.
        let mut from = Unbounded;
        loop {
            if let Trim::MaxLen(max) = how {
                if self.entries.len() as u64 <= max {
                    break;
                }
            }
            let Some((&start, node)) = self.nodes.range((from, Unbounded)).next() else {
                break;
            };
            let (live, last) = (node.live, node.last);
            if limit > 0 && deleted + u64::from(live) > limit {
                break;
            }
            let node_end = self.nodes.range((Excluded(start), Unbounded)).next().map(|(k, _)| *k);
            let node_ids: Vec<StreamId> = match node_end {
                Some(end) => self.entries.range(start..end).map(|(k, _)| *k).collect(),
                None => self.entries.range(start..).map(|(k, _)| *k).collect(),
            };
            let remove_node = match how {
                Trim::MaxLen(max) => self.entries.len() as u64 - u64::from(live) >= max,
                Trim::MinId(min) => last < min,
            };
            if remove_node && policy == RefPolicy::KeepRef {
                for id in &node_ids {
                    self.entries.remove(id);
                }
                self.nodes.remove(&start);
                deleted += node_ids.len() as u64;
                continue;
            }
            if approx {
                break;
            }
            for id in &node_ids {
                let stop = match how {
                    Trim::MaxLen(max) => self.entries.len() as u64 <= max,
                    Trim::MinId(min) => *id >= min,
                };
                if stop {
                    break;
                }
                if policy == RefPolicy::Acked && self.is_referenced(id) {
                    continue;
                }
                self.remove_entry(id, true);
                if policy == RefPolicy::DelRef {
                    self.drop_refs(id);
                }
                deleted += 1;
            }
            if !remove_node {
                break;
            }
            // A node the trim wanted gone goes once empty; one an entry
            // still needed kept stays, and the trim goes on past it.
            if self.nodes.get(&start).is_some_and(|n| n.live == 0) {
                self.nodes.remove(&start);
            }
            from = Excluded(start);
        }
        if deleted > 0 {
            self.refresh_first_id();
        }
        deleted
    }

    /// True if a group still needs entry `id`: it has it pending, or has
    /// not delivered it yet (its last delivered id is before `id`).
    pub fn is_referenced(&self, id: &StreamId) -> bool {
        self.groups.values().any(|g| *id > g.last_id || g.pel.contains_key(id))
    }

    /// Drops `id` from every group's PEL (and its consumer's).
    fn drop_refs(&mut self, id: &StreamId) {
        for g in self.groups.values_mut() {
            g.unpend(id);
        }
    }

    /// `XDELEX` of one id: a [`del_code`]. `DelRef` drops the id from the
    /// PELs even when the entry is gone already.
    pub fn delete_with(&mut self, id: &StreamId, policy: RefPolicy) -> i64 {
        if policy == RefPolicy::Acked && self.is_referenced(id) {
            return del_code::REFERENCED;
        }
        let deleted = self.delete(id);
        if policy == RefPolicy::DelRef {
            self.drop_refs(id);
        }
        if deleted {
            del_code::DELETED
        } else {
            del_code::NOT_FOUND
        }
    }

    /// `XACKDEL` of one id in group `group` (which exists): a [`del_code`]
    /// and whether the entry was deleted. An id pending in the group is
    /// acknowledged whatever the policy decides for the entry; an entry
    /// already gone still answers [`del_code::DELETED`].
    pub fn ack_delete(&mut self, group: &[u8], id: &StreamId, policy: RefPolicy) -> (i64, bool) {
        let Some(g) = self.groups.get_mut(group) else {
            return (del_code::NOT_FOUND, false);
        };
        if !g.unpend(id) {
            return (del_code::NOT_FOUND, false);
        }
        if policy == RefPolicy::Acked && self.is_referenced(id) {
            return (del_code::REFERENCED, false);
        }
        let deleted = self.delete(id);
        if policy == RefPolicy::DelRef {
            self.drop_refs(id);
        }
        (del_code::DELETED, deleted)
    }

    /// The listpack nodes as DUMP writes them: master id, master field
    /// names, the live entries (entries deleted from a node are not kept,
    /// so a dumped node holds only live ones). Empty nodes are skipped.
    pub fn dump_nodes(&self) -> Vec<DumpNode<'_>> {
        let starts: Vec<StreamId> = self.nodes.keys().copied().collect();
        let mut out = Vec::with_capacity(starts.len());
        for (i, start) in starts.iter().enumerate() {
            let entries: Vec<(StreamId, &Fields)> = match starts.get(i + 1) {
                Some(end) => self.entries.range(*start..*end).map(|(k, v)| (*k, v)).collect(),
                None => self.entries.range(*start..).map(|(k, v)| (*k, v)).collect(),
            };
            if !entries.is_empty() {
                out.push((*start, &self.nodes[start].fields[..], entries));
            }
        }
        out
    }

    /// Adds a node read from a DUMP payload: its master id and fields,
    /// its live entries (ascending, above every id already loaded),
    /// how many it had deleted, the id of its last element (deleted or
    /// not) and its listpack's size. Does not touch the counters.
    pub fn load_node(
        &mut self,
        master: StreamId,
        fields: Vec<Bytes>,
        entries: Vec<(StreamId, Fields)>,
        deleted: u32,
        last: StreamId,
        lp_bytes: usize,
    ) {
        let live = entries.len() as u32;
        let bytes = lp_bytes.saturating_sub(lp::int(i64::from(live)) + lp::int(i64::from(deleted)));
        self.nodes.insert(master, Node { total: live + deleted, live, last, bytes, fields });
        self.entries.extend(entries);
    }

    /// The highest entry id stored (loading checks ids ascend).
    pub fn max_loaded_id(&self) -> Option<StreamId> {
        self.entries.keys().next_back().copied()
    }

    /// Number of listpack nodes (`radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Nodes of the radix tree holding the node keys (`radix-tree-nodes`):
    /// the root, each key, each prefix with two or more children and each
    /// child of such a prefix (the ends of compressed runs).
    pub fn radix_tree_nodes(&self) -> usize {
        let keys: Vec<[u8; 16]> = self.nodes.keys().map(StreamId::key_bytes).collect();
        let mut set: HashSet<Vec<u8>> = HashSet::new();
        set.insert(Vec::new());
        for k in &keys {
            set.insert(k.to_vec());
        }
        for w in keys.windows(2) {
            let lcp = w[0].iter().zip(w[1].iter()).take_while(|(a, b)| a == b).count();
            // The branching prefix and the two children that diverge there.
            set.insert(w[0][..lcp].to_vec());
            set.insert(w[0][..lcp + 1].to_vec());
            set.insert(w[1][..lcp + 1].to_vec());
        }
        set.len()
    }

    /// True if an XDEL tombstone may lie in `start..=end` (Redis's
    /// `streamRangeHasTombstones`). Redis 7.0 rules out a tombstone before
    /// the first entry; the [`LagRules::Since80`] rules do not (it may
    /// still lie after a group's last id).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId, rules: LagRules) -> bool {
        if self.entries.is_empty() || self.max_deleted_id.is_zero() {
            return false;
        }
        if rules == LagRules::Redis70 && self.first_id > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// The logical position of `id` counted from the first entry ever
    /// added, when it can be known (`streamEstimateDistanceFromFirstEverEntry`),
    /// by Redis 7.0's rules (what loading an old RDB group uses).
    pub fn estimate_distance(&self, id: &StreamId) -> Option<u64> {
        self.estimate_distance_by(id, LagRules::Redis70)
    }

    /// [`estimate_distance`](Self::estimate_distance) by `rules`: under
    /// [`LagRules::Since80`] an id before the last tombstone has none.
    pub fn estimate_distance_by(&self, id: &StreamId, rules: LagRules) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.entries.is_empty() && *id <= self.last_id {
            return Some(self.entries_added);
        }
        if rules == LagRules::Since80 && !id.is_zero() && *id < self.max_deleted_id {
            return None;
        }
        if *id == self.last_id {
            return Some(self.entries_added);
        } else if *id > self.last_id {
            return None;
        }
        if self.max_deleted_id.is_zero() || self.max_deleted_id < self.first_id {
            let len = self.entries.len() as u64;
            if *id < self.first_id {
                return Some(self.entries_added.wrapping_sub(len));
            } else if *id == self.first_id {
                return Some(self.entries_added.wrapping_sub(len).wrapping_add(1));
            }
        }
        None
    }

    /// A group's lag, if it can be known (signed as Redis computes it: a
    /// counter set past the stream's gives a negative lag). Under
    /// [`LagRules::Since80`] an empty stream has none, and a group whose
    /// last id is before the first entry (no tombstone after it) lags by
    /// the whole stream.
    pub fn group_lag(&self, g: &Group, rules: LagRules) -> Option<i64> {
        let lag = |read: u64| (self.entries_added as i64).wrapping_sub(read as i64);
        if self.entries_added == 0 {
            return Some(0);
        }
        if rules == LagRules::Since80 {
            if self.entries.is_empty() {
                return Some(0);
            }
            if g.last_id < self.first_id && self.max_deleted_id < self.first_id {
                return Some(self.entries.len() as i64);
            }
        }
        if let Some(read) = g.entries_read {
            if !self.range_has_tombstones(g.last_id, StreamId::MAX, rules) {
                return Some(lag(read));
            }
        }
        self.estimate_distance_by(&g.last_id, rules).map(lag)
    }

    /// Advances a group past `id` (delivered with `>`), keeping its read
    /// counter as Redis does: counted on while it is known and nothing
    /// deleted lies ahead (Redis 7.0 looks ahead of `id`; the
    /// [`LagRules::Since80`] rules ahead of the group's last id, which
    /// must not be before the first entry), else estimated afresh.
    pub fn advance_group(&mut self, name: &[u8], id: StreamId, rules: LagRules) {
        let est = self.estimate_distance_by(&id, rules);
        let added = self.entries_added;
        let Some(last) = self.groups.get(name).map(|g| g.last_id) else {
            return;
        };
        let count_on = match rules {
            LagRules::Redis70 => !self.range_has_tombstones(id, StreamId::MAX, rules),
            LagRules::Since80 => last >= self.first_id && !self.range_has_tombstones(last, StreamId::MAX, rules),
        };
        let g = self.groups.get_mut(name).expect("group exists");
        if id > g.last_id {
            match g.entries_read {
                Some(n) if count_on => g.entries_read = Some(n.wrapping_add(1)),
                _ if added > 0 => g.entries_read = est,
                _ => {}
            }
            g.last_id = id;
        }
    }

    /// Rough heap size (MEMORY USAGE).
    pub fn approx_size(&self) -> usize {
        self.entries.values().map(|f| 24 + f.iter().map(|(a, b)| a.len() + b.len() + 8).sum::<usize>()).sum::<usize>()
            + self.groups.values().map(|g| 64 + g.pel.len() * 48).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64) -> StreamId {
        StreamId::new(ms, 0)
    }

    fn filled(n: u64) -> Stream {
        let mut s = Stream::default();
        for i in 1..=n {
            s.append(id(i), vec![(Bytes::from("f"), Bytes::from("v"))], NodeLimits::default());
        }
        s
    }

    #[test]
    fn approximate_trim_removes_whole_nodes_only() {
        let mut s = filled(250);
        assert_eq!(s.node_count(), 3);
        assert_eq!(s.trim(Trim::MaxLen(120), true, 0, RefPolicy::KeepRef), 100);
        assert_eq!(s.len(), 150);
        assert_eq!(s.trim(Trim::MaxLen(0), false, 0, RefPolicy::KeepRef), 150);
        assert!(s.is_empty());
        assert_eq!(s.first_id, StreamId::MIN);
    }

    #[test]
    fn exact_minid_trim_and_first_id() {
        let mut s = filled(10);
        assert_eq!(s.trim(Trim::MinId(id(4)), false, 0, RefPolicy::KeepRef), 3);
        assert_eq!(s.first_id, id(4));
        assert!(s.delete(&id(4)));
        assert_eq!(s.first_id, id(5));
        assert_eq!(s.max_deleted_id, id(4));
    }

    #[test]
    fn nodes_close_on_bytes_as_well_as_entries() {
        let mut s = Stream::default();
        // 200 raw bytes per entry: the 4096-byte listpack fills first.
        for i in 1..=40 {
            s.append(id(i), vec![(Bytes::from("f"), Bytes::from(vec![b'x'; 199]))], NodeLimits::default());
        }
        assert!(s.node_count() > 1 && s.node_count() < 40, "{}", s.node_count());
    }

    /// Entries 1..=n in nodes of three, a group `g` that read them all
    /// with every id in `pending` left unacknowledged.
    fn read_by_group(n: u64, pending: &[u64]) -> Stream {
        let small = NodeLimits { max_bytes: 4096, max_entries: 3 };
        let mut s = Stream::default();
        for i in 1..=n {
            s.append(id(i), vec![(Bytes::from("a"), Bytes::from("1"))], small);
        }
        let mut g = Group::new(id(n), Some(n));
        for &p in pending {
            g.pel.insert(id(p), PendingEntry { consumer: Bytes::from("c"), delivery_time: 0, delivery_count: 1 });
            g.consumers.entry(Bytes::from("c")).or_default().pel.insert(id(p));
        }
        s.groups.insert(Bytes::from("g"), g);
        s
    }

    fn ids(s: &Stream) -> Vec<u64> {
        s.range(StreamId::MIN, StreamId::MAX).map(|(k, _)| k.ms).collect()
    }

    #[test]
    fn referenced_means_pending_or_not_yet_delivered() {
        let mut s = read_by_group(4, &[2]);
        s.groups.get_mut(&b"g"[..]).unwrap().last_id = id(3);
        assert!(!s.is_referenced(&id(1)));
        assert!(s.is_referenced(&id(2)));
        assert!(!s.is_referenced(&id(3)));
        assert!(s.is_referenced(&id(4)));
        // Not in the stream at all, but after the group's last id.
        assert!(s.is_referenced(&id(9)));
        s.groups.clear();
        assert!(!s.is_referenced(&id(4)));
    }

    #[test]
    fn xdelex_codes_per_policy() {
        let mut s = read_by_group(4, &[2, 3]);
        assert_eq!(s.delete_with(&id(2), RefPolicy::Acked), del_code::REFERENCED);
        assert_eq!(s.delete_with(&id(1), RefPolicy::Acked), del_code::DELETED);
        assert_eq!(s.delete_with(&id(1), RefPolicy::Acked), del_code::NOT_FOUND);
        // KEEPREF leaves 2 pending with its entry gone; DELREF on the gone
        // entry answers not found yet drops the reference.
        assert_eq!(s.delete_with(&id(2), RefPolicy::KeepRef), del_code::DELETED);
        assert!(s.groups[&b"g"[..]].pel.contains_key(&id(2)));
        assert_eq!(s.delete_with(&id(2), RefPolicy::DelRef), del_code::NOT_FOUND);
        assert!(!s.groups[&b"g"[..]].pel.contains_key(&id(2)));
        assert_eq!(s.delete_with(&id(3), RefPolicy::DelRef), del_code::DELETED);
        assert!(s.groups[&b"g"[..]].consumers[&b"c"[..]].pel.is_empty());
        assert_eq!(s.max_deleted_id, id(3));
    }

    #[test]
    fn xackdel_acknowledges_whatever_the_policy_keeps() {
        let mut s = read_by_group(3, &[1, 2, 3]);
        let mut other = Group::new(id(1), Some(1));
        other.pel.insert(id(1), PendingEntry { consumer: Bytes::from("d"), delivery_time: 0, delivery_count: 1 });
        s.groups.insert(Bytes::from("h"), other);
        // h has 1 pending and has not delivered 2 or 3.
        assert_eq!(s.ack_delete(b"g", &id(1), RefPolicy::Acked), (del_code::REFERENCED, false));
        assert!(!s.groups[&b"g"[..]].pel.contains_key(&id(1)));
        assert_eq!(s.ack_delete(b"g", &id(1), RefPolicy::Acked), (del_code::NOT_FOUND, false));
        assert_eq!(s.ack_delete(b"g", &id(2), RefPolicy::KeepRef), (del_code::DELETED, true));
        // Entry gone already: acknowledged, answered as deleted.
        assert!(s.delete(&id(3)));
        assert_eq!(s.ack_delete(b"g", &id(3), RefPolicy::KeepRef), (del_code::DELETED, false));
        assert_eq!(s.ack_delete(b"nogroup", &id(3), RefPolicy::KeepRef), (del_code::NOT_FOUND, false));
    }

    #[test]
    fn acked_trim_skips_needed_entries_and_stops_after_a_node_that_may_stay() {
        // Nodes [1 2 3] [4 5 6] [7 8 9]; 1 and 2 pending.
        let mut s = read_by_group(9, &[1, 2]);
        // Node 1 need not go whole (9 - 3 < 7): 3 goes, then the trim stops.
        assert_eq!(s.trim(Trim::MaxLen(7), false, 0, RefPolicy::Acked), 1);
        assert_eq!(ids(&s), [1, 2, 4, 5, 6, 7, 8, 9]);
        // Node 1 had to go: 1 and 2 skipped, on to node 2 (4 goes, 5 stops).
        assert_eq!(s.trim(Trim::MinId(id(5)), false, 0, RefPolicy::Acked), 1);
        assert_eq!(ids(&s), [1, 2, 5, 6, 7, 8, 9]);
        assert_eq!(s.node_count(), 3);
        assert_eq!(s.max_deleted_id, StreamId::MIN);
        s.groups.get_mut(&b"g"[..]).unwrap().unpend(&id(1));
        s.groups.get_mut(&b"g"[..]).unwrap().unpend(&id(2));
        // Emptied nodes the trim wanted gone are removed.
        assert_eq!(s.trim(Trim::MaxLen(1), false, 0, RefPolicy::Acked), 6);
        assert_eq!(ids(&s), [9]);
        assert_eq!(s.node_count(), 1);
        assert_eq!(s.first_id, id(9));
    }

    #[test]
    fn approximate_trim_removes_nothing_unless_keepref() {
        let mut s = read_by_group(9, &[]);
        for policy in [RefPolicy::Acked, RefPolicy::DelRef] {
            assert_eq!(s.trim(Trim::MaxLen(0), true, 0, policy), 0);
        }
        assert_eq!(s.trim(Trim::MaxLen(0), true, 0, RefPolicy::KeepRef), 9);
    }

    #[test]
    fn delref_trim_drops_only_the_trimmed_ids() {
        let mut s = read_by_group(6, &[1, 2, 5]);
        assert!(s.delete(&id(1)));
        assert_eq!(s.trim(Trim::MaxLen(3), false, 0, RefPolicy::DelRef), 2);
        let pel: Vec<u64> = s.groups[&b"g"[..]].pel.keys().map(|k| k.ms).collect();
        assert_eq!(pel, [1, 5]);
    }

    #[test]
    fn lag_rules_after_trims() {
        // Issue 13957's sequence: read 1 of 5, trim to 1, read the rest.
        let mut s = Stream::default();
        for i in 1..=5 {
            s.append(id(i), vec![(Bytes::from("a"), Bytes::from("1"))], NodeLimits::default());
        }
        s.groups.insert(Bytes::from("g"), Group::new(StreamId::MIN, Some(0)));
        for rules in [LagRules::Redis70, LagRules::Since80] {
            let mut s = s.clone();
            s.advance_group(b"g", id(1), rules);
            s.trim(Trim::MaxLen(1), false, 0, RefPolicy::KeepRef);
            let lag = s.group_lag(&s.groups[&b"g"[..]], rules);
            assert_eq!(lag, Some(if rules == LagRules::Since80 { 1 } else { 4 }));
            s.advance_group(b"g", id(5), rules);
            let lag = s.group_lag(&s.groups[&b"g"[..]], rules);
            assert_eq!(lag, Some(if rules == LagRules::Since80 { 0 } else { 3 }));
            // An emptied stream: no lag since 8.0, the counters' gap before.
            s.trim(Trim::MaxLen(0), false, 0, RefPolicy::KeepRef);
            let lag = s.group_lag(&s.groups[&b"g"[..]], rules);
            assert_eq!(lag, Some(if rules == LagRules::Since80 { 0 } else { 3 }));
        }
    }

    #[test]
    fn radix_nodes_of_one_and_two_keys() {
        let s = filled(1);
        assert_eq!(s.radix_tree_nodes(), 2);
        let s = filled(101);
        // Keys 1-0 and 101-0 differ in byte 7: root run, the branch, the
        // two children where they diverge, two leaves (redis-server: 6).
        assert_eq!(s.radix_tree_nodes(), 6);
        assert_eq!(Stream::default().radix_tree_nodes(), 1);
    }
}
