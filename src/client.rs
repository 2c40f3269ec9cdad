//! Per-connection state.
//!
//! [`ClientState`] is owned by the connection task and handed to commands
//! by `&mut`. [`ClientShared`] is the part other tasks see: the push channel
//! (pub/sub messages, unblocked replies), the kill switch, and what
//! `CLIENT LIST` reports.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::protocol::{Reply, Resp};

/// Something delivered to a connection from outside its own command stream.
#[derive(Debug)]
pub enum Outbound {
    /// A message already encoded for the client's protocol (pub/sub).
    Encoded(Bytes),
    /// A reply to encode with the client's protocol (e.g. an unblocked pop).
    Reply(Reply),
}

/// On whose behalf a command runs: what it may do (block, be shown to
/// MONITOR) follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// A connection's own command.
    Client,
    /// A command queued by `MULTI`, run by `EXEC`: may not block (Redis's
    /// "deny blocking").
    Exec,
    /// The pseudo-client of a running Lua script: may not block.
    Script,
    /// A blocked client's command re-run to serve it: may not block again,
    /// and is not fed to MONITOR a second time.
    BlockedRerun,
}

/// `CLIENT REPLY` mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyMode {
    #[default]
    On,
    Off,
    /// Skip the reply of the next command only.
    Skip,
    /// Internal: skip the reply of the current command.
    SkipThis,
    /// Internal: `CLIENT REPLY ON` just ran; its own `+OK` is sent even if a
    /// `SKIP` was pending for it (Redis clears the skip flag there).
    OnNow,
}

/// A client's address as `CLIENT LIST`, `CLIENT KILL` and `MONITOR` show
/// it: `ip:port` over TCP, the socket's path and `:0` over a Unix socket
/// (Redis prints both ends of a Unix connection as the server's path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientAddr {
    Tcp(SocketAddr),
    Unix(Arc<str>),
}

impl ClientAddr {
    /// A loopback TCP peer or any Unix-socket peer: what protected mode
    /// and `enable-protected-configs local` let in.
    pub fn is_local(&self) -> bool {
        match self {
            ClientAddr::Tcp(a) => a.ip().is_loopback(),
            ClientAddr::Unix(_) => true,
        }
    }

    /// True for a Unix-socket connection (flag `U` in `CLIENT LIST`).
    pub fn is_unix(&self) -> bool {
        matches!(self, ClientAddr::Unix(_))
    }
}

impl From<SocketAddr> for ClientAddr {
    fn from(a: SocketAddr) -> Self {
        ClientAddr::Tcp(a)
    }
}

impl std::fmt::Display for ClientAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientAddr::Tcp(a) => a.fmt(f),
            ClientAddr::Unix(path) => write!(f, "{path}:0"),
        }
    }
}

/// Fields of a client that other tasks read.
#[derive(Debug)]
pub struct ClientShared {
    pub id: u64,
    pub addr: ClientAddr,
    pub laddr: ClientAddr,
    /// Unix ms at connect.
    pub created_ms: u64,
    pub last_interaction_ms: AtomicU64,
    pub db: AtomicUsize,
    pub resp: AtomicU8,
    /// The last command run, as its command-table id (`NO_COMMAND`: none
    /// yet); `CLIENT LIST` prints its name.
    pub last_cmd: AtomicUsize,
    /// Channels / patterns / shard channels subscribed.
    pub sub_channels: AtomicUsize,
    pub sub_patterns: AtomicUsize,
    pub sub_shard: AtomicUsize,
    pub in_multi: AtomicBool,
    pub blocked: AtomicBool,
    /// In `MONITOR` mode (flag `O` in CLIENT LIST).
    pub monitor: AtomicBool,
    /// A replica's connection, after its `SYNC`/`PSYNC` (flag `S`).
    pub replica: AtomicBool,
    /// Bytes queued on `tx` and not yet written to the socket.
    pub pending_bytes: AtomicUsize,
    /// Unix ms since when `pending_bytes` has been over the soft limit (0 = not over).
    pub soft_limit_since: AtomicU64,
    /// Messages for the connection (pub/sub, invalidations, MONITOR): sent
    /// with [`ClientShared::send`], which also sets `outbound`.
    tx: mpsc::UnboundedSender<Outbound>,
    /// Set when something was queued on `tx`: the connection's task waits on
    /// this, not on the channel (polling a channel per request cost ~150
    /// instructions, the flag ~20), and then takes what the channel holds.
    pub outbound: crate::signal::Signal,
    /// Set by [`ClientShared::kill`]; the connection's task waits on it.
    pub kill: crate::signal::Signal,
    /// The connection's buffers as `CLIENT LIST` reports them.
    pub buffers: Buffers,
}

