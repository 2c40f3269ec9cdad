//! The server's state and its single owner.
//!
//! [`Core`] is everything commands read and write: the keyspace, runtime
//! config, clients, pub/sub, blocked clients, WATCHed keys, the script
//! engine and statistics. It lives behind one mutex in [`Shared`]: whoever
//! holds the lock owns the whole server state, which is what makes a
//! command, a `MULTI`/`EXEC` block or a Lua script atomic. A server's
//! connections all run on its one event-loop thread, so the lock is only
//! ever contended by the `Server` methods called from other threads.
//!
//! **Invariant:** no `.await` happens while the core lock is held; so a lock
//! holder is always making progress, and a long script is the only way to
//! hold it for long — during which the script's hook serves the other
//! connections through [`ServerIo::serve_busy`] (`BUSY`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{Mutex, Notify};

use crate::blocking::Blocking;
use crate::client::{ClientRecord, ClientShared, ClientState};
use crate::clock::Clock;
use crate::config::RuntimeConfig;
use crate::db::{Keyspace, Map};
use crate::pubsub::PubSub;
use crate::script::Scripting;
use crate::tx::Watches;

/// Per-command statistics (`INFO commandstats`).
#[derive(Debug, Default, Clone)]
pub struct CmdStat {
    pub calls: u64,
    pub usec: u64,
    pub rejected: u64,
    pub failed: u64,
    /// Latency histogram (`LATENCY HISTOGRAM`, `INFO latencystats`): calls
    /// by power-of-two bucket, bucket `b` holding latencies up to
    /// 1024·2^b ns (the last one everything longer).
    pub latency: [u64; LATENCY_BUCKETS],
}

/// Buckets of [`CmdStat::latency`]: 1.024 µs … about 8.6 s.
pub const LATENCY_BUCKETS: usize = 24;

impl CmdStat {
    pub fn record_latency(&mut self, usec: u64) {
        let ns = usec.saturating_mul(1000);
        let b = if ns <= 1024 { 0 } else { (64 - ((ns - 1) >> 10).leading_zeros()) as usize };
        self.latency[b.min(LATENCY_BUCKETS - 1)] += 1;
    }

    pub fn latency_samples(&self) -> u64 {
        self.latency.iter().sum()
    }

    /// The upper bound (ns) of the bucket holding percentile `p`.
    pub fn latency_percentile_ns(&self, p: f64) -> u64 {
        let total = self.latency_samples();
        let want = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, n) in self.latency.iter().enumerate() {
            seen += n;
            if seen >= want {
                return 1024 << b;
            }
        }
        1024 << (LATENCY_BUCKETS - 1)
    }
}

/// One `SLOWLOG` / `COMMANDLOG` entry.
#[derive(Debug, Clone)]
pub struct SlowEntry {
    pub id: u64,
    pub time_secs: u64,
    /// The duration in µs (slow), or the size in bytes (large request,
    /// large reply).
    pub value: u64,
    pub args: Vec<Bytes>,
    pub addr: String,
    pub name: Bytes,
}

/// Valkey 8.1's command log types, in its order (`SLOWLOG` is `Slow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    Slow = 0,
    LargeRequest = 1,
    LargeReply = 2,
}

