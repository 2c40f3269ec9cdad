//! The feed: what a command run on a primary hands its replicas, as Redis
//! 7.0's `call()` decides it. A command that changed the dataset
//! (`server.dirty` moved) or that is always propagated (its row's
//! `always_propagated` flag: `PUBLISH`, `FUNCTION LOAD`…) is recorded in
//! its replicated form ([`super::rewrite`]), keys deleted by expiry or
//! eviction on the way as `DEL`s before it (hash fields deleted by lazy
//! field expiry as one `HDEL` each); a command that runs others (a
//! script, `EXEC`) is not recorded itself, the commands it runs are. The
//! execution unit ends at the top-level command ([`ReplState::end_unit`])
//! and is wrapped in `MULTI`/`EXEC` when it has several writes.
//!
//! `cmd::call::call` is the one caller: after every handler (any depth)
//! [`ReplState::after_call`], after the top-level one
//! [`ReplState::end_unit`]. The policy comes from the command's row flags,
//! as a [`Recording`]; this module knows no command table.

use bytes::Bytes;

use super::{rewrite, ReplState};
use crate::db::Keyspace;
use crate::protocol::Reply;

/// How a command's row says it is replicated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recording {
    /// Never recorded itself: it runs other commands (a script, a
    /// transaction's queue), which are.
    RunsOthers,
    /// Recorded when it changed the dataset.
    WhenChanged,
    /// Recorded whenever it succeeds, changed data or not.
    Always,
}

/// A handler that just ran, as the feed sees it.
#[derive(Debug)]
pub struct Called<'a> {
    /// The row's name (`"set"`; a subcommand's own, `"load"`).
    pub name: &'a str,
    pub argv: &'a [Bytes],
    pub reply: &'a Reply,
    /// The client's selected database.
    pub db: usize,
    /// The keyspace's change count before the handler.
    pub dirty_before: u64,
    pub recording: Recording,
}

impl ReplState {
    /// After a handler ran (any depth) on a node that feeds replicas:
    /// records the keys its lookups expired and what it changed.
    pub fn after_call(&mut self, ks: &mut Keyspace, c: &Called<'_>) {
        let deleted = ks.sig.repl_deletes.as_mut().map(std::mem::take).unwrap_or_default();
        for (db, key) in &deleted {
            self.propagate(*db, vec![Bytes::from_static(b"DEL"), key.to_bytes()]);
        }
        // Hash fields its lookups found past their deadline: one HDEL each.
        for (db, key, field) in std::mem::take(&mut ks.sig.repl_fields) {
            self.propagate(db, vec![Bytes::from_static(b"HDEL"), key.to_bytes(), field]);
        }
        let expiry_dirty = std::mem::take(&mut ks.sig.expiry_dirty);
        let changed = ks.sig.dirty.saturating_sub(c.dirty_before) > deleted.len() as u64 + expiry_dirty;
        let forced = match c.recording {
            Recording::RunsOthers => return,
            Recording::WhenChanged => false,
            Recording::Always => !matches!(c.reply, Reply::Error(_)),
        };
        if !changed && !forced {
            return;
        }
        let lookup = |key: &[u8]| ks.dbs.get(c.db).and_then(|d| d.peek(key)).map(|e| e.expire());
        for op in rewrite::replicated(c.name, c.argv, c.reply, &lookup, ks.now) {
            self.propagate(c.db, op);
        }
    }

    /// The end of a top-level command run by `client`: its effects become
    /// one frame.
    pub fn end_unit(&mut self, client: u64) {
        if self.has_pending() {
            self.flush(client);
        }
    }
}
