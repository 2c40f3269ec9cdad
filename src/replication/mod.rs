//! Replication: the primary's stream, the link to each replica (a node of
//! this process, or a replica over TCP), and the replica's view of its
//! primary (a node of this process, or a primary over TCP: [`TcpLink`]).
//!
//! A primary records what Redis 7.0 replicates — each write's *effects*,
//! rewritten as Redis rewrites them ([`rewrite`]: relative expiries as
//! `PEXPIREAT`/`SET … PXAT`, `INCRBYFLOAT` as `SET … KEEPTTL`, a script's or a
//! transaction's writes wrapped in `MULTI`/`EXEC` when there are several,
//! keys deleted by expiry or eviction as `DEL`) — as [`Op`]s of the running
//! execution unit; when the unit ends ([`ReplState::flush`]) they become one
//! [`Frame`], counted in the bytes of the RESP stream Redis would send
//! (`SELECT` included when the database changes), and are queued on every
//! replica's [`Link`]. The offsets (`master_repl_offset`, each replica's
//! acknowledged offset) are those bytes, as in Redis.
//!
//! A [`Link`] is the queue between two in-process nodes: no sockets. The
//! replica's server task applies its frames through its own command table
//! and acknowledges their end offset; test control pauses it, lags it,
//! drops what is pending or breaks it (see [`link`]).
//!
//! Every frame also carries its bytes of Redis's replication stream
//! ([`Frame::wire`]): what a replica over TCP (`SYNC`/`PSYNC`, a real
//! redis-server among them) is sent, byte for byte as Redis sends it, and
//! what the backlog keeps (the last `repl-backlog-size` bytes, from which a
//! `PSYNC` continues with `+CONTINUE`). `handshakes` holds what a
//! connection declared with `REPLCONF` before its `PSYNC`.
//!
//! A full resynchronisation over TCP ([`FullSync`]) sends an RDB file of
//! the keyspace as of the offset it starts at, made a slice at a time while
//! the server goes on (`db::snapshot`); its replicas' links hold the stream
//! ([`Link::holding`]), kept here from that offset and sent after the file.
//!
//! This module is data: it knows neither the command table nor the server.
//! The commands (`REPLICAOF`, `SYNC`/`PSYNC`/`REPLCONF`, `ROLE`, `WAIT`,
//! `INFO replication`) are in `cmd/replication.rs`; the task that syncs,
//! applies and acknowledges is in `server/replication.rs`, and the replica
//! side of the TCP protocol in `server/replication/tcp.rs`.

pub mod down;
pub mod feed;
pub mod info;
pub mod ledger;
pub mod link;
pub mod registry;
pub mod rewrite;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use tokio::sync::Notify;

use crate::protocol::Reply;

pub use ledger::Ledger;
pub use link::{Frame, Link, Op, TcpReplica};

/// What a replica knows of its primary.
#[derive(Debug)]
pub struct Master {
    pub host: String,
    pub port: u16,
    /// The link, once the replica is attached (`None` while connecting,
    /// or when no rlockd node of this process listens there).
    pub link: Option<Arc<Link>>,
    /// The replica's pseudo-client that applies the stream (its id).
    pub client_id: u64,
    /// Unix ms of the last frame (or ping) received.
    pub last_io_ms: u64,
    /// Why the link is not up yet, for the log (once).
    pub trouble: Option<String>,
    /// Set when the primary is reached over TCP (no node of this process
    /// listens there): the state of that link.
    pub tcp: Option<TcpLink>,
}

impl Master {
    /// Stops what links this replica to the primary.
    pub fn detach(self) {
        if let Some(l) = self.link {
            l.close();
        }
        if let Some(t) = self.tcp {
            t.stop.notify_one();
        }
    }

    /// `master_link_status:up`.
    pub fn link_up(&self) -> bool {
        match &self.tcp {
            Some(t) => t.state == TcpState::Connected,
            None => self.link.as_ref().is_some_and(|l| l.is_online()),
        }
    }
}

/// A replica's link to a primary over TCP, as Redis's `repl_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpState {
    /// Waiting to (re)connect.
    Connect,
    Connecting,
    /// `PING`, `AUTH`, `REPLCONF`, `PSYNC`.
    Handshake,
    /// Receiving the RDB file.
    Transfer,
    Connected,
}

