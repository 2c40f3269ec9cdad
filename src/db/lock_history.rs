//! What happened to each lock, and whether it was ever unsafe
//! (`RLOCKD EVENTS`, `RLOCKD CHECK`, `Server::lock_events`/`check_locks`).
//!
//! After every command, the keys it touched (expiries included) are read
//! again as locks ([`super::locks::view_key`]) and compared with what they
//! were: holders that appear are `acquired` (or `reentered`), holders that
//! go are `released` — or `expired` when the lease ran out with no release,
//! the failure behind two holders at once; a longer lease with the same
//! holders is `renewed`. The comparison also finds violations: a lock taken
//! by another owner after it expired while held, a fair lock served out of
//! queue order, a writer beside other owners' readers, a counter (semaphore)
//! below zero.

use std::collections::VecDeque;

type HashMap<K, V> = std::collections::HashMap<K, V, super::Hasher>;

use bytes::Bytes;

use super::locks::{view_key, Holder, LockView};
use super::Keyspace;

/// Events kept for `RLOCKD EVENTS` (the oldest go first).
const MAX_EVENTS: usize = 10_000;

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
    /// The script's sha for `EVALSHA`/`FCALL`'s function name.
    pub detail: Option<Bytes>,
}

/// `command` with its detail, as [`LockEvent::command`] shows it.
fn describe(command: &str, detail: Option<&Bytes>) -> String {
    let mut s = String::with_capacity(command.len() + detail.map_or(0, |d| d.len() + 1));
    s.push_str(command);
    if let Some(d) = detail {
        s.push(' ');
        s.push_str(&String::from_utf8_lossy(d));
    }
    s
}

/// An event as the history keeps it: the command's description is built
/// only when the event is read ([`LockEvent`]), and the detail (a script's
/// sha) is shared between the events of the same script.
#[derive(Debug, Clone)]
struct Stored {
    id: u64,
    time_ms: u64,
    db: usize,
    key: Bytes,
    kind: &'static str,
    event: &'static str,
    holder: Bytes,
    count: i64,
    client: u64,
    command: &'static str,
    detail: Option<Bytes>,
}

impl Stored {
    fn event(&self) -> LockEvent {
        LockEvent {
            id: self.id,
            time_ms: self.time_ms,
            db: self.db,
            key: self.key.clone(),
            kind: self.kind,
            event: self.event,
            holder: self.holder.clone(),
            count: self.count,
            client: self.client,
            command: describe(self.command, self.detail.as_ref()),
        }
    }
}

/// The kinds a view can have, by their index in a [`Seen`].
const KINDS: [&str; 7] = ["", "read-write", "fair", "reentrant", "counter", "token", "zset-semaphore"];

/// What the comparison needs of a lock's last view — its kind, holders with
/// their counts, counter value and key deadline — packed in one allocation
/// (about 80 bytes for a held Redisson lock, where a whole [`LockView`] with
/// its vectors and copies took several hundred): the history keeps one per
/// held lock.
#[derive(Debug)]
struct Seen(Box<[u8]>);

impl Seen {
    fn pack(v: &LockView, deadline: Option<u64>) -> Seen {
        let mut b = Vec::with_capacity(20 + v.holders.iter().map(|h| 12 + h.id.len()).sum::<usize>());
        b.push(KINDS.iter().position(|k| *k == v.kind).unwrap_or(0) as u8);
        b.push(u8::from(deadline.is_some()) | u8::from(v.value.is_some()) << 1);
        b.extend_from_slice(&deadline.unwrap_or(0).to_le_bytes());
        b.extend_from_slice(&v.value.unwrap_or(0).to_le_bytes());
        for h in &v.holders {
            b.extend_from_slice(&h.count.to_le_bytes());
            b.extend_from_slice(&(h.id.len() as u32).to_le_bytes());
            b.extend_from_slice(&h.id);
        }
        Seen(b.into_boxed_slice())
    }

