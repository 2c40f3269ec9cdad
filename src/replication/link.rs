//! The link between a primary and one replica of the same process: a queue
//! of frames, the replica's acknowledged offset, and the controls a test
//! uses to make replication misbehave on purpose.
//!
//! * **pause** — frames pile up on the link, unapplied and unacknowledged
//!   (`WAIT` then times out); **resume** delivers them in order.
//! * **lag** — each frame is delivered that many milliseconds after it was
//!   sent (wall time).
//! * **drop** — what is pending is lost, as if the primary crashed before
//!   sending it; the replica resynchronises in full when it next needs to.
//! * **break** / **restore** — the link is down (`master_link_status:down`);
//!   frames are kept, and a restored link continues where it stopped (a
//!   partial resynchronisation).
//!
//! A link can also lead to a replica over TCP ([`Link::tcp`]: a connection
//! that sent `SYNC`/`PSYNC`): each frame's bytes ([`Frame::wire`]) are queued
//! on that connection as they are made, and its `REPLCONF ACK`s move
//! `acked`. The controls above act on in-process links only. A TCP replica
//! that does not read is cut off by `client-output-buffer-limit replica`
//! (hard limit, or over the soft limit for its seconds), as Redis does.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::client::ClientShared;

/// One command of the stream: `db` is `None` for commands outside any
/// database (`PING`).
#[derive(Debug, Clone)]
pub struct Op {
    pub db: Option<usize>,
    pub argv: Vec<Bytes>,
}

/// One execution unit of the primary, as the replica applies it.
#[derive(Debug)]
pub struct Frame {
    pub ops: Vec<Op>,
    /// The stream offset before and after it.
    pub start: u64,
    pub end: u64,
    /// When the primary sent it.
    pub sent: Instant,
    /// Its bytes in Redis's replication stream (`SELECT`, `MULTI`/`EXEC`
    /// included): `end - start` of them, or none for a frame made without
    /// them ([`Frame::new`]).
    pub wire: Bytes,
}

impl Frame {
    /// A frame counted but not encoded (no replica over TCP can be fed it).
    #[allow(dead_code)]
    pub fn new(ops: Vec<Op>, start: u64, bytes: u64) -> Frame {
        Frame { ops, start, end: start + bytes, sent: Instant::now(), wire: Bytes::new() }
    }

    /// A frame with its stream bytes.
    pub fn encoded(ops: Vec<Op>, start: u64, wire: Bytes) -> Frame {
        Frame { ops, start, end: start + wire.len() as u64, sent: Instant::now(), wire }
    }
}

/// The far end of a link to a replica over TCP.
#[derive(Debug)]
pub struct TcpReplica {
    /// The replica's connection (its client).
    pub client: Arc<ClientShared>,
    /// `client-output-buffer-limit replica`: hard bytes, soft bytes, soft seconds.
    pub limit: (u64, u64, u64),
    /// Since when the output is over the soft limit.
    soft_since: parking_lot::Mutex<Option<Instant>>,
}

impl TcpReplica {
    pub fn new(client: Arc<ClientShared>, limit: (u64, u64, u64)) -> TcpReplica {
        TcpReplica { client, limit, soft_since: Default::default() }
    }

    fn alive(&self) -> bool {
        !self.client.is_closed() && !self.client.kill.is_set()
    }

    /// Queues `wire` on the connection; false when the output is over the
    /// limits (the caller closes the link).
    pub fn send(&self, wire: &Bytes) -> bool {
        if wire.is_empty() {
            return true;
        }
        let pending = self.client.push_encoded(wire.clone()) as u64;
        self.within_limits(pending)
    }

    /// Whether `pending` bytes of output are within the limits (over the
    /// soft one for less than its seconds).
    pub fn within_limits(&self, pending: u64) -> bool {
        let (hard, soft, secs) = self.limit;
        if hard > 0 && pending >= hard {
            return false;
        }
        let mut since = self.soft_since.lock();
        if soft > 0 && pending >= soft {
            let t = *since.get_or_insert_with(Instant::now);
            return t.elapsed() < Duration::from_secs(secs);
        }
        *since = None;
        true
    }
}

/// A primary's link to one replica (see the module docs).
#[derive(Debug)]
pub struct Link {
    /// The primary's address.
    pub primary: SocketAddr,
    /// The replica's listening address.
    pub replica: SocketAddr,
    queue: parking_lot::Mutex<VecDeque<Arc<Frame>>>,
    /// The offset the replica processed and acknowledged.
    pub acked: AtomicU64,
    /// Wall-clock ms (since the link was made) of the last acknowledgement.
    last_ack: AtomicU64,
    made: Instant,
    pub paused: AtomicBool,
    pub lag_ms: AtomicU64,
    pub broken: AtomicBool,
    /// Frames were dropped: the replica's data no longer follows the stream.
    pub diverged: AtomicBool,
    /// The replica detached (or was promoted): the primary forgets the link.
    pub closed: AtomicBool,
    /// Wakes the replica's task (frames, control changes).
    pub to_replica: Arc<Notify>,
    /// Wakes the primary's task (acknowledgements).
    pub to_primary: Arc<Notify>,
    /// Set for a replica over TCP.
    pub tcp: Option<TcpReplica>,
    /// A TCP replica waiting for its RDB file (a snapshot is being made):
    /// the stream is kept for it by the full sync (`ReplState::full_sync`),
    /// not sent yet.
    pub holding: AtomicBool,
}

