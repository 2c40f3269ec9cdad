//! The nodes of this process that test control crashed (`RLOCKD REPL
//! CRASH`, `Server::crash`; brought back by `REVIVE`, `Server::revive`),
//! beside the registry of nodes ([`super::registry`]) and process-wide like
//! it. The Sentinels read it as "no reply to PING since": they flag a
//! primary `+sdown` once that is older than its `down-after-milliseconds`,
//! fail over, and convert the old primary into a replica when it is back
//! (`sentinel/failover.rs`). A crash noticed "at once" (`NOW`) counts as down
//! for longer than any `down-after-milliseconds`. What a crash does to the
//! node (its port, its clients, its links) is `server/crash.rs`'s.

use std::any::Any;
use std::net::SocketAddr;
use std::sync::Weak;
use std::time::Instant;

use tokio::sync::Notify;

/// What test control does to a node of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Crash it; the Sentinels notice at once when `at_once`.
    Crash { at_once: bool },
    /// Bring it back on its address.
    Revive,
}

/// A node down: its address, the node (an entry whose server is gone, as
/// when a test ends with its node down, no longer counts), since when, and
/// whether the Sentinels are to notice it at once.
#[derive(Debug)]
struct Down {
    addr: SocketAddr,
    node: Weak<dyn Any + Send + Sync>,
    since: Instant,
    at_once: bool,
}

static DOWN: parking_lot::Mutex<Vec<Down>> = parking_lot::Mutex::new(Vec::new());

/// Woken whenever a node goes down or comes back (the Sentinels wait on it
/// between their checks).
pub static CHANGED: Notify = Notify::const_new();

/// Since when the node on `addr` is down (`None`: it is up); `true` with a
/// crash to be noticed at once.
pub fn down(addr: SocketAddr) -> Option<(Instant, bool)> {
    let mut down = DOWN.lock();
    down.retain(|d| d.node.strong_count() > 0);
    down.iter().find(|d| d.addr == addr).map(|d| (d.since, d.at_once))
}

/// True while some node of the process is down.
pub fn any_down() -> bool {
    let mut down = DOWN.lock();
    down.retain(|d| d.node.strong_count() > 0);
    !down.is_empty()
}

/// Records the node on `addr` as down from now; false if it already is.
pub fn mark_down(addr: SocketAddr, node: Weak<dyn Any + Send + Sync>, at_once: bool) -> bool {
    if down(addr).is_some() {
        return false;
    }
    DOWN.lock().push(Down { addr, node, since: Instant::now(), at_once });
    true
}

/// Records the node on `addr` as up again.
pub fn mark_up(addr: SocketAddr) {
    DOWN.lock().retain(|d| d.addr != addr);
}
