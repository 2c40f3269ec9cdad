//! The commands of replication — `REPLICAOF`/`SLAVEOF`, `SYNC`/`PSYNC` and
//! `REPLCONF` (a replica over TCP: its handshake, its `ACK`s), `ROLE`,
//! `WAIT`, read-only replicas, and the settings `INFO replication` shows.
//! The stream, the links, `INFO replication`'s text and the feed
//! `cmd::call::call` hands each command's effects to are
//! `crate::replication`'s; the task that syncs a replica, applies what it
//! receives and answers `WAIT` is `server/replication.rs`'s.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::util::{eq, int};
use super::{arg, cmd, op, Arg, CommandSpec, Ctx, OpTable};
use crate::client::BlockRequest;
use crate::core::Core;
use crate::db::snapshot::Snapshot;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::replication::info::InfoSettings;
use crate::replication::{FullSync, Link, Master, Request, TcpReplica, TcpState, WaitReq};
use std::sync::Arc;

/// Redis's `shared.roslaveerr`.
pub(crate) const READONLY: &str = "READONLY You can't write against a read only replica.";

/// True when writes from this client are refused: a read-only replica, and
/// not its primary's stream.
pub(crate) fn read_only_here(ctx: &Ctx<'_>) -> bool {
    match &ctx.core.repl.master {
        Some(m) => m.client_id != ctx.client.id && ctx.core.config.replica_read_only,
        None => false,
    }
}

/// `min-replicas-to-write`: enough replicas acknowledged within
/// `min-replicas-max-lag` seconds (a replica never refuses for it).
pub(crate) fn enough_good_replicas(core: &Core) -> bool {
    if core.repl.is_replica() {
        return true;
    }
    let max_lag: u64 = core.config.min_replicas_max_lag;
    if max_lag == 0 {
        return true;
    }
    let good = core.repl.replicas.iter().filter(|l| l.is_online() && l.lag_secs() <= max_lag).count();
    good as i64 >= core.config.min_replicas_to_write
}

