//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN…).
//!
//! This is the store; the commands' side is in `cmd::blocking`. A blocking
//! command that finds nothing to pop registers a waiter here under the core
//! lock and sets `ClientState::block`; the connection then waits for the
//! reply, the timeout, `CLIENT UNBLOCK`, or the client going away.
//!
//! Writes that touch a key with waiters mark it ready. After the command
//! (at nesting depth 0), `cmd::blocking::serve_ready` re-runs each waiter's own command,
//! first come first served, in non-blocking mode and under the same lock:
//! one implementation of each pop, whether it runs at once or later. A
//! re-run that finds nothing (nil) leaves the waiter blocked; a
//! `WRONGTYPE` keeps it blocked too (Redis 7.0 only serves matching types).
//! The one exception: an `XREADGROUP` whose key no longer holds a stream
//! is answered `-UNBLOCKED` (its group went with the stream). The serve
//! also runs after active expiry and control commands.
//!
//! Statistics follow Redis 7.0: a blocking command counts one call when it
//! blocks; the re-run that serves it adds time, failure and error counts,
//! a latency sample and the slowlog entry, never a second call.
//!
//! **Invariant:** a waiter is registered in `waiters`, in `by_client` and
//! under each of its keys in `by_key`, or in none of them.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::client::ClientShared;
use crate::db::Key;
use crate::protocol::{Reply, Resp};

/// One blocked client.
#[derive(Debug)]
pub struct Waiter {
    pub client: Arc<ClientShared>,
    pub db: usize,
    pub resp: Resp,
    pub argv: Vec<Bytes>,
    pub keys: Vec<Bytes>,
    pub timeout_reply: Reply,
    pub tx: Option<oneshot::Sender<Reply>>,
}

/// Registered waiters.
#[derive(Debug, Default)]
pub struct Blocking {
    pub waiters: HashMap<u64, Waiter>,
    /// `(db, key)` → waiter ids in arrival order.
    pub by_key: HashMap<(usize, Key), VecDeque<u64>>,
    /// Client id → its waiter id.
    pub by_client: HashMap<u64, u64>,
    /// Keys touched since the last serve that have waiters.
    pub ready: VecDeque<(usize, Key)>,
    next_id: u64,
    serving: bool,
}

impl Blocking {
    pub fn is_active(&self) -> bool {
        !self.by_key.is_empty()
    }

    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Notes touched keys that have waiters.
    pub fn on_touched(&mut self, touched: &[(usize, Key)]) {
        if self.by_key.is_empty() {
            return;
        }
        for k in touched {
            if self.by_key.contains_key(k) && !self.ready.contains(k) {
                self.ready.push_back(k.clone());
            }
        }
    }

    /// Removes waiter `id` everywhere; returns it.
    pub fn remove(&mut self, id: u64) -> Option<Waiter> {
        let w = self.waiters.remove(&id)?;
        self.by_client.remove(&w.client.id);
        for k in &w.keys {
            let key = (w.db, Key::new(k));
            if let Some(q) = self.by_key.get_mut(&key) {
                q.retain(|x| *x != id);
                if q.is_empty() {
                    self.by_key.remove(&key);
                }
            }
        }
        Some(w)
    }

    /// Registers a waiter for client `client` on `keys` (duplicates
    /// dropped) of `db`; returns the waiter id and the receiver of its reply.
    pub fn add_waiter(
        &mut self,
        client: Arc<ClientShared>,
        db: usize,
        resp: Resp,
        argv: Vec<Bytes>,
        keys: &[Bytes],
        timeout_reply: Reply,
    ) -> (u64, oneshot::Receiver<Reply>) {
        self.next_id += 1;
        let id = self.next_id;
        let (tx, rx) = oneshot::channel();
        let mut uniq: Vec<Bytes> = Vec::with_capacity(keys.len());
        for k in keys {
            if !uniq.contains(k) {
                uniq.push(k.clone());
            }
        }
        for k in &uniq {
            self.by_key.entry((db, Key::new(k))).or_default().push_back(id);
        }
        self.by_client.insert(client.id, id);
        self.waiters.insert(id, Waiter { client, db, resp, argv, keys: uniq, timeout_reply, tx: Some(tx) });
        (id, rx)
    }

    /// Starts serving ready keys; false if a serve is already under way
    /// (a re-run command touched keys again).
    pub fn begin_serving(&mut self) -> bool {
        !std::mem::replace(&mut self.serving, true)
    }

    /// Ends what [`Blocking::begin_serving`] started.
    pub fn end_serving(&mut self) {
        self.serving = false;
    }

    /// Hands waiter `id` its reply and forgets it.
    /// Moves waiter `id` to the back of each of its keys' queues: Redis
    /// 7.2 unblocks a waiter to re-run its command, and one that finds
    /// nothing blocks again behind the others.
    pub fn requeue(&mut self, id: u64) {
        let Some(w) = self.waiters.get(&id) else {
            return;
        };
        for k in &w.keys {
            if let Some(q) = self.by_key.get_mut(&(w.db, Key::new(k))) {
                q.retain(|x| *x != id);
                q.push_back(id);
            }
        }
    }

    pub fn serve(&mut self, id: u64, reply: Reply) {
        if let Some(mut w) = self.remove(id) {
            if let Some(tx) = w.tx.take() {
                let _ = tx.send(reply);
            }
        }
    }

    /// Re-checks waiters after SWAPDB (their keys may now hold data).
    pub fn on_swapdb(&mut self, a: usize, b: usize) {
        let keys: Vec<(usize, Key)> = self.by_key.keys().filter(|(db, _)| *db == a || *db == b).cloned().collect();
        self.ready.extend(keys);
    }

    /// `CLIENT UNBLOCK`: answers the client's waiter `reply`, or its timeout
    /// reply if None. Returns the waiter's arguments, None if the client was
    /// not blocked.
    pub fn unblock_client(&mut self, client_id: u64, reply: Option<Reply>) -> Option<Vec<Bytes>> {
        let id = *self.by_client.get(&client_id)?;
        let mut w = self.remove(id)?;
        let reply = reply.unwrap_or_else(|| std::mem::replace(&mut w.timeout_reply, Reply::Nil));
        if let Some(tx) = w.tx.take() {
            let _ = tx.send(reply);
        }
        Some(w.argv)
    }

    /// Removes every waiter of a disconnected client.
    pub fn remove_client(&mut self, client_id: u64) {
        if let Some(&id) = self.by_client.get(&client_id) {
            self.remove(id);
        }
    }

    /// Gives up waiter `id` (timeout or disconnect). Returns the timeout reply
    /// if it was still blocked, `None` if it had been served meanwhile (the
    /// reply is then in the receiver).
    pub fn cancel(&mut self, id: u64) -> Option<Reply> {
        self.remove(id).map(|w| w.timeout_reply)
    }
}
