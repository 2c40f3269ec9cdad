//! What the group reads of, and does to, the servers of this process (the
//! only file of the Sentinel that touches them): it looks at them
//! ([`look`]: who is down, each primary's links, whom it follows), hands
//! that to the state machine (`failover.rs`) and carries out the steps it
//! returns — publishing events, promoting a replica, converting an old
//! primary. [`watch`] checks every 20 ms and whenever a node goes down or
//! comes back, so the outcome never depends on a timer race; [`failover`]
//! is `SENTINEL FAILOVER`. The commands read the replicas here too
//! ([`replicas`]).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::failover::{self, Act, Down, Link, Node, Seen, Step, NO_GOOD_SLAVE};
use super::group::Group;
use crate::core::Shared;
use crate::replication::{down, registry};
use crate::server::replication as repl;

fn find(addr: SocketAddr) -> Option<Arc<Shared>> {
    repl::find(&addr.ip().to_string(), addr.port())
}

/// True while the node on `addr` is down.
pub(super) fn is_down(addr: SocketAddr) -> bool {
    down::down(addr).is_some()
}

/// The run id of the server on `addr` (empty if there is none).
pub(super) fn run_id(addr: SocketAddr) -> String {
    find(addr).map(|p| p.run_id.clone()).unwrap_or_default()
}

/// What the group sees now of its primaries, their replicas and its old
/// primaries (each server's lock taken in turn, one at a time).
pub(super) async fn look(group: &Group) -> Seen {
    let (primaries, olds): (Vec<SocketAddr>, Vec<SocketAddr>) = {
        let st = group.state.lock();
        (st.masters.iter().map(|m| m.addr).collect(), st.demoted.iter().map(|d| d.old).collect())
    };
    let mut seen = Seen::default();
    let mut looked_at = Vec::new();
    for &addr in &primaries {
        looked_at.push(addr);
        if seen.node(addr).is_some() {
            continue;
        }
        let Some(p) = find(addr) else { continue };
        let (links, follows) = {
            let core = p.core.lock().await;
            (core.repl.replicas.clone(), core.repl.master.as_ref().map(|m| (m.host.clone(), m.port)))
        };
        let links: Vec<Link> = links
            .iter()
            .map(|l| Link {
                replica: l.replica,
                acked: l.acked.load(Ordering::Acquire),
                online: l.is_online(),
                closed: l.closed.load(Ordering::Acquire),
                known: find(l.replica).is_some(),
            })
            .collect();
        looked_at.extend(links.iter().map(|l| l.replica));
        let follows = follows.and_then(|(host, port)| registry::resolve(&host, port));
        seen.nodes.push((addr, Node { links, follows }));
    }
    for &old in &olds {
        looked_at.push(old);
        if seen.node(old).is_none() && find(old).is_some() {
            seen.nodes.push((old, Node::default()));
        }
    }
    for addr in looked_at {
        if let Some((since, at_once)) = down::down(addr) {
            if seen.down(addr).is_none() {
                seen.down.push((addr, Down { since, at_once }));
            }
        }
    }
    seen.any_down = down::any_down();
    seen
}

/// One check of the servers (the caller holds the failover lock): looks,
/// lets the machine decide, carries it out, and looks again after each
/// promotion.
async fn check(group: &Group) {
    loop {
        let seen = look(group).await;
        let steps = failover::check(&mut group.state.lock(), Instant::now(), &seen);
        match carry_out(group, steps).await {
            None => return,
            Some((master, Err(e))) => tracing::warn!("automatic failover of {master} failed: {e}"),
            Some((_, Ok(()))) => {}
        }
    }
}

/// Publishes and performs `steps` in order. An awaited act (the last
/// step) has its outcome reported to the machine, whose events follow;
/// returns that outcome, with the primary's name.
async fn carry_out(group: &Group, steps: Vec<Step>) -> Option<(String, Result<(), String>)> {
    for step in steps {
        let (master, primary, outcome) = match step {
            Step::Event(e) => {
                group.publish(e);
                continue;
            }
            Step::Do(Act::Follow { old, new }) => {
                if let Some(node) = find(old) {
                    repl::follow(&node, new).await;
                }
                continue;
            }
            Step::Do(Act::Promote { master, primary, port }) => {
                let outcome = match find(primary) {
                    Some(p) => repl::promote_replica(&p, Some(port), true).await,
                    None => Err(NO_GOOD_SLAVE.to_string()),
                };
                (master, primary, outcome)
            }
            Step::Do(Act::HandOver { master, primary, port }) => {
                let outcome = match find(primary) {
                    Some(p) => repl::failover(&p, Some(port)).await,
                    None => Err(NO_GOOD_SLAVE.to_string()),
                };
                (master, primary, outcome)
            }
        };
        let after = failover::promoted(&mut group.state.lock(), &master, outcome, is_down(primary));
        let done = after.map(|events| events.into_iter().for_each(|e| group.publish(e)));
        return Some((master, done));
    }
    None
}

/// `SENTINEL FAILOVER name`, as Sentinel performs it, with its events (see
/// the module docs); answers once it is done.
pub(super) async fn failover(group: &Group, name: &[u8]) -> Result<(), String> {
    let Ok(_one) = group.failing_over.try_lock() else {
        return Err("INPROGRESS Failover already in progress".into());
    };
    let seen = look(group).await;
    let steps = failover::manual(&mut group.state.lock(), name, &seen)?;
    carry_out(group, steps).await.map_or(Ok(()), |(_, outcome)| outcome)
}

/// Follows the servers (see the module docs) until `shutdown`.
pub(super) async fn watch(group: Arc<Group>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => return,
            _ = down::CHANGED.notified() => {}
            _ = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
        }
        let Ok(_one) = group.failing_over.try_lock() else { continue };
        check(&group).await;
    }
}

/// A replica as a Sentinel reports it.
pub(super) struct ReplicaInfo {
    pub addr: SocketAddr,
    pub run_id: String,
    pub offset: u64,
    pub link_up: bool,
    pub priority: String,
}

/// The replicas the primary on `addr` has now (read from the primary,
/// then each replica, one lock at a time).
pub(super) async fn replicas(addr: SocketAddr) -> Vec<ReplicaInfo> {
    let Some(primary) = find(addr) else { return Vec::new() };
    let links = primary.core.lock().await.repl.replicas.clone();
    let mut out = Vec::new();
    for l in links.iter().filter(|l| !l.closed.load(Ordering::Acquire)) {
        let Some(node) = find(l.replica) else { continue };
        let priority = node.core.lock().await.config.replica_priority.to_string();
        out.push(ReplicaInfo {
            addr: l.replica,
            run_id: node.run_id.clone(),
            offset: l.acked.load(Ordering::Acquire),
            link_up: l.is_online(),
            priority,
        });
    }
    out
}
