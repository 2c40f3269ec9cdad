//! Test control: what `RLOCKD …` (the command family `cmd/control.rs`) and
//! the test methods of [`crate::Server`] act on. Nothing here is Redis's;
//! with `test-control no` none of it runs or shows.
//!
//! * [`locks`] reads lock layouts out of the keyspace (`RLOCKD LOCKS`).
//! * [`history`] compares every touched lock with its state before the
//!   command (the keyspace's before-images): events (`RLOCKD EVENTS`, the
//!   `__rlockd__:lockevents` channel) and safety violations (`RLOCKD CHECK`).
//! * [`ring`] keeps the history's events compactly.
//! * [`timeline`] draws the history as a timeline (`RLOCKD TIMELINE`) and
//!   keeps the application's claimed critical sections (`RLOCKD CLAIM`).
//! * [`jepsen`] writes the history as Jepsen-style operations for checkers
//!   (`RLOCKD HISTORY`).
//! * [`record`] records every command of the process and its reply, for
//!   `rlockd replay` (`RLOCKD RECORD`, `rlockd --record`).
//! * [`faults`] holds injected faults (`RLOCKD FAULT`), read by dispatch,
//!   the connections and pub/sub delivery.
//! * [`Control`] (one field of the core) keeps the history, the snapshots
//!   (`RLOCKD SNAPSHOT`/`RESTORE`) and who runs the current command; the
//!   clock itself is the server's [`crate::clock::Clock`].
//!
//! Turning test control off at run time (`CONFIG SET test-control no`)
//! ends everything it set: faults are cleared, the clock runs on real time
//! again, the history and the snapshots are dropped. Turning it on starts a
//! new history; the locks held at that moment are not reported as acquired
//! (the history compares each lock's state before and after a command).

pub mod faults;
pub mod history;
pub mod jepsen;
pub mod locks;
pub mod record;
pub mod ring;
pub mod timeline;

use std::collections::HashMap;

use bytes::Bytes;

use crate::client::ClientRecord;
use crate::db::{Db, Keyspace, Map};
use history::{Actor, LockHistory};

/// The prefix of rlockd's own pub/sub channels. A message on such a channel
/// reaches the channel's subscribers and the pattern subscribers whose
/// pattern names the prefix itself (see [`names_reserved_prefix`]); a
/// pattern such as `*` or `__key*__:*` never sees them, so a listener that
/// did not ask receives exactly what it would from Redis.
pub const RESERVED_PREFIX: &[u8] = b"__rlockd__";

/// True if `pattern` asks for rlockd's own channels: the literal part of the
/// pattern — its bytes before the first glob character (`*`, `?`, `[` or
/// `\`) — starts with [`RESERVED_PREFIX`]. `__rlockd__:*` and
/// `__rlockd__:lock?vents` do; `*`, `__*`, `__rlockd*` and `[_]_rlockd__:*`
/// do not.
pub fn names_reserved_prefix(pattern: &[u8]) -> bool {
    let literal = pattern.iter().position(|c| matches!(c, b'*' | b'?' | b'[' | b'\\')).unwrap_or(pattern.len());
    pattern[..literal].starts_with(RESERVED_PREFIX)
}

/// The test-control state of one server.
#[derive(Debug, Default)]
pub struct Control {
    /// Lock events and violations; `None` while test control is off.
    pub history: Option<LockHistory>,
    /// The newest lock event already published on the events channel.
    pub events_published: u64,
    /// Who runs the current top-level command (for lock events).
    pub actor: Actor,
    /// `RLOCKD SNAPSHOT`s: whole keyspaces by name.
    snapshots: HashMap<Bytes, Vec<Db>>,
    /// `RLOCKD CLAIM`: the application's claimed critical sections.
    pub claims: timeline::Claims,
    /// The events this node made as a replica (`RLOCKD HISTORY` leaves them
    /// to the primary that made them).
    pub replica_runs: jepsen::Runs,
    /// Acquires the server refused (`RLOCKD HISTORY`).
    pub refusals: jepsen::Refusals,
}

impl Control {
    /// The state of a new server, test control on or off.
    pub fn new(on: bool) -> Control {
        Control { history: on.then(LockHistory::default), ..Default::default() }
    }

    /// True while test control is on.
    pub fn is_on(&self) -> bool {
        self.history.is_some()
    }

    /// Turns test control on (a new history, the keyspace's before-images
    /// taken from now on) or off (history and snapshots dropped). The
    /// caller clears the faults and lets the clock go (see the module docs).
    pub fn switch(&mut self, on: bool, ks: &mut Keyspace) {
        if on == self.is_on() {
            return;
        }
        *self = Control::new(on);
        Control::attach(on, ks);
    }

