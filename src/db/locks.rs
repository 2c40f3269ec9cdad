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
//! | `counter` | integer string without TTL: a semaphore's free permits or a count-down latch's count (RSemaphore, RCountDownLatch) |
//! | `zset-semaphore` | sorted set of holder ids scored by acquisition time or deadline (redis-semaphore, RPermitExpirableSemaphore) |

use bytes::Bytes;

use super::value::Value;
use super::Db;

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

fn int(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b).ok()?.parse().ok()
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

/// Every lock in `dbs` whose key matches `pattern` (glob, `None`: all), at `now_ms`.
pub fn scan(dbs: &[Db], pattern: Option<&[u8]>, now_ms: u64) -> Vec<LockView> {
    let mut out = Vec::new();
    for (index, db) in dbs.iter().enumerate() {
        let mut keys: Vec<Bytes> = db.map.keys().map(super::Key::to_bytes).collect();
        keys.sort();
        for key in &keys {
            if pattern.is_some_and(|p| !crate::glob::matches(p, key, false)) {
                continue;
            }
            out.extend(view_key(db, index, key, now_ms));
        }
    }
    out
}

/// The lock stored at `key` of database `db` (number `index`), if its
/// value has one of the layouts of the module docs.
pub fn view_key(db: &Db, index: usize, key: &Bytes, now_ms: u64) -> Option<LockView> {
    if auxiliary(key) {
        return None;
    }
    let ttl =
        |key: &[u8]| -> Option<i64> { db.map.get(key).and_then(|e| e.expire()).map(|at| at as i64 - now_ms as i64) };
    let live = |key: &[u8]| db.map.get(key).filter(|e| e.expire().is_none_or(|at| at > now_ms));
    let entry = live(key)?;
    let mut view = LockView {
        db: index,
        key: key.clone(),
        kind: "",
        mode: None,
        holders: Vec::new(),
        waiters: Vec::new(),
        lease_ms: ttl(key),
        value: None,
    };
    match &entry.value {
        Value::Hash(h) => {
            let mode = h.get(&b"mode"[..]).filter(|m| &m[..] == b"read" || &m[..] == b"write");
            let holders: Vec<Holder> = h
                .iter()
                .filter(|(f, _)| &f[..] != b"mode")
                .filter_map(|(f, v)| Some((f, int(v)?)))
                .filter(|(f, _)| holder_id(f))
                .map(|(f, count)| Holder { id: Bytes::copy_from_slice(f), count, lease_ms: None, score: None })
                .collect();
            if holders.is_empty() && mode.is_none() {
                return None;
            }
            if holders.len() + usize::from(mode.is_some()) != h.len() {
                return None; // other fields: not a lock hash
            }
            view.holders = holders;
            if let Some(m) = mode {
                view.kind = "read-write";
                view.mode = Some(Bytes::copy_from_slice(m));
                for holder in &mut view.holders {
                    // The longest lease among this holder's read holds.
                    let prefix = [&b"{"[..], key, b"}:", &holder.id, b":rwlock_timeout:"].concat();
                    holder.lease_ms = db
                        .map
                        .iter()
                        .filter(|(k, e)| k.starts_with(&prefix) && e.expire().is_none_or(|at| at > now_ms))
                        .filter_map(|(k, _)| ttl(k))
                        .max();
                }
            } else {
                let queue_key = [&b"redisson_lock_queue:{"[..], key, b"}"].concat();
                let timeout_key = [&b"redisson_lock_timeout:{"[..], key, b"}"].concat();
                let queue = live(&queue_key).and_then(|e| match &e.value {
                    Value::List(l) => Some(l.clone()),
                    _ => None,
                });
                view.kind = if queue.is_some() { "fair" } else { "reentrant" };
                let timeouts = live(&timeout_key).and_then(|e| match &e.value {
                    Value::ZSet(z) => Some(z.as_ref().clone()),
                    _ => None,
                });
                for id in queue.into_iter().flatten() {
                    let deadline_ms = timeouts.as_ref().and_then(|z| z.score(&id)).map(|s| s as i64);
                    view.waiters.push(Waiter { id, deadline_ms });
                }
            }
        }
        Value::Str(s) => match (int(s), view.lease_ms) {
            (Some(n), None) => {
                view.kind = "counter";
                view.value = Some(n);
            }
            (_, Some(lease)) => {
                view.kind = "token";
                view.holders.push(Holder { id: s.clone(), count: 1, lease_ms: Some(lease), score: None });
            }
            (None, None) => return None,
        },
        Value::ZSet(z) => {
            view.kind = "zset-semaphore";
            view.holders = z
                .iter()
                .map(|(m, score)| Holder { id: m.clone(), count: 1, lease_ms: None, score: Some(score) })
                .collect();
        }
        _ => return None,
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
}
