//! rlockd as the replica of a primary over TCP (a redis-server, or an
//! rlockd of another process), the replica side of Redis 7.0's protocol.
//!
//! One task per `REPLICAOF host port` that names no node of this process
//! ([`run`]); it lives until the node stops replicating that primary (its
//! `stop` is notified, or the master it was started for is gone), and
//! reconnects a second after the link drops. Each connection:
//!
//! 1. **Handshake**: `PING` (`+PONG`, or an authentication error, which a
//!    later `AUTH` settles), `AUTH [masteruser] masterauth` when set,
//!    `REPLCONF listening-port` (and `ip-address` with
//!    `replica-announce-ip`), `REPLCONF capa eof capa psync2`, then `PSYNC
//!    <replid> <offset+1>` when this node already holds the primary's
//!    history, `PSYNC ? -1` otherwise.
//! 2. **`+FULLRESYNC <replid> <offset>`**: the RDB file (`$<len>`, or
//!    `$EOF:<mark>` for a diskless transfer) is read whole, parsed off the
//!    event loop (`db::rdb::load_file`, which refuses a damaged or hostile
//!    file), then loaded under one hold of the core lock: keyspace, expiries,
//!    function libraries, `replid` and offset; this node's own replicas
//!    resynchronise. **`+CONTINUE [<replid>]`**: the stream goes on from the
//!    offset this node has.
//! 3. **Stream**: commands are applied through the command table by the
//!    master client, as the in-process replica applies frames (`MULTI` …
//!    `EXEC` as one unit under one lock hold), counted in bytes as received,
//!    and passed on byte for byte to this node's own replicas. `REPLCONF
//!    GETACK` is answered with `REPLCONF ACK <offset before it>`; `REPLCONF
//!    ACK <offset>` also goes out every second. A primary silent for
//!    `repl-timeout` seconds, a protocol error or a closed socket drops the
//!    link.
//!
//! No wait in here holds the core lock, and every read is bounded by time
//! or by what the peer actually sent, so a broken primary costs this node
//! a retried link, never a stalled event loop.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

use super::MasterClient;
use crate::cmd::Ctx;
use crate::core::Shared;
use crate::db::rdb;
use crate::protocol::{primary_line, PrimaryLine, Reply, RequestParser, Resp};
use crate::replication::{Frame, Op, TcpState};

/// How a session ended without an error.
enum End {
    /// The node no longer replicates this primary, or shuts down.
    Stopped,
}

/// What a step of a session leads to.
enum Next {
    Go,
    Stop,
}

type Result<T> = std::result::Result<T, String>;

/// Runs the link to the primary at `host port` for the master
/// `client_id` until it is stopped.
pub(super) async fn run(shared: Arc<Shared>, host: String, port: u16, client_id: u64, stop: Arc<Notify>) {
    let mut shutdown = shared.shutdown_receiver();
    let mut first = true;
    loop {
        if !first {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stop.notified() => return,
                _ = crate::core::shutdown_requested(&mut shutdown) => return,
            }
        }
        first = false;
        if !set_state(&shared, client_id, TcpState::Connecting).await {
            return;
        }
        let mut session = Session { shared: &shared, client_id, stop: &stop, buf: BytesMut::new(), stream: None };
        // Stopped at any point: mid-transfer too (a file being read from a
        // primary this node no longer follows is dropped).
        let outcome = tokio::select! {
            r = session.run(&host, port) => r,
            _ = stop.notified() => Ok(End::Stopped),
            _ = crate::core::shutdown_requested(&mut shutdown) => Ok(End::Stopped),
        };
        match outcome {
            Ok(End::Stopped) => return,
            Err(e) => {
                tracing::warn!("MASTER <-> REPLICA link with {host}:{port}: {e}");
                let mut core = shared.core.lock().await;
                let now = shared.clock.now_ms();
                match core.repl.master.as_mut() {
                    Some(m) if m.client_id == client_id => {
                        if let Some(t) = m.tcp.as_mut() {
                            if t.state == TcpState::Connected {
                                tracing::info!("Connection with master lost.");
                                t.down_since_ms = now;
                            }
                            t.state = TcpState::Connect;
                        }
                    }
                    _ => return,
                }
            }
        }
    }
}

