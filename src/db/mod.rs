//! The keyspace: databases, values, expiry.
//!
//! **Invariant:** a key whose deadline is `<= now` is never returned by any
//! accessor of [`DbView`]; it is deleted on access (lazy expiry) or by the
//! active expiry cycle, whichever comes first. `now` is the command's (or the
//! whole script's) frozen time, taken once from the server [`Clock`](crate::clock::Clock).
//!
//! **Invariant:** every entry with a deadline is counted once by exactly one
//! `(deadline, hash of its key)` pair in its database's `expires` index
//! ([`expiry`]), and by no other pair; the map keeps its hasher for life.
//!
//! Keys are copied into their own allocation when stored (never a slice of a
//! connection's read buffer, which would keep that buffer alive).
//!
//! Each database is a [`keymap::KeyMap`] of [`Entry`] with its expiry index; both
//! are private to `db`: commands change keys through [`DbView`] (a database
//! seen by one command at its frozen time) and read raw entries through
//! [`DbView::raw`], so the expiry-index invariant is kept by the compiler.
//! Modifications are signalled explicitly (`set`/`insert_new`/`remove`
//! signal, in-place edits call `touch`): touched keys drive WATCH, blocked
//! clients, client-side caching and keyspace events (`notify`). An
//! [`Entry`] is 40 bytes (its deadline an `Option<NonZeroU64>`, a 24-byte
//! value, a string inline when short: [`str_value`]); values: [`hash_value`],
//! [`set_value`], [`zset`], [`stream`], [`hll`], [`geohash`]; one value in
//! RDB format for `DUMP`/`RESTORE`: [`rdb`]; a point-in-time RDB file of
//! every database made a slice at a time for a full resynchronisation
//! (each entry's two-byte snapshot mark, each map's generation): [`snapshot`].
//!
//! `OBJECT ENCODING` (and `DUMP`'s layout) comes from `Entry::encoding`: a
//! string's from how it was last written, a set's, hash's or sorted set's
//! from its `StrEnc` mark, set `Small` or `Big` when the value is stored
//! whole, under the thresholds in force (`EncLimits`, copied from the
//! configuration into `Keyspace::tuning`), and set `Big` by the write that
//! crosses one (`DbView::mark_outgrown`); nothing converts back, as in Redis
//! 7.0.
//!
//! Hash field expiration (Redis 7.4): a hash's field deadlines live in the
//! value (six bytes a field at the end of a packed hash's buffer, a vector
//! beside a large one's map: [`hash_value`]); each database also indexes the hashes
//! that have some by the earliest deadline each is registered under
//! (`Db::fields`), pairs that may be stale and are checked when popped.
//! Active expiry (`Db::expire_due`) deletes due fields after due keys, with
//! one `hexpired` event per hash and `del` with its last field; commands
//! that name fields delete the due ones lazily (`DbView::expire_fields`).
//!
//! Active expiry pops due keys from the ordered index in slices of at most
//! about 1 ms of lock time, yielding between slices. Maps shrink after mass
//! deletion: the table is rebuilt once few keys are left and the old one is
//! dropped on a background thread. `SCAN`/`HSCAN`/`SSCAN` walk an
//! insertion-ordered map downward by index; removal is `swap_remove` (the
//! last, already visited, entry moves into the hole) and insertion appends,
//! so a full iteration returns every element present throughout, as Redis
//! guarantees.

pub mod embed;
pub mod evict;
pub mod expiry;
pub mod geohash;
pub mod hash_value;
pub mod hll;
pub mod key;
pub mod keymap;
pub mod list_ring;
pub mod list_value;
pub mod preimage;
pub mod rdb;
pub mod set_value;
pub mod snapshot;
pub mod str_value;
pub mod stream;
pub mod thin;
pub mod value;
pub mod zset;

use std::hash::BuildHasher;
use std::num::NonZeroU64;

use bytes::Bytes;
use indexmap::IndexMap;

pub use key::Key;
pub use str_value::StrValue;
pub use value::{EncLimits, Value};

use evict::{Lfu, LFU_INIT_VAL};

use crate::error::CmdError;

/// Hasher for every map in the keyspace (seeded per process, fast).
pub type Hasher = foldhash::fast::RandomState;
/// Insertion-ordered map for the values' own tables and the server's (a
/// large hash's fields, the clients): O(1) random access and cursor scans,
/// as the keyspace's [`keymap::KeyMap`] has, which is the same shape
/// without the stored hashes.
pub type Map<K, V> = IndexMap<K, V, Hasher>;

/// A deadline as stored: the epoch itself (0, long past whatever the
/// clock says) is kept as 1 ms after it, so that 0 can mean "none".
fn deadline_ms(at: u64) -> u64 {
    at.max(1)
}

/// One stored key.
#[derive(Debug, Clone)]
pub struct Entry {
    pub value: Value,
    /// Absolute deadline in unix milliseconds ([`Entry::expire`]); in eight
    /// bytes, where an `Option<u64>` takes sixteen and every stored key
    /// pays for them.
    deadline: Option<NonZeroU64>,
    /// How Redis would have encoded this string, where its history (not
    /// its content) decides (`OBJECT ENCODING`).
    pub str_enc: StrEnc,
    /// Last access, in seconds on the server clock (`OBJECT IDLETIME`, the
    /// LRU eviction policies); while an LFU policy is selected, the access
    /// counter and its decrement time instead ([`Lfu`]). One field holds
    /// either, as in Redis: after a switch of policy the old data reads as
    /// the other kind until keys are accessed again.
    pub lru: u32,
    /// The full-sync snapshot generation this entry was last seen by
    /// ([`snapshot`]): equal to its map's generation once the running
    /// snapshot has written it (or it was stored after the snapshot
    /// began); never above it. Lives in what was padding: the entry stays
    /// 40 bytes (a 24-byte [`Value`], whose forms all fit beside a
    /// string's tag byte, and this metadata): a slot with its key is 64.
    mark: u16,
}

/// A string's encoding as far as history decides it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StrEnc {
    /// Set whole (SET, INCR…): `int`, `embstr` or `raw` from the content.
    #[default]
    Auto,
    /// Edited in place (APPEND, SETRANGE): `raw`.
    Raw,
    /// Stored from a formatted float (INCRBYFLOAT): never `int`.
    NotInt,
    /// A set, hash or sorted set that outgrew its compact encoding (intset
    /// or listpack) in place: Redis never converts it back, however small
    /// it gets (`hashtable` / `skiplist` from then on).
    Big,
    /// A set, hash or sorted set in its compact encoding: pinned when the
    /// value is stored, so that thresholds lowered later by `CONFIG SET`
    /// convert it only when a write crosses them, as in Redis. For a set,
    /// an intset.
    Small,
    /// A set that is a listpack (Redis 7.2 and later: a small set that is
    /// not, or is no longer, an intset); it becomes a hashtable when a
    /// write crosses `set-max-listpack-*`, and never an intset again.
    SetListpack,
}

impl Entry {
    pub fn new(value: Value) -> Entry {
        Entry { value, deadline: None, str_enc: StrEnc::Auto, lru: 0, mark: 0 }
    }

    /// Absolute deadline in unix milliseconds, if the key has one.
    #[inline]
    pub fn expire(&self) -> Option<u64> {
        self.deadline.map(NonZeroU64::get)
    }

    /// Sets the deadline (see [`deadline_ms`]); the previous one.
    fn replace_expire(&mut self, at: u64) -> Option<u64> {
        self.deadline.replace(NonZeroU64::new(deadline_ms(at)).expect("not 0")).map(NonZeroU64::get)
    }

    /// Removes the deadline; the previous one.
    fn take_expire(&mut self) -> Option<u64> {
        self.deadline.take().map(NonZeroU64::get)
    }