impl LogKind {
    pub const NAMES: [&'static str; 3] = ["slow", "large-request", "large-reply"];
}

/// The profiles with `COMMANDLOG` (Valkey from 8.1), whose commands are
/// measured for the large-request and large-reply logs.
pub const COMMANDLOG: [crate::version::Version; 2] =
    [crate::version::Version::NEVER, crate::version::Version::new(8, 1, 0)];

/// One command log: newest entry first, and the next entry's id.
#[derive(Debug, Default)]
pub struct CommandLog {
    pub entries: std::collections::VecDeque<SlowEntry>,
    pub next_id: u64,
}

/// Server statistics.
#[derive(Debug, Default)]
pub struct Stats {
    pub commands: Vec<CmdStat>,
    pub total_commands: u64,
    pub total_connections: u64,
    pub rejected_connections: u64,
    pub expired_keys: u64,
    /// Keys evicted under `maxmemory`.
    pub evicted_keys: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub total_error_replies: u64,
    /// Error replies by prefix (`INFO errorstats`), in Redis's order.
    pub error_counts: std::collections::BTreeMap<Bytes, u64>,
    /// The reply of the command being finished repeats an error already
    /// counted (a script returning a `redis.call` error): count it once.
    pub error_already_counted: bool,
    pub pubsub_messages: u64,
    /// The command logs: `SLOWLOG` is the first; Valkey 8.1's
    /// `COMMANDLOG` has all three.
    pub commandlog: [CommandLog; 3],
    /// Commands run inside another command (a script's `redis.call`, EXEC)
    /// and their total time: lets a script's time be split into Lua and
    /// command time.
    pub nested_calls: u64,
    pub nested_nanos: u64,
    /// `instantaneous_ops_per_sec`: ops/s over the last 16 samples taken by
    /// the server cron (Redis's STATS_METRIC_SAMPLES), and the last sample.
    pub ops_rates: [u64; 16],
    pub ops_rate_idx: usize,
    pub ops_last: (u64, u64),
}

impl Stats {
    /// Records a commands-per-second sample (called about every 100 ms).
    pub fn sample_ops(&mut self, now_ms: u64) {
        let (t0, n0) = self.ops_last;
        if t0 != 0 && now_ms > t0 {
            let rate = self.total_commands.saturating_sub(n0) * 1000 / (now_ms - t0);
            self.ops_rates[self.ops_rate_idx] = rate;
            self.ops_rate_idx = (self.ops_rate_idx + 1) % self.ops_rates.len();
        }
        self.ops_last = (now_ms, self.total_commands);
    }

    pub fn instantaneous_ops(&self) -> u64 {
        self.ops_rates.iter().sum::<u64>() / self.ops_rates.len() as u64
    }

    /// Counts an error reply (Redis's `afterErrorReply`): its prefix is the
    /// first word when a space comes within 32 bytes, else `ERR`.
    pub fn count_error(&mut self, text: &[u8]) {
        self.total_error_replies += 1;
        let prefix = match text[..text.len().min(32)].iter().position(|&c| c == b' ') {
            Some(n) if n > 0 => &text[..n],
            _ => b"ERR",
        };
        if let Some(n) = self.error_counts.get_mut(prefix) {
            *n += 1;
        } else if self.error_counts.len() < 128 {
            // Redis stops adding new prefixes past 128 (ERROR_STATS_NUMBER).
            self.error_counts.insert(Bytes::copy_from_slice(prefix), 1);
        }
    }
}

/// All mutable server state. See the module docs.
pub struct Core {
    pub ks: Keyspace,
    pub config: RuntimeConfig,
    /// ACL users and the ACL log.
    pub acl: crate::acl::Acl,
    pub stats: Stats,
    /// Connected clients by id.
    pub clients: Map<u64, ClientRecord>,
    pub pubsub: PubSub,
    pub blocking: Blocking,
    pub watches: Watches,
    /// Clients in `MONITOR` mode.
    pub monitors: crate::monitor::Monitors,
    /// The Lua engine; taken out (`None`) while a script runs.
    pub scripting: Option<Box<Scripting>>,
    /// The last top-level command found the server over `maxmemory` with
    /// nothing left to evict (a script's first write is refused then).
    pub pre_command_oom: bool,
    /// Test control's state: lock history, snapshots (`test-control`).
    pub control: crate::control::Control,
    /// Unix ms of the last (pretend) save, for `LASTSAVE`/`INFO persistence`.
    pub lastsave: u64,
    /// Nesting depth of `cmd::call::call` (0 = top level).
    pub call_depth: u32,
    /// The top-level command's time in µs (its `ks.now` is the same in
    /// ms): what `TIME` answers inside a script from Redis 7.2 on.
    pub call_time_us: u64,
    /// Active expiry enabled (`DEBUG SET-ACTIVE-EXPIRE`).
    pub active_expire: bool,
    /// Client-side caching: the tracking table and BCAST prefixes.
    pub tracking: crate::tracking::Tracking,
    /// This node's place in a cluster (`None`: a standalone server).
    pub cluster: Option<crate::cluster::Member>,
    /// Replication: this node's stream, its replicas, its primary.
    pub repl: crate::replication::ReplState,
    /// The command table as the ACL sees it under the profile served.
    pub catalog: Arc<crate::acl::Catalog>,
    /// Builds the catalog of a profile (the command table's, above).
    catalog_of: CatalogOf,
}

/// How the floor above describes its command table to the ACL, per profile.
pub type CatalogOf = fn(crate::version::Profile) -> Arc<crate::acl::Catalog>;

impl Core {
    /// The state of a new server; `catalog` is the command table as the
    /// ACL sees it (its length sizes the per-command statistics).
    pub fn new(config: RuntimeConfig, databases: usize, now_ms: u64, catalog_of: CatalogOf) -> Core {
        let catalog = catalog_of(config.profile);
        let commands = catalog.len;
        let mut acl = crate::acl::Acl::new(&catalog, config.requirepass.as_deref());
        let record_locks = config.test_control;
        let profile = config.profile;
        acl.set_sanitize_new_users(profile.at_least(7, 2, 0));
        let mut ks = Keyspace::new(databases);
        ks.now = now_ms;
        ks.sig.notify_flags = config.notify_flags;
        ks.tuning = config.tuning();
        ks.sig.track_touches = record_locks;
        crate::control::Control::attach(record_locks, &mut ks);
        Core {
            ks,
            acl,
            config,
            stats: Stats { commands: vec![CmdStat::default(); commands], ..Default::default() },
            clients: Map::default(),
            pubsub: PubSub::default(),
            blocking: Blocking::default(),
            watches: Watches::default(),
            monitors: Default::default(),
            scripting: Some(Box::new({
                let mut s = Scripting::new();
                s.set_profile(profile);
                s
            })),
            pre_command_oom: false,
            control: crate::control::Control::new(record_locks),
            lastsave: now_ms / 1000,
            call_depth: 0,
            call_time_us: 0,
            active_expire: true,
            tracking: Default::default(),
            cluster: None,
            repl: Default::default(),
            catalog,
            catalog_of,
        }
    }

