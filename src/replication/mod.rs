//! Replication between rlockd nodes of one process: the primary's stream,
//! the link to each replica, and the replica's view of its primary.
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
//! This module is data: it knows neither the command table nor the server.
//! The commands (`REPLICAOF`, `ROLE`, `WAIT`, `INFO replication`) are in
//! `cmd/replication.rs`; the task that syncs, applies and acknowledges is in
//! `server/replication.rs`.

pub mod ledger;
pub mod link;
pub mod registry;
pub mod rewrite;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::Notify;

pub use ledger::Ledger;
pub use link::{Frame, Link, Op};

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
        }
    }
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

/// `*2 $6 SELECT $n db` as Redis writes it.
fn select_len(db: usize) -> u64 {
    resp_len(&[Bytes::from_static(b"SELECT"), Bytes::from(db.to_string())])
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
        let mut bytes = 0;
        if wrap {
            bytes += resp_len(&[Bytes::from_static(b"MULTI")]);
        }
        for op in &ops {
            if let Some(db) = op.db {
                if self.seldb != Some(db) {
                    bytes += select_len(db);
                    self.seldb = Some(db);
                }
            }
            bytes += resp_len(&op.argv);
        }
        if wrap {
            bytes += resp_len(&[Bytes::from_static(b"EXEC")]);
        }
        self.send(Frame::new(ops, self.offset, bytes));
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

    /// Asks the replicas for an acknowledgement (`REPLCONF GETACK *` in the
    /// stream) before the event loop sleeps, when a `WAIT` blocked meanwhile,
    /// as Redis does; its bytes count in the offsets.
    pub fn before_sleep(&mut self) {
        if !std::mem::take(&mut self.getack) || !self.feeding() || self.replicas.is_empty() {
            return;
        }
        let argv = vec![Bytes::from_static(b"REPLCONF"), Bytes::from_static(b"GETACK"), Bytes::from_static(b"*")];
        let bytes = resp_len(&argv);
        self.send(Frame::new(vec![Op { db: None, argv }], self.offset, bytes));
    }

    /// Feeds `PING` (the primary's heartbeat, every
    /// `repl-ping-replica-period` seconds while it has replicas).
    pub fn ping(&mut self) {
        if !self.feeding() || self.replicas.is_empty() {
            return;
        }
        let ping = vec![Bytes::from_static(b"PING")];
        let bytes = resp_len(&ping);
        self.send(Frame::new(vec![Op { db: None, argv: ping }], self.offset, bytes));
    }

    fn send(&mut self, frame: Frame) {
        self.offset = frame.end;
        let frame = Arc::new(frame);
        for link in &self.replicas {
            link.push(frame.clone());
        }
    }

    /// A replica's processed frame, passed on to this node's own replicas
    /// (a chained replica forwards the stream as it came).
    pub fn forward(&mut self, frame: &Arc<Frame>) {
        self.offset = frame.end;
        for link in &self.replicas {
            link.push(frame.clone());
        }
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
            self.backlog_first = self.offset + 1;
        }
        self.seldb = None;
        link.acked.store(self.offset, Ordering::Release);
        self.replicas.retain(|l| l.replica != link.replica);
        self.replicas.push(link);
    }

    /// Forgets links whose replica went away.
    pub fn prune(&mut self) {
        self.replicas.retain(|l| !l.closed.load(Ordering::Acquire));
    }

    /// Becomes a primary (`REPLICAOF NO ONE`, a failover): the history
    /// so far continues under a new id, as Redis's `shiftReplicationId`.
    pub fn promote(&mut self) {
        if let Some(m) = self.master.take() {
            if let Some(l) = m.link {
                l.close();
            }
        }
        self.replid2 = std::mem::replace(&mut self.replid, new_replid());
        self.second_offset = self.offset as i64 + 1;
        if !self.backlog {
            self.backlog = true;
            self.backlog_first = self.offset + 1;
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
        } else {
            sig.repl_deletes = None;
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
}