    /// What `OBJECT ENCODING` answers for this key.
    pub fn encoding(&self) -> &'static str {
        match (&self.value, self.str_enc) {
            (Value::Str(_), StrEnc::Raw) => "raw",
            (Value::Str(s), StrEnc::NotInt) => {
                if s.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
            (Value::Set(_) | Value::Hash(_), StrEnc::Big) => "hashtable",
            (Value::ZSet(_), StrEnc::Big) => "skiplist",
            (Value::Set(_), StrEnc::Small) => "intset",
            (Value::Set(_), StrEnc::SetListpack) => "listpack",
            (Value::Hash(h), StrEnc::Small) if h.has_ttls() => "listpackex",
            (Value::Hash(_) | Value::ZSet(_), StrEnc::Small) => "listpack",
            (v, _) => v.encoding(&EncLimits::default()),
        }
    }
}

/// One database (`SELECT n`). Its map and expiry index are changed only
/// by this module (through [`DbView`] and the methods below), which keeps
/// the expiry-index invariant (see the module docs).
#[derive(Debug, Default, Clone)]
pub struct Db {
    map: entries::Entries,
    expires: expiry::ExpiryIndex,
    /// Hashes with field deadlines, by the deadline each is registered
    /// under ([`hash_value::HashValue::registered`]): the field-expiry index.
    /// Unlike `expires`, a pair may be stale (its key gone, re-registered
    /// earlier, or its fields persisted): it is checked when popped, so
    /// that no write of a hash has to find and remove its pair.
    /// **Invariant:** a hash with a field deadline has `registered` set,
    /// no later than that deadline, with a pair `(registered, hash of key)`.
    fields: expiry::FieldIndex,
}

/// What Redisson's fair lock names its queue key with
/// (`redisson_lock_queue:{name}`): a database counts its keys that start
/// with it ([`Db::has_fair_queues`]).
pub const FAIR_QUEUE_PREFIX: &[u8] = b"redisson_lock_queue:";

/// A database's map, with a count of its keys that start with
/// [`FAIR_QUEUE_PREFIX`], kept where keys come and go.
mod entries {
    use super::keymap::KeyMap;
    use super::{Entry, Key, FAIR_QUEUE_PREFIX};

    /// **Invariant:** `queues` is the number of keys of `map` that start
    /// with [`FAIR_QUEUE_PREFIX`]. `map` is private to this module: outside
    /// it, the map is read through `Deref` and changed only by the methods
    /// below, every one of which adds or takes away a key's count with the
    /// key (by construction, whatever path stores or deletes the key: a
    /// command, expiry, eviction, a load, a swap or move of whole databases).
    ///
    /// **Invariant:** no entry's `mark` is above `gen`; every entry stored
    /// ([`Entries::insert`]) gets `gen` (see `db::snapshot`).
    #[derive(Debug, Default, Clone)]
    pub struct Entries {
        map: KeyMap<Entry>,
        queues: usize,
        gen: u16,
    }

    impl std::ops::Deref for Entries {
        type Target = KeyMap<Entry>;

        #[inline]
        fn deref(&self) -> &KeyMap<Entry> {
            &self.map
        }
    }

    /// 1 if `key` is counted (first byte first: most keys stop there).
    #[inline]
    fn counted(key: &[u8]) -> usize {
        usize::from(key.first() == Some(&FAIR_QUEUE_PREFIX[0]) && key.starts_with(FAIR_QUEUE_PREFIX))
    }

    impl Entries {
        /// Keys that start with [`FAIR_QUEUE_PREFIX`].
        #[inline]
        pub fn queues(&self) -> usize {
            self.queues
        }

        /// `KeyMap::insert` (a key already there keeps its place and
        /// count). The entry is marked with the current generation: a
        /// snapshot running now does not write it (it was written before,
        /// or did not exist when the snapshot began).
        #[inline]
        pub fn insert(&mut self, key: Key, mut entry: Entry) -> Option<Entry> {
            let add = counted(&key);
            entry.mark = self.gen;
            let old = self.map.insert(key, entry);
            if old.is_none() {
                self.queues += add;
            }
            old
        }

        /// `KeyMap::swap_remove_index`.
        #[inline]
        pub fn swap_remove_index(&mut self, idx: usize) -> Option<(Key, Entry)> {
            let gone = self.map.swap_remove_index(idx);
            self.forget(gone)
        }

        /// `KeyMap::swap_remove_entry`.
        #[inline]
        pub fn swap_remove_entry(&mut self, key: &[u8]) -> Option<(Key, Entry)> {
            let gone = self.map.swap_remove_entry(key);
            self.forget(gone)
        }

        /// `KeyMap::swap_remove`.
        #[inline]
        pub fn swap_remove(&mut self, key: &[u8]) -> Option<Entry> {
            self.swap_remove_entry(key).map(|(_, e)| e)
        }

        #[inline]
        fn forget(&mut self, gone: Option<(Key, Entry)>) -> Option<(Key, Entry)> {
            if let Some((k, _)) = &gone {
                self.queues -= counted(k);
            }
            gone
        }

        /// `KeyMap::get_index_mut` (the key stays as it is).
        #[inline]
        pub fn get_index_mut(&mut self, idx: usize) -> Option<(&Key, &mut Entry)> {
            self.map.get_index_mut(idx)
        }

        /// `KeyMap::get_mut`.
        #[inline]
        pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
            self.map.get_mut(key)
        }

        /// The snapshot generation (see `db::snapshot`).
        #[inline]
        pub fn gen(&self) -> u16 {
            self.gen
        }

        /// Starts a snapshot generation: every entry is unmarked. When the
        /// counter wraps, every mark goes back to 0 first (once in 65,535
        /// snapshots of this database), so no mark is ever above `gen`.
        pub fn new_generation(&mut self) {
            if self.gen == u16::MAX {
                for e in self.map.values_mut() {
                    e.mark = 0;
                }
                self.gen = 0;
            }
            self.gen += 1;
        }

        /// The entry at `idx` unless it is marked with the current
        /// generation; marks it (a snapshot writes it now).
        #[inline]
        pub fn claim_index(&mut self, idx: usize) -> Option<(&Key, &Entry)> {
            let gen = self.gen;
            let (k, e) = self.map.get_index_mut(idx)?;
            if e.mark == gen {
                return None;
            }
            e.mark = gen;
            Some((k, e))
        }

        /// Moves every entry into a new map of `capacity` with the same
        /// hasher (the same keys: the count stays); returns the old map.
        pub fn rebuild(&mut self, capacity: usize) -> KeyMap<Entry> {
            let mut fresh = KeyMap::with_capacity_and_hasher(capacity, self.map.hasher().clone());
            for (k, e) in self.map.drain() {
                fresh.insert(k, e);
            }
            std::mem::replace(&mut self.map, fresh)
        }
    }
}