/// What `INFO replication` and `ROLE` show of a link over TCP.
#[derive(Debug)]
pub struct TcpLink {
    pub state: TcpState,
    /// Unix ms the link went down (0: it never was up).
    pub down_since_ms: u64,
    /// The RDB transfer: its size (0 when unknown: a diskless one), bytes
    /// read, unix ms of the last read.
    pub sync_total: u64,
    pub sync_read: u64,
    pub sync_last_io_ms: u64,
    /// This replica holds a history of that primary (its `replid` and
    /// `offset`): the next handshake asks to continue it (`PSYNC`).
    pub synced: bool,
    /// Ends the link's task.
    pub stop: Arc<Notify>,
}

impl TcpLink {
    pub fn new() -> TcpLink {
        TcpLink {
            state: TcpState::Connect,
            down_since_ms: 0,
            sync_total: 0,
            sync_read: 0,
            sync_last_io_ms: 0,
            synced: false,
            stop: Arc::new(Notify::new()),
        }
    }
}

impl Default for TcpLink {
    fn default() -> Self {
        Self::new()
    }
}

/// A `WAIT` in progress.
#[derive(Debug, Clone, Copy)]
pub struct WaitReq {
    /// The blocked client's waiter id (in `Core::blocking`).
    pub waiter: u64,
    pub numreplicas: usize,
    /// The offset every counted replica must have acknowledged.
    pub offset: u64,
}

/// A request for the server's replication task (it holds no core lock and
/// may lock other nodes).
#[derive(Debug)]
pub enum Request {
    /// Fail over to one of this primary's replicas (test control); the
    /// waiter (if any) is answered when it is done.
    Failover { waiter: Option<u64>, replica: Option<u16> },
}

/// The replication state of one server (in `Core`).
#[derive(Debug)]
pub struct ReplState {
    /// `master_replid`.
    pub replid: String,
    /// `master_replid2` (the previous primary's id after a promotion).
    pub replid2: String,
    /// `master_repl_offset`: bytes of the stream produced (primary) or
    /// processed (replica).
    pub offset: u64,
    /// `second_repl_offset` (-1 when none).
    pub second_offset: i64,
    /// `repl_backlog_first_byte_offset`; 0 while there is no backlog.
    pub backlog_first: u64,
    /// The backlog exists (created when the first replica attaches).
    pub backlog: bool,
    /// Links to this node's replicas.
    pub replicas: Vec<Arc<Link>>,
    /// Set when this node is a replica.
    pub master: Option<Master>,
    /// Ops of the execution unit running now.
    pending: Vec<Op>,
    /// The database the stream last selected (`None`: a `SELECT` is due).
    seldb: Option<usize>,
    /// Each client's offset after its last propagated write (`WAIT`).
    woff: HashMap<u64, u64>,
    pub waits: Vec<WaitReq>,
    /// A `WAIT` blocked: ask for acknowledgements before sleeping.
    pub getack: bool,
    /// Wakes this server's replication task.
    pub wake: Arc<Notify>,
    /// Held while this node attaches to its primary (one at a time).
    pub attaching: Arc<tokio::sync::Mutex<()>>,
    /// Requests for that task.
    pub requests: Vec<Request>,
    /// Lock grants lost in failovers, shared by the nodes of one topology.
    pub ledger: Arc<parking_lot::Mutex<Ledger>>,
    /// The last lock event the ledger was shown (`u64::MAX`: this node
    /// is not watching for second holders).
    pub ledger_cursor: u64,
    /// The stream's last bytes (see [`ReplState::backlog_from`]).
    backlog_data: VecDeque<Bytes>,
    /// Bytes in `backlog_data`.
    backlog_bytes: u64,
    /// `repl-backlog-size`, as last set.
    pub backlog_size: u64,
    /// What connections declared with `REPLCONF`, by client id.
    pub handshakes: HashMap<u64, Handshake>,
    /// `INFO stats`: full resynchronisations served, partial ones
    /// accepted, partial ones asked for and refused.
    pub sync_full: u64,
    pub sync_partial_ok: u64,
    pub sync_partial_err: u64,
    /// The full resynchronisation whose RDB file is being made, if one is.
    pub full_sync: Option<FullSync>,
    /// Wakes the task that makes the file (`server/replication.rs`).
    pub sync_wake: Arc<Notify>,
}

