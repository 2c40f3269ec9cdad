//! Client-side caching (`CLIENT TRACKING`): the tracking table and the
//! invalidation messages.
//!
//! Default mode remembers, per key name (all databases share one name
//! space, as in Redis), the ids of the clients that read it with a
//! read-only command; the first modification of the key sends each of them
//! one `invalidate` message for that key and forgets the entry. BCAST mode
//! keeps no per-key state: a modified key is queued under every registered
//! prefix it starts with, and [`Tracking::flush_bcast`] sends each prefix's
//! queued keys (sorted, once each) to its clients in one message, at the
//! end of a connection's batch of commands (Redis's `beforeSleep`).
//!
//! A message goes to the tracking client itself as a RESP3 push
//! (`>2 invalidate [keys]`), or to its `REDIRECT` client: a RESP3 push
//! there, or a pub/sub `message` on `__redis__:invalidate` to a RESP2
//! client in subscribed mode (anything else is dropped, as in Redis). A
//! message for the client whose command is running follows that command's
//! reply ([`Tracking::take_deferred`]); others are queued at once.
//!
//! Invalidation is driven by the same touched keys as WATCH: while tracking
//! is active the keyspace records them (`Signals::track_touches`), and the
//! command layer's `call`, after every handler at any depth, hands the ones
//! not yet seen ([`Tracking::cursor`]) to `Core::track_modified`, so a
//! command, each command of an EXEC and each `redis.call` of a script send
//! theirs in the order they happened, one message per key. Active expiry
//! goes through `Core::after_command`; FLUSHDB/FLUSHALL send every tracking
//! client the null invalidation instead of per-key ones
//! ([`Tracking::on_flush`]); SWAPDB sends nothing, as in Redis 7.0. NOLOOP
//! compares the client whose top-level command runs (default mode) or, for
//! BCAST, the client that wrote the key — a script's writes are its
//! pseudo-client's. A key expired or evicted is nobody's write.
//! `CLIENT CACHING` lapses at the end of the next top-level command (or its
//! refusal), except after commands flagged `keeps_caching` (the `CLIENT`
//! subcommands) and inside MULTI. A RESP3 tracking client whose redirect
//! client is gone gets `tracking-redir-broken` at each send (Redis reports
//! it then, not at the disconnection). `tracking-table-max-keys` is
//! enforced before sleeping: keys over it are invalidated and forgotten.
//!
//! **Invariant:** while no client tracks and the table is empty
//! (`Tracking::active` false), the command path pays one branch for
//! tracking, and the keyspace records no touched keys for it.
//!
//! The clients' modes live in their [`ClientRecord`]s; this store only
//! keeps what is shared. Entries of clients that stopped tracking or left
//! stay until their key is next invalidated (Redis cleans them lazily too),
//! so `tracking_total_items` counts them as Redis does.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::client::{ClientRecord, ClientShared};
use crate::db::Map;
use crate::protocol::{push_header, Reply, Resp};

/// One BCAST prefix: its clients and the keys modified since the last flush
/// (each with the client whose command modified it last, 0 for none).
#[derive(Debug, Default)]
struct Prefix {
    clients: BTreeSet<u64>,
    pending: BTreeMap<Bytes, u64>,
}

/// What an invalidation carries.
enum Payload<'a> {
    Keys(&'a [Bytes]),
    /// Everything (FLUSHDB / FLUSHALL): a null in the tracking client's protocol.
    Null,
}

/// The server's tracking state. See the module docs.
#[derive(Debug, Default)]
pub struct Tracking {
    /// Some client tracks, or the table still holds keys: the command path
    /// must look at modified keys (the one branch it pays otherwise).
    pub active: bool,
    /// Key name → ids of the clients that read it.
    keys: HashMap<Bytes, BTreeSet<u64>>,
    prefixes: BTreeMap<Bytes, Prefix>,
    /// Clients with tracking on.
    clients: usize,
    /// How many of the keyspace's touched keys were already handled.
    pub cursor: usize,
    /// Messages for the running command's own client, sent after its reply.
    deferred: Vec<(Arc<ClientShared>, Bytes)>,
}

