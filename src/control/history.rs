//! What happened to each lock, and whether it was ever unsafe
//! (`RLOCKD EVENTS`, `RLOCKD CHECK`, `Server::lock_events`/`check_locks`).
//!
//! After every command, the keys it touched (expiries included) are read
//! again as locks ([`super::locks::read_key`]) and compared with what they
//! were: holders that appear are `acquired` (or `reentered`), holders that
//! go are `released` — or `expired` when the lease ran out with no release,
//! the failure behind two holders at once; a longer lease with the same
//! holders is `renewed`. The comparison also finds violations: a lock taken
//! by another owner after it expired while held, a fair lock served out of
//! queue order, a writer beside other owners' readers, a counter (semaphore)
//! below zero.
//!
//! No record per lock is kept between commands. A lock's state before a
//! command is read from the keyspace itself: the keyspace calls
//! [`pre_image`] (installed by [`super::Control::attach`] in
//! `Signals::images`, see `db::preimage`) just before the first change of
//! each key in a command — a `DbView` write or a write command's lookup, a
//! lazy or active expiry, an eviction, and every key at once before
//! `FLUSHDB`/`FLUSHALL`, `SWAPDB`, a full resynchronisation or a snapshot's
//! restore — and it packs the lock the key belongs to as it is stored (an
//! expired key not yet deleted included: the state the lock was left in,
//! whose lease ran out since). After the command the touched locks are read
//! again and compared with their images; the core then drops the images.
//!
//! What stays between commands is bounded or rare: the integer strings a
//! script wrote (counters: a plain `SET a 1` is no lock, so this is
//! history), a fair lock's queue while someone waits, the holders of locks
//! that expired while held for the last [`MAX_EXPIRED_HELD`] such locks, and
//! the locks whose key had expired, still stored, when last compared (a
//! replica waits for its primary's `DEL`), so that they expire once.
//!
//! Storage and cost: auxiliary keys (fair-lock queues, read-hold leases) map
//! to their lock; a key is read in place (`LockRef`) and packed (kind,
//! deadline, value, holders with their counts) into the images' buffer or a
//! reused one; events are built only when the packed bytes differ, and kept
//! compactly in [`super::ring`] (the newest 10,000, about 20 bytes each for
//! a Redisson lock). Holders are matched by hash past 16, and values past a
//! lock's sizes (more than 1,000 holders, a token over 512 bytes) are not
//! locks, so no write costs more than its lock's size. A hash lock's fair
//! queue is looked up only while some key has the queue's prefix (the
//! keyspace counts them: `Db::has_fair_queues`). About 4,900
//! instructions per Redisson lock+unlock and 5 bytes per held lock at
//! 100,000 held, the event ring's fixed ~0.25 MB most of it (BENCHMARKS.md).

type HashMap<K, V> = hashbrown::HashMap<K, V, crate::db::Hasher>;

use bytes::Bytes;

use super::locks::{read_found, read_key, read_stored, LockRef};
#[cfg(test)]
use super::ring::MAX_EVENTS;
use super::ring::{EventRing, NewEvent};
use crate::db::preimage::PreImages;
use crate::db::{Db, Entry, Keyspace};

/// Locks that expired while held whose holders are remembered (to report a
/// second holder when one is taken again); past this, the older half goes.
const MAX_EXPIRED_HELD: usize = 10_000;

/// One thing that happened to a lock.
#[derive(Debug, Clone, PartialEq)]
pub struct LockEvent {
    /// Increasing id (for `SINCE`).
    pub id: u64,
    /// Server time, unix ms.
    pub time_ms: u64,
    /// Database index.
    pub db: usize,
    /// The lock's key.
    pub key: Bytes,
    /// The lock's kind (see [`super::locks`]).
    pub kind: &'static str,
    /// `acquired`, `reentered`, `renewed`, `released`, `expired`, `counter`.
    pub event: &'static str,
    /// The holder concerned (empty for `counter`).
    pub holder: Bytes,
    /// Its hold count afterwards (a counter's value for `counter`).
    pub count: i64,
    /// The client whose command did it (0: the server's own expiry).
    pub client: u64,
    /// That command (with the script's sha for `EVALSHA`).
    pub command: String,
}