/// A connection's buffers, as its task last left them (`CLIENT LIST`'s
/// `qbuf`, `qbuf-free`, `rbs`, `rbp`, `multi`, `multi-mem`).
#[derive(Debug, Default)]
pub struct Buffers {
    /// Bytes read and not yet parsed.
    pub qbuf: AtomicUsize,
    /// The read buffer's capacity.
    pub qbuf_cap: AtomicUsize,
    /// The reply buffer's capacity.
    pub out_cap: AtomicUsize,
    /// The most reply bytes one batch produced.
    pub out_peak: AtomicUsize,
    /// Commands queued in `MULTI`, and their arguments' bytes.
    pub multi_len: AtomicUsize,
    pub multi_mem: AtomicUsize,
}

impl ClientShared {
    pub fn new(
        id: u64,
        addr: impl Into<ClientAddr>,
        laddr: impl Into<ClientAddr>,
        now_ms: u64,
        tx: mpsc::UnboundedSender<Outbound>,
    ) -> Self {
        ClientShared {
            id,
            addr: addr.into(),
            laddr: laddr.into(),
            created_ms: now_ms,
            last_interaction_ms: AtomicU64::new(now_ms),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            last_cmd: AtomicUsize::new(NO_COMMAND),
            sub_channels: AtomicUsize::new(0),
            sub_patterns: AtomicUsize::new(0),
            sub_shard: AtomicUsize::new(0),
            in_multi: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            monitor: AtomicBool::new(false),
            replica: AtomicBool::new(false),
            pending_bytes: AtomicUsize::new(0),
            soft_limit_since: AtomicU64::new(0),
            tx,
            outbound: crate::signal::Signal::new(),
            kill: crate::signal::Signal::new(),
            buffers: Buffers::default(),
        }
    }

    pub fn resp(&self) -> Resp {
        if self.resp.load(Ordering::Relaxed) == 3 {
            Resp::V3
        } else {
            Resp::V2
        }
    }

    /// Asks the connection to close (CLIENT KILL, output buffer limits).
    /// Every wait of the connection's task sees it (the flag stays set).
    pub fn kill(&self) {
        self.kill.notify();
    }

    /// Queues an encoded message; returns the bytes now pending.
    pub fn push_encoded(&self, b: Bytes) -> usize {
        let len = b.len();
        let pending = self.pending_bytes.fetch_add(len, Ordering::AcqRel) + len;
        if !self.send(Outbound::Encoded(b)) {
            self.pending_bytes.fetch_sub(len, Ordering::AcqRel);
        }
        pending
    }

    /// Queues a message for the connection and wakes its task; false if the
    /// connection is gone.
    pub fn send(&self, msg: Outbound) -> bool {
        if self.tx.send(msg).is_err() {
            return false;
        }
        self.outbound.notify();
        true
    }

    /// Whether the connection's task is gone (its receiver dropped).
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    pub fn subscriptions(&self) -> usize {
        self.sub_channels.load(Ordering::Relaxed)
            + self.sub_patterns.load(Ordering::Relaxed)
            + self.sub_shard.load(Ordering::Relaxed)
    }
}

/// `ClientShared::last_cmd` before the first command.
pub const NO_COMMAND: usize = usize::MAX;

/// A client's `CLIENT TRACKING` mode (Redis's `CLIENT_TRACKING_*` flags),
/// present while tracking is on.
#[derive(Debug, Clone, Default)]
pub struct Tracking {
    /// Client receiving the invalidations (0: this client itself).
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// `CLIENT CACHING yes` (OPTIN) / `no` (OPTOUT) applies to the next command.
    pub caching: bool,
    /// The redirect client was gone when an invalidation was due.
    pub broken_redirect: bool,
    /// BCAST prefixes, sorted as Redis lists them.
    pub prefixes: std::collections::BTreeSet<Bytes>,
}

