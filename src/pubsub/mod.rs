//! Pub/sub: channels, patterns, shard channels, and delivery.
//!
//! Publishing happens under the core lock, so every subscriber sees messages
//! in one global publish order. A message is encoded once per protocol
//! version and the same bytes are queued to every subscriber's outbound
//! channel; the subscriber's connection writes them. A subscriber that stops
//! reading is cut off at `client-output-buffer-limit pubsub` without slowing
//! the publisher.
//!
//! Inside `EXEC` or a script (nesting depth > 1) deliveries are *deferred*:
//! the receivers are resolved and counted at once (so `PUBLISH` still
//! returns its count), but the messages are queued in [`PubSub`] and handed
//! to the connections only when the top-level command completes
//! ([`PubSub::flush`], from `Core::after_command`). Keyspace events are queued by
//! the keyspace while commands run and published at the same points, in
//! the order they happened relative to `PUBLISH`es.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use indexmap::{IndexMap, IndexSet};

use crate::client::ClientShared;
use crate::config::BufferLimit;
use crate::control;
use crate::control::faults::{Faults, MessageFate};
use crate::db::{notify, KeyEvent, Signals};
use crate::glob;
use crate::protocol::{Reply, Resp};

type Subscribers = IndexMap<u64, Arc<ClientShared>, crate::db::Hasher>;

/// One client's subscriptions.
#[derive(Debug, Default)]
pub struct ClientSubs {
    pub channels: IndexSet<Bytes, crate::db::Hasher>,
    pub patterns: IndexSet<Bytes, crate::db::Hasher>,
    pub shard: IndexSet<Bytes, crate::db::Hasher>,
}

/// Subscription kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

/// All subscriptions of a server.
#[derive(Debug, Default)]
pub struct PubSub {
    pub channels: HashMap<Bytes, Subscribers>,
    pub patterns: IndexMap<Bytes, Subscribers, crate::db::Hasher>,
    pub shard: HashMap<Bytes, Subscribers>,
    pub clients: HashMap<u64, ClientSubs>,
    /// Messages delivered (INFO `total_pubsub_messages` counts publishes).
    pub published: u64,
    /// Deliveries deferred until the running top-level command completes.
    pending: Vec<Deferred>,
    /// The server's injected faults (messages dropped or delayed).
    pub faults: Arc<Faults>,
}

/// One message whose delivery waits for the end of the running `EXEC` or
/// script: its parts and the receivers resolved when it was published.
#[derive(Debug)]
struct Deferred {
    parts: Vec<Bytes>,
    to: Vec<Arc<ClientShared>>,
}

/// A message encoded lazily once per protocol version.
struct Encoded<'a> {
    parts: &'a [&'a [u8]],
    v2: Option<Bytes>,
    v3: Option<Bytes>,
}

impl<'a> Encoded<'a> {
    fn new(parts: &'a [&'a [u8]]) -> Self {
        Encoded { parts, v2: None, v3: None }
    }
    fn get(&mut self, resp: Resp) -> Bytes {
        let slot = if resp == Resp::V3 { &mut self.v3 } else { &mut self.v2 };
        slot.get_or_insert_with(|| {
            Reply::Push(self.parts.iter().map(|p| Reply::Bulk(Bytes::copy_from_slice(p))).collect()).to_bytes(resp)
        })
        .clone()
    }
}

/// Delivers one message to every subscriber in `subs` now, or (with
/// `defer`) records it for later. Returns the number of receivers.
fn route(
    subs: &Subscribers,
    parts: &[&[u8]],
    limit: BufferLimit,
    now_ms: u64,
    defer: Option<&mut Vec<Deferred>>,
) -> usize {
    match defer {
        Some(q) => {
            q.push(Deferred {
                parts: parts.iter().map(|p| Bytes::copy_from_slice(p)).collect(),
                to: subs.values().cloned().collect(),
            });
        }
        None => {
            let mut enc = Encoded::new(parts);
            for c in subs.values() {
                deliver(c, enc.get(c.resp()), limit, now_ms);
            }
        }
    }
    subs.len()
}

