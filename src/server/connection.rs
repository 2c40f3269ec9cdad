//! One client connection: read, parse, run, reply.
//!
//! Every connection of a server is a task on the server's one event-loop
//! thread, as every client of redis-server is served by its one event loop.
//! A task runs all commands parsed from one read under a single hold of the
//! core lock and writes their replies with one `write` (pipelining). Tasks
//! woken by the same readiness poll run in the order the kernel reported
//! their sockets readable (the current-thread scheduler's queue is FIFO), so
//! among commands that have fully arrived, the one whose last byte was read
//! first runs first — across connections too (a multi-thread runtime would
//! not: its per-worker LIFO slot runs the last task woken in a batch first,
//! which split Redlock winners between servers; `tests/it/ordering.rs`).
//!
//! Messages queued for this client by others (pub/sub, unblocked pops) that
//! were queued before the lock was taken are written before this batch's
//! replies, so the client observes the same order the server executed
//! things in.
//!
//! What a task leaves between two reads — its socket, unparsed input,
//! unwritten output and client state — is in a [`Slot`], which the server's
//! connection registry ([`Conns`]) also holds: while a script runs past
//! `busy-reply-threshold` (blocking the event loop, as in Redis), the
//! script's hook serves the connections whose tasks wait for input from
//! their slots ([`serve_waiting`]), as Redis's `processEventsWhileBlocked` does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::{mpsc, MutexGuard};

use super::socket::{raw, register, Stream};
use crate::client::{ClientAddr, ClientShared, ClientState, Outbound, ReplyMode};
use crate::cmd::{self, flags, Ctx, Lookup};
use crate::control::faults::ConnFaults;
use crate::core::{Core, Shared};
use crate::protocol::{Reply, RequestParser, Resp};

const READ_CHUNK: usize = 16 * 1024;
/// Flush replies early when a batch produces this much output.
const OUT_FLUSH: usize = 256 * 1024;
/// At most this much input is read for one connection per busy-hook call.
const BUSY_READ_MAX: usize = 1024 * 1024;

/// Every connection's slot, by client id: the registry a busy script's hook
/// serves.
pub(crate) type Conns = parking_lot::Mutex<HashMap<u64, Arc<Slot>>>;

/// What a connection's task and the busy-script hook share.
pub(crate) struct Slot {
    /// Registered for readability only, as Redis registers a client: a
    /// socket is in the reactor's ready list only because input arrived, so
    /// the reactor's order is the order of arrival (with writability too, an
    /// ACK of an earlier reply would put a socket in the list ahead of one
    /// whose input came first). Waiting to write is rare and uses a
    /// registration of its own ([`wait_writable`]).
    pub(crate) socket: AsyncFd<Stream>,
    /// The task waits for input in its main loop: the busy hook may serve it.
    /// (A task waiting for anything else — a blocked pop, a pause, a flush —
    /// is left alone, as Redis leaves blocked clients' input unprocessed.)
    idle: AtomicBool,
    /// Never held across an `.await` (the guard is not `Send`, so the
    /// compiler enforces it): the hook can always take it from a waiting task.
    st: parking_lot::Mutex<ConnState>,
    /// Woken by the hook when it left output to write or closed the client.
    wake: crate::signal::Signal,
}

/// A connection's buffers and client state.
struct ConnState {
    rbuf: BytesMut,
    out: BytesMut,
    parser: RequestParser,
    client: ClientState,
    /// Bytes of pushed messages in `out` not yet written: they still count
    /// in `pending_bytes` (the output buffer limits see them).
    pushed_unflushed: usize,
    /// The client is in `Core::clients`.
    registered: bool,
    /// The peer closed the connection (seen by the busy hook).
    eof: bool,
}

