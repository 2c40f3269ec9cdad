//! A Redis Cluster of rlockd nodes in one process ([`Cluster`]): N servers
//! sharing one [`Topology`] (see `crate::cluster`), each with its own event
//! loop thread and keyspace, as [`Server::start_many`] starts them.

use std::any::Any;
use std::net::SocketAddr;
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
        ClusterConfig { primaries, node: Config::default(), announce_ip: None, announce_port: None }
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
    /// The keyspace of a node that is down, kept for its return.
    saved: Option<Vec<crate::db::Db>>,
    /// The thread stopping a node that took itself down.
    stopping: Option<JoinHandle<()>>,
}

/// The nodes, as [`Control`] moves them up and down.
struct Nodes {
    topo: Weak<Topology>,
    slots: Arc<parking_lot::Mutex<Vec<NodeSlot>>>,
}

/// Stops `server` and takes its keyspace.
fn stop_keeping_keys(mut server: Server) -> Vec<crate::db::Db> {
    server.shutdown_and_join();
    let shared = server.shared.clone();
    drop(server);
    let mut core = shared.core.try_lock().expect("a stopped node's state is free");
    std::mem::take(&mut core.ks.dbs)
}

impl Control for Nodes {
    fn set_down(&self, n: usize, down: bool, from_itself: bool) -> Result<(), String> {
        let topo = self.topo.upgrade().ok_or("the cluster is stopping")?;
        if down {
            {
                let mut state = topo.write();
                if state.nodes[n].failed {
                    return Err(format!("node {n} is already down"));
                }
                state.nodes[n].failed = true;
                state.nodes[n].failed_ms = crate::clock::Clock::new().now_ms();
            }
            let mut slots = self.slots.lock();
            let Some(server) = slots[n].server.take() else { return Ok(()) };
            if from_itself {
                let all = self.slots.clone();
                slots[n].stopping = Some(std::thread::spawn(move || {
                    let keys = stop_keeping_keys(server);
                    all.lock()[n].saved = Some(keys);
                }));
            } else {
                drop(slots);
                let keys = stop_keeping_keys(server);
                self.slots.lock()[n].saved = Some(keys);
            }
            return Ok(());
        }
        if !topo.read().nodes[n].failed {
            return Err(format!("node {n} is not down"));
        }
        let stopping = self.slots.lock()[n].stopping.take();
        if let Some(t) = stopping {
            let _ = t.join();
        }
        let (config, addr, saved) = {
            let mut slots = self.slots.lock();
            (slots[n].config.clone(), slots[n].addr, slots[n].saved.take())
        };
        let listener = super::listen(addr, config.tcp_backlog).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let server = Server::start_on(listener, config, Some(Member { topo: topo.clone(), me: n }))
            .map_err(|e| e.to_string())?;
        if let Some(dbs) = saved {
            server.with_core(move |core| core.ks.dbs = dbs);
        }
        self.slots.lock()[n].server = Some(server);
        topo.write().nodes[n].failed = false;
        Ok(())
    }
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
        let n = config.primaries;
        if !(1..=1000).contains(&n) {
            return Err(Error::Config("a cluster has 1 to 1000 primaries".into()));
        }
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
        let topo = Arc::new(Topology::new(&announced, n, crate::clock::Clock::new().now_ms()));
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
            slots.lock().push(NodeSlot {
                server: Some(server),
                config: c,
                addr: bound[i],
                saved: None,
                stopping: None,
            });
        }
        let nodes = Arc::new(Nodes { topo: Arc::downgrade(&topo), slots });
        let control: Arc<dyn Control> = nodes.clone();
        topo.set_control(Arc::downgrade(&control));
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
        self.topo.read().nodes.iter().map(|n| n.id.clone()).collect()
    }

    /// The index of the node serving `slot` now.
    pub fn slot_owner(&self, slot: u16) -> Option<usize> {
        self.topo.read().owner(slot)
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
            return Err(Error::Config(format!("no node {i}")));
        }
        self.nodes.set_down(i, down, false).map_err(Error::Config)
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
    let mut shutdown = shared.shutdown.subscribe();
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