    /// Acts on what the last top-level command did to the keyspace: expired
    /// key counts, WATCH invalidation, blocked clients, keyspace events.
    pub fn after_command(&mut self) {
        if self.tracking.active {
            // What the server did itself (active expiry, a control command).
            self.track_modified(0, 0);
        }
        let sig = &mut self.ks.sig;
        if sig.expired != 0 {
            self.stats.expired_keys += sig.expired;
            sig.expired = 0;
        }
        self.stats.keyspace_hits += std::mem::take(&mut sig.hits);
        self.stats.keyspace_misses += std::mem::take(&mut sig.misses);
        if !sig.touched.is_empty() {
            let touched = std::mem::take(&mut sig.touched);
            let control = &mut self.control;
            if let Some(history) = control.history.as_mut() {
                let before = history.last_id();
                history.observe(&touched, &self.ks, self.ks.now, &control.actor);
                if self.repl.master.is_some() && history.last_id() > before {
                    // Applied from its primary's stream or file (`RLOCKD HISTORY`).
                    control.replica_runs.note(before + 1, history.last_id());
                }
                let since = std::mem::replace(&mut control.events_published, history.last_id());
                let channel = crate::control::history::LOCK_EVENTS_CHANNEL.as_bytes();
                if since < history.last_id() && self.pubsub.has_reserved_listeners(channel) {
                    for e in history.events(None, since) {
                        let msg = e.to_json();
                        let (limit, now) = (self.config.pubsub_limit, self.ks.now);
                        self.pubsub.publish_reserved(channel, msg.as_bytes(), limit, now);
                    }
                }
            }
            self.watches.on_touched(&touched, &self.ks);
            self.blocking.on_touched(&touched);
            let mut t = touched;
            t.clear();
            self.ks.sig.touched = t;
            self.ks.sig.server_touched.clear();
            self.tracking.cursor = 0;
        }
        self.ks.sig.images.clear();
        // A primary cut off and replaced: what it grants now is lost.
        if self.repl.cut_off.is_some() {
            self.record_cut_off_grants();
        }
        // Replication: keys the server itself expired, lost lock grants.
        if self.repl.feeding() || self.ks.sig.repl_deletes.is_some() || self.repl.ledger_cursor != u64::MAX {
            self.repl.after_command(&mut self.ks.sig, self.control.history.as_ref());
        }
        // Keyspace events, then messages deferred by EXEC / scripts.
        self.pubsub.flush(&mut self.ks.sig, self.config.pubsub_limit, self.ks.now);
        self.ks.sig.track_touches =
            self.watches.is_active() || self.blocking.is_active() || self.control.is_on() || self.tracking.active;
    }

