//! Locks read out of the keyspace (`RLOCKD LOCKS`, `Server::locks`).
//!
//! Lock libraries keep their state in plain keys; this module recognises
//! their layouts and describes each lock: kind, holders with re-entry
//! counts and leases, waiters in order with their deadlines. It only reads.
//!
//! | kind | layout (library) |
//! |---|---|
//! | `reentrant` | hash `"<uuid>:<threadId>" → count`, lease as the key's TTL (Redisson RLock) |
//! | `fair` | the same hash plus list `redisson_lock_queue:{name}` and zset `redisson_lock_timeout:{name}` (RFairLock) |
//! | `read-write` | hash with `mode` = `read`/`write` plus one count per holder; read holds keep a lease each in `{name}:<holder>:rwlock_timeout:<n>` (RReadWriteLock) |
//! | `token` | string with a TTL holding the owner's token (`SET key token NX PX`: redis-py, redlock, Redisson's fenced lock) |
//! | `counter` | integer string without TTL that a script (`EVAL`, `EVALSHA`, `FCALL`) wrote: a semaphore's free permits or a count-down latch's count (RSemaphore, RCountDownLatch); a plain `SET a 1` or `INCR hits` is no lock |
//! | `zset-semaphore` | sorted set of holder ids scored by acquisition time or deadline (redis-semaphore, RPermitExpirableSemaphore) |
//!
//! Values past these layouts' sizes are not locks: a hash or sorted set of
//! more than [`HOLDERS_MAX`] holders, a token longer than [`TOKEN_MAX`]
//! bytes. Lock recording reads every written key this way, so a job queue's
//! large sorted set or a cached string with a TTL costs it nothing.

use bytes::Bytes;

use crate::db::value::Value;
use crate::db::{Db, Entry};

/// The most holders a lock hash or semaphore set is read with.
pub const HOLDERS_MAX: usize = 1_000;

/// The longest string read as a lock token (tokens are ids: a UUID is 36).
pub const TOKEN_MAX: usize = 512;

/// One holder of a lock.
#[derive(Debug, Clone, PartialEq)]
pub struct Holder {
    /// The holder's id (Redisson `uuid:threadId`, a token, a member).
    pub id: Bytes,
    /// Re-entry count (1 for non-reentrant locks).
    pub count: i64,
    /// Remaining lease of this hold in ms, when it has its own.
    pub lease_ms: Option<i64>,
    /// A sorted-set holder's score (acquisition time or deadline, unix ms).
    pub score: Option<f64>,
}

/// One waiter of a fair lock, in queue order.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiter {
    /// The waiter's id.
    pub id: Bytes,
    /// By when it must retry (unix ms), if the lock records it.
    pub deadline_ms: Option<i64>,
}

/// A lock as read from the keyspace.
#[derive(Debug, Clone, PartialEq)]
pub struct LockView {
    /// Database index.
    pub db: usize,
    /// The lock's key.
    pub key: Bytes,
    /// See the module docs.
    pub kind: &'static str,
    /// `read` or `write` for a read-write lock.
    pub mode: Option<Bytes>,
    /// The holders.
    pub holders: Vec<Holder>,
    /// The waiters (fair locks), in order.
    pub waiters: Vec<Waiter>,
    /// Remaining TTL of the lock key in ms (`None`: no TTL).
    pub lease_ms: Option<i64>,
    /// A counter's value (free permits, latch count).
    pub value: Option<i64>,
}

/// `b` as an `i64`, as `str::parse` reads it (an optional sign, then
/// decimal digits, in range), without the UTF-8 check.
fn int(b: &[u8]) -> Option<i64> {
    let (negative, digits) = match b {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        let d = i64::from(c - b'0');
        n = n.checked_mul(10)?;
        n = if negative { n.checked_sub(d)? } else { n.checked_add(d)? };
    }
    Some(n)
}

/// `<something>:<digits>` (or with `:write` after it, a write hold):
/// Redisson's holder id.
fn holder_id(field: &[u8]) -> bool {
    let field = field.strip_suffix(b":write").unwrap_or(field);
    match field.iter().rposition(|&c| c == b':') {
        Some(p) => p > 0 && p + 1 < field.len() && field[p + 1..].iter().all(u8::is_ascii_digit),
        None => false,
    }
}

/// Keys that belong to another lock's layout (not locks of their own).
fn auxiliary(key: &[u8]) -> bool {
    key.starts_with(b"redisson_lock_queue:")
        || key.starts_with(b"redisson_lock_timeout:")
        || key.windows(b":rwlock_timeout:".len()).any(|w| w == b":rwlock_timeout:")
}

