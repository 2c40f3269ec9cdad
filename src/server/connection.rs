//! One client connection: read, parse, run under the core lock, reply.
//!
//! All commands parsed from one read are run under a single hold of the core
//! lock and their replies written with one `write` (pipelining). Messages
//! queued for this client by others (pub/sub, unblocked pops) that were
//! queued before the lock was taken are written before this batch's replies,
//! so the client observes the same order the server executed things in.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, MutexGuard};

use crate::client::{ClientShared, ClientState, Outbound, ReplyMode};
use crate::cmd::{self, flags, Ctx, Lookup};
use crate::core::{BusyOutcome, BusyRequest, Core, LockError, Shared};
use crate::faults::ConnFaults;
use crate::protocol::{Reply, RequestParser};

const READ_CHUNK: usize = 16 * 1024;
/// Flush replies early when a batch produces this much output.
const OUT_FLUSH: usize = 256 * 1024;

struct Conn {
    shared: Arc<Shared>,
    socket: TcpStream,
    rbuf: BytesMut,
    out: BytesMut,
    parser: RequestParser,
    client: ClientState,
    rx: mpsc::UnboundedReceiver<Outbound>,
    /// Bytes of pushed messages in `out` not yet written: they still count
    /// in `pending_bytes` (the output buffer limits see them).
    pushed_unflushed: usize,
    /// The client is in `Core::clients`.
    registered: bool,
    /// Injected latency: the next flush waits this long first.
    delay: Option<Duration>,
    /// Injected write fault for the next flush.
    write_fault: Option<WriteFault>,
}

/// How an injected fault writes the output.
#[derive(Debug, Clone, Copy)]
enum WriteFault {
    /// In pieces of this many bytes, this far apart.
    Slow(usize, Duration),
    /// Up to this offset of the output, then the connection closes.
    Cut(usize),
}

/// Serves one connection until it closes, is killed, or the server stops.
pub async fn handle(shared: Arc<Shared>, socket: TcpStream, peer: SocketAddr) {
    let _ = socket.set_nodelay(true);
    let laddr = socket.local_addr().unwrap_or_else(|_| *shared.local_addr.lock());
    let (tx, rx) = mpsc::unbounded_channel();
    let id = shared.next_id();
    let cs = Arc::new(ClientShared::new(id, peer, laddr, shared.clock.now_ms(), tx));
    let mut conn = Conn {
        shared: shared.clone(),
        socket,
        rbuf: BytesMut::with_capacity(READ_CHUNK),
        out: BytesMut::with_capacity(READ_CHUNK),
        parser: RequestParser::new(),
        client: ClientState::new(cs.clone(), false),
        rx,
        pushed_unflushed: 0,
        registered: false,
        delay: None,
        write_fault: None,
    };
    // Register now; while a script is busy, the first command that gets the
    // lock registers instead (a new connection must still get BUSY / be able
    // to send SCRIPT KILL).
    if let Ok(mut core) = shared.lock_core(false).await {
        if !conn.register(&mut core) {
            drop(core);
            let _ = conn.socket.write_all(b"-ERR max number of clients reached\r\n").await;
            return;
        }
        if protected_mode_refuses(&core.config, peer) {
            core.unregister_client(&cs);
            core.stats.rejected_connections += 1;
            drop(core);
            let _ = conn.socket.write_all(PROTECTED_MODE_DENIED).await;
            return;
        }
    }
    conn.run().await;
    if conn.registered {
        let mut core = shared.core.lock().await;
        core.unregister_client(&cs);
    }
}

/// Redis's answer to a non-loopback client in protected mode.
const PROTECTED_MODE_DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected \
mode is enabled and no password is set for the default user. In this mode connections are only accepted \
from the loopback interface. If you want to connect from external computers to Redis you may adopt one of \
the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' \
from the loopback interface by connecting to Redis from the same host the server is running, however MAKE \
SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change \
permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, \
and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server \
manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication \
password for the default user. NOTE: You only need to do one of the above things in order for the server \
to start accepting connections from the outside.\r\n";

/// Protected mode (the default) with no password: only loopback clients
/// are served, as in Redis's `clientAcceptHandler`.
fn protected_mode_refuses(cfg: &crate::config::RuntimeConfig, peer: SocketAddr) -> bool {
    cfg.protected_mode && cfg.requirepass.is_none() && !peer.ip().is_loopback()
}