/// A full resynchronisation in progress: the RDB file of the keyspace as
/// of `offset` is being made a piece at a time (`db::snapshot`, held in
/// the keyspace's before-image consumers); the replicas waiting for it
/// hold their stream ([`Link::holding`]), which is kept here from `offset`
/// on and sent after the file. A replica asking for a full
/// resynchronisation meanwhile joins this one (the same file, the stream
/// from the same offset), as Redis shares one `BGSAVE`.
#[derive(Debug)]
pub struct FullSync {
    /// The history and offset the file is of (`+FULLRESYNC <replid> <offset>`).
    pub replid: String,
    pub offset: u64,
    /// The replicas waiting for the file.
    pub links: Vec<Arc<Link>>,
    /// The stream since `offset`.
    since: Vec<Bytes>,
    since_bytes: u64,
    /// When the last keep-alive newline went out.
    newline: std::time::Instant,
}

impl FullSync {
    pub fn new(replid: String, offset: u64) -> FullSync {
        FullSync {
            replid,
            offset,
            links: Vec::new(),
            since: Vec::new(),
            since_bytes: 0,
            newline: std::time::Instant::now(),
        }
    }

    /// Adds a replica that waits for this file.
    pub fn join(&mut self, link: Arc<Link>) {
        link.holding.store(true, Ordering::Relaxed);
        self.links.push(link);
    }

    /// Between two slices of the file: drops the replicas gone or over
    /// their output limits (the stream kept for them counts, as Redis
    /// counts a replica's buffer during its `BGSAVE`), and sends each a
    /// newline every second, as Redis does while it prepares the file (a
    /// replica reads it as a keep-alive). False once none waits.
    pub fn tend(&mut self) -> bool {
        let newline = self.newline.elapsed() >= std::time::Duration::from_secs(1);
        if newline {
            self.newline = std::time::Instant::now();
        }
        let kept = self.since_bytes;
        self.links.retain(|l| {
            let Some(t) = &l.tcp else { return false };
            if !l.is_online() {
                return false;
            }
            if !t.within_limits(kept) {
                tracing::warn!(
                    "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
                    t.client.id,
                    t.client.addr
                );
                t.client.kill();
                l.close();
                return false;
            }
            if newline {
                t.client.push_encoded(Bytes::from_static(b"\n"));
            }
            true
        });
        !self.links.is_empty()
    }

    /// The file is made (`pieces`): each waiting replica is sent it
    /// (`$<len>` first), then the stream since `offset`, and follows the
    /// stream from then on.
    pub fn deliver(self, pieces: &[Bytes]) {
        let len: usize = pieces.iter().map(Bytes::len).sum();
        let mut header = BytesMut::new();
        crate::protocol::payload_header(&mut header, len);
        let header = header.freeze();
        for l in &self.links {
            let Some(t) = l.tcp.as_ref().filter(|_| l.is_online()) else { continue };
            t.client.push_encoded(header.clone());
            for p in pieces {
                t.client.push_encoded(p.clone());
            }
            l.holding.store(false, Ordering::Relaxed);
            let mut ok = true;
            for w in &self.since {
                ok = ok && t.send(w);
            }
            if !ok {
                t.client.kill();
                l.close();
                continue;
            }
            tracing::info!("Synchronization with replica {} succeeded", l.replica);
        }
    }
}

/// What a connection declared with `REPLCONF` before `SYNC`/`PSYNC`.
#[derive(Debug, Clone, Default)]
pub struct Handshake {
    /// `listening-port`.
    pub port: u16,
    /// `ip-address`.
    pub ip: Option<String>,
    /// `capa eof`, `capa psync2`.
    pub eof: bool,
    pub psync2: bool,
}

impl Default for ReplState {
    fn default() -> Self {
        ReplState {
            replid: new_replid(),
            replid2: "0".repeat(40),
            offset: 0,
            second_offset: -1,
            backlog_first: 0,
            backlog: false,
            replicas: Vec::new(),
            master: None,
            pending: Vec::new(),
            seldb: None,
            woff: HashMap::new(),
            waits: Vec::new(),
            getack: false,
            wake: Arc::new(Notify::new()),
            attaching: Default::default(),
            requests: Vec::new(),
            ledger: Default::default(),
            ledger_cursor: u64::MAX,
            backlog_data: VecDeque::new(),
            backlog_bytes: 0,
            backlog_size: 1 << 20,
            handshakes: HashMap::new(),
            sync_full: 0,
            sync_partial_ok: 0,
            sync_partial_err: 0,
            full_sync: None,
            sync_wake: Arc::new(Notify::new()),
        }
    }
}

/// `argv` as one RESP multibulk, appended to `out`.
fn encode(out: &mut BytesMut, argv: &[Bytes]) {
    crate::protocol::Reply::bulks(argv.iter().cloned()).encode(crate::protocol::Resp::V2, out);
}