/// Sets the link's state; false when the node no longer replicates
/// through this task.
async fn set_state(shared: &Shared, client_id: u64, state: TcpState) -> bool {
    let mut core = shared.core.lock().await;
    match core.repl.master.as_mut() {
        Some(m) if m.client_id == client_id => {
            if let Some(t) = m.tcp.as_mut() {
                t.state = state;
            }
            true
        }
        _ => false,
    }
}

/// One connection to the primary.
struct Session<'a> {
    shared: &'a Arc<Shared>,
    client_id: u64,
    stop: &'a Notify,
    buf: BytesMut,
    stream: Option<TcpStream>,
}

impl Session<'_> {
    async fn run(&mut self, host: &str, port: u16) -> Result<End> {
        let timeout = self.repl_timeout().await;
        let stream = tokio::time::timeout(timeout, TcpStream::connect((host, port)))
            .await
            .map_err(|_| "timeout connecting to the MASTER".to_string())?
            .map_err(|e| format!("Error condition on socket for SYNC: {e}"))?;
        let _ = stream.set_nodelay(true);
        self.stream = Some(stream);
        tracing::info!("MASTER <-> REPLICA sync started");
        if !set_state(self.shared, self.client_id, TcpState::Handshake).await {
            return Ok(End::Stopped);
        }
        let (auth, listening_port, announce_ip, psync) = {
            let core = self.shared.core.lock().await;
            let cfg = &core.config;
            let pass = cfg.get_str("masterauth").to_string();
            let user = cfg.get_str("masteruser").to_string();
            let auth = (!pass.is_empty()).then_some((user, pass));
            let announced: u16 = cfg.replica_announce_port;
            let port = if announced != 0 { announced } else { self.shared.local_addr.lock().port() };
            let ip = cfg.get_str("replica-announce-ip").to_string();
            let synced = core.repl.master.as_ref().and_then(|m| m.tcp.as_ref()).is_some_and(|t| t.synced);
            let psync = synced.then(|| (core.repl.replid.clone(), core.repl.offset + 1));
            (auth, port, ip, psync)
        };
        // PING: an authentication error is fine here (AUTH follows).
        self.send(&["PING"]).await?;
        match self.line(timeout).await? {
            PrimaryLine::Status(_) => {}
            PrimaryLine::Error(e)
                if e.starts_with(b"NOAUTH")
                    || e.starts_with(b"NOPERM")
                    || e.starts_with(b"ERR operation not permitted") => {}
            other => return Err(format!("Error reply to PING from master: {}", show(&other))),
        }
        if let Some((user, pass)) = auth {
            if user.is_empty() {
                self.send(&["AUTH", &pass]).await?;
            } else {
                self.send(&["AUTH", &user, &pass]).await?;
            }
            match self.line(timeout).await? {
                PrimaryLine::Status(_) => {}
                other => return Err(format!("Unable to AUTH to MASTER: {}", show(&other))),
            }
        }
        self.send(&["REPLCONF", "listening-port", &listening_port.to_string()]).await?;
        if let PrimaryLine::Error(e) = self.line(timeout).await? {
            tracing::info!(
                "(Non critical) Master does not understand REPLCONF listening-port: {}",
                String::from_utf8_lossy(&e)
            );
        }
        if !announce_ip.is_empty() {
            self.send(&["REPLCONF", "ip-address", &announce_ip]).await?;
            if let PrimaryLine::Error(e) = self.line(timeout).await? {
                tracing::info!(
                    "(Non critical) Master does not understand REPLCONF ip-address: {}",
                    String::from_utf8_lossy(&e)
                );
            }
        }
        self.send(&["REPLCONF", "capa", "eof", "capa", "psync2"]).await?;
        if let PrimaryLine::Error(e) = self.line(timeout).await? {
            tracing::info!("(Non critical) Master does not understand REPLCONF capa: {}", String::from_utf8_lossy(&e));
        }
        match &psync {
            Some((replid, from)) => {
                tracing::info!("Trying a partial resynchronization (request {replid}:{from}).");
                self.send(&["PSYNC", replid, &from.to_string()]).await?;
            }
            None => {
                tracing::info!("Partial resynchronization not possible (no cached master)");
                self.send(&["PSYNC", "?", "-1"]).await?;
            }
        }
        let reply = loop {
            match self.line(timeout).await? {
                PrimaryLine::Newline => continue,
                other => break other,
            }
        };
        let PrimaryLine::Status(status) = reply else {
            return Err(format!("Unexpected reply to PSYNC from master: {}", show(&reply)));
        };
        let text = String::from_utf8_lossy(&status).into_owned();
        let mut words = text.split(' ');
        match words.next() {
            Some("FULLRESYNC") => {
                let replid = words.next().filter(|r| r.len() == 40).ok_or("bad FULLRESYNC reply")?.to_string();
                let offset: u64 = words.next().and_then(|o| o.parse().ok()).ok_or("bad FULLRESYNC reply")?;
                tracing::info!("Full resync from master: {replid}:{offset}");
                if let Next::Stop = self.full_sync(replid, offset, timeout).await? {
                    return Ok(End::Stopped);
                }
            }
            Some("CONTINUE") if psync.is_some() => {
                let new_id = words.next().filter(|r| r.len() == 40).map(str::to_string);
                tracing::info!("Successful partial resynchronization with master.");
                if !self.continued(new_id).await {
                    return Ok(End::Stopped);
                }
            }
            _ => return Err(format!("Unexpected reply to PSYNC from master: {text}")),
        }
        self.stream(timeout).await
    }

    async fn repl_timeout(&self) -> Duration {
        let secs: u64 = self.shared.core.lock().await.config.repl_timeout_secs;
        Duration::from_secs(secs.max(1))
    }

    fn socket(&mut self) -> &mut TcpStream {
        self.stream.as_mut().expect("connected")
    }

    /// Sends one command.
    async fn send(&mut self, argv: &[&str]) -> Result<()> {
        let bytes = Reply::bulks(argv.iter().map(|a| Bytes::copy_from_slice(a.as_bytes()))).to_bytes(Resp::V2);
        self.socket().write_all(&bytes).await.map_err(|e| format!("write to the MASTER: {e}"))
    }

    /// Reads more from the primary, within `timeout`; the bytes read.
    async fn fill(&mut self, timeout: Duration) -> Result<usize> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.reserve(64 * 1024);
        let r = tokio::time::timeout(timeout, self.socket().read_buf(&mut buf)).await;
        self.buf = buf;
        match r {
            Err(_) => Err("Timeout receiving data from the MASTER".into()),
            Ok(Err(e)) => Err(format!("read from the MASTER: {e}")),
            Ok(Ok(0)) => Err("the MASTER closed the connection".into()),
            Ok(Ok(n)) => Ok(n),
        }
    }

    /// The next line of the handshake.
    async fn line(&mut self, timeout: Duration) -> Result<PrimaryLine> {
        loop {
            if let Some(l) = primary_line(&mut self.buf)? {
                return Ok(l);
            }
            self.fill(timeout).await?;
        }
    }

    /// Reads and loads the RDB file after `+FULLRESYNC`.
    async fn full_sync(&mut self, replid: String, offset: u64, timeout: Duration) -> Result<Next> {
        let header = loop {
            match self.line(timeout).await? {
                PrimaryLine::Newline => continue,
                other => break other,
            }
        };
        let (len, mark) = match header {
            PrimaryLine::Payload(n) => (Some(n), None),
            PrimaryLine::PayloadUntil(mark) => (None, Some(mark)),
            PrimaryLine::Error(e) => {
                return Err(format!("MASTER aborted replication: {}", String::from_utf8_lossy(&e)))
            }
            other => return Err(format!("Bad protocol from MASTER, the first byte is not '$': {}", show(&other))),
        };
        tracing::info!(
            "MASTER <-> REPLICA sync: receiving {}",
            len.map_or("streamed RDB from master with EOF to disk".to_string(), |n| format!(
                "{n} bytes from master to disk"
            ))
        );
        {
            let mut core = self.shared.core.lock().await;
            let now = self.shared.clock.now_ms();
            match core.repl.master.as_mut() {
                Some(m) if m.client_id == self.client_id => {
                    if let Some(t) = m.tcp.as_mut() {
                        t.state = TcpState::Transfer;
                        t.sync_total = len.unwrap_or(0);
                        t.sync_read = 0;
                        t.sync_last_io_ms = now;
                    }
                }
                _ => return Ok(Next::Stop),
            }
        }
        let mut last_note = Instant::now();
        // Where the search for the end mark goes on from (each byte is
        // looked at about once, however long the transfer).
        let mut scanned = 0usize;
        let file: BytesMut = loop {
            let done = match (&len, &mark) {
                (Some(n), _) if self.buf.len() as u64 >= *n => Some(self.buf.split_to(*n as usize)),
                (None, Some(mark)) => {
                    let from = scanned.saturating_sub(mark.len());
                    scanned = self.buf.len();
                    find(&self.buf[from..], mark).map(|at| {
                        let file = self.buf.split_to(from + at);
                        let _ = self.buf.split_to(mark.len());
                        file
                    })
                }
                _ => None,
            };
            if let Some(f) = done {
                break f;
            }
            self.fill(timeout).await?;
            if last_note.elapsed() >= Duration::from_millis(200) {
                last_note = Instant::now();
                self.note_transfer().await;
            }
        };
        tracing::info!("MASTER <-> REPLICA sync: Loading DB in memory");
        let databases = self.shared.core.lock().await.ks.dbs.len();
        let parsed = tokio::task::spawn_blocking(move || rdb::load_file(&file, databases))
            .await
            .map_err(|e| format!("loading the RDB file: {e}"))?
            .map_err(|e| format!("Failed trying to load the MASTER synchronization DB from socket: {e}"))?;
        let mut core = self.shared.core.lock().await;
        let client_id = self.client_id;
        if core.repl.master.as_ref().is_none_or(|m| m.client_id != client_id) {
            return Ok(Next::Stop);
        }
        core.control.actor = Default::default();
        load(&mut core, parsed)?;
        let now = self.shared.clock.now_ms();
        let repl = &mut core.repl;
        repl.replid = replid;
        repl.replid2 = "0".repeat(40);
        repl.second_offset = -1;
        repl.offset = offset;
        repl.backlog = true;
        repl.reset_backlog();
        for l in &repl.replicas {
            l.close();
        }
        if let Some(m) = repl.master.as_mut() {
            m.last_io_ms = now;
            if let Some(t) = m.tcp.as_mut() {
                t.state = TcpState::Connected;
                t.synced = true;
                t.down_since_ms = 0;
            }
        }
        core.after_command();
        drop(core);
        tracing::info!("MASTER <-> REPLICA sync: Finished with success");
        Ok(Next::Go)
    }

    /// Shows the transfer's progress to `INFO replication`.
    async fn note_transfer(&self) {
        let read = self.buf.len() as u64;
        let now = self.shared.clock.now_ms();
        let mut core = self.shared.core.lock().await;
        if let Some(t) =
            core.repl.master.as_mut().filter(|m| m.client_id == self.client_id).and_then(|m| m.tcp.as_mut())
        {
            t.sync_read = read;
            t.sync_last_io_ms = now;
        }
    }

    /// After `+CONTINUE`: the history goes on (under a new id when the
    /// primary names one: its own was shifted by a failover); false when
    /// the node no longer replicates through this task.
    async fn continued(&self, new_id: Option<String>) -> bool {
        let mut core = self.shared.core.lock().await;
        let now = self.shared.clock.now_ms();
        let repl = &mut core.repl;
        let Some(m) = repl.master.as_mut().filter(|m| m.client_id == self.client_id) else { return false };
        m.last_io_ms = now;
        if let Some(t) = m.tcp.as_mut() {
            t.state = TcpState::Connected;
            t.down_since_ms = 0;
        }
        if let Some(id) = new_id.filter(|id| *id != repl.replid) {
            tracing::info!("Master replication ID changed to {id}");
            repl.replid2 = std::mem::replace(&mut repl.replid, id);
            repl.second_offset = repl.offset as i64 + 1;
            // This node's replicas follow the new id too.
            for l in &repl.replicas {
                l.close();
            }
        }
        true
    }

    /// Applies the stream until the link drops or the node stops
    /// replicating this primary.
    async fn stream(&mut self, timeout: Duration) -> Result<End> {
        let shared = self.shared.clone();
        let mut master = MasterClient::new(&shared, self.client_id);
        let mut parser = RequestParser::new();
        parser.max_bulk = shared.core.lock().await.config.proto_max_bulk;
        let mut state = StreamState { db: None, unit: None };
        let mut offset = shared.core.lock().await.repl.offset;
        // The first acknowledgement at once: a diskless primary starts the
        // stream when it arrives.
        self.ack(offset).await?;
        let mut last_read = Instant::now();
        let mut partial = 0u64;
        let mut ack_tick = tokio::time::interval(Duration::from_secs(1));
        ack_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            // Everything complete in the buffer, in units; GETACK answered
            // with the offset before it.
            let mut frames: Vec<Frame> = Vec::new();
            loop {
                let before = self.buf.len();
                let parsed = parser.next(&mut self.buf);
                // The parser takes each argument as it completes: a command
                // may have begun in an earlier read.
                partial += (before - self.buf.len()) as u64;
                let argv = match parsed {
                    Ok(Some(argv)) => argv,
                    Ok(None) => break,
                    Err(e) => return Err(format!("protocol error in the MASTER's stream: {e}")),
                };
                let consumed = std::mem::take(&mut partial);
                if consumed != crate::replication::resp_len(&argv) {
                    // Offsets count the bytes sent; what is passed on is
                    // re-encoded: both agree only for a plain multibulk,
                    // which is all a primary sends.
                    return Err("the MASTER's stream holds a command that is not a plain multibulk".into());
                }
                let getack = argv.len() >= 2
                    && argv[0].eq_ignore_ascii_case(b"replconf")
                    && argv[1].eq_ignore_ascii_case(b"getack");
                if getack {
                    if !apply(&shared, &mut master, self.client_id, &mut frames).await {
                        return Ok(End::Stopped);
                    }
                    self.ack(offset).await?;
                }
                if let Some(frame) = state.take(argv, consumed, &mut offset) {
                    frames.push(frame);
                }
            }
            if !apply(&shared, &mut master, self.client_id, &mut frames).await {
                return Ok(End::Stopped);
            }
            let mut shutdown = shared.shutdown_receiver();
            let mut buf = std::mem::take(&mut self.buf);
            buf.reserve(64 * 1024);
            let stream = self.stream.as_mut().expect("connected");
            let read = tokio::select! {
                r = stream.read_buf(&mut buf) => Some(r),
                _ = ack_tick.tick() => None,
                _ = self.stop.notified() => { self.buf = buf; return Ok(End::Stopped) }
                _ = crate::core::shutdown_requested(&mut shutdown) => { self.buf = buf; return Ok(End::Stopped) }
            };
            self.buf = buf;
            match read {
                Some(Ok(0)) => return Err("the MASTER closed the connection".into()),
                Some(Ok(_)) => last_read = Instant::now(),
                Some(Err(e)) => return Err(format!("read from the MASTER: {e}")),
                None => {
                    if last_read.elapsed() > timeout {
                        return Err("MASTER timeout: no data nor PING received...".into());
                    }
                    let processed = shared.core.lock().await.repl.offset;
                    self.ack(processed).await?;
                }
            }
        }
    }

    /// `REPLCONF ACK <offset>`.
    async fn ack(&mut self, offset: u64) -> Result<()> {
        self.send(&["REPLCONF", "ACK", &offset.to_string()]).await
    }
}

