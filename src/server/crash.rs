//! Test control's crash of a node (`RLOCKD REPL CRASH`, `REVIVE`;
//! [`Server::crash`](super::Server::crash), [`Server::revive`](super::Server::revive)):
//! the node goes down as a killed redis-server does — its port refuses
//! connections, its clients are cut, what its replicas had not received yet
//! is lost, their links go down (`master_link_status:down`) — while its
//! state stays in memory for its return, as after a restart from a
//! snapshot. Brought back, it listens on the same address again; its links
//! come back up (a replica that missed writes resynchronises). The nodes
//! down are `replication::down`'s list, which the Sentinels read.
//! `cmd/crash.rs` is the command; it asks for the change through
//! `ServerIo::change_node`, which runs [`change`] on the event loop.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::core::Shared;
use crate::protocol::Reply;
use crate::replication::down::{self, Change};

/// Crashes the node of `shared` (see the module docs).
pub(crate) async fn crash(shared: &Arc<Shared>, at_once: bool) -> Result<(), String> {
    let addr = *shared.local_addr.lock();
    let mut core = shared.core.lock().await;
    let node: Arc<dyn std::any::Any + Send + Sync> = shared.clone();
    if !down::mark_down(addr, Arc::downgrade(&node), at_once) {
        return Err(format!("the node on port {} is already down", addr.port()));
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
    down::CHANGED.notify_waiters();
    Ok(())
}

/// Brings the crashed node of `shared` back on its address.
pub(crate) async fn revive(shared: &Arc<Shared>) -> Result<(), String> {
    let addr = *shared.local_addr.lock();
    let core = shared.core.lock().await;
    if down::down(addr).is_none() {
        return Err(format!("the node on port {} is not down", addr.port()));
    }
    if let Some(io) = shared.io.get() {
        let backlog = core.config.tcp_backlog;
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
    down::mark_up(addr);
    drop(core);
    tracing::warn!("{addr} is back (test control)");
    down::CHANGED.notify_waiters();
    Ok(())
}

/// Carries out `change` on `target`, then answers the client blocked on
/// `waiter` of `caller`'s server, if any.
pub(crate) async fn change(caller: Option<Arc<Shared>>, target: Arc<Shared>, change: Change, waiter: Option<u64>) {
    let result = match change {
        Change::Crash { at_once } => crash(&target, at_once).await,
        Change::Revive => revive(&target).await,
    };
    if let (Some(w), Some(caller)) = (waiter, caller) {
        let reply = match result {
            Ok(()) => Reply::ok(),
            Err(e) => Reply::error(format!("ERR {e}")),
        };
        caller.core.lock().await.blocking.serve(w, reply);
    }
}

impl super::Server {
    /// Crashes this node as a killed redis-server: its port refuses
    /// connections, its clients are cut, what its replicas had not received
    /// is lost and their links go down. Sentinels watching it flag it down
    /// after their `down-after-milliseconds` — at once with `noticed_at_once`
    /// — and fail over. Its state stays for [`revive`](Self::revive).
    ///
    /// ```no_run
    /// let nodes = rlockd::Server::start_with_replicas(1, rlockd::Config::default()).unwrap();
    /// let ip = "127.0.0.1".parse().unwrap();
    /// let sentinels = rlockd::Sentinel::start_group(ip, &[0], &[("mymaster", nodes[0].addr())], 1).unwrap();
    /// nodes[0].crash(true).unwrap();
    /// let new = sentinels[0].wait_for_master("mymaster", nodes[1].addr(), std::time::Duration::from_secs(10));
    /// assert!(new);
    /// nodes[0].revive().unwrap(); // it comes back as the new primary's replica
    /// ```
    pub fn crash(&self, noticed_at_once: bool) -> Result<(), crate::error::Error> {
        let shared = self.shared.clone();
        on_own_runtime(async move { crash(&shared, noticed_at_once).await }).map_err(crate::error::Error::Topology)
    }

    /// Brings this crashed node back on its address (see
    /// [`crash`](Self::crash)).
    pub fn revive(&self) -> Result<(), crate::error::Error> {
        let shared = self.shared.clone();
        on_own_runtime(async move { revive(&shared).await }).map_err(crate::error::Error::Topology)
    }
}

/// Runs `f` on a runtime of its own, on a helper thread (also inside
/// `#[tokio::test]`).
fn on_own_runtime<R: Send>(f: impl std::future::Future<Output = R> + Send) -> R {
    std::thread::scope(|s| {
        s.spawn(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(f))
            .join()
            .expect("crash control")
    })
}