/// `argv` as the stream sends it, outside any database.
fn encoded(argv: &[Bytes]) -> Bytes {
    let mut out = BytesMut::with_capacity(resp_len(argv) as usize);
    encode(&mut out, argv);
    out.freeze()
}

/// A fresh 40-hex-digit replication id.
pub fn new_replid() -> String {
    use rand::Rng;
    let mut r = rand::rng();
    (0..40).map(|_| char::from_digit(r.random_range(0..16), 16).expect("hex digit")).collect()
}

/// Bytes of `argv` as one RESP multibulk (what Redis counts in offsets).
pub fn resp_len(argv: &[Bytes]) -> u64 {
    fn digits(mut n: usize) -> u64 {
        let mut d = 1;
        while n >= 10 {
            n /= 10;
            d += 1;
        }
        d
    }
    let mut n = 1 + digits(argv.len()) + 2;
    for a in argv {
        n += 1 + digits(a.len()) + 2 + a.len() as u64 + 2;
    }
    n
}

impl ReplState {
    /// True while this node produces a stream (it has replicas, or had
    /// them: the backlog lives on, as in Redis).
    pub fn feeding(&self) -> bool {
        self.backlog && self.master.is_none()
    }

    /// True when this node is a replica.
    pub fn is_replica(&self) -> bool {
        self.master.is_some()
    }

    /// Records one op of the running execution unit.
    pub fn propagate(&mut self, db: usize, argv: Vec<Bytes>) {
        self.pending.push(Op { db: Some(db), argv });
    }

    /// True if the running execution unit produced ops so far.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Ends an execution unit: its ops become one frame (wrapped in
    /// `MULTI`/`EXEC` when there are several), counted and queued on every
    /// link. `client` is who ran it (its `WAIT` offset moves), 0 for the
    /// server itself.
    pub fn flush(&mut self, client: u64) {
        if self.pending.is_empty() {
            return;
        }
        let ops = std::mem::take(&mut self.pending);
        let wrap = ops.len() > 1;
        let mut wire = BytesMut::new();
        // Redis's order: the SELECT of the first op's database goes before
        // MULTI (it is emitted by the first propagated command, MULTI).
        if wrap {
            if let Some(db) = ops[0].db {
                self.select(&mut wire, db);
            }
            encode(&mut wire, &[Bytes::from_static(b"MULTI")]);
        }
        for op in &ops {
            if let Some(db) = op.db {
                self.select(&mut wire, db);
            }
            encode(&mut wire, &op.argv);
        }
        if wrap {
            encode(&mut wire, &[Bytes::from_static(b"EXEC")]);
        }
        self.send(Frame::encoded(ops, self.offset, wire.freeze()));
        if client != 0 {
            self.woff.insert(client, self.offset);
            if self.woff.len() > 4096 {
                // Old clients' entries: WAIT of a client with none answers
                // for offset 0, which every replica has.
                let keep = self.offset;
                self.woff.retain(|_, o| *o + (1 << 20) > keep);
            }
        }
    }

    /// A `SELECT` into `wire` when the stream is on another database.
    fn select(&mut self, wire: &mut BytesMut, db: usize) {
        if self.seldb != Some(db) {
            encode(wire, &[Bytes::from_static(b"SELECT"), Bytes::from(db.to_string())]);
            self.seldb = Some(db);
        }
    }

    /// Asks the replicas for an acknowledgement (`REPLCONF GETACK *` in the
    /// stream) before the event loop sleeps, when a `WAIT` blocked meanwhile,
    /// as Redis does; its bytes count in the offsets.
    pub fn before_sleep(&mut self) {
        if !std::mem::take(&mut self.getack) || !self.feeding() || self.replicas.is_empty() {
            return;
        }
        let argv = vec![Bytes::from_static(b"REPLCONF"), Bytes::from_static(b"GETACK"), Bytes::from_static(b"*")];
        let wire = encoded(&argv);
        self.send(Frame::encoded(vec![Op { db: None, argv }], self.offset, wire));
    }

    /// Feeds `PING` (the primary's heartbeat, every
    /// `repl-ping-replica-period` seconds while it has replicas).
    pub fn ping(&mut self) {
        if !self.feeding() || self.replicas.is_empty() {
            return;
        }
        let ping = vec![Bytes::from_static(b"PING")];
        let wire = encoded(&ping);
        self.send(Frame::encoded(vec![Op { db: None, argv: ping }], self.offset, wire));
    }

    fn send(&mut self, frame: Frame) {
        self.forward(&Arc::new(frame));
    }

