//! Sentinels for the rlockd primaries of this process: the Sentinel protocol
//! clients use to find the primary and follow a failover (Redisson's
//! `useSentinelServers()`, redis-py's `Sentinel`, ioredis's `sentinels`).
//!
//! A [`Sentinel`] listens on its own port and answers what Redis 7.0's
//! Sentinel answers: `SENTINEL GET-MASTER-ADDR-BY-NAME`, `MASTERS`,
//! `MASTER`, `REPLICAS`/`SLAVES`, `SENTINELS`, `CKQUORUM`, `FAILOVER`,
//! `MYID`, `RESET`, `INFO [sentinel]`, `ROLE`, `PING`, `HELLO`, `CLIENT …`,
//! and pub/sub (`SUBSCRIBE`, `PSUBSCRIBE`…) of its events. The Sentinels
//! started together form one group: they watch the same primaries and know
//! each other (`SENTINEL SENTINELS`), and what one of them sees, all see —
//! there are no pings or votes between them: every Sentinel of the group
//! agrees, and the first one is elected. What a primary's
//! replicas are is read from the primary itself, at the time of the question.
//!
//! A primary that stops answering — crashed by test control (`RLOCKD REPL
//! CRASH`, `Server::crash`; `server/crash.rs`) — is flagged `+sdown` once it
//! has been down for longer than its `down-after-milliseconds` (30000 as
//! in Redis; `SENTINEL SET name down-after-milliseconds ms`, `rlockd
//! --sentinel-down-after ms`, [`Sentinel::set_down_after`]; a crash made
//! with `NOW` is noticed at the next check), `+odown` if the group has as
//! many Sentinels as the primary's quorum (else it stays subjectively
//! down, as in Redis), and failed over automatically with Redis's events:
//! the replica that received most is promoted with what it has, and the old
//! primary, once back, is converted into its replica (`-sdown`,
//! `+convert-to-slave`); a crashed replica is flagged `+sdown` (and `-sdown`
//! when back) the same way. The group checks every 20 ms and whenever a node
//! goes down or comes back, so the outcome never depends on a timer race.
//!
//! A failover (`SENTINEL FAILOVER name`, or `RLOCKD REPL FAILOVER` on the
//! primary) is the test double of Redis's: it jumps to the end at once —
//! the replica is promoted with what it has received, the old primary
//! becomes its replica — and publishes the events Redis's state machine
//! publishes, in the same order (`+new-epoch`, `+try-failover`, …,
//! `+failover-end`, `+switch-master`, `+slave`, `+convert-to-slave`), on every
//! Sentinel of the group. `SENTINEL FAILOVER` answers once it is done.
//!
//! The files, by role: `state.rs` (what the group knows: plain data),
//! `failover.rs` (the state machine: from what was seen and the time
//! passed in, the events and acts, unit-tested with made-up instants),
//! `nodes.rs` (what the group reads of and does to the servers of the
//! process, and the task that checks them), `group.rs` (the state, the
//! event buses and the failover lock the Sentinels share), `commands.rs`
//! (the commands as rows: name, arity, handler) with `replies.rs` (the
//! records they print) and `pubsub.rs` (a connection's subscriptions),
//! `conn.rs` (the sockets); this file starts and stops a group.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

mod commands;
mod conn;
mod failover;
mod group;
mod nodes;
mod pubsub;
mod replies;
mod state;

use group::Group;
use state::State;

/// A running Sentinel. Stops when dropped.
pub struct Sentinel {
    id: String,
    addr: SocketAddr,
    group: Arc<Group>,
    shutdown: tokio::sync::watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Sentinel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sentinel").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Sentinel {
    /// Starts one Sentinel per port of `ports` (0: a free port) on `ip`,
    /// as one group watching `masters` (name, primary address), each with
    /// quorum `quorum`.
    ///
    /// ```no_run
    /// let nodes = rlockd::Server::start_with_replicas(1, rlockd::Config::default()).unwrap();
    /// let ip = "127.0.0.1".parse().unwrap();
    /// let sentinels = rlockd::Sentinel::start_group(ip, &[0, 0, 0], &[("mymaster", nodes[0].addr())], 2).unwrap();
    /// println!("sentinel on port {}", sentinels[0].port());
    /// ```
    pub fn start_group(
        ip: std::net::IpAddr,
        ports: &[u16],
        masters: &[(&str, SocketAddr)],
        quorum: u32,
    ) -> Result<Vec<Sentinel>, crate::error::Error> {
        let group = Arc::new(Group::new(State::new(masters, quorum)));
        let mut out = Vec::new();
        for &port in ports {
            let listener = conn::bind(SocketAddr::new(ip, port))?;
            let addr = listener.local_addr().map_err(crate::error::Error::Runtime)?;
            let id = crate::replication::new_replid();
            let me = Arc::new(group.join(id.clone(), addr));
            let (shutdown, rx) = tokio::sync::watch::channel(false);
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(crate::error::Error::Runtime)?;
            // The first Sentinel's runtime checks the servers for the group.
            let watcher = out.is_empty().then(|| (group.clone(), rx.clone()));
            let thread = std::thread::Builder::new()
                .name(format!("sentinel-{}", addr.port()))
                .spawn(move || {
                    runtime.block_on(async move {
                        if let Some((g, rx)) = watcher {
                            tokio::spawn(nodes::watch(g, rx));
                        }
                        conn::serve(listener, me, rx).await
                    });
                    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
                })
                .map_err(crate::error::Error::Runtime)?;
            out.push(Sentinel { id, addr, group: group.clone(), shutdown, thread: Some(thread) });
        }
        Ok(out)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Its id (`SENTINEL MYID`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The address of the primary named `name` now.
    pub fn master_addr(&self, name: &str) -> Option<SocketAddr> {
        self.group.state.lock().master(name.as_bytes()).map(|m| m.addr)
    }

    /// Sets `down-after-milliseconds` of the primary named `name` (every
    /// primary with `None`) for the whole group, as `SENTINEL SET name
    /// down-after-milliseconds ms`; false if there is no such primary.
    pub fn set_down_after(&self, name: Option<&str>, ms: u64) -> bool {
        let mut n = 0;
        for m in self.group.state.lock().masters.iter_mut().filter(|m| name.is_none_or(|x| x == m.name)) {
            m.set(state::Setting::DownAfter, ms.max(1));
            n += 1;
        }
        n > 0
    }

    /// Waits until the primary named `name` is `addr` (after a failover),
    /// at most `limit`; true if it is.
    pub fn wait_for_master(&self, name: &str, addr: SocketAddr, limit: std::time::Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.master_addr(name) != Some(addr) {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        true
    }

    /// Stops it.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.shutdown.send_replace(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        self.stop_now();
    }
}