struct Conn {
    shared: Arc<Shared>,
    slot: Arc<Slot>,
    cs: Arc<ClientShared>,
    rx: mpsc::UnboundedReceiver<Outbound>,
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

/// What `process_input` must await before it can go on.
enum Step {
    /// Every complete command ran.
    Done,
    /// The core lock is held elsewhere (a `Server` method on another thread).
    NeedCore,
    /// `CLIENT PAUSE` may apply to the pending command.
    Pause,
    /// An injected freeze: answer nothing until then.
    Freeze(std::time::Instant),
    /// Write what the batch produced so far.
    Flush,
    /// The command blocked: wait for its reply.
    Blocked(crate::client::BlockRequest),
}

/// A parsed command whose run waits for an async step.
struct Pending {
    argv: Vec<Bytes>,
    /// Its query-buffer size as `CLIENT LIST` shows it while it runs.
    consumed: usize,
    /// `CLIENT PAUSE` was waited out for it.
    pause_done: bool,
    /// Its faults, already counted (a freeze waited out, the rest to apply).
    faults: Option<ConnFaults>,
}

/// Admits a connection accepted while a `Server` method holds the core on
/// another thread: waits for the core, then takes [`adopt`]'s path.
pub(crate) async fn handle(shared: Arc<Shared>, conns: Arc<Conns>, socket: Stream, peer: ClientAddr) {
    let mut core = shared.core.lock().await;
    adopt(&shared, &conns, &mut core, socket, peer);
}

/// Admits a connection just accepted, with the core at hand (the accept
/// loop's, [`handle`]'s, or a busy script's hook), and starts its task. Admitted before
/// its task first runs, so a script that starts meanwhile finds it in the
/// registry and its hook serves it.
pub(crate) fn adopt(shared: &Arc<Shared>, conns: &Arc<Conns>, core: &mut Core, socket: Stream, peer: ClientAddr) {
    let Some(mut conn) = Conn::new(shared, socket, peer) else { return };
    match conn.admit(core) {
        Ok(()) => {
            conn.slot.idle.store(true, Ordering::Release);
            conns.lock().insert(conn.cs.id, conn.slot.clone());
            let conns = conns.clone();
            tokio::spawn(async move { conn.serve_registered(&conns).await });
        }
        Err(text) => {
            let _ = raw::send(conn.slot.socket.get_ref(), &Reply::error(text).to_bytes(Resp::V2));
        }
    }
}

/// Redis's answer to a non-loopback client in protected mode.
const PROTECTED_MODE_DENIED: &str = "DENIED Redis is running in protected mode because protected \
mode is enabled and no password is set for the default user. In this mode connections are only accepted \
from the loopback interface. If you want to connect from external computers to Redis you may adopt one of \
the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' \
from the loopback interface by connecting to Redis from the same host the server is running, however MAKE \
SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change \
permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, \
and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server \
manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication \
password for the default user. NOTE: You only need to do one of the above things in order for the server \
to start accepting connections from the outside.";

/// Protected mode (the default) with no password: only loopback and Unix
/// socket clients are served, as in Redis's `clientAcceptHandler`.
fn protected_mode_refuses(cfg: &crate::config::RuntimeConfig, peer: &ClientAddr) -> bool {
    cfg.protected_mode && cfg.requirepass.is_none() && !peer.is_local()
}

/// Writes all of `buf`.
async fn write_all(socket: &AsyncFd<Stream>, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        match raw::send(socket.get_ref(), buf) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => wait_writable(socket.get_ref()).await?,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Waits until `socket` takes output again (its send buffer was full). The
/// socket's own registration is for input only, so this registers a
/// duplicate descriptor for writability, for as long as the wait lasts, as
/// Redis installs a write handler only while a client has output pending.
async fn wait_writable(socket: &Stream) -> std::io::Result<()> {
    let dup = std::os::fd::AsFd::as_fd(socket).try_clone_to_owned()?;
    let fd = register(dup, Interest::WRITABLE)?;
    let _ready = fd.writable().await?;
    Ok(())
}

/// Bytes of pushed messages moved into the output per turn when nothing
/// else is to be written with them ([`ConnState::drain_some_outbound`]).
const DRAIN_MAX: usize = 1 << 20;

impl ConnState {
    fn queue_outbound(&mut self, msg: Outbound) {
        match msg {
            Outbound::Encoded(b) => {
                self.pushed_unflushed += b.len();
                self.out.extend_from_slice(&b);
            }
            Outbound::Reply(r) => r.encode(self.client.resp, &mut self.out),
        }
    }

    /// The next complete command in the input. None when there is none yet,
    /// or when the connection must close: a protocol error (its reply is
    /// queued) or an HTTP request (Redis's `securityWarningCommand`: closed
    /// without a reply).
    fn next_command(&mut self) -> Option<Vec<Bytes>> {
        let argv = match self.parser.next(&mut self.rbuf) {
            Ok(a) => a?,
            Err(e) => {
                tracing::debug!(client = self.client.id, "protocol error: {e}");
                Reply::error(e.reply_text()).encode(self.client.resp, &mut self.out);
                self.client.close = true;
                return None;
            }
        };
        if is_cross_protocol_attack(&argv) {
            tracing::warn!(
                client = self.client.id,
                "Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: commands to Redis. This is likely due to an attacker attempting to use Cross Protocol Scripting to compromise your Redis instance. Connection aborted."
            );
            self.out.clear();
            self.client.close = true;
            return None;
        }
        Some(argv)
    }

    /// Moves everything already queued for this client into the output.
    fn drain_outbound(&mut self, rx: &mut mpsc::UnboundedReceiver<Outbound>) {
        while let Ok(msg) = rx.try_recv() {
            self.queue_outbound(msg);
        }
    }

    /// [`drain_outbound`](Self::drain_outbound), up to about
    /// [`DRAIN_MAX`] bytes: the rest is taken after these are written (a
    /// replica's RDB file, queued in pieces, is never copied whole in one
    /// turn of the event loop).
    fn drain_some_outbound(&mut self, rx: &mut mpsc::UnboundedReceiver<Outbound>) {
        while let Ok(msg) = rx.try_recv() {
            self.queue_outbound(msg);
            if self.out.len() >= DRAIN_MAX {
                self.client.shared.outbound.notify();
                break;
            }
        }
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

    /// Arms `CLIENT REPLY SKIP` for the command about to run; true if it was.
    fn take_skip(&mut self) -> bool {
        let skipping = self.client.reply_mode == ReplyMode::Skip;
        if skipping {
            self.client.reply_mode = ReplyMode::On;
        }
        skipping
    }

    /// `client-output-buffer-limit normal` for the replies not yet written
    /// (pub/sub clients answer to the pubsub class instead).
    fn over_normal_limit(&self, core: &Core, shared: &Shared) -> bool {
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
            let now = shared.clock.now_ms();
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
}

impl Conn {
    /// None if the socket cannot be registered with the reactor.
    fn new(shared: &Arc<Shared>, socket: Stream, peer: ClientAddr) -> Option<Conn> {
        socket.set_nodelay();
        let laddr = socket.local_addr(&peer).unwrap_or_else(|| ClientAddr::Tcp(*shared.local_addr.lock()));
        let socket = match register(socket, Interest::READABLE) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("cannot register a connection: {e}");
                return None;
            }
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let id = shared.next_id();
        let cs = Arc::new(ClientShared::new(id, peer, laddr, shared.clock.now_ms(), tx));
        let st = ConnState {
            rbuf: BytesMut::with_capacity(READ_CHUNK),
            out: BytesMut::with_capacity(READ_CHUNK),
            parser: RequestParser::new(),
            client: ClientState::new(cs.clone(), false),
            pushed_unflushed: 0,
            registered: false,
            eof: false,
        };
        let slot = Slot {
            socket,
            idle: AtomicBool::new(false),
            st: parking_lot::Mutex::new(st),
            wake: crate::signal::Signal::new(),
        };
        Some(Conn { shared: shared.clone(), slot: Arc::new(slot), cs, rx, delay: None, write_fault: None })
    }

    /// Adds this client to the core, or says what to answer before closing
    /// (`maxclients` reached, protected mode).
    fn admit(&mut self, core: &mut Core) -> Result<(), &'static str> {
        let mut st = self.slot.st.lock();
        let Some(max_bulk) = core.register_client(&mut st.client) else {
            return Err("ERR max number of clients reached");
        };
        if protected_mode_refuses(&core.config, &self.cs.addr) {
            core.unregister_client(&self.cs);
            core.stats.rejected_connections += 1;
            return Err(PROTECTED_MODE_DENIED);
        }
        st.parser.max_bulk = max_bulk;
        st.parser.unauthenticated = !st.client.authenticated;
        st.registered = true;
        Ok(())
    }

    /// Serves a connection [`adopt`] admitted and registered; leaves the
    /// registry and the core when it ends.
    async fn serve_registered(&mut self, conns: &Conns) {
        self.run().await;
        self.slot.idle.store(false, Ordering::Release);
        conns.lock().remove(&self.cs.id);
        if self.slot.st.lock().registered {
            let mut core = self.shared.core.lock().await;
            core.unregister_client(&self.cs);
        }
    }

    async fn run(&mut self) {
        let cs = self.cs.clone();
        let slot = self.slot.clone();
        let shared = self.shared.clone();
        // No wait here registers anything per request: the kill switch and
        // the wake are `Signal`s, and shutdown wakes every connection
        // (`wake_all`), which then sees the flag below. (A
        // `watch` or `Notify` wait locks a waiter list when polled: per
        // request that cost more than a PING.)
        loop {
            if cs.kill.is_set() || shared.stopping() {
                return;
            }
            if shared.faults.active() {
                if let Some(until) = shared.faults.frozen_until(cs.id) {
                    if !self.wait_frozen(until).await {
                        return;
                    }
                    continue;
                }
            }
            // What the busy hook left: a closed peer, a closed client, output.
            let (eof, close, unflushed) = {
                let st = slot.st.lock();
                (st.eof, st.client.close, !st.out.is_empty())
            };
            if eof {
                return;
            }
            if close {
                let _ = self.flush().await;
                self.shutdown_socket();
                return;
            }
            if unflushed {
                tokio::select! {
                    r = self.flush() => if r.is_err() { return },
                    _ = cs.kill.wait() => return,
                }
                continue;
            }
            slot.idle.store(true, Ordering::Release);
            // A biased select's order: the kill switch, the wake, the client's
            // messages, then input. Written out so that the three signals'
            // wakers are registered only when nothing is ready (and each looked
            // at again after), not on every poll; the socket's read readiness is
            // polled in place (`readable()` would queue a waiter under the
            // socket's waiter lock each time; this task is its only reader).
            let event = std::future::poll_fn(|cx| {
                let look = || {
                    if cs.kill.is_set() {
                        Some(None)
                    } else if slot.wake.try_take() {
                        Some(Some(Event::Wake))
                    } else if cs.outbound.try_take() {
                        Some(Some(Event::Message))
                    } else {
                        None
                    }
                };
                if let Some(event) = look() {
                    return Poll::Ready(event);
                }
                if let Poll::Ready(r) = slot.socket.poll_read_ready(cx) {
                    return Poll::Ready(Some(match r {
                        Ok(ready) => Event::Read(read_once(&slot, ready)),
                        Err(e) => Event::Read(Err(e)),
                    }));
                }
                for signal in [&cs.kill, &slot.wake, &cs.outbound] {
                    signal.register(cx.waker());
                }
                look().map_or(Poll::Pending, Poll::Ready)
            })
            .await;
            slot.idle.store(false, Ordering::Release);
            match event {
                None => return,
                Some(Event::Wake) => continue,
                // Written at the top of the loop, where a subscriber that
                // does not read can still be cut off by the output buffer
                // limit (the flush waits on the kill switch).
                Some(Event::Message) => slot.st.lock().drain_some_outbound(&mut self.rx),
                Some(Event::Read(read)) => {
                    match read {
                        Ok(0) => return,
                        Ok(n) => {
                            shared.net.input_bytes.fetch_add(n as u64, Ordering::Relaxed);
                            shared.net.reads.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                        Err(_) => return,
                    }
                    cs.last_interaction_ms.store(shared.clock.now_ms(), Ordering::Relaxed);
                    if self.process_input(&shared, &slot).await.is_err() || slot.st.lock().client.close {
                        let _ = self.flush().await;
                        self.shutdown_socket();
                        return;
                    }
                }
            }
        }
    }

    /// Sends FIN after the last reply (the socket itself closes when the
    /// registry and the task let go of the slot).
    fn shutdown_socket(&self) {
        self.slot.socket.get_ref().shutdown_write();
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        if let Some(d) = self.delay.take() {
            tokio::time::sleep(d).await;
        }
        let (mut out, pushed) = {
            let mut st = self.slot.st.lock();
            (std::mem::take(&mut st.out), std::mem::take(&mut st.pushed_unflushed))
        };
        let written = self.write_out(&out).await;
        out.clear();
        {
            let mut st = self.slot.st.lock();
            if let Err(WriteError::Cut) = written {
                st.client.close = true;
            }
            if st.out.is_empty() {
                st.out = out;
            }
        }
        if pushed > 0 {
            self.cs.pending_bytes.fetch_sub(pushed, Ordering::AcqRel);
        }
        match written {
            Ok(()) => Ok(()),
            Err(WriteError::Io(e)) => Err(e),
            Err(WriteError::Cut) => Err(std::io::Error::other("reply cut by an injected fault")),
        }
    }

    async fn write_out(&mut self, out: &[u8]) -> Result<(), WriteError> {
        if out.is_empty() {
            return Ok(());
        }
        let socket = &self.slot.socket;
        match self.write_fault.take() {
            None => write_all(socket, out).await?,
            Some(WriteFault::Slow(chunk, gap)) => {
                for (i, piece) in out.chunks(chunk).enumerate() {
                    if i > 0 {
                        tokio::time::sleep(gap).await;
                    }
                    write_all(socket, piece).await?;
                }
            }
            Some(WriteFault::Cut(at)) => {
                write_all(socket, &out[..at.min(out.len())]).await?;
                return Err(WriteError::Cut);
            }
        }
        self.shared.net.output_bytes.fetch_add(out.len() as u64, Ordering::Relaxed);
        self.shared.net.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Runs every complete command in the read buffer.
    /// `shared` and `slot` are the connection's own (`run` holds them), passed
    /// in so that a batch of commands takes no reference counts.
    async fn process_input(&mut self, shared: &Shared, slot: &Slot) -> std::io::Result<()> {
        let mut guard: Option<MutexGuard<'_, Core>> = None;
        let mut pending: Option<Pending> = None;
        loop {
            match self.step(shared, slot, &mut guard, &mut pending) {
                Step::Done => break,
                Step::NeedCore => guard = Some(shared.core.lock().await),
                Step::Pause => {
                    release(&mut guard);
                    self.flush().await?;
                    self.wait_pause().await;
                    if let Some(p) = pending.as_mut() {
                        p.pause_done = true;
                    }
                }
                Step::Freeze(until) => {
                    release(&mut guard);
                    self.flush().await?;
                    if !self.wait_frozen(until).await {
                        self.slot.st.lock().client.close = true;
                        break;
                    }
                }
                Step::Flush => {
                    release(&mut guard);
                    self.flush().await?;
                }
                Step::Blocked(req) => {
                    release(&mut guard);
                    self.flush().await?;
                    let reply = self.wait_blocked(req).await;
                    let mut st = self.slot.st.lock();
                    let from = st.out.len();
                    match reply {
                        Some(r) => r.encode(st.client.resp, &mut st.out),
                        None => {
                            if crate::control::record::on() {
                                let now = self.shared.clock.now_us();
                                crate::control::record::unblocked(
                                    *self.shared.local_addr.lock(),
                                    st.client.id,
                                    now,
                                    None,
                                );
                            }
                            st.client.close = true;
                            break;
                        }
                    }
                    if crate::control::record::on() {
                        let out = &st.out[from..];
                        let now = self.shared.clock.now_us();
                        crate::control::record::unblocked(*self.shared.local_addr.lock(), st.client.id, now, Some(out));
                    }
                }
            }
        }
        if let Some(core) = guard.as_mut() {
            core.before_sleep();
        }
        drop(guard);
        {
            let mut st = self.slot.st.lock();
            st.client.current = None;
            st.note_buffers();
        }
        self.flush().await
    }

    /// Runs commands until the input is used up or something must be
    /// awaited; never awaits itself.
    fn step<'s>(
        &mut self,
        shared: &'s Shared,
        slot: &Slot,
        guard: &mut Option<MutexGuard<'s, Core>>,
        pending: &mut Option<Pending>,
    ) -> Step {
        let mut st = slot.st.lock();
        loop {
            let mut p = match pending.take() {
                Some(p) => p,
                None => {
                    let before = st.rbuf.len();
                    let Some(argv) = st.next_command() else { return Step::Done };
                    // As Redis counts it: the command is still in the query buffer.
                    Pending { argv, consumed: before, pause_done: false, faults: None }
                }
            };
            if guard.is_none() {
                if !p.pause_done && shared.pause.until_ms.load(Ordering::Acquire) != 0 && pause_applies(shared, &p.argv)
                {
                    *pending = Some(p);
                    return Step::Pause;
                }
                match shared.core.try_lock() {
                    Ok(g) => *guard = Some(g),
                    Err(_) => {
                        *pending = Some(p);
                        return Step::NeedCore;
                    }
                }
                if self.cs.outbound.is_set() {
                    st.drain_outbound(&mut self.rx);
                }
            }
            let core = guard.as_mut().expect("lock held");
            let cf = match p.faults.take() {
                Some(cf) => cf,
                None if shared.faults.active() => command_faults(shared, core, st.client.id, &p.argv),
                None => ConnFaults::default(),
            };
            if !cf.is_none() {
                if let Some(until) = cf.frozen_until {
                    p.faults = Some(ConnFaults { frozen_until: None, ..cf });
                    *pending = Some(p);
                    return Step::Freeze(until);
                }
                if cf.close_before {
                    if crate::control::record::on() {
                        let rec = Recorded::before(&st, shared, &p.argv);
                        rec.note(&st, core, shared, &cf, Ending::Closed);
                    }
                    st.client.close = true;
                    return Step::Done;
                }
                if let Some(d) = cf.delay {
                    self.delay = Some(self.delay.map_or(d, |o| o.max(d)));
                }
                if let Some((chunk, gap)) = cf.slow_write {
                    self.write_fault = Some(WriteFault::Slow(chunk, gap));
                }
                if let Some(n) = cf.cut_write {
                    self.write_fault = Some(WriteFault::Cut(st.out.len().saturating_add(n)));
                }
            }
            let st = &mut *st;
            st.client.current = Some((p.consumed, p.argv.iter().map(|a| a.len()).sum()));
            // The one check the recorder costs while off.
            let rec = crate::control::record::on().then(|| Recorded::before(st, shared, &p.argv));
            let skipping = st.take_skip();
            // Redis 7.2 sends the pushes a command made for its own client
            // (messages, keyspace events) after its reply, but for the
            // commands whose reply is pushes.
            let pushes_after = core.profile().at_least(7, 2, 0) && !replies_with_pushes(&p.argv[0]);
            let reply = {
                let mut ctx = Ctx { core, client: &mut st.client, shared };
                cmd::dispatch::process(&mut ctx, &mut p.argv)
            };
            st.parser.recycle(p.argv);
            if shared.stopping() && !st.client.close {
                // A script stopped by SHUTDOWN NOSAVE from another client:
                // Redis exits without answering it.
                if let Some(rec) = rec {
                    rec.note(st, core, shared, &cf, Ending::Closed);
                }
                st.client.close = true;
                return Step::Done;
            }
            st.parser.unauthenticated = !st.client.authenticated;
            if cf.close_after {
                // Ran, but the client never hears.
                if let Some(rec) = rec {
                    rec.note(st, core, shared, &cf, Ending::Closed);
                }
                st.client.close = true;
                return Step::Done;
            }
            // What this command queued for this very client (its own pub/sub
            // messages, extra subscribe confirmations) precedes its reply, as
            // in Redis 7.0 (from 7.2 the messages follow it, `pushes_after`).
            // This server's commands queue and announce (`outbound`)
            // under the core lock we hold, so the flag is seen here; a message
            // another cluster node sends meanwhile has no order relative to
            // this reply anyway.
            let mut own_pushes = Vec::new();
            if self.cs.outbound.is_set() {
                if pushes_after && st.client.block.is_none() {
                    while let Ok(msg) = self.rx.try_recv() {
                        own_pushes.push(msg);
                    }
                } else {
                    st.drain_outbound(&mut self.rx);
                }
            }
            if let Some(req) = st.client.block.take() {
                // A blocked command's reply is a placeholder: the real one comes later.
                if let Some(rec) = rec {
                    rec.note(st, core, shared, &cf, Ending::Blocked);
                }
                return Step::Blocked(req);
            }
            let silent = skipping || st.client.reply_mode != ReplyMode::On;
            st.emit(reply, skipping);
            for msg in own_pushes {
                st.queue_outbound(msg);
            }
            if let Some(rec) = rec {
                rec.note(st, core, shared, &cf, if silent { Ending::Silent } else { Ending::Answered });
            }
            if st.client.close {
                return Step::Done;
            }
            if st.over_normal_limit(core, shared) {
                // Redis closes such a client without sending what it queued.
                st.out.clear();
                st.client.close = true;
                return Step::Done;
            }
            if st.out.len() >= OUT_FLUSH {
                return Step::Flush;
            }
        }
    }

    /// Waits for a blocked command's reply. `None`: the client went away
    /// (or was killed, or the server stops) and the waiter was removed.
    async fn wait_blocked(&mut self, req: crate::client::BlockRequest) -> Option<Reply> {
        let crate::client::BlockRequest { waiter, mut rx, deadline } = req;
        let cs = self.cs.clone();
        cs.blocked.store(true, Ordering::Relaxed);
        let mut shutdown = self.shared.shutdown_receiver();
        let shared = self.shared.clone();
        let slot = self.slot.clone();
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
                _ = cs.kill.wait() => { eof = true; break None }
                _ = crate::core::shutdown_requested(&mut shutdown) => { eof = true; break None }
                r = slot.socket.readable() => {
                    // Keep pipelined input for later; notice a closed peer.
                    let read = match r {
                        Ok(ready) => read_once(&slot, ready),
                        Err(e) => Err(e),
                    };
                    match read {
                        Ok(0) => { eof = true; break None }
                        Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => { eof = true; break None }
                        _ => {}
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
            let mut st = slot.st.lock();
            if eof && st.registered {
                // Gone while blocked: leave the core in the same lock hold, so
                // no one sees a client that is neither blocked nor connected.
                core.unregister_client(&cs);
                st.registered = false;
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

    /// Waits out an injected freeze; false if the client was killed or the
    /// server stops meanwhile.
    async fn wait_frozen(&mut self, until: std::time::Instant) -> bool {
        let cs = self.cs.clone();
        let mut shutdown = self.shared.shutdown_receiver();
        tokio::select! {
            _ = tokio::time::sleep_until(until.into()) => true,
            _ = cs.kill.wait() => false,
            _ = crate::core::shutdown_requested(&mut shutdown) => false,
        }
    }

    /// Waits out `CLIENT PAUSE`.
    async fn wait_pause(&mut self) {
        let shared = self.shared.clone();
        let pause = &shared.pause;
        loop {
            let notified = pause.notify.notified();
            let clock_moved = shared.clock.changed.notified();
            tokio::pin!(notified, clock_moved);
            notified.as_mut().enable();
            clock_moved.as_mut().enable();
            let until = pause.until_ms.load(Ordering::Acquire);
            let now = shared.clock.now_ms();
            if until == 0 || now >= until {
                return;
            }
            tokio::select! {
                _ = notified => {}
                _ = clock_moved => {}
                _ = tokio::time::sleep(Duration::from_millis(until - now)) => {}
            }
        }
    }
}

/// How a recorded command ended for its client.
#[derive(Clone, Copy, PartialEq)]
enum Ending {
    Answered,
    /// `CLIENT REPLY OFF|SKIP`: nothing was written.
    Silent,
    /// Its reply comes when it is served (`record::unblocked`).
    Blocked,
    /// The connection was closed instead.
    Closed,
}

/// A command being recorded (`control::record`): what was taken before it ran.
struct Recorded {
    argv: Vec<Bytes>,
    out_from: usize,
    time_us: u64,
}

impl Recorded {
    fn before(st: &ConnState, shared: &Shared, argv: &[Bytes]) -> Recorded {
        Recorded { argv: argv.to_vec(), out_from: st.out.len(), time_us: shared.clock.now_us() }
    }

    /// Writes the command's line: what it wrote to its client since
    /// [`Recorded::before`], at the time it ran (`call`'s, if it got there).
    fn note(self, st: &ConnState, core: &Core, shared: &Shared, cf: &ConnFaults, ending: Ending) {
        let record = core.clients.get(&st.client.id);
        let lib = record.map(|r| {
            let mut l = r.lib_name.to_vec();
            if !r.lib_ver.is_empty() {
                l.push(b' ');
                l.extend_from_slice(&r.lib_ver);
            }
            l
        });
        let faults = if cf.is_none() { Vec::new() } else { vec![format!("hit: {}", cf.names())] };
        let out = st.out.get(self.out_from..).unwrap_or_default();
        crate::control::record::command(&crate::control::record::Command {
            node: *shared.local_addr.lock(),
            client: st.client.id,
            name: record.map_or(&[][..], |r| &r.name[..]),
            lib: lib.as_deref().unwrap_or_default(),
            time_us: core.call_time_us.max(self.time_us),
            db: st.client.db(),
            resp: if st.client.resp == Resp::V3 { 3 } else { 2 },
            args: &self.argv,
            out: if ending == Ending::Closed { &[] } else { out },
            faults,
            blocked: ending == Ending::Blocked,
            closed: ending == Ending::Closed,
            silent: ending == Ending::Silent,
        });
    }
}

/// Lets go of the core for an await in the middle of a batch, ending the
/// event-loop turn first (`Core::before_sleep`: BCAST invalidations).
fn release(guard: &mut Option<MutexGuard<'_, Core>>) {
    if let Some(core) = guard.as_mut() {
        core.before_sleep();
    }
    *guard = None;
}

/// Reads once after a readiness event. When the read leaves the socket
/// empty (it returned less than it could take, or nothing), the readiness is
/// cleared, so the task next reads only after the reactor reports new input:
/// a task that just ran a command never reads input that arrived after
/// another connection's — whose readiness event came first — ahead of it,
/// as Redis reads a client only when `epoll` reports it.
fn read_once(slot: &Slot, mut ready: tokio::io::unix::AsyncFdReadyGuard<'_, Stream>) -> std::io::Result<usize> {
    let mut st = slot.st.lock();
    st.rbuf.reserve(READ_CHUNK);
    let room = st.rbuf.capacity() - st.rbuf.len();
    let read = raw::recv(slot.socket.get_ref(), &mut st.rbuf);
    // What `CLIENT LIST` shows while the commands read run.
    st.note_buffers();
    match &read {
        Ok(n) if *n < room => ready.clear_ready(),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => ready.clear_ready(),
        _ => {}
    }
    read
}

/// Whether the `CLIENT PAUSE` in force applies to `argv`.
fn pause_applies(shared: &Shared, argv: &[Bytes]) -> bool {
    match cmd::table().lookup(argv) {
        Lookup::Found(c) => {
            if c.has(flags::PAUSE_EXEMPT) {
                return false;
            }
            let writes_only = shared.pause.writes_only.load(Ordering::Relaxed);
            !(writes_only && !(c.is_write() || c.has(flags::MAY_REPLICATE)))
        }
        _ => true,
    }
}

enum Event {
    Wake,
    /// Something was queued on the client's channel.
    Message,
    /// What one read after a readiness event got.
    Read(std::io::Result<usize>),
}

#[derive(Debug)]
enum WriteError {
    Io(std::io::Error),
    /// An injected `CUTWRITE`: the output stopped short, the client closes.
    Cut,
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::Io(e)
    }
}

/// Wakes every connection's task (at shutdown).
pub(crate) fn wake_all(conns: &Conns) {
    for slot in conns.lock().values() {
        slot.wake.notify();
    }
}

/// Serves the server's connections from a busy script's hook (Redis's
/// `processEventsWhileBlocked`), once the listeners' new connections are
/// adopted: for each connection whose task waits for input, reads what
/// arrived, runs it as
/// commands sent while a script is busy (`cmd::dispatch::run_while_busy`:
/// BUSY for most, `SCRIPT KILL`, `AUTH`, `HELLO`… really run) and writes the
/// replies. Output a socket does not take now, a closed peer or a closed
/// client are left for the task, which is woken for them and acts once the
/// script has ended.
pub(crate) fn serve_waiting(conns: &Conns, core: &mut Core, shared: &Arc<Shared>) {
    let slots: Vec<Arc<Slot>> = conns.lock().values().cloned().collect();
    for slot in slots {
        if !slot.idle.load(Ordering::Acquire) {
            continue;
        }
        let Some(mut st) = slot.st.try_lock() else { continue };
        let st = &mut *st;
        if st.eof || st.client.close {
            continue;
        }
        let mut read = 0;
        while read < BUSY_READ_MAX {
            st.rbuf.reserve(READ_CHUNK);
            match raw::recv(slot.socket.get_ref(), &mut st.rbuf) {
                Ok(0) => {
                    st.eof = true;
                    break;
                }
                Ok(n) => {
                    read += n;
                    shared.net.input_bytes.fetch_add(n as u64, Ordering::Relaxed);
                    shared.net.reads.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    st.eof = true;
                    break;
                }
            }
        }
        if read > 0 {
            st.client.shared.last_interaction_ms.store(shared.clock.now_ms(), Ordering::Relaxed);
        }
        while !st.eof && !st.client.close {
            let Some(argv) = st.next_command() else { break };
            let skipping = st.take_skip();
            let reply = cmd::dispatch::run_while_busy(core, shared, &mut st.client, argv);
            st.parser.unauthenticated = !st.client.authenticated;
            st.emit(reply, skipping);
        }
        st.note_buffers();
        let mut written = 0;
        while written < st.out.len() {
            match raw::send(slot.socket.get_ref(), &st.out[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(_) => break,
            }
        }
        if written > 0 {
            let _ = st.out.split_to(written);
            shared.net.output_bytes.fetch_add(written as u64, Ordering::Relaxed);
            shared.net.writes.fetch_add(1, Ordering::Relaxed);
        }
        if st.eof || st.client.close || !st.out.is_empty() {
            slot.wake.notify();
        }
    }
}

/// The connection-level faults for one command (`RLOCKD` itself is never
/// faulted, so a test can always clear what it set).
fn command_faults(shared: &Shared, core: &Core, client_id: u64, argv: &[Bytes]) -> ConnFaults {
    if argv[0].eq_ignore_ascii_case(b"rlockd") {
        return ConnFaults::default();
    }
    let cf = match cmd::table().lookup(argv) {
        Lookup::Found(c) => cmd::dispatch::with_probe(core, client_id, c, argv, |p| shared.faults.on_command(p)),
        _ => ConnFaults::default(),
    };
    if !cf.is_none() {
        // The timeline marks the faults that hit.
        let what = format!(
            "hit: {} on {} (client {client_id})",
            cf.names(),
            String::from_utf8_lossy(&argv[0].to_ascii_lowercase())
        );
        core.repl.ledger.lock().marks.push(shared.clock.now_ms(), "fault", what);
    }
    cf
}

/// The first word of an HTTP request (`POST /...`, `Host: ...`).
fn is_cross_protocol_attack(argv: &[Bytes]) -> bool {
    argv[0].eq_ignore_ascii_case(b"post") || argv[0].eq_ignore_ascii_case(b"host:")
}

/// The commands whose reply is pushes (Redis's `cmdHasPushAsReply`): the
/// subscribe family.
fn replies_with_pushes(name: &[u8]) -> bool {
    const NAMES: [&[u8]; 6] =
        [b"subscribe", b"psubscribe", b"ssubscribe", b"unsubscribe", b"punsubscribe", b"sunsubscribe"];
    NAMES.iter().any(|n| name.eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_mode_serves_loopback_only_without_a_password() {
        let mut cfg = crate::config::RuntimeConfig::new(&crate::config::Config::default()).expect("config");
        let addr = |a: &str| ClientAddr::Tcp(a.parse().unwrap());
        let remote = addr("192.0.2.7:5000");
        let unix = ClientAddr::Unix("/tmp/rlockd.sock".into());
        assert!(protected_mode_refuses(&cfg, &remote));
        assert!(!protected_mode_refuses(&cfg, &addr("127.0.0.1:5000")));
        assert!(!protected_mode_refuses(&cfg, &addr("[::1]:5000")));
        assert!(!protected_mode_refuses(&cfg, &unix));
        cfg.set(b"requirepass", b"secret").unwrap();
        assert!(!protected_mode_refuses(&cfg, &remote));
        cfg.set(b"requirepass", b"").unwrap();
        cfg.set(b"protected-mode", b"no").unwrap();
        assert!(!protected_mode_refuses(&cfg, &remote));
        let denied = Reply::error(PROTECTED_MODE_DENIED).to_bytes(Resp::V2);
        assert_eq!(denied.len(), 1067);
        assert!(denied.starts_with(b"-DENIED ") && denied.ends_with(b"outside.\r\n"));
    }
}
