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
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted: u64 = 0;
        loop {
            if let Trim::MaxLen(max) = how {
                if self.entries.len() as u64 <= max {
                    break;
                }
            }
            let Some((&start, node)) = self.nodes.iter().next() else {
                break;
            };
            let (live, last) = (node.live, node.last);
            if limit > 0 && deleted + u64::from(live) > limit {
                break;
            }
            let node_end = self.nodes.range(start..).nth(1).map(|(k, _)| *k);
            let node_ids: Vec<StreamId> = match node_end {
                Some(end) => self.entries.range(start..end).map(|(k, _)| *k).collect(),
                None => self.entries.range(start..).map(|(k, _)| *k).collect(),
            };
            let remove_node = match how {
                Trim::MaxLen(max) => self.entries.len() as u64 - u64::from(live) >= max,
                Trim::MinId(min) => last < min,
            };
            if remove_node {
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
                self.remove_entry(id, true);
                deleted += 1;
            }
            break;
        }
        if deleted > 0 {
            self.refresh_first_id();
        }
        deleted
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
    /// `streamRangeHasTombstones`).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.entries.is_empty() || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// The logical position of `id` counted from the first entry ever
    /// added, when it can be known (`streamEstimateDistanceFromFirstEverEntry`).
    pub fn estimate_distance(&self, id: &StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.entries.is_empty() && *id <= self.last_id {
            return Some(self.entries_added);
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
    /// counter set past the stream's gives a negative lag).
    pub fn group_lag(&self, g: &Group) -> Option<i64> {
        let lag = |read: u64| (self.entries_added as i64).wrapping_sub(read as i64);
        if self.entries_added == 0 {
            return Some(0);
        }
        if let Some(read) = g.entries_read {
            if !self.range_has_tombstones(g.last_id, StreamId::MAX) {
                return Some(lag(read));
            }
        }
        self.estimate_distance(&g.last_id).map(lag)
    }

    /// Advances a group past `id` (delivered with `>`), keeping its read
    /// counter as Redis does.
    pub fn advance_group(&mut self, name: &[u8], id: StreamId) {
        let tomb = self.range_has_tombstones(id, StreamId::MAX);
        let est = self.estimate_distance(&id);
        let added = self.entries_added;
        let Some(g) = self.groups.get_mut(name) else {
            return;
        };
        if id > g.last_id {
            match g.entries_read {
                Some(n) if !tomb => g.entries_read = Some(n.wrapping_add(1)),
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
        assert_eq!(s.trim(Trim::MaxLen(120), true, 0), 100);
        assert_eq!(s.len(), 150);
        assert_eq!(s.trim(Trim::MaxLen(0), false, 0), 150);
        assert!(s.is_empty());
        assert_eq!(s.first_id, StreamId::MIN);
    }

    #[test]
    fn exact_minid_trim_and_first_id() {
        let mut s = filled(10);
        assert_eq!(s.trim(Trim::MinId(id(4)), false, 0), 3);
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
