//! Sentinels for the rlockd primaries of this process: the Sentinel protocol
//! clients use to find the primary and follow a failover (Redisson's
//! `useSentinelServers()`, redis-py's `Sentinel`, ioredis's `sentinels`).
//!
//! A [`Sentinel`] listens on its own port and answers what Redis 7.0's
//! Sentinel answers: `SENTINEL GET-MASTER-ADDR-BY-NAME`, `MASTERS`,
//! `MASTER`, `REPLICAS`/`SLAVES`, `SENTINELS`, `CKQUORUM`, `FAILOVER`,
//! `MYID`, `RESET`, `INFO [sentinel]`, `ROLE`, `PING`, `HELLO`, `CLIENT …`,
//! and pub/sub (`SUBSCRIBE`, `PSUBSCRIBE`…) of its events. The Sentinels
//! started together form one group: they watch the same primaries and know
//! each other (`SENTINEL SENTINELS`), and what one of them sees, all see —
//! there are no pings, votes or timeouts between them. What a primary's
//! replicas are is read from the primary itself, at the time of the question.
//!
//! A primary that stops answering — crashed by test control (`RLOCKD REPL
//! CRASH`, `Server::crash`; `server/crash.rs`) — is flagged `+sdown` once it
//! has been down for its `down-after-milliseconds` (30000 as in Redis;
//! `SENTINEL SET name down-after-milliseconds ms`, `rlockd
//! --sentinel-down-after ms`, [`Sentinel::set_down_after`]; a crash made
//! with `NOW` is noticed at the next check), `+odown` with the group's
//! agreement, and failed over automatically with Redis's events: the
//! replica that received most is promoted with what it has, and the old
//! primary, once back, is converted into its replica (`-sdown`,
//! `+convert-to-slave`); a crashed replica is flagged `+sdown` (and `-sdown`
//! when back) the same way. The group checks every 20 ms and whenever a node
//! goes down or comes back, so the outcome never depends on a timer race.
//!
//! A failover (`SENTINEL FAILOVER name`, or `RLOCKD REPL FAILOVER` on the
//! primary) is the test double of Redis's: it jumps to the end at once —
//! the replica is promoted with what it has received, the old primary
//! becomes its replica — and publishes the events Redis's state machine
//! publishes, in the same order (`+new-epoch`, `+try-failover`, …,
//! `+failover-end`, `+switch-master`, `+slave`, `+convert-to-slave`), on every
//! Sentinel of the group. `SENTINEL FAILOVER` answers once it is done.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::broadcast;

use crate::protocol::{Reply, RequestParser, Resp};
use crate::server::replication as repl;

/// A primary the group watches.
#[derive(Debug, Clone)]
struct Watched {
    name: String,
    addr: SocketAddr,
    quorum: u32,
    config_epoch: u64,
    down_after_ms: u64,
    failover_timeout_ms: u64,
    parallel_syncs: u64,
    /// Flagged subjectively (and, the group agreeing, objectively) down
    /// since then.
    sdown: Option<Instant>,
    /// An automatic failover found no replica to promote (said once).
    no_good_slave: bool,
}

impl Watched {
    fn new(name: &str, addr: SocketAddr, quorum: u32) -> Watched {
        Watched {
            name: name.to_string(),
            addr,
            quorum,
            config_epoch: 0,
            down_after_ms: 30_000,
            failover_timeout_ms: 180_000,
            parallel_syncs: 1,
            sdown: None,
            no_good_slave: false,
        }
    }
}

/// An old primary that was down when it was failed over: converted into a
/// replica of `new` once it is back.
#[derive(Debug, Clone)]
struct Demoted {
    name: String,
    old: SocketAddr,
    new: SocketAddr,
    /// `+sdown` published for it as a replica.
    sdown: bool,
}

/// True when `since` (a crash, `at_once` or not) is past `down_after_ms`.
fn down_long_enough(down: Option<(Instant, bool)>, down_after_ms: u64) -> bool {
    down.is_some_and(|(since, at_once)| at_once || since.elapsed().as_millis() as u64 >= down_after_ms)
}

/// A Sentinel of a group: id, address, event bus.
type Member = (String, SocketAddr, broadcast::Sender<(String, String)>);

/// What the Sentinels of one group share.
#[derive(Debug)]
struct Group {
    masters: parking_lot::Mutex<Vec<Watched>>,
    /// Each Sentinel: id, address, event bus.
    members: parking_lot::Mutex<Vec<Member>>,
    epoch: AtomicU64,
    /// Old primaries to convert when they are back.
    demoted: parking_lot::Mutex<Vec<Demoted>>,
    /// Replicas flagged `+sdown` (crashed), by address.
    replicas_down: parking_lot::Mutex<Vec<SocketAddr>>,
    /// One failover at a time.
    failing_over: tokio::sync::Mutex<()>,
    started: Instant,
}

impl Group {
    /// Publishes `event` with `text` on every Sentinel of the group.
    fn event(&self, event: &str, text: String) {
        tracing::warn!("{event} {text}");
        for (_, _, bus) in self.members.lock().iter() {
            let _ = bus.send((event.to_string(), text.clone()));
        }
    }
}