impl Tracking {
    /// True if a read-only command's keys are remembered now (not BCAST;
    /// OPTIN only after `CACHING yes`, OPTOUT unless `CACHING no`).
    pub fn remembers_reads(&self) -> bool {
        !self.bcast && (!self.optin || self.caching) && (!self.optout || !self.caching)
    }
}

/// A registered client as the core keeps it: the shared part, and what only
/// commands read and write (always under the core lock, so it needs no lock
/// of its own).
#[derive(Debug)]
pub struct ClientRecord {
    pub shared: Arc<ClientShared>,
    /// `CLIENT SETNAME`, `HELLO … SETNAME`.
    pub name: Bytes,
    /// `CLIENT SETINFO lib-name`.
    pub lib_name: Bytes,
    /// `CLIENT SETINFO lib-ver`.
    pub lib_ver: Bytes,
    /// The ACL user the client is authenticated as.
    pub user: Bytes,
    /// `CLIENT TRACKING` mode (None: off).
    pub tracking: Option<Tracking>,
}

impl ClientRecord {
    pub fn new(shared: Arc<ClientShared>) -> Self {
        ClientRecord {
            shared,
            name: Bytes::new(),
            lib_name: Bytes::new(),
            lib_ver: Bytes::new(),
            user: Bytes::from_static(b"default"),
            tracking: None,
        }
    }

    /// `CLIENT LIST` / `CLIENT INFO` line (without trailing newline).
    /// `current`: the asking client's command in progress (its bytes in
    /// the query buffer and its arguments' bytes), which Redis counts.
    /// `lib_fields`: end with Redis 7.2's `lib-name=` and `lib-ver=` (7.0
    /// has no such fields).
    pub fn info_line(
        &self,
        now_ms: u64,
        fd: u64,
        last_cmd: &str,
        current: Option<(usize, usize)>,
        lib_fields: bool,
    ) -> String {
        let c = &*self.shared;
        let b = &c.buffers;
        let (cur_qbuf, argv_mem) = current.unwrap_or((0, 0));
        let qbuf = if current.is_some() { cur_qbuf } else { b.qbuf.load(Ordering::Relaxed) };
        let qbuf_cap = b.qbuf_cap.load(Ordering::Relaxed).max(qbuf);
        let rbs = b.out_cap.load(Ordering::Relaxed);
        let in_multi = c.in_multi.load(Ordering::Relaxed);
        let multi_mem = if in_multi { b.multi_mem.load(Ordering::Relaxed) } else { 0 };
        let omem = c.pending_bytes.load(Ordering::Relaxed);
        let multi = if in_multi { b.multi_len.load(Ordering::Relaxed) as i64 } else { -1 };
        // What the connection holds: its buffers, arguments and queued
        // transaction, plus the fixed size of its state.
        let tot_mem = qbuf_cap
            + rbs
            + argv_mem
            + multi_mem
            + omem
            + std::mem::size_of::<ClientShared>()
            + std::mem::size_of::<ClientState>();
        // Redis's order: O (monitor) or S (replica), P, x, b, t, R, B, U.
        let mut flags = String::new();
        if c.monitor.load(Ordering::Relaxed) {
            flags.push('O');
        } else if c.replica.load(Ordering::Relaxed) {
            flags.push('S');
        }
        if c.subscriptions() > 0 {
            flags.push('P');
        }
        if c.in_multi.load(Ordering::Relaxed) {
            flags.push('x');
        }
        if c.blocked.load(Ordering::Relaxed) {
            flags.push('b');
        }
        if let Some(t) = &self.tracking {
            flags.push('t');
            if t.broken_redirect {
                flags.push('R');
            }
            if t.bcast {
                flags.push('B');
            }
        }
        if c.addr.is_unix() {
            flags.push('U');
        }
        let redir = self.tracking.as_ref().map_or(-1, |t| t.redirect as i64);
        if flags.is_empty() {
            flags.push('N');
        }
        let (name, lib_name, lib_ver, last) = (&self.name, &self.lib_name, &self.lib_ver, last_cmd);
        let mut line = format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl=0 oll=0 omem={} tot-mem={} events=r cmd={} user={} redir={} resp={}",
            c.id,
            c.addr,
            c.laddr,
            fd,
            String::from_utf8_lossy(name),
            now_ms.saturating_sub(c.created_ms) / 1000,
            now_ms.saturating_sub(c.last_interaction_ms.load(Ordering::Relaxed)) / 1000,
            flags,
            c.db.load(Ordering::Relaxed),
            c.sub_channels.load(Ordering::Relaxed),
            c.sub_patterns.load(Ordering::Relaxed),
            c.sub_shard.load(Ordering::Relaxed),
            multi,
            qbuf,
            qbuf_cap - qbuf,
            argv_mem,
            multi_mem,
            rbs,
            b.out_peak.load(Ordering::Relaxed),
            omem,
            tot_mem,
            last,
            String::from_utf8_lossy(&self.user),
            redir,
            c.resp.load(Ordering::Relaxed),
        );
        if lib_fields {
            line.push_str(" lib-name=");
            line.push_str(&String::from_utf8_lossy(lib_name));
            line.push_str(" lib-ver=");
            line.push_str(&String::from_utf8_lossy(lib_ver));
        }
        line
    }
}