impl LockEvent {
    /// The event as one line of JSON, as published on
    /// [`LOCK_EVENTS_CHANNEL`] (binary bytes of keys and holders are shown as
    /// UTF-8 with replacement characters).
    pub fn to_json(&self) -> String {
        fn string(out: &mut String, b: &[u8]) {
            out.push('"');
            for ch in String::from_utf8_lossy(b).chars() {
                match ch {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        let mut out = format!("{{\"id\":{},\"time_ms\":{},\"db\":{},\"key\":", self.id, self.time_ms, self.db);
        string(&mut out, &self.key);
        out.push_str(&format!(",\"kind\":\"{}\",\"event\":\"{}\",\"holder\":", self.kind, self.event));
        string(&mut out, &self.holder);
        out.push_str(&format!(",\"count\":{},\"client\":{},\"command\":", self.count, self.client));
        string(&mut out, self.command.as_bytes());
        out.push('}');
        out
    }
}

/// The channel every lock event is published on, as JSON, while someone
/// listens.
pub const LOCK_EVENTS_CHANNEL: &str = "__rlockd__:lockevents";

/// Who ran the command being observed (kept cheap: it is set for every
/// top-level command while the history records).
#[derive(Debug, Clone, Default)]
pub struct Actor {
    /// Client id (0: the server itself).
    pub client: u64,
    /// Command name (`hincrby`, `evalsha`…).
    pub command: &'static str,
    /// The script's sha for `EVALSHA`/`FCALL`'s function name, copied
    /// into a buffer kept from command to command: a `Bytes` clone of the
    /// argument would keep the connection's whole read buffer from being
    /// reused until the next command (and cost a shared count each way).
    detail: Vec<u8>,
    has_detail: bool,
}

impl Actor {
    /// An actor with `detail` (see [`Actor::set`]).
    #[cfg(test)]
    pub fn new(client: u64, command: &'static str, detail: Option<&[u8]>) -> Actor {
        let mut a = Actor::default();
        a.set(client, command, detail);
        a
    }

    /// Makes this the actor of the command about to run.
    #[inline]
    pub fn set(&mut self, client: u64, command: &'static str, detail: Option<&[u8]>) {
        self.client = client;
        self.command = command;
        self.has_detail = detail.is_some();
        if let Some(d) = detail {
            self.detail.clear();
            self.detail.extend_from_slice(d);
        }
    }

    /// The script's sha (`EVALSHA`) or function name (`FCALL`), if any.
    pub fn detail(&self) -> Option<&[u8]> {
        self.has_detail.then_some(&self.detail[..])
    }

    /// The command runs a script (`EVAL`, `EVALSHA`, `FCALL` and their
    /// read-only forms): what lock libraries write semaphores and latches with.
    pub fn is_script(&self) -> bool {
        matches!(self.command, "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro")
    }
}

/// `command` with its detail, as [`LockEvent::command`] shows it.
fn describe(command: &str, detail: Option<&[u8]>) -> String {
    let mut s = String::with_capacity(command.len() + detail.map_or(0, |d| d.len() + 1));
    s.push_str(command);
    if let Some(d) = detail {
        s.push(' ');
        s.push_str(&String::from_utf8_lossy(d));
    }
    s
}

/// The kinds a view can have, by their index in a packed view.
const KINDS: [&str; 7] = ["", "read-write", "fair", "reentrant", "counter", "token", "zset-semaphore"];

/// The events, by their index in a stored event ([`super::ring`]).
const EVENTS: [&str; 6] = ["acquired", "reentered", "renewed", "released", "expired", "counter"];

/// [`EVENTS`]' indices, as the comparison names them.
const ACQUIRED: u8 = 0;
const REENTERED: u8 = 1;
const RENEWED: u8 = 2;
const RELEASED: u8 = 3;
const EXPIRED: u8 = 4;
const COUNTER: u8 = 5;

fn index_of(names: &[&str], name: &str) -> u8 {
    names.iter().position(|n| *n == name).unwrap_or(0) as u8
}

fn get_varint(b: &[u8], at: &mut usize) -> u64 {
    let mut n = 0u64;
    let mut shift = 0;
    loop {
        let byte = b[*at];
        *at += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return n;
        }
        shift += 7;
    }
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    (n >> 1) as i64 ^ -((n & 1) as i64)
}

/// What the comparison needs of a lock's view — its kind, key deadline,
/// counter value and holders with their counts — packed:
/// `kind, flags, [deadline], [value], (count, id length, id)*`, numbers as
/// varints (signed ones zigzagged). Equal views pack to equal bytes.
fn pack_body(
    out: &mut Vec<u8>,
    kind: &str,
    deadline: Option<u64>,
    value: Option<i64>,
    holders: impl FnOnce(&mut dyn FnMut(&[u8], i64)),
) {
    // Each run of numbers is encoded on the stack, then copied at once.
    let mut head = [0u8; 2 + 2 * 10];
    head[0] = index_of(&KINDS, kind);
    head[1] = u8::from(deadline.is_some()) | u8::from(value.is_some()) << 1;
    let mut len = 2;
    if let Some(d) = deadline {
        len = varint_at(&mut head, len, d);
    }
    if let Some(v) = value {
        len = varint_at(&mut head, len, zigzag(v));
    }
    out.extend_from_slice(&head[..len]);
    holders(&mut |id, count| {
        let mut nums = [0u8; 20];
        let len = varint_at(&mut nums, 0, zigzag(count));
        let len = varint_at(&mut nums, len, id.len() as u64);
        out.extend_from_slice(&nums[..len]);
        out.extend_from_slice(id);
    });
}

/// Writes `n` as a varint into `b` at `at`; returns where it ends.
#[inline]
fn varint_at(b: &mut [u8], mut at: usize, mut n: u64) -> usize {
    while n >= 0x80 {
        b[at] = n as u8 | 0x80;
        n >>= 7;
        at += 1;
    }
    b[at] = n as u8;
    at + 1
}

/// Packs `lock` (see [`pack_body`]) as seen at `now_ms`: its deadline is
/// absolute, so the same key packs the same whenever it is read.
fn pack_lock(out: &mut Vec<u8>, lock: &LockRef<'_>, now_ms: u64) {
    let deadline = lock.lease_ms.map(|ms| now_ms.saturating_add_signed(ms));
    pack_body(out, lock.kind, deadline, lock.value, |f| lock.holders(|h, count, _| f(h, count)));
}

/// A packed view read back (see [`pack_body`]).
#[derive(Clone, Copy)]
struct Body<'a> {
    /// The lock's kind, as its index in [`KINDS`] (see [`Body::kind`]).
    kind_ix: u8,
    deadline: Option<u64>,
    value: Option<i64>,
    /// The packed holders (see [`Body::holders`]).
    holders: &'a [u8],
}

impl<'a> Body<'a> {
    fn parse(b: &'a [u8]) -> Body<'a> {
        let mut at = 2;
        let deadline = (b[1] & 1 != 0).then(|| get_varint(b, &mut at));
        let value = (b[1] & 2 != 0).then(|| unzigzag(get_varint(b, &mut at)));
        let kind_ix = b[0].min(KINDS.len() as u8 - 1);
        Body { kind_ix, deadline, value, holders: &b[at..] }
    }

    /// The lock's kind (`reentrant`, `fair`, `counter`…).
    fn kind(&self) -> &'static str {
        KINDS[usize::from(self.kind_ix)]
    }

