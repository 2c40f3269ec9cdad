//! Redis Cluster in one process: the topology the nodes of one process
//! share, and the decisions Redis Cluster makes from it.
//!
//! A cluster of rlockd nodes is N ordinary servers (own event loop, own
//! keyspace, own clock) that hold the same [`Topology`]: node ids and
//! announced addresses, the owner of each of the 16384 slots, each node's
//! MIGRATING/IMPORTING slots, epochs, and which nodes are down. A real
//! cluster converges on one view by gossip; here there is one view, so every
//! node agrees at once (a change made through one node is seen by all the
//! others before its reply is sent). What the cluster bus carries besides
//! the view — `PUBLISH` to every node — goes through per-node mailboxes
//! ([`Topology::connect_bus`]).
//!
//! * [`slot`]: CRC16 and hash tags (`CLUSTER KEYSLOT`).
//! * [`route`]: Redis's `getNodeByQuery`, the one decision between serving
//!   a command and `MOVED`, `ASK`, `CROSSSLOT`, `TRYAGAIN`, `CLUSTERDOWN`.
//! * [`describe`]: the `CLUSTER NODES`/`SLOTS`/`SHARDS`/`INFO`/`LINKS` replies.
//!
//! A replica is a node with a `primary`; a failover changes the view in one
//! step ([`State::promote`]: the slots, the epochs, who follows whom) at the
//! moment the replica stops listening to its primary.
//!
//! The cluster knows the servers only through [`Control`] (taking a node
//! down and bringing it back, promoting a replica), which the server layer
//! implements.

pub mod describe;
pub mod route;
pub mod slot;

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use bytes::Bytes;

pub use slot::{key_slot, SLOTS};

/// No owner, in [`State`]'s slot table.
const NONE: u16 = u16::MAX;

/// One node as the cluster knows it.
#[derive(Debug, Clone)]
pub struct Node {
    /// 40 hex characters.
    pub id: String,
    /// The shard's id (`CLUSTER MYSHARDID`, Redis 7.2): 40 hex characters
    /// its primary and replicas share, kept through failovers (a replica
    /// taking its primary's place stays in the shard).
    pub shard_id: String,
    /// The announced address (what `MOVED` and `CLUSTER SLOTS` print).
    pub ip: String,
    pub port: u16,
    pub bus_port: u16,
    /// The primary this node replicates, for a replica.
    pub primary: Option<usize>,
    pub config_epoch: u64,
    /// Down (`fail` in `CLUSTER NODES`): taken down by test control.
    pub failed: bool,
    /// Unix ms when it went down.
    pub failed_ms: u64,
    /// This node's slots in MIGRATING state, with their destination.
    pub migrating: BTreeMap<u16, usize>,
    /// This node's slots in IMPORTING state, with their source.
    pub importing: BTreeMap<u16, usize>,
    /// A primary replaced by its replica while it was down: the node it
    /// replicates once it is back (until then it shows as a failed master
    /// without slots, as other Redis nodes see it).
    pub rejoins_as_replica_of: Option<usize>,
}

impl Node {
    pub fn is_primary(&self) -> bool {
        self.primary.is_none()
    }
}

/// The cluster's one view.
#[derive(Debug, Clone)]
pub struct State {
    pub nodes: Vec<Node>,
    owner: Vec<u16>,
    pub current_epoch: u64,
}

impl State {
    /// The node serving `slot`.
    pub fn owner(&self, slot: u16) -> Option<usize> {
        match self.owner[usize::from(slot)] {
            NONE => None,
            n => Some(usize::from(n)),
        }
    }

    pub fn set_owner(&mut self, slot: u16, node: Option<usize>) {
        self.owner[usize::from(slot)] = node.map_or(NONE, |n| n as u16);
    }

    /// `node`'s slots as inclusive ranges, in order.
    pub fn ranges(&self, node: usize) -> Vec<(u16, u16)> {
        let mut out: Vec<(u16, u16)> = Vec::new();
        for s in 0..SLOTS as u16 {
            if self.owner(s) == Some(node) {
                match out.last_mut() {
                    Some(r) if r.1 + 1 == s => r.1 = s,
                    _ => out.push((s, s)),
                }
            }
        }
        out
    }

