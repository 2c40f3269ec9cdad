//! A Redis Cluster of rlockd nodes in one process ([`Cluster`]): N servers
//! sharing one [`Topology`] (see `crate::cluster`), each with its own event
//! loop thread and keyspace, as [`Server::start_many`] starts them.
//!
//! With replicas (`--cluster-replicas`), each replica is attached to its
//! primary through the in-process replication links
//! (`server/replication.rs`) and the failovers go through the same
//! promotion as a standalone group's, which moves the slots in the
//! topology at the moment the replica stops listening to its primary. A
//! primary taken down with a replica up is replaced by it after
//! `cluster-node-timeout` (or at once through `RLOCKD CLUSTER FAILOVER`);
//! it comes back as that replica's replica. Every node of a cluster shares
//! one ledger of lock grants lost in failovers, so `RLOCKD CHECK` on any
//! node reports a lock with two holders.

use std::any::Any;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use crate::cluster::{BusMessage, Control, Member, Topology};
use crate::config::Config;
use crate::core::Shared;
use crate::error::Error;

use super::Server;

/// How to start a [`Cluster`].
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// Primaries; the slots are split between them as `redis-cli --cluster
    /// create` splits them (3: 0-5460, 5461-10922, 10923-16383).
    pub primaries: usize,
    /// Replicas per primary (`--cluster-replicas`): they take the ports
    /// after the primaries', replica `j` of the group following primary
    /// `j % primaries`.
    pub replicas: usize,
    /// Each node's configuration. Node `i` listens on `node.bind`'s port
    /// plus `i` (each on a free port when it is 0).
    pub node: Config,
    /// The address the nodes announce (in `MOVED`, `CLUSTER SLOTS`…) when
    /// clients reach them through NAT or a container's port mapping;
    /// default: the `cluster-announce-ip` parameter, else the bound address
    /// (127.0.0.1 for a wildcard).
    pub announce_ip: Option<String>,
    /// The port node 0 announces, node `i` announcing it plus `i`; default:
    /// the `cluster-announce-port` parameter, else the bound ports.
    pub announce_port: Option<u16>,
}

impl ClusterConfig {
    /// `primaries` nodes on 127.0.0.1, each on a free port.
    pub fn new(primaries: usize) -> ClusterConfig {
        ClusterConfig { primaries, replicas: 0, node: Config::default(), announce_ip: None, announce_port: None }
    }

    /// With `replicas` replicas per primary.
    pub fn with_replicas(mut self, replicas: usize) -> ClusterConfig {
        self.replicas = replicas;
        self
    }

    /// With `node` as each node's configuration (its port: node 0's).
    pub fn with_node(mut self, node: Config) -> ClusterConfig {
        self.node = node;
        self
    }
}

/// The last value of parameter `name` in `config`'s start-up parameters.
fn param<'a>(config: &'a Config, name: &str) -> Option<&'a str> {
    config.params.iter().rev().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

/// One node's place in the process.
struct NodeSlot {
    server: Option<Server>,
    config: Config,
    addr: SocketAddr,
    /// The state of a node that is down (its keyspace, its links), kept
    /// for its return and for a failover in its place.
    stopped: Option<Arc<Shared>>,
    /// The thread stopping a node that took itself down.
    stopping: Option<JoinHandle<()>>,
    /// How many times it went down (a failover timer belongs to one outage).
    outages: u64,
}

/// The nodes, as [`Control`] moves them up and down.
struct Nodes {
    topo: Weak<Topology>,
    slots: Arc<parking_lot::Mutex<Vec<NodeSlot>>>,
    /// Itself, for the threads it starts.
    me: Weak<Nodes>,
    /// Held through a failover: one at a time.
    failing_over: parking_lot::Mutex<()>,
    /// The cluster's one ledger of lock grants lost in failovers.
    ledger: Arc<parking_lot::Mutex<crate::replication::Ledger>>,
}