/// A running Sentinel. Stops when dropped.
pub struct Sentinel {
    id: String,
    addr: SocketAddr,
    group: Arc<Group>,
    shutdown: tokio::sync::watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Sentinel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sentinel").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Sentinel {
    /// Starts one Sentinel per port of `ports` (0: a free port) on `ip`,
    /// as one group watching `masters` (name, primary address), each with
    /// quorum `quorum`.
    ///
    /// ```no_run
    /// let nodes = rlockd::Server::start_with_replicas(1, rlockd::Config::default()).unwrap();
    /// let ip = "127.0.0.1".parse().unwrap();
    /// let sentinels = rlockd::Sentinel::start_group(ip, &[0, 0, 0], &[("mymaster", nodes[0].addr())], 2).unwrap();
    /// println!("sentinel on port {}", sentinels[0].port());
    /// ```
    pub fn start_group(
        ip: std::net::IpAddr,
        ports: &[u16],
        masters: &[(&str, SocketAddr)],
        quorum: u32,
    ) -> Result<Vec<Sentinel>, crate::error::Error> {
        let group = Arc::new(Group {
            masters: parking_lot::Mutex::new(masters.iter().map(|(n, a)| Watched::new(n, *a, quorum)).collect()),
            members: Default::default(),
            epoch: AtomicU64::new(0),
            demoted: Default::default(),
            replicas_down: Default::default(),
            failing_over: Default::default(),
            started: Instant::now(),
        });
        let mut out = Vec::new();
        for &port in ports {
            let addr = SocketAddr::new(ip, port);
            let listener = crate::server::listen(addr, 511)
                .map_err(|source| crate::error::Error::Bind { addr: addr.to_string(), source })?;
            let addr = listener.local_addr().map_err(crate::error::Error::Runtime)?;
            let id = crate::replication::new_replid();
            let (bus, _) = broadcast::channel(1024);
            group.members.lock().push((id.clone(), addr, bus.clone()));
            let (shutdown, rx) = tokio::sync::watch::channel(false);
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(crate::error::Error::Runtime)?;
            let me = Arc::new(Me { id: id.clone(), addr, group: group.clone(), bus, next_client: AtomicU64::new(1) });
            let watcher = out.is_empty().then(|| (group.clone(), rx.clone()));
            let thread = std::thread::Builder::new()
                .name(format!("sentinel-{}", addr.port()))
                .spawn(move || {
                    runtime.block_on(async move {
                        if let Some((g, rx)) = watcher {
                            tokio::spawn(watch(g, rx));
                        }
                        accept(listener, me, rx).await
                    });
                    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
                })
                .map_err(crate::error::Error::Runtime)?;
            out.push(Sentinel { id, addr, group: group.clone(), shutdown, thread: Some(thread) });
        }
        Ok(out)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Its id (`SENTINEL MYID`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The address of the primary named `name` now.
    pub fn master_addr(&self, name: &str) -> Option<SocketAddr> {
        self.group.masters.lock().iter().find(|m| m.name == name).map(|m| m.addr)
    }

    /// Sets `down-after-milliseconds` of the primary named `name` (every
    /// primary with `None`) for the whole group, as `SENTINEL SET name
    /// down-after-milliseconds ms`; false if there is no such primary.
    pub fn set_down_after(&self, name: Option<&str>, ms: u64) -> bool {
        let mut n = 0;
        for m in self.group.masters.lock().iter_mut().filter(|m| name.is_none_or(|x| x == m.name)) {
            m.down_after_ms = ms.max(1);
            n += 1;
        }
        n > 0
    }

    /// Waits until the primary named `name` is `addr` (after a failover),
    /// at most `limit`; true if it is.
    pub fn wait_for_master(&self, name: &str, addr: SocketAddr, limit: std::time::Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.master_addr(name) != Some(addr) {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        true
    }

    /// Stops it.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.shutdown.send_replace(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// One Sentinel as its connections see it.
struct Me {
    id: String,
    addr: SocketAddr,
    group: Arc<Group>,
    bus: broadcast::Sender<(String, String)>,
    next_client: AtomicU64,
}

async fn accept(listener: std::net::TcpListener, me: Arc<Me>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    loop {
        tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => return,
            r = listener.accept() => match r {
                Ok((socket, _)) => {
                    let _ = socket.set_nodelay(true);
                    tokio::spawn(connection(socket, me.clone(), shutdown.clone()));
                }
                Err(e) => tracing::warn!("sentinel accept failed: {e}"),
            },
        }
    }
}

/// One client's state.
struct Client {
    id: u64,
    resp: Resp,
    name: Bytes,
    channels: Vec<Bytes>,
    patterns: Vec<Bytes>,
    close: bool,
}

impl Client {
    fn subscriptions(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }
}

async fn connection(mut socket: tokio::net::TcpStream, me: Arc<Me>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let mut c = Client {
        id: me.next_client.fetch_add(1, Ordering::Relaxed),
        resp: Resp::V2,
        name: Bytes::new(),
        channels: Vec::new(),
        patterns: Vec::new(),
        close: false,
    };
    let mut events = me.bus.subscribe();
    let mut parser = RequestParser::new();
    let mut buf = BytesMut::with_capacity(4096);
    let mut out = BytesMut::new();
    loop {
        tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => return,
            ev = events.recv() => {
                let Ok((channel, text)) = ev else { continue };
                deliver(&c, &channel, &text, &mut out);
            }
            r = socket.read_buf(&mut buf) => {
                match r {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                loop {
                    match parser.next(&mut buf) {
                        Ok(Some(argv)) => {
                            let reply = run(&me, &mut c, &argv).await;
                            reply.encode(c.resp, &mut out);
                            if c.close {
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            Reply::error(e.reply_text()).encode(c.resp, &mut out);
                            c.close = true;
                            break;
                        }
                    }
                }
            }
        }
        if !out.is_empty() && socket.write_all(&out).await.is_err() {
            return;
        }
        out.clear();
        if c.close {
            return;
        }
    }
}

/// Sends an event to a client subscribed to it.
fn deliver(c: &Client, channel: &str, text: &str, out: &mut BytesMut) {
    let b = |s: &str| Reply::bulk(Bytes::copy_from_slice(s.as_bytes()));
    let push = |items: Vec<Reply>| if c.resp == Resp::V3 { Reply::Push(items) } else { Reply::Array(items) };
    if c.channels.iter().any(|ch| ch == channel.as_bytes()) {
        push(vec![b("message"), b(channel), b(text)]).encode(c.resp, out);
    }
    for p in &c.patterns {
        if crate::glob::matches(p, channel.as_bytes(), false) {
            push(vec![b("pmessage"), Reply::Bulk(p.clone()), b(channel), b(text)]).encode(c.resp, out);
        }
    }
}

fn eq(a: &[u8], s: &str) -> bool {
    a.eq_ignore_ascii_case(s.as_bytes())
}

fn unknown_command(argv: &[Bytes]) -> Reply {
    let mut args = String::new();
    for a in &argv[1..] {
        if args.len() >= 128 {
            break;
        }
        args.push_str(&format!("'{}' ", String::from_utf8_lossy(a)));
    }
    Reply::error(format!(
        "ERR unknown command '{}', with args beginning with: {args}",
        String::from_utf8_lossy(&argv[0])
    ))
}

fn arity(name: &str) -> Reply {
    Reply::error(format!("ERR wrong number of arguments for '{name}' command"))
}

async fn run(me: &Me, c: &mut Client, argv: &[Bytes]) -> Reply {
    let n = argv.len();
    let cmd = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
    // A RESP2 subscriber may only (un)subscribe, ping, quit and reset.
    if c.resp == Resp::V2
        && c.subscriptions() > 0
        && !matches!(
            cmd.as_str(),
            "subscribe" | "psubscribe" | "unsubscribe" | "punsubscribe" | "ping" | "quit" | "reset"
        )
    {
        return Reply::error(format!("ERR Can't execute '{cmd}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"));
    }
    match cmd.as_str() {
        "ping" if n <= 2 => {
            if c.subscriptions() > 0 && c.resp == Resp::V2 {
                return Reply::Array(vec![
                    Reply::bulk_str("pong"),
                    argv.get(1).cloned().map_or(Reply::bulk_str(""), Reply::Bulk),
                ]);
            }
            argv.get(1).cloned().map_or(Reply::status("PONG"), Reply::Bulk)
        }
        "ping" => arity("ping"),
        "quit" => {
            c.close = true;
            Reply::ok()
        }
        "auth" => Reply::error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"),
        "hello" => hello(c, argv),
        "client" if n >= 2 => client(c, argv),
        "command" => match argv.get(1) {
            Some(a) if eq(a, "count") => Reply::Int(15),
            _ => Reply::Array(Vec::new()),
        },
        "role" => {
            let names = me.group.masters.lock().iter().map(|m| Reply::bulk_str(&m.name)).collect();
            Reply::Array(vec![Reply::bulk_str("sentinel"), Reply::Array(names)])
        }
        "info" => Reply::Verbatim("txt", Bytes::from(info(me, argv.get(1)).await)),
        "subscribe" | "psubscribe" if n >= 2 => subscribe(c, &cmd, &argv[1..]),
        "unsubscribe" | "punsubscribe" => unsubscribe(c, &cmd, &argv[1..]),
        "publish" if n == 3 => Reply::Int(0),
        "sentinel" if n >= 2 => sentinel(me, argv).await,
        "shutdown" => Reply::error("ERR rlockd's Sentinels stop with the process"),
        "reset" => {
            c.channels.clear();
            c.patterns.clear();
            c.resp = Resp::V2;
            Reply::status("RESET")
        }
        "subscribe" | "psubscribe" | "sentinel" | "client" | "publish" => arity(&cmd),
        _ => unknown_command(argv),
    }
}

fn hello(c: &mut Client, argv: &[Bytes]) -> Reply {
    if let Some(v) = argv.get(1) {
        match v.as_ref() {
            b"2" => c.resp = Resp::V2,
            b"3" => c.resp = Resp::V3,
            _ => return Reply::error("NOPROTO unsupported protocol version"),
        }
    }
    let mut i = 2;
    while i < argv.len() {
        if eq(&argv[i], "setname") && i + 1 < argv.len() {
            c.name = argv[i + 1].clone();
            i += 2;
        } else if eq(&argv[i], "auth") && i + 2 < argv.len() {
            i += 3;
        } else {
            return Reply::error(format!("ERR Syntax error in HELLO option '{}'", String::from_utf8_lossy(&argv[i])));
        }
    }
    Reply::Map(vec![
        (Reply::bulk_str("server"), Reply::bulk_str("redis")),
        (Reply::bulk_str("version"), Reply::bulk_str(crate::version::REDIS_VERSION)),
        (Reply::bulk_str("proto"), Reply::Int(if c.resp == Resp::V3 { 3 } else { 2 })),
        (Reply::bulk_str("id"), Reply::Int(c.id as i64)),
        (Reply::bulk_str("mode"), Reply::bulk_str("sentinel")),
        (Reply::bulk_str("modules"), Reply::Array(vec![])),
    ])
}

fn client(c: &mut Client, argv: &[Bytes]) -> Reply {
    let sub = &argv[1];
    if eq(sub, "setname") && argv.len() == 3 {
        c.name = argv[2].clone();
        Reply::ok()
    } else if eq(sub, "getname") {
        if c.name.is_empty() {
            Reply::Nil
        } else {
            Reply::Bulk(c.name.clone())
        }
    } else if eq(sub, "id") {
        Reply::Int(c.id as i64)
    } else {
        Reply::error(format!("ERR unknown subcommand '{}'. Try CLIENT HELP.", String::from_utf8_lossy(sub)))
    }
}

fn subscribe(c: &mut Client, cmd: &str, names: &[Bytes]) -> Reply {
    let mut out = Vec::new();
    for ch in names {
        let list = if cmd == "subscribe" { &mut c.channels } else { &mut c.patterns };
        if !list.contains(ch) {
            list.push(ch.clone());
        }
        let count = c.subscriptions() as i64;
        out.push(confirm(c.resp, cmd, Reply::Bulk(ch.clone()), count));
    }
    many(out, c.resp)
}

fn unsubscribe(c: &mut Client, cmd: &str, names: &[Bytes]) -> Reply {
    let pattern = cmd == "punsubscribe";
    let list: Vec<Bytes> = if names.is_empty() {
        if pattern {
            c.patterns.clone()
        } else {
            c.channels.clone()
        }
    } else {
        names.to_vec()
    };
    let mut out = Vec::new();
    for ch in &list {
        if pattern {
            c.patterns.retain(|p| p != ch);
        } else {
            c.channels.retain(|p| p != ch);
        }
        out.push(confirm(c.resp, cmd, Reply::Bulk(ch.clone()), c.subscriptions() as i64));
    }
    if out.is_empty() {
        out.push(confirm(c.resp, cmd, Reply::Nil, c.subscriptions() as i64));
    }
    many(out, c.resp)
}

fn confirm(resp: Resp, kind: &str, name: Reply, count: i64) -> Reply {
    let items = vec![Reply::bulk_str(kind), name, Reply::Int(count)];
    if resp == Resp::V3 {
        Reply::Push(items)
    } else {
        Reply::Array(items)
    }
}

/// Several replies written back to back (one per channel).
fn many(mut replies: Vec<Reply>, resp: Resp) -> Reply {
    if replies.len() == 1 {
        return replies.pop().expect("one");
    }
    let first = replies.remove(0);
    Reply::ThenPushes(Box::new(first), replies.iter().map(|r| r.to_bytes(resp)).collect())
}

async fn info(me: &Me, section: Option<&Bytes>) -> String {
    let want = |s: &str| section.is_none_or(|w| eq(w, s) || eq(w, "all") || eq(w, "default") || eq(w, "everything"));
    let mut out = String::new();
    if want("server") {
        out.push_str(&format!(
            "# Server\r\nredis_version:{}\r\nredis_mode:sentinel\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\n\r\n",
            crate::version::REDIS_VERSION,
            std::process::id(),
            me.id,
            me.addr.port(),
            me.group.started.elapsed().as_secs()
        ));
    }
    if want("sentinel") {
        let masters = me.group.masters.lock().clone();
        let sentinels = me.group.members.lock().len();
        out.push_str(&format!(
            "# Sentinel\r\nsentinel_masters:{}\r\nsentinel_tilt:0\r\nsentinel_tilt_since_seconds:-1\r\nsentinel_running_scripts:0\r\nsentinel_scripts_queue_length:0\r\nsentinel_simulate_failure_flags:0\r\n",
            masters.len()
        ));
        for (i, m) in masters.iter().enumerate() {
            let status = if m.sdown.is_some() { "odown" } else { "ok" };
            let slaves = replicas_of(m).await.len();
            out.push_str(&format!(
                "master{i}:name={},status={status},address={},slaves={slaves},sentinels={sentinels}\r\n",
                m.name, m.addr
            ));
        }
    }
    while out.ends_with("\r\n\r\n") {
        out.truncate(out.len() - 2);
    }
    out
}

/// A replica as a Sentinel reports it.
struct ReplicaInfo {
    addr: SocketAddr,
    run_id: String,
    offset: u64,
    link_up: bool,
    priority: String,
}

/// The replicas the primary `m` has now (read from the primary, then each
/// replica, one lock at a time).
async fn replicas_of(m: &Watched) -> Vec<ReplicaInfo> {
    let Some(primary) = repl::find(&m.addr.ip().to_string(), m.addr.port()) else { return Vec::new() };
    let links = primary.core.lock().await.repl.replicas.clone();
    let mut out = Vec::new();
    for l in links.iter().filter(|l| !l.closed.load(Ordering::Acquire)) {
        let Some(node) = repl::find(&l.replica.ip().to_string(), l.replica.port()) else { continue };
        let priority = node.core.lock().await.config.get_str("replica-priority").to_string();
        out.push(ReplicaInfo {
            addr: l.replica,
            run_id: node.run_id.clone(),
            offset: l.acked.load(Ordering::Acquire),
            link_up: l.is_online(),
            priority,
        });
    }
    out
}

fn fields(pairs: Vec<(&str, String)>) -> Reply {
    Reply::Map(pairs.into_iter().map(|(k, v)| (Reply::bulk_str(k), Reply::bulk_str(&v))).collect())
}

async fn master_reply(me: &Me, m: &Watched) -> Reply {
    let ms = me.group.started.elapsed().as_millis() as u64;
    let run_id = repl::find(&m.addr.ip().to_string(), m.addr.port()).map(|p| p.run_id.clone()).unwrap_or_default();
    // In redis-sentinel's order: s_down, o_down, role, disconnected.
    let flags = if m.sdown.is_some() {
        "s_down,o_down,master"
    } else if crate::replication::down::down(m.addr).is_some() {
        "master,disconnected"
    } else {
        "master"
    };
    let others = me.group.members.lock().len() - 1;
    let slaves = replicas_of(m).await.len();
    let mut pairs = vec![
        ("name", m.name.clone()),
        ("ip", m.addr.ip().to_string()),
        ("port", m.addr.port().to_string()),
        ("runid", run_id),
        ("flags", flags.into()),
        ("link-pending-commands", "0".into()),
        ("link-refcount", "1".into()),
        ("last-ping-sent", "0".into()),
        ("last-ok-ping-reply", (ms % 1000).to_string()),
        ("last-ping-reply", (ms % 1000).to_string()),
    ];
    if let Some(since) = m.sdown {
        let down = since.elapsed().as_millis().to_string();
        pairs.push(("s-down-time", down.clone()));
        pairs.push(("o-down-time", down));
    }
    pairs.extend(vec![
        ("down-after-milliseconds", m.down_after_ms.to_string()),
        ("info-refresh", (ms % 10000).to_string()),
        ("role-reported", "master".into()),
        ("role-reported-time", ms.to_string()),
        ("config-epoch", m.config_epoch.to_string()),
        ("num-slaves", slaves.to_string()),
        ("num-other-sentinels", others.to_string()),
        ("quorum", m.quorum.to_string()),
        ("failover-timeout", m.failover_timeout_ms.to_string()),
        ("parallel-syncs", m.parallel_syncs.to_string()),
    ]);
    fields(pairs)
}

fn replica_reply(me: &Me, m: &Watched, r: &ReplicaInfo) -> Reply {
    let ms = me.group.started.elapsed().as_millis() as u64;
    let flags = if me.group.replicas_down.lock().contains(&r.addr) {
        "s_down,slave,disconnected"
    } else if crate::replication::down::down(r.addr).is_some() {
        "slave,disconnected"
    } else {
        "slave"
    };
    fields(vec![
        ("name", r.addr.to_string()),
        ("ip", r.addr.ip().to_string()),
        ("port", r.addr.port().to_string()),
        ("runid", r.run_id.clone()),
        ("flags", flags.into()),
        ("link-pending-commands", "0".into()),
        ("link-refcount", "1".into()),
        ("last-ping-sent", "0".into()),
        ("last-ok-ping-reply", (ms % 1000).to_string()),
        ("last-ping-reply", (ms % 1000).to_string()),
        ("down-after-milliseconds", m.down_after_ms.to_string()),
        ("info-refresh", (ms % 10000).to_string()),
        ("role-reported", "slave".into()),
        ("role-reported-time", ms.to_string()),
        ("master-link-down-time", "0".into()),
        ("master-link-status", if r.link_up { "ok" } else { "err" }.into()),
        ("master-host", m.addr.ip().to_string()),
        ("master-port", m.addr.port().to_string()),
        ("slave-priority", r.priority.clone()),
        ("slave-repl-offset", r.offset.to_string()),
        ("replica-announced", "1".into()),
    ])
}

const NO_MASTER: &str = "ERR No such master with that name";

async fn sentinel(me: &Me, argv: &[Bytes]) -> Reply {
    let sub = String::from_utf8_lossy(&argv[1]).to_ascii_lowercase();
    let n = argv.len();
    let master = |i: usize| -> Option<Watched> {
        let name = argv.get(i)?;
        me.group.masters.lock().iter().find(|m| m.name.as_bytes() == name.as_ref()).cloned()
    };
    let arity = || Reply::error(format!("ERR wrong number of arguments for 'sentinel|{sub}' command"));
    match sub.as_str() {
        "get-master-addr-by-name" if n == 3 => match master(2) {
            Some(m) => Reply::Array(vec![
                Reply::bulk_str(&m.addr.ip().to_string()),
                Reply::bulk_str(&m.addr.port().to_string()),
            ]),
            None => Reply::NilArray,
        },
        "masters" if n == 2 => {
            let all = me.group.masters.lock().clone();
            let mut replies = Vec::new();
            for m in &all {
                replies.push(master_reply(me, m).await);
            }
            Reply::Array(replies)
        }
        "master" if n == 3 => match master(2) {
            Some(m) => master_reply(me, &m).await,
            None => Reply::error(NO_MASTER),
        },
        "replicas" | "slaves" if n == 3 => match master(2) {
            Some(m) => Reply::Array(replicas_of(&m).await.iter().map(|r| replica_reply(me, &m, r)).collect()),
            None => Reply::error(NO_MASTER),
        },
        "sentinels" if n == 3 => match master(2) {
            Some(_) => {
                let ms = me.group.started.elapsed().as_millis() as u64;
                let others: Vec<(String, SocketAddr)> = me
                    .group
                    .members
                    .lock()
                    .iter()
                    .filter(|(id, _, _)| *id != me.id)
                    .map(|(i, a, _)| (i.clone(), *a))
                    .collect();
                Reply::Array(
                    others
                        .into_iter()
                        .map(|(id, a)| {
                            fields(vec![
                                ("name", id.clone()),
                                ("ip", a.ip().to_string()),
                                ("port", a.port().to_string()),
                                ("runid", id),
                                ("flags", "sentinel".into()),
                                ("link-pending-commands", "0".into()),
                                ("link-refcount", "1".into()),
                                ("last-ping-sent", "0".into()),
                                ("last-ok-ping-reply", (ms % 1000).to_string()),
                                ("last-ping-reply", (ms % 1000).to_string()),
                                ("down-after-milliseconds", "30000".into()),
                                ("last-hello-message", (ms % 2000).to_string()),
                                ("voted-leader", "?".into()),
                                ("voted-leader-epoch", "0".into()),
                            ])
                        })
                        .collect(),
                )
            }
            None => Reply::error(NO_MASTER),
        },
        "ckquorum" if n == 3 => match master(2) {
            Some(m) => {
                let usable = me.group.members.lock().len() as u32;
                if usable < m.quorum {
                    Reply::error(format!("NOQUORUM {usable} usable Sentinels. Not enough available Sentinels to reach the specified quorum for this master"))
                } else if usable < usable / 2 + 1 {
                    Reply::error(format!("NOQUORUM {usable} usable Sentinels. Not enough available Sentinels to reach the majority and authorize a failover"))
                } else {
                    Reply::Status(Bytes::from(format!(
                        "OK {usable} usable Sentinels. Quorum and failover authorization can be reached"
                    )))
                }
            }
            None => Reply::error(NO_MASTER),
        },
        "myid" if n == 2 => Reply::bulk_str(&me.id),
        "reset" if n == 3 => {
            let pattern = &argv[2];
            Reply::Int(
                me.group
                    .masters
                    .lock()
                    .iter()
                    .filter(|m| crate::glob::matches(pattern, m.name.as_bytes(), false))
                    .count() as i64,
            )
        }
        "set" if n >= 5 => match master(2) {
            Some(_) => set(me, argv),
            None => Reply::error(NO_MASTER),
        },
        "flushconfig" if n == 2 => Reply::ok(),
        "pending-scripts" if n == 2 => Reply::Array(Vec::new()),
        "failover" if n == 3 => match master(2) {
            Some(m) => match failover(&me.group, &m.name).await {
                Ok(()) => Reply::ok(),
                Err(e) => Reply::error(e),
            },
            None => Reply::error(NO_MASTER),
        },
        "help" => Reply::Array(
            [
                "SENTINEL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "CKQUORUM <master-name>",
                "    Check if the current Sentinel configuration is able to reach the quorum",
                "    needed to failover a master and the majority needed to authorize the",
                "    failover.",
                "FAILOVER <master-name>",
                "    Manually failover a master node without asking for agreement from other",
                "    Sentinels",
                "GET-MASTER-ADDR-BY-NAME <master-name>",
                "    Return the ip and port number of the master with that name.",
                "MASTER <master-name>",
                "    Show the state and info of the specified master.",
                "MASTERS",
                "    Show a list of monitored masters and their state.",
                "MYID",
                "    Return the ID of the Sentinel instance.",
                "REPLICAS <master-name>",
                "    Show a list of replicas for this master and their state.",
                "RESET <pattern>",
                "    Reset masters for specific master name matching this pattern.",
                "SENTINELS <master-name>",
                "    Show a list of Sentinel instances for this master and their state.",
                "SET <master-name> <option> <value> [<option> <value> ...]",
                "    Set configuration parameters for certain masters.",
                "HELP",
                "    Prints this help.",
            ]
            .iter()
            .map(|l| Reply::Status(Bytes::from_static(l.as_bytes())))
            .collect(),
        ),
        "get-master-addr-by-name"
        | "masters"
        | "master"
        | "replicas"
        | "slaves"
        | "sentinels"
        | "ckquorum"
        | "myid"
        | "reset"
        | "failover"
        | "set"
        | "flushconfig"
        | "pending-scripts" => arity(),
        _ => {
            Reply::error(format!("ERR unknown subcommand '{}'. Try SENTINEL HELP.", String::from_utf8_lossy(&argv[1])))
        }
    }
}

/// `SENTINEL SET name option value [option value …]`: the options apply in
/// order, for the whole group, up to the first bad one (as in Redis).
fn set(me: &Me, argv: &[Bytes]) -> Reply {
    let mut i = 3;
    while i < argv.len() {
        let option = String::from_utf8_lossy(&argv[i]).to_ascii_lowercase();
        let Some(value) = argv.get(i + 1) else {
            return Reply::error(format!(
                "ERR Unknown option or number of arguments for SENTINEL SET '{}'",
                String::from_utf8_lossy(&argv[i])
            ));
        };
        let positive = crate::num::parse_i64_strict(value).filter(|v| *v > 0).map(|v| v as u64);
        let invalid = || {
            Reply::error(format!(
                "ERR Invalid argument '{}' for SENTINEL SET '{}'",
                String::from_utf8_lossy(value),
                String::from_utf8_lossy(&argv[i])
            ))
        };
        let mut masters = me.group.masters.lock();
        let Some(m) = masters.iter_mut().find(|m| m.name.as_bytes() == argv[2].as_ref()) else {
            return Reply::error(NO_MASTER);
        };
        match option.as_str() {
            "down-after-milliseconds" | "failover-timeout" | "parallel-syncs" | "quorum" => {
                let Some(v) = positive else { return invalid() };
                match option.as_str() {
                    "down-after-milliseconds" => m.down_after_ms = v,
                    "failover-timeout" => m.failover_timeout_ms = v,
                    "parallel-syncs" => m.parallel_syncs = v,
                    _ => m.quorum = u32::try_from(v).unwrap_or(u32::MAX),
                }
            }
            _ => {
                return Reply::error(format!(
                    "ERR Unknown option or number of arguments for SENTINEL SET '{}'",
                    String::from_utf8_lossy(&argv[i])
                ))
            }
        }
        i += 2;
    }
    Reply::ok()
}

/// A failover of the primary named `name`, as Sentinel performs it, with
/// its events (see the module docs).
async fn failover(group: &Arc<Group>, name: &str) -> Result<(), String> {
    let Ok(_one) = group.failing_over.try_lock() else {
        return Err("INPROGRESS Failover already in progress".into());
    };
    let Some(m) = group.masters.lock().iter().find(|m| m.name == name).cloned() else {
        return Err(NO_MASTER.into());
    };
    let Some(primary) = repl::find(&m.addr.ip().to_string(), m.addr.port()) else {
        return Err("NOGOODSLAVE No suitable replica to promote".into());
    };
    if crate::replication::down::down(m.addr).is_some() {
        // A crashed primary (before or after its `+sdown`): Redis's
        // Sentinel still promotes a replica whose link to it went down
        // recently; the one that received most, as the automatic failover.
        let (candidate, all) = crash_candidate(&primary).await;
        let Some(port) = candidate else {
            return Err("NOGOODSLAVE No suitable replica to promote".into());
        };
        return promote_for_crash(group, &m, &primary, port, all).await;
    }
    let replicas: Vec<(SocketAddr, bool)> =
        primary.core.lock().await.repl.replicas.iter().map(|l| (l.replica, l.is_online())).collect();
    let Some(chosen) = replicas.iter().find(|(_, online)| *online).map(|(a, _)| *a) else {
        return Err("NOGOODSLAVE No suitable replica to promote".into());
    };
    let others: Vec<SocketAddr> = replicas.iter().map(|(a, _)| *a).filter(|a| *a != chosen).collect();
    let old = m.addr;
    let epoch = begin_events(group, name, old);
    let new = repl::failover(&primary, Some(chosen.port())).await?;
    end_events(group, name, old, new, &others, epoch);
    converted_events(group, name, old, new);
    Ok(())
}

/// The events before a replica is chosen; returns the failover's epoch.
fn begin_events(group: &Group, name: &str, old: SocketAddr) -> u64 {
    let epoch = group.epoch.fetch_add(1, Ordering::AcqRel) + 1;
    let leader = group.members.lock().first().map(|(id, _, _)| id.clone()).unwrap_or_default();
    let master_text = format!("master {name} {} {}", old.ip(), old.port());
    group.event("+new-epoch", epoch.to_string());
    group.event("+try-failover", master_text.clone());
    group.event("+vote-for-leader", format!("{leader} {epoch}"));
    group.event("+elected-leader", master_text.clone());
    group.event("+failover-state-select-slave", master_text);
    epoch
}

/// The events from the promotion on, and the group's new view.
/// `others`: the primary's other replicas, reconfigured to follow `new`.
fn end_events(group: &Group, name: &str, old: SocketAddr, new: SocketAddr, others: &[SocketAddr], epoch: u64) {
    let master_text = format!("master {name} {} {}", old.ip(), old.port());
    let slave_text = format!("slave {new} {} {} @ {name} {} {}", new.ip(), new.port(), old.ip(), old.port());
    group.event("+selected-slave", slave_text.clone());
    group.event("+failover-state-send-slaveof-noone", slave_text.clone());
    group.event("+failover-state-wait-promotion", slave_text.clone());
    group.event("-role-change", format!("{slave_text} new reported role is master"));
    group.event("+promoted-slave", slave_text);
    group.event("+failover-state-reconf-slaves", master_text.clone());
    for r in others {
        let text = format!("slave {r} {} {} @ {name} {} {}", r.ip(), r.port(), old.ip(), old.port());
        group.event("+slave-reconf-sent", text.clone());
        group.event("+slave-reconf-inprog", text.clone());
        group.event("+slave-reconf-done", text);
    }
    group.event("+failover-end", master_text);
    for w in group.masters.lock().iter_mut().filter(|w| w.name == name) {
        w.addr = new;
        w.config_epoch = epoch;
    }
    group.event("+switch-master", format!("{name} {} {} {} {}", old.ip(), old.port(), new.ip(), new.port()));
    for r in others {
        group.event("+slave", demoted_text(name, *r, new));
    }
    group.event("+slave", demoted_text(name, old, new));
}

/// A live old primary `old` reconfigured as a replica of `new`: it still
/// said it was a primary, then it follows.
fn converted_events(group: &Group, name: &str, old: SocketAddr, new: SocketAddr) {
    let text = demoted_text(name, old, new);
    group.event("-role-change", format!("{text} new reported role is master"));
    group.event("+convert-to-slave", text);
}

/// How the events name an old primary `old` as a replica of `new`.
fn demoted_text(name: &str, old: SocketAddr, new: SocketAddr) -> String {
    format!("slave {old} {} {} @ {name} {} {}", old.ip(), old.port(), new.ip(), new.port())
}

/// Whether a primary or an old primary is down or back: `+sdown`, `+odown`
/// and an automatic failover for a primary down for its
/// `down-after-milliseconds`; `-sdown` and `+convert-to-slave` for an old
/// primary back (see the module docs). Runs with the failover lock held.
async fn check_down(group: &Arc<Group>) {
    let masters = group.masters.lock().clone();
    for m in masters {
        let down = crate::replication::down::down(m.addr);
        let master_text = format!("master {} {} {}", m.name, m.addr.ip(), m.addr.port());
        match m.sdown {
            None if down_long_enough(down, m.down_after_ms) => {
                let members = group.members.lock().len();
                group.event("+sdown", master_text.clone());
                group.event("+odown", format!("{master_text} #quorum {members}/{}", m.quorum));
                for w in group.masters.lock().iter_mut().filter(|w| w.name == m.name) {
                    w.sdown = Some(Instant::now());
                }
                auto_failover(group, &m).await;
            }
            Some(_) if down.is_none() => {
                group.event("-sdown", master_text.clone());
                group.event("-odown", master_text);
                for w in group.masters.lock().iter_mut().filter(|w| w.name == m.name) {
                    w.sdown = None;
                    w.no_good_slave = false;
                }
            }
            Some(_) if !m.no_good_slave => auto_failover(group, &m).await,
            _ => {}
        }
    }
    // Replicas that crashed or came back (Redisson stops and resumes
    // reading from a replica on these events).
    let watch_replicas = crate::replication::down::any_down() || !group.replicas_down.lock().is_empty();
    let masters = group.masters.lock().clone();
    for m in masters {
        if m.sdown.is_some() || !watch_replicas {
            continue;
        }
        for r in replicas_of(&m).await {
            let text = format!(
                "slave {} {} {} @ {} {} {}",
                r.addr,
                r.addr.ip(),
                r.addr.port(),
                m.name,
                m.addr.ip(),
                m.addr.port()
            );
            let flagged = group.replicas_down.lock().contains(&r.addr);
            let down = crate::replication::down::down(r.addr);
            if !flagged && down_long_enough(down, m.down_after_ms) {
                group.replicas_down.lock().push(r.addr);
                group.event("+sdown", text);
            } else if flagged && down.is_none() {
                group.replicas_down.lock().retain(|a| *a != r.addr);
                group.event("-sdown", text);
            }
        }
    }
    let demoted = group.demoted.lock().clone();
    for d in demoted {
        let text = demoted_text(&d.name, d.old, d.new);
        let down = crate::replication::down::down(d.old);
        let down_after = group.masters.lock().iter().find(|m| m.name == d.name).map_or(30_000, |m| m.down_after_ms);
        if down.is_some() {
            if !d.sdown && down_long_enough(down, down_after) {
                group.event("+sdown", text);
                for x in group.demoted.lock().iter_mut().filter(|x| x.old == d.old) {
                    x.sdown = true;
                }
            }
            continue;
        }
        group.demoted.lock().retain(|x| x.old != d.old);
        let Some(node) = repl::find(&d.old.ip().to_string(), d.old.port()) else { continue };
        group.event("-role-change", format!("{text} new reported role is master"));
        if d.sdown {
            group.event("-sdown", text.clone());
        }
        repl::follow(&node, d.new).await;
        group.event("+convert-to-slave", text);
    }
}

/// The failover of a primary flagged down: its replica that received most
/// is promoted (the primary is not asked, it is down); the old primary is
/// converted when it is back.
async fn auto_failover(group: &Arc<Group>, m: &Watched) {
    let Some(primary) = repl::find(&m.addr.ip().to_string(), m.addr.port()) else { return };
    let (candidate, all) = crash_candidate(&primary).await;
    let old = m.addr;
    let Some(port) = candidate else {
        group.event("-failover-abort-no-good-slave", format!("master {} {} {}", m.name, old.ip(), old.port()));
        for w in group.masters.lock().iter_mut().filter(|w| w.name == m.name) {
            w.no_good_slave = true;
        }
        return;
    };
    if let Err(e) = promote_for_crash(group, m, &primary, port, all).await {
        tracing::warn!("automatic failover of {} failed: {e}", m.name);
        for w in group.masters.lock().iter_mut().filter(|w| w.name == m.name) {
            w.no_good_slave = true;
        }
    }
}

/// A crashed primary's replica to promote: the one that received most (the
/// first of equals) among those still linked; and every linked replica.
async fn crash_candidate(primary: &crate::core::Shared) -> (Option<u16>, Vec<SocketAddr>) {
    let core = primary.core.lock().await;
    let linked: Vec<_> = core.repl.replicas.iter().filter(|l| !l.closed.load(Ordering::Acquire)).collect();
    let best = linked.iter().map(|l| l.acked.load(Ordering::Acquire)).max();
    let chosen = linked.iter().find(|l| Some(l.acked.load(Ordering::Acquire)) == best).map(|l| l.replica.port());
    (chosen, linked.iter().map(|l| l.replica).collect())
}

/// Promotes `port`, a replica of the crashed primary `m`, with the
/// failover's events; the old primary is remembered to be converted when
/// it is back.
async fn promote_for_crash(
    group: &Arc<Group>,
    m: &Watched,
    primary: &Arc<crate::core::Shared>,
    port: u16,
    all: Vec<SocketAddr>,
) -> Result<(), String> {
    let old = m.addr;
    let epoch = begin_events(group, &m.name, old);
    let new = repl::promote_replica(primary, Some(port), true).await?;
    let others: Vec<SocketAddr> = all.into_iter().filter(|a| *a != new).collect();
    end_events(group, &m.name, old, new, &others, epoch);
    for w in group.masters.lock().iter_mut().filter(|w| w.name == m.name) {
        w.sdown = None;
        w.no_good_slave = false;
    }
    let mut d = Demoted { name: m.name.clone(), old, new, sdown: false };
    if crate::replication::down::down(old).is_some() {
        group.event("+sdown", demoted_text(&m.name, old, new));
        d.sdown = true;
    }
    group.demoted.lock().push(d);
    Ok(())
}

/// Follows failovers made without the Sentinels (`RLOCKD REPL FAILOVER`,
/// `Server::failover`, `REPLICAOF` on the primary): a watched primary that
/// became a replica is replaced by its primary, with the same events.
async fn watch(group: Arc<Group>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = crate::core::shutdown_requested(&mut shutdown) => return,
            _ = crate::replication::down::CHANGED.notified() => {}
            _ = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
        }
        let Ok(_one) = group.failing_over.try_lock() else { continue };
        check_down(&group).await;
        let masters = group.masters.lock().clone();
        for m in masters {
            let Some(p) = repl::find(&m.addr.ip().to_string(), m.addr.port()) else { continue };
            let follows = p.core.lock().await.repl.master.as_ref().map(|x| (x.host.clone(), x.port));
            let Some(new) = follows.and_then(|(h, port)| crate::replication::registry::resolve(&h, port)) else {
                continue;
            };
            if new != m.addr {
                let epoch = begin_events(&group, &m.name, m.addr);
                end_events(&group, &m.name, m.addr, new, &[], epoch);
                converted_events(&group, &m.name, m.addr, new);
            }
        }
    }
}