/// Keyspace-notification classes (`notify-keyspace-events` letters).
pub mod notify {
    pub const KEYSPACE: u32 = 1 << 0; // K
    pub const KEYEVENT: u32 = 1 << 1; // E
    pub const GENERIC: u32 = 1 << 2; // g
    pub const STRING: u32 = 1 << 3; // $
    pub const LIST: u32 = 1 << 4; // l
    pub const SET: u32 = 1 << 5; // s
    pub const HASH: u32 = 1 << 6; // h
    pub const ZSET: u32 = 1 << 7; // z
    pub const EXPIRED: u32 = 1 << 8; // x
    pub const EVICTED: u32 = 1 << 9; // e
    pub const STREAM: u32 = 1 << 10; // t
    pub const KEY_MISS: u32 = 1 << 11; // m
    pub const NEW: u32 = 1 << 12; // n
    pub const MODULE: u32 = 1 << 13; // d
    /// `A`: g$lshzxet
    pub const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// A keyspace event to publish once the command completes.
#[derive(Debug, Clone)]
pub struct KeyEvent {
    pub event: &'static str,
    pub db: usize,
    pub key: Bytes,
}

/// What commands did to the keyspace, collected while they run and acted on
/// after each command by the core (WATCH invalidation, blocked clients,
/// keyspace notifications).
#[derive(Debug, Default)]
pub struct Signals {
    /// Count of modifications (Redis `server.dirty`).
    pub dirty: u64,
    /// Record touched keys (only while someone WATCHes or blocks on keys,
    /// or the lock history records).
    pub track_touches: bool,
    pub touched: Vec<(usize, Key)>,
    /// Indices in `touched` of keys expired or evicted: changes no client's
    /// command made (BCAST's NOLOOP does not filter them, as in Redis).
    pub server_touched: Vec<usize>,
    /// Active `notify-keyspace-events` classes (0 = off).
    pub notify_flags: u32,
    pub events: Vec<KeyEvent>,
    /// Keys deleted by expiry (lazy or active) since last drained.
    pub expired: u64,
    /// The running command is read-only: its key lookups are Redis's
    /// `lookupKeyRead`, counted as keyspace hits and misses (a miss also
    /// fires the `keymiss` event).
    pub read_lookups: bool,
    pub hits: u64,
    pub misses: u64,
    /// Under an LFU policy, the last key the running command accessed
    /// (database, key): a command that looks a key up more than once (to
    /// create it, then to change it) counts one access, as Redis's single
    /// lookup does. Reset by `cmd::call::call` around every handler.
    pub lfu_seen: Option<(usize, Key)>,
    /// Keys deleted by expiry or eviction, recorded while the server feeds
    /// replicas (they are replicated as `DEL`).
    pub repl_deletes: Option<Vec<(usize, Key)>>,
    /// Hash fields deleted by field expiry (database, key, field), recorded
    /// while `repl_deletes` is (replicated as `HDEL`, one each, as Redis).
    pub repl_fields: Vec<(usize, Key, Bytes)>,
    /// Changes counted in `dirty` that lazy field expiry made (not the
    /// command's own, for deciding whether to replicate it), counted while
    /// `repl_deletes` is recorded.
    pub expiry_dirty: u64,
    /// Before-images of the keys the running command changes, while a
    /// floor above asks for them (test control's lock history).
    pub images: preimage::PreImages,
}

impl Signals {
    /// Counts a modification of `key`, and records it while something
    /// needs to know ([`Key`]: a copy, allocated only past 22 bytes).
    pub fn touch(&mut self, db: usize, key: &[u8]) {
        self.dirty += 1;
        if self.track_touches {
            self.touched.push((db, Key::new(key)));
        }
    }

    /// Marks the last touched key (`key` of `db`) as the server's own
    /// change (expiry, eviction).
    pub fn mark_server_touch(&mut self, db: usize, key: &[u8]) {
        if let Some(d) = self.repl_deletes.as_mut() {
            d.push((db, Key::new(key)));
        }
        if self.track_touches && !self.touched.is_empty() {
            self.server_touched.push(self.touched.len() - 1);
        }
    }

    pub fn notify(&mut self, class: u32, event: &'static str, db: usize, key: &[u8]) {
        if self.notify_flags & class != 0 && self.notify_flags & (notify::KEYSPACE | notify::KEYEVENT) != 0 {
            self.events.push(KeyEvent { event, db, key: Bytes::copy_from_slice(key) });
        }
    }
}

/// The configuration the keyspace acts on, copied from the server's
/// parameters whenever they change.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tuning {
    /// The compact-encoding thresholds.
    pub limits: EncLimits,
    /// Set while `maxmemory-policy` is an LFU policy: accesses count into
    /// each entry's `lru` word instead of stamping the time.
    pub lfu: Option<Lfu>,
}

/// All databases plus the frozen time of the running command.
#[derive(Debug)]
pub struct Keyspace {
    pub dbs: Vec<Db>,
    /// Unix ms, frozen for the duration of a command / script.
    pub now: u64,
    pub sig: Signals,
    pub tuning: Tuning,
}

impl Keyspace {
    pub fn new(databases: usize) -> Self {
        Keyspace {
            dbs: (0..databases).map(|_| Db::default()).collect(),
            now: 0,
            sig: Signals::default(),
            tuning: Tuning::default(),
        }
    }

    /// A view of database `index` at the current frozen time.
    pub fn view(&mut self, index: usize) -> DbView<'_> {
        DbView { db: &mut self.dbs[index], index, now: self.now, sig: &mut self.sig, tuning: &self.tuning }
    }

    pub fn total_keys(&self) -> usize {
        self.dbs.iter().map(|d| d.map.len()).sum()
    }
}

/// Copy bytes into a fresh allocation for storage.
#[inline]
pub fn own(b: &Bytes) -> Bytes {
    Bytes::copy_from_slice(b)
}

/// A database as seen by one command: lazy expiry at the command's time,
/// modification signals recorded.
pub struct DbView<'a> {
    db: &'a mut Db,
    pub index: usize,
    pub now: u64,
    pub sig: &'a mut Signals,
    tuning: &'a Tuning,
}