    /// Every slot range with its owner, in slot order (`CLUSTER SLOTS`).
    pub fn all_ranges(&self) -> Vec<(u16, u16, usize)> {
        let mut out: Vec<(u16, u16, usize)> = Vec::new();
        for s in 0..SLOTS as u16 {
            let Some(n) = self.owner(s) else { continue };
            match out.last_mut() {
                Some(r) if r.1 + 1 == s && r.2 == n => r.1 = s,
                _ => out.push((s, s, n)),
            }
        }
        out
    }

    /// How many slots `node` serves.
    pub fn slot_count(&self, node: usize) -> usize {
        self.owner.iter().filter(|&&o| usize::from(o) == node).count()
    }

    /// The node with id `id` (whole, any letter case).
    pub fn find(&self, id: &[u8]) -> Option<usize> {
        self.nodes.iter().position(|n| n.id.as_bytes().eq_ignore_ascii_case(id))
    }

    /// The replicas of `primary`.
    pub fn replicas(&self, primary: usize) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].primary == Some(primary)).collect()
    }

    /// Primaries serving at least one slot (`cluster_size`).
    pub fn size(&self) -> usize {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].is_primary() && self.slot_count(i) > 0).count()
    }

    /// Slots assigned to some node.
    pub fn assigned(&self) -> usize {
        self.owner.iter().filter(|&&o| o != NONE).count()
    }

    /// Slots served by a node that is down.
    pub fn failed_slots(&self) -> usize {
        self.owner.iter().filter(|&&o| o != NONE && self.nodes[usize::from(o)].failed).count()
    }

    /// `cluster_state:ok`: with full coverage required, every slot served
    /// by a node that is up; else no slot served by a node that is down (a
    /// slot nobody owns then answers `CLUSTERDOWN Hash slot not served`).
    pub fn healthy(&self, full_coverage: bool) -> bool {
        self.failed_slots() == 0 && (!full_coverage || self.assigned() == SLOTS)
    }

    /// The epoch a node reports as its own (a replica: its primary's).
    pub fn node_epoch(&self, node: usize) -> u64 {
        match self.nodes[node].primary {
            Some(p) => self.nodes[p].config_epoch,
            None => self.nodes[node].config_epoch,
        }
    }

    /// Gives `node` a configuration epoch newer than any other (Redis's
    /// `clusterBumpConfigEpochWithoutConsensus`): true if it changed.
    pub fn bump_epoch(&mut self, node: usize) -> bool {
        let max = self.nodes.iter().map(|n| n.config_epoch).max().unwrap_or(0).max(self.current_epoch);
        let mine = self.nodes[node].config_epoch;
        if mine == 0 || mine != max {
            self.current_epoch += 1;
            self.nodes[node].config_epoch = self.current_epoch;
            return true;
        }
        false
    }
}

impl State {
    /// Replica `r` takes its primary's place (a failover, Redis's
    /// `clusterFailoverReplaceYourMaster`): it serves the primary's slots
    /// with a new configuration epoch, the primary's other replicas follow
    /// it, and so does the primary itself — at once when it is up, when it
    /// comes back when it is down. Returns the old primary.
    pub fn promote(&mut self, r: usize) -> Option<usize> {
        let p = self.nodes[r].primary?;
        for s in 0..SLOTS as u16 {
            if self.owner(s) == Some(p) {
                self.set_owner(s, Some(r));
            }
        }
        self.nodes[r].primary = None;
        self.nodes[r].rejoins_as_replica_of = None;
        self.current_epoch += 1;
        self.nodes[r].config_epoch = self.current_epoch;
        for o in self.replicas(p) {
            self.nodes[o].primary = Some(r);
        }
        if self.nodes[p].failed {
            self.nodes[p].rejoins_as_replica_of = Some(r);
        } else {
            self.nodes[p].primary = Some(r);
        }
        self.nodes[p].migrating.clear();
        self.nodes[p].importing.clear();
        Some(p)
    }

