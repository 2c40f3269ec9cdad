//! What the Sentinels of one group share: the [`State`] behind one lock,
//! each Sentinel's event bus, the lock that lets one failover run at a
//! time; and one Sentinel of it as its connections see it ([`Member`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::broadcast;

use super::failover::Event;
use super::state::{Peer, State};

/// The Sentinels of one group.
#[derive(Debug)]
pub(super) struct Group {
    /// Never held across an `.await`.
    pub state: parking_lot::Mutex<State>,
    /// Each Sentinel's event bus, in the order of `state.sentinels`.
    buses: parking_lot::Mutex<Vec<broadcast::Sender<Event>>>,
    /// One failover (or check of the servers) at a time.
    pub failing_over: tokio::sync::Mutex<()>,
    pub started: Instant,
}

impl Group {
    pub fn new(state: State) -> Group {
        Group {
            state: parking_lot::Mutex::new(state),
            buses: Default::default(),
            failing_over: Default::default(),
            started: Instant::now(),
        }
    }

    /// Adds the Sentinel `id` on `addr` to the group.
    pub fn join(self: &Arc<Group>, id: String, addr: SocketAddr) -> Member {
        let (bus, _) = broadcast::channel(1024);
        self.state.lock().sentinels.push(Peer { id: id.clone(), addr });
        self.buses.lock().push(bus.clone());
        Member { id, addr, group: self.clone(), bus, next_client: AtomicU64::new(1) }
    }

    /// Publishes `event` on every Sentinel of the group.
    pub fn publish(&self, event: Event) {
        tracing::warn!("{} {}", event.kind, event.text);
        for bus in self.buses.lock().iter() {
            let _ = bus.send(event.clone());
        }
    }

    /// Milliseconds since the group started.
    pub fn uptime_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

/// One Sentinel of a group, as its connections see it.
#[derive(Debug)]
pub(super) struct Member {
    pub id: String,
    pub addr: SocketAddr,
    pub group: Arc<Group>,
    /// Its events, for its subscribers.
    pub bus: broadcast::Sender<Event>,
    next_client: AtomicU64,
}

impl Member {
    /// A new client id (`CLIENT ID`, `HELLO`).
    pub fn next_client_id(&self) -> u64 {
        self.next_client.fetch_add(1, Ordering::Relaxed)
    }
}