impl DbView<'_> {
    /// Lets [`Signals::images`] take `key`'s before-image (the first change
    /// of it in this command is about to happen).
    #[inline]
    fn before_write(&mut self, key: &[u8]) {
        if self.sig.images.active() {
            self.sig.images.take(self.db, self.index, key);
        }
    }

    /// Deletes `key` if its deadline has passed. Returns true if it was expired.
    fn expire_if_needed(&mut self, key: &[u8]) -> bool {
        self.db.map.get_index_of(key).is_some_and(|idx| self.expire_index_if_due(idx))
    }

    /// Deletes the entry at `idx` if its deadline has passed (true if so).
    fn expire_index_if_due(&mut self, idx: usize) -> bool {
        match self.db.map.get_index(idx).and_then(|(_, e)| e.expire()) {
            Some(at) if at <= self.now => {
                if self.sig.images.active() {
                    let k = self.db.map.get_index(idx).expect("index in range").0.clone();
                    self.sig.images.take_found(self.db, self.index, &k, Some(Some(idx)));
                }
                let (k, _) = self.db.map.swap_remove_index(idx).expect("index in range");
                self.db.expires.remove(at, self.db.hash(&k));
                self.sig.expired += 1;
                self.sig.touch(self.index, &k);
                self.sig.mark_server_touch(self.index, &k);
                self.sig.notify(notify::EXPIRED, "expired", self.index, &k);
                true
            }
            _ => false,
        }
    }

    /// The live entry for `key` (one hash lookup: the expiry check and the
    /// access share it).
    pub fn entry(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let idx = self.entry_index(key)?;
        self.db.map.get_index_mut(idx).map(|(_, e)| e)
    }

    /// [`entry`](Self::entry), as the entry's place in the map.
    fn entry_index(&mut self, key: &[u8]) -> Option<usize> {
        let idx = self.db.map.get_index_of(key);
        if !self.sig.read_lookups && self.sig.images.active() {
            // A write command's lookup: what it finds may be changed next.
            self.sig.images.take_found(self.db, self.index, key, Some(idx));
        }
        let idx = idx.filter(|&i| !self.expire_index_if_due(i));
        if self.sig.read_lookups {
            self.count_lookup(key, idx.is_some());
        }
        let (k, e) = self.db.map.get_index_mut(idx?)?;
        Self::access(self.tuning, self.sig, self.index, self.now, k, e);
        idx
    }

    /// The live entry for `key`, or one made of `make()` and added as by
    /// [`insert_new`](Self::insert_new) then read as by
    /// [`entry`](Self::entry). One lookup when the key exists.
    pub fn entry_or_insert(&mut self, key: &Bytes, make: impl FnOnce() -> Value) -> &mut Entry {
        let idx = match self.entry_index(key) {
            Some(i) => i,
            None => {
                self.insert_new(key, make());
                self.entry_index(key).expect("just inserted")
            }
        };
        self.db.map.get_index_mut(idx).expect("index in range").1
    }

    /// Records one access to the entry `e` of `key`: the time stamp, or
    /// under an LFU policy one counted access (once per command and key).
    fn access(tuning: &Tuning, sig: &mut Signals, index: usize, now: u64, key: &Key, e: &mut Entry) {
        match tuning.lfu {
            None => e.lru = lru_stamp(now),
            Some(lfu) => {
                let seen = sig.lfu_seen.as_ref().is_some_and(|(db, k)| *db == index && k == key);
                if !seen {
                    e.lru = lfu.access(e.lru, now, rand::random::<f64>());
                    sig.lfu_seen = Some((index, key.clone()));
                }
            }
        }
    }

    /// The live entry for `key` without counting as an access (Redis's
    /// `LOOKUP_NOTOUCH`: `EXISTS`, `TYPE`, `TTL`, `OBJECT` …). Keyspace
    /// hits and misses are counted as by [`entry`](Self::entry).
    pub fn entry_notouch(&mut self, key: &[u8]) -> Option<&Entry> {
        let idx = self.db.map.get_index_of(key).filter(|&i| !self.expire_index_if_due(i));
        if self.sig.read_lookups {
            self.count_lookup(key, idx.is_some());
        }
        self.db.map.get_index(idx?).map(|(_, e)| e)
    }

    /// The access word a key stored now starts with: the time stamp, or
    /// under an LFU policy the initial counter.
    pub fn new_access(&self) -> u32 {
        match self.tuning.lfu {
            None => lru_stamp(self.now),
            Some(_) => Lfu::word(self.now, LFU_INIT_VAL),
        }
    }

    /// A key stored by the running command starts with its initial counter:
    /// the command's later lookups of it are not accesses (Redis creates
    /// the object after its one lookup).
    fn created(&mut self, key: &Bytes) {
        if self.tuning.lfu.is_some() {
            self.sig.lfu_seen = Some((self.index, Key::new(key)));
        }
    }

    /// The LFU parameters while an LFU policy is selected.
    pub fn lfu(&self) -> Option<Lfu> {
        self.tuning.lfu
    }

    /// The compact-encoding thresholds in force.
    pub fn limits(&self) -> &EncLimits {
        &self.tuning.limits
    }

    fn count_lookup(&mut self, key: &[u8], hit: bool) {
        if hit {
            self.sig.hits += 1;
        } else {
            self.sig.misses += 1;
            if self.sig.notify_flags & notify::KEY_MISS != 0 {
                self.sig.notify(notify::KEY_MISS, "keymiss", self.index, &Bytes::copy_from_slice(key));
            }
        }
    }

    pub fn get(&mut self, key: &[u8]) -> Option<&Value> {
        self.entry(key).map(|e| &e.value)
    }

    /// Mutable access to a value. The caller must call [`touch`](Self::touch)
    /// if it modifies it.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Value> {
        self.entry(key).map(|e| &mut e.value)
    }

    pub fn exists(&mut self, key: &[u8]) -> bool {
        self.entry(key).is_some()
    }

    /// Valkey 8's deletion of a key given a deadline already past (`EXPIRE`
    /// with a time before now, `SET`/`GETEX` with one): the key expires at
    /// once, as an expired key does (`expired` event, `expired_keys`).
    pub fn expire_now(&mut self, key: &[u8]) {
        self.set_expire(key, 1);
        self.expire_if_needed(key);
    }

    /// Marks an aggregate grown in place past its compact encoding when
    /// `outgrown` (see [`StrEnc::Big`]).
    pub fn mark_outgrown(&mut self, key: &[u8], outgrown: bool) {
        if outgrown {
            self.set_str_enc(key, StrEnc::Big);
        }
    }

    /// Sets the access word of `key` ([`lru_stamp`] or an [`Lfu`] word;
    /// `RESTORE … IDLETIME` / `FREQ`).
    pub fn set_lru(&mut self, key: &[u8], stamp: u32) {
        if let Some(e) = self.db.map.get_mut(key) {
            e.lru = stamp;
        }
    }

    /// Records how a string was last written (see [`StrEnc`]).
    pub fn set_str_enc(&mut self, key: &[u8], enc: StrEnc) {
        if let Some(e) = self.db.map.get_mut(key) {
            e.str_enc = enc;
        }
    }

    /// Pins the encoding of a set, hash or sorted set being stored whole:
    /// compact or not as Redis 7.0 would build it under the thresholds in
    /// force (see [`StrEnc::Small`]).
    fn pin_encoding(limits: &EncLimits, e: &mut Entry) {
        if e.str_enc == StrEnc::Auto && matches!(e.value, Value::Set(_) | Value::Hash(_) | Value::ZSet(_)) {
            e.str_enc = match (e.value.encoding(limits), &e.value) {
                ("hashtable" | "skiplist", _) => StrEnc::Big,
                ("listpack", Value::Set(_)) => StrEnc::SetListpack,
                _ => StrEnc::Small,
            };
        }
    }

    /// String value of `key`; `WRONGTYPE` for other types.
    pub fn get_str(&mut self, key: &[u8]) -> Result<Option<&StrValue>, CmdError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s)),
            Some(_) => Err(CmdError::WrongType),
        }
    }

    /// Stores `value` under `key`, replacing any previous value. The TTL is
    /// cleared unless `keep_ttl`. Signals a modification.
    pub fn set(&mut self, key: &Bytes, value: Value, keep_ttl: bool) {
        self.store(key, value, keep_ttl, StrEnc::Auto);
    }

    /// Stores a formatted float (`INCRBYFLOAT`), keeping the TTL: a string
    /// that is never `int` (see [`StrEnc::NotInt`]).
    pub fn set_float(&mut self, key: &Bytes, value: Value) {
        self.store(key, value, true, StrEnc::NotInt);
    }

    /// The key as `DEBUG RELOAD` leaves it: its value's encoding as a load
    /// of the RDB type `t` it was saved under gives it (a compact payload
    /// kept compact within the entries threshold in force, any other
    /// encoded from its content, a string `int`, `embstr` or `raw` by its
    /// content and, from Redis 8, its key and deadline), and its access
    /// time now unless the eviction policy saves it. Not a modification.
    pub fn reloaded(&mut self, key: &[u8], t: u8, keeps_access: bool) {
        let lru = self.new_access();
        let limits = self.tuning.limits;
        let Some(e) = self.db.map.get_mut(key) else { return };
        e.str_enc = rdb::loaded_encoding_of(t, &e.value, &limits).unwrap_or(StrEnc::Auto);
        Self::pin_encoding(&limits, e);
        if let Value::List(l) = &mut e.value {
            l.repack();
        }
        if !keeps_access {
            e.lru = lru;
        }
        let step = if e.expire().is_some() { embed::Step::StoredWithDeadline } else { embed::Step::Stored };
        settle(limits.embed, step, key.len(), e);
    }

    /// [`set`](Self::set) with the encoding the value is stored under.
    fn store(&mut self, key: &Bytes, value: Value, keep_ttl: bool, enc: StrEnc) {
        let rule = self.tuning.limits.embed;
        let mut idx = self.db.map.get_index_of(&key[..]);
        if self.sig.images.active() {
            self.sig.images.take_found(self.db, self.index, key, Some(idx));
        }
        if idx.is_some_and(|i| self.expire_index_if_due(i)) {
            idx = None;
        }
        match idx {
            Some(i) => {
                let (k, e) = self.db.map.get_index_mut(i).expect("index");
                // Redis looks the key up for the write (an access) and the
                // new value keeps the old one's access data.
                Self::access(self.tuning, self.sig, self.index, self.now, k, e);
                e.value = value;
                e.str_enc = enc;
                Self::pin_encoding(&self.tuning.limits, e);
                let step =
                    if e.expire().is_some() { embed::Step::Overwrote { keeps: keep_ttl } } else { embed::Step::Stored };
                settle(rule, step, key.len(), e);
                let dropped = if keep_ttl { None } else { e.take_expire() };
                let fields = has_field_ttls(&e.value);
                if let Some(at) = dropped {
                    let hash = self.db.hash(key);
                    self.db.expires.remove(at, hash);
                }
                if fields {
                    self.db.register_fields(key, true);
                }
            }
            None => {
                let mut e = Entry::new(value);
                e.lru = self.new_access();
                e.str_enc = enc;
                Self::pin_encoding(&self.tuning.limits, &mut e);
                settle(rule, embed::Step::Stored, key.len(), &mut e);
                let fields = has_field_ttls(&e.value);
                self.db.map.insert(Key::new(key), e);
                if fields {
                    self.db.register_fields(key, true);
                }
                self.created(key);
                self.sig.notify(notify::NEW, "new", self.index, key);
            }
        }
        self.sig.touch(self.index, key);
    }

    /// [`settle`] for the string at `key`, for a command that stored it
    /// through other calls (`RESTORE` with a deadline).
    #[inline]
    pub fn settle_string(&mut self, key: &[u8], step: embed::Step) {
        let rule = self.tuning.limits.embed;
        if rule == embed::Embed::Value {
            return;
        }
        if let Some(e) = self.db.map.get_mut(key) {
            settle(rule, step, key.len(), e);
        }
    }

    /// Adds a new key (the caller knows it does not exist). Signals.
    pub fn insert_new(&mut self, key: &Bytes, value: Value) {
        self.insert_new_untouched(key, value);
        self.sig.touch(self.index, key);
    }

    /// Adds a key that does not exist without marking it modified (Redis's
    /// `dbAdd` alone, before the command knows whether it changes
    /// anything): a WATCH on it stays valid until the caller `touch`es it.
    pub fn insert_new_untouched(&mut self, key: &Bytes, value: Value) {
        self.before_write(key);
        let mut e = Entry::new(value);
        e.lru = self.new_access();
        Self::pin_encoding(&self.tuning.limits, &mut e);
        let fields = has_field_ttls(&e.value);
        self.db.map.insert(Key::new(key), e);
        if fields {
            self.db.register_fields(key, true);
        }
        self.created(key);
        self.sig.notify(notify::NEW, "new", self.index, key);
    }

    /// Registers `key`'s hash in the field-expiry index after a field of
    /// it was given a deadline in place (`HEXPIRE`, `HSETEX`…).
    pub fn fields_changed(&mut self, key: &[u8]) {
        self.db.register_fields(key, false);
    }

    /// Deletes those of `fields` of the hash at `key` whose deadline has
    /// passed (a command touching them: Redis's lazy field expiry), with
    /// one `hexpired` event, and the key with a `del` event if that empties
    /// it. The number deleted.
    #[cold]
    #[inline(never)]
    pub fn expire_fields(&mut self, key: &Bytes, fields: &[Bytes]) -> usize {
        self.expire_fields_then(key, fields, true)
    }

    /// [`expire_fields`](Self::expire_fields), leaving an emptied hash in
    /// place unless `delete_empty` (`HSETEX` is about to write it: Redis
    /// neither deletes it nor says `del`).
    #[cold]
    #[inline(never)]
    pub fn expire_fields_then(&mut self, key: &Bytes, fields: &[Bytes], delete_empty: bool) -> usize {
        let now = self.now;
        let Some(Value::Hash(h)) = self.db.map.get(&key[..]).map(|e| &e.value) else { return 0 };
        if !h.has_ttls() || !fields.iter().any(|f| h.is_expired(f, now)) {
            return 0;
        }
        self.before_write(key);
        let Some(Entry { value: Value::Hash(h), .. }) = self.db.map.get_mut(&key[..]) else { return 0 };
        let dirty = self.sig.dirty;
        let mut n = 0;
        let record = self.sig.repl_deletes.is_some();
        for f in fields {
            if h.is_expired(f, now) && h.shift_remove(f) {
                n += 1;
                if record {
                    self.sig.repl_fields.push((self.index, Key::new(key), f.clone()));
                }
            }
        }
        let empty = h.is_empty();
        self.sig.touch(self.index, key);
        self.sig.notify(notify::HASH, "hexpired", self.index, key);
        if empty && delete_empty {
            self.remove(key);
            self.sig.notify(notify::GENERIC, "del", self.index, key);
        }
        if record {
            self.sig.expiry_dirty += self.sig.dirty - dirty;
        }
        n
    }

    /// Removes `key`, returning its value if it was live. Signals.
    pub fn remove(&mut self, key: &[u8]) -> Option<Value> {
        self.before_write(key);
        if self.expire_if_needed(key) {
            return None;
        }
        let (k, e) = self.db.map.swap_remove_entry(key)?;
        if let Some(at) = e.expire() {
            self.db.expires.remove(at, self.db.hash(&k));
        }
        self.sig.touch(self.index, &k);
        Some(e.value)
    }

    /// Removes `key` and returns the whole entry (value and deadline). Signals.
    pub fn take_entry(&mut self, key: &[u8]) -> Option<(Key, Entry)> {
        self.before_write(key);
        if self.expire_if_needed(key) {
            return None;
        }
        let (k, e) = self.db.map.swap_remove_entry(key)?;
        if let Some(at) = e.expire() {
            self.db.expires.remove(at, self.db.hash(&k));
        }
        self.sig.touch(self.index, &k);
        Some((k, e))
    }

    /// Stores a whole entry (value, deadline, encoding and access word),
    /// replacing any existing key, as `RENAME` and `COPY` do: the new
    /// object is made with its deadline (see [`embed`]). Signals.
    pub fn put_entry(&mut self, key: &Bytes, entry: Entry) {
        let deadline = entry.expire().is_some();
        self.put_entry_then_expire(key, entry);
        if deadline {
            self.settle_string(key, embed::Step::StoredWithDeadline);
        }
    }

    /// [`put_entry`](Self::put_entry) as `MOVE` does it: the object is
    /// stored, then given its deadline.
    pub fn put_entry_then_expire(&mut self, key: &Bytes, entry: Entry) {
        let (expire, enc, lru) = (entry.expire(), entry.str_enc, entry.lru);
        self.store(key, entry.value, false, enc);
        self.set_lru(key, lru);
        if let Some(at) = expire {
            self.set_expire(key, at);
        }
    }

    /// Sets the deadline of an existing key. Returns false if the key does not
    /// exist. Does not signal (callers decide: an expire in the past deletes).
    pub fn set_expire(&mut self, key: &[u8], at: u64) -> bool {
        let at = deadline_ms(at);
        self.before_write(key);
        self.expire_if_needed(key);
        let h = self.db.hash(key);
        let Some(e) = self.db.map.get_mut(key) else {
            return false;
        };
        match e.replace_expire(at) {
            Some(old) => {
                self.db.expires.remove(old, h);
            }
            None => settle(self.tuning.limits.embed, embed::Step::DeadlineAdded, key.len(), e),
        }
        self.db.expires.insert(at, h);
        true
    }

    /// Removes the deadline. Returns true if there was one.
    pub fn persist(&mut self, key: &[u8]) -> bool {
        self.before_write(key);
        self.expire_if_needed(key);
        let h = self.db.hash(key);
        let Some(e) = self.db.map.get_mut(key) else {
            return false;
        };
        match e.take_expire() {
            Some(old) => {
                self.db.expires.remove(old, h);
                true
            }
            None => false,
        }
    }

    /// `None`: no such key; `Some(None)`: no deadline; `Some(Some(at))`.
    pub fn expire_of(&mut self, key: &[u8]) -> Option<Option<u64>> {
        self.entry(key).map(|e| e.expire())
    }

    /// [`expire_of`](Self::expire_of) without counting as an access (`TTL`).
    pub fn expire_of_notouch(&mut self, key: &[u8]) -> Option<Option<u64>> {
        self.entry_notouch(key).map(|e| e.expire())
    }

    /// Signals that `key` was modified in place.
    pub fn touch(&mut self, key: &Bytes) {
        self.sig.touch(self.index, key);
    }

    /// Queues a keyspace notification (if enabled).
    pub fn notify(&mut self, class: u32, event: &'static str, key: &Bytes) {
        self.sig.notify(class, event, self.index, key);
    }

    /// Deletes `key` if `value` is an empty aggregate (Redis deletes empty
    /// hashes, lists, sets and sorted sets). Returns true if deleted.
    pub fn remove_if_empty(&mut self, key: &Bytes) -> bool {
        let empty = matches!(self.db.map.get(&key[..]), Some(e) if e.value.is_empty_aggregate());
        if empty {
            self.remove(key);
            self.notify(notify::GENERIC, "del", key);
        }
        empty
    }

    pub fn len(&self) -> usize {
        self.db.map.len()
    }

    /// The database as stored, read-only: entries whose deadline passed but
    /// that were not deleted yet included.
    pub fn raw(&self) -> &Db {
        self.db
    }
}