/// Every lock in `dbs` whose key matches `pattern` (glob, `None`: all), at
/// `now_ms`. An integer string is shown as a `counter` only where
/// `is_counter(db, key)` says it is one (a script wrote it: the history
/// knows, see [`super::Control::locks`]).
pub fn scan(
    dbs: &[Db],
    pattern: Option<&[u8]>,
    now_ms: u64,
    is_counter: impl Fn(usize, &[u8]) -> bool,
) -> Vec<LockView> {
    let mut out = Vec::new();
    for (index, db) in dbs.iter().enumerate() {
        let mut keys: Vec<Bytes> = db.keys().map(crate::db::Key::to_bytes).collect();
        keys.sort();
        for key in &keys {
            if pattern.is_some_and(|p| !crate::glob::matches(p, key, false)) {
                continue;
            }
            let view = view_key(db, index, key, now_ms);
            out.extend(view.filter(|v| v.kind != "counter" || is_counter(index, key)));
        }
    }
    out
}

/// The live entry at `key`.
fn live<'a>(db: &'a Db, key: &[u8], now_ms: u64) -> Option<&'a Entry> {
    db.peek(key).filter(|e| e.expire().is_none_or(|at| at > now_ms))
}

/// `f` of the concatenation of `parts`, built on the stack when short.
fn joined<R>(parts: &[&[u8]], f: impl FnOnce(&[u8]) -> R) -> R {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let mut stack = [0u8; 128];
    if len <= stack.len() {
        let mut at = 0;
        for p in parts {
            stack[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        f(&stack[..len])
    } else {
        f(&parts.concat())
    }
}

/// A hash field's hold count, if the field is a holder (not `mode`, an
/// integer count, a Redisson holder id).
fn hash_holder(field: &[u8], value: &[u8]) -> Option<i64> {
    if field == b"mode" {
        return None;
    }
    let count = int(value)?;
    holder_id(field).then_some(count)
}

/// Where a lock's holders are read from.
enum Holders<'a> {
    None,
    /// A token lock's value.
    Token(&'a [u8]),
    /// A lock hash's holder fields.
    Hash(&'a crate::db::hash_value::HashValue),
    /// A sorted set's members.
    ZSet(&'a crate::db::zset::ZSet),
}

/// A lock read in place, borrowing from the keyspace: what [`view_key`]
/// describes, without the copies (the lock history packs it before and
/// after every write).
pub struct LockRef<'a> {
    /// See the module docs.
    pub kind: &'static str,
    /// Remaining TTL of the lock key in ms (`None`: no TTL).
    pub lease_ms: Option<i64>,
    /// A counter's value.
    pub value: Option<i64>,
    /// `read` or `write` for a read-write lock.
    mode: Option<&'a [u8]>,
    holders: Holders<'a>,
    /// A fair lock's queue.
    queue: Option<&'a crate::db::value::ListValue>,
}

impl<'a> LockRef<'a> {
    /// Calls `f` with each holder's id, count and (sorted-set holders) score, in order.
    pub fn holders(&self, mut f: impl FnMut(&'a [u8], i64, Option<f64>)) {
        match self.holders {
            Holders::None => {}
            Holders::Token(id) => f(id, 1, None),
            Holders::Hash(h) => {
                // Every field but `mode` was found a holder (see `read_entry`).
                for (field, value) in h.iter() {
                    if field != b"mode" {
                        f(field, int(value).unwrap_or(0), None);
                    }
                }
            }
            Holders::ZSet(z) => {
                for (member, score) in z.iter() {
                    f(member, 1, Some(score));
                }
            }
        }
    }

    /// A fair lock's waiters, in queue order.
    pub fn waiters(&self) -> impl Iterator<Item = &'a [u8]> {
        self.queue.into_iter().flatten()
    }
}

/// The lock stored at `key` of `db`, if its value has one of the layouts of
/// the module docs, read in place.
pub fn read_key<'a>(db: &'a Db, key: &[u8], now_ms: u64) -> Option<LockRef<'a>> {
    read_stored(db, key, now_ms).0
}

/// [`read_key`], and whether `key` is stored with its deadline passed
/// (not deleted yet: no lock now, whatever it holds).
pub fn read_stored<'a>(db: &'a Db, key: &[u8], now_ms: u64) -> (Option<LockRef<'a>>, bool) {
    read_found(db, key, db.peek(key), now_ms)
}

/// [`read_stored`] of `key`'s entry `found`, already looked up.
pub fn read_found<'a>(db: &'a Db, key: &[u8], found: Option<&'a Entry>, now_ms: u64) -> (Option<LockRef<'a>>, bool) {
    if auxiliary(key) {
        return (None, false);
    }
    match found {
        None => (None, false),
        Some(e) if e.expire().is_some_and(|at| at <= now_ms) => (None, true),
        Some(e) => (read_entry(db, key, e, now_ms), false),
    }
}