    /// The holders' ids and counts, in order.
    fn holders(&self) -> impl Iterator<Item = (&'a [u8], i64)> {
        packed_holders(self.holders)
    }
}

/// The ids and counts of packed holders (a [`Body`]'s `holders`), in order.
fn packed_holders(b: &[u8]) -> impl Iterator<Item = (&[u8], i64)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= b.len() {
            return None;
        }
        let count = unzigzag(get_varint(b, &mut at));
        let len = get_varint(b, &mut at) as usize;
        at += len;
        Some((&b[at - len..at], count))
    })
}

/// The holders of a packed view found by id: a scan while there are few
/// (a lock has one or two), a hash map past [`HolderIndex::SCAN_MAX`], so
/// comparing two views of a semaphore with many holders stays linear.
enum HolderIndex<'a> {
    Scan(&'a [u8]),
    Map(HashMap<&'a [u8], i64>),
}

impl<'a> HolderIndex<'a> {
    const SCAN_MAX: usize = 16;

    fn new(packed: &'a [u8]) -> HolderIndex<'a> {
        if packed.is_empty() || packed_holders(packed).nth(Self::SCAN_MAX).is_none() {
            HolderIndex::Scan(packed)
        } else {
            HolderIndex::Map(packed_holders(packed).collect())
        }
    }

    /// The count held by `id`, if it holds.
    fn count(&self, id: &[u8]) -> Option<i64> {
        match self {
            HolderIndex::Scan(packed) => packed_holders(packed).find(|(h, _)| *h == id).map(|(_, c)| c),
            HolderIndex::Map(m) => m.get(id).copied(),
        }
    }
}

/// A lock's identity, borrowed: looks up maps keyed by `(usize, Bytes)`
/// (it hashes as that tuple does).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Id<'a>(usize, &'a [u8]);

impl hashbrown::Equivalent<(usize, Bytes)> for Id<'_> {
    fn equivalent(&self, key: &(usize, Bytes)) -> bool {
        self.0 == key.0 && self.1 == &key.1[..]
    }
}

impl Id<'_> {
    fn owned(self) -> (usize, Bytes) {
        (self.0, Bytes::copy_from_slice(self.1))
    }
}

/// The locks a command's touched keys belong to, each once: a linear
/// look-up beats a set for the few keys a command touches, and the first
/// few need no allocation.
struct Done<'a> {
    inline: [Id<'a>; 8],
    len: usize,
    /// Past the inline ones (a set: a full resynchronisation or a
    /// `FLUSHALL` touches every key at once), made when first needed.
    more: Option<std::collections::HashSet<Id<'a>>>,
}

impl<'a> Done<'a> {
    /// Whether `id` is new (it is noted).
    fn first(&mut self, id: Id<'a>) -> bool {
        let n = self.len.min(self.inline.len());
        if self.inline[..n].contains(&id) || self.more.as_ref().is_some_and(|m| m.contains(&id)) {
            return false;
        }
        if n < self.inline.len() {
            self.inline[n] = id;
        } else {
            self.more.get_or_insert_with(Default::default).insert(id);
        }
        self.len += 1;
        true
    }
}

/// The recorder: events, violations, and the little they need between
/// commands (no record per lock: see the module docs).
#[derive(Default)]
pub struct LockHistory {
    /// Integer strings a script wrote: semaphores' and latches' counters
    /// (a plain `SET a 1` or `INCR hits` is no lock).
    counters: HashMap<(usize, Bytes), ()>,
    /// Locks whose key's lease had run out, the key still stored, when last
    /// compared (a replica waits for its primary's `DEL`; a fair lock's
    /// queue was written alone): no lock then, whatever the key still holds.
    stale: HashMap<(usize, Bytes), ()>,
    /// The view after the command being packed (kept for its allocation).
    scratch: Vec<u8>,
    log: Log,
}

impl std::fmt::Debug for LockHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockHistory").field("counters", &self.counters.len()).field("log", &self.log).finish()
    }
}

/// Events and violations, and what finding violations needs.
#[derive(Debug, Default)]
struct Log {
    /// Holders of locks that expired while held, until the lock is taken
    /// again, with the time they expired: at most [`MAX_EXPIRED_HELD`]
    /// locks, the most recently expired.
    expired_held: HashMap<(usize, Bytes), (u64, Vec<Bytes>)>,
    /// The last waiting queue seen for each fair lock, kept while the lock
    /// is free, to check who is served next.
    queues: HashMap<(usize, Bytes), Vec<Bytes>>,
    /// The newest events, compactly.
    events: EventRing,
    violations: Vec<String>,
    /// Where and when each of `violations` was found (same order), for the
    /// timeline.
    violation_at: Vec<(u64, usize, Bytes)>,
    /// The time of the command being compared.
    now_ms: u64,
}

/// The lock a key belongs to: itself, or the lock named inside the braces of
/// a fair lock's queue / timeout set or a read hold's lease key.
fn lock_key(key: &[u8]) -> &[u8] {
    if key.starts_with(b"redisson_lock_") {
        for prefix in [&b"redisson_lock_queue:{"[..], b"redisson_lock_timeout:{"] {
            if let Some(rest) = key.strip_prefix(prefix).and_then(|r| r.strip_suffix(b"}")) {
                return rest;
            }
        }
    }
    if key.starts_with(b"{") && key.windows(16).any(|w| w == b":rwlock_timeout:") {
        if let Some(end) = key.iter().position(|&c| c == b'}') {
            return &key[1..end];
        }
    }
    key
}

/// The owner part of a Redisson holder id (`uuid:thread[:write]` → `uuid:thread`).
pub(crate) fn owner(id: &[u8]) -> &[u8] {
    id.strip_suffix(b":write").unwrap_or(id)
}

