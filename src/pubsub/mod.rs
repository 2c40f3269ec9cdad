//! Pub/sub: channels, patterns, shard channels, and delivery.
//!
//! Publishing happens under the core lock, so every subscriber sees messages
//! in one global publish order. A message is encoded once per protocol
//! version and the same bytes are queued to every subscriber's outbound
//! channel; the subscriber's connection writes them. A subscriber that stops
//! reading is cut off at `client-output-buffer-limit pubsub` without slowing
//! the publisher.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use indexmap::{IndexMap, IndexSet};

use crate::cmd::Ctx;
use crate::config::BufferLimit;
use crate::db::{notify, KeyEvent, Map};
use crate::glob;
use crate::protocol::{Reply, Resp};
use crate::server::client::ClientShared;

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

/// Queues `msg` to `c`, enforcing the pub/sub output buffer limits.
fn deliver(c: &ClientShared, msg: Bytes, limit: BufferLimit, now_ms: u64) {
    if c.killed.load(Ordering::Relaxed) {
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

    /// Publishes to channel subscribers and matching patterns. Returns the
    /// number of receivers.
    pub fn publish(&mut self, channel: &[u8], message: &[u8], limit: BufferLimit, now_ms: u64) -> usize {
        let mut n = 0;
        if let Some(subs) = self.channels.get(channel) {
            let parts: [&[u8]; 3] = [b"message", channel, message];
            let mut enc = Encoded::new(&parts);
            for c in subs.values() {
                deliver(c, enc.get(c.resp()), limit, now_ms);
                n += 1;
            }
        }
        for (pat, subs) in &self.patterns {
            if !glob::matches(pat, channel, false) {
                continue;
            }
            let parts: [&[u8]; 4] = [b"pmessage", pat, channel, message];
            let mut enc = Encoded::new(&parts);
            for c in subs.values() {
                deliver(c, enc.get(c.resp()), limit, now_ms);
                n += 1;
            }
        }
        self.published += 1;
        n
    }

    /// Publishes to shard-channel subscribers (`SPUBLISH`).
    pub fn spublish(&mut self, channel: &[u8], message: &[u8], limit: BufferLimit, now_ms: u64) -> usize {
        let mut n = 0;
        if let Some(subs) = self.shard.get(channel) {
            let parts: [&[u8]; 3] = [b"smessage", channel, message];
            let mut enc = Encoded::new(&parts);
            for c in subs.values() {
                deliver(c, enc.get(c.resp()), limit, now_ms);
                n += 1;
            }
        }
        self.published += 1;
        n
    }

    /// Publishes a keyspace notification.
    pub fn keyspace_event(&mut self, _clients: &Map<u64, Arc<ClientShared>>, ev: &KeyEvent, flags: u32) {
        if self.channels.is_empty() && self.patterns.is_empty() {
            return;
        }
        let limit = BufferLimit { hard: 0, soft: 0, soft_secs: 0 };
        if flags & notify::KEYSPACE != 0 {
            let mut ch = format!("__keyspace@{}__:", ev.db).into_bytes();
            ch.extend_from_slice(&ev.key);
            self.publish(&ch, ev.event.as_bytes(), limit, 0);
        }
        if flags & notify::KEYEVENT != 0 {
            let ch = format!("__keyevent@{}__:{}", ev.db, ev.event);
            self.publish(ch.as_bytes(), &ev.key, limit, 0);
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
        if !set.insert(name.clone()) {
            return false;
        }
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

fn subs_empty(s: Option<&ClientSubs>) -> bool {
    s.is_none_or(|s| s.channels.is_empty() && s.patterns.is_empty() && s.shard.is_empty())
}

/// RESET: leaves every subscription without sending confirmations.
pub fn unsubscribe_all(ctx: &mut Ctx<'_>) {
    let shared = ctx.client.shared.clone();
    ctx.core.pubsub.remove_client(&shared);
}