    /// The packed view back: (kind, holders with counts, value, deadline).
    fn unpack(&self, db: usize, key: &Bytes) -> (LockView, Option<u64>) {
        let b = &self.0;
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let flags = b[1];
        let deadline = (flags & 1 != 0).then(|| word(2));
        let value = (flags & 2 != 0).then(|| word(10) as i64);
        let mut holders = Vec::new();
        let mut at = 18;
        while at < b.len() {
            let count = word(at) as i64;
            let len = u32::from_le_bytes(b[at + 8..at + 12].try_into().expect("4 bytes")) as usize;
            holders.push(Holder {
                id: Bytes::copy_from_slice(&b[at + 12..at + 12 + len]),
                count,
                lease_ms: None,
                score: None,
            });
            at += 12 + len;
        }
        let view = LockView {
            db,
            key: key.clone(),
            kind: KINDS[usize::from(b[0]).min(KINDS.len() - 1)],
            mode: None,
            holders,
            waiters: Vec::new(),
            lease_ms: None,
            value,
        };
        (view, deadline)
    }
}

/// The recorder: last view of every lock, events, violations.
#[derive(Debug, Default)]
pub struct LockHistory {
    /// Last view of each lock (what the comparison needs of it).
    seen: HashMap<(usize, Bytes), Seen>,
    /// Holders of locks that expired while held, until the lock is taken again.
    expired_held: HashMap<(usize, Bytes), Vec<Bytes>>,
    /// The last waiting queue seen for each fair lock, kept while the lock
    /// is free, to check who is served next.
    queues: HashMap<(usize, Bytes), Vec<Bytes>>,
    events: VecDeque<Stored>,
    /// The detail of the last event pushed (own bytes, shared by clones).
    last_detail: Option<Bytes>,
    next_id: u64,
    violations: Vec<String>,
}

/// The lock a key belongs to: itself, or the lock named inside the braces of
/// a fair lock's queue / timeout set or a read hold's lease key.
fn lock_key(key: &Bytes) -> Bytes {
    for prefix in [&b"redisson_lock_queue:{"[..], b"redisson_lock_timeout:{"] {
        if let Some(rest) = key.strip_prefix(prefix).and_then(|r| r.strip_suffix(b"}")) {
            return Bytes::copy_from_slice(rest);
        }
    }
    if key.starts_with(b"{") && key.windows(16).any(|w| w == b":rwlock_timeout:") {
        if let Some(end) = key.iter().position(|&c| c == b'}') {
            return Bytes::copy_from_slice(&key[1..end]);
        }
    }
    // A copy, never a clone: a touched key is often a slice of the
    // connection's read buffer, which a clone kept in the history (views,
    // events) would pin whole.
    super::own(key)
}

/// The owner part of a Redisson holder id (`uuid:thread[:write]` → `uuid:thread`).
fn owner(id: &[u8]) -> &[u8] {
    id.strip_suffix(b":write").unwrap_or(id)
}

impl LockHistory {
    /// Compares the touched keys' locks with their last views.
    pub fn observe(&mut self, touched: &[(usize, Bytes)], ks: &Keyspace, now_ms: u64, actor: &Actor) {
        // A command touches few keys: a linear look-up beats a set.
        let mut done: Vec<(usize, Bytes)> = Vec::new();
        for (db, key) in touched {
            let id = (*db, lock_key(key));
            if touched.len() > 1 {
                if done.contains(&id) {
                    continue;
                }
                done.push(id.clone());
            }
            let now_view = ks.dbs.get(*db).and_then(|d| view_key(d, *db, &id.1, now_ms));
            let before = self.seen.remove(&id).map(|s| s.unpack(id.0, &id.1));
            self.compare(&id, before, now_view.as_ref(), now_ms, actor);
            if let Some(v) = now_view {
                let deadline = v.lease_ms.map(|ms| now_ms.saturating_add_signed(ms));
                self.seen.insert(id, Seen::pack(&v, deadline));
            }
        }
    }