/// Queues `msg` to `c`, enforcing the pub/sub output buffer limits.
fn deliver(c: &ClientShared, msg: Bytes, limit: BufferLimit, now_ms: u64) {
    if c.kill.is_set() {
        return;
    }
    let pending = c.push_encoded(msg) as u64;
    if limit.hard > 0 && pending >= limit.hard {
        tracing::warn!(client = c.id, pending, "pubsub client over the hard output buffer limit: disconnecting");
        c.kill();
        return;
    }
    if limit.soft > 0 && pending >= limit.soft {
        let since = c.soft_limit_since.load(Ordering::Relaxed);
        if since == 0 {
            c.soft_limit_since.store(now_ms.max(1), Ordering::Relaxed);
        } else if now_ms.saturating_sub(since) >= limit.soft_secs * 1000 {
            tracing::warn!(
                client = c.id,
                pending,
                "pubsub client over the soft output buffer limit for too long: disconnecting"
            );
            c.kill();
        }
    } else {
        c.soft_limit_since.store(0, Ordering::Relaxed);
    }
}

impl PubSub {
    pub fn channel_count(&self) -> usize {
        self.channels.len()
    }

    pub fn pattern_count(&self) -> usize {
        self.patterns.len()
    }

    /// Takes the deferred messages addressed to client `id` (as pushes, in
    /// publish order); the other receivers still get them at the end of the
    /// command.
    pub fn take_pending_for(&mut self, id: u64) -> Vec<Reply> {
        let mut mine = Vec::new();
        for d in &mut self.pending {
            if let Some(i) = d.to.iter().position(|c| c.id == id) {
                d.to.remove(i);
                mine.push(Reply::Push(d.parts.iter().map(|p| Reply::Bulk(p.clone())).collect()));
            }
        }
        mine
    }

    pub fn shard_channel_count(&self) -> usize {
        self.shard.len()
    }

    /// Publishes to channel subscribers and matching patterns. Returns the
    /// number of receivers. With `defer`, the messages are queued until
    /// [`PubSub::flush`] (the receivers are resolved now).
    pub fn publish(&mut self, channel: &[u8], message: &[u8], limit: BufferLimit, now_ms: u64, defer: bool) -> usize {
        self.published += 1;
        self.publish_to(channel, message, limit, now_ms, defer, |_| true)
    }

    /// Publishes one of rlockd's own messages on `channel` (a channel under
    /// [`control::RESERVED_PREFIX`]): to the channel's subscribers and to the
    /// patterns that name the prefix ([`control::names_reserved_prefix`]),
    /// never to a pattern such as `*` that did not ask for them.
    pub fn publish_reserved(&mut self, channel: &[u8], message: &[u8], limit: BufferLimit, now_ms: u64) -> usize {
        self.publish_to(channel, message, limit, now_ms, false, control::names_reserved_prefix)
    }

    /// True if [`PubSub::publish_reserved`] on `channel` would reach anyone.
    pub fn has_reserved_listeners(&self, channel: &[u8]) -> bool {
        self.channels.contains_key(channel)
            || self.patterns.keys().any(|p| control::names_reserved_prefix(p) && glob::matches(p, channel, false))
    }

    /// Delivers to `channel`'s subscribers and to the matching patterns
    /// `pattern_ok` accepts; the number of receivers.
    fn publish_to(
        &mut self,
        channel: &[u8],
        message: &[u8],
        limit: BufferLimit,
        now_ms: u64,
        defer: bool,
        pattern_ok: fn(&[u8]) -> bool,
    ) -> usize {
        let fate = self.faults.message_fate(channel);
        let defer = defer || fate != MessageFate::Deliver;
        let mut n = 0;
        let mut deferred = Vec::new();
        if let Some(subs) = self.channels.get(channel) {
            let parts: [&[u8]; 3] = [b"message", channel, message];
            n += route(subs, &parts, limit, now_ms, defer.then_some(&mut deferred));
        }
        for (pat, subs) in &self.patterns {
            if !pattern_ok(pat) || !glob::matches(pat, channel, false) {
                continue;
            }
            let parts: [&[u8]; 4] = [b"pmessage", pat, channel, message];
            n += route(subs, &parts, limit, now_ms, defer.then_some(&mut deferred));
        }
        self.dispose(deferred, fate, limit, now_ms);
        n
    }