/// Stops `server` and keeps its state (its keyspace, history and links,
/// in a state of its own: the server's goes, and its clients' sockets with
/// it); the links it had stop carrying anything (`master_link_status:down`
/// on both sides).
fn stop_keeping_state(mut server: Server, config: &Config) -> Arc<Shared> {
    server.shutdown_and_join();
    let old = server.shared.clone();
    drop(server);
    let kept = Arc::new(Shared::new(config, crate::cmd::access::catalog).expect("a node's configuration is valid"));
    {
        let mut from = old.core.try_lock().expect("a stopped node's state is free");
        let mut to = kept.core.try_lock().expect("a new state is free");
        std::mem::swap(&mut *from, &mut *to);
        let master = to.repl.master.as_ref().and_then(|m| m.link.clone());
        for l in to.repl.replicas.iter().chain(master.iter()) {
            l.broken.store(true, Ordering::Release);
            l.to_replica.notify_one();
            l.to_primary.notify_one();
        }
    }
    *kept.local_addr.lock() = *old.local_addr.lock();
    drop(old);
    kept
}

/// Runs `f` on a runtime of its own (the caller is a plain thread).
fn block_on<R>(f: impl std::future::Future<Output = R>) -> R {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(f)
}

impl Nodes {
    /// `node`'s running server state.
    fn shared(&self, node: usize) -> Option<Arc<Shared>> {
        self.slots.lock()[node].server.as_ref().map(|s| s.shared.clone())
    }