/// Redis 8 / Valkey 8: marks the string of `e` (under a key of `key`
/// bytes) `raw` if, after `step`, its key and deadline leave it no room to
/// be `embstr` ([`embed`]). Only ever turns `embstr` into `raw`, so that
/// steps compose (stored, then given a deadline). Nothing before 8: one
/// branch.
#[inline]
fn settle(rule: embed::Embed, step: embed::Step, key: usize, e: &mut Entry) {
    if rule == embed::Embed::Value {
        return;
    }
    if let Value::Str(s) = &e.value {
        if e.encoding() == "embstr" && !rule.keeps(step, key, s.len()) {
            e.str_enc = StrEnc::Raw;
        }
    }
}

/// Whether `v` is a hash with the form that carries field deadlines.
#[inline]
fn has_field_ttls(v: &Value) -> bool {
    matches!(v, Value::Hash(h) if h.has_ttls())
}

/// An entry's access stamp for a time in unix milliseconds.
pub fn lru_stamp(now_ms: u64) -> u32 {
    (now_ms / 1000) as u32
}

impl Db {
    /// Number of keys (expired ones not yet deleted included).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True without keys.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// True if some key (expired or not) starts with [`FAIR_QUEUE_PREFIX`]:
    /// until one does, no lock has a fair queue to look up. Exact on every
    /// path that stores or deletes a key (see `entries::Entries`).
    #[inline]
    pub fn has_fair_queues(&self) -> bool {
        self.map.queues() != 0
    }

