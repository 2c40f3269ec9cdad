//! The lock history's events ([`super::history`]), kept compactly: the
//! newest [`MAX_EVENTS`] in one byte ring, each encoded in a few bytes plus
//! its key (and its holder, unless the event before had the same one).
//!
//! An event is `flags, time delta, db, count, client, command, [detail],
//! key length, key, [holder length, holder]`: numbers as varints (signed
//! ones zigzagged), the time as the difference from the event before, the
//! command as its number in a table of names, a script's sha as its number
//! among the block's details. `flags` holds the kind and event numbers,
//! whether the holder is the one before, whether there is a detail.
//! Events come in blocks of [`BLOCK`]: a block starts afresh (its first
//! event has its holder and its own time), so reading starts at the block
//! that holds the first event asked for, and the oldest block goes whole
//! once the rest hold [`MAX_EVENTS`].

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;

/// Events kept for `RLOCKD EVENTS` (the oldest go first).
pub const MAX_EVENTS: usize = 10_000;

/// Events per block.
const BLOCK: u64 = 64;

/// One event to store.
pub struct NewEvent<'a> {
    pub time_ms: u64,
    pub db: usize,
    pub key: &'a [u8],
    /// Index of the kind in the history's kinds.
    pub kind: u8,
    /// Index of the event in the history's events.
    pub event: u8,
    pub holder: &'a [u8],
    pub count: i64,
    pub client: u64,
    pub command: &'static str,
    pub detail: Option<&'a [u8]>,
}

/// An event read back (see [`EventRing::read`]).
pub struct Read<'a> {
    pub id: u64,
    pub time_ms: u64,
    pub db: usize,
    pub key: Bytes,
    pub kind: u8,
    pub event: u8,
    pub holder: Bytes,
    pub count: i64,
    pub client: u64,
    pub command: &'static str,
    pub detail: Option<&'a [u8]>,
}

struct Block {
    /// Id of its first event.
    first_id: u64,
    /// Where its first event starts, counted from the first byte ever stored.
    pos: u64,
    /// Time of its first event.
    time: u64,
    /// The details (scripts' shas) its events name by number.
    details: Vec<Arc<[u8]>>,
}

/// See the module docs.
#[derive(Default)]
pub struct EventRing {
    /// The events' bytes from `start` on (those before it were dropped and
    /// are cut away once they are a quarter of the kept ones).
    bytes: Vec<u8>,
    start: usize,
    /// Bytes cut from the front of `bytes` so far.
    dropped: u64,
    blocks: VecDeque<Block>,
    /// Command names by number.
    commands: Vec<&'static str>,
    /// The id of the newest event (0: none yet).
    next_id: u64,
    /// The newest event's time and holder (what the next one is encoded against).
    last_time: u64,
    last_holder: Vec<u8>,
}

impl std::fmt::Debug for EventRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRing")
            .field("bytes", &(self.bytes.len() - self.start))
            .field("next_id", &self.next_id)
            .finish()
    }
}

/// An event's numbers being encoded.
struct Head {
    b: [u8; 80],
    len: usize,
    /// Where the key's length ends (the holder's length follows).
    key_end: usize,
}

impl Head {
    fn byte(&mut self, b: u8) {
        self.b[self.len] = b;
        self.len += 1;
    }

    fn varint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.byte(n as u8 | 0x80);
            n >>= 7;
        }
        self.byte(n as u8);
    }
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    (n >> 1) as i64 ^ -((n & 1) as i64)
}

/// Reads the ring from a position on.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.bytes[self.at];
        self.at += 1;
        b
    }

    fn varint(&mut self) -> u64 {
        let mut n = 0u64;
        let mut shift = 0;
        loop {
            let b = self.byte();
            n |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return n;
            }
            shift += 7;
        }
    }

    /// The next `len` bytes' place.
    fn skip(&mut self, len: usize) -> std::ops::Range<usize> {
        self.at += len;
        self.at - len..self.at
    }
}