    /// The locks this primary granted since it was replaced on the other
    /// side of a partition ([`crate::replication::CutOff`]) go to the
    /// ledger as lost grants, with their leases.
    fn record_cut_off_grants(&mut self) {
        let Some(history) = self.control.history.as_ref() else { return };
        let Some(cut) = self.repl.cut_off.as_mut() else { return };
        let last = history.last_id();
        if cut.cursor >= last {
            return;
        }
        let acquired: Vec<_> = history.events(None, cut.cursor).into_iter().filter(|e| e.event == "acquired").collect();
        cut.cursor = last;
        let cut = cut.clone();
        if acquired.is_empty() {
            return;
        }
        let now = self.ks.now;
        let locks = self.control.locks(&self.ks, None, now);
        let partition = self.repl.ledger.lock().partition.clone();
        let mut ledger = self.repl.ledger.lock();
        for e in acquired {
            let lock = locks.iter().find(|l| l.db == e.db && l.key == e.key);
            let Some(h) = lock.and_then(|l| l.holders.iter().find(|h| h.id == e.holder)) else { continue };
            let lease = h.lease_ms.or(lock.and_then(|l| l.lease_ms));
            ledger.cut_off_grant(crate::replication::ledger::LostGrant {
                db: e.db,
                key: e.key.clone(),
                holder: e.holder.clone(),
                until_ms: lease.map(|ms| now.saturating_add_signed(ms)),
                from: cut.from.clone(),
                to: cut.to.clone(),
                granted_by: Some(format!("client {} ({}) after the failover", e.client, e.command)),
                granted_ms: Some(e.time_ms),
                lost_ms: now,
                replica_offset: cut.replica_offset,
                primary_offset: self.repl.offset,
                partition: partition.clone(),
            });
        }
    }

    /// Sends the invalidations of the keys modified since the last call,
    /// during a command of client `current` (0: the server's own doing);
    /// `writer` is who changed them as BCAST's NOLOOP sees it (0 for a
    /// script's pseudo-client, as in Redis).
    pub fn track_modified(&mut self, current: u64, writer: u64) {
        while let Some((_, key)) = self.ks.sig.touched.get(self.tracking.cursor) {
            let key = key.to_bytes();
            let by_server = self.ks.sig.server_touched.binary_search(&self.tracking.cursor).is_ok();
            self.tracking.cursor += 1;
            let writer = if by_server { 0 } else { writer };
            self.tracking.invalidate_key(&key, current, writer, &mut self.clients);
        }
    }

    /// End of an event-loop turn (a connection's batch, an active-expiry
    /// pass): BCAST invalidations go out and the tracking table is cut to
    /// `tracking-table-max-keys`, as Redis does before sleeping.
    pub fn before_sleep(&mut self) {
        if self.repl.getack {
            self.repl.before_sleep();
        }
        if self.tracking.active {
            self.tracking.flush_bcast(&mut self.clients);
            let max = self.config.tracking_table_max_keys;
            self.tracking.limit_keys(max, &mut self.clients);
        }
    }

    /// Publishes the keyspace events queued so far (see
    /// [`PubSub::publish_events`]).
    pub fn publish_events(&mut self, defer: bool) {
        let now = self.ks.now;
        self.pubsub.publish_events(&mut self.ks.sig, self.config.pubsub_limit, now, defer);
    }

    /// Registers a connection's client; returns the protocol's bulk limit,
    /// or None when `maxclients` is reached.
    pub fn register_client(&mut self, client: &mut ClientState) -> Option<i64> {
        let max: usize = self.config.maxclients;
        if self.clients.len() >= max {
            self.stats.rejected_connections += 1;
            return None;
        }
        self.clients.insert(client.id, ClientRecord::new(client.shared.clone()));
        self.stats.total_connections += 1;
        client.authenticated = !self.acl.auth_required();
        Some(self.config.proto_max_bulk)
    }

    /// Removes everything a client left in the core (its entry,
    /// subscriptions, WATCHes, MONITOR, blocked-client waiter).
    pub fn unregister_client(&mut self, cs: &ClientShared) {
        if let Some(mode) = self.clients.shift_remove(&cs.id).and_then(|r| r.tracking) {
            self.tracking.disable(cs.id, &mode);
        }
        self.pubsub.remove_client(cs);
        self.watches.unwatch(cs.id);
        self.monitors.remove(cs.id);
        self.blocking.remove_client(cs.id);
    }