    /// Makes `ks` take the before-images the history compares (or stop).
    pub fn attach(on: bool, ks: &mut Keyspace) {
        ks.sig.images.clear();
        ks.sig.images.set_hook(if on { Some(history::pre_image) } else { None });
    }

    /// Every lock in `ks` whose key matches `pattern` (`RLOCKD LOCKS`,
    /// `Server::locks`), at `now_ms`; integer strings are counters only
    /// when the history saw a script write them (none while test control
    /// is off).
    pub fn locks(&self, ks: &Keyspace, pattern: Option<&[u8]>, now_ms: u64) -> Vec<locks::LockView> {
        let history = self.history.as_ref();
        locks::scan(&ks.dbs, pattern, now_ms, |db, key| history.is_some_and(|h| h.is_counter(db, key)))
    }

    /// `RLOCKD CLAIM ENTER`: `holder` (of client `client`) is inside the
    /// critical section of lock `key` in database `db`, at `now_ms`.
    pub fn claim_enter(&mut self, ks: &Keyspace, db: usize, key: Bytes, holder: Bytes, client: u64, now_ms: u64) {
        // Kept: copies, not slices of the client's read buffer.
        let (key, holder) = (Bytes::copy_from_slice(&key), Bytes::copy_from_slice(&holder));
        let last = self.history.as_ref().map_or(0, LockHistory::last_id);
        let holders = ks
            .dbs
            .get(db)
            .and_then(|d| locks::view_key(d, db, &key, now_ms))
            .map(|l| l.holders.into_iter().map(|h| h.id).collect())
            .unwrap_or_default();
        self.claims.enter(db, key, holder, client, now_ms, last, holders);
    }

    /// `RLOCKD CLAIM LEAVE`; false if `holder` claimed no section of that lock.
    pub fn claim_leave(&mut self, db: usize, key: &[u8], holder: &[u8], now_ms: u64) -> bool {
        let last = self.history.as_ref().map_or(0, LockHistory::last_id);
        self.claims.leave(db, key, holder, now_ms, last)
    }

    /// Every violation: the history's, then the claims' (`RLOCKD CHECK`).
    pub fn violations(&self) -> Vec<String> {
        let Some(h) = self.history.as_ref() else { return Vec::new() };
        let mut all = h.violations().to_vec();
        if !self.claims.is_empty() {
            all.extend(self.claims.violations(&h.events(None, 0)).into_iter().map(|v| v.text));
        }
        all
    }

    /// What this node knows for a lock history (`RLOCKD HISTORY`): its
    /// events and claims, and which events it made as a replica.
    pub fn history_facts(&self) -> jepsen::NodeHistory {
        let Some(h) = self.history.as_ref() else { return jepsen::NodeHistory::default() };
        jepsen::NodeHistory {
            events: h.events(None, 0),
            claims: self.claims.iter().cloned().collect(),
            replica_runs: self.replica_runs.clone(),
            refusals: self.refusals.iter().cloned().collect(),
        }
    }

    /// After a top-level command answered `reply`: notes it if it refused
    /// an acquire ([`jepsen::refused_acquire`]) of a lock held by others.
    pub fn after_reply(
        &mut self,
        ks: &Keyspace,
        db: usize,
        argv: &[Bytes],
        reply: &crate::protocol::Reply,
        now_ms: u64,
    ) {
        let Some(h) = self.history.as_ref() else { return };
        let actor = &self.actor;
        let Some((key, holder, ttl)) = jepsen::refused_acquire(actor.command, actor.is_script(), argv, reply) else {
            return;
        };
        let Some(d) = ks.dbs.get(db) else { return };
        // A script's integer (a renewal's 1, a count) is a refusal only if it is the lock's
        // remaining lease: looked at before the lock is read.
        if ttl.is_some_and(|t| d.peek(key).and_then(|e| e.expire()).map(|at| at as i64 - now_ms as i64) != Some(t)) {
            return;
        }
        let Some(lock) = locks::view_key(d, db, key, now_ms) else { return };
        if lock.holders.is_empty()
            || lock.holders.iter().any(|x| x.id == holder)
            || ttl.is_some_and(|t| lock.lease_ms != Some(t))
        {
            return;
        }
        let command = self.refusals.command(match actor.detail() {
            Some(d) => format!("{} {}", actor.command, String::from_utf8_lossy(d)),
            None => actor.command.to_string(),
        });
        self.refusals.push(jepsen::Refusal {
            after_id: h.last_id(),
            time_ms: now_ms,
            db,
            // Copied: the argument is a slice of the client's read buffer,
            // which a kept reference would keep whole.
            key: Bytes::copy_from_slice(key),
            holder: Bytes::copy_from_slice(holder),
            kind: lock.kind,
            client: actor.client,
            command,
        });
    }