    fn compare(
        &mut self,
        id: &(usize, Bytes),
        before: Option<(LockView, Option<u64>)>,
        after: Option<&LockView>,
        now_ms: u64,
        actor: &Actor,
    ) {
        let (old, old_deadline) = match before {
            Some((v, d)) => (Some(v), d),
            None => (None, None),
        };
        let kind = after.or(old.as_ref()).map_or("", |v| v.kind);
        let old_holders: &[Holder] = old.as_ref().map_or(&[], |v| &v.holders);
        let new_holders: &[Holder] = after.map_or(&[], |v| &v.holders);
        // Holders that left: released, or expired if the key's lease ran out.
        let expired = after.is_none() && old_deadline.is_some_and(|d| d <= now_ms);
        let mut gone = Vec::new();
        for h in old_holders {
            if !new_holders.iter().any(|n| n.id == h.id) {
                let event = if expired { "expired" } else { "released" };
                self.push(id, kind, event, h.id.clone(), 0, now_ms, actor);
                gone.push(h.id.clone());
            }
        }
        if expired && !gone.is_empty() {
            self.expired_held.insert(id.clone(), gone);
        }
        for h in new_holders {
            let (hid, count) = (&h.id, h.count);
            match old_holders.iter().find(|o| o.id == *hid) {
                None => {
                    self.push(id, kind, "acquired", hid.clone(), count, now_ms, actor);
                    if let Some(previous) = self.expired_held.remove(id) {
                        if !previous.iter().any(|p| owner(p) == owner(hid)) {
                            self.violate(format!(
                                "db{} {}: acquired by {} after its lease expired while held by {} (two holders at once)",
                                id.0,
                                String::from_utf8_lossy(&id.1),
                                String::from_utf8_lossy(hid),
                                previous.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect::<Vec<_>>().join(", ")
                            ));
                        }
                    }
                    if let Some(queue) = self.queues.get(id) {
                        if queue.iter().position(|w| w == hid).is_some_and(|pos| pos > 0) {
                            let first = String::from_utf8_lossy(&queue[0]).into_owned();
                            self.violate(format!(
                                "db{} {}: fair lock served {} before {first}, who was first in the queue",
                                id.0,
                                String::from_utf8_lossy(&id.1),
                                String::from_utf8_lossy(hid),
                            ));
                        }
                    }
                }
                Some(o) if count > o.count => self.push(id, kind, "reentered", hid.clone(), count, now_ms, actor),
                Some(o) if count < o.count => self.push(id, kind, "released", hid.clone(), count, now_ms, actor),
                Some(_) => {}
            }
        }
        if let (Some(o), Some(a)) = (&old, after) {
            let same = old_holders.len() == new_holders.len()
                && old_holders.iter().zip(new_holders).all(|(x, y)| x.id == y.id && x.count == y.count)
                && !new_holders.is_empty();
            let new_deadline = a.lease_ms.map(|ms| now_ms.saturating_add_signed(ms));
            if same && new_deadline > old_deadline && old_deadline.is_some() {
                for h in new_holders {
                    self.push(id, kind, "renewed", h.id.clone(), h.count, now_ms, actor);
                }
            }
            if o.value != a.value {
                if let Some(v) = a.value {
                    self.push(id, kind, "counter", Bytes::new(), v, now_ms, actor);
                }
            }
        } else if let (None, Some(a)) = (&old, after) {
            if let Some(v) = a.value {
                self.push(id, kind, "counter", Bytes::new(), v, now_ms, actor);
            }
        }
        if let Some(a) = after.filter(|a| a.kind == "fair") {
            self.queues.insert(id.clone(), a.waiters.iter().map(|w| w.id.clone()).collect());
        }
        if let Some(a) = after {
            if a.value.is_some_and(|v| v < 0) {
                self.violate(format!(
                    "db{} {}: counter below zero ({}): more permits taken than the semaphore has",
                    id.0,
                    String::from_utf8_lossy(&id.1),
                    a.value.unwrap_or(0)
                ));
            }
            if a.kind == "read-write" {
                let writers: Vec<&[u8]> =
                    a.holders.iter().filter(|h| h.id.ends_with(b":write")).map(|h| owner(&h.id)).collect();
                let foreign_reader = a
                    .holders
                    .iter()
                    .filter(|h| !h.id.ends_with(b":write"))
                    .any(|r| writers.iter().any(|w| *w != owner(&r.id)));
                if !writers.is_empty() && (foreign_reader || writers.len() > 1) {
                    self.violate(format!(
                        "db{} {}: a writer holds the read-write lock beside other owners",
                        id.0,
                        String::from_utf8_lossy(&id.1)
                    ));
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        id: &(usize, Bytes),
        kind: &'static str,
        event: &'static str,
        holder: Bytes,
        count: i64,
        now_ms: u64,
        actor: &Actor,
    ) {
        self.next_id += 1;
        let (client, command, detail) = if event == "expired" {
            (0, "(expiry)", None)
        } else {
            // A copy, never a clone of the actor's detail: that is a slice of
            // the connection's read buffer, which a clone would pin.
            let detail = actor.detail.as_ref().map(|d| match &self.last_detail {
                Some(last) if last[..] == d[..] => last.clone(),
                _ => {
                    let own = super::own(d);
                    self.last_detail = Some(own.clone());
                    own
                }
            });
            (actor.client, actor.command, detail)
        };
        self.events.push_back(Stored {
            id: self.next_id,
            time_ms: now_ms,
            db: id.0,
            key: id.1.clone(),
            kind,
            event,
            holder,
            count,
            client,
            command,
            detail,
        });
        if self.events.len() > MAX_EVENTS {
            self.events.pop_front();
        }
    }

    fn violate(&mut self, what: String) {
        if !self.violations.contains(&what) {
            self.violations.push(what);
        }
    }

    /// Events after id `since`, of `key` if given, oldest first.
    pub fn events(&self, key: Option<&[u8]>, since: u64) -> Vec<LockEvent> {
        self.events.iter().filter(|e| e.id > since && key.is_none_or(|k| &e.key[..] == k)).map(Stored::event).collect()
    }

    /// The id of the newest event (0: none yet).
    pub fn last_id(&self) -> u64 {
        self.next_id
    }

    /// Every violation seen so far.
    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    /// Forgets events and violations (`RLOCKD CHECK RESET`), keeps the views.
    pub fn reset(&mut self) {
        self.events.clear();
        self.violations.clear();
        self.expired_held.clear();
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
        assert_eq!(&lock_key(&Bytes::from_static(b"redisson_lock_queue:{a}"))[..], b"a");
        assert_eq!(&lock_key(&Bytes::from_static(b"redisson_lock_timeout:{a}"))[..], b"a");
        assert_eq!(&lock_key(&Bytes::from_static(b"{rw}:u:1:rwlock_timeout:1"))[..], b"rw");
        assert_eq!(&lock_key(&Bytes::from_static(b"plain"))[..], b"plain");
        assert_eq!(owner(b"u:1:write"), b"u:1");
    }

    #[test]
    fn a_packed_view_keeps_what_the_comparison_reads() {
        let key = Bytes::from_static(b"lock");
        let holder =
            |id: &'static [u8], count| Holder { id: Bytes::from_static(id), count, lease_ms: Some(5), score: None };
        for kind in KINDS {
            for value in [None, Some(-3)] {
                for deadline in [None, Some(1_700_000_000_123)] {
                    let v = LockView {
                        db: 2,
                        key: key.clone(),
                        kind,
                        mode: None,
                        holders: vec![holder(b"uuid-a:1", 3), holder(b"", 1), holder(b"uuid-b:7:write", 1)],
                        waiters: Vec::new(),
                        lease_ms: Some(30_000),
                        value,
                    };
                    let (back, d) = Seen::pack(&v, deadline).unpack(2, &key);
                    assert_eq!(d, deadline);
                    assert_eq!((back.kind, back.value, back.db, &back.key), (kind, value, 2, &key));
                    let ids: Vec<(&[u8], i64)> = back.holders.iter().map(|h| (&h.id[..], h.count)).collect();
                    assert_eq!(ids, vec![(&b"uuid-a:1"[..], 3), (&b""[..], 1), (&b"uuid-b:7:write"[..], 1)]);
                }
            }
        }
    }
}