pub static COMMANDS: &[CommandSpec] = &[
    cmd("replicaof", replicaof, 3, "admin noscript stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Make the server a replica of another instance, or promote it as master.", "5.0.0"),
    cmd("slaveof", replicaof, 3, "admin noscript stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Make the server a replica of another instance, or promote it as master.", "1.0.0"),
    cmd("sync", sync, 1, "admin noscript no_async_loading no_multi", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Internal command used for replication", "1.0.0"),
    cmd("psync", sync, -3, "admin noscript no_async_loading no_multi", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Internal command used for replication", "2.8.0"),
    cmd("replconf", replconf, -1, "admin noscript loading stale allow_busy", 0, 0, 0, "@admin @slow @dangerous")
        .doc("An internal command for configuring the replication stream", "3.0.0"),
    cmd("wait", wait, 3, "noscript", 0, 0, 0, "@slow @connection")
        .hidden_flags("scripts_from_7_2")
        .in_7_2("blocking", "@slow @blocking @connection")
        .doc(
        "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
        "3.0.0",
    ),
    cmd("role", role, 1, "noscript loading stale fast", 0, 0, 0, "@admin @fast @dangerous")
        .doc("Return the role of the instance in the context of replication", "2.8.12"),
];

// ---- commands ----

/// `SYNC` / `PSYNC replid offset`: the calling connection becomes a
/// replica, as Redis 7.0's `syncCommand`. A `PSYNC` whose history the
/// backlog still holds is answered `+CONTINUE` and sent the stream from its
/// offset; otherwise `+FULLRESYNC <replid> <offset>` at once (`PSYNC`
/// only), then, once the file is made, `$<len>` and an RDB file of the
/// keyspace as of `offset` (made a slice at a time on the event loop while
/// other clients run: `db::snapshot`, [`full_sync_step`]; a newline each
/// second meanwhile), then the stream from `offset` on. A full
/// resynchronisation asked for while a file is being made joins it.
/// Everything goes out through the connection's push queue, in that order;
/// the command's own reply is suppressed.
fn sync(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let id = ctx.client.id;
    let from_primary = ctx.core.repl.master.as_ref().is_some_and(|m| m.client_id == id);
    if ctx.client.shared.replica.load(Ordering::Acquire) || from_primary {
        // Already a replica (or the primary's own stream): ignored, as in Redis.
        ctx.client.reply_mode = crate::client::ReplyMode::SkipThis;
        return Ok(Reply::ok());
    }
    if ctx.core.repl.master.as_ref().is_some_and(|m| !m.link_up()) {
        return Err(CmdError::custom("NOMASTERLINK Can't SYNC while not connected with my master"));
    }
    let psync = eq(&args[0], "psync");
    let from = if psync { Some(crate::num::parse_i64_strict(&args[2]).ok_or(CmdError::NotInteger)?) } else { None };
    let hs = ctx.core.repl.handshakes.remove(&id).unwrap_or_default();
    // A replica on the Unix socket is reported on the loopback address.
    let peer_ip = match &ctx.client.shared.addr {
        crate::client::ClientAddr::Tcp(a) => a.ip(),
        crate::client::ClientAddr::Unix(_) => std::net::IpAddr::from([127, 0, 0, 1]),
    };
    let ip = hs.ip.as_deref().and_then(|ip| ip.parse().ok()).unwrap_or(peer_ip);
    let replica_addr = std::net::SocketAddr::new(ip, hs.port);
    let name = format!("{}:{}", hs.ip.as_deref().map_or(ip.to_string(), str::to_string), hs.port);
    let limit = ctx.core.config.replica_limit;
    let primary_addr = *ctx.shared.local_addr.lock();
    let repl = &mut ctx.core.repl;
    repl.backlog_size = ctx.core.config.repl_backlog_size;
    tracing::info!("Replica {name} asks for synchronization");
    let link = Arc::new(Link::tcp(
        primary_addr,
        replica_addr,
        repl.wake.clone(),
        TcpReplica::new(ctx.client.shared.clone(), (limit.hard, limit.soft, limit.soft_secs)),
    ));
    ctx.client.shared.replica.store(true, Ordering::Release);
    ctx.client.reply_mode = crate::client::ReplyMode::SkipThis;
    if let (true, Some(from)) = (psync, from) {
        let replid = String::from_utf8_lossy(&args[1]);
        if from >= 0 && repl.can_continue(&replid, from as u64) {
            let line = if hs.psync2 { format!("CONTINUE {}", repl.replid) } else { "CONTINUE".to_string() };
            ctx.client.shared.push_encoded(Reply::Status(Bytes::from(line)).to_bytes(crate::protocol::Resp::V2));
            let backlog = repl.offset + 1 - from as u64;
            repl.attach_continuing(link, from as u64);
            tracing::info!(
                "Partial resynchronization request from {name} accepted. Sending {backlog} bytes of backlog starting from offset {from}."
            );
            return Ok(Reply::ok());
        }
        if !replid.starts_with('?') {
            repl.sync_partial_err += 1;
            tracing::info!("Partial resynchronization not accepted for {name}: full resync");
        }
    }
    repl.attach(link.clone());
    let (replid, offset) = match &repl.full_sync {
        Some(fs) => (fs.replid.clone(), fs.offset),
        None => (repl.replid.clone(), repl.offset),
    };
    if psync {
        let line = Reply::Status(Bytes::from(format!("FULLRESYNC {replid} {offset}")));
        ctx.client.shared.push_encoded(line.to_bytes(crate::protocol::Resp::V2));
    }
    if let Some(fs) = repl.full_sync.as_mut() {
        tracing::info!("Waiting for end of BGSAVE for SYNC (replica {name} joins the file being made)");
        fs.join(link);
        return Ok(Reply::ok());
    }
    tracing::info!(
        "Starting BGSAVE for SYNC with target: replicas sockets (in memory, replid {replid} offset {offset})"
    );
    let mut fs = FullSync::new(replid, offset);
    fs.join(link);
    repl.full_sync = Some(fs);
    start_snapshot(ctx.core, ctx.shared.clock.now_ms());
    if ctx.shared.io.get().is_some() {
        // The server's task makes the file a slice at a time.
        ctx.core.repl.sync_wake.notify_one();
    } else {
        // No event loop (the socket-less harness): made at once.
        full_sync_step(ctx.core, None);
    }
    Ok(Reply::ok())
}

/// Begins the RDB file of a full resynchronisation: the head as Redis 7.0
/// writes it for a replica (aux fields `repl-id`, `repl-offset`…, the
/// function libraries), then the keyspace as it is now, written a slice at
/// a time by [`full_sync_step`] (`db::snapshot`).
fn start_snapshot(core: &mut Core, now_ms: u64) {
    use crate::db::rdb::FileWriter;
    let Some(fs) = core.repl.full_sync.as_ref() else { return };
    let fill = core.config.enc_limits.list_fill;
    let mut w = FileWriter::new(fill);
    w.aux("redis-ver", core.config.get_str("redis-version").as_bytes());
    w.aux("redis-bits", b"64");
    w.aux("ctime", (now_ms / 1000).to_string().as_bytes());
    w.aux("used-mem", crate::memory::used_memory().to_string().as_bytes());
    w.aux("repl-stream-db", b"0");
    w.aux("repl-id", fs.replid.as_bytes());
    w.aux("repl-offset", fs.offset.to_string().as_bytes());
    w.aux("aof-base", b"0");
    if let Some(s) = core.scripting.as_ref() {
        w.functions(&s.function_dump());
    }
    let snapshot = Snapshot::start(&mut core.ks.dbs, w, fill);
    core.ks.sig.images.set_snapshot(Some(Box::new(snapshot)));
}

/// One slice of the running full resynchronisation's file, until
/// `deadline` (`None`: to the end); when the file is done, the replicas
/// waiting for it are sent it and the stream since. True while more is
/// to do. A full resynchronisation that no replica waits for any more is
/// dropped.
pub(crate) fn full_sync_step(core: &mut Core, deadline: Option<std::time::Instant>) -> bool {
    let waiting = core.repl.full_sync.as_mut().is_some_and(|fs| fs.tend());
    if !waiting || !core.ks.sig.images.has_snapshot() {
        if core.repl.full_sync.is_some() {
            tracing::info!("Full resynchronisation dropped: no replica waits for it");
        }
        abort_full_sync(core);
        return false;
    }
    let ks = &mut core.ks;
    let Some(s) = ks.sig.images.snapshot_mut() else { return false };
    if !s.step(&mut ks.dbs, deadline) {
        return true;
    }
    let pieces = ks.sig.images.set_snapshot(None).map(|s| s.finish()).unwrap_or_default();
    if let Some(fs) = core.repl.full_sync.take() {
        fs.deliver(&pieces);
    }
    false
}

/// Drops the full resynchronisation in progress, if any (this node is
/// about to load another keyspace: its replicas resynchronise anyway);
/// the replicas still waiting for its file are disconnected.
pub(crate) fn abort_full_sync(core: &mut Core) {
    core.ks.sig.images.set_snapshot(None);
    if let Some(fs) = core.repl.full_sync.take() {
        for l in &fs.links {
            if let Some(t) = &l.tcp {
                t.client.kill();
            }
            l.close();
        }
    }
}

/// `REPLCONF option value …`: a replica's handshake (`listening-port`,
/// `ip-address`, `capa`) and, on its stream connection, `ACK <offset>`
/// (no reply) and `GETACK` (no reply), as Redis 7.0's `replconfCommand`.
fn replconf(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    let id = ctx.client.id;
    let mut hs = ctx.core.repl.handshakes.get(&id).cloned().unwrap_or_default();
    for pair in args[1..].chunks_exact(2) {
        let (opt, val) = (&pair[0], &pair[1]);
        if eq(opt, "listening-port") {
            let port = int(val)?;
            hs.port = u16::try_from(port).unwrap_or(0);
        } else if eq(opt, "ip-address") {
            if val.len() >= 46 {
                return Err(CmdError::custom(format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    val.len()
                )));
            }
            hs.ip = Some(String::from_utf8_lossy(val).into_owned());
        } else if eq(opt, "capa") {
            if eq(val, "eof") {
                hs.eof = true;
            } else if eq(val, "psync2") {
                hs.psync2 = true;
            }
        } else if eq(opt, "ack") {
            ctx.client.reply_mode = crate::client::ReplyMode::SkipThis;
            if let Some(offset) = crate::num::parse_i64_strict(val).and_then(|o| u64::try_from(o).ok()) {
                if let Some(l) = ctx.core.repl.replicas.iter().find(|l| l.client_id() == Some(id)) {
                    l.ack(offset);
                }
            }
            return Ok(Reply::ok());
        } else if eq(opt, "getack") {
            // Answered through the link by a replica's own task.
            ctx.client.reply_mode = crate::client::ReplyMode::SkipThis;
            return Ok(Reply::ok());
        } else if eq(opt, "rdb-only") {
            let v = int(val)?;
            if v != 0 && v != 1 {
                return Err(CmdError::custom("ERR rdb-only value must be 0 or 1"));
            }
        } else {
            return Err(CmdError::custom(format!(
                "ERR Unrecognized REPLCONF option: {}",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    let clients = &ctx.core.clients;
    let hss = &mut ctx.core.repl.handshakes;
    if hss.len() > 64 {
        hss.retain(|c, _| clients.contains_key(c));
    }
    hss.insert(id, hs);
    Ok(Reply::ok())
}

/// `REPLICAOF host port` / `REPLICAOF NO ONE` (and `SLAVEOF`).
fn replicaof(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if eq(&args[1], "no") && eq(&args[2], "one") {
        if ctx.core.repl.is_replica() {
            ctx.core.repl.promote();
            tracing::info!("MASTER MODE enabled (user request from 'id={}')", ctx.client.id);
            ctx.core.repl.wake.notify_one();
        }
        return Ok(Reply::ok());
    }
    let port = match crate::num::parse_i64_strict(&args[2]) {
        Some(p) if (0..=65535).contains(&p) => p as u16,
        _ => return Err(CmdError::custom("ERR Invalid master port")),
    };
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    if let Some(m) = &ctx.core.repl.master {
        if m.host.eq_ignore_ascii_case(&host) && m.port == port {
            return Ok(Reply::status("OK Already connected to specified master"));
        }
    }
    // A node of this process is followed in process; any other address
    // over TCP (by the replication task).
    if let Some(node) = crate::replication::registry::find(&host, port) {
        let me = *ctx.shared.local_addr.lock();
        if crate::replication::registry::find(&me.ip().to_string(), me.port()).is_some_and(|n| Arc::ptr_eq(&n, &node)) {
            return Err(CmdError::custom("ERR a node can't be a replica of itself"));
        }
    }
    ctx.core.repl.become_replica(ctx.shared.next_id(), host, port);
    Ok(Reply::ok())
}

/// `ROLE`.
fn role(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let repl = &ctx.core.repl;
    Ok(match &repl.master {
        None => Reply::Array(vec![
            Reply::bulk_str("master"),
            Reply::Int(repl.offset as i64),
            Reply::Array(
                repl.replicas
                    .iter()
                    .filter(|l| l.is_online())
                    .map(|l| {
                        Reply::Array(vec![
                            Reply::bulk_str(&l.replica.ip().to_string()),
                            Reply::bulk_str(&l.replica.port().to_string()),
                            Reply::bulk_str(&l.acked.load(Ordering::Acquire).to_string()),
                        ])
                    })
                    .collect(),
            ),
        ]),
        Some(m) => Reply::Array(vec![
            Reply::bulk_str("slave"),
            Reply::bulk_str(&m.host),
            Reply::Int(i64::from(m.port)),
            Reply::bulk_str(link_state(m)),
            Reply::Int(if m.link.is_some() || m.link_up() { repl.offset as i64 } else { -1 }),
        ]),
    })
}

/// The replica's state as `ROLE` names it.
fn link_state(m: &Master) -> &'static str {
    if let Some(t) = &m.tcp {
        return match t.state {
            TcpState::Connect => "connect",
            TcpState::Connecting => "connecting",
            TcpState::Handshake => "handshake",
            TcpState::Transfer => "sync",
            TcpState::Connected => "connected",
        };
    }
    match &m.link {
        Some(l) if l.is_online() => "connected",
        Some(_) => "connect",
        None => "connecting",
    }
}

/// `WAIT numreplicas timeout`: answered from the replicas' acknowledged
/// offsets; blocks until enough acknowledge this client's last write or the
/// timeout (on the server clock; 0 waits for ever) passes.
fn wait(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.core.repl.is_replica() {
        return Err(CmdError::custom("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."));
    }
    let numreplicas = int(&args[1])?;
    let timeout = int(&args[2]).map_err(|_| CmdError::TimeoutNotInteger)?;
    if timeout < 0 {
        return Err(CmdError::NegativeTimeout);
    }
    super::blocking::check_deadline(ctx, timeout)?;
    let offset = ctx.core.repl.client_offset(ctx.client.id);
    let acked = ctx.core.repl.acked(offset);
    if acked as i64 >= numreplicas || !ctx.client.may_block() {
        return Ok(Reply::Int(acked as i64));
    }
    let (waiter, rx) = ctx.core.blocking.add_waiter(
        ctx.client.shared.clone(),
        ctx.client.db(),
        ctx.client.resp,
        args.to_vec(),
        &[],
        Reply::Int(acked as i64),
    );
    let deadline = (timeout > 0).then(|| ctx.shared.clock.now_ms() + timeout as u64);
    ctx.client.block = Some(BlockRequest { waiter, rx, deadline });
    ctx.core.repl.waits.push(WaitReq { waiter, numreplicas: numreplicas.max(0) as usize, offset });
    ctx.core.repl.getack = true;
    Ok(Reply::Nil)
}

/// `INFO replication`, as Redis 7.0 prints it (`replication/info.rs`).
pub(crate) fn info(ctx: &Ctx<'_>) -> String {
    let config = &ctx.core.config;
    let settings = InfoSettings {
        backlog_size: config.repl_backlog_size,
        priority: config.replica_priority.to_string(),
        read_only: config.replica_read_only,
        announced: config.replica_announced,
        min_replicas_to_write: config.min_replicas_to_write,
        max_lag: config.min_replicas_max_lag,
    };
    ctx.core.repl.info(&settings, ctx.shared.clock.now_ms())
}

// ---- test control: RLOCKD REPL … ----

/// `RLOCKD REPL …`: its operations (a row of `cmd/control.rs`'s tree);
/// `CRASH` and `REVIVE` are `cmd/crash.rs`'s.
pub(crate) static CONTROL: OpTable = OpTable {
    args: &[],
    help: &[],
    ops: &[
        op("pause", PORT, |ctx, a| set_links(ctx, a, Switch::Paused(true)), &[
            "REPL PAUSE | RESUME [<replica-port>]",
            "    (primary) Hold the stream on the links to its replicas (writes pile up unacknowledged) / let it flow.",
        ])
        .counts_own(),
        op("resume", PORT, |ctx, a| set_links(ctx, a, Switch::Paused(false)), &[]).counts_own(),
        op("lag", &[arg("ms", "integer"), arg("replica-port", "port").opt()], lag, &[
            "REPL LAG <ms> [<replica-port>]",
            "    (primary) Deliver each write that long after it was made (0: at once).",
        ]),
        op("drop", PORT, drop_pending, &[
            "REPL DROP [<replica-port>]",
            "    (primary) Lose what the replicas have not received yet, as a crash would.",
        ]),
        op("break", PORT, |ctx, a| set_links(ctx, a, Switch::Broken(true)), &[
            "REPL BREAK | RESTORE [<replica-port>]",
            "    Take the link down (master_link_status:down) / bring it back (it catches up).",
        ])
        .counts_own(),
        op("restore", PORT, |ctx, a| set_links(ctx, a, Switch::Broken(false)), &[]).counts_own(),
        op("status", &[], status, &[
            "REPL STATUS",
            "    Each link: replica, acknowledged offset, pending writes and bytes, paused, lag, broken.",
        ])
        .fields(STATUS_FIELDS),
        op("failover", PORT, failover, &[
            "REPL FAILOVER [<replica-port>]",
            "    (primary) Promote a replica with what it has received now; this node becomes its replica.",
        ]),
        op("crash", super::crash::CRASH_ARGS, super::crash::crash, super::crash::CRASH_HELP).counts_own(),
        op("revive", super::crash::REVIVE_ARGS, super::crash::revive, super::crash::REVIVE_HELP).counts_own(),
    ],
    fields: &[],
    unknown: |a| {
        CmdError::custom(format!(
            "ERR unknown subcommand or wrong number of arguments for 'REPL {}'. Try RLOCKD HELP.",
            String::from_utf8_lossy(&a[2])
        ))
    },
    check: None,
    default: None,
};

/// The arguments of an operation on the links: which replica's (all).
const PORT: &[Arg] = &[arg("replica-port", "port").opt()];

/// The fields of a link (`REPL STATUS`).
const STATUS_FIELDS: &[&str] =
    &["primary", "replica", "acked", "pending_writes", "pending_bytes", "paused", "lag_ms", "broken"];

/// The replica port at `args[i]` (none: every link).
fn port_arg(args: &[Bytes], i: usize) -> Result<Option<u16>, CmdError> {
    match args.get(i) {
        None => Ok(None),
        Some(a) => match crate::num::parse_i64_strict(a) {
            Some(p) if (1..=65535).contains(&p) => Ok(Some(p as u16)),
            _ => Err(CmdError::custom("ERR invalid replica port")),
        },
    }
}

/// The links named, or an error when there is none.
fn links_of(ctx: &Ctx<'_>, port: Option<u16>) -> Result<Vec<Arc<Link>>, CmdError> {
    let ls = ctx.core.repl.links(port);
    if ls.is_empty() {
        return Err(CmdError::custom("ERR no replication link here (or no replica on that port)"));
    }
    Ok(ls)
}

/// `REPL STATUS`.
fn status(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let all = ctx.core.repl.links(None);
    Ok(Reply::Array(
        all.iter()
            .map(|l| {
                let (frames, bytes) = l.pending();
                let values = [
                    Reply::bulk_str(&l.primary.to_string()),
                    Reply::bulk_str(&l.replica.to_string()),
                    Reply::Int(l.acked.load(Ordering::Acquire) as i64),
                    Reply::Int(frames as i64),
                    Reply::Int(bytes as i64),
                    Reply::Bool(l.paused.load(Ordering::Acquire)),
                    Reply::Int(l.lag_ms.load(Ordering::Acquire) as i64),
                    Reply::Bool(l.broken.load(Ordering::Acquire)),
                ];
                Reply::Map(STATUS_FIELDS.iter().map(|f| Reply::bulk_str(f)).zip(values).collect())
            })
            .collect(),
    ))
}

/// What `PAUSE`/`RESUME` and `BREAK`/`RESTORE` set on the links.
enum Switch {
    Paused(bool),
    Broken(bool),
}

/// `REPL PAUSE | RESUME | BREAK | RESTORE [<replica-port>]`.
fn set_links(ctx: &mut Ctx<'_>, args: &[Bytes], switch: Switch) -> CmdResult {
    if args.len() > 4 {
        return Err(CmdError::Syntax);
    }
    let ls = links_of(ctx, port_arg(args, 3)?)?;
    for l in &ls {
        match switch {
            Switch::Paused(v) => l.paused.store(v, Ordering::Release),
            Switch::Broken(v) => l.broken.store(v, Ordering::Release),
        }
        l.to_replica.notify_one();
        l.to_primary.notify_one();
    }
    Ok(Reply::Int(ls.len() as i64))
}

/// `REPL LAG <ms> [<replica-port>]`.
fn lag(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let ms = u64::try_from(int(&args[3])?).map_err(|_| CmdError::custom("ERR the lag must be positive"))?;
    let ls = links_of(ctx, port_arg(args, 4)?)?;
    for l in &ls {
        l.lag_ms.store(ms, Ordering::Release);
        l.to_replica.notify_one();
    }
    Ok(Reply::Int(ls.len() as i64))
}

/// `REPL DROP [<replica-port>]`.
fn drop_pending(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let ls = links_of(ctx, port_arg(args, 3)?)?;
    Ok(Reply::Int(ls.iter().map(|l| l.drop_pending() as i64).sum()))
}

/// `REPL FAILOVER [<replica-port>]`.
fn failover(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.core.repl.is_replica() {
        return Err(CmdError::custom("ERR REPL FAILOVER is sent to the primary"));
    }
    let replica = port_arg(args, 3)?;
    links_of(ctx, replica)?;
    if !ctx.client.may_block() {
        ctx.core.repl.requests.push(Request::Failover { waiter: None, replica });
        ctx.core.repl.wake.notify_one();
        return Ok(Reply::ok());
    }
    let waiter = super::blocking::block_until_answered(ctx, "ERR the failover did not finish");
    ctx.core.repl.requests.push(Request::Failover { waiter: Some(waiter), replica });
    ctx.core.repl.wake.notify_one();
    Ok(Reply::Nil)
}