/// The lock in `entry`, live, stored at `key` of `db`.
fn read_entry<'a>(db: &'a Db, key: &[u8], entry: &'a Entry, now_ms: u64) -> Option<LockRef<'a>> {
    let mut lock = LockRef {
        kind: "",
        lease_ms: entry.expire().map(|at| at as i64 - now_ms as i64),
        value: None,
        mode: None,
        holders: Holders::None,
        queue: None,
    };
    match &entry.value {
        Value::Hash(h) if h.len() <= HOLDERS_MAX + 1 => {
            let mode = h.get(&b"mode"[..]).filter(|m| *m == b"read" || *m == b"write");
            let holders = h.iter().filter(|(f, v)| hash_holder(f, v).is_some()).count();
            if holders == 0 && mode.is_none() {
                return None;
            }
            if holders + usize::from(mode.is_some()) != h.len() {
                return None; // other fields: not a lock hash
            }
            lock.holders = Holders::Hash(h);
            if mode.is_some() {
                lock.kind = "read-write";
                lock.mode = mode;
            } else {
                // No key has the queue's prefix: no look-up (the keyspace
                // counts them exactly).
                lock.queue = db.has_fair_queues().then(|| fair_queue(db, key, now_ms)).flatten();
                lock.kind = if lock.queue.is_some() { "fair" } else { "reentrant" };
            }
        }
        Value::Str(s) => match (int(s), lock.lease_ms) {
            (Some(n), None) => {
                lock.kind = "counter";
                lock.value = Some(n);
            }
            (_, Some(_)) if s.len() <= TOKEN_MAX => {
                lock.kind = "token";
                lock.holders = Holders::Token(s);
            }
            _ => return None,
        },
        Value::ZSet(z) if z.len() <= HOLDERS_MAX => {
            lock.kind = "zset-semaphore";
            lock.holders = Holders::ZSet(z);
        }
        _ => return None,
    }
    Some(lock)
}

/// The live list at a fair lock's queue key, `redisson_lock_queue:{key}`.
fn fair_queue<'a>(db: &'a Db, key: &[u8], now_ms: u64) -> Option<&'a crate::db::value::ListValue> {
    joined(&[crate::db::FAIR_QUEUE_PREFIX, b"{", key, b"}"], |k| {
        live(db, k, now_ms).and_then(|e| match &e.value {
            Value::List(l) => Some(l),
            _ => None,
        })
    })
}

/// The lock stored at `key` of database `db` (number `index`), if its
/// value has one of the layouts of the module docs.
pub fn view_key(db: &Db, index: usize, key: &Bytes, now_ms: u64) -> Option<LockView> {
    let lock = read_key(db, key, now_ms)?;
    let ttl = |key: &[u8]| -> Option<i64> { db.peek(key).and_then(|e| e.expire()).map(|at| at as i64 - now_ms as i64) };
    let mut holders = Vec::new();
    lock.holders(|id, count, score| {
        let lease_ms = if lock.kind == "token" { lock.lease_ms } else { None };
        holders.push(Holder { id: Bytes::copy_from_slice(id), count, lease_ms, score });
    });
    let mut view = LockView {
        db: index,
        key: key.clone(),
        kind: lock.kind,
        mode: lock.mode.map(Bytes::copy_from_slice),
        holders,
        waiters: Vec::new(),
        lease_ms: lock.lease_ms,
        value: lock.value,
    };
    if view.kind == "read-write" {
        for holder in &mut view.holders {
            // The longest lease among this holder's read holds.
            let prefix = [&b"{"[..], key, b"}:", &holder.id, b":rwlock_timeout:"].concat();
            holder.lease_ms = db
                .iter()
                .filter(|(k, e)| k.starts_with(&prefix) && e.expire().is_none_or(|at| at > now_ms))
                .filter_map(|(k, _)| ttl(k))
                .max();
        }
    } else if view.kind == "fair" {
        let timeout_key = [&b"redisson_lock_timeout:{"[..], key, b"}"].concat();
        let timeouts = live(db, &timeout_key, now_ms).and_then(|e| match &e.value {
            Value::ZSet(z) => Some(z),
            _ => None,
        });
        for id in lock.waiters() {
            let deadline_ms = timeouts.and_then(|z| z.score(id)).map(|s| s as i64);
            view.waiters.push(Waiter { id: Bytes::copy_from_slice(id), deadline_ms });
        }
    }
    Some(view)
}

#[cfg(test)]
mod tests {
    #[test]
    fn holder_ids() {
        assert!(super::holder_id(b"8f0c-11:1"));
        assert!(super::holder_id(b"a:b:42"));
        assert!(!super::holder_id(b"mode"));
        assert!(!super::holder_id(b":1"));
        assert!(!super::holder_id(b"x:"));
        assert!(super::holder_id(b"8f0c-11:1:write"));
    }

    #[test]
    fn integers_read_as_str_parse_reads_them() {
        let cases: [&[u8]; 24] = [
            b"0",
            b"1",
            b"-1",
            b"+1",
            b"-0",
            b"007",
            b"",
            b"-",
            b"+",
            b"+-1",
            b"--1",
            b" 1",
            b"1 ",
            b"1.0",
            b"1e3",
            b"9223372036854775807",
            b"9223372036854775808",
            b"-9223372036854775808",
            b"-9223372036854775809",
            b"99999999999999999999",
            b"\xff1",
            b"\xd9\xa1",
            b"12a",
            b"30000",
        ];
        for b in cases {
            let expected = std::str::from_utf8(b).ok().and_then(|s| s.parse::<i64>().ok());
            assert_eq!(super::int(b), expected, "{:?}", String::from_utf8_lossy(b));
        }
    }
}