    /// Publishes to shard-channel subscribers (`SPUBLISH`).
    pub fn spublish(&mut self, channel: &[u8], message: &[u8], limit: BufferLimit, now_ms: u64, defer: bool) -> usize {
        let fate = self.faults.message_fate(channel);
        let defer = defer || fate != MessageFate::Deliver;
        let mut n = 0;
        let mut deferred = Vec::new();
        if let Some(subs) = self.shard.get(channel) {
            let parts: [&[u8]; 3] = [b"smessage", channel, message];
            n += route(subs, &parts, limit, now_ms, defer.then_some(&mut deferred));
        }
        self.dispose(deferred, fate, limit, now_ms);
        self.published += 1;
        n
    }

    /// Deferred deliveries of one publish: kept for the end of the command,
    /// or (under an injected message fault) lost or handed over late.
    fn dispose(&mut self, mut deferred: Vec<Deferred>, fate: MessageFate, limit: BufferLimit, now_ms: u64) {
        match fate {
            MessageFate::Deliver => self.pending.append(&mut deferred),
            MessageFate::Drop => {}
            MessageFate::Delay(d) => {
                let late = move || {
                    for msg in deferred {
                        let parts: Vec<&[u8]> = msg.parts.iter().map(|p| &p[..]).collect();
                        let mut enc = Encoded::new(&parts);
                        for c in &msg.to {
                            deliver(c, enc.get(c.resp()), limit, now_ms);
                        }
                    }
                };
                match tokio::runtime::Handle::try_current() {
                    Ok(rt) => {
                        rt.spawn(async move {
                            tokio::time::sleep(d).await;
                            late();
                        });
                    }
                    // Outside the server's runtime (an in-process call):
                    // nothing can wait, deliver now.
                    Err(_) => late(),
                }
            }
        }
    }

    /// Publishes a keyspace notification.
    pub fn keyspace_event(&mut self, ev: &KeyEvent, flags: u32, limit: BufferLimit, now_ms: u64, defer: bool) {
        if self.channels.is_empty() && self.patterns.is_empty() {
            return;
        }
        if flags & notify::KEYSPACE != 0 {
            let mut ch = format!("__keyspace@{}__:", ev.db).into_bytes();
            ch.extend_from_slice(&ev.key);
            self.publish(&ch, ev.event.as_bytes(), limit, now_ms, defer);
        }
        if flags & notify::KEYEVENT != 0 {
            let ch = format!("__keyevent@{}__:{}", ev.db, ev.event);
            self.publish(ch.as_bytes(), &ev.key, limit, now_ms, defer);
        }
    }

    /// True if deliveries are waiting for [`PubSub::flush`].
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Hands every deferred message to its receivers, in publish order.
    pub fn deliver_pending(&mut self, limit: BufferLimit, now_ms: u64) {
        for d in std::mem::take(&mut self.pending) {
            let parts: Vec<&[u8]> = d.parts.iter().map(|p| &p[..]).collect();
            let mut enc = Encoded::new(&parts);
            for c in &d.to {
                deliver(c, enc.get(c.resp()), limit, now_ms);
            }
        }
    }