    /// What this node knows for a timeline, at `now_ms`.
    pub fn timeline_facts(
        &self,
        ks: &Keyspace,
        clients: &Map<u64, ClientRecord>,
        pattern: Option<&[u8]>,
        now_ms: u64,
    ) -> timeline::NodeFacts {
        let Some(h) = self.history.as_ref() else { return timeline::NodeFacts::default() };
        let events = h.events(None, 0);
        let mut violations: Vec<timeline::Violation> = h
            .violations_at()
            .map(|(time_ms, db, key, text)| timeline::Violation {
                time_ms,
                db,
                key: key.clone(),
                text: text.to_string(),
            })
            .collect();
        violations.extend(self.claims.violations(&events));
        let lossy = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
        timeline::NodeFacts {
            events,
            violations,
            claims: self.claims.iter().cloned().collect(),
            locks: self.locks(ks, pattern, now_ms),
            clients: clients
                .values()
                .map(|r| timeline::ClientInfo {
                    id: r.shared.id,
                    name: lossy(&r.name),
                    lib: if r.lib_name.is_empty() {
                        String::new()
                    } else {
                        format!("{} {}", lossy(&r.lib_name), lossy(&r.lib_ver)).trim_end().to_string()
                    },
                })
                .collect(),
        }
    }

    /// Captures every database under `name` (replacing an older snapshot).
    pub fn snapshot(&mut self, ks: &Keyspace, name: Bytes) {
        self.snapshots.insert(name, ks.dbs.clone());
    }

    /// The snapshot names, sorted.
    pub fn snapshot_names(&self) -> Vec<Bytes> {
        let mut names: Vec<Bytes> = self.snapshots.keys().cloned().collect();
        names.sort();
        names
    }

    /// Replaces every database with snapshot `name`; false if there is none.
    /// Deadlines are absolute: keys whose time passed since the capture
    /// expire. WATCH and blocked clients see every key of before and after
    /// as touched.
    pub fn restore(&self, ks: &mut Keyspace, name: &[u8]) -> bool {
        let Some(dbs) = self.snapshots.get(name).cloned() else {
            return false;
        };
        for (i, db) in ks.dbs.iter().enumerate() {
            ks.sig.images.all(db, i);
        }
        for (i, db) in ks.dbs.iter().chain(dbs.iter()).enumerate() {
            let index = i % dbs.len().max(1);
            let keys: Vec<Bytes> = db.keys().map(crate::db::Key::to_bytes).collect();
            for k in keys {
                ks.sig.touch(index, &k);
            }
        }
        ks.dbs = dbs;
        true
    }
}

/// After a jump of the clock, every key now due goes at once (with its
/// `expired` event), rather than at the next active-expiry round: a test
/// sees the effect of the time it set as soon as the command returns.
pub fn expire_now(ks: &mut Keyspace, now_ms: u64) {
    ks.now = now_ms;
    for i in 0..ks.dbs.len() {
        while ks.dbs[i].expire_due(i, now_ms, 1024, &mut ks.sig) == 1024 {}
    }
}

/// Sets `f` (for `RLOCKD FAULT` and [`crate::Server::add_fault`]). A freeze
/// scoped to clients only stops the matching connections open now at once
/// (except `caller`'s, so the test that sets it gets its answer); later
/// ones freeze on their first matching command.
pub fn add_fault(clients: &Map<u64, ClientRecord>, store: &faults::Faults, f: faults::Fault, caller: u64) -> u64 {
    if matches!(f.kind, faults::FaultKind::Freeze { .. }) && f.scope.clients_only() {
        let ids = clients
            .values()
            .filter(|r| r.shared.id != caller && f.scope.client_matches(r.shared.id, &r.name))
            .map(|r| r.shared.id)
            .collect();
        return store.add_freezing(f, ids);
    }
    store.add(f)
}

/// Closes the connections matching `scope` (not `caller`'s); returns how many.
pub fn kill_clients(clients: &Map<u64, ClientRecord>, scope: &faults::Scope, caller: u64) -> usize {
    let mut n = 0;
    for r in clients.values() {
        if r.shared.id != caller && scope.client_matches(r.shared.id, &r.name) {
            r.shared.kill();
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    #[test]
    fn which_patterns_name_the_reserved_prefix() {
        for (pattern, asks) in [
            (&b"__rlockd__:*"[..], true),
            (b"__rlockd__:lockevents", true),
            (b"__rlockd__:lock?vents", true),
            (b"__rlockd__*", true),
            (b"*", false),
            (b"__*", false),
            (b"__key*__:*", false),
            (b"__rlockd*", false),
            (b"[_]_rlockd__:*", false),
            (b"\\__rlockd__:*", false),
            (b"", false),
        ] {
            assert_eq!(super::names_reserved_prefix(pattern), asks, "{}", String::from_utf8_lossy(pattern));
        }
    }
}
