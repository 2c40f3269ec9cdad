//! Test control's crash of a node (`RLOCKD REPL CRASH`, `REVIVE`;
//! `Server::crash`, `Server::revive`): the node goes down as a killed
//! redis-server does — its port refuses connections, its clients are cut,
//! what its replicas had not received yet is lost, their links go down
//! (`master_link_status:down`) — while its state stays in memory for its
//! return, as after a restart from a snapshot. Brought back, it listens on
//! the same address again; its links come back up (a replica that missed
//! writes resynchronises).
//!
//! The nodes down are the process's [`down`] list, which the Sentinels read
//! as "no reply to PING since": they flag the primary `+sdown` once that is
//! older than its `down-after-milliseconds`, fail over, and convert the old
//! primary into a replica when it is back (`sentinel/mod.rs`). A crash made
//! with `NOW` counts as down for longer than any `down-after-milliseconds`,
//! so the Sentinels act at their next check.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::util::eq;
use super::Ctx;
use crate::core::Shared;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

/// A node down: its address, the node (an entry whose server is gone, as
/// when a test ends with its node down, no longer counts), since when, and
/// whether the Sentinels are to notice it at once.
#[derive(Debug, Clone)]
struct Down {
    addr: SocketAddr,
    node: std::sync::Weak<Shared>,
    since: Instant,
    at_once: bool,
}

static DOWN: parking_lot::Mutex<Vec<Down>> = parking_lot::Mutex::new(Vec::new());

/// Woken whenever a node goes down or comes back (the Sentinels wait on it
/// between their checks).
pub(crate) static CHANGED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Since when the node on `addr` is down (`None`: it is up); `true` with a
/// crash to be noticed at once.
pub(crate) fn down(addr: SocketAddr) -> Option<(Instant, bool)> {
    let mut down = DOWN.lock();
    down.retain(|d| d.node.strong_count() > 0);
    down.iter().find(|d| d.addr == addr).map(|d| (d.since, d.at_once))
}

/// True while some node of the process is down.
pub(crate) fn any_down() -> bool {
    let mut down = DOWN.lock();
    down.retain(|d| d.node.strong_count() > 0);
    !down.is_empty()
}

/// Crashes the node of `shared` (see the module docs).
pub(crate) async fn crash(shared: &Arc<Shared>, at_once: bool) -> Result<(), String> {
    let addr = *shared.local_addr.lock();
    let mut core = shared.core.lock().await;
    {
        if down(addr).is_some() {
            return Err(format!("the node on port {} is already down", addr.port()));
        }
        DOWN.lock().push(Down { addr, node: Arc::downgrade(shared), since: Instant::now(), at_once });
    }
    if let Some(io) = shared.io.get() {
        io.stop_listening();
    }
    let mut lost = 0;
    for l in &core.repl.replicas {
        lost += l.drop_pending();
        l.broken.store(true, Ordering::Release);
        l.to_replica.notify_one();
        l.to_primary.notify_one();
    }
    if let Some(l) = core.repl.master.as_ref().and_then(|m| m.link.as_ref()) {
        l.broken.store(true, Ordering::Release);
        l.to_primary.notify_one();
    }
    let cut = crate::control::kill_clients(&core.clients, &crate::control::faults::Scope::default(), 0);
    core.after_command();
    drop(core);
    tracing::warn!("{addr} crashed (test control): {cut} client(s) cut, {lost} write(s) its replicas never received");
    CHANGED.notify_waiters();
    Ok(())
}

/// Brings the crashed node of `shared` back on its address.
pub(crate) async fn revive(shared: &Arc<Shared>) -> Result<(), String> {
    let addr = *shared.local_addr.lock();
    let core = shared.core.lock().await;
    if down(addr).is_none() {
        return Err(format!("the node on port {} is not down", addr.port()));
    }
    if let Some(io) = shared.io.get() {
        let backlog = core.config.get_str("tcp-backlog").parse().unwrap_or(511);
        let ip = addr.ip().to_string();
        io.relisten(&ip, addr.port(), &ip, addr.port(), backlog)
            .map_err(|e| format!("cannot listen on {addr} again: {e}"))?;
    }
    let master_link = core.repl.master.as_ref().and_then(|m| m.link.clone());
    for l in core.repl.replicas.iter().chain(master_link.iter()) {
        l.broken.store(false, Ordering::Release);
        l.to_replica.notify_one();
        l.to_primary.notify_one();
    }
    core.repl.wake.notify_one();
    DOWN.lock().retain(|d| d.addr != addr);
    drop(core);
    tracing::warn!("{addr} is back (test control)");
    CHANGED.notify_waiters();
    Ok(())
}

/// Help lines (appended to `RLOCKD HELP` with the other `REPL` lines).
pub(crate) const HELP: &[&str] = &[
    "REPL CRASH [<port>] [NOW]",
    "    Crash the node on <port> of this process (default: this one): port closed, clients cut, unreplicated writes lost. NOW: the Sentinels notice at once.",
    "REPL REVIVE <port>",
    "    Bring a crashed node of this process back on its address.",
];

/// `RLOCKD REPL CRASH|REVIVE …` (`args` after `REPL`); `None` for another
/// subcommand.
pub(crate) fn control(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Option<CmdResult> {
    let op = args.first()?;
    let crashing = eq(op, "crash");
    if !crashing && !eq(op, "revive") {
        return None;
    }
    Some(run(ctx, args, crashing))
}

fn run(ctx: &mut Ctx<'_>, args: &[Bytes], crashing: bool) -> CmdResult {
    let me = *ctx.shared.local_addr.lock();
    let mut rest = &args[1..];
    let at_once = crashing && rest.last().is_some_and(|a| eq(a, "now"));
    if at_once {
        rest = &rest[..rest.len() - 1];
    }
    let port = match rest {
        [] if crashing => me.port(),
        [p] => match crate::num::parse_i64_strict(p) {
            Some(p) if (1..=65535).contains(&p) => p as u16,
            _ => return Err(CmdError::custom("ERR invalid port")),
        },
        _ => return Err(CmdError::Syntax),
    };
    let node = |port: u16| {
        crate::replication::registry::find(&me.ip().to_string(), port).and_then(|n| n.downcast::<Shared>().ok())
    };
    let target = node(port)
        .ok_or_else(|| CmdError::custom(format!("ERR no rlockd node of this process listens on port {port}")))?;
    let caller = node(me.port());
    let target_addr = SocketAddr::new(me.ip(), port);
    if crashing == down(*target.local_addr.lock()).is_some() {
        let state = if crashing { "already down" } else { "not down" };
        return Err(CmdError::custom(format!("ERR the node on port {} is {state}", target_addr.port())));
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return Err(CmdError::custom("ERR this server has no event loop to crash"));
    };
    let waiter = (ctx.client.may_block() && caller.is_some())
        .then(|| super::blocking::block_until_answered(ctx, "ERR the crash did not finish"));
    runtime.spawn(async move {
        let result = if crashing { crash(&target, at_once).await } else { revive(&target).await };
        if let (Some(w), Some(caller)) = (waiter, caller) {
            let reply = match result {
                Ok(()) => Reply::ok(),
                Err(e) => Reply::error(format!("ERR {e}")),
            };
            caller.core.lock().await.blocking.serve(w, reply);
        }
    });
    Ok(if waiter.is_some() { Reply::Nil } else { Reply::ok() })
}