    /// The keys [`has_fair_queues`](Self::has_fair_queues) counts.
    #[cfg(test)]
    pub fn fair_queue_keys(&self) -> usize {
        self.map.queues()
    }

    /// Number of keys with a deadline.
    pub fn expires_len(&self) -> usize {
        self.expires.len()
    }

    /// The stored entry of `key`, expired or not; no statistics, no
    /// deletion (Redis's `dictFind` without `lookupKey`).
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        self.map.get(key)
    }

    /// The entry at insertion index `i` (SCAN, RANDOMKEY).
    pub fn get_index(&self, i: usize) -> Option<(&Key, &Entry)> {
        self.map.get_index(i)
    }

    /// Every stored entry, expired or not, in index order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Entry)> + '_ {
        self.map.iter()
    }

    /// Every stored key, expired or not.
    pub fn keys(&self) -> impl Iterator<Item = &Key> + '_ {
        self.map.keys()
    }

    /// Registers the hash at `key` in the field-expiry index by its
    /// earliest field deadline if that is earlier than where it is
    /// registered (`fresh`: the value was just stored under this key, so
    /// whatever it carries is another key's registration).
    #[cold]
    #[inline(never)]
    fn register_fields(&mut self, key: &[u8], fresh: bool) {
        let hash = self.hash(key);
        let Some(Entry { value: Value::Hash(h), .. }) = self.map.get_mut(key) else { return };
        if !h.has_ttls() {
            return;
        }
        if fresh {
            h.set_registered(0);
        }
        if let Some(min) = h.min_expire() {
            let registered = h.registered();
            if registered == 0 || min < registered {
                h.set_registered(min);
                self.fields.insert(min, hash);
            }
        }
    }

    /// The hash registered in the field-expiry index under `(at, hash)`.
    fn hash_expiring(&self, at: u64, hash: u64) -> Option<&Key> {
        let hasher = self.map.hasher();
        let registered = |e: &Entry| match &e.value {
            Value::Hash(h) => h.has_ttls() && h.registered() == at,
            _ => false,
        };
        let mut other: Vec<&Key> = Vec::new();
        loop {
            let (k, e) = self.map.find_by_hash(hash, |k, _| hasher.hash_one(&k[..]) == hash && !other.contains(&k))?;
            if registered(e) {
                return Some(k);
            }
            other.push(k);
        }
    }

    /// Deletes the due fields of up to about `limit` hashes registered by
    /// a field deadline `<= now` (Redis's active field expiry): one
    /// `hexpired` event per hash, and `del` for a hash left empty, which is
    /// deleted. Returns the number of hashes visited.
    fn expire_fields_due(&mut self, index: usize, now: u64, limit: usize, sig: &mut Signals) -> usize {
        let mut n = 0;
        while n < limit {
            match self.fields.first() {
                Some((at, _)) if at <= now => {}
                _ => break,
            }
            let (at, hash, count) = self.fields.pop_first().expect("first exists");
            for _ in 0..count {
                let Some(key) = self.hash_expiring(at, hash).cloned() else { break };
                n += 1;
                sig.images.take(self, index, key.as_bytes());
                let Some(Entry { value: Value::Hash(h), .. }) = self.map.get_mut(&key) else { break };
                debug_assert!(h.has_ttls(), "registered");
                h.set_registered(0);
                let due = h.expired(now);
                for f in &due {
                    h.shift_remove(f);
                }
                if sig.repl_deletes.is_some() {
                    sig.repl_fields.extend(due.iter().map(|f| (index, key.clone(), f.clone())));
                }
                let empty = h.is_empty();
                if !due.is_empty() {
                    sig.touch(index, &key);
                    sig.notify(notify::HASH, "hexpired", index, &key);
                }
                if empty {
                    let e = self.map.swap_remove(&key).expect("present");
                    if let Some(at) = e.expire() {
                        let hash = self.hash(&key);
                        self.expires.remove(at, hash);
                    }
                    sig.notify(notify::GENERIC, "del", index, &key);
                } else {
                    self.register_fields(&key, false);
                }
            }
        }
        n
    }

    /// Deletes up to `limit` keys whose deadline is `<= now`, then the due
    /// fields of hashes (counted per hash) within what is left of
    /// `limit`. Returns the number deleted; fewer than `limit` means none
    /// are left due.
    pub fn expire_due(&mut self, index: usize, now: u64, limit: usize, sig: &mut Signals) -> usize {
        let n = self.expire_keys_due(index, now, limit, sig);
        if n < limit && !self.fields.is_empty() {
            return n + self.expire_fields_due(index, now, limit - n, sig);
        }
        n
    }

    /// The keys part of [`expire_due`](Self::expire_due).
    fn expire_keys_due(&mut self, index: usize, now: u64, limit: usize, sig: &mut Signals) -> usize {
        let mut n = 0;
        while n < limit {
            let Some((at, _)) = self.expires.first() else {
                break;
            };
            if at > now {
                break;
            }
            let (at, hash, count) = self.expires.pop_first().expect("first exists");
            for _ in 0..count {
                let Some(key) = self.key_expiring(at, hash).cloned() else { break };
                sig.images.take(self, index, key.as_bytes());
                self.map.swap_remove(&key);
                sig.expired += 1;
                sig.touch(index, &key);
                sig.mark_server_touch(index, &key);
                sig.notify(notify::EXPIRED, "expired", index, &key);
                n += 1;
            }
        }
        if n > 0 {
            self.maybe_shrink();
        }
        n
    }

    /// The map's hash of `key` (what the expiry index names keys by).
    fn hash(&self, key: &[u8]) -> u64 {
        self.map.hasher().hash_one(key)
    }

    /// The key whose deadline is `at` among those whose map hash is `hash`
    /// (see [`expiry`]): found through the map's table, checking the full
    /// hash and the deadline, never by scanning.
    fn key_expiring(&self, at: u64, hash: u64) -> Option<&Key> {
        let hasher = self.map.hasher();
        // Keys with this very hash but another deadline (a 64-bit hash
        // collision): passed over. Almost always stays empty.
        let mut other: Vec<&Key> = Vec::new();
        loop {
            let (k, e) = self.map.find_by_hash(hash, |k, _| hasher.hash_one(&k[..]) == hash && !other.contains(&k))?;
            if e.expire() == Some(at) {
                return Some(k);
            }
            other.push(k);
        }
    }

    /// The key with the earliest deadline, and that deadline.
    pub(crate) fn first_expiring(&self) -> Option<(u64, &Key)> {
        let (at, hash) = self.expires.first()?;
        self.key_expiring(at, hash).map(|k| (at, k))
    }

    /// Keys with a deadline.
    pub(crate) fn has_expiring(&self) -> bool {
        !self.expires.is_empty()
    }

    /// Gives memory back after mass deletion (Redis resizes its dicts too).
    ///
    /// Rehashing is O(live entries) and happens under the core lock, so it is
    /// only done once few entries are left; the big old allocation is freed
    /// off the lock ([`lazy_free`]), since unmapping tens of megabytes can
    /// take tens of milliseconds. A large database that merely shrank keeps
    /// its capacity until it gets small.
    pub fn maybe_shrink(&mut self) {
        const MAX_LIVE_FOR_REHASH: usize = 4 * 1024;
        let cap = self.map.capacity();
        let len = self.map.len();
        if cap > 1024 && len * 8 < cap && len <= MAX_LIVE_FOR_REHASH {
            // The same hasher: the expiry index names keys by their hash.
            lazy_free(self.map.rebuild(len * 2));
        }
    }

    /// Drops every key (the memory is freed off the lock).
    pub fn clear(&mut self) {
        self.fields = expiry::FieldIndex::default();
        let old = (std::mem::take(&mut self.map), std::mem::take(&mut self.expires));
        if old.0.capacity() > 4096 {
            lazy_free(old);
        }
    }

    /// One SCAN step over this database. `cursor` 0 starts; the returned
    /// cursor is 0 when the iteration is complete.
    ///
    /// The cursor walks entry indices downward. Removal is `swap_remove`,
    /// which moves the last entry (already visited) into the hole, and
    /// insertion appends at the end: so an entry present for the whole
    /// iteration is always returned (possibly twice, as Redis allows).
    pub fn scan_indices(&self, cursor: u64, count: usize) -> (u64, std::ops::Range<usize>) {
        scan_step(self.map.len(), cursor, count)
    }
}