    /// Promotes replica `r` (see [`Control::failover`]); runs on a thread
    /// that holds no node's state.
    fn promote(&self, r: usize, wait_sync: bool) -> Result<(), String> {
        let _one = self.failing_over.lock();
        let topo = self.topo.upgrade().ok_or("the cluster is stopping")?;
        let (p, primary_down) = {
            let Some(p) = topo.primary_of(r) else { return Err(format!("node {r} is not a replica")) };
            if topo.is_down(r) {
                return Err(format!("node {r} is down"));
            }
            (p, topo.is_down(p))
        };
        let (primary, replica, port) = {
            let slots = self.slots.lock();
            let primary = if primary_down {
                slots[p].stopped.clone()
            } else {
                slots[p].server.as_ref().map(|s| s.shared.clone())
            };
            let replica = slots[r].server.as_ref().map(|s| s.shared.clone());
            (primary, replica, slots[r].addr.port())
        };
        let (Some(primary), Some(replica)) = (primary, replica) else {
            return Err("the nodes are changing: try again".into());
        };
        // Redis's manual failover: the primary's writers wait (as `CLIENT
        // PAUSE WRITE`) while the replica catches up and takes over; they
        // then get MOVED to it.
        let now = primary.clock.now_ms();
        let pause_writes = wait_sync && !primary_down && primary.pause.until_ms.load(Ordering::Acquire) <= now;
        if pause_writes {
            primary.pause.set(now + 10_000, true);
        }
        let result = block_on(async {
            if primary_down {
                // What the primary had queued for the replica when it went
                // down never arrives: the promotion drops it.
                let core = primary.core.lock().await;
                for l in core.repl.replicas.iter().filter(|l| l.replica.port() == port) {
                    l.paused.store(true, Ordering::Release);
                    l.broken.store(false, Ordering::Release);
                }
            } else if wait_sync {
                // The replica catches up with the primary's offset first,
                // or the failover is abandoned.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
                loop {
                    let target = primary.core.lock().await.repl.offset;
                    if replica.core.lock().await.repl.offset >= target {
                        break;
                    }
                    if std::time::Instant::now() > deadline {
                        tracing::warn!("Manual failover timed out.");
                        return Err("Manual failover timed out".to_string());
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
            }
            super::replication::failover(&primary, Some(port)).await?;
            if primary_down {
                // The old primary follows its replacement once it is back.
                let core = primary.core.lock().await;
                if let Some(l) = core.repl.master.as_ref().and_then(|m| m.link.as_ref()) {
                    l.close();
                }
            }
            Ok(())
        });
        if pause_writes {
            primary.pause.clear();
        }
        result
    }

    /// After the replica's `cluster-node-timeout`, a replica of primary `n`
    /// (down since outage `outage`) takes its place, as the cluster's failure
    /// detection and election would do.
    fn promote_later(&self, n: usize, outage: u64) {
        let me = self.me.clone();
        std::thread::spawn(move || {
            let timeout_ms = {
                let Some(nodes) = me.upgrade() else { return };
                let Some(topo) = nodes.topo.upgrade() else { return };
                let first = topo.replicas_of(n).first().copied();
                first
                    .and_then(|r| nodes.shared(r))
                    .map_or(15000, |s| s.core.blocking_lock().config.cluster_node_timeout_ms)
            };
            std::thread::sleep(std::time::Duration::from_millis(timeout_ms));
            let Some(nodes) = me.upgrade() else { return };
            let Some(topo) = nodes.topo.upgrade() else { return };
            if nodes.slots.lock()[n].outages != outage {
                return;
            }
            // Still down, and still serving slots as its replicas see it.
            let replica = topo.replicas_of(n).into_iter().find(|&r| !topo.is_down(r));
            let replaced = replica.is_none_or(|r| {
                let view = topo.view(r);
                !view.nodes[n].is_primary() || view.slot_count(n) == 0
            });
            if !topo.is_down(n) || replaced {
                return;
            }
            if let Some(r) = replica {
                if let Err(e) = nodes.promote(r, false) {
                    tracing::warn!("failover of node {n} to node {r}: {e}");
                }
            }
        });
    }
}

impl Control for Nodes {
    fn set_down(&self, n: usize, down: bool, from_itself: bool) -> Result<(), String> {
        let topo = self.topo.upgrade().ok_or("the cluster is stopping")?;
        if down {
            if topo.is_down(n) {
                return Err(format!("node {n} is already down"));
            }
            topo.set_down(n, true, crate::clock::Clock::new().now_ms());
            let mut slots = self.slots.lock();
            slots[n].outages += 1;
            let outage = slots[n].outages;
            let Some(server) = slots[n].server.take() else { return Ok(()) };
            let config = slots[n].config.clone();
            if from_itself {
                let all = self.slots.clone();
                slots[n].stopping = Some(std::thread::spawn(move || {
                    let state = stop_keeping_state(server, &config);
                    all.lock()[n].stopped = Some(state);
                }));
            } else {
                drop(slots);
                let state = stop_keeping_state(server, &config);
                self.slots.lock()[n].stopped = Some(state);
            }
            let has_replica = topo.primary_of(n).is_none() && topo.replicas_of(n).iter().any(|&r| !topo.is_down(r));
            if has_replica {
                self.promote_later(n, outage);
            }
            return Ok(());
        }
        if !topo.is_down(n) {
            return Err(format!("node {n} is not down"));
        }
        let stopping = self.slots.lock()[n].stopping.take();
        if let Some(t) = stopping {
            let _ = t.join();
        }
        // Not during a failover (bounded: the caller may hold a node's
        // state the failover waits for).
        let Some(_one) = self.failing_over.try_lock_for(std::time::Duration::from_secs(2)) else {
            return Err("a failover is in progress: try again".into());
        };
        let (config, addr, stopped) = {
            let mut slots = self.slots.lock();
            (slots[n].config.clone(), slots[n].addr, slots[n].stopped.take())
        };
        let saved =
            stopped.map(|s| std::mem::take(&mut s.core.try_lock().expect("a stopped node's state is free").ks.dbs));
        let listener = super::listen(addr, config.tcp_backlog).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let server = Server::start_on(listener, config, Some(Member { topo: topo.clone(), me: n }))
            .map_err(|e| e.to_string())?;
        let ledger = self.ledger.clone();
        server.with_core(move |core| {
            if let Some(dbs) = saved {
                core.ks.dbs = dbs;
            }
            core.repl.ledger = ledger;
        });
        // Back, it exchanges pings with every node: one replaced while
        // down learns it, and follows the node that took its place.
        topo.set_down(n, false, 0);
        let primary = topo.primary_of(n);
        let replicas: Vec<usize> = topo.replicas_of(n).into_iter().filter(|&r| !topo.is_down(r)).collect();
        // Replication starts again: a replica resynchronises from its
        // primary, a primary's replicas from it.
        if let Some(p) = primary.and_then(|p| self.slots.lock()[p].server.as_ref().map(|s| s.shared.clone())) {
            let primary_addr = *p.local_addr.lock();
            follow(&server.shared, primary_addr);
        }
        let me_addr = server.addr();
        self.slots.lock()[n].server = Some(server);
        for r in replicas {
            if let Some(s) = self.shared(r) {
                follow(&s, me_addr);
            }
        }
        Ok(())
    }

    fn failover(&self, node: usize, wait_sync: bool, done: Box<dyn FnOnce(Result<(), String>) + Send>) {
        let me = self.me.clone();
        std::thread::spawn(move || {
            let result = match me.upgrade() {
                Some(nodes) => nodes.promote(node, wait_sync),
                None => Err("the cluster is stopping".into()),
            };
            done(result);
        });
    }
}

/// Makes `replica` a replica of the node on `primary`; its replication
/// task attaches it. On a thread of its own, as the caller may be a command
/// of either node holding that node's state.
fn follow(replica: &Arc<Shared>, primary: SocketAddr) {
    let replica = replica.clone();
    std::thread::spawn(move || {
        let mut core = replica.core.blocking_lock();
        let id = replica.next_id();
        core.repl.become_replica(id, primary.ip().to_string(), primary.port());
        core.after_command();
    });
}

/// A running cluster. Stops every node when dropped (or with
/// [`Cluster::stop`]).
///
/// ```no_run
/// let cluster = rlockd::Server::start_cluster(3).unwrap();
/// // Seed nodes for any cluster client: redis://127.0.0.1:PORT, …
/// for url in cluster.urls() {
///     println!("{url}");
/// }
/// ```
pub struct Cluster {
    topo: Arc<Topology>,
    nodes: Arc<Nodes>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("addrs", &self.addrs()).finish_non_exhaustive()
    }
}

impl Server {
    /// Starts a cluster of `primaries` nodes on 127.0.0.1 (free ports), the
    /// slots split as `redis-cli --cluster create` splits them.
    pub fn start_cluster(primaries: usize) -> Result<Cluster, Error> {
        Cluster::start(ClusterConfig::new(primaries))
    }
}

impl Cluster {
    /// Starts a cluster as `config` says. Returns once every node accepts
    /// connections. All or nothing.
    pub fn start(config: ClusterConfig) -> Result<Cluster, Error> {
        let primaries = config.primaries;
        if !(1..=1000).contains(&primaries) {
            return Err(Error::Config("a cluster has 1 to 1000 primaries".into()));
        }
        if config.replicas > 16 {
            return Err(Error::Config("a cluster has 0 to 16 replicas per primary".into()));
        }
        let n = primaries * (1 + config.replicas);
        let base = config.node.bind;
        let mut listeners = Vec::with_capacity(n);
        for i in 0..n {
            let mut addr = base;
            if base.port() != 0 {
                let port = u16::try_from(usize::from(base.port()) + i).map_err(|_| Error::Bind {
                    addr: format!("port {}+{i}", base.port()),
                    source: std::io::ErrorKind::InvalidInput.into(),
                })?;
                addr.set_port(port);
            }
            let l = super::listen(addr, config.node.tcp_backlog)
                .map_err(|source| Error::Bind { addr: addr.to_string(), source })?;
            listeners.push(l);
        }
        let bound: Vec<SocketAddr> = listeners
            .iter()
            .map(std::net::TcpListener::local_addr)
            .collect::<Result<_, _>>()
            .map_err(Error::Runtime)?;
        let ip =
            config
                .announce_ip
                .clone()
                .or_else(|| param(&config.node, "cluster-announce-ip").filter(|v| !v.is_empty()).map(String::from))
                .unwrap_or_else(|| {
                    if base.ip().is_unspecified() {
                        "127.0.0.1".to_string()
                    } else {
                        base.ip().to_string()
                    }
                });
        let announce_port = config
            .announce_port
            .or_else(|| param(&config.node, "cluster-announce-port").and_then(|p| p.parse().ok()).filter(|p| *p != 0));
        let mut announced = Vec::with_capacity(n);
        for (i, a) in bound.iter().enumerate() {
            let port = match announce_port {
                Some(p) => u16::try_from(usize::from(p) + i)
                    .map_err(|_| Error::Config(format!("cluster-announce-port {p}+{i} is past 65535")))?,
                None => a.port(),
            };
            announced.push((ip.clone(), port));
        }
        let topo = Arc::new(Topology::new(&announced, primaries, crate::clock::Clock::new().now_ms()));
        let ledger: Arc<parking_lot::Mutex<crate::replication::Ledger>> = Default::default();
        let slots = Arc::new(parking_lot::Mutex::new(Vec::with_capacity(n)));
        for (i, listener) in listeners.into_iter().enumerate() {
            let mut c = config.node.clone();
            c.bind = bound[i];
            c.params.push(("cluster-enabled".into(), "yes".into()));
            c.params.push(("cluster-announce-ip".into(), ip.clone()));
            if announce_port.is_some() {
                c.params.push(("cluster-announce-port".into(), announced[i].1.to_string()));
            }
            let server = Server::start_on(listener, c.clone(), Some(Member { topo: topo.clone(), me: i }))?;
            let l = ledger.clone();
            server.with_core(move |core| core.repl.ledger = l);
            slots.lock().push(NodeSlot {
                server: Some(server),
                config: c,
                addr: bound[i],
                stopped: None,
                stopping: None,
                outages: 0,
            });
        }
        if config.replicas > 0 {
            // Each replica attached and in sync before the cluster is handed
            // out (on one helper runtime: the caller may be inside one).
            let pairs: Vec<(Arc<Shared>, SocketAddr)> = {
                let slots = slots.lock();
                (primaries..n)
                    .filter_map(|r| {
                        let p = topo.primary_of(r)?;
                        let replica = slots[r].server.as_ref()?.shared.clone();
                        Some((replica, slots[p].addr))
                    })
                    .collect()
            };
            std::thread::spawn(move || {
                block_on(async move {
                    for (replica, primary) in &pairs {
                        let (host, port) = (primary.ip().to_string(), primary.port());
                        {
                            let mut core = replica.core.lock().await;
                            let id = replica.next_id();
                            core.repl.become_replica(id, host.clone(), port);
                        }
                        super::replication::attach(replica, &host, port).await;
                    }
                })
            })
            .join()
            .map_err(|_| Error::Topology("the replicas did not attach".into()))?;
        }
        let nodes = Arc::new_cyclic(|me| Nodes {
            topo: Arc::downgrade(&topo),
            slots,
            me: me.clone(),
            failing_over: parking_lot::Mutex::new(()),
            ledger,
        });
        let control: Arc<dyn Control> = nodes.clone();
        topo.set_control(Arc::downgrade(&control));
        // Gossip: a round every 100 ms while the views differ (a ping
        // period of a small Redis cluster).
        let weak = Arc::downgrade(&topo);
        std::thread::Builder::new()
            .name("rlockd-gossip".into())
            .spawn(move || loop {
                std::thread::sleep(std::time::Duration::from_millis(100));
                match weak.upgrade() {
                    Some(t) if t.tick() => {}
                    _ => return,
                }
            })
            .map_err(Error::Runtime)?;
        Ok(Cluster { topo, nodes })
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.topo.node_count()
    }