/// What a connection awaits after a blocking command registered a waiter.
#[derive(Debug)]
pub struct BlockRequest {
    pub waiter: u64,
    pub rx: oneshot::Receiver<Reply>,
    /// Timeout deadline on the server's clock (unix ms).
    pub deadline: Option<u64>,
}

/// Commands queued by `MULTI`.
#[derive(Debug, Default)]
pub struct MultiState {
    pub queue: Vec<Vec<Bytes>>,
    /// A queuing error happened: `EXEC` answers `EXECABORT`.
    pub dirty: bool,
}

/// State of one connection (or of a script's pseudo-client).
#[derive(Debug)]
pub struct ClientState {
    pub id: u64,
    pub caller: Caller,
    /// The selected database; mirrored in `shared.db` for `CLIENT LIST`
    /// ([`ClientState::set_db`] keeps them equal).
    db: usize,
    pub resp: Resp,
    pub authenticated: bool,
    /// The ACL user commands run as (`default` until `AUTH`).
    pub user: Bytes,
    pub shared: Arc<ClientShared>,
    pub multi: Option<MultiState>,
    /// Set by a blocking command that must wait; the connection awaits it.
    pub block: Option<BlockRequest>,
    pub reply_mode: ReplyMode,
    /// Close the connection once pending replies are written.
    pub close: bool,
    /// The command in progress as `CLIENT LIST` counts it: its bytes in the
    /// query buffer (with what follows it there) and its arguments' bytes.
    pub current: Option<(usize, usize)>,
    /// Cluster mode: `ASKING` was sent (and is used up by the next command
    /// once `asking_spent`), `READONLY` is on.
    pub asking: bool,
    pub asking_spent: bool,
    pub readonly: bool,
}

impl ClientState {
    pub fn new(shared: Arc<ClientShared>, authenticated: bool) -> Self {
        ClientState {
            id: shared.id,
            caller: Caller::Client,
            db: 0,
            resp: Resp::V2,
            authenticated,
            user: Bytes::from_static(b"default"),
            shared,
            multi: None,
            block: None,
            reply_mode: ReplyMode::On,
            close: false,
            current: None,
            asking: false,
            asking_spent: false,
            readonly: false,
        }
    }

    /// The selected database.
    pub fn db(&self) -> usize {
        self.db
    }

    /// Selects database `db`.
    pub fn set_db(&mut self, db: usize) {
        self.db = db;
        self.shared.db.store(db, Ordering::Relaxed);
    }

    pub fn set_resp(&mut self, resp: Resp) {
        self.resp = resp;
        self.shared.resp.store(if resp == Resp::V3 { 3 } else { 2 }, Ordering::Relaxed);
    }

    /// True when the connection is in RESP2 subscribed mode.
    pub fn in_resp2_pubsub(&self) -> bool {
        self.resp == Resp::V2 && self.shared.subscriptions() > 0
    }

    pub fn is_script(&self) -> bool {
        self.caller == Caller::Script
    }

    /// True if a blocking command may block (not inside a script, `EXEC`,
    /// or the re-run of a waiter).
    pub fn may_block(&self) -> bool {
        self.caller == Caller::Client
    }
}
