//! Listener, server lifecycle and background tasks.
//!
//! Each [`Server`] owns its own tokio runtime on its own thread — one event
//! loop, as redis-server has — so it works the same from `#[test]`,
//! `#[tokio::test]` (any flavour) and a binary, and many servers can live in
//! one process. Dropping the handle stops it.
//!
//! On that thread run the accept task, every connection task, active expiry
//! and the cron. One `tokio::sync::Mutex<Core>` per server is the
//! serialisation point, which the `Server` methods called from other
//! threads also take; on the event loop it is never contended, so a command
//! costs no hand-off between threads. `--threads` is accepted (1 to 1024)
//! for compatibility and has no effect.
//!
//! Files: `connection.rs` (one client's task: read, parse, run, reply, and
//! what the busy hook serves), `io.rs` (the listeners and the connection
//! registry; `core::ServerIo` for the layers below), `socket.rs` (reactor
//! registration, the TCP-or-Unix `Listener`/`Stream`, raw socket calls).
//! `unixsocket` adds a Unix-domain listener beside the TCP ones; its
//! clients take the same connection path, and its file goes at shutdown.

pub mod cluster;
pub mod connection;
mod crash;
pub(crate) mod io;
mod outbound;
pub(crate) mod replication;
mod socket;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::config::Config;
use crate::core::Shared;
use crate::error::Error;

/// A running server. Stops when dropped (or with [`Server::stop`]).
pub struct Server {
    password: Option<String>,
    /// The Unix socket's path (`unixsocket`), if it listens on one.
    unix_path: Option<std::path::PathBuf>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr()).finish_non_exhaustive()
    }
}

impl Server {
    /// Starts a server on `127.0.0.1`, on a free port, with defaults.
    pub fn start() -> Result<Server, Error> {
        Self::start_with(Config::default())
    }

    /// Starts a server with `config`. Returns once it accepts connections.
    pub fn start_with(config: Config) -> Result<Server, Error> {
        let std_listener = listen(config.bind, config.tcp_backlog)
            .map_err(|source| Error::Bind { addr: config.bind.to_string(), source })?;
        Self::start_on(std_listener, config, None)
    }

