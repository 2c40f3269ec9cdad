//! The replication task of one server: attaches it to its primary (a full
//! resynchronisation: the primary's keyspace copied under both locks in
//! turn, never both at once), applies the frames its link delivers and
//! acknowledges them, answers `WAIT`s when its replicas acknowledge, sends
//! the heartbeat `PING`, and carries out failovers (test control, the
//! Sentinels, [`super::Server::failover`]). A primary that is no node of
//! this process is followed over TCP by a task of its own ([`tcp`]). A
//! second task ([`full_syncs`]) makes the RDB files of full
//! resynchronisations asked for over TCP, a slice of the core lock at a time.
//!
//! **Invariant:** the task never holds two servers' core locks at once, so
//! nodes that replicate from each other in any shape cannot deadlock.

use std::any::Any;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::{Caller, ClientShared, ClientState};
use crate::cmd::{self, Ctx};
use crate::core::{Core, Shared};
use crate::protocol::Reply;
use crate::replication::ledger::LostGrant;
use crate::replication::{registry, Frame, Link, Request};

mod tcp;

/// Makes `shared` findable by `REPLICAOF` and the Sentinels.
pub(crate) fn register(shared: &Arc<Shared>, addr: SocketAddr) {
    let weak: std::sync::Weak<dyn Any + Send + Sync> = Arc::downgrade(shared) as _;
    registry::register(addr, weak);
}

/// The server of this process listening on `host port`.
pub(crate) fn find(host: &str, port: u16) -> Option<Arc<Shared>> {
    registry::find(host, port)?.downcast::<Shared>().ok()
}

/// The master client a replica applies its stream with (not a connection:
/// it is in no client list, and may not block).
struct MasterClient {
    client: ClientState,
    _rx: tokio::sync::mpsc::UnboundedReceiver<crate::client::Outbound>,
}

impl MasterClient {
    fn new(shared: &Shared, id: u64) -> MasterClient {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let addr = *shared.local_addr.lock();
        let cs = Arc::new(ClientShared::new(id, addr, addr, shared.clock.now_ms(), tx));
        let mut client = ClientState::new(cs, true);
        client.caller = Caller::Exec;
        MasterClient { client, _rx: rx }
    }
}

/// Applies one frame of the primary's stream as the replica's master
/// client (`ctx.client`), under the replica's core lock.
fn apply_frame(ctx: &mut Ctx<'_>, frame: &Frame) {
    for op in &frame.ops {
        let Some(db) = op.db else { continue };
        if db >= ctx.core.ks.dbs.len() {
            continue;
        }
        ctx.client.set_db(db);
        match cmd::table().lookup(&op.argv) {
            cmd::Lookup::Found(c) => {
                let reply = cmd::call::call(ctx, c, &op.argv);
                if let Reply::Error(e) = reply {
                    tracing::warn!(
                        "replica: the primary's {} failed here: {}",
                        c.fullname,
                        String::from_utf8_lossy(&e)
                    );
                }
            }
            _ => tracing::warn!("replica: unknown command in the stream: {}", String::from_utf8_lossy(&op.argv[0])),
        }
    }
}

/// Runs until shutdown.
pub(crate) async fn run(shared: Arc<Shared>) {
    let wake = {
        let mut core = shared.core.lock().await;
        // `replicaof host port` given at start.
        let start = core.config.get_str("replicaof").to_string();
        if let Some((host, port)) = start.split_once(' ').and_then(|(h, p)| Some((h.to_string(), p.parse().ok()?))) {
            if core.repl.master.is_none() {
                let id = shared.next_id();
                core.repl.become_replica(id, host, port);
            }
        }
        core.repl.wake.clone()
    };
    let mut shutdown = shared.shutdown_receiver();
    let mut master: Option<MasterClient> = None;
    let mut next_ping = None;
    let mut last_ack = Instant::now();
    let mut next: Option<Duration> = None;
    loop {
        let tick = next.unwrap_or(Duration::from_secs(1)).min(Duration::from_secs(1));
        tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => return,
            _ = wake.notified() => {}
            _ = tokio::time::sleep(tick) => {}
        }
        next = turn(&shared, &mut master, &mut next_ping, &mut last_ack).await;
    }
}