    /// A replica's processed frame, passed on to this node's own replicas
    /// (a chained replica forwards the stream as it came).
    pub fn forward(&mut self, frame: &Arc<Frame>) {
        self.offset = frame.end;
        self.keep(&frame.wire);
        if let Some(fs) = self.full_sync.as_mut() {
            if !frame.wire.is_empty() {
                fs.since_bytes += frame.wire.len() as u64;
                fs.since.push(frame.wire.clone());
            }
        }
        for link in &self.replicas {
            link.push(frame.clone());
        }
    }

    /// Adds stream bytes to the backlog, dropping its oldest chunks while
    /// what remains still holds `backlog_size` bytes.
    fn keep(&mut self, wire: &Bytes) {
        if !self.backlog || wire.is_empty() {
            return;
        }
        self.backlog_data.push_back(wire.clone());
        self.backlog_bytes += wire.len() as u64;
        while let Some(front) = self.backlog_data.front() {
            let n = front.len() as u64;
            if self.backlog_bytes - n < self.backlog_size {
                break;
            }
            self.backlog_bytes -= n;
            self.backlog_data.pop_front();
        }
    }

    /// Empties the backlog: its history starts after the current offset.
    pub fn reset_backlog(&mut self) {
        self.backlog_data.clear();
        self.backlog_bytes = 0;
        self.backlog_first = self.offset + 1;
    }

    /// The stream from offset `from` (Redis's 1-based `psync_offset`) to
    /// now, when the backlog still holds all of it (`PSYNC`'s `+CONTINUE`).
    pub fn backlog_from(&self, from: u64) -> Option<Vec<Bytes>> {
        let have_first = self.offset + 1 - self.backlog_bytes;
        if !self.backlog
            || from > self.offset + 1
            || from < self.backlog_first_byte(self.backlog_size)
            || from < have_first
            || have_first < self.backlog_first
        {
            return None;
        }
        let mut skip = from - have_first;
        let mut out = Vec::new();
        for chunk in &self.backlog_data {
            let n = chunk.len() as u64;
            if skip >= n {
                skip -= n;
                continue;
            }
            out.push(chunk.slice(skip as usize..));
            skip = 0;
        }
        Some(out)
    }

    /// Whether `PSYNC replid offset` can continue from the backlog.
    pub fn can_continue(&self, replid: &str, from: u64) -> bool {
        let same_history = replid == self.replid
            || (replid == self.replid2 && self.second_offset >= 0 && from <= self.second_offset as u64);
        same_history && self.master.is_none() && self.backlog_from(from).is_some()
    }

    /// The offset `WAIT` waits for on behalf of `client`.
    pub fn client_offset(&self, client: u64) -> u64 {
        self.woff.get(&client).copied().unwrap_or(0)
    }

    /// Replicas that acknowledged `offset` or more.
    pub fn acked(&self, offset: u64) -> usize {
        self.replicas.iter().filter(|l| l.is_online() && l.acked.load(Ordering::Acquire) >= offset).count()
    }

    /// Attaches a replica (a full resynchronisation): creates the backlog
    /// on the first one, and forces a `SELECT` into the stream, as Redis
    /// does for a new replica.
    pub fn attach(&mut self, link: Arc<Link>) {
        if !self.backlog {
            self.backlog = true;
            self.replid = new_replid();
            self.replid2 = "0".repeat(40);
            self.second_offset = -1;
            self.reset_backlog();
        }
        self.seldb = None;
        self.sync_full += 1;
        if link.tcp.is_none() {
            link.acked.store(self.offset, Ordering::Release);
            self.replicas.retain(|l| l.replica != link.replica || l.tcp.is_some());
        }
        self.replicas.push(link);
    }

    /// Attaches a replica that continues from the backlog (`PSYNC`'s
    /// `+CONTINUE`): it is sent the stream from `from` on.
    pub fn attach_continuing(&mut self, link: Arc<Link>, from: u64) {
        for chunk in self.backlog_from(from).unwrap_or_default() {
            link.push_wire(&chunk);
        }
        self.sync_partial_ok += 1;
        self.replicas.push(link);
    }

    /// Forgets links whose replica went away (a TCP replica's connection
    /// closed).
    pub fn prune(&mut self) {
        self.replicas.retain(|l| {
            if l.tcp.is_some() && !l.closed.load(Ordering::Acquire) && !l.is_online() {
                l.close();
            }
            !l.closed.load(Ordering::Acquire)
        });
    }