impl Link {
    pub fn new(primary: SocketAddr, replica: SocketAddr, to_replica: Arc<Notify>, to_primary: Arc<Notify>) -> Link {
        Link {
            primary,
            replica,
            queue: Default::default(),
            acked: AtomicU64::new(0),
            last_ack: AtomicU64::new(0),
            made: Instant::now(),
            paused: AtomicBool::new(false),
            lag_ms: AtomicU64::new(0),
            broken: AtomicBool::new(false),
            diverged: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            to_replica,
            to_primary,
            tcp: None,
            holding: AtomicBool::new(false),
        }
    }

    /// A link to a replica over TCP, its listening address `replica`.
    pub fn tcp(primary: SocketAddr, replica: SocketAddr, to_primary: Arc<Notify>, tcp: TcpReplica) -> Link {
        let mut link = Link::new(primary, replica, Arc::new(Notify::new()), to_primary);
        link.tcp = Some(tcp);
        link
    }

    /// The client id of a TCP replica's connection.
    pub fn client_id(&self) -> Option<u64> {
        self.tcp.as_ref().map(|t| t.client.id)
    }

    /// Queues a frame for the replica (written at once to a TCP replica).
    pub fn push(&self, frame: Arc<Frame>) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        if let Some(t) = &self.tcp {
            if self.holding.load(Ordering::Relaxed) {
                return;
            }
            if !t.send(&frame.wire) {
                tracing::warn!(
                    "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
                    t.client.id,
                    t.client.addr
                );
                t.client.kill();
                self.close();
            }
            return;
        }
        self.queue.lock().push_back(frame);
        self.to_replica.notify_one();
    }

    /// Queues bytes of the stream that are in no frame (a partial
    /// resynchronisation's backlog) on a TCP replica.
    pub fn push_wire(&self, wire: &Bytes) {
        if let Some(t) = &self.tcp {
            if !t.send(wire) {
                t.client.kill();
                self.close();
            }
        }
    }

    /// True unless the link is broken or closed (or its TCP replica gone).
    pub fn is_online(&self) -> bool {
        !self.broken.load(Ordering::Acquire)
            && !self.closed.load(Ordering::Acquire)
            && self.tcp.as_ref().is_none_or(TcpReplica::alive)
    }

    /// Takes the frames the replica may apply now; with a lag, also when
    /// the next one becomes due.
    pub fn take_due(&self) -> (Vec<Arc<Frame>>, Option<Duration>) {
        if self.paused.load(Ordering::Acquire) || !self.is_online() {
            return (Vec::new(), None);
        }
        let lag = Duration::from_millis(self.lag_ms.load(Ordering::Acquire));
        let mut q = self.queue.lock();
        let mut out = Vec::new();
        while let Some(f) = q.front() {
            let due = f.sent + lag;
            let now = Instant::now();
            if due > now {
                return (out, Some(due - now));
            }
            out.push(q.pop_front().expect("front exists"));
        }
        (out, None)
    }

    /// Frames sent but not applied yet, and their bytes.
    pub fn pending(&self) -> (usize, u64) {
        let q = self.queue.lock();
        (q.len(), q.iter().map(|f| f.end - f.start).sum())
    }

    /// Loses what is pending (a crash before it was sent); returns how many
    /// frames went.
    pub fn drop_pending(&self) -> usize {
        let mut q = self.queue.lock();
        let n = q.len();
        if n > 0 {
            self.diverged.store(true, Ordering::Release);
        }
        q.clear();
        n
    }

    /// Records the replica's acknowledgement of `offset`.
    pub fn ack(&self, offset: u64) {
        self.acked.fetch_max(offset, Ordering::AcqRel);
        self.last_ack.store(self.made.elapsed().as_millis() as u64, Ordering::Release);
        self.to_primary.notify_one();
    }

    /// Seconds since the last acknowledgement (INFO's `lag=`).
    pub fn lag_secs(&self) -> u64 {
        (self.made.elapsed().as_millis() as u64).saturating_sub(self.last_ack.load(Ordering::Acquire)) / 1000
    }

    /// Closes the link for good.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.queue.lock().clear();
        self.to_primary.notify_one();
        self.to_replica.notify_one();
    }
}
