//! Transaction state: WATCHed keys and their invalidation.
//!
//! A client's WATCH registers `(db, key) -> client ids`. Any modification
//! of a watched key (a command, a script, expiry, FLUSH, SWAPDB) marks the
//! watchers dirty, and their `EXEC` then fails with a nil reply.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;

use crate::cmd::Ctx;

/// WATCHed keys of all clients.
#[derive(Debug, Default)]
pub struct Watches {
    /// `(db, key)` → watching client ids.
    pub keys: HashMap<(usize, Bytes), Vec<u64>>,
    /// Client id → its watched keys (with whether each existed when watched
    /// and its deadline, to detect expiry in between).
    pub by_client: HashMap<u64, Vec<(usize, Bytes)>>,
    /// Clients whose watched keys were touched.
    pub dirty: HashSet<u64>,
}

impl Watches {
    pub fn is_active(&self) -> bool {
        !self.keys.is_empty()
    }

    /// Marks the watchers of every touched key dirty.
    pub fn on_touched(&mut self, touched: &[(usize, Bytes)]) {
        if self.keys.is_empty() {
            return;
        }
        for k in touched {
            if let Some(ids) = self.keys.get(k) {
                self.dirty.extend(ids.iter().copied());
            }
        }
    }

    /// Forgets everything client `id` watches.
    pub fn unwatch(&mut self, id: u64) {
        self.dirty.remove(&id);
        if let Some(keys) = self.by_client.remove(&id) {
            for k in keys {
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

/// Drops the client's MULTI state and WATCHes (DISCARD, RESET, disconnect).
pub fn discard_state(ctx: &mut Ctx<'_>) {
    ctx.client.multi = None;
    ctx.client.shared.in_multi.store(false, std::sync::atomic::Ordering::Relaxed);
    ctx.core.watches.unwatch(ctx.client.id);
}