    /// Starts a server on a bound listener, as a node of a cluster when
    /// `member` is given.
    fn start_on(
        std_listener: std::net::TcpListener,
        config: Config,
        member: Option<crate::cluster::Member>,
    ) -> Result<Server, Error> {
        let addr = std_listener.local_addr().map_err(Error::Runtime)?;
        let mut cfg = config.clone();
        cfg.bind = addr;
        let shared = Arc::new(Shared::new(&cfg, crate::cmd::access::catalog)?);
        let mut listeners = vec![socket::Listener::Tcp(std_listener)];
        let unix_path = {
            let core = shared.core.try_lock().expect("a new server's state is free");
            let path = core.config.get_str("unixsocket");
            if path.is_empty() {
                None
            } else {
                let perm = core.config.unixsocketperm;
                let l = socket::listen_unix(path, perm, config.tcp_backlog)
                    .map_err(|source| Error::Bind { addr: path.to_string(), source })?;
                listeners.push(l);
                Some(std::path::PathBuf::from(path))
            }
        };
        let bus = member.map(|m| cluster::join(&shared, m));
        replication::register(&shared, addr);
        // One thread runs every connection, in the order their input
        // arrives (see the module docs and `connection.rs`); its stack
        // is large enough for Lua's deepest replies.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .thread_stack_size(crate::script::SCRIPT_THREAD_STACK)
            .thread_name("rlockd")
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        let s2 = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("rlockd-{}", addr.port()))
            .stack_size(crate::script::SCRIPT_THREAD_STACK)
            .spawn(move || {
                runtime.block_on(async move {
                    if let Some(bus) = bus {
                        tokio::spawn(cluster::serve_bus(s2.clone(), bus));
                    }
                    run(listeners, s2).await;
                });
                runtime.shutdown_timeout(Duration::from_secs(2));
            })
            .map_err(Error::Runtime)?;
        tracing::debug!(%addr, "rlockd listening");
        Ok(Server { password: config.requirepass.clone(), unix_path, shared, thread: Some(thread) })
    }

    /// Starts `n` independent servers (own keyspace, clock, test control)
    /// on consecutive ports from `config`'s (each on a free port if it is
    /// 0): the nodes of a Redlock or MultiLock test. All or nothing.
    pub fn start_many(n: usize, config: Config) -> Result<Vec<Server>, Error> {
        (0..n)
            .map(|i| {
                let mut c = config.clone();
                if c.bind.port() != 0 {
                    let port = u16::try_from(usize::from(c.bind.port()) + i).map_err(|_| Error::Bind {
                        addr: format!("port {}+{i}", c.bind.port()),
                        source: std::io::ErrorKind::InvalidInput.into(),
                    })?;
                    c.bind.set_port(port);
                }
                Server::start_with(c)
            })
            .collect()
    }

    /// The address the server listens on (after `CONFIG SET port` or
    /// `bind`, the new one; the first, with several bind addresses).
    pub fn addr(&self) -> SocketAddr {
        *self.shared.local_addr.lock()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr().port()
    }

    /// The Unix socket it also listens on (`unixsocket`), if any; the file
    /// is removed when the server stops.
    ///
    /// ```no_run
    /// let dir = std::env::temp_dir().join("rlockd-doc.sock");
    /// let srv = rlockd::Server::start_with(rlockd::Config::default().unixsocket(dir.to_str().unwrap())).unwrap();
    /// let stream = std::os::unix::net::UnixStream::connect(srv.unix_path().unwrap()).unwrap();
    /// # drop(stream);
    /// ```
    pub fn unix_path(&self) -> Option<&std::path::Path> {
        self.unix_path.as_deref()
    }

    /// `redis://[:password@]host:port` for clients.
    pub fn url(&self) -> String {
        match &self.password {
            Some(pw) => format!("redis://:{}@{}", pw, self.addr()),
            None => format!("redis://{}", self.addr()),
        }
    }

    /// The server's clock (all expiry and `TIME` read it).
    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    /// Runs `f` on the server's state under its lock, from any thread or
    /// runtime (the lock is taken on a helper thread, so this also works
    /// inside `#[tokio::test]`).
    fn with_core<R: Send>(&self, f: impl FnOnce(&mut crate::core::Core) -> R + Send) -> R {
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut core = self.shared.core.blocking_lock();
                let r = f(&mut core);
                core.after_command();
                r
            })
            .join()
            .expect("server state access")
        })
    }

    /// Every lock in the keyspace (as `RLOCKD LOCKS`): kind, holders with
    /// re-entry counts and leases, waiters in order.
    pub fn locks(&self) -> Vec<crate::control::locks::LockView> {
        let now = self.shared.clock.now_ms();
        self.with_core(|core| core.control.locks(&core.ks, None, now))
    }

    /// What happened to the locks so far, oldest first (as `RLOCKD EVENTS`).
    pub fn lock_events(&self) -> Vec<crate::control::history::LockEvent> {
        self.with_core(|core| core.control.history.as_ref().map(|h| h.events(None, 0)).unwrap_or_default())
    }

    /// Every lock-safety violation seen (as `RLOCKD CHECK`): empty when
    /// nothing was unsafe. A test can end with `assert!(srv.check_locks().is_empty())`.
    pub fn check_locks(&self) -> Vec<String> {
        self.with_core(|core| {
            let mut all = core.control.violations();
            all.extend(core.repl.violations());
            all
        })
    }

    /// Marks the application's code as inside the critical section of lock
    /// `key` (database 0) held as `holder` (as `RLOCKD CLAIM ENTER`); the
    /// section ends when the returned guard drops (`RLOCKD CLAIM LEAVE`).
    /// [`check_locks`](Self::check_locks) then flags a section that
    /// overlapped another holder's grant or outlived its own lease.
    ///
    /// ```no_run
    /// let srv = rlockd::Server::start().unwrap();
    /// {
    ///     let _inside = srv.claim("orders", "token-a");
    ///     // the critical section
    /// }
    /// assert!(srv.check_locks().is_empty());
    /// ```
    pub fn claim(&self, key: &str, holder: &str) -> ClaimGuard<'_> {
        let (k, h) = (bytes::Bytes::copy_from_slice(key.as_bytes()), bytes::Bytes::copy_from_slice(holder.as_bytes()));
        let now = self.shared.clock.now_ms();
        self.with_core(|core| core.control.claim_enter(&core.ks, 0, k.clone(), h.clone(), 0, now));
        ClaimGuard { server: self, key: k, holder: h }
    }

    /// The lock history as Jepsen-style operations, a JSON array (as
    /// `RLOCKD HISTORY [KEY pattern]`): this node's, or every node's of its
    /// cluster (each with what it did as a primary), with the grants a
    /// failover lost. Checkers read it, such
    /// as the Porcupine check of the Go module (`clients/go/check`).
    ///
    /// ```no_run
    /// let srv = rlockd::Server::start().unwrap();
    /// std::fs::write("history.json", srv.history(None)).unwrap();
    /// ```
    pub fn history(&self, pattern: Option<&str>) -> String {
        let cluster = self.with_core(|core| core.cluster.clone());
        let nodes: Vec<Arc<Shared>> = match &cluster {
            Some(m) => (0..m.topo.node_count()).filter_map(|n| crate::cmd::cluster::peer(m, n).ok()).collect(),
            None => vec![self.shared.clone()],
        };
        let facts: Vec<_> = nodes
            .iter()
            .map(|shared| {
                std::thread::scope(|s| {
                    s.spawn(|| shared.core.blocking_lock().control.history_facts()).join().expect("server state access")
                })
            })
            .collect();
        let lost = self.with_core(|core| core.repl.ledger.lock().timeline_facts().lost);
        let ops = crate::control::jepsen::operations(&facts, &lost, pattern.map(str::as_bytes));
        crate::control::jepsen::write(&ops, crate::control::jepsen::Format::Json)
    }

    /// The lock history as a timeline (as `RLOCKD TIMELINE`): this node's
    /// locks, or every primary's of its cluster, with the topology's marks
    /// (clock moves, faults, crashes, failovers, slot moves), claims and
    /// violations. [`Timeline::to_html`](crate::control::timeline::Timeline::to_html)
    /// draws it; `to_json` gives the data.
    ///
    /// ```no_run
    /// let srv = rlockd::Server::start().unwrap();
    /// std::fs::write("timeline.html", srv.timeline(Default::default()).to_html()).unwrap();
    /// ```
    pub fn timeline(&self, range: crate::control::timeline::Range) -> crate::control::timeline::Timeline {
        let me = self.shared.clone();
        let cluster = self.with_core(|core| core.cluster.clone());
        let nodes: Vec<Arc<Shared>> = match &cluster {
            Some(m) => m.topo.primaries_up().into_iter().filter_map(|n| crate::cmd::cluster::peer(m, n).ok()).collect(),
            None => vec![me],
        };
        let pattern = range.pattern.clone();
        let facts = nodes
            .iter()
            .map(|shared| {
                let now = shared.clock.now_ms();
                let p = pattern.clone();
                std::thread::scope(|s| {
                    s.spawn(|| {
                        let core = shared.core.blocking_lock();
                        core.control.timeline_facts(&core.ks, &core.clients, p.as_deref(), now)
                    })
                    .join()
                    .expect("server state access")
                })
            })
            .collect();
        let topo = self.with_core(|core| core.repl.ledger.lock().timeline_facts());
        crate::control::timeline::build(facts, topo, &range, self.shared.clock.now_ms())
    }

    /// Moves the clock by `ms` and expires every key now due at once (as
    /// `RLOCKD CLOCK ADVANCE`).
    pub fn advance_clock(&self, ms: i64) {
        self.shared.clock.advance_ms(ms);
        let now = self.shared.clock.now_ms();
        self.with_core(|core| crate::control::expire_now(&mut core.ks, now));
    }

    /// Captures the whole keyspace with its TTLs (as `RLOCKD SNAPSHOT`).
    pub fn snapshot(&self, name: &str) {
        let name = bytes::Bytes::copy_from_slice(name.as_bytes());
        self.with_core(|core| core.control.snapshot(&core.ks, name));
    }

    /// Brings a snapshot back in place of the whole keyspace (as `RLOCKD
    /// RESTORE`); false if there is none by that name.
    pub fn restore(&self, name: &str) -> bool {
        self.with_core(|core| core.control.restore(&mut core.ks, name.as_bytes()))
    }

    /// Injects a fault (as `RLOCKD FAULT`); returns its id. A freeze scoped
    /// to clients only stops the matching connections open now at once.
    ///
    /// ```no_run
    /// use rlockd::{Fault, FaultKind};
    /// let srv = rlockd::Server::start().unwrap();
    /// // The next two EVALSHA on lock keys answer LOADING instead of running.
    /// let id = srv.add_fault(
    ///     Fault::new(FaultKind::Error("LOADING Redis is loading the dataset in memory".into()))
    ///         .command("evalsha")
    ///         .key("lock:*")
    ///         .times(2),
    /// );
    /// srv.clear_faults(Some(id));
    /// ```
    pub fn add_fault(&self, fault: crate::control::faults::Fault) -> u64 {
        let faults = self.shared.faults.clone();
        self.with_core(move |core| crate::control::add_fault(&core.clients, &faults, fault, 0))
    }

    /// Removes fault `id`, or every fault (as `RLOCKD FAULT CLEAR`); returns
    /// how many were removed.
    pub fn clear_faults(&self, id: Option<u64>) -> usize {
        self.shared.faults.clear(id)
    }

    /// The faults set now, with how often each applied (as `RLOCKD FAULT LIST`).
    pub fn faults(&self) -> Vec<crate::control::faults::FaultInfo> {
        self.shared.faults.list()
    }

    /// Closes the connections matching `scope` (client name pattern and/or
    /// id) now, as `RLOCKD FAULT KILL`; returns how many.
    pub fn kill_clients(&self, scope: &crate::control::faults::Scope) -> usize {
        self.with_core(|core| crate::control::kill_clients(&core.clients, scope, 0))
    }

    /// Each cached `EVAL` script's machine-independent cost (as `RLOCKD
    /// SCRIPTS`), by sha: calls, and the [`ScriptProfile`](crate::ScriptProfile)
    /// totals (instructions, commands by name, keys read and written).
    pub fn script_profiles(&self) -> Vec<(String, u64, crate::script::ScriptProfile)> {
        self.with_core(|core| {
            core.scripting
                .as_ref()
                .map(|s| s.script_profiles().into_iter().map(|(sha, st, p)| (sha, st.calls, p)).collect())
                .unwrap_or_default()
        })
    }

    /// True once shutdown was requested (by `SHUTDOWN`, a signal or `stop`).
    pub fn is_shutting_down(&self) -> bool {
        self.shared.stopping()
    }

    /// A receiver that changes when shutdown is requested.
    pub fn shutdown_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.shared.shutdown_receiver()
    }

    /// Resolves once shutdown is requested (by `SHUTDOWN`, a signal handler
    /// or [`stop`](Self::stop)), also when that happened before the call.
    pub fn shutdown_requested(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.shared.shutdown_receiver();
        async move { crate::core::shutdown_requested(&mut rx).await }
    }

    /// Stops the server and waits for its threads to finish.
    pub fn stop(mut self) {
        self.shutdown_and_join();
    }

    /// Blocks until the server stops (after `SHUTDOWN` or [`stop`](Self::stop) from elsewhere).
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    fn shutdown_and_join(&mut self) {
        self.shared.request_shutdown();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A claimed critical section ([`Server::claim`]); dropping it leaves.
#[must_use = "the section ends when the guard drops"]
pub struct ClaimGuard<'a> {
    server: &'a Server,
    key: bytes::Bytes,
    holder: bytes::Bytes,
}

