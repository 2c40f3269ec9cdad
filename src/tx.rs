//! Transaction state: WATCHed keys and their invalidation.
//!
//! A client's WATCH registers `(db, key) -> client ids`. Any modification
//! of a watched key (a command, a script, expiry, FLUSH, SWAPDB) marks the
//! watchers dirty, and their `EXEC` then fails with a nil reply.
//!
//! As in Redis 7.0, a key that is logically expired (deadline passed, not yet
//! deleted) when it is WATCHed counts as absent: its deletion by expiry is no
//! change. A key that was live at WATCH time and whose deadline passes before
//! `EXEC` aborts the transaction even if nothing deleted it yet.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;

use crate::db::{Key, Keyspace};

/// One key watched by a client.
#[derive(Debug, Clone)]
pub struct WatchedKey {
    pub db: usize,
    pub key: Bytes,
    /// The key was already logically expired when watched (Redis's
    /// `watchedKey.expired`): deleting it is no change.
    pub expired: bool,
}

/// WATCHed keys of all clients.
#[derive(Debug, Default)]
pub struct Watches {
    /// `(db, key)` → watching client ids.
    pub keys: HashMap<(usize, Key), Vec<u64>>,
    /// Client id → its watched keys, in WATCH order.
    pub by_client: HashMap<u64, Vec<WatchedKey>>,
    /// Clients whose watched keys were touched.
    pub dirty: HashSet<u64>,
}

impl Watches {
    pub fn is_active(&self) -> bool {
        !self.keys.is_empty()
    }

    /// Adds `key` of `db` to client `id`'s watched keys (no-op if already
    /// watched). `expired`: the key is logically expired right now.
    pub fn watch(&mut self, id: u64, db: usize, key: &Bytes, expired: bool) {
        let mine = self.by_client.entry(id).or_default();
        if mine.iter().any(|w| w.db == db && w.key == *key) {
            return;
        }
        mine.push(WatchedKey { db, key: Bytes::copy_from_slice(key), expired });
        self.keys.entry((db, Key::new(key))).or_default().push(id);
    }

    /// Marks the watchers of every touched key dirty. `ks` is the keyspace
    /// after the command: a key watched while already expired that is now
    /// gone was only deleted by expiry (or a flush), which is no change.
    pub fn on_touched(&mut self, touched: &[(usize, Key)], ks: &Keyspace) {
        if self.keys.is_empty() {
            return;
        }
        for k in touched {
            let Some(ids) = self.keys.get(k) else {
                continue;
            };
            for id in ids {
                if self.dirty.contains(id) {
                    continue;
                }
                let Some(w) =
                    self.by_client.get_mut(id).and_then(|v| v.iter_mut().find(|w| w.db == k.0 && w.key[..] == k.1[..]))
                else {
                    continue;
                };
                if w.expired {
                    let gone = ks.dbs.get(k.0).is_none_or(|d| d.peek(&k.1).is_none());
                    if gone {
                        w.expired = false;
                        continue;
                    }
                }
                self.dirty.insert(*id);
            }
        }
    }

    /// True if client `id` may not EXEC: a watched key was touched, or a key
    /// that was live when watched has passed its deadline (at `now`).
    pub fn is_dirty(&self, id: u64, ks: &Keyspace, now: u64) -> bool {
        if self.dirty.contains(&id) {
            return true;
        }
        let Some(keys) = self.by_client.get(&id) else {
            return false;
        };
        keys.iter().any(|w| !w.expired && is_expired(ks, w.db, &w.key, now))
    }

    /// Forgets everything client `id` watches.
    pub fn unwatch(&mut self, id: u64) {
        self.dirty.remove(&id);
        if let Some(keys) = self.by_client.remove(&id) {
            for w in keys {
                let k = (w.db, Key::new(&w.key));
                if let Some(v) = self.keys.get_mut(&k) {
                    v.retain(|c| *c != id);
                    if v.is_empty() {
                        self.keys.remove(&k);
                    }
                }
            }
        }
    }
}

/// Redis's `keyIsExpired`: the key exists with a deadline `<= now` (without
/// deleting it).
pub fn is_expired(ks: &Keyspace, db: usize, key: &[u8], now: u64) -> bool {
    ks.dbs.get(db).and_then(|d| d.peek(key)).and_then(|e| e.expire()).is_some_and(|at| at <= now)
}