impl Conn {
    /// Adds this client to the core; false when `maxclients` is reached.
    fn register(&mut self, core: &mut Core) -> bool {
        match core.register_client(&mut self.client) {
            Some(max_bulk) => {
                self.registered(max_bulk);
                true
            }
            None => false,
        }
    }

    /// The connection's side of registration.
    fn registered(&mut self, max_bulk: i64) {
        self.parser.max_bulk = max_bulk;
        self.parser.unauthenticated = !self.client.authenticated;
        self.registered = true;
    }

    async fn run(&mut self) {
        let mut shutdown = self.shared.shutdown.subscribe();
        let cs = self.client.shared.clone();
        loop {
            if cs.killed.load(Ordering::Acquire) || *shutdown.borrow() {
                return;
            }
            if self.shared.faults.active() {
                if let Some(until) = self.shared.faults.frozen_until(cs.id) {
                    if !self.wait_frozen(until).await {
                        return;
                    }
                    continue;
                }
            }
            self.rbuf.reserve(READ_CHUNK);
            tokio::select! {
                biased;
                _ = crate::core::shutdown_requested(&mut shutdown) => return,
                _ = cs.kill.notified() => return,
                Some(msg) = self.rx.recv() => {
                    self.queue_outbound(msg);
                    self.drain_outbound();
                    // A subscriber that does not read blocks this write; the
                    // output buffer limit must still be able to cut it off.
                    tokio::select! {
                        r = self.flush() => if r.is_err() { return },
                        _ = cs.kill.notified() => return,
                    }
                }
                r = self.socket.read_buf(&mut self.rbuf) => {
                    match r {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            self.shared.net.input_bytes.fetch_add(n as u64, Ordering::Relaxed);
                            self.shared.net.reads.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    cs.last_interaction_ms.store(self.shared.clock.now_ms(), Ordering::Relaxed);
                    if self.process_input().await.is_err() || self.client.close {
                        let _ = self.flush().await;
                        let _ = self.socket.shutdown().await;
                        return;
                    }
                }
            }
        }
    }

    fn queue_outbound(&mut self, msg: Outbound) {
        match msg {
            Outbound::Encoded(b) => {
                self.pushed_unflushed += b.len();
                self.out.extend_from_slice(&b);
            }
            Outbound::Reply(r) => r.encode(self.client.resp, &mut self.out),
        }
    }

    /// Moves everything already queued for this client into the output.
    fn drain_outbound(&mut self) {
        while let Ok(msg) = self.rx.try_recv() {
            self.queue_outbound(msg);
        }
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        if let Some(d) = self.delay.take() {
            tokio::time::sleep(d).await;
        }
        if !self.out.is_empty() {
            match self.write_fault.take() {
                None => self.socket.write_all(&self.out).await?,
                Some(WriteFault::Slow(chunk, gap)) => {
                    for (i, piece) in self.out.chunks(chunk).enumerate() {
                        if i > 0 {
                            tokio::time::sleep(gap).await;
                        }
                        self.socket.write_all(piece).await?;
                    }
                }
                Some(WriteFault::Cut(at)) => {
                    let at = at.min(self.out.len());
                    let written = self.socket.write_all(&self.out[..at]).await;
                    self.out.clear();
                    self.client.close = true;
                    written?;
                    return Err(std::io::Error::other("reply cut by an injected fault"));
                }
            }
            self.shared.net.output_bytes.fetch_add(self.out.len() as u64, Ordering::Relaxed);
            self.shared.net.writes.fetch_add(1, Ordering::Relaxed);
            self.out.clear();
        }
        if self.pushed_unflushed > 0 {
            self.client.shared.pending_bytes.fetch_sub(self.pushed_unflushed, Ordering::AcqRel);
            self.pushed_unflushed = 0;
        }
        Ok(())
    }

    /// Runs every complete command in the read buffer.
    async fn process_input(&mut self) -> std::io::Result<()> {
        let shared = self.shared.clone();
        let mut guard: Option<MutexGuard<'_, Core>> = None;
        self.note_buffers();
        'commands: loop {
            let before = self.rbuf.len();
            let argv = match self.parser.next(&mut self.rbuf) {
                Ok(Some(a)) => a,
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(client = self.client.id, "protocol error: {e}");
                    Reply::error(e.reply_text()).encode(self.client.resp, &mut self.out);
                    self.client.close = true;
                    break;
                }
            };
            if is_cross_protocol_attack(&argv) {
                // Redis's securityWarningCommand: an HTTP request sent to
                // the port (cross-protocol scripting). Close without a reply.
                tracing::warn!(
                    client = self.client.id,
                    "Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: commands to Redis. This is likely due to an attacker attempting to use Cross Protocol Scripting to compromise your Redis instance. Connection aborted."
                );
                self.out.clear();
                self.client.close = true;
                break;
            }
            if guard.is_none() {
                if shared.pause.until_ms.load(Ordering::Acquire) != 0 {
                    self.wait_pause(&argv).await?;
                }
                loop {
                    match shared.lock_core(false).await {
                        Ok(mut g) => {
                            if !self.registered && !self.register(&mut g) {
                                drop(g);
                                Reply::error("ERR max number of clients reached")
                                    .encode(self.client.resp, &mut self.out);
                                self.client.close = true;
                                break 'commands;
                            }
                            guard = Some(g);
                            self.drain_outbound();
                            break;
                        }
                        Err(LockError::Busy) => {
                            let skipping = self.client.reply_mode == ReplyMode::Skip;
                            if skipping {
                                self.client.reply_mode = ReplyMode::On;
                            }
                            let reply = match self.while_busy(&argv) {
                                WhileBusy::Reply(r) => r,
                                WhileBusy::InScript => match self.run_in_busy_script(&argv).await {
                                    Some(r) => r,
                                    None => {
                                        // The script ended: run it the normal way.
                                        if skipping {
                                            self.client.reply_mode = ReplyMode::Skip;
                                        }
                                        continue;
                                    }
                                },
                            };
                            self.drain_outbound();
                            self.emit(reply, skipping);
                            if self.client.close {
                                break 'commands;
                            }
                            continue 'commands;
                        }
                    }
                }
            }
            let cf = match guard.as_deref() {
                Some(core) if shared.faults.active() => command_faults(&shared, core, self.client.id, &argv),
                _ => ConnFaults::default(),
            };
            if !cf.is_none() {
                if let Some(until) = cf.frozen_until {
                    guard = None;
                    self.flush().await?;
                    if !self.wait_frozen(until).await {
                        self.client.close = true;
                        break;
                    }
                    guard = Some(shared.core.lock().await);
                }
                if cf.close_before {
                    self.client.close = true;
                    break;
                }
                if let Some(d) = cf.delay {
                    self.delay = Some(self.delay.map_or(d, |o| o.max(d)));
                }
                if let Some((chunk, gap)) = cf.slow_write {
                    self.write_fault = Some(WriteFault::Slow(chunk, gap));
                }
                if let Some(n) = cf.cut_write {
                    self.write_fault = Some(WriteFault::Cut(self.out.len().saturating_add(n)));
                }
            }
            // As Redis counts it: the command is still in the query buffer.
            let consumed = before - self.rbuf.len();
            self.client.current = Some((consumed + self.rbuf.len(), argv.iter().map(|a| a.len()).sum()));
            let core = guard.as_mut().expect("lock held");
            let skipping = self.client.reply_mode == ReplyMode::Skip;
            if skipping {
                self.client.reply_mode = ReplyMode::On;
            }
            let reply = {
                let mut ctx = Ctx { core, client: &mut self.client, shared: &shared };
                cmd::process(&mut ctx, argv)
            };
            if *shared.shutdown.borrow() && !self.client.close {
                // A script stopped by SHUTDOWN NOSAVE from another client:
                // Redis exits without answering it.
                self.client.close = true;
                break;
            }
            self.parser.unauthenticated = !self.client.authenticated;
            if cf.close_after {
                // Ran, but the client never hears.
                self.client.close = true;
                break;
            }
            // What this command queued for this very client (its own pub/sub
            // messages, extra subscribe confirmations) precedes its reply, as
            // in Redis: nothing else can queue to us while we hold the lock.
            self.drain_outbound();
            if self.client.block.is_none() {
                // A blocked command's reply is a placeholder: the real one comes later.
                self.emit(reply, skipping);
            }
            if let Some(req) = self.client.block.take() {
                guard = None;
                self.flush().await?;
                match self.wait_blocked(req).await {
                    Some(r) => r.encode(self.client.resp, &mut self.out),
                    None => {
                        self.client.close = true;
                        break;
                    }
                }
                continue;
            }
            if self.client.close {
                break;
            }
            if let Some(core) = guard.as_ref() {
                if self.over_normal_limit(core) {
                    // Redis closes such a client without sending what it queued.
                    self.out.clear();
                    self.client.close = true;
                    break;
                }
            }
            if self.out.len() >= OUT_FLUSH {
                guard = None;
                self.flush().await?;
            }
        }
        drop(guard);
        self.client.current = None;
        self.note_buffers();
        self.flush().await
    }

    /// Leaves the buffers' sizes where `CLIENT LIST` reads them.
    fn note_buffers(&self) {
        let b = &self.client.shared.buffers;
        b.qbuf.store(self.rbuf.len(), Ordering::Relaxed);
        b.qbuf_cap.store(self.rbuf.capacity(), Ordering::Relaxed);
        b.out_cap.store(self.out.capacity(), Ordering::Relaxed);
        if self.out.len() > b.out_peak.load(Ordering::Relaxed) {
            b.out_peak.store(self.out.len(), Ordering::Relaxed);
        }
    }

    /// `client-output-buffer-limit normal` for the replies not yet written
    /// (pub/sub clients answer to the pubsub class instead).
    fn over_normal_limit(&self, core: &Core) -> bool {
        let limit = core.config.normal_limit;
        if limit.hard == 0 && limit.soft == 0 || self.client.shared.subscriptions() > 0 {
            return false;
        }
        let pending = self.out.len() as u64;
        let cs = &self.client.shared;
        if limit.hard > 0 && pending >= limit.hard {
            tracing::warn!(client = cs.id, pending, "client over the hard output buffer limit: closing");
            return true;
        }
        if limit.soft > 0 && pending >= limit.soft {
            let now = self.shared.clock.now_ms();
            let since = cs.soft_limit_since.load(Ordering::Relaxed);
            if since == 0 {
                cs.soft_limit_since.store(now.max(1), Ordering::Relaxed);
            } else if now.saturating_sub(since) >= limit.soft_secs * 1000 {
                tracing::warn!(
                    client = cs.id,
                    pending,
                    "client over the soft output buffer limit for too long: closing"
                );
                return true;
            }
        } else {
            cs.soft_limit_since.store(0, Ordering::Relaxed);
        }
        false
    }

    /// Waits for a blocked command's reply. `None`: the client went away
    /// (or was killed, or the server stops) and the waiter was removed.
    async fn wait_blocked(&mut self, req: crate::client::BlockRequest) -> Option<Reply> {
        let crate::client::BlockRequest { waiter, mut rx, deadline } = req;
        let cs = self.client.shared.clone();
        cs.blocked.store(true, Ordering::Relaxed);
        let mut shutdown = self.shared.shutdown.subscribe();
        let shared = self.shared.clone();
        let mut eof = false;
        // The timeout is a deadline on the server's clock: a test that
        // freezes or advances the clock decides when it passes.
        let outcome = loop {
            // Registered before the clock is read: a move in between wakes us.
            let clock_moved = shared.clock.changed.notified();
            tokio::pin!(clock_moved);
            clock_moved.as_mut().enable();
            let remaining = match deadline {
                Some(d) => {
                    let now = shared.clock.now_ms();
                    if now >= d {
                        break None;
                    }
                    Some(Duration::from_millis(d - now))
                }
                None => None,
            };
            let sleep = async {
                match remaining {
                    Some(r) => tokio::time::sleep(r).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = &mut rx => break r.ok(),
                _ = sleep => continue,
                _ = &mut clock_moved => continue,
                _ = cs.kill.notified() => { eof = true; break None }
                _ = crate::core::shutdown_requested(&mut shutdown) => { eof = true; break None }
                n = self.socket.read_buf(&mut self.rbuf), if !eof => {
                    // Keep pipelined input for later; notice a closed peer.
                    if matches!(n, Ok(0) | Err(_)) {
                        eof = true;
                        break None;
                    }
                }
            }
        };
        if let Some(r) = outcome {
            cs.blocked.store(false, Ordering::Relaxed);
            return Some(r);
        }
        let cancelled = {
            let mut core = self.shared.core.lock().await;
            let cancelled = core.blocking.cancel(waiter);
            if eof && self.registered {
                // Gone while blocked: leave the core in the same lock hold, so
                // no one sees a client that is neither blocked nor connected.
                core.unregister_client(&cs);
                self.registered = false;
            }
            cancelled
        };
        cs.blocked.store(false, Ordering::Relaxed);
        let reply = match cancelled {
            Some(timeout_reply) => timeout_reply,
            // Served while we were giving up: deliver what was served.
            None => rx.try_recv().unwrap_or(Reply::NilArray),
        };
        if eof {
            None
        } else {
            Some(reply)
        }
    }

    /// Encodes `reply` unless `CLIENT REPLY` suppresses it. `skipping`: the
    /// command ran right after `CLIENT REPLY SKIP`.
    fn emit(&mut self, reply: Reply, skipping: bool) {
        let suppress = match self.client.reply_mode {
            ReplyMode::SkipThis => {
                self.client.reply_mode = ReplyMode::On;
                true
            }
            // Just armed by this command (CLIENT REPLY SKIP), or replies off.
            ReplyMode::Skip | ReplyMode::Off => true,
            ReplyMode::On => skipping,
            ReplyMode::OnNow => {
                self.client.reply_mode = ReplyMode::On;
                false
            }
        };
        // Pushes (subscribe confirmations) are never silenced, as in Redis
        // (its CLIENT_PUSHING flag), like the messages that follow them.
        if !suppress || matches!(reply, Reply::Push(_)) {
            reply.encode(self.client.resp, &mut self.out);
        }
    }

    /// Waits out an injected freeze; false if the client was killed or the
    /// server stops meanwhile.
    async fn wait_frozen(&mut self, until: std::time::Instant) -> bool {
        let cs = self.client.shared.clone();
        let mut shutdown = self.shared.shutdown.subscribe();
        tokio::select! {
            _ = tokio::time::sleep_until(until.into()) => true,
            _ = cs.kill.notified() => false,
            _ = crate::core::shutdown_requested(&mut shutdown) => false,
        }
    }

    /// Waits out `CLIENT PAUSE` if it applies to this command.
    async fn wait_pause(&mut self, argv: &[Bytes]) -> std::io::Result<()> {
        let shared = self.shared.clone();
        let pause = &shared.pause;
        if let Lookup::Found(c) = cmd::table().lookup(argv) {
            if c.fullname == "client|unpause" || c.fullname == "client|pause" {
                return Ok(());
            }
            let writes_only = pause.writes_only.load(Ordering::Relaxed);
            if writes_only && !(c.is_write() || c.has(flags::MAY_REPLICATE)) {
                return Ok(());
            }
        }
        self.flush().await?;
        loop {
            let notified = pause.notify.notified();
            let clock_moved = shared.clock.changed.notified();
            tokio::pin!(notified, clock_moved);
            notified.as_mut().enable();
            clock_moved.as_mut().enable();
            let until = pause.until_ms.load(Ordering::Acquire);
            let now = shared.clock.now_ms();
            if until == 0 || now >= until {
                return Ok(());
            }
            tokio::select! {
                _ = notified => {}
                _ = clock_moved => {}
                _ = tokio::time::sleep(Duration::from_millis(until - now)) => {}
            }
        }
    }

    /// What to do with a command sent while a script runs past the busy
    /// threshold. SCRIPT KILL, FUNCTION KILL and SHUTDOWN NOSAVE from a
    /// client allowed to send them act at once, even while the script is
    /// inside a long command. Everything else goes to the script's hook,
    /// where `cmd::process` applies Redis's checks in Redis's order (unknown
    /// command, arity, NOAUTH, subscribed context, then BUSY for commands
    /// not flagged `allow-busy`).
    fn while_busy(&mut self, argv: &[Bytes]) -> WhileBusy {
        if !self.registered || !self.client.authenticated || self.client.in_resp2_pubsub() {
            return WhileBusy::InScript;
        }
        let Lookup::Found(cmd) = cmd::table().lookup(argv) else {
            return WhileBusy::InScript;
        };
        if !cmd::arity_ok(cmd.spec.arity, argv.len()) {
            return WhileBusy::InScript;
        }
        let shared = &self.shared;
        match cmd.fullname.as_str() {
            "script|kill" => WhileBusy::Reply(cmd::scripting::kill_busy_script(shared, false)),
            "function|kill" => WhileBusy::Reply(cmd::scripting::kill_busy_script(shared, true)),
            "shutdown" if argv[1..].iter().any(|a| a.eq_ignore_ascii_case(b"nosave")) => {
                // As on Redis, the server goes away without a reply, to this
                // client and to the one whose script was running.
                tracing::info!("SHUTDOWN NOSAVE requested by client {} while a script runs", self.client.id);
                shared.request_shutdown();
                self.client.close = true;
                self.client.reply_mode = ReplyMode::SkipThis;
                WhileBusy::Reply(Reply::ok())
            }
            _ => WhileBusy::InScript,
        }
    }

    /// Lends this connection's state to the busy script's hook to run
    /// `argv`; None if the script ended before it could.
    async fn run_in_busy_script(&mut self, argv: &[Bytes]) -> Option<Reply> {
        let (done, rx) = tokio::sync::oneshot::channel();
        let placeholder = ClientState::new(self.client.shared.clone(), false);
        let client = std::mem::replace(&mut self.client, placeholder);
        {
            let mut q = self.shared.script.busy_queue.lock();
            if !q.open {
                self.client = client;
                return None;
            }
            q.requests.push(BusyRequest { argv: argv.to_vec(), client, register: !self.registered, done });
        }
        match rx.await {
            Ok(BusyOutcome::Done { reply, client, max_bulk }) => {
                self.client = client;
                if let Some(max_bulk) = max_bulk {
                    self.registered(max_bulk);
                }
                self.parser.unauthenticated = !self.client.authenticated;
                Some(reply)
            }
            Ok(BusyOutcome::Retry(client)) => {
                self.client = client;
                None
            }
            Err(_) => {
                // Unreachable: every request is answered. Fail safe.
                self.client.close = true;
                Some(Reply::error("ERR internal error while the server was busy"))
            }
        }
    }
}