    fn table(&mut self, kind: Kind) -> &mut HashMap<Bytes, Subscribers> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Shard => &mut self.shard,
            Kind::Pattern => unreachable!("patterns use their own table"),
        }
    }

    /// Subscribes; returns true if newly subscribed.
    pub fn subscribe(&mut self, client: &Arc<ClientShared>, kind: Kind, name: &Bytes) -> bool {
        let subs = self.clients.entry(client.id).or_default();
        let set = match kind {
            Kind::Channel => &mut subs.channels,
            Kind::Pattern => &mut subs.patterns,
            Kind::Shard => &mut subs.shard,
        };
        if set.contains(name) {
            return false;
        }
        // Kept for the subscription's life: a copy, not a slice of the
        // client's read buffer (which a kept slice would keep whole).
        let name = Bytes::copy_from_slice(name);
        set.insert(name.clone());
        let counter = match kind {
            Kind::Channel => &client.sub_channels,
            Kind::Pattern => &client.sub_patterns,
            Kind::Shard => &client.sub_shard,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let entry = match kind {
            Kind::Pattern => self.patterns.entry(name.clone()).or_default(),
            k => self.table(k).entry(name.clone()).or_default(),
        };
        entry.insert(client.id, client.clone());
        true
    }

    /// Unsubscribes; returns true if it was subscribed.
    pub fn unsubscribe(&mut self, client: &ClientShared, kind: Kind, name: &[u8]) -> bool {
        let Some(subs) = self.clients.get_mut(&client.id) else {
            return false;
        };
        let set = match kind {
            Kind::Channel => &mut subs.channels,
            Kind::Pattern => &mut subs.patterns,
            Kind::Shard => &mut subs.shard,
        };
        if !set.shift_remove(name) {
            return false;
        }
        let counter = match kind {
            Kind::Channel => &client.sub_channels,
            Kind::Pattern => &client.sub_patterns,
            Kind::Shard => &client.sub_shard,
        };
        counter.fetch_sub(1, Ordering::Relaxed);
        match kind {
            Kind::Pattern => {
                if let Some(m) = self.patterns.get_mut(name) {
                    m.shift_remove(&client.id);
                    if m.is_empty() {
                        self.patterns.shift_remove(name);
                    }
                }
            }
            k => {
                let t = self.table(k);
                if let Some(m) = t.get_mut(name) {
                    m.shift_remove(&client.id);
                    if m.is_empty() {
                        t.remove(name);
                    }
                }
            }
        }
        if subs_empty(self.clients.get(&client.id)) {
            self.clients.remove(&client.id);
        }
        true
    }

    /// Names `client` is subscribed to, of `kind`, in subscription order.
    pub fn subscriptions_of(&self, id: u64, kind: Kind) -> Vec<Bytes> {
        self.clients
            .get(&id)
            .map(|s| {
                match kind {
                    Kind::Channel => &s.channels,
                    Kind::Pattern => &s.patterns,
                    Kind::Shard => &s.shard,
                }
                .iter()
                .cloned()
                .collect()
            })
            .unwrap_or_default()
    }

    /// Drops every subscription of a client (disconnect, RESET).
    pub fn remove_client(&mut self, client: &ClientShared) {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for name in self.subscriptions_of(client.id, kind) {
                self.unsubscribe(client, kind, &name);
            }
        }
    }
}

impl PubSub {
    /// Publishes the keyspace events queued so far in `sig`, after any
    /// deferred messages published before them. With `defer` (inside
    /// `EXEC` or a script) the events join the deferred queue instead.
    pub fn publish_events(&mut self, sig: &mut Signals, limit: BufferLimit, now: u64, defer: bool) {
        if sig.events.is_empty() {
            return;
        }
        let events = std::mem::take(&mut sig.events);
        let flags = sig.notify_flags;
        if !defer {
            self.deliver_pending(limit, now);
        }
        for ev in &events {
            self.keyspace_event(ev, flags, limit, now, defer);
        }
        let mut events = events;
        events.clear();
        if sig.events.is_empty() {
            sig.events = events;
        }
    }

    /// End of a top-level command: publishes its keyspace events and
    /// delivers every deferred message, in the order they happened.
    pub fn flush(&mut self, sig: &mut Signals, limit: BufferLimit, now: u64) {
        self.publish_events(sig, limit, now, false);
        if self.has_pending() {
            self.deliver_pending(limit, now);
        }
    }
}