impl EventRing {
    /// Stores `e` as the newest event; returns its id.
    pub fn push(&mut self, e: NewEvent<'_>) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let fresh = self.blocks.back().is_none_or(|b| id - b.first_id >= BLOCK);
        if fresh {
            let pos = self.dropped + self.bytes.len() as u64;
            self.blocks.push_back(Block { first_id: id, pos, time: e.time_ms, details: Vec::new() });
            self.last_time = e.time_ms;
        }
        let command = match self.commands.iter().position(|c| std::ptr::eq(*c, e.command) || *c == e.command) {
            Some(n) => n,
            None => {
                self.commands.push(e.command);
                self.commands.len() - 1
            }
        };
        let detail = e.detail.map(|d| {
            let mut blocks = self.blocks.iter_mut().rev();
            let block = blocks.next().expect("a block");
            if let Some(n) = block.details.iter().position(|k| k[..] == *d) {
                return n;
            }
            // The block before most likely has it: shared, not copied.
            let kept = blocks.next().and_then(|b| b.details.iter().find(|k| k[..] == *d)).cloned();
            block.details.push(kept.unwrap_or_else(|| Arc::from(d)));
            block.details.len() - 1
        });
        let same_holder = !fresh && self.last_holder == e.holder;
        // The numbers (at most 7 varints of 10 bytes and the flags) on the
        // stack, then the key and holder straight into the ring.
        let mut head = Head { b: [0; 80], len: 0, key_end: 0 };
        head.byte(e.kind | e.event << 3 | u8::from(same_holder) << 6 | u8::from(detail.is_some()) << 7);
        head.varint(zigzag(e.time_ms.wrapping_sub(self.last_time) as i64));
        head.varint(e.db as u64);
        head.varint(zigzag(e.count));
        head.varint(e.client);
        head.varint(command as u64);
        if let Some(n) = detail {
            head.varint(n as u64);
        }
        head.varint(e.key.len() as u64);
        head.key_end = head.len;
        if !same_holder {
            head.varint(e.holder.len() as u64);
        }
        self.bytes.extend_from_slice(&head.b[..head.key_end]);
        self.bytes.extend_from_slice(e.key);
        if !same_holder {
            self.bytes.extend_from_slice(&head.b[head.key_end..head.len]);
            self.bytes.extend_from_slice(e.holder);
            self.last_holder.clear();
            self.last_holder.extend_from_slice(e.holder);
        }
        self.last_time = e.time_ms;
        // The oldest block goes once the others hold enough.
        while self.blocks.len() > 1 && self.next_id + 1 - self.blocks[1].first_id >= MAX_EVENTS as u64 {
            self.start = (self.blocks[1].pos - self.dropped) as usize;
            self.blocks.pop_front();
            // Cut once the dropped bytes are a quarter of the kept ones:
            // the buffer stays within 1.25 times what it keeps.
            if self.start >= (self.bytes.len() - self.start) / 4 {
                self.bytes.drain(..self.start);
                self.dropped += self.start as u64;
                self.start = 0;
            }
        }
        id
    }

    /// The id of the newest event (0: none yet).
    pub fn last_id(&self) -> u64 {
        self.next_id
    }

    /// Forgets every event (ids go on).
    pub fn clear(&mut self) {
        self.dropped += self.bytes.len() as u64;
        self.bytes.clear();
        self.start = 0;
        self.blocks.clear();
    }

    /// Bytes the events take (for tests and the module docs' figures).
    #[cfg(test)]
    pub fn stored_bytes(&self) -> usize {
        self.bytes.len() - self.start
    }