impl Tracking {
    fn refresh(&mut self) {
        self.active = self.clients > 0 || !self.keys.is_empty();
    }

    /// Number of keys in the table (`tracking_total_keys`).
    pub fn total_keys(&self) -> usize {
        self.keys.len()
    }

    /// Client entries over all keys (`tracking_total_items`).
    pub fn total_items(&self) -> usize {
        self.keys.values().map(BTreeSet::len).sum()
    }

    /// BCAST prefixes registered by any client (`tracking_total_prefixes`).
    pub fn total_prefixes(&self) -> usize {
        self.prefixes.len()
    }

    /// Clients with tracking on (`tracking_clients`).
    pub fn clients(&self) -> usize {
        self.clients
    }

    /// A client turned tracking on (`was_on`: it already had it on); its
    /// new `prefixes` are registered for BCAST.
    pub fn enable(&mut self, id: u64, was_on: bool, prefixes: &[Bytes]) {
        if !was_on {
            self.clients += 1;
        }
        for p in prefixes {
            self.prefixes.entry(p.clone()).or_default().clients.insert(id);
        }
        self.refresh();
    }

    /// A client turned tracking off, reset or left: its prefixes are dropped
    /// (a prefix no client uses any more loses its queued keys).
    pub fn disable(&mut self, id: u64, mode: &crate::client::Tracking) {
        self.clients -= 1;
        for p in &mode.prefixes {
            if let Some(e) = self.prefixes.get_mut(p) {
                e.clients.remove(&id);
                if e.clients.is_empty() {
                    self.prefixes.remove(p);
                }
            }
        }
        self.refresh();
    }

    /// Remembers that client `id` read `key` (default mode).
    pub fn remember(&mut self, key: &Bytes, id: u64) {
        match self.keys.get_mut(key) {
            Some(ids) => {
                ids.insert(id);
            }
            None => {
                self.keys.insert(Bytes::copy_from_slice(key), BTreeSet::from([id]));
            }
        }
        self.active = true;
    }

    /// `key` was modified while `current` (0: none) ran a command: queues it
    /// for the BCAST prefixes it falls under (as changed by `writer`), and
    /// invalidates it for the clients that read it (NOLOOP clients skip
    /// their own commands' changes).
    pub fn invalidate_key(&mut self, key: &Bytes, current: u64, writer: u64, clients: &mut Map<u64, ClientRecord>) {
        for (p, e) in self.prefixes.iter_mut() {
            if key.starts_with(p) {
                e.pending.insert(key.clone(), writer);
            }
        }
        let Some(ids) = self.keys.remove(key) else {
            return;
        };
        self.tell_readers(key, ids, current, clients);
        self.refresh();
    }

    /// Sends `key`'s invalidation to the clients `ids` that read it.
    fn tell_readers(&mut self, key: &Bytes, ids: BTreeSet<u64>, current: u64, clients: &mut Map<u64, ClientRecord>) {
        for id in ids {
            let Some(t) = clients.get(&id).and_then(|r| r.tracking.as_ref()) else {
                continue;
            };
            if t.bcast || (t.noloop && id == current) {
                continue;
            }
            self.send(clients, id, Payload::Keys(std::slice::from_ref(key)), id == current);
        }
    }

    /// `tracking-table-max-keys` (0: no limit): keys over the limit are
    /// invalidated and forgotten, any of them, as Redis picks random ones.
    pub fn limit_keys(&mut self, max: usize, clients: &mut Map<u64, ClientRecord>) {
        if max == 0 {
            return;
        }
        while self.keys.len() > max {
            let Some(key) = self.keys.keys().next().cloned() else {
                break;
            };
            let ids = self.keys.remove(&key).unwrap_or_default();
            self.tell_readers(&key, ids, 0, clients);
        }
        self.refresh();
    }

    /// FLUSHDB / FLUSHALL: every tracking client is told to drop everything,
    /// and the table is emptied.
    pub fn on_flush(&mut self, current: u64, clients: &mut Map<u64, ClientRecord>) {
        let ids: Vec<u64> = clients.iter().filter(|(_, r)| r.tracking.is_some()).map(|(id, _)| *id).collect();
        for id in ids {
            self.send(clients, id, Payload::Null, id == current);
        }
        self.keys = HashMap::new();
        self.refresh();
    }