/// Where the stream is between two commands: the selected database and
/// the `MULTI` block being received.
struct StreamState {
    db: Option<usize>,
    /// Ops and bytes of the unit in progress (inside `MULTI`, or a
    /// `SELECT` waiting for its command).
    unit: Option<(Vec<Op>, BytesMut, bool)>,
}

impl StreamState {
    /// Adds one command (`consumed` bytes of the stream) to the unit in
    /// progress; returns the unit when it is complete. `offset` moves by
    /// the command's bytes. The bytes are re-encoded from `argv` (the
    /// primary writes each command as one multibulk, so they are the bytes
    /// it sent; a command it sent inline is forwarded as a multibulk).
    fn take(&mut self, argv: Vec<Bytes>, consumed: u64, offset: &mut u64) -> Option<Frame> {
        let (mut ops, mut wire, in_multi) = self.unit.take().unwrap_or_default();
        let start = *offset - wire.len() as u64;
        *offset += consumed;
        Reply::bulks(argv.iter().cloned()).encode(Resp::V2, &mut wire);
        let name = argv[0].to_ascii_lowercase();
        let mut in_multi = in_multi;
        match name.as_slice() {
            b"select" => {
                if let Some(db) =
                    std::str::from_utf8(&argv.get(1).cloned().unwrap_or_default()).ok().and_then(|d| d.parse().ok())
                {
                    self.db = Some(db);
                }
                self.unit = Some((ops, wire, in_multi));
                return None;
            }
            b"multi" => in_multi = true,
            b"exec" => in_multi = false,
            b"ping" | b"replconf" => ops.push(Op { db: None, argv }),
            _ => ops.push(Op { db: Some(self.db.unwrap_or(0)), argv }),
        }
        if in_multi {
            self.unit = Some((ops, wire, true));
            return None;
        }
        let frame = Frame::encoded(ops, start, wire.freeze());
        debug_assert_eq!(frame.end, *offset);
        Some(frame)
    }
}

