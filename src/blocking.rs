//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN…).
//!
//! A blocking command that finds nothing to pop calls [`block_on_keys`]:
//! it registers a waiter under the core lock and sets
//! `ClientState::block`; the connection then waits for the reply, the
//! timeout, `CLIENT UNBLOCK`, or the client going away.
//!
//! Writes that touch a key with waiters mark it ready. After the command
//! (at nesting depth 0), [`serve_ready`] re-runs each waiter's own command,
//! first come first served, in non-blocking mode and under the same lock:
//! one implementation of each pop, whether it runs at once or later. A
//! re-run that finds nothing (nil) leaves the waiter blocked; a
//! `WRONGTYPE` keeps it blocked too (Redis 7.0 only serves matching types).
//!
//! **Invariant:** a waiter is registered in `waiters`, in `by_client` and
//! under each of its keys in `by_key`, or in none of them.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::cmd::{self, Ctx, Lookup};
use crate::core::Core;
use crate::error::CmdResult;
use crate::protocol::{Reply, Resp};
use crate::server::client::{ClientShared, ClientState};

/// What a connection awaits after a blocking command registered a waiter.
#[derive(Debug)]
pub struct BlockRequest {
    pub waiter: u64,
    pub rx: oneshot::Receiver<Reply>,
    /// Timeout deadline on the server's clock (unix ms).
    pub deadline: Option<u64>,
}

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
    pub by_key: HashMap<(usize, Bytes), VecDeque<u64>>,
    /// Client id → its waiter id.
    pub by_client: HashMap<u64, u64>,
    /// Keys touched since the last serve that have waiters.
    pub ready: VecDeque<(usize, Bytes)>,
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
    pub fn on_touched(&mut self, touched: &[(usize, Bytes)]) {
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
            let key = (w.db, k.clone());
            if let Some(q) = self.by_key.get_mut(&key) {
                q.retain(|x| *x != id);
                if q.is_empty() {
                    self.by_key.remove(&key);
                }
            }
        }
        Some(w)
    }
}

/// True if the running command may block (not inside a script, `EXEC`, or
/// the re-run of a waiter).
pub fn can_block(ctx: &Ctx<'_>) -> bool {
    !ctx.client.is_script() && !ctx.client.in_exec && !ctx.client.no_block
}

/// Blocks the calling client on `keys` (in the client's database) for
/// `timeout_secs` (0 = forever). `timeout_reply` is sent if it times out.
/// The returned reply is a placeholder the connection does not send.
pub fn block_on_keys(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    keys: &[Bytes],
    timeout_secs: f64,
    timeout_reply: Reply,
) -> CmdResult {
    let b = &mut ctx.core.blocking;
    b.next_id += 1;
    let id = b.next_id;
    let (tx, rx) = oneshot::channel();
    let db = ctx.client.db;
    let mut uniq: Vec<Bytes> = Vec::with_capacity(keys.len());
    for k in keys {
        if !uniq.contains(k) {
            uniq.push(k.clone());
        }
    }
    for k in &uniq {
        b.by_key.entry((db, k.clone())).or_default().push_back(id);
    }
    b.by_client.insert(ctx.client.id, id);
    b.waiters.insert(
        id,
        Waiter {
            client: ctx.client.shared.clone(),
            db,
            resp: ctx.client.resp,
            argv: argv.to_vec(),
            keys: uniq,
            timeout_reply,
            tx: Some(tx),
        },
    );
    ctx.core.ks.sig.track_touches = true;
    let deadline = (timeout_secs > 0.0).then(|| ctx.shared.clock.now_ms() + (timeout_secs * 1000.0) as u64);
    ctx.client.block = Some(BlockRequest { waiter: id, rx, deadline });
    Ok(Reply::Nil)
}