    /// Sends each BCAST prefix's queued keys to its clients (Redis's
    /// `trackingBroadcastInvalidationMessages`): prefixes in order, clients
    /// by id, a NOLOOP client's own changes left out.
    pub fn flush_bcast(&mut self, clients: &mut Map<u64, ClientRecord>) {
        if self.prefixes.values().all(|p| p.pending.is_empty()) {
            return;
        }
        let mut sends = Vec::new();
        for e in self.prefixes.values_mut() {
            if e.pending.is_empty() {
                continue;
            }
            let pending = std::mem::take(&mut e.pending);
            let all: Vec<Bytes> = pending.keys().cloned().collect();
            for &id in &e.clients {
                let Some(t) = clients.get(&id).and_then(|r| r.tracking.as_ref()) else {
                    continue;
                };
                let keys = if t.noloop {
                    pending.iter().filter(|(_, by)| **by != id).map(|(k, _)| k.clone()).collect()
                } else {
                    all.clone()
                };
                if !keys.is_empty() {
                    sends.push((id, keys));
                }
            }
        }
        for (id, keys) in sends {
            self.send(clients, id, Payload::Keys(&keys), false);
        }
    }

    /// True if messages wait for the running command's reply.
    pub fn has_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// The messages held for the end of client `id`'s command: those for
    /// `id` itself are returned (to follow its reply), others (a redirect
    /// client's) are queued now.
    pub fn take_deferred(&mut self, id: u64) -> Vec<Bytes> {
        let mut mine = Vec::new();
        for (to, msg) in self.deferred.drain(..) {
            if to.id == id {
                mine.push(msg);
            } else {
                to.push_encoded(msg);
            }
        }
        mine
    }

    /// Sends one invalidation for tracking client `id` (Redis's
    /// `sendTrackingMessage`): to the client or its redirect, or a
    /// `tracking-redir-broken` push when the redirect client is gone.
    fn send(&mut self, clients: &mut Map<u64, ClientRecord>, id: u64, payload: Payload<'_>, defer: bool) {
        let Some((own, redirect)) =
            clients.get(&id).and_then(|r| Some((r.shared.clone(), r.tracking.as_ref()?.redirect)))
        else {
            return;
        };
        let own_resp = own.resp();
        let mut out = BytesMut::new();
        let dest = if redirect == 0 {
            own
        } else {
            match clients.get(&redirect) {
                Some(r) => r.shared.clone(),
                None => {
                    if let Some(t) = clients.get_mut(&id).and_then(|r| r.tracking.as_mut()) {
                        t.broken_redirect = true;
                    }
                    if own_resp == Resp::V3 {
                        let broken = [Reply::bulk_str("tracking-redir-broken"), Reply::Int(redirect as i64)];
                        Reply::Push(broken.to_vec()).encode(Resp::V3, &mut out);
                        self.queue(own, out, defer);
                    }
                    return;
                }
            }
        };
        let head = if dest.resp() == Resp::V3 {
            vec![Reply::bulk_str("invalidate")]
        } else if redirect != 0 && dest.subscriptions() > 0 {
            vec![Reply::bulk_str("message"), Reply::bulk_str("__redis__:invalidate")]
        } else {
            return;
        };
        push_header(&mut out, dest.resp(), head.len() + 1);
        for item in head {
            item.encode(dest.resp(), &mut out);
        }
        match payload {
            Payload::Keys(keys) => Reply::bulks(keys.iter().cloned()).encode(dest.resp(), &mut out),
            // The tracking client's null, whatever the receiver speaks.
            Payload::Null => Reply::Nil.encode(own_resp, &mut out),
        }
        self.queue(dest, out, defer);
    }

    fn queue(&mut self, to: Arc<ClientShared>, msg: BytesMut, defer: bool) {
        if defer {
            self.deferred.push((to, msg.freeze()));
        } else {
            to.push_encoded(msg.freeze());
        }
    }
}