    /// The record of client `id` (the connection's, for a script or a
    /// blocked client's re-run, which share its id).
    pub fn client_record(&mut self, id: u64) -> Option<&mut ClientRecord> {
        self.clients.get_mut(&id)
    }

    /// Refreshes cached config-derived flags after `CONFIG SET`.
    pub fn config_changed(&mut self) {
        self.ks.sig.notify_flags = self.config.notify_flags;
        self.ks.tuning = self.config.tuning();
        if let Some(s) = self.scripting.as_mut() {
            s.set_profile(self.config.profile);
        }
        self.acl.set_sanitize_new_users(self.config.profile.at_least(7, 2, 0));
        if self.catalog.profile != self.config.profile {
            self.catalog = (self.catalog_of)(self.config.profile);
        }
    }

    /// The server this one answers as (`redis-version`, `valkey-version`).
    pub fn profile(&self) -> crate::version::Profile {
        self.config.profile
    }
}

/// State of the running script, readable without the core lock.
#[derive(Debug, Default)]
pub struct ScriptStatus {
    /// A script (or function) is running.
    pub running: AtomicBool,
    /// It has been running past `busy-reply-threshold`: waiters answer BUSY.
    pub busy: AtomicBool,
    /// `SCRIPT KILL` was requested.
    pub kill: AtomicBool,
    /// The running script has performed a write (then it cannot be killed).
    pub wrote: AtomicBool,
    /// The running script was started by `FCALL` (for error wording).
    pub is_function: AtomicBool,
}

/// What the server layer does for the layers below it: serve connections
/// from a busy script's hook, and move the listeners (`CONFIG SET port`).
pub trait ServerIo: Send + Sync {
    /// Called from a script's hook while it runs past
    /// `busy-reply-threshold`, on the event-loop thread the script blocks:
    /// accepts connections and answers what clients sent meanwhile
    /// (Redis's `processEventsWhileBlocked`).
    fn serve_busy(&self, core: &mut Core);
    /// Listens on `bind`/`port` instead (or on `old_bind`/`old_port` again
    /// if that fails); the new address.
    fn relisten(
        &self,
        bind: &str,
        port: u16,
        old_bind: &str,
        old_port: u16,
        backlog: u32,
    ) -> std::io::Result<SocketAddr>;
    /// Closes every listener: the port refuses connections (test control's
    /// crash of a node; `relisten` opens it again).
    fn stop_listening(&self);
    /// Crashes or revives the node of `target` (test control:
    /// `server/crash.rs`), on this server's event loop, then answers the
    /// client of this server blocked on `waiter`, if any.
    fn change_node(&self, target: Arc<Shared>, change: crate::replication::down::Change, waiter: Option<u64>);
    /// Sends `request` (commands in RESP) to the server at `host`:`port`
    /// over a connection made for the call and reads up to `replies`
    /// reply lines, synchronously, each step within `timeout` (`MIGRATE`:
    /// the event loop waits, as Redis's does). Fewer lines come back when
    /// the target closes or stops answering.
    fn exchange(
        &self,
        host: &str,
        port: &str,
        request: &[u8],
        replies: usize,
        timeout: std::time::Duration,
    ) -> Result<Vec<Vec<u8>>, ExchangeError>;
    /// Holds the whole server for `d` (`DEBUG SLEEP`: the core lock is held,
    /// nothing else runs).
    fn sleep(&self, d: std::time::Duration);
}

/// Why [`ServerIo::exchange`] failed before any reply was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExchangeError {
    /// The address does not resolve.
    Resolve,
    /// No connection within the timeout, or the request could not be sent.
    Write,
}

/// Bytes and socket operations, as `INFO stats` reports them.
#[derive(Debug, Default)]
pub struct NetStats {
    pub input_bytes: AtomicU64,
    pub output_bytes: AtomicU64,
    pub reads: AtomicU64,
    pub writes: AtomicU64,
}

/// `CLIENT PAUSE` state.
#[derive(Debug, Default)]
pub struct Pause {
    /// Clock ms until which clients are paused (0 = not paused).
    pub until_ms: AtomicU64,
    /// Only write commands are paused.
    pub writes_only: AtomicBool,
    /// Woken by `CLIENT UNPAUSE`.
    pub notify: Notify,
}