impl Drop for ClaimGuard<'_> {
    fn drop(&mut self) {
        let now = self.server.shared.clock.now_ms();
        let (key, holder) = (&self.key, &self.holder);
        self.server.with_core(|core| core.control.claim_leave(0, key, holder, now));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown_and_join();
    }
}

/// Binds a non-blocking listener with `backlog` pending connections, as
/// redis-server does with `tcp-backlog` (std's `bind` always asks for 128).
/// `SO_REUSEADDR` as std and Redis set it: a restarted server can rebind a
/// port with connections still in TIME_WAIT.
pub(crate) fn listen(addr: SocketAddr, backlog: u32) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    warn_if_backlog_capped(backlog);
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Redis's start-up warning when the kernel silently lowers the backlog.
fn warn_if_backlog_capped(backlog: u32) {
    let Ok(text) = std::fs::read_to_string("/proc/sys/net/core/somaxconn") else { return };
    if let Ok(max) = text.trim().parse::<u32>() {
        if max < backlog {
            tracing::warn!(
                "WARNING: The TCP backlog setting of {backlog} cannot be enforced because /proc/sys/net/core/somaxconn is set to the lower value of {max}."
            );
        }
    }
}

/// Binds the listeners `bind` and `port` ask for, as Redis does on
/// `CONFIG SET`: `*` is every IPv4 address, `::*` every IPv6 one, and an
/// address with a leading `-` is skipped when it is not available; an empty
/// list is `* -::*`. Port 0 picks a free port (as at start). The first
/// listener's address is the server's address.
pub(crate) fn listen_all(bind: &str, port: u16, backlog: u32) -> std::io::Result<Vec<std::net::TcpListener>> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, ToSocketAddrs};
    let words: Vec<&str> = match bind.split_whitespace().collect::<Vec<_>>() {
        w if w.is_empty() => vec!["*", "-::*"],
        w => w,
    };
    let mut out = Vec::new();
    for word in words {
        let (optional, host) = match word.strip_prefix('-') {
            Some(h) => (true, h),
            None => (false, word),
        };
        let addrs: std::io::Result<Vec<SocketAddr>> = match host {
            "*" => Ok(vec![SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)]),
            "::*" => Ok(vec![SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port)]),
            h => match h.parse::<IpAddr>() {
                Ok(ip) => Ok(vec![SocketAddr::new(ip, port)]),
                Err(_) => (h, port).to_socket_addrs().map(|a| a.take(1).collect()),
            },
        };
        // With port 0, the later addresses take the port the first one got.
        let port = out.first().and_then(|l: &std::net::TcpListener| l.local_addr().ok()).map_or(port, |a| a.port());
        match addrs.and_then(|a| {
            let addr = a.into_iter().next().ok_or(std::io::ErrorKind::AddrNotAvailable)?;
            listen(SocketAddr::new(addr.ip(), port), backlog)
        }) {
            Ok(l) => out.push(l),
            // EAFNOSUPPORT (no IPv6) or EADDRNOTAVAIL: skip an optional one.
            Err(e)
                if optional
                    && (matches!(e.kind(), std::io::ErrorKind::AddrNotAvailable | std::io::ErrorKind::Unsupported)
                        || matches!(e.raw_os_error(), Some(97 | 99))) => {}
            Err(e) => return Err(e),
        }
    }
    if out.is_empty() {
        return Err(std::io::ErrorKind::AddrNotAvailable.into());
    }
    Ok(out)
}