fn subs_empty(s: Option<&ClientSubs>) -> bool {
    s.is_none_or(|s| s.channels.is_empty() && s.patterns.is_empty() && s.shard.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Outbound;
    use tokio::sync::mpsc;

    fn client(id: u64) -> (Arc<ClientShared>, mpsc::UnboundedReceiver<Outbound>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let addr: std::net::SocketAddr = "127.0.0.1:1".parse().expect("addr");
        (Arc::new(ClientShared::new(id, addr, addr, 0, tx)), rx)
    }

    fn received(rx: &mut mpsc::UnboundedReceiver<Outbound>) -> Vec<Bytes> {
        let mut out = Vec::new();
        while let Ok(m) = rx.try_recv() {
            match m {
                Outbound::Encoded(b) => out.push(b),
                Outbound::Reply(r) => out.push(r.to_bytes(Resp::V2)),
            }
        }
        out
    }

    const NO_LIMIT: BufferLimit = BufferLimit { hard: 0, soft: 0, soft_secs: 0 };

    #[test]
    fn deferred_publish_counts_now_and_delivers_later_in_order() {
        let mut ps = PubSub::default();
        let (a, mut rx) = client(1);
        ps.subscribe(&a, Kind::Channel, &Bytes::from_static(b"ch"));
        ps.subscribe(&a, Kind::Pattern, &Bytes::from_static(b"c*"));
        assert_eq!(ps.publish(b"ch", b"1", NO_LIMIT, 0, true), 2);
        assert_eq!(ps.publish(b"cx", b"2", NO_LIMIT, 0, true), 1);
        assert!(received(&mut rx).is_empty(), "deferred messages were delivered early");
        // A subscriber leaving after the publish still gets what was counted.
        ps.unsubscribe(&a, Kind::Pattern, b"c*");
        ps.deliver_pending(NO_LIMIT, 0);
        let got = received(&mut rx);
        assert_eq!(
            got,
            vec![
                Bytes::from_static(b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\n1\r\n"),
                Bytes::from_static(b"*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$1\r\n1\r\n"),
                Bytes::from_static(b"*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\ncx\r\n$1\r\n2\r\n"),
            ]
        );
        assert!(!ps.has_pending());
    }

    #[test]
    fn hard_limit_kills_only_the_client_over_it() {
        let mut ps = PubSub::default();
        let (slow, _slow_rx) = client(1);
        let (fast, mut fast_rx) = client(2);
        for c in [&slow, &fast] {
            ps.subscribe(c, Kind::Channel, &Bytes::from_static(b"ch"));
        }
        let limit = BufferLimit { hard: 1000, soft: 0, soft_secs: 0 };
        let payload = vec![b'x'; 100];
        for _ in 0..20 {
            ps.publish(b"ch", &payload, limit, 0, false);
            // The fast one's connection writes everything at once.
            for m in received(&mut fast_rx) {
                fast.pending_bytes.fetch_sub(m.len(), Ordering::AcqRel);
            }
        }
        assert!(slow.kill.is_set());
        assert!(!fast.kill.is_set());
    }

    #[test]
    fn soft_limit_needs_its_duration() {
        let mut ps = PubSub::default();
        let (c, _rx) = client(1);
        ps.subscribe(&c, Kind::Channel, &Bytes::from_static(b"ch"));
        let limit = BufferLimit { hard: 0, soft: 100, soft_secs: 2 };
        let payload = vec![b'x'; 200];
        ps.publish(b"ch", &payload, limit, 10_000, false);
        ps.publish(b"ch", &payload, limit, 11_000, false);
        assert!(!c.kill.is_set());
        ps.publish(b"ch", &payload, limit, 12_000, false);
        assert!(c.kill.is_set());
    }

    #[test]
    fn resp3_subscribers_get_push_frames() {
        let mut ps = PubSub::default();
        let (c, mut rx) = client(1);
        c.resp.store(3, Ordering::Relaxed);
        ps.subscribe(&c, Kind::Shard, &Bytes::from_static(b"s"));
        assert_eq!(ps.spublish(b"s", b"m", NO_LIMIT, 0, false), 1);
        assert_eq!(ps.publish(b"s", b"m", NO_LIMIT, 0, false), 0);
        assert_eq!(received(&mut rx), vec![Bytes::from_static(b">3\r\n$8\r\nsmessage\r\n$1\r\ns\r\n$1\r\nm\r\n")]);
    }
}
