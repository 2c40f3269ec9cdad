//! Redis Cluster in one process: the topology the nodes of one process
//! share, and the decisions Redis Cluster makes from it.
//!
//! A cluster of rlockd nodes is N ordinary servers (own event loop, own
//! keyspace, own clock) that hold the same [`Topology`]: one view
//! ([`State`]) per node — node ids and announced addresses (the same in
//! every view), the owner of each of the 16384 slots, epochs, who
//! replicates whom, which nodes are down, and the node's own
//! MIGRATING/IMPORTING slots. A command changes the view of the node that
//! received it; the change reaches the others as Redis's gossip carries it
//! ([`gossip`]: each node's ping tells the others what it serves, with its
//! configuration epoch): [`Topology::round`] delivers every node's ping to
//! every other node that is up, on a timer (every 100 ms while something
//! changed, `server/cluster.rs`) or under test control (`RLOCKD CLUSTER
//! GOSSIP HOLD | STEP | RUN`). As in Redis, a promotion and a slot closed on
//! its importing node are broadcast at once ([`Topology::change_and_spread`]). A node
//! going down or coming back is seen by every view at once (test control
//! says so); a node coming back exchanges pings with every node at once.
//! What the cluster bus carries besides — `PUBLISH` to every node — goes
//! through per-node mailboxes ([`Topology::connect_bus`]).
//!
//! Lock order: a node's core, then the gossip lock, then one view at a
//! time (no code holds two views, or takes the gossip lock holding one).
//!
//! * [`slot`]: CRC16 and hash tags (`CLUSTER KEYSLOT`).
//! * [`route`]: Redis's `getNodeByQuery`, the one decision between serving
//!   a command and `MOVED`, `ASK`, `CROSSSLOT`, `TRYAGAIN`, `CLUSTERDOWN`.
//! * [`describe`]: the `CLUSTER NODES`/`SLOTS`/`SHARDS`/`INFO`/`LINKS` replies.
//!
//! A replica is a node with a `primary`; a failover changes the promoted
//! replica's view in one step ([`State::promote`]: the slots, a new epoch)
//! at the moment it stops listening to its primary, and its ping, broadcast
//! at once, makes the others move the slots and its old primary and
//! siblings follow it.
//!
//! The cluster knows the servers only through [`Control`] (taking a node
//! down and bringing it back, promoting a replica), which the server layer
//! implements.

pub mod describe;
pub mod gossip;
pub mod route;
pub mod slot;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// This node's slots in MIGRATING state, with their destination (in
    /// its own view only).
    pub migrating: BTreeMap<u16, usize>,
    /// This node's slots in IMPORTING state, with their source (in its
    /// own view only).
    pub importing: BTreeMap<u16, usize>,
}

impl Node {
    pub fn is_primary(&self) -> bool {
        self.primary.is_none()
    }
}