/// The keyspace's [`PreImageFn`](crate::db::preimage::PreImageFn) while the
/// history records: the lock `key` belongs to ([`lock_key`]), packed as it
/// is before the command's first change of any of its keys (an empty image:
/// no lock). Expired keys not yet deleted are read as they are stored: the
/// state the lock was last left in, whose lease ran out since.
pub fn pre_image(db: &Db, index: usize, key: &[u8], found: Option<Option<&Entry>>, images: &mut PreImages) {
    let lock = lock_key(key);
    if let Some(out) = images.begin(index, lock) {
        // The caller's look-up is the lock's own unless `key` is auxiliary.
        let found = found.filter(|_| lock.len() == key.len()).unwrap_or_else(|| db.peek(lock));
        if let (Some(l), _) = read_found(db, lock, found, 0) {
            pack_lock(out, &l, 0);
        }
    }
}

impl LockHistory {
    /// Compares the touched keys' locks before the command (their images,
    /// see [`pre_image`]) with what they are now.
    pub fn observe(&mut self, touched: &[(usize, crate::db::Key)], ks: &Keyspace, now_ms: u64, actor: &Actor) {
        let LockHistory { counters, stale, scratch, log } = self;
        log.now_ms = now_ms;
        let images = &ks.sig.images;
        // Only a command that touched several keys needs to skip repeats.
        let mut done = (touched.len() > 1).then(|| Done { inline: [Id(0, b""); 8], len: 0, more: None });
        for (db, key) in touched {
            let id = Id(*db, lock_key(key));
            if done.as_mut().is_some_and(|d| !d.first(id)) {
                continue;
            }
            // A counter is a semaphore's or latch's value only once a
            // script wrote it: `SET a 1` or `INCR hits` is no lock.
            let known_counter = !counters.is_empty() && counters.contains_key(&id);
            let was_stale = !stale.is_empty() && stale.remove(&id).is_some();
            let before = images.get(id.0, id.1).filter(|b| !b.is_empty() && !was_stale);
            let old = before.map(Body::parse).filter(|o| o.kind() != "counter" || known_counter);
            let (mut lock, expired_stored) = ks.dbs.get(*db).map_or((None, false), |d| read_stored(d, id.1, now_ms));
            if lock.as_ref().is_some_and(|l| l.kind == "counter") && !known_counter && !actor.is_script() {
                lock = None;
            }
            scratch.clear();
            let Some(l) = &lock else {
                if old.is_some() {
                    log.compare(id, old, None, now_ms, actor);
                }
                if known_counter {
                    counters.remove(&id);
                }
                if expired_stored && ks.dbs.get(*db).is_some_and(|d| read_key(d, id.1, 0).is_some()) {
                    stale.insert(id.owned(), ());
                }
                continue;
            };
            pack_lock(scratch, l, now_ms);
            let new = Body::parse(scratch);
            if old.is_none() || before != Some(&scratch[..]) {
                log.compare(id, old, Some(new), now_ms, actor);
            }
            log.check(id, new, l);
            if (l.kind == "counter") != known_counter {
                if known_counter {
                    counters.remove(&id);
                } else {
                    counters.insert(id.owned(), ());
                }
            }
        }
    }

    /// Events after id `since`, of `key` if given, oldest first.
    pub fn events(&self, key: Option<&[u8]>, since: u64) -> Vec<LockEvent> {
        let mut out = Vec::new();
        self.log.events.read(key, since, |e| {
            out.push(LockEvent {
                id: e.id,
                time_ms: e.time_ms,
                db: e.db,
                key: e.key,
                kind: KINDS[usize::from(e.kind).min(KINDS.len() - 1)],
                event: EVENTS[usize::from(e.event).min(EVENTS.len() - 1)],
                holder: e.holder,
                count: e.count,
                client: e.client,
                command: describe(e.command, e.detail),
            })
        });
        out
    }

    /// True if `key` of database `db` is a counter lock (a semaphore's or
    /// latch's value, see [`LockHistory::observe`]).
    pub fn is_counter(&self, db: usize, key: &[u8]) -> bool {
        self.counters.contains_key(&Id(db, key))
    }

    /// The id of the newest event (0: none yet).
    pub fn last_id(&self) -> u64 {
        self.log.events.last_id()
    }

    /// Every violation seen so far.
    pub fn violations(&self) -> &[String] {
        &self.log.violations
    }

    /// Every violation with the time it was found and its lock (db, key),
    /// for the timeline.
    pub fn violations_at(&self) -> impl Iterator<Item = (u64, usize, &Bytes, &str)> {
        self.log.violation_at.iter().zip(&self.log.violations).map(|((t, db, key), v)| (*t, *db, key, v.as_str()))
    }

    /// Forgets events and violations (`RLOCKD CHECK RESET`).
    pub fn reset(&mut self) {
        self.log.events.clear();
        self.log.violations.clear();
        self.log.violation_at.clear();
        self.log.expired_held.clear();
    }
}