/// Applies `frames` under one hold of the core lock (and passes them on
/// to this node's replicas); false when the node no longer replicates
/// through this task.
async fn apply(shared: &Arc<Shared>, master: &mut MasterClient, client_id: u64, frames: &mut Vec<Frame>) -> bool {
    let mut core = shared.core.lock().await;
    if core.repl.master.as_ref().is_none_or(|m| m.client_id != client_id) {
        return false;
    }
    let now = shared.clock.now_ms();
    if let Some(m) = core.repl.master.as_mut() {
        m.last_io_ms = now;
    }
    if frames.is_empty() {
        return true;
    }
    core.control.actor = Default::default();
    for f in frames.drain(..) {
        let f = Arc::new(f);
        let mut ctx = Ctx { core: &mut core, client: &mut master.client, shared };
        super::apply_frame(&mut ctx, &f);
        core.repl.forward(&f);
    }
    core.after_command();
    true
}

/// Replaces the keyspace and the function libraries with a loaded file's.
fn load(core: &mut crate::core::Core, file: rdb::File) -> Result<()> {
    // The libraries first: a file whose functions do not load changes nothing.
    let scripting = core.scripting.as_mut().ok_or("the script engine is busy")?;
    scripting
        .function_restore(&file.functions, crate::script::functions::RestorePolicy::Flush)
        .map_err(|e| format!("loading the MASTER's functions: {e}"))?;
    // A file being made for this node's own replicas is of the keyspace
    // about to go: they resynchronise anyway.
    crate::cmd::replication::abort_full_sync(core);
    let ks = &mut core.ks;
    let n = ks.dbs.len();
    for (i, db) in ks.dbs.iter().enumerate() {
        ks.sig.images.all(db, i);
    }
    let old = std::mem::replace(&mut ks.dbs, (0..n).map(|_| crate::db::Db::default()).collect());
    for (i, db) in old.iter().enumerate() {
        for k in db.keys() {
            ks.sig.touch(i, &k.to_bytes());
        }
    }
    crate::db::lazy_free(old);
    let keys = file.keys.len();
    for k in file.keys {
        let mut db = ks.view(k.db);
        let enc = rdb::loaded_encoding_of(k.rdb_type, &k.value, db.limits());
        db.insert_new(&k.key, k.value);
        if let Some(enc) = enc {
            db.set_str_enc(&k.key, enc);
        }
        if let Some(at) = k.expire_ms {
            db.set_expire(&k.key, at);
        }
    }
    tracing::info!("Done loading RDB, keys loaded: {keys}");
    Ok(())
}

/// Where `mark` starts in `buf`.
fn find(buf: &[u8], mark: &[u8]) -> Option<usize> {
    buf.windows(mark.len()).position(|w| w == mark)
}

/// A line for the log.
fn show(l: &PrimaryLine) -> String {
    match l {
        PrimaryLine::Status(s) => format!("+{}", String::from_utf8_lossy(s)),
        PrimaryLine::Error(s) => format!("-{}", String::from_utf8_lossy(s)),
        PrimaryLine::Payload(n) => format!("${n}"),
        PrimaryLine::PayloadUntil(_) => "$EOF:…".into(),
        PrimaryLine::Newline => "(newline)".into(),
    }
}