/// One turn of the task; returns when the next lagged frame is due.
async fn turn(
    shared: &Arc<Shared>,
    master: &mut Option<MasterClient>,
    next_ping: &mut Option<Instant>,
    last_ack: &mut Instant,
) -> Option<Duration> {
    // What to do, read under one short hold.
    let (target, link, requests) = {
        let mut core = shared.core.lock().await;
        let requests = std::mem::take(&mut core.repl.requests);
        match &core.repl.master {
            Some(m) => {
                let resync = m.link.as_ref().is_some_and(|l| {
                    l.closed.load(Ordering::Acquire)
                        || l.diverged.load(Ordering::Acquire) && !l.paused.load(Ordering::Acquire) && l.is_online()
                });
                if master.as_ref().is_none_or(|c| c.client.id != m.client_id) {
                    *master = Some(MasterClient::new(shared, m.client_id));
                }
                let target = (m.tcp.is_none() && (m.link.is_none() || resync)).then(|| (m.host.clone(), m.port));
                (target, m.link.clone(), requests)
            }
            None => {
                *master = None;
                (None, None, requests)
            }
        }
    };
    if let Some((host, port)) = target {
        attach(shared, &host, port).await;
        return None;
    }
    let mut next = None;
    if let (Some(link), Some(mc)) = (link, master.as_mut()) {
        let (frames, due) = link.take_due();
        next = due;
        if !frames.is_empty() {
            // A replica answers GETACK with the offset before it (Redis
            // updates the processed offset after the command).
            // Acknowledged when asked (GETACK), else by the periodic ack.
            let asked = frames
                .iter()
                .rev()
                .find(|f| {
                    f.ops.len() == 1 && f.ops[0].argv.first().is_some_and(|a| a.eq_ignore_ascii_case(b"replconf"))
                })
                .map(|f| f.start);
            let mut core = shared.core.lock().await;
            core.control.actor = Default::default();
            for f in &frames {
                let mut ctx = Ctx { core: &mut core, client: &mut mc.client, shared };
                apply_frame(&mut ctx, f);
                core.repl.forward(f);
            }
            if let Some(m) = core.repl.master.as_mut() {
                m.last_io_ms = shared.clock.now_ms();
            }
            core.after_command();
            drop(core);
            if let Some(offset) = asked {
                link.ack(offset);
            }
        }
        if link.is_online() && !link.paused.load(Ordering::Acquire) && last_ack.elapsed() >= Duration::from_secs(1) {
            // The replica's REPLCONF ACK, every second: what it processed.
            *last_ack = Instant::now();
            let processed = shared.core.lock().await.repl.offset;
            link.ack(processed);
        }
    }
    {
        let mut core = shared.core.lock().await;
        core.repl.prune();
        let core = &mut *core;
        core.repl.serve_waits(&mut core.blocking);
        // The heartbeat, every `repl-ping-replica-period` seconds from the
        // first replica on.
        let period: u64 = core.config.repl_ping_replica_period_secs;
        let period = Duration::from_secs(period.max(1));
        match *next_ping {
            _ if core.repl.replicas.is_empty() => *next_ping = None,
            None => *next_ping = Some(Instant::now() + period),
            Some(t) if Instant::now() >= t => {
                *next_ping = Some(Instant::now() + period);
                core.repl.ping();
            }
            Some(_) => {}
        }
        core.after_command();
    }
    for r in requests {
        match r {
            Request::Failover { waiter, replica } => {
                let result = failover(shared, replica).await;
                if let Some(w) = waiter {
                    let reply = match result {
                        Ok(addr) => crate::protocol::Reply::bulk_str(&addr.to_string()),
                        Err(e) => crate::protocol::Reply::error(format!("ERR {e}")),
                    };
                    shared.core.lock().await.blocking.serve(w, reply);
                }
            }
        }
    }
    next
}

/// Makes the RDB files of full resynchronisations (`PSYNC`/`SYNC` over
/// TCP, `cmd::replication::full_sync_step`): a slice of at most
/// [`SYNC_SLICE`] of core-lock time per turn of the event loop, so that
/// other clients are served between slices. Runs until shutdown.
pub(crate) async fn full_syncs(shared: Arc<Shared>) {
    let wake = shared.core.lock().await.repl.sync_wake.clone();
    let mut shutdown = shared.shutdown_receiver();
    loop {
        loop {
            let more = {
                let mut core = shared.core.lock().await;
                cmd::replication::full_sync_step(&mut core, Some(Instant::now() + SYNC_SLICE))
            };
            if !more || shared.stopping() {
                break;
            }
            tokio::task::yield_now().await;
        }
        tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => return,
            _ = wake.notified() => {}
        }
    }
}

/// Core-lock time per slice of a full resynchronisation's file.
const SYNC_SLICE: Duration = Duration::from_millis(1);