impl Log {
    /// The events between a lock's view before the command and its view now (`None`: not
    /// a lock), and the violations they show.
    fn compare(&mut self, id: Id<'_>, old: Option<Body<'_>>, after: Option<Body<'_>>, now_ms: u64, actor: &Actor) {
        let old_deadline = old.and_then(|o| o.deadline);
        let kind = after.or(old).map_or(0, |v| v.kind_ix);
        let old_holders = old.map_or(&[][..], |v| v.holders);
        let new_holders = after.map_or(&[][..], |v| v.holders);
        if old.is_none() && after.is_none() {
            return;
        }
        // Each index is asked only about the other view's holders: none to
        // ask about (a lock taken or freed), none built.
        let old_ids = if new_holders.is_empty() { HolderIndex::Scan(&[]) } else { HolderIndex::new(old_holders) };
        let new_ids = if old_holders.is_empty() { HolderIndex::Scan(&[]) } else { HolderIndex::new(new_holders) };
        // Holders that left: released, or expired if the key's lease ran out.
        let expired = after.is_none() && old_deadline.is_some_and(|d| d <= now_ms);
        let mut gone = Vec::new();
        for (hid, _) in packed_holders(old_holders) {
            if new_ids.count(hid).is_none() {
                let event = if expired { EXPIRED } else { RELEASED };
                self.push(id, kind, event, hid, 0, now_ms, actor);
                if expired {
                    gone.push(Bytes::copy_from_slice(hid));
                }
            }
        }
        if !gone.is_empty() {
            if self.expired_held.len() >= MAX_EXPIRED_HELD {
                self.forget_oldest_expired();
            }
            self.expired_held.insert(id.owned(), (now_ms, gone));
        }
        for (hid, count) in packed_holders(new_holders) {
            match old_ids.count(hid) {
                None => {
                    self.push(id, kind, ACQUIRED, hid, count, now_ms, actor);
                    let previous =
                        if self.expired_held.is_empty() { None } else { self.expired_held.remove(&id).map(|e| e.1) };
                    if let Some(previous) = previous {
                        if !previous.iter().any(|p| owner(p) == owner(hid)) {
                            self.violate(id, format!(
                                "db{} {}: acquired by {} after its lease expired while held by {} (two holders at once)",
                                id.0,
                                String::from_utf8_lossy(id.1),
                                String::from_utf8_lossy(hid),
                                previous.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect::<Vec<_>>().join(", ")
                            ));
                        }
                    }
                    if let Some(queue) = if self.queues.is_empty() { None } else { self.queues.get(&id) } {
                        if queue.iter().position(|w| w == hid).is_some_and(|pos| pos > 0) {
                            let first = String::from_utf8_lossy(&queue[0]).into_owned();
                            self.violate(
                                id,
                                format!(
                                    "db{} {}: fair lock served {} before {first}, who was first in the queue",
                                    id.0,
                                    String::from_utf8_lossy(id.1),
                                    String::from_utf8_lossy(hid),
                                ),
                            );
                        }
                    }
                }
                Some(o) if count > o => self.push(id, kind, REENTERED, hid, count, now_ms, actor),
                Some(o) if count < o => self.push(id, kind, RELEASED, hid, count, now_ms, actor),
                Some(_) => {}
            }
        }
        match (old, after) {
            (Some(o), Some(a)) => {
                // Packed holders are equal exactly when ids and counts are.
                let same = old_holders == new_holders && !new_holders.is_empty();
                if same && a.deadline > old_deadline && old_deadline.is_some() {
                    for (hid, count) in packed_holders(new_holders) {
                        self.push(id, kind, RENEWED, hid, count, now_ms, actor);
                    }
                }
                if o.value != a.value {
                    if let Some(v) = a.value {
                        self.push(id, kind, COUNTER, b"", v, now_ms, actor);
                    }
                }
            }
            (None, Some(a)) => {
                if let Some(v) = a.value {
                    self.push(id, kind, COUNTER, b"", v, now_ms, actor);
                }
            }
            _ => {}
        }
    }