    /// A node that was down is back: one replaced while down becomes the
    /// replica of the node that took its place.
    pub fn returned(&mut self, n: usize) {
        self.nodes[n].failed = false;
        if let Some(r) = self.nodes[n].rejoins_as_replica_of.take() {
            self.nodes[n].primary = Some(r);
        }
    }
}

/// A message the cluster bus carries to one node.
#[derive(Debug, Clone)]
pub enum BusMessage {
    /// `PUBLISH channel message` run on another node.
    Publish(Bytes, Bytes),
}

/// What the server layer does for the cluster: stop a node's server (its
/// clients are disconnected, its port refuses connections) and start it
/// again on the same port with the keyspace it had.
pub trait Control: Send + Sync {
    /// Takes `node` down (`down`) or brings it back; returns once done,
    /// or at once when the node takes itself down (`from_itself`: the
    /// request came through one of its own connections).
    fn set_down(&self, node: usize, down: bool, from_itself: bool) -> Result<(), String>;

    /// Promotes replica `node` in its primary's place, on a thread of its
    /// own (the caller may hold a node's state); `done` is called with the
    /// outcome. With `wait_sync` (`CLUSTER FAILOVER` without an option,
    /// the primary up) the replica first waits to have everything the
    /// primary wrote, and gives up after 5 s as Redis's manual failover
    /// does; otherwise it is promoted with what it has received.
    fn failover(&self, node: usize, wait_sync: bool, done: Box<dyn FnOnce(Result<(), String>) + Send>);
}

/// The topology the nodes of one process share.
pub struct Topology {
    state: parking_lot::RwLock<State>,
    bus: parking_lot::Mutex<Vec<Option<tokio::sync::mpsc::UnboundedSender<BusMessage>>>>,
    control: parking_lot::Mutex<Option<Weak<dyn Control>>>,
    /// Each running node's server state, as the layers above know it (the
    /// cluster cannot name it): test control moves keys between nodes.
    peers: parking_lot::Mutex<Vec<Option<Weak<dyn std::any::Any + Send + Sync>>>>,
    /// Unix ms when the cluster was formed (the links' creation time).
    pub created_ms: u64,
    /// Each node's replication offset as last seen (what gossip would
    /// carry), for `CLUSTER SLOTS`/`SHARDS` when a node is busy.
    pub offsets: parking_lot::Mutex<Vec<u64>>,
}

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topology").field("nodes", &self.state.read().nodes.len()).finish_non_exhaustive()
    }
}

/// A node id: 40 hex characters, the SHA-1 of its announced address, so a
/// cluster started the same way has the same ids every time.
pub fn node_id(ip: &str, port: u16) -> String {
    sha1_smol::Sha1::from(format!("rlockd cluster node {ip}:{port}")).digest().to_string()
}

/// The slots `redis-cli --cluster create` gives each of `primaries` nodes.
pub fn create_split(primaries: usize) -> Vec<(u16, u16)> {
    let per = SLOTS as f64 / primaries as f64;
    let mut out = Vec::with_capacity(primaries);
    let (mut first, mut cursor) = (0i64, 0f64);
    for i in 0..primaries {
        let mut last = (cursor + per - 1.0).round() as i64;
        if last > SLOTS as i64 - 1 || i == primaries - 1 {
            last = SLOTS as i64 - 1;
        }
        if last < first {
            last = first;
        }
        out.push((first as u16, last as u16));
        first = last + 1;
        cursor += per;
    }
    out
}