/// Attaches this replica to its primary at `host port` (a full
/// resynchronisation).
pub(crate) async fn attach(me: &Arc<Shared>, host: &str, port: u16) {
    let attaching = me.core.lock().await.repl.attaching.clone();
    let _one_at_a_time = attaching.lock().await;
    {
        // Attached meanwhile (by the task, or a failover)?
        let core = me.core.lock().await;
        let Some(m) = core.repl.master.as_ref() else { return };
        let current = m.link.as_ref().is_some_and(|l| {
            !l.closed.load(Ordering::Acquire)
                && (!l.diverged.load(Ordering::Acquire) || l.paused.load(Ordering::Acquire))
        });
        if current && m.host == host && m.port == port {
            return;
        }
    }
    let Some(primary) = find(host, port) else {
        // Not a node of this process: the primary is reached over TCP, by
        // a task of its own for as long as this node replicates it.
        let mut core = me.core.lock().await;
        if let Some(m) = core.repl.master.as_mut() {
            if m.tcp.is_none() && m.host == host && m.port == port {
                let link = crate::replication::TcpLink::new();
                let stop = link.stop.clone();
                m.tcp = Some(link);
                tokio::spawn(tcp::run(me.clone(), host.to_string(), port, m.client_id, stop));
            }
        }
        return;
    };
    let wake_me = me.core.lock().await.repl.wake.clone();
    let my_addr = *me.local_addr.lock();
    let primary_addr = *primary.local_addr.lock();
    let (dbs, offset, replid, ledger, link) = {
        let mut p = primary.core.lock().await;
        let link = Arc::new(Link::new(primary_addr, my_addr, wake_me, p.repl.wake.clone()));
        p.repl.attach(link.clone());
        p.after_command();
        tracing::info!("Replica {my_addr} asks for synchronization; full resync (in process)");
        (p.ks.dbs.clone(), p.repl.offset, p.repl.replid.clone(), p.repl.ledger.clone(), link)
    };
    let mut core = me.core.lock().await;
    let Some(m) = core.repl.master.as_ref() else {
        link.close();
        return;
    };
    if !(m.host == host && m.port == port) {
        link.close();
        return;
    }
    if let Some(old) = &m.link {
        old.close();
    }
    core.control.actor = Default::default();
    replace_keyspace(&mut core, dbs);
    let now = me.clock.now_ms();
    let repl = &mut core.repl;
    repl.offset = offset;
    repl.replid = replid;
    repl.replid2 = "0".repeat(40);
    repl.second_offset = -1;
    repl.backlog = true;
    repl.reset_backlog();
    repl.ledger = ledger;
    if let Some(m) = repl.master.as_mut() {
        m.link = Some(link.clone());
        m.last_io_ms = now;
        m.trouble = None;
    }
    // The replica's own replicas follow it: they resynchronise too.
    for l in &repl.replicas {
        l.close();
    }
    core.after_command();
    drop(core);
    tracing::info!("MASTER <-> REPLICA sync: Finished with success ({host}:{port}, offset {offset})");
    link.ack(offset);
}

/// The keyspace becomes `dbs` (what a full resynchronisation loads); every
/// key of before and after counts as touched (WATCH, lock history).
fn replace_keyspace(core: &mut Core, mut dbs: Vec<crate::db::Db>) {
    // A file being made for this node's own replicas is of the keyspace
    // about to go: they resynchronise anyway.
    cmd::replication::abort_full_sync(core);
    let ks = &mut core.ks;
    dbs.truncate(ks.dbs.len());
    for (i, db) in ks.dbs.iter().enumerate() {
        ks.sig.images.all(db, i);
    }
    for (i, db) in ks.dbs.iter().enumerate().chain(dbs.iter().enumerate()) {
        let keys: Vec<bytes::Bytes> = db.keys().map(crate::db::Key::to_bytes).collect();
        for k in keys {
            ks.sig.touch(i, &k);
        }
    }
    for (i, db) in dbs.into_iter().enumerate() {
        ks.dbs[i] = db;
    }
}

/// Promotes a replica of `primary` (the one on `replica_port`, or the first
/// online one) with what it has received now, and makes `primary` its
/// replica: writes still on the link are lost. Lock holders the primary had
/// and the new primary lacks go to the topology's ledger. Returns the new
/// primary's address once the old one has resynchronised from it.
pub(crate) async fn failover(primary: &Arc<Shared>, replica_port: Option<u16>) -> Result<SocketAddr, String> {
    let new_addr = promote_replica(primary, replica_port, false).await?;
    follow(primary, new_addr).await;
    Ok(new_addr)
}