    /// What a lock's view now shows, changed or not: a fair lock's queue
    /// (kept), a counter below zero, a writer beside other owners.
    fn check(&mut self, id: Id<'_>, a: Body<'_>, lock: &LockRef<'_>) {
        if a.kind() == "fair" {
            // Only a queue with waiters is kept: an empty one checks nothing,
            // and one kept per fair lock ever seen would grow for as long as
            // the server runs.
            let queue: Vec<Bytes> = lock.waiters().map(Bytes::copy_from_slice).collect();
            match (self.queues.get_mut(&id), queue.is_empty()) {
                (Some(_), true) => {
                    self.queues.remove(&id);
                }
                (Some(kept), false) => *kept = queue,
                (None, false) => {
                    self.queues.insert(id.owned(), queue);
                }
                (None, true) => {}
            }
        } else if !self.queues.is_empty() {
            // Held with no queue key: nobody waits (Redis deletes an empty list).
            self.queues.remove(&id);
        }
        if a.value.is_some_and(|v| v < 0) {
            self.violate(
                id,
                format!(
                    "db{} {}: counter below zero ({}): more permits taken than the semaphore has",
                    id.0,
                    String::from_utf8_lossy(id.1),
                    a.value.unwrap_or(0)
                ),
            );
        }
        if a.kind() == "read-write" {
            let writers: Vec<&[u8]> =
                a.holders().filter(|(h, _)| h.ends_with(b":write")).map(|(h, _)| owner(h)).collect();
            let foreign_reader = a
                .holders()
                .filter(|(h, _)| !h.ends_with(b":write"))
                .any(|(r, _)| writers.iter().any(|w| *w != owner(r)));
            if !writers.is_empty() && (foreign_reader || writers.len() > 1) {
                self.violate(
                    id,
                    format!(
                        "db{} {}: a writer holds the read-write lock beside other owners",
                        id.0,
                        String::from_utf8_lossy(id.1)
                    ),
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(&mut self, id: Id<'_>, kind: u8, event: u8, holder: &[u8], count: i64, now_ms: u64, actor: &Actor) {
        let (client, command, detail) = if event == EXPIRED {
            (0, "(expiry)", None)
        } else {
            // Copied into the ring (shared by the events of a block).
            (actor.client, actor.command, actor.detail())
        };
        self.events.push(NewEvent {
            time_ms: now_ms,
            db: id.0,
            key: id.1,
            kind,
            event,
            holder,
            count,
            client,
            command,
            detail,
        });
    }

    /// Keeps the newer half of the locks that expired while held: a lock
    /// nobody takes again must not stay for as long as the server runs.
    fn forget_oldest_expired(&mut self) {
        let mut times: Vec<u64> = self.expired_held.values().map(|e| e.0).collect();
        let mid = times.len() / 2;
        let (_, cut, _) = times.select_nth_unstable(mid);
        let cut = *cut;
        self.expired_held.retain(|_, e| e.0 > cut);
    }

    fn violate(&mut self, id: Id<'_>, what: String) {
        if !self.violations.contains(&what) {
            self.violations.push(what);
            self.violation_at.push((self.now_ms, id.0, Bytes::copy_from_slice(id.1)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_as_json() {
        let e = LockEvent {
            id: 3,
            time_ms: 1000,
            db: 0,
            key: Bytes::from_static(b"my\"lock"),
            kind: "reentrant",
            event: "acquired",
            holder: Bytes::from_static(b"uuid:1"),
            count: 1,
            client: 7,
            command: "evalsha abc".into(),
        };
        assert_eq!(
            e.to_json(),
            r#"{"id":3,"time_ms":1000,"db":0,"key":"my\"lock","kind":"reentrant","event":"acquired","holder":"uuid:1","count":1,"client":7,"command":"evalsha abc"}"#
        );
    }

    #[test]
    fn auxiliary_keys_map_to_their_lock() {
        assert_eq!(lock_key(b"redisson_lock_queue:{a}"), b"a");
        assert_eq!(lock_key(b"redisson_lock_timeout:{a}"), b"a");
        assert_eq!(lock_key(b"{rw}:u:1:rwlock_timeout:1"), b"rw");
        assert_eq!(lock_key(b"plain"), b"plain");
        assert_eq!(owner(b"u:1:write"), b"u:1");
    }

    fn packed(kind: &str, deadline: Option<u64>, value: Option<i64>, holders: &[(&[u8], i64)]) -> Vec<u8> {
        let mut out = Vec::new();
        pack_body(&mut out, kind, deadline, value, |f| {
            for (id, count) in holders {
                f(id, *count);
            }
        });
        out
    }

    #[test]
    fn a_packed_view_keeps_what_the_comparison_reads() {
        let long = [b'x'; 300];
        let holder_sets: [&[(&[u8], i64)]; 5] = [
            &[],
            // One Redisson holder, the common case.
            &[(b"3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:1", 1)],
            // Re-entered, an empty id, a writer beside it (read-write).
            &[(b"uuid-a:1", 3), (b"", 1), (b"uuid-b:7:write", 1)],
            // Semaphore members; counts at the limits; an id needing a two-byte length.
            &[(b"m1", i64::MAX), (b"m2", i64::MIN), (b"m3", -1), (&long, 0)],
            &[(b"a", 64), (b"b", -65), (b"c", 1 << 40)],
        ];
        for kind in KINDS {
            for value in [None, Some(-3), Some(0), Some(i64::MAX), Some(i64::MIN)] {
                for deadline in [None, Some(0), Some(127), Some(128), Some(1_700_000_000_123), Some(u64::MAX)] {
                    for holders in holder_sets {
                        let b = packed(kind, deadline, value, holders);
                        let back = Body::parse(&b);
                        assert_eq!((back.kind(), back.deadline, back.value), (kind, deadline, value));
                        assert_eq!(back.holders().collect::<Vec<_>>(), holders.to_vec());
                    }
                }
            }
        }
    }

    #[test]
    fn equal_views_pack_to_equal_bytes() {
        let a: &[(&[u8], i64)] = &[(b"u:1", 1), (b"u:2", 2)];
        let base = packed("read-write", Some(10), None, a);
        assert_eq!(base, packed("read-write", Some(10), None, a));
        // Any difference the comparison reads shows in the bytes.
        assert_ne!(base, packed("fair", Some(10), None, a));
        assert_ne!(base, packed("read-write", Some(11), None, a));
        assert_ne!(base, packed("read-write", None, None, a));
        assert_ne!(base, packed("read-write", Some(10), Some(10), a));
        assert_ne!(base, packed("read-write", Some(10), None, &[(b"u:1", 1), (b"u:2", 3)]));
        assert_ne!(base, packed("read-write", Some(10), None, &[(b"u:2", 2), (b"u:1", 1)]));
        assert_ne!(base, packed("read-write", Some(10), None, &[(b"u:1", 1)]));
    }

    #[test]
    fn ids_hash_as_the_tuples_they_look_up() {
        use std::hash::BuildHasher;
        let h = crate::db::Hasher::default();
        let key = Bytes::from_static(b"lock");
        assert_eq!(h.hash_one(Id(3, b"lock")), h.hash_one((3usize, key.clone())));
        let mut m: HashMap<(usize, Bytes), u8> = HashMap::default();
        m.insert((3, key), 1);
        assert_eq!(m.get(&Id(3, b"lock")), Some(&1));
        assert_eq!(m.get(&Id(2, b"lock")), None);
    }

    /// A Redisson lock's events take about 20 bytes each: key, a few
    /// numbers, and the holder once for a run of events with the same one.
    #[test]
    fn stored_events_stay_small() {
        let mut log = Log::default();
        let actor = Actor::new(5, "evalsha", Some(&[b'a'; 40]));
        let holder = b"3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:1";
        for i in 0..MAX_EVENTS * 2 {
            let key = format!("lock:{}", i / 2);
            let event = if i % 2 == 0 { ACQUIRED } else { RELEASED };
            log.push(
                Id(0, key.as_bytes()),
                index_of(&KINDS, "reentrant"),
                event,
                holder,
                (i % 2) as i64,
                1_700_000_000_000 + i as u64,
                &actor,
            );
        }
        let per_event = log.events.stored_bytes() / MAX_EVENTS;
        assert!(per_event <= 22, "{per_event}");
    }

    #[test]
    fn the_event_ring_keeps_the_newest_with_their_text() {
        let mut log = Log::default();
        let actor = Actor::new(5, "evalsha", Some(b"abc"));
        let n = MAX_EVENTS + 1234;
        let key = |i: usize| format!("k{}", i % 7);
        let holder = |i: usize| "h".repeat(i % 5);
        let event = |i: usize| if i.is_multiple_of(2) { ACQUIRED } else { EXPIRED };
        for i in 0..n {
            log.push(
                Id(i % 3, key(i).as_bytes()),
                index_of(&KINDS, "fair"),
                event(i),
                holder(i).as_bytes(),
                i as i64,
                1000 + i as u64,
                &actor,
            );
        }
        let h = LockHistory { log, ..Default::default() };
        let kept = n - MAX_EVENTS..n;
        let all = h.events(None, 0);
        assert_eq!(all.len(), MAX_EVENTS);
        for (e, i) in all.iter().zip(kept.clone()) {
            let (client, command) = if i.is_multiple_of(2) { (5, "evalsha abc") } else { (0, "(expiry)") };
            let expected = LockEvent {
                id: i as u64 + 1,
                time_ms: 1000 + i as u64,
                db: i % 3,
                key: Bytes::from(key(i)),
                kind: "fair",
                event: EVENTS[usize::from(event(i))],
                holder: Bytes::from(holder(i)),
                count: i as i64,
                client,
                command: command.into(),
            };
            assert_eq!(*e, expected);
        }
        let newest = h.events(None, n as u64 - 10);
        assert_eq!(newest.iter().map(|e| e.id).collect::<Vec<_>>(), (n as u64 - 9..=n as u64).collect::<Vec<_>>());
        let of_k3 = h.events(Some(b"k3"), 0);
        assert_eq!(of_k3.len(), kept.clone().filter(|i| i % 7 == 3).count());
        assert!(of_k3.iter().all(|e| &e.key[..] == b"k3"));
        assert!(h.events(Some(b"k"), 0).is_empty());
        assert!(h.events(None, n as u64).is_empty());
    }

    #[test]
    fn each_lock_is_observed_once_per_command() {
        let keys: Vec<String> = (0..20).map(|i| format!("k{}", i % 11)).collect();
        let mut done = Done { inline: [Id(0, b""); 8], len: 0, more: None };
        let firsts: Vec<bool> = keys.iter().map(|k| done.first(Id(0, k.as_bytes()))).collect();
        assert_eq!(firsts, (0..20).map(|i| i < 11).collect::<Vec<_>>());
        assert!(done.first(Id(1, b"k0")));
        assert!(done.first(Id(0, b"")));
        assert!(!done.first(Id(0, b"")));
    }

    /// A keyspace whose writes take the history's before-images.
    fn keyspace() -> Keyspace {
        let mut ks = Keyspace::new(1);
        crate::control::Control::attach(true, &mut ks);
        ks
    }

    /// What the core does after a command: the history compares, the
    /// images go.
    fn after(h: &mut LockHistory, touched: &[(usize, crate::db::Key)], ks: &mut Keyspace, actor: &Actor) {
        h.observe(touched, ks, ks.now, actor);
        ks.sig.images.clear();
        ks.sig.touched.clear();
    }

    /// A fair lock's queue is kept only while it has waiters, and still
    /// catches a waiter served out of turn.
    #[test]
    fn fair_queues_are_kept_only_while_someone_waits() {
        use crate::db::value::{HashValue, Value};
        use crate::db::Key;
        let mut ks = keyspace();
        ks.now = 1_000;
        let actor = Actor::new(7, "evalsha", None);
        let mut h = LockHistory::default();
        let (lock, queue) = (Bytes::from_static(b"fair"), Bytes::from_static(b"redisson_lock_queue:{fair}"));
        let touched = [(0, Key::new(&lock)), (0, Key::new(&queue))];
        let hold = |ks: &mut Keyspace, holder: &str, waiters: &[&str]| {
            let mut v = ks.view(0);
            let hash: HashValue = [(holder, "1")].into_iter().collect();
            v.set(&lock, Value::Hash(hash), false);
            v.remove(&queue);
            if !waiters.is_empty() {
                let list = waiters.iter().map(|w| Bytes::copy_from_slice(w.as_bytes())).collect();
                v.set(&queue, Value::List(list), false);
            }
        };
        // Held by u1:1 with u2:2 then u3:3 waiting: the queue is kept.
        hold(&mut ks, "u1:1", &["u2:2", "u3:3"]);
        after(&mut h, &touched, &mut ks, &actor);
        assert_eq!(h.log.queues.len(), 1);
        // Served in turn, nobody left waiting: nothing is kept.
        hold(&mut ks, "u2:2", &[]);
        after(&mut h, &touched, &mut ks, &actor);
        assert!(h.log.queues.is_empty());
        // A thousand fair locks taken and released with nobody waiting.
        for i in 0..1000 {
            let name = Bytes::from(format!("fair{i}"));
            let mut v = ks.view(0);
            v.set(&name, Value::Hash([("u9:9", "1")].into_iter().collect()), false);
            after(&mut h, &[(0, Key::new(&name))], &mut ks, &actor);
            ks.view(0).remove(&name);
            after(&mut h, &[(0, Key::new(&name))], &mut ks, &actor);
        }
        assert!(h.log.queues.is_empty());
        // Out of turn is still caught: u5:5 waited behind u4:4.
        hold(&mut ks, "u2:2", &["u4:4", "u5:5"]);
        after(&mut h, &touched, &mut ks, &actor);
        hold(&mut ks, "u5:5", &["u4:4"]);
        after(&mut h, &touched, &mut ks, &actor);
        assert!(h.violations().iter().any(|v| v.contains("served u5:5 before u4:4")), "{:?}", h.violations());
    }

    /// Holders of locks that expired while held are remembered for the
    /// most recent [`MAX_EXPIRED_HELD`] locks only, and still catch a
    /// second holder of a recent one.
    #[test]
    fn expired_holders_are_bounded() {
        use crate::db::value::Value;
        use crate::db::Key;
        let mut ks = keyspace();
        let actor = Actor::new(7, "evalsha", None);
        let mut h = LockHistory::default();
        let observe = |h: &mut LockHistory, ks: &mut Keyspace, name: &Bytes| {
            after(h, &[(0, Key::new(name))], ks, &actor);
        };
        let n = MAX_EXPIRED_HELD + 10;
        for i in 0..n {
            let name = Bytes::from(format!("lock{i}"));
            ks.now = 1_000 + i as u64;
            let deadline = ks.now + 1;
            let mut v = ks.view(0);
            v.set(&name, Value::Hash([("u1:1", "1")].into_iter().collect()), false);
            v.set_expire(&name, deadline);
            observe(&mut h, &mut ks, &name);
            // The lease runs out while held: the key expires.
            ks.now += 1;
            assert_eq!(ks.dbs[0].expire_due(0, ks.now, 16, &mut ks.sig), 1);
            observe(&mut h, &mut ks, &name);
        }
        assert!(h.log.expired_held.len() <= MAX_EXPIRED_HELD, "{}", h.log.expired_held.len());
        assert!(h.log.expired_held.len() >= MAX_EXPIRED_HELD / 2);
        let last = Bytes::from(format!("lock{}", n - 1));
        ks.view(0).set(&last, Value::Hash([("u2:2", "1")].into_iter().collect()), false);
        observe(&mut h, &mut ks, &last);
        assert!(
            h.violations().iter().any(|v| v.contains("acquired by u2:2 after its lease expired")),
            "{:?}",
            h.violations()
        );
    }

    /// Nothing is kept per lock between commands: a lock's state before a
    /// command is read from the keyspace, and the events still name the
    /// holders as they were.
    #[test]
    fn no_record_is_kept_per_lock() {
        use crate::db::value::Value;
        use crate::db::Key;
        let mut ks = keyspace();
        ks.now = 1_000;
        let actor = Actor::new(7, "evalsha", None);
        let mut h = LockHistory::default();
        let owners = ["3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:1", "3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:2"];
        let names: Vec<Bytes> = (0..100).map(|i| Bytes::from(format!("lock:{i}"))).collect();
        for (i, name) in names.iter().enumerate() {
            ks.view(0).set(name, Value::Hash([(owners[i % 2], "1")].into_iter().collect()), false);
            ks.view(0).set_expire(name, 31_000);
            after(&mut h, &[(0, Key::new(name))], &mut ks, &actor);
        }
        assert!(h.counters.is_empty() && h.stale.is_empty() && h.log.queues.is_empty());
        assert_eq!(h.events(None, 0).iter().filter(|e| e.event == "acquired").count(), 100);
        // Re-entered by its holder, renewed, then handed to the other
        // owner within one command.
        let first = &names[0];
        ks.view(0).set(first, Value::Hash([(owners[0], "2")].into_iter().collect()), true);
        after(&mut h, &[(0, Key::new(first))], &mut ks, &actor);
        ks.view(0).set_expire(first, 61_000);
        after(&mut h, &[(0, Key::new(first))], &mut ks, &actor);
        ks.view(0).set(first, Value::Hash([(owners[0], "3")].into_iter().collect()), true);
        ks.view(0).remove(first);
        ks.view(0).set(first, Value::Hash([(owners[1], "1")].into_iter().collect()), true);
        after(&mut h, &[(0, Key::new(first)), (0, Key::new(first)), (0, Key::new(first))], &mut ks, &actor);
        let events: Vec<(&str, Bytes, i64)> =
            h.events(Some(first), 0).into_iter().map(|e| (e.event, e.holder, e.count)).collect();
        let own = |i: usize| Bytes::from_static(owners[i].as_bytes());
        assert_eq!(
            events,
            [
                ("acquired", own(0), 1),
                ("reentered", own(0), 2),
                ("renewed", own(0), 2),
                ("released", own(0), 0),
                ("acquired", own(1), 1)
            ]
        );
        // Every lock released.
        for name in &names {
            ks.view(0).remove(name);
            after(&mut h, &[(0, Key::new(name))], &mut ks, &actor);
        }
        assert_eq!(h.events(None, 0).iter().filter(|e| e.event == "released").count(), 101);
    }

    /// A key whose lease ran out but that is still stored (a replica waits
    /// for its primary's `DEL`) expires once: when first seen gone, not
    /// again when it is deleted.
    #[test]
    fn a_stale_key_expires_once() {
        use crate::db::value::Value;
        use crate::db::Key;
        let mut ks = keyspace();
        ks.now = 1_000;
        let actor = Actor::new(7, "evalsha", None);
        let mut h = LockHistory::default();
        let (lock, queue) = (Bytes::from_static(b"f"), Bytes::from_static(b"redisson_lock_queue:{f}"));
        ks.view(0).set(&lock, Value::Hash([("u1:1", "1")].into_iter().collect()), false);
        ks.view(0).set_expire(&lock, 2_000);
        after(&mut h, &[(0, Key::new(&lock))], &mut ks, &actor);
        ks.now = 3_000;
        // Only the queue is written: the lock's lease ran out meanwhile.
        ks.view(0).set(&queue, Value::List([Bytes::from_static(b"u2:2")].into_iter().collect()), false);
        after(&mut h, &[(0, Key::new(&queue))], &mut ks, &actor);
        assert_eq!(h.stale.len(), 1);
        assert_eq!(ks.dbs[0].expire_due(0, ks.now, 16, &mut ks.sig), 1);
        after(&mut h, &[(0, Key::new(&lock))], &mut ks, &actor);
        let events: Vec<&str> = h.events(None, 0).into_iter().map(|e| e.event).collect();
        assert_eq!(events, ["acquired", "expired"]);
        assert!(h.stale.is_empty());
    }
}