impl Topology {
    /// A cluster of `addrs.len()` nodes (announced ip, port) as `redis-cli
    /// --cluster create … --cluster-replicas r` leaves it: the first
    /// `primaries` nodes share the slots (config epochs 1, 2, …), each of
    /// the others replicates a primary in turn.
    pub fn new(addrs: &[(String, u16)], primaries: usize, now_ms: u64) -> Topology {
        let nodes: Vec<Node> = addrs
            .iter()
            .enumerate()
            .map(|(i, (ip, port))| Node {
                id: node_id(ip, *port),
                shard_id: {
                    // The shard of the primary the node starts with.
                    let first = if i < primaries { i } else { (i - primaries) % primaries.max(1) };
                    let (ip, port) = &addrs[first];
                    sha1_smol::Sha1::from(format!("rlockd cluster shard {ip}:{port}")).digest().to_string()
                },
                ip: ip.clone(),
                port: *port,
                bus_port: port.checked_add(10000).unwrap_or(0),
                primary: (i >= primaries).then(|| (i - primaries) % primaries.max(1)),
                config_epoch: i as u64 + 1,
                failed: false,
                failed_ms: 0,
                migrating: BTreeMap::new(),
                importing: BTreeMap::new(),
                rejoins_as_replica_of: None,
            })
            .collect();
        let mut state = State { nodes, owner: vec![NONE; SLOTS], current_epoch: addrs.len() as u64 };
        for (i, (first, last)) in create_split(primaries).into_iter().enumerate() {
            for s in first..=last {
                state.set_owner(s, Some(i));
            }
        }
        Topology {
            state: parking_lot::RwLock::new(state),
            bus: parking_lot::Mutex::new(vec![None; addrs.len()]),
            control: parking_lot::Mutex::new(None),
            peers: parking_lot::Mutex::new(vec![None; addrs.len()]),
            created_ms: now_ms,
            offsets: parking_lot::Mutex::new(vec![0; addrs.len()]),
        }
    }

    /// Reads the view.
    pub fn read(&self) -> parking_lot::RwLockReadGuard<'_, State> {
        self.state.read()
    }

    /// Changes the view (every node sees the change at once).
    pub fn write(&self) -> parking_lot::RwLockWriteGuard<'_, State> {
        self.state.write()
    }

    /// The number of nodes.
    pub fn node_count(&self) -> usize {
        self.state.read().nodes.len()
    }

    /// Opens `node`'s mailbox: what other nodes publish arrives there.
    pub fn connect_bus(&self, node: usize) -> tokio::sync::mpsc::UnboundedReceiver<BusMessage> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.bus.lock()[node] = Some(tx);
        rx
    }

    /// Sends `msg` to every node but `from` (as the cluster bus propagates
    /// `PUBLISH`); a node that is down gets nothing.
    pub fn broadcast(&self, from: usize, msg: &BusMessage) {
        let failed: Vec<bool> = self.state.read().nodes.iter().map(|n| n.failed).collect();
        for (i, tx) in self.bus.lock().iter().enumerate() {
            if i != from && !failed[i] {
                if let Some(tx) = tx {
                    let _ = tx.send(msg.clone());
                }
            }
        }
    }

    /// Records `node`'s running server state (replaced when it restarts).
    pub fn set_peer(&self, node: usize, peer: Weak<dyn std::any::Any + Send + Sync>) {
        self.peers.lock()[node] = Some(peer);
    }

    /// `node`'s running server state, if it runs.
    pub fn peer(&self, node: usize) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        self.peers.lock().get(node)?.as_ref()?.upgrade()
    }

    /// Installs the server layer's [`Control`].
    pub fn set_control(&self, control: Weak<dyn Control>) {
        *self.control.lock() = Some(control);
    }

    /// The server layer's [`Control`], while the cluster runs.
    pub fn control(&self) -> Option<Arc<dyn Control>> {
        self.control.lock().as_ref().and_then(Weak::upgrade)
    }
}

/// One node's membership: what its core holds.
#[derive(Debug, Clone)]
pub struct Member {
    pub topo: Arc<Topology>,
    /// This node's index in the view.
    pub me: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_as_redis_cli() {
        assert_eq!(create_split(3), vec![(0, 5460), (5461, 10922), (10923, 16383)]);
        assert_eq!(create_split(1), vec![(0, 16383)]);
        let s5 = create_split(5);
        assert_eq!(s5.first().unwrap().0, 0);
        assert_eq!(s5.last().unwrap().1, 16383);
    }
}