/// The first half of [`failover`]: a replica of `primary` is promoted (any
/// replica still linked when `primary_down`: the links of a crashed
/// primary are down), the ledger records the lost grants, the other
/// replicas follow the new primary; `primary` itself is left as it is (a
/// crashed primary is converted when it comes back, [`follow`]).
pub(crate) async fn promote_replica(
    primary: &Arc<Shared>,
    replica_port: Option<u16>,
    primary_down: bool,
) -> Result<SocketAddr, String> {
    let old_addr = *primary.local_addr.lock();
    let now = primary.clock.now_ms();
    let (link, old_locks, granted, others, primary_offset) = {
        let p = primary.core.lock().await;
        if p.repl.is_replica() {
            return Err("this node is a replica".into());
        }
        let Some(link) = p
            .repl
            .replicas
            .iter()
            .find(|l| {
                l.tcp.is_none()
                    && (l.is_online() || primary_down && !l.closed.load(Ordering::Acquire))
                    && replica_port.is_none_or(|port| l.replica.port() == port)
            })
            .cloned()
        else {
            return Err("no online replica to promote".into());
        };
        let old_locks = p.control.locks(&p.ks, None, now);
        let granted: Vec<(usize, bytes::Bytes, bytes::Bytes, String)> = p
            .control
            .history
            .as_ref()
            .map(|h| {
                h.events(None, 0)
                    .into_iter()
                    .filter(|e| e.event == "acquired")
                    .map(|e| (e.db, e.key, e.holder, format!("client {} ({})", e.client, e.command)))
                    .collect()
            })
            .unwrap_or_default();
        let others: Vec<Arc<Link>> = p.repl.replicas.iter().filter(|l| !Arc::ptr_eq(l, &link)).cloned().collect();
        (link, old_locks, granted, others, p.repl.offset)
    };
    let replica_offset = link.acked.load(Ordering::Acquire);
    let new_addr = link.replica;
    let Some(new_primary) = find(&new_addr.ip().to_string(), new_addr.port()) else {
        return Err(format!("the replica {new_addr} is gone"));
    };
    // The replica stops listening to the old primary (its promotion closes
    // the link under its lock): what was not delivered yet is lost here.
    let lost = {
        let mut n = new_primary.core.lock().await;
        n.repl.promote();
        if let Some(m) = &n.cluster {
            // A cluster node takes its primary's slots in the same step.
            m.topo.promote(m.me);
        }
        let new_locks = n.control.locks(&n.ks, None, now);
        let mut lost = Vec::new();
        for l in &old_locks {
            let kept = new_locks.iter().find(|x| x.db == l.db && x.key == l.key);
            for h in &l.holders {
                if kept.is_some_and(|k| k.holders.iter().any(|x| x.id == h.id)) {
                    continue;
                }
                let lease = h.lease_ms.or(l.lease_ms);
                let granted_by = granted
                    .iter()
                    .rev()
                    .find(|(db, key, holder, _)| *db == l.db && *key == l.key && *holder == h.id)
                    .map(|g| g.3.clone());
                lost.push(LostGrant {
                    db: l.db,
                    key: l.key.clone(),
                    holder: h.id.clone(),
                    until_ms: lease.map(|ms| now.saturating_add_signed(ms)),
                    from: old_addr.to_string(),
                    to: new_addr.to_string(),
                    granted_by,
                    replica_offset,
                    primary_offset,
                });
            }
        }
        {
            let mut ledger = n.repl.ledger.lock();
            ledger.failovers.push(format!("{old_addr} -> {new_addr}: {} lock grant(s) lost", lost.len()));
            ledger.lost.extend(lost.iter().cloned());
        }
        if !lost.is_empty() {
            n.repl.ledger_cursor = n.control.history.as_ref().map_or(u64::MAX, |h| h.last_id());
        }
        n.after_command();
        lost.len()
    };
    tracing::warn!("failover: {new_addr} promoted in place of {old_addr} ({lost} lock grant(s) lost)");
    // The other replicas follow the new primary.
    let host = new_addr.ip().to_string();
    for l in others {
        l.close();
        if let Some(r) = find(&l.replica.ip().to_string(), l.replica.port()) {
            {
                let mut c = r.core.lock().await;
                let id = r.next_id();
                c.repl.become_replica(id, host.clone(), new_addr.port());
            }
            attach(&r, &host, new_addr.port()).await;
        }
    }
    Ok(new_addr)
}