/// The connection-level faults for one command (`RLOCKD` itself is never
/// faulted, so a test can always clear what it set).
fn command_faults(shared: &Shared, core: &Core, client_id: u64, argv: &[Bytes]) -> ConnFaults {
    if argv[0].eq_ignore_ascii_case(b"rlockd") {
        return ConnFaults::default();
    }
    match cmd::table().lookup(argv) {
        Lookup::Found(c) => cmd::with_probe(core, client_id, c, argv, |p| shared.faults.on_command(p)),
        _ => ConnFaults::default(),
    }
}

/// The first word of an HTTP request (`POST /...`, `Host: ...`).
fn is_cross_protocol_attack(argv: &[Bytes]) -> bool {
    argv[0].eq_ignore_ascii_case(b"post") || argv[0].eq_ignore_ascii_case(b"host:")
}

/// What a connection does with a command while a script is busy.
enum WhileBusy {
    Reply(Reply),
    InScript,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_mode_serves_loopback_only_without_a_password() {
        let mut cfg = crate::config::RuntimeConfig::new(&crate::config::Config::default()).expect("config");
        let remote: SocketAddr = "192.0.2.7:5000".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let local6: SocketAddr = "[::1]:5000".parse().unwrap();
        assert!(protected_mode_refuses(&cfg, remote));
        assert!(!protected_mode_refuses(&cfg, local));
        assert!(!protected_mode_refuses(&cfg, local6));
        cfg.set(b"requirepass", b"secret").unwrap();
        assert!(!protected_mode_refuses(&cfg, remote));
        cfg.set(b"requirepass", b"").unwrap();
        cfg.set(b"protected-mode", b"no").unwrap();
        assert!(!protected_mode_refuses(&cfg, remote));
        assert_eq!(PROTECTED_MODE_DENIED.len(), 1067);
        assert!(PROTECTED_MODE_DENIED.ends_with(b"outside.\r\n"));
    }
}