/// Serves waiters of ready keys (called by dispatch after a top-level command).
pub fn serve_ready(ctx: &mut Ctx<'_>) {
    if ctx.core.blocking.serving {
        return;
    }
    ctx.core.blocking.serving = true;
    while let Some(key) = ctx.core.blocking.ready.pop_front() {
        while let Some(&id) = ctx.core.blocking.by_key.get(&key).and_then(|q| q.front()) {
            let (client, db, resp, argv) = {
                let w = &ctx.core.blocking.waiters[&id];
                (w.client.clone(), w.db, w.resp, w.argv.clone())
            };
            // Redis serves a waiter from the key that became ready, and only
            // if it holds the type the command pops from; then any error
            // (a BLMOVE destination of the wrong type) is the answer.
            let wants = if argv[0].len() > 2 && argv[0][..2].eq_ignore_ascii_case(b"bz") { "zset" } else { "list" };
            let type_ok = ctx.core.ks.dbs[key.0].map.get(&key.1[..]).is_some_and(|e| e.value.type_name() == wants);
            if !type_ok {
                break;
            }
            let argv = narrow_to_key(argv, &key.1);
            let Lookup::Found(c) = cmd::table().lookup(&argv) else {
                break;
            };
            let mut state = ClientState::new(client, true);
            state.db = db;
            state.resp = resp;
            state.no_block = true;
            let reply = {
                let mut sub = Ctx { core: ctx.core, client: &mut state, shared: ctx.shared };
                cmd::call(&mut sub, c, &argv)
            };
            let nothing = matches!(reply, Reply::Nil | Reply::NilArray);
            if nothing {
                break;
            }
            if let Some(mut w) = ctx.core.blocking.remove(id) {
                if let Some(tx) = w.tx.take() {
                    let _ = tx.send(reply);
                }
            }
        }
    }
    ctx.core.blocking.serving = false;
    ctx.core.ks.sig.track_touches = ctx.core.watches.is_active() || ctx.core.blocking.is_active();
}

/// A blocked command's arguments with its keys narrowed to `key`, the one
/// that became ready (`BLPOP a b 0` → `BLPOP b 0`; `BLMPOP 0 2 a b LEFT` →
/// `BLMPOP 0 1 b LEFT`): the re-run pops from that key, as Redis does.
fn narrow_to_key(argv: Vec<Bytes>, key: &Bytes) -> Vec<Bytes> {
    let name = argv[0].to_ascii_lowercase();
    match &name[..] {
        b"blpop" | b"brpop" | b"bzpopmin" | b"bzpopmax" => {
            vec![argv[0].clone(), key.clone(), argv[argv.len() - 1].clone()]
        }
        b"blmpop" | b"bzmpop" => {
            let numkeys = std::str::from_utf8(&argv[2]).ok().and_then(|n| n.parse::<usize>().ok());
            match numkeys {
                Some(n) if 3 + n <= argv.len() => {
                    let mut v = vec![argv[0].clone(), argv[1].clone(), Bytes::from_static(b"1"), key.clone()];
                    v.extend_from_slice(&argv[3 + n..]);
                    v
                }
                _ => argv,
            }
        }
        _ => argv,
    }
}

/// Re-checks waiters after SWAPDB (their keys may now hold data).
pub fn on_swapdb(core: &mut Core, a: usize, b: usize) {
    let keys: Vec<(usize, Bytes)> =
        core.blocking.by_key.keys().filter(|(db, _)| *db == a || *db == b).cloned().collect();
    core.blocking.ready.extend(keys);
}

/// `CLIENT UNBLOCK`: true if the client was blocked.
pub fn unblock_client(core: &mut Core, client_id: u64, with_error: bool) -> bool {
    let Some(&id) = core.blocking.by_client.get(&client_id) else {
        return false;
    };
    let Some(mut w) = core.blocking.remove(id) else {
        return false;
    };
    let reply = if with_error {
        Reply::error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
    } else {
        std::mem::replace(&mut w.timeout_reply, Reply::Nil)
    };
    if let Some(tx) = w.tx.take() {
        let _ = tx.send(reply);
    }
    true
}

/// Removes every waiter of a disconnected client.
pub fn remove_client(core: &mut Core, client_id: u64) {
    if let Some(&id) = core.blocking.by_client.get(&client_id) {
        core.blocking.remove(id);
    }
}

/// Gives up waiter `id` (timeout or disconnect). Returns the timeout reply
/// if it was still blocked, `None` if it had been served meanwhile (the
/// reply is then in the receiver).
pub fn cancel(core: &mut Core, id: u64) -> Option<Reply> {
    core.blocking.remove(id).map(|w| w.timeout_reply)
}