    /// Calls `f` with the kept events after id `since` whose key is `key`
    /// (all if `None`), oldest first.
    pub fn read(&self, key: Option<&[u8]>, since: u64, mut f: impl FnMut(Read<'_>)) {
        let Some(oldest) = self.blocks.front().map(|b| b.first_id) else { return };
        let from = (since + 1).max(oldest).max((self.next_id + 1).saturating_sub(MAX_EVENTS as u64));
        if from > self.next_id {
            return;
        }
        let mut b = self.blocks.partition_point(|b| b.first_id <= from) - 1;
        let mut cur = Cursor { bytes: &self.bytes, at: (self.blocks[b].pos - self.dropped) as usize };
        let mut time = self.blocks[b].time;
        let mut holder = 0..0;
        for id in self.blocks[b].first_id..=self.next_id {
            if self.blocks.get(b + 1).is_some_and(|n| n.first_id == id) {
                b += 1;
                time = self.blocks[b].time;
            }
            let flags = cur.byte();
            time = time.wrapping_add(unzigzag(cur.varint()) as u64);
            let db = cur.varint() as usize;
            let count = unzigzag(cur.varint());
            let client = cur.varint();
            let command = self.commands[cur.varint() as usize];
            let detail = (flags & 0x80 != 0).then(|| &self.blocks[b].details[cur.varint() as usize][..]);
            let len = cur.varint() as usize;
            let key_at = cur.skip(len);
            if flags & 0x40 == 0 {
                let len = cur.varint() as usize;
                holder = cur.skip(len);
            }
            if id < from || key.is_some_and(|k| self.bytes[key_at.clone()] != *k) {
                continue;
            }
            let copy = |r: &std::ops::Range<usize>| Bytes::copy_from_slice(&self.bytes[r.clone()]);
            f(Read {
                id,
                time_ms: time,
                db,
                key: copy(&key_at),
                kind: flags & 7,
                event: flags >> 3 & 7,
                holder: copy(&holder),
                count,
                client,
                command,
                detail,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever was stored reads back as it was, from any point: the
    /// newest [`MAX_EVENTS`] only, times going back and forth, holders
    /// repeated or not, details shared or not.
    #[test]
    fn events_read_back_as_stored() {
        let mut ring = EventRing::default();
        let commands: [&'static str; 3] = ["evalsha", "(expiry)", "hset"];
        let mut model = Vec::new();
        let n = MAX_EVENTS as u64 * 2 + 77;
        for i in 0..n {
            let key = format!("k{}", i % 13).into_bytes();
            let holder = if i % 5 < 3 { b"uuid:1".to_vec() } else { vec![b'h'; (i % 7) as usize] };
            let detail = (i % 3 == 0).then(|| format!("sha{}", i % 4).into_bytes());
            let time_ms = if i % 11 == 0 { 5 } else { 1_700_000_000_000 + i * 3 };
            let e = NewEvent {
                time_ms,
                db: (i % 17) as usize,
                key: &key,
                kind: (i % 7) as u8,
                event: (i % 6) as u8,
                holder: &holder,
                count: if i % 2 == 0 { i as i64 } else { -(i as i64) * 1_000_000_007 },
                client: i * 1_000,
                command: commands[(i % 3) as usize],
                detail: detail.as_deref(),
            };
            assert_eq!(ring.push(e), i + 1);
            model.push((i + 1, time_ms, key, holder, detail));
        }
        let check = |ring: &EventRing, key: Option<&[u8]>, since: u64| {
            let mut got = Vec::new();
            ring.read(key, since, |e| {
                got.push((e.id, e.time_ms, e.key.to_vec(), e.holder.to_vec(), e.detail.map(<[u8]>::to_vec)));
                let i = e.id - 1;
                assert_eq!(
                    (e.db, e.kind, e.event, e.client),
                    ((i % 17) as usize, (i % 7) as u8, (i % 6) as u8, i * 1_000)
                );
                assert_eq!(e.command, commands[(i % 3) as usize]);
            });
            let want: Vec<_> = model
                .iter()
                .filter(|m| m.0 > since && m.0 > n - MAX_EVENTS as u64 && key.is_none_or(|k| m.2 == k))
                .cloned()
                .collect();
            assert_eq!(got, want, "{since}");
        };
        for since in [0, 5, n - MAX_EVENTS as u64 - 1, n - MAX_EVENTS as u64, n - 4000, n - 64, n - 63, n - 1, n, n + 5]
        {
            check(&ring, None, since);
        }
        check(&ring, Some(b"k3"), 0);
        check(&ring, Some(b"k3"), n - 100);
        check(&ring, Some(b"k"), 0);
        assert!(ring.blocks.len() as u64 <= MAX_EVENTS as u64 / BLOCK + 2);
        ring.clear();
        let mut none = 0;
        ring.read(None, 0, |_| none += 1);
        assert_eq!((none, ring.last_id()), (0, n));
        let key = b"after".to_vec();
        let e = NewEvent {
            time_ms: 9,
            db: 0,
            key: &key,
            kind: 1,
            event: 2,
            holder: b"x",
            count: 1,
            client: 1,
            command: "evalsha",
            detail: None,
        };
        ring.push(e);
        let mut ids = Vec::new();
        ring.read(None, 0, |e| ids.push((e.id, e.holder.to_vec())));
        assert_eq!(ids, [(n + 1, b"x".to_vec())]);
    }
}
