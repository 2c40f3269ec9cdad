//! The rlockd nodes of this process, by address: where `REPLICAOF host
//! port` and a Sentinel find the node they name.
//!
//! Between nodes of one process a link is a queue between two keyspaces,
//! not a socket; `REPLICAOF` to an address no node of this process listens
//! on replicates over TCP instead (`server/replication/tcp.rs`). The entries
//! are type-erased (this module sits below the server state); the server
//! layer downcasts them.

use std::any::Any;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Weak};

type Entry = (SocketAddr, Weak<dyn Any + Send + Sync>);

static NODES: parking_lot::Mutex<Vec<Entry>> = parking_lot::Mutex::new(Vec::new());

/// Registers a node listening on `addr`.
pub fn register(addr: SocketAddr, node: Weak<dyn Any + Send + Sync>) {
    let mut nodes = NODES.lock();
    nodes.retain(|(_, w)| w.strong_count() > 0);
    nodes.push((addr, node));
}

/// The address `host port` means (`localhost` and names resolve).
pub fn resolve(host: &str, port: u16) -> Option<SocketAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(SocketAddr::new(ip, port));
    }
    (host, port).to_socket_addrs().ok()?.find(|a| a.is_ipv4()).or_else(|| (host, port).to_socket_addrs().ok()?.next())
}

fn matches(listening: SocketAddr, wanted: SocketAddr) -> bool {
    if listening.port() != wanted.port() {
        return false;
    }
    let (l, w) = (listening.ip(), wanted.ip());
    l == w || l.is_unspecified() && (w.is_loopback() || w == IpAddr::V4(Ipv4Addr::UNSPECIFIED))
}

/// The node listening on `host port`, if it is one of this process's.
pub fn find(host: &str, port: u16) -> Option<Arc<dyn Any + Send + Sync>> {
    let wanted = resolve(host, port)?;
    let nodes = NODES.lock();
    nodes.iter().filter(|(a, _)| matches(*a, wanted)).find_map(|(_, w)| w.upgrade())
}