    /// True for a cluster without nodes (never).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The address each node listens on, in start order.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.nodes.slots.lock().iter().map(|s| s.addr).collect()
    }

    /// `redis://host:port` of each node (the listening addresses).
    pub fn urls(&self) -> Vec<String> {
        self.addrs().iter().map(|a| format!("redis://{a}")).collect()
    }

    /// Each node's id (`CLUSTER MYID`), in start order.
    pub fn node_ids(&self) -> Vec<String> {
        self.topo.ids()
    }

    /// The index of the node serving `slot` now (of the primaries that
    /// serve it in their own view, the one with the newest epoch; the
    /// other nodes may not know yet), between failovers.
    pub fn slot_owner(&self, slot: u16) -> Option<usize> {
        let _between = self.nodes.failing_over.lock();
        self.topo.owner(slot)
    }

    /// Runs `f` on node `i`'s server; `None` while it is down.
    pub fn with_node<R>(&self, i: usize, f: impl FnOnce(&Server) -> R) -> Option<R> {
        self.nodes.slots.lock().get(i)?.server.as_ref().map(f)
    }

    /// Stops node `i` (as `RLOCKD CLUSTER DOWN`): its clients are cut, its
    /// port refuses connections, the other nodes answer `CLUSTERDOWN` for
    /// keys. Its keyspace is kept for [`bring_up`](Self::bring_up).
    pub fn take_down(&self, i: usize) -> Result<(), Error> {
        self.control(i, true)
    }