/// Accepts connections on every listener until shutdown (`CONFIG SET port`
/// / `bind` replace the listeners under it: [`io::Io`]).
async fn run(listeners: Vec<socket::Listener>, shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown_receiver();
    let io = io::Io::new(&shared, listeners);
    let _ = shared.io.set(io.clone() as Arc<dyn crate::core::ServerIo>);
    tokio::spawn(active_expire(shared.clone()));
    tokio::spawn(replication::run(shared.clone()));
    tokio::spawn(replication::full_syncs(shared.clone()));
    let accept = tokio::spawn(accept_loop(io.clone(), shared.clone()));
    crate::core::shutdown_requested(&mut shutdown).await;
    accept.abort();
    io.close_listeners();
    // Each connection's task looks at the shutdown flag when woken; one
    // registered after this sees it at the top of its loop.
    connection::wake_all(&io.conns);
    tracing::debug!("rlockd stopping");
}

async fn accept_loop(io: Arc<io::Io>, shared: Arc<Shared>) {
    loop {
        match std::future::poll_fn(|cx| io.poll_accept(cx)).await {
            Ok((socket, peer)) => match shared.core.try_lock() {
                Ok(mut core) => connection::adopt(&shared, &io.conns, &mut core, socket, peer),
                // A `Server` method holds the core on another thread.
                Err(_) => {
                    tokio::spawn(connection::handle(shared.clone(), io.conns.clone(), socket, peer));
                }
            },
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
}

/// `timeout`: closes normal clients idle for longer than it (Redis's
/// `clientsCronHandleTimeout`): not blocked, subscribed or monitoring ones.
/// Idle time is measured on the server clock, so advancing it counts.
fn close_idle_clients(core: &crate::core::Core, now_ms: u64) {
    let secs = core.config.timeout_secs;
    if secs == 0 {
        return;
    }
    for cs in core.clients.values().map(|r| &r.shared) {
        let subscribed = cs.sub_channels.load(Ordering::Relaxed)
            + cs.sub_patterns.load(Ordering::Relaxed)
            + cs.sub_shard.load(Ordering::Relaxed)
            > 0;
        if subscribed || cs.blocked.load(Ordering::Relaxed) || cs.monitor.load(Ordering::Relaxed) {
            continue;
        }
        let idle_secs = (now_ms / 1000).saturating_sub(cs.last_interaction_ms.load(Ordering::Relaxed) / 1000);
        if idle_secs > secs {
            tracing::debug!(id = cs.id, "closing idle client");
            cs.kill();
        }
    }
}

/// Active expiry: every `1000/hz` ms, delete every due key in slices of at
/// most ~1 ms of lock time, yielding between slices so other clients never
/// wait long.
async fn active_expire(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown_receiver();
    loop {
        let hz = {
            let mut core = shared.core.lock().await;
            let now = shared.clock.now_ms();
            core.stats.sample_ops(now);
            close_idle_clients(&core, now);
            core.config.hz.max(1)
        };
        tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => return,
            _ = tokio::time::sleep(Duration::from_millis(1000 / hz)) => {}
        }
        loop {
            let mut more = false;
            {
                let mut core = shared.core.lock().await;
                if !core.active_expire || shared.script.running.load(Ordering::Relaxed) {
                    break;
                }
                let now = shared.clock.now_ms();
                // Expiry is the server's own doing, at this time.
                core.ks.now = now;
                core.control.actor = Default::default();
                let start = Instant::now();
                let ks = &mut core.ks;
                'dbs: for i in 0..ks.dbs.len() {
                    loop {
                        let n = ks.dbs[i].expire_due(i, now, 128, &mut ks.sig);
                        if n < 128 {
                            break;
                        }
                        if start.elapsed() > Duration::from_micros(1000) {
                            more = true;
                            break 'dbs;
                        }
                    }
                }
                core.after_command();
                // Readers of streams that expired are answered now.
                if core.blocking.has_ready() {
                    crate::cmd::blocking::serve_ready(&mut core, &shared);
                }
                core.before_sleep();
            }
            if !more {
                break;
            }
            tokio::task::yield_now().await;
        }
    }
}