    /// Becomes a primary (`REPLICAOF NO ONE`, a failover): the history
    /// so far continues under a new id, as Redis's `shiftReplicationId`.
    pub fn promote(&mut self) {
        if let Some(m) = self.master.take() {
            m.detach();
        }
        self.replid2 = std::mem::replace(&mut self.replid, new_replid());
        self.second_offset = self.offset as i64 + 1;
        if !self.backlog {
            self.backlog = true;
            self.reset_backlog();
        }
        self.seldb = None;
    }

    /// After a top-level command or a server task's turn (core lock held):
    /// keys deleted by the server itself (active expiry, test control) go
    /// out as `DEL`s, one execution unit each; locks acquired since the last
    /// turn are shown to the ledger.
    pub fn after_command(
        &mut self,
        sig: &mut crate::db::Signals,
        history: Option<&crate::control::history::LockHistory>,
    ) {
        if self.feeding() {
            let deleted = sig.repl_deletes.get_or_insert_with(Vec::new);
            for (db, key) in std::mem::take(deleted) {
                self.propagate(db, vec![Bytes::from_static(b"DEL"), key.to_bytes()]);
                self.flush(0);
            }
            for (db, key, field) in std::mem::take(&mut sig.repl_fields) {
                self.propagate(db, vec![Bytes::from_static(b"HDEL"), key.to_bytes(), field]);
                self.flush(0);
            }
        } else {
            sig.repl_deletes = None;
            sig.repl_fields.clear();
        }
        if self.ledger_cursor == u64::MAX {
            return;
        }
        let Some(history) = history.filter(|_| self.master.is_none() && self.ledger.lock().watching()) else {
            self.ledger_cursor = u64::MAX;
            return;
        };
        let last = history.last_id();
        if self.ledger_cursor < last {
            let mut ledger = self.ledger.lock();
            for e in history.events(None, self.ledger_cursor) {
                if e.event == "acquired" {
                    ledger.acquired(e.db, &e.key, &e.holder, e.time_ms, e.client, &e.command);
                }
            }
        }
        self.ledger_cursor = last;
    }

    /// `repl_backlog_histlen`.
    pub fn backlog_histlen(&self, size: u64) -> u64 {
        if !self.backlog {
            return 0;
        }
        (self.offset + 1).saturating_sub(self.backlog_first).min(size)
    }

    /// `repl_backlog_first_byte_offset`.
    pub fn backlog_first_byte(&self, size: u64) -> u64 {
        if !self.backlog {
            return 0;
        }
        self.backlog_first.max((self.offset + 1).saturating_sub(size))
    }

    /// Makes this node a replica of `host port`; its replication task
    /// attaches it. `client_id` is the pseudo-client that will apply the
    /// primary's stream.
    pub fn become_replica(&mut self, client_id: u64, host: String, port: u16) {
        if let Some(old) = self.master.take() {
            old.detach();
        }
        tracing::info!("Connecting to MASTER {host}:{port}");
        self.master = Some(Master { host, port, link: None, client_id, last_io_ms: 0, trouble: None, tcp: None });
        self.wake.notify_one();
    }

    /// The links test control acts on: on a replica, the link to its
    /// primary; on a primary, its in-process links (to the replica on
    /// `port` only, if given).
    pub fn links(&self, port: Option<u16>) -> Vec<Arc<Link>> {
        match &self.master {
            Some(m) => m.link.iter().cloned().collect(),
            None => self
                .replicas
                .iter()
                .filter(|l| l.tcp.is_none() && port.is_none_or(|p| l.replica.port() == p))
                .cloned()
                .collect(),
        }
    }

    /// Answers the `WAIT`s that enough replicas acknowledged, and keeps
    /// each other one's count current (what it answers at its timeout).
    pub fn serve_waits(&mut self, blocking: &mut crate::blocking::Blocking) {
        if self.waits.is_empty() {
            return;
        }
        let waits = std::mem::take(&mut self.waits);
        for w in waits {
            let Some(waiter) = blocking.waiters.get_mut(&w.waiter) else { continue };
            let n = self.acked(w.offset);
            if n >= w.numreplicas {
                blocking.serve(w.waiter, Reply::Int(n as i64));
            } else {
                waiter.timeout_reply = Reply::Int(n as i64);
                self.waits.push(w);
            }
        }
    }

    /// The violations the topology's ledger found (`RLOCKD CHECK` adds
    /// them).
    pub fn violations(&self) -> Vec<String> {
        self.ledger.lock().violations.clone()
    }
}