    /// Starts node `i` again on its port with the keys it had (as `RLOCKD
    /// CLUSTER UP`).
    pub fn bring_up(&self, i: usize) -> Result<(), Error> {
        self.control(i, false)
    }

    fn control(&self, i: usize, down: bool) -> Result<(), Error> {
        if i >= self.len() {
            return Err(Error::Topology(format!("no node {i}")));
        }
        self.nodes.set_down(i, down, false).map_err(Error::Topology)
    }

    /// Promotes replica `i` in its primary's place (as `RLOCKD CLUSTER
    /// FAILOVER`; for a primary, its first replica that is up): with what it
    /// has received, the slots move to it, its primary becomes its replica
    /// (or will, when it is down). Returns once done.
    pub fn failover(&self, i: usize) -> Result<(), Error> {
        if i >= self.len() {
            return Err(Error::Topology(format!("no node {i}")));
        }
        let i = if self.topo.primary_of(i).is_none() {
            self.topo
                .replicas_of(i)
                .into_iter()
                .find(|&r| !self.topo.is_down(r))
                .ok_or_else(|| Error::Topology(format!("node {i} has no replica that is up")))?
        } else {
            i
        };
        let (tx, rx) = std::sync::mpsc::channel();
        self.nodes.failover(
            i,
            false,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.recv().map_err(|_| Error::Topology("the failover did not finish".into()))?.map_err(Error::Topology)
    }

    /// The index of the primary node `i` replicates (`None`: a primary),
    /// in its own view, between failovers.
    pub fn primary_of(&self, i: usize) -> Option<usize> {
        let _between = self.nodes.failing_over.lock();
        (i < self.len()).then(|| self.topo.primary_of(i))?
    }

    /// True once every running node was asked to shut down (`SHUTDOWN`).
    pub fn is_shutting_down(&self) -> bool {
        let slots = self.nodes.slots.lock();
        slots.iter().any(|s| s.server.is_some())
            && slots.iter().all(|s| s.server.as_ref().is_none_or(Server::is_shutting_down))
    }

    /// Stops every node.
    pub fn stop(self) {}
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.topo.stop_gossip();
        let (servers, stopping): (Vec<_>, Vec<_>) = {
            let mut slots = self.nodes.slots.lock();
            slots.iter_mut().map(|s| (s.server.take(), s.stopping.take())).unzip()
        };
        for s in servers.into_iter().flatten() {
            s.stop();
        }
        for t in stopping.into_iter().flatten() {
            let _ = t.join();
        }
    }
}

/// Makes a new server node `m.me` of its cluster; returns its bus mailbox.
pub(crate) fn join(shared: &Arc<Shared>, m: Member) -> tokio::sync::mpsc::UnboundedReceiver<BusMessage> {
    let rx = m.topo.connect_bus(m.me);
    let peer: Weak<dyn Any + Send + Sync> = Arc::downgrade(shared) as Weak<dyn Any + Send + Sync>;
    m.topo.set_peer(m.me, peer);
    shared.core.try_lock().expect("a new server's state is free").cluster = Some(m);
    rx
}

/// Delivers what other nodes publish to this node's subscribers.
pub(crate) async fn serve_bus(shared: Arc<Shared>, mut rx: tokio::sync::mpsc::UnboundedReceiver<BusMessage>) {
    let mut shutdown = shared.shutdown_receiver();
    loop {
        let msg = tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => return,
            msg = rx.recv() => msg,
        };
        match msg {
            None => return,
            Some(BusMessage::Publish(channel, message)) => {
                let mut core = shared.core.lock().await;
                let (limit, now) = (core.config.pubsub_limit, shared.clock.now_ms());
                core.pubsub.publish(&channel, &message, limit, now, false);
                core.after_command();
            }
        }
    }
}