impl Pause {
    pub fn set(&self, until_ms: u64, writes_only: bool) {
        self.writes_only.store(writes_only, Ordering::Relaxed);
        self.until_ms.store(until_ms, Ordering::Release);
        self.notify.notify_waiters();
    }
    pub fn clear(&self) {
        self.until_ms.store(0, Ordering::Release);
        self.notify.notify_waiters();
    }
}

/// Everything a server shares between its tasks. One per server.
pub struct Shared {
    pub core: Mutex<Core>,
    pub clock: Clock,
    pub script: ScriptStatus,
    pub pause: Pause,
    pub next_client_id: AtomicU64,
    /// The address the server listens on (the first one, with several
    /// `bind` addresses); `CONFIG SET port` / `bind` change it.
    pub local_addr: parking_lot::Mutex<SocketAddr>,
    /// The server layer's sockets (unset for the socket-less test harness).
    pub io: std::sync::OnceLock<Arc<dyn ServerIo>>,
    /// Unix ms when the server started.
    pub started_ms: u64,
    pub run_id: String,
    /// Network counters for `INFO stats`, updated by connections without
    /// the core lock.
    pub net: NetStats,
    /// Set by [`Self::request_shutdown`] only; tasks wait on it
    /// ([`Self::shutdown_receiver`]).
    shutdown: tokio::sync::watch::Sender<bool>,
    /// The same request as a plain flag, for the per-command looks
    /// ([`Self::stopping`]): reading the `watch` takes its lock. Both are
    /// set together, by `request_shutdown`.
    stopping: AtomicBool,
    /// Injected faults (`RLOCKD FAULT`), also read by pub/sub delivery.
    pub faults: Arc<crate::control::faults::Faults>,
}

fn new_run_id() -> String {
    use rand::Rng;
    let mut r = rand::rng();
    (0..40).map(|_| char::from_digit(r.random_range(0..16), 16).expect("hex digit")).collect()
}

impl Shared {
    /// The state of a new server configured by `config` (`config.bind` is
    /// the address actually bound), for the command table `catalog`
    /// describes under the configuration's profile.
    pub fn new(config: &crate::config::Config, catalog: CatalogOf) -> Result<Shared, crate::error::Error> {
        if config.databases == 0 {
            return Err(crate::error::Error::Config("databases must be at least 1".into()));
        }
        let runtime_config = RuntimeConfig::new(config).map_err(crate::error::Error::Config)?;
        let clock = Clock::new();
        let now = clock.now_ms();
        let (shutdown, _) = tokio::sync::watch::channel(false);
        let faults = Arc::new(crate::control::faults::Faults::default());
        let mut core = Core::new(runtime_config, config.databases, now, catalog);
        core.pubsub.faults = faults.clone();
        Ok(Shared {
            core: Mutex::new(core),
            clock,
            script: ScriptStatus::default(),
            pause: Pause::default(),
            // Redis 7.0 creates its Lua clients (ids 1 and 2) before any
            // connection: the first connection's CLIENT ID is 3 there too.
            next_client_id: AtomicU64::new(3),
            local_addr: parking_lot::Mutex::new(config.bind),
            io: std::sync::OnceLock::new(),
            started_ms: now,
            run_id: new_run_id(),
            net: NetStats::default(),
            shutdown,
            stopping: AtomicBool::new(false),
            faults,
        })
    }

    pub fn next_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Requests a clean shutdown of the whole server.
    /// (Tasks wait for it with [`shutdown_requested`].)
    pub fn request_shutdown(&self) {
        // `send_replace` stores the value even when no task has subscribed
        // yet (a server stopped before any client connected); `send` would
        // drop it and the server would never stop.
        self.stopping.store(true, Ordering::Release);
        self.shutdown.send_replace(true);
    }

    /// True once shutdown was requested.
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// A receiver that changes when shutdown is requested (wait on it with
    /// [`shutdown_requested`]).
    pub fn shutdown_receiver(&self) -> tokio::sync::watch::Receiver<bool> {
        self.shutdown.subscribe()
    }
}

/// Resolves once shutdown is requested on `rx` — also when it was requested
/// before `rx` subscribed (a plain `changed()` would miss that and wait forever).
pub async fn shutdown_requested(rx: &mut tokio::sync::watch::Receiver<bool>) {
    // The guard `wait_for` returns is dropped at once: it is not `Send`.
    let _ = rx.wait_for(|stop| *stop).await;
}