/// Drops a large value on a background thread, so freeing it never stalls
/// the lock holder (Redis's lazyfree). Small values are dropped in place.
pub fn lazy_free<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new().name("rlockd-lazyfree".into()).spawn(move || drop(value));
}

/// The index range visited by one step of a downward cursor scan over a
/// collection of `len` entries, and the next cursor (see [`Db::scan_indices`]).
pub fn scan_step(len: usize, cursor: u64, count: usize) -> (u64, std::ops::Range<usize>) {
    let start = if cursor == 0 { len } else { (cursor as usize).min(len) };
    let lo = start.saturating_sub(count.max(1));
    let next = if lo == 0 { 0 } else { lo as u64 };
    (next, lo..start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ks() -> Keyspace {
        let mut k = Keyspace::new(2);
        k.now = 1_000;
        k
    }

    /// Under Redis 8's rule a short string's key and deadline decide
    /// `embstr`: stored too long for the line, given a deadline without
    /// room for it, renamed with one; raw stays raw until stored again.
    #[test]
    fn strings_settle_their_embedding_under_redis_8() {
        let mut k = ks();
        k.tuning.limits.embed = embed::Embed::Redis8;
        let s = |n: usize| Value::Str(StrValue::new(&vec![b'x'; n]));
        let enc = |k: &mut Keyspace, key: &str| k.view(0).entry(key.as_bytes()).map(|e| e.encoding());
        let key30 = Bytes::from("k".repeat(30));
        k.view(0).set(&key30, s(11), false);
        k.view(0).set(&Bytes::from("a"), s(20), false);
        assert_eq!(enc(&mut k, &"k".repeat(30)), Some("embstr"), "30 + 11 = 41 fits");
        k.view(0).set(&key30, s(12), false);
        assert_eq!(enc(&mut k, &"k".repeat(30)), Some("raw"), "30 + 12 does not");
        k.view(0).set_expire(b"a", 5_000);
        assert_eq!(enc(&mut k, "a"), Some("embstr"), "1 + 20 fits with a deadline");
        k.view(0).set(&Bytes::from("b"), s(40), false);
        k.view(0).set_expire(b"b", 5_000);
        assert_eq!(enc(&mut k, "b"), Some("raw"), "1 + 40 does not");
        let (_, e) = k.view(0).take_entry(b"a").expect("a");
        k.view(0).put_entry(&Bytes::from("a".repeat(14)), e);
        assert_eq!(enc(&mut k, &"a".repeat(14)), Some("raw"), "14 + 20 and a deadline do not");
        k.tuning.limits.embed = embed::Embed::Value;
        k.view(0).set(&key30, s(12), false);
        assert_eq!(enc(&mut k, &"k".repeat(30)), Some("embstr"), "before 8: the length alone");
    }

    /// A hash with field deadlines is found by active expiry through the
    /// field-expiry index: due fields go (one `hexpired`), the hash is
    /// registered again by its next deadline, and goes with its last field
    /// (`del`); a stale registration (a renamed key) is passed over and the
    /// new name registered when the value is stored.
    #[test]
    fn field_deadlines_expire_actively_and_the_last_deletes_the_key() {
        use hash_value::HashValue;
        let mut k = ks();
        k.sig.notify_flags = notify::ALL | notify::KEYEVENT;
        let key = Bytes::from("h");
        let mut h: HashValue = [("a", "1"), ("b", "2"), ("c", "3")].into_iter().collect();
        assert!(h.set_field_expire(b"a", 1_500, false));
        assert!(h.set_field_expire(b"b", 2_500, false));
        assert!(!h.set_field_expire(b"zz", 2_500, false));
        k.view(0).insert_new(&key, Value::Hash(h));
        let mut v = k.view(0);
        let Some(Value::Hash(h)) = v.get_mut(b"h") else { panic!("hash") };
        h.set_field_expire(b"c", 1_200, false);
        v.fields_changed(b"h");
        assert_eq!(k.dbs[0].fields.len(), 2, "registered at 1500, then earlier at 1200");
        k.sig.events.clear();
        assert_eq!(k.dbs[0].expire_due(0, 1_499, 10, &mut k.sig), 1, "the 1200 pair");
        let hash = |k: &Keyspace| match k.dbs[0].peek(b"h").map(|e| &e.value) {
            Some(Value::Hash(h)) => h.keys().map(|f| f.to_vec()).collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        assert_eq!(hash(&k), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(k.sig.events.iter().map(|e| e.event).collect::<Vec<_>>(), vec!["hexpired"]);
        // The stale 1500 pair still finds the hash: registered at 1500 again.
        assert_eq!(k.dbs[0].expire_due(0, 1_500, 10, &mut k.sig), 1);
        assert_eq!(hash(&k), vec![b"b".to_vec()]);
        // Renamed: the old pair is stale, the new key registered.
        let (_, e) = k.view(0).take_entry(b"h").expect("present");
        k.view(0).put_entry(&Bytes::from("h2"), e);
        k.sig.events.clear();
        assert_eq!(k.dbs[0].expire_due(0, 3_000, 10, &mut k.sig), 1, "one live registration");
        assert!(k.dbs[0].is_empty(), "the last field took the key");
        assert_eq!(k.sig.events.iter().map(|e| e.event).collect::<Vec<_>>(), vec!["hexpired", "del"]);
        assert!(k.dbs[0].fields.is_empty());
    }

    /// Lazy field expiry: the fields a command names go if due, with one
    /// `hexpired`; the key with its last field.
    #[test]
    fn due_fields_named_by_a_command_go_lazily() {
        use hash_value::HashValue;
        let mut k = ks();
        k.sig.notify_flags = notify::ALL | notify::KEYEVENT;
        let key = Bytes::from("h");
        let mut h: HashValue = [("a", "1"), ("b", "2")].into_iter().collect();
        h.set_field_expire(b"a", 900, false);
        h.set_field_expire(b"b", 900, false);
        k.view(0).insert_new(&key, Value::Hash(h));
        k.sig.events.clear();
        assert_eq!(k.view(0).expire_fields(&key, &[Bytes::from("a"), Bytes::from("zz")]), 1);
        assert_eq!(k.dbs[0].peek(b"h").map(|e| e.value.is_empty_aggregate()), Some(false));
        assert_eq!(k.view(0).expire_fields(&key, &[Bytes::from("b")]), 1);
        assert!(k.dbs[0].peek(b"h").is_none());
        assert_eq!(k.sig.events.iter().map(|e| e.event).collect::<Vec<_>>(), vec!["hexpired", "hexpired", "del"]);
    }

    #[test]
    fn expired_keys_are_invisible_and_reclaimed_lazily() {
        let mut k = ks();
        let key = Bytes::from("a");
        let mut v = k.view(0);
        v.set(&key, Value::Str(StrValue::from("1")), false);
        assert!(v.set_expire(b"a", 1_500));
        assert!(v.exists(b"a"));
        k.now = 1_500;
        let mut v = k.view(0);
        assert!(!v.exists(b"a"));
        assert!(k.dbs[0].map.is_empty());
        assert!(k.dbs[0].expires.is_empty());
        assert_eq!(k.sig.expired, 1);
    }

    /// Every stored key pays for an `Entry`: keep it at 40 bytes (a 24-byte
    /// `Value`: every other form fits beside a string's tag byte).
    #[test]
    fn entry_is_40_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 40);
        assert_eq!(std::mem::size_of::<Value>(), 24);
    }

    /// A deadline of 0 (stored as 1 ms) is past, indexed and reclaimed.
    #[test]
    fn a_deadline_at_the_epoch_is_past() {
        let mut k = ks();
        let key = Bytes::from("a");
        let mut v = k.view(0);
        v.set(&key, Value::Str(StrValue::from("1")), false);
        assert!(v.set_expire(b"a", 0));
        assert_eq!(v.raw().peek(b"a").and_then(Entry::expire), Some(1));
        assert_eq!(k.dbs[0].expire_due(0, 1_000, 10, &mut Signals::default()), 1);
        assert!(k.dbs[0].map.is_empty());
        assert!(k.dbs[0].expires.is_empty());
    }

    #[test]
    fn active_expiry_deletes_only_due_keys_and_index_stays_consistent() {
        let mut k = ks();
        for i in 0..100u64 {
            let key = Bytes::from(format!("k{i}"));
            let mut v = k.view(0);
            v.set(&key, Value::Str(StrValue::from("x")), false);
            v.set_expire(&key, 2_000 + i);
        }
        // Re-arm k0 later: its old index pair must be gone.
        k.view(0).set_expire(b"k0", 5_000);
        let mut sig = Signals::default();
        let n = k.dbs[0].expire_due(0, 2_049, usize::MAX, &mut sig);
        assert_eq!(n, 49); // k1..=k49
        assert_eq!(k.dbs[0].map.len(), 51);
        assert_eq!(k.dbs[0].expires.len(), 51);
        let db = &k.dbs[0];
        for (at, hash, count) in db.expires.iter() {
            assert_eq!(count, 1);
            let key = db.key_expiring(at, hash).expect("every pair names a live key");
            assert_eq!(db.map.get(key).expect("stored").expire(), Some(at));
        }
        assert_eq!(db.map.values().filter(|e| e.expire().is_some()).count(), db.expires.len());
        assert_eq!(db.first_expiring().map(|(at, k)| (at, k.to_bytes())), Some((2_050, Bytes::from("k50"))));
    }

    /// The expiry index names keys by their map hash: a map rebuilt after
    /// mass deletion must keep its hasher, or due keys would never go.
    #[test]
    fn keys_still_expire_after_the_map_shrinks() {
        let mut k = ks();
        for i in 0..10_000u64 {
            let key = Bytes::from(format!("k{i}"));
            let mut v = k.view(0);
            v.set(&key, Value::Str(StrValue::from("x")), false);
            if i >= 9_990 {
                v.set_expire(&key, 2_000 + i);
            }
        }
        for i in 0..9_990u64 {
            assert!(k.view(0).remove(format!("k{i}").as_bytes()).is_some());
        }
        let cap = k.dbs[0].map.capacity();
        k.dbs[0].maybe_shrink();
        assert!(k.dbs[0].map.capacity() < cap, "rebuilt smaller");
        let mut sig = Signals::default();
        assert_eq!(k.dbs[0].expire_due(0, 20_000, usize::MAX, &mut sig), 10);
        assert!(k.dbs[0].map.is_empty());
        assert!(k.dbs[0].expires.is_empty());
    }

    #[test]
    fn set_clears_ttl_unless_kept() {
        let mut k = ks();
        let key = Bytes::from("a");
        let mut v = k.view(0);
        v.set(&key, Value::Str(StrValue::from("1")), false);
        v.set_expire(b"a", 9_000);
        v.set(&key, Value::Str(StrValue::from("2")), true);
        assert_eq!(v.expire_of(b"a"), Some(Some(9_000)));
        v.set(&key, Value::Str(StrValue::from("3")), false);
        assert_eq!(v.expire_of(b"a"), Some(None));
        assert!(k.dbs[0].expires.is_empty());
    }

    #[test]
    fn scan_returns_every_key_present_throughout_despite_deletes() {
        let mut db = Db::default();
        for i in 0..1000 {
            db.map.insert(Key::new(format!("k{i}").as_bytes()), Entry::new(Value::Str(StrValue::new(b""))));
        }
        let stable: Vec<Bytes> = (500..1000).map(|i| Bytes::from(format!("k{i}"))).collect();
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            let (next, range) = db.scan_indices(cursor, 37);
            for i in range {
                seen.insert(db.map.get_index(i).unwrap().0.clone());
            }
            // Churn: delete some of the unstable keys, add new ones.
            if step < 500 {
                db.map.swap_remove(format!("k{step}").as_bytes());
                db.map.insert(Key::new(format!("n{step}").as_bytes()), Entry::new(Value::Str(StrValue::new(b""))));
            }
            step += 1;
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        for k in stable {
            assert!(seen.contains(&k[..]), "missed {k:?}");
        }
    }
}