/// The old primary `node` becomes a replica of `new_addr` (the second half
/// of [`failover`]; a Sentinel's `+convert-to-slave`).
pub(crate) async fn follow(node: &Arc<Shared>, new_addr: SocketAddr) {
    let host = new_addr.ip().to_string();
    {
        let mut p = node.core.lock().await;
        let id = node.next_id();
        p.repl.become_replica(id, host.clone(), new_addr.port());
        p.repl.replicas.clear();
    }
    attach(node, &host, new_addr.port()).await;
}

/// What [`super::Server::control_replication`] does to a node's links
/// (on a primary: to its replicas, or the one on `port`; on a replica: to
/// its primary). See `replication::link`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplicationControl {
    /// Hold the stream: writes pile up unacknowledged.
    Pause,
    /// Let it flow again, in order.
    Resume,
    /// Deliver each write that many milliseconds after it was made.
    Lag(u64),
    /// Lose what was not delivered yet, as a crash would.
    DropPending,
    /// Take the link down (`master_link_status:down`).
    Break,
    /// Bring it back (it catches up).
    Restore,
}

impl super::Server {
    /// Starts a primary and `replicas` replicas of it on consecutive ports
    /// from `config`'s (free ports with port 0), each replica attached and
    /// in sync before this returns; the primary comes first.
    ///
    /// ```no_run
    /// let nodes = rlockd::Server::start_with_replicas(1, rlockd::Config::default()).unwrap();
    /// let (primary, replica) = (&nodes[0], &nodes[1]);
    /// // ... a lock on the primary, then:
    /// primary.control_replication(rlockd::ReplicationControl::Pause, None);
    /// let promoted = primary.failover().unwrap(); // the replica's address
    /// assert_eq!(promoted, replica.addr());
    /// ```
    pub fn start_with_replicas(
        replicas: usize,
        config: crate::config::Config,
    ) -> Result<Vec<super::Server>, crate::error::Error> {
        let nodes = Self::start_many(replicas + 1, config)?;
        for r in &nodes[1..] {
            r.replicate_from(&nodes[0]);
        }
        Ok(nodes)
    }

    /// Makes this server a replica of `primary` (as `REPLICAOF`) and waits
    /// until it is in sync.
    pub fn replicate_from(&self, primary: &super::Server) {
        let addr = primary.addr();
        let shared = self.shared.clone();
        self.block_on(async move {
            {
                let mut core = shared.core.lock().await;
                let id = shared.next_id();
                core.repl.become_replica(id, addr.ip().to_string(), addr.port());
            }
            attach(&shared, &addr.ip().to_string(), addr.port()).await;
        });
    }

    /// Fails over from this primary to its first online replica (as `RLOCKD
    /// REPL FAILOVER`): the replica is promoted with what it has received,
    /// this server becomes its replica. Returns the new primary's address.
    pub fn failover(&self) -> Result<SocketAddr, crate::error::Error> {
        let shared = self.shared.clone();
        self.block_on(async move { failover(&shared, None).await }).map_err(crate::error::Error::Topology)
    }

    /// Acts on this node's replication links (as `RLOCKD REPL …`); returns
    /// how many links (or, for [`ReplicationControl::DropPending`], writes)
    /// it concerned.
    pub fn control_replication(&self, op: ReplicationControl, replica_port: Option<u16>) -> usize {
        self.with_core(move |core| {
            let links = core.repl.links(replica_port);
            let mut n = links.len();
            for l in &links {
                match op {
                    ReplicationControl::Pause => l.paused.store(true, Ordering::Release),
                    ReplicationControl::Resume => l.paused.store(false, Ordering::Release),
                    ReplicationControl::Lag(ms) => l.lag_ms.store(ms, Ordering::Release),
                    ReplicationControl::Break => l.broken.store(true, Ordering::Release),
                    ReplicationControl::Restore => l.broken.store(false, Ordering::Release),
                    ReplicationControl::DropPending => {}
                }
                l.to_replica.notify_one();
                l.to_primary.notify_one();
            }
            if op == ReplicationControl::DropPending {
                n = links.iter().map(|l| l.drop_pending()).sum();
            }
            n
        })
    }

    /// Runs `f` to completion on a runtime of its own (on a helper thread,
    /// so this also works inside `#[tokio::test]`).
    fn block_on<R: Send>(&self, f: impl std::future::Future<Output = R> + Send) -> R {
        std::thread::scope(|s| {
            s.spawn(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(f))
                .join()
                .expect("replication task")
        })
    }
}