/// One node's view of the cluster.
#[derive(Debug, Clone)]
pub struct State {
    pub nodes: Vec<Node>,
    owner: Vec<u16>,
    /// Slots whose owner here no longer claims them (Redis's
    /// `owner_not_claiming_slot`): still redirected to it, given to any
    /// node that claims them.
    unclaimed: Vec<bool>,
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
        self.unclaimed[usize::from(slot)] = false;
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
    /// Replica `r`, in its own view, takes its primary's place (a
    /// failover, Redis's `clusterFailoverReplaceYourMaster`): it serves the
    /// primary's slots with a new configuration epoch. The others learn it
    /// from its ping (the old primary and its other replicas then follow
    /// it). Returns the old primary.
    pub fn promote(&mut self, r: usize) -> Option<usize> {
        let p = self.nodes[r].primary?;
        for s in 0..SLOTS as u16 {
            if self.owner(s) == Some(p) {
                self.set_owner(s, Some(r));
            }
        }
        self.nodes[r].primary = None;
        self.current_epoch += 1;
        self.nodes[r].config_epoch = self.current_epoch;
        Some(p)
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
    /// Each node's view.
    views: Vec<parking_lot::RwLock<State>>,
    /// Which nodes are down (the fact every view shows as `failed`).
    down: Vec<AtomicBool>,
    /// Held while pings are delivered; what test control set.
    gossip: parking_lot::Mutex<Gossip>,
    /// Counts the changes made to the views (a round runs only after one).
    changes: AtomicU64,
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

/// Gossip as test control set it.
#[derive(Debug, Default)]
struct Gossip {
    /// `RLOCKD CLUSTER GOSSIP HOLD`: nothing spreads but by `STEP`.
    held: bool,
    /// [`Topology::changes`] when a round last changed nothing.
    quiet: u64,
    /// The cluster stopped: the timer ends.
    stopped: bool,
}

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topology").field("nodes", &self.views.len()).finish_non_exhaustive()
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
            })
            .collect();
        let mut state =
            State { nodes, owner: vec![NONE; SLOTS], unclaimed: vec![false; SLOTS], current_epoch: addrs.len() as u64 };
        for (i, (first, last)) in create_split(primaries).into_iter().enumerate() {
            for s in first..=last {
                state.set_owner(s, Some(i));
            }
        }
        Topology {
            views: (0..addrs.len()).map(|_| parking_lot::RwLock::new(state.clone())).collect(),
            down: (0..addrs.len()).map(|_| AtomicBool::new(false)).collect(),
            gossip: parking_lot::Mutex::new(Gossip::default()),
            changes: AtomicU64::new(0),
            bus: parking_lot::Mutex::new(vec![None; addrs.len()]),
            control: parking_lot::Mutex::new(None),
            peers: parking_lot::Mutex::new(vec![None; addrs.len()]),
            created_ms: now_ms,
            offsets: parking_lot::Mutex::new(vec![0; addrs.len()]),
        }
    }

    /// Node `n`'s view.
    pub fn view(&self, n: usize) -> parking_lot::RwLockReadGuard<'_, State> {
        self.views[n].read()
    }

    /// Changes node `n`'s view (the others learn it by gossip; never
    /// held across another call of the topology).
    pub fn view_mut(&self, n: usize) -> parking_lot::RwLockWriteGuard<'_, State> {
        self.changes.fetch_add(1, Ordering::AcqRel);
        self.views[n].write()
    }

    /// The number of nodes.
    pub fn node_count(&self) -> usize {
        self.views.len()
    }

    /// Each node's id, in start order.
    pub fn ids(&self) -> Vec<String> {
        self.views[0].read().nodes.iter().map(|n| n.id.clone()).collect()
    }

    /// Node `n` is down.
    pub fn is_down(&self, n: usize) -> bool {
        self.down[n].load(Ordering::Acquire)
    }

    /// The node serving `slot` now: of the primaries that own it in their
    /// own view, the one with the newest configuration epoch.
    pub fn owner(&self, slot: u16) -> Option<usize> {
        let _g = self.gossip.lock();
        (0..self.views.len())
            .filter_map(|n| {
                let v = self.views[n].read();
                (v.nodes[n].is_primary() && v.owner(slot) == Some(n)).then(|| (v.nodes[n].config_epoch, n))
            })
            .max()
            .map(|(_, n)| n)
    }

    /// The primary node `n` replicates, in its own view.
    pub fn primary_of(&self, n: usize) -> Option<usize> {
        let _g = self.gossip.lock();
        self.views[n].read().nodes[n].primary
    }

    /// The nodes replicating `n`, each in its own view.
    pub fn replicas_of(&self, n: usize) -> Vec<usize> {
        let _g = self.gossip.lock();
        (0..self.views.len()).filter(|&r| self.views[r].read().nodes[r].primary == Some(n)).collect()
    }

    /// The nodes that are up and primaries in their own view.
    pub fn primaries_up(&self) -> Vec<usize> {
        let _g = self.gossip.lock();
        (0..self.views.len()).filter(|&n| !self.is_down(n) && self.views[n].read().nodes[n].is_primary()).collect()
    }

    /// Node `n` goes down (`down`) or comes back: every other view shows
    /// it at once; back, it exchanges pings with every node that is up.
    pub fn set_down(&self, n: usize, down: bool, now_ms: u64) {
        let _g = self.gossip.lock();
        self.down[n].store(down, Ordering::Release);
        self.changes.fetch_add(1, Ordering::AcqRel);
        for (i, v) in self.views.iter().enumerate() {
            let mut v = v.write();
            if i == n {
                if !down {
                    // Back: what it missed meanwhile.
                    for (k, node) in v.nodes.iter_mut().enumerate() {
                        if k != n {
                            node.failed = self.is_down(k);
                        }
                    }
                }
                continue;
            }
            v.nodes[n].failed = down;
            if down {
                v.nodes[n].failed_ms = now_ms;
            }
        }
        if !down {
            for k in self.by_epoch() {
                if k != n {
                    self.deliver(k, n);
                }
            }
            for k in 0..self.views.len() {
                if k != n && !self.is_down(k) {
                    self.deliver(n, k);
                }
            }
        }
    }

    /// The nodes that are up, the newest configuration epoch first (a
    /// round's order: a new claim reaches a node before the ping of the
    /// primary it replaced).
    fn by_epoch(&self) -> Vec<usize> {
        let mut up: Vec<(u64, usize)> = (0..self.views.len())
            .filter(|&n| !self.is_down(n))
            .map(|n| (self.views[n].read().node_epoch(n), n))
            .collect();
        up.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        up.into_iter().map(|(_, n)| n).collect()
    }

    /// Node `from`'s ping reaches node `to` (and `to`'s UPDATE, if any,
    /// reaches `from`): true if `to`'s view changed. The gossip lock is
    /// held.
    fn deliver(&self, from: usize, to: usize) -> bool {
        if from == to || self.is_down(to) {
            return false;
        }
        let claim = self.views[from].read().claim(from);
        let (changed, update) = self.views[to].write().receive(to, &claim);
        if changed {
            self.changes.fetch_add(1, Ordering::AcqRel);
        }
        if let Some(u) = update {
            if self.views[from].write().receive_update(from, &u) {
                self.changes.fetch_add(1, Ordering::AcqRel);
            }
        }
        changed
    }

    /// One round of gossip: every node that is up pings every other one.
    /// Returns how many views it changed.
    pub fn round(&self) -> usize {
        let _g = self.gossip.lock();
        let order = self.by_epoch();
        let mut changed = vec![false; self.views.len()];
        for &from in &order {
            for &to in &order {
                if self.deliver(from, to) {
                    changed[to] = true;
                }
            }
        }
        changed.into_iter().filter(|&c| c).count()
    }

    /// Changes node `n`'s view with `f`, then its ping reaches every node
    /// that is up, in one step (Redis's `clusterBroadcastPong` after a
    /// promotion or a slot imported), unless gossip is held.
    pub fn change_and_spread<R>(&self, n: usize, f: impl FnOnce(&mut State) -> R) -> R {
        let g = self.gossip.lock();
        let r = f(&mut self.view_mut(n));
        if !g.held {
            for to in 0..self.views.len() {
                self.deliver(n, to);
            }
        }
        r
    }

    /// Replica `r` takes its primary's place ([`State::promote`]) and
    /// tells every node at once; returns the old primary.
    pub fn promote(&self, r: usize) -> Option<usize> {
        self.change_and_spread(r, |v| v.promote(r))
    }

    /// `RLOCKD CLUSTER GOSSIP HOLD`: nothing spreads until `STEP` or `RUN`.
    pub fn hold(&self) {
        self.gossip.lock().held = true;
    }

    /// `RLOCKD CLUSTER GOSSIP STEP`: one round, held or not; how many
    /// views changed.
    pub fn step(&self) -> usize {
        self.round()
    }

    /// `RLOCKD CLUSTER GOSSIP RUN`: rounds until the views agree (at most
    /// 16), then on the timer again.
    pub fn run(&self) {
        self.gossip.lock().held = false;
        for _ in 0..16 {
            if self.round() == 0 {
                break;
            }
        }
    }

    /// The timer's turn (every 100 ms): a round if something changed since
    /// the last quiet one and gossip is not held. False once the cluster
    /// stopped.
    pub fn tick(&self) -> bool {
        let seen = self.changes.load(Ordering::Acquire);
        {
            let g = self.gossip.lock();
            if g.stopped {
                return false;
            }
            if g.held || g.quiet == seen {
                return true;
            }
        }
        if self.round() == 0 && self.changes.load(Ordering::Acquire) == seen {
            self.gossip.lock().quiet = seen;
        }
        true
    }

    /// Ends the timer.
    pub fn stop_gossip(&self) {
        self.gossip.lock().stopped = true;
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
        for (i, tx) in self.bus.lock().iter().enumerate() {
            if i != from && !self.is_down(i) {
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
    /// This node's index in the views.
    pub me: usize,
}

impl Member {
    /// This node's view.
    pub fn view(&self) -> parking_lot::RwLockReadGuard<'_, State> {
        self.topo.view(self.me)
    }

    /// Changes this node's view.
    pub fn view_mut(&self) -> parking_lot::RwLockWriteGuard<'_, State> {
        self.topo.view_mut(self.me)
    }
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
