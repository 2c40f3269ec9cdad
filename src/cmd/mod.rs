//! The command table and dispatch.
//!
//! Every command is one row ([`CommandSpec`]): name, handler, arity
//! (negative = at least), flags, key positions, ACL categories, and
//! subcommands for container commands (`CLIENT`, `CONFIG`, `SCRIPT`…). Each
//! type family registers its own block of rows (`generic`, `string`, `hash`…).
//!
//! Handlers are plain synchronous functions `(&mut Ctx, &[Bytes]) ->
//! CmdResult`: they never touch a socket, so the same implementation serves a
//! TCP client ([`process`]), a Lua `redis.call` ([`call`] via the scripting
//! layer) and `EXEC`.
//!
//! **Invariant:** [`process`] applies Redis's pre-call checks in Redis's
//! order (unknown command, arity, auth, subscribed context, MULTI queuing);
//! [`call`] is the only place a handler is invoked, and the only place the
//! command's frozen time is taken (at nesting depth 0).

pub mod acl;
pub mod bitmap;
pub mod blocking;
pub mod client;
pub mod cluster;
pub mod command;
pub mod config;
pub mod connection;
pub(crate) mod control;
pub mod diag;
pub mod dump;
pub mod generic;
pub mod geo;
pub mod hash;
pub mod help;
pub mod hll;
pub mod info;
pub(crate) mod limits;
pub mod list;
pub mod meta;
pub mod pubsub;
pub(crate) mod replication;
pub mod scripting;
pub mod server;
pub mod set;
pub mod sort;
pub mod standalone;
pub mod stream;
pub mod string;
pub mod tx;
pub mod util;
pub mod zset;

use std::collections::HashMap;

/// Command name → command (lower-case names; looked up once per command,
/// so hashed with the keyspace's fast hasher rather than SipHash).
pub type NameMap = HashMap<Vec<u8>, Command, crate::db::Hasher>;
use std::sync::OnceLock;
use std::time::Instant;

use bytes::Bytes;

use crate::client::{Caller, ClientState};
use crate::core::{Core, Shared, SlowEntry};
use crate::db::DbView;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

/// What a handler gets: the whole server state (under the core lock), the
/// calling client, and the server's shared parts.
pub struct Ctx<'a> {
    pub core: &'a mut Core,
    pub client: &'a mut ClientState,
    pub shared: &'a Shared,
}

impl Ctx<'_> {
    /// Runs `f` with key lookups counted as reads or not (keyspace hits and
    /// misses): a write command's `lookupKeyRead` of a source key, or a
    /// read-only command Redis does not count (`MEMORY USAGE`, `RANDOMKEY`).
    pub fn with_read_lookups<R>(&mut self, on: bool, f: impl FnOnce(&mut Self) -> R) -> R {
        let prev = std::mem::replace(&mut self.core.ks.sig.read_lookups, on);
        let r = f(self);
        self.core.ks.sig.read_lookups = prev;
        r
    }

    /// The client's selected database, at the command's frozen time.
    pub fn db(&mut self) -> DbView<'_> {
        self.core.ks.view(self.client.db())
    }

    /// The command's frozen time (unix ms).
    pub fn now_ms(&self) -> u64 {
        self.core.ks.now
    }
}

/// A command handler.
pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> CmdResult;

/// Command flag bits (the names `COMMAND INFO` prints).
pub mod flags {
    pub const WRITE: u32 = 1 << 0;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const BLOCKING: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const SKIP_MONITOR: u32 = 1 << 9;
    pub const SKIP_SLOWLOG: u32 = 1 << 10;
    pub const FAST: u32 = 1 << 11;
    pub const NO_AUTH: u32 = 1 << 12;
    pub const MAY_REPLICATE: u32 = 1 << 13;
    pub const NO_MANDATORY_KEYS: u32 = 1 << 14;
    pub const NO_MULTI: u32 = 1 << 15;
    pub const MOVABLEKEYS: u32 = 1 << 16;
    pub const ALLOW_BUSY: u32 = 1 << 17;
    pub const NO_ASYNC_LOADING: u32 = 1 << 18;
    pub const ASKING: u32 = 1 << 19;

    pub const NAMES: &[(&str, u32)] = &[
        ("write", WRITE),
        ("readonly", READONLY),
        ("denyoom", DENYOOM),
        ("admin", ADMIN),
        ("pubsub", PUBSUB),
        ("noscript", NOSCRIPT),
        ("blocking", BLOCKING),
        ("loading", LOADING),
        ("stale", STALE),
        ("skip_monitor", SKIP_MONITOR),
        ("skip_slowlog", SKIP_SLOWLOG),
        ("fast", FAST),
        ("no_auth", NO_AUTH),
        ("may_replicate", MAY_REPLICATE),
        ("no_mandatory_keys", NO_MANDATORY_KEYS),
        ("no_multi", NO_MULTI),
        ("movablekeys", MOVABLEKEYS),
        ("allow_busy", ALLOW_BUSY),
        ("no_async_loading", NO_ASYNC_LOADING),
        ("asking", ASKING),
    ];

    /// Parses a space-separated flag list. It runs when the table is
    /// compiled (rows are `static`): an unknown name is a compile error.
    pub const fn parse(s: &str) -> u32 {
        let b = s.as_bytes();
        let mut bits = 0;
        let mut i = 0;
        while i < b.len() {
            if b[i] == b' ' {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && b[i] != b' ' {
                i += 1;
            }
            bits |= bit_of(b, start, i);
        }
        bits
    }

    /// The bit of the flag named by `b[start..end]`.
    const fn bit_of(b: &[u8], start: usize, end: usize) -> u32 {
        let mut n = 0;
        while n < NAMES.len() {
            let name = NAMES[n].0.as_bytes();
            if name.len() == end - start {
                let mut k = 0;
                while k < name.len() && name[k] == b[start + k] {
                    k += 1;
                }
                if k == name.len() {
                    return NAMES[n].1;
                }
            }
            n += 1;
        }
        panic!("unknown command flag in the command table")
    }
}

/// One row of the command table.
#[derive(Debug)]
pub struct CommandSpec {
    /// Lower-case name (`"get"`; for a subcommand just `"setname"`).
    pub name: &'static str,
    pub handler: Handler,
    pub arity: i32,
    /// Space-separated flags, as `COMMAND INFO` prints them.
    pub flags: &'static str,
    /// The same flags as bits ([`flags`]), computed when the table is
    /// compiled.
    pub flag_bits: u32,
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    /// Space-separated ACL categories (`"@write @string @fast"`).
    pub acl: &'static str,
    pub subcommands: &'static [CommandSpec],
    /// One-line summary for `COMMAND DOCS`.
    pub summary: &'static str,
    /// Redis version that introduced the command.
    pub since: &'static str,
}

/// Builds a table row.
#[allow(clippy::too_many_arguments)]
pub const fn cmd(
    name: &'static str,
    handler: Handler,
    arity: i32,
    flags: &'static str,
    first_key: i32,
    last_key: i32,
    step: i32,
    acl: &'static str,
) -> CommandSpec {
    CommandSpec {
        name,
        handler,
        arity,
        flags,
        flag_bits: flags::parse(flags),
        first_key,
        last_key,
        step,
        acl,
        subcommands: &[],
        summary: "",
        since: "",
    }
}

impl CommandSpec {
    /// Adds subcommands (this row becomes a container).
    pub const fn subs(mut self, subs: &'static [CommandSpec]) -> Self {
        self.subcommands = subs;
        self
    }
    /// Adds flags that dispatch honours but `COMMAND INFO` does not print
    /// (Redis 7.0's PFCOUNT is `may_replicate` inside: it may write the
    /// value's cached cardinality, so read-only scripts refuse it).
    pub const fn hidden_flags(mut self, flags: &'static str) -> Self {
        self.flag_bits |= flags::parse(flags);
        self
    }
    /// Adds `COMMAND DOCS` text.
    pub const fn doc(mut self, summary: &'static str, since: &'static str) -> Self {
        self.summary = summary;
        self.since = since;
        self
    }
}

/// Handler of a container row: never called (dispatch picks a subcommand).
pub fn container(_: &mut Ctx<'_>, _: &[Bytes]) -> CmdResult {
    Err(CmdError::Syntax)
}

/// A resolved command (table row plus what dispatch needs).
#[derive(Debug)]
pub struct Command {
    pub spec: &'static CommandSpec,
    /// Index into per-command statistics.
    pub id: usize,
    /// `"get"`, or `"client|setname"` for a subcommand.
    pub fullname: String,
    pub flags: u32,
    /// The family (`"string"`, `"server"`…), for `COMMAND DOCS`.
    pub group: &'static str,
    pub subcommands: NameMap,
}

impl Command {
    pub fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }
    pub fn is_write(&self) -> bool {
        self.has(flags::WRITE)
    }
}

/// The process-wide, immutable command table.
#[derive(Debug)]
pub struct Table {
    pub commands: NameMap,
    /// Full names by id.
    pub names: Vec<String>,
}

/// Families and their `COMMAND DOCS` group names.
fn families() -> [(&'static str, &'static [CommandSpec]); 26] {
    [
        ("generic", generic::COMMANDS),
        ("string", string::COMMANDS),
        ("server", server::COMMANDS),
        ("server", connection::COMMANDS),
        ("server", client::COMMANDS),
        ("server", config::COMMANDS),
        ("server", command::COMMANDS),
        ("server", info::COMMANDS),
        ("server", diag::COMMANDS),
        ("hash", hash::COMMANDS),
        ("list", list::COMMANDS),
        ("set", set::COMMANDS),
        ("sorted-set", zset::COMMANDS),
        ("scripting", scripting::COMMANDS),
        ("pubsub", pubsub::COMMANDS),
        ("transactions", tx::COMMANDS),
        ("blocking", blocking::COMMANDS),
        ("cluster", cluster::COMMANDS),
        ("server", acl::COMMANDS),
        ("bitmap", bitmap::COMMANDS),
        ("generic", sort::COMMANDS),
        ("server", standalone::COMMANDS),
        ("stream", stream::COMMANDS),
        ("geo", geo::COMMANDS),
        ("hyperloglog", hll::COMMANDS),
        ("generic", dump::COMMANDS),
    ]
}

fn build_table() -> Table {
    let mut names = Vec::new();
    let mut commands = NameMap::default();
    for (group, specs) in families() {
        for spec in specs {
            let group = if group == "blocking" { blocking::group_of(spec.name) } else { group };
            let mut c = Command {
                spec,
                id: names.len(),
                fullname: spec.name.to_string(),
                flags: spec.flag_bits,
                group,
                subcommands: NameMap::default(),
            };
            names.push(spec.name.to_string());
            for sub in spec.subcommands {
                let full = format!("{}|{}", spec.name, sub.name);
                c.subcommands.insert(
                    sub.name.as_bytes().to_vec(),
                    Command {
                        spec: sub,
                        id: names.len(),
                        fullname: full.clone(),
                        flags: sub.flag_bits,
                        group,
                        subcommands: NameMap::default(),
                    },
                );
                names.push(full);
            }
            let prev = commands.insert(spec.name.as_bytes().to_vec(), c);
            assert!(prev.is_none(), "command {} registered twice", spec.name);
        }
    }
    Table { commands, names }
}

/// The command table (built once per process; immutable).
pub fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(build_table)
}

/// Result of looking a command line up.
pub enum Lookup {
    Found(&'static Command),
    Unknown,
    /// The container exists but not the subcommand.
    UnknownSub,
}

/// `name` lower-cased into `buf`; None if longer than any command name.
fn lower<'a>(name: &[u8], buf: &'a mut [u8; 32]) -> Option<&'a [u8]> {
    let lower = buf.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    Some(lower)
}

impl Table {
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Finds a top-level command by name, any letter case.
    pub fn get(&'static self, name: &[u8]) -> Option<&'static Command> {
        self.commands.get(lower(name, &mut [0u8; 32])?)
    }

    /// Resolves `argv` to a command or subcommand.
    pub fn lookup(&'static self, argv: &[Bytes]) -> Lookup {
        let Some(c) = self.get(&argv[0]) else {
            return Lookup::Unknown;
        };
        if c.subcommands.is_empty() || argv.len() < 2 {
            return Lookup::Found(c);
        }
        match lower(&argv[1], &mut [0u8; 32]).and_then(|sub| c.subcommands.get(sub)) {
            Some(s) => Lookup::Found(s),
            None => Lookup::UnknownSub,
        }
    }
}

/// `%.Ns` of a C string: stops at NUL, at most `max` bytes.
fn c_str_prefix(b: &[u8], max: usize) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len()).min(max);
    &b[..end]
}

/// `ERR unknown command 'x', with args beginning with: 'a' 'b' `.
pub fn unknown_command_error(argv: &[Bytes]) -> CmdError {
    let mut args: Vec<u8> = Vec::new();
    for a in &argv[1..] {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push(b'\'');
        args.extend_from_slice(c_str_prefix(a, room));
        args.extend_from_slice(b"' ");
    }
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(c_str_prefix(&argv[0], 128));
    msg.extend_from_slice(b"', with args beginning with: ");
    msg.extend_from_slice(&args);
    CmdError::Raw(sanitize(msg))
}

/// `ERR unknown subcommand 'x'. Try CLIENT HELP.`
pub fn unknown_subcommand_error(argv: &[Bytes]) -> CmdError {
    let mut msg = b"ERR unknown subcommand '".to_vec();
    msg.extend_from_slice(c_str_prefix(&argv[1], 128));
    msg.extend_from_slice(b"'. Try ");
    msg.extend_from_slice(&argv[0].to_ascii_uppercase());
    msg.extend_from_slice(b" HELP.");
    CmdError::Raw(sanitize(msg))
}

fn sanitize(mut v: Vec<u8>) -> Bytes {
    for c in v.iter_mut() {
        if *c == b'\r' || *c == b'\n' {
            *c = b' ';
        }
    }
    Bytes::from(v)
}

/// The refusal of a command a subscribed RESP2 client may not send.
pub fn pubsub_context_error(cmd: &Command) -> CmdError {
    CmdError::custom(format!(
        "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
        cmd.fullname
    ))
}

/// True if `argc` satisfies `arity`.
pub fn arity_ok(arity: i32, argc: usize) -> bool {
    let argc = argc as i64;
    let arity = i64::from(arity);
    (arity > 0 && argc == arity) || (arity < 0 && argc >= -arity)
}

/// Commands a RESP2 client may send while subscribed.
pub const PUBSUB_CONTEXT_ALLOWED: &[&str] =
    &["ping", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe", "psubscribe", "punsubscribe", "quit", "reset"];

fn reject(ctx: &mut Ctx<'_>, cmd: Option<&Command>, err: CmdError) -> Reply {
    if let Some(m) = ctx.client.multi.as_mut() {
        m.dirty = true;
    }
    if ctx.core.tracking.active {
        clear_caching(ctx, cmd);
    }
    // Redis's execCommandAbort: a rejected EXEC (even outside MULTI)
    // discards the transaction and answers EXECABORT.
    let err = match cmd {
        Some(c) if c.spec.name == "exec" => {
            tx::discard_state(ctx);
            let text = err.to_string();
            let text = text.strip_prefix("ERR ").unwrap_or(&text);
            CmdError::custom(format!("EXECABORT Transaction discarded because of: {text}"))
        }
        _ => err,
    };
    if let Some(c) = cmd {
        ctx.core.stats.commands[c.id].rejected += 1;
    }
    let reply: Reply = err.into();
    if let Reply::Error(text) = &reply {
        ctx.core.stats.count_error(text);
    }
    reply
}

/// Runs `f` on one client command as the injected faults see it (the key
/// list is only built if a fault asks for it).
pub(crate) fn with_probe<R>(
    core: &Core,
    client_id: u64,
    cmd: &Command,
    argv: &[Bytes],
    f: impl FnOnce(&crate::faults::Probe<'_>) -> R,
) -> R {
    let name = core.clients.get(&client_id).map(|r| r.name.clone()).unwrap_or_default();
    let keys = || command::command_keys(cmd, argv);
    f(&crate::faults::Probe { command: &cmd.fullname, keys: &keys, client_id, client_name: &name })
}

/// Runs one command line from a client, with every check Redis makes before
/// calling a command (see the module docs for the order).
pub fn process(ctx: &mut Ctx<'_>, argv: Vec<Bytes>) -> Reply {
    let tbl = table();
    let cmd = match tbl.lookup(&argv) {
        Lookup::Found(c) => c,
        Lookup::Unknown if control::is_control(ctx, &argv) => {
            if !ctx.client.authenticated && ctx.core.acl.auth_required() {
                return reject(ctx, None, CmdError::NoAuth);
            }
            let reply = match control::run(ctx, &argv) {
                Ok(r) => r,
                Err(e) => reject(ctx, None, e),
            };
            // Expiries, WATCH and wake-ups the control command caused.
            ctx.core.after_command();
            return reply;
        }
        Lookup::Unknown => return reject(ctx, None, unknown_command_error(&argv)),
        Lookup::UnknownSub => return reject(ctx, None, unknown_subcommand_error(&argv)),
    };
    if !arity_ok(cmd.spec.arity, argv.len()) {
        return reject(ctx, Some(cmd), CmdError::WrongArity(cmd.fullname.clone()));
    }
    if !ctx.client.authenticated && ctx.core.acl.auth_required() && !cmd.has(flags::NO_AUTH) {
        return reject(ctx, Some(cmd), CmdError::NoAuth);
    }
    if ctx.client.multi.is_some() && cmd.has(flags::NO_MULTI) {
        return reject(ctx, Some(cmd), CmdError::custom("ERR Command not allowed inside a transaction"));
    }
    // The one branch the command path pays while `default` is the only,
    // unrestricted, user.
    if !ctx.core.acl.open {
        if let Err(d) = acl::check(ctx, cmd, &argv) {
            ctx.client.shared.last_cmd.store(cmd.id, std::sync::atomic::Ordering::Relaxed);
            let err = acl::refuse(ctx, cmd, &argv, d, "toplevel");
            return reject(ctx, Some(cmd), err);
        }
    }
    if ctx.shared.faults.active() {
        let faults = &ctx.shared.faults;
        if let Some(text) = with_probe(ctx.core, ctx.client.id, cmd, &argv, |p| faults.injected_error(p)) {
            return reject(ctx, Some(cmd), CmdError::custom(String::from_utf8_lossy(&text).into_owned()));
        }
    }
    if let Some(err) = limits::check(ctx, cmd, &argv) {
        return reject(ctx, Some(cmd), err);
    }
    if ctx.client.in_resp2_pubsub() && !PUBSUB_CONTEXT_ALLOWED.contains(&cmd.spec.name) {
        return reject(ctx, Some(cmd), pubsub_context_error(cmd));
    }
    // Only a busy script's hook runs commands nested in a call (see
    // `scripting::serve_busy_queue`).
    if ctx.core.call_depth > 0
        && ctx.shared.script.busy.load(std::sync::atomic::Ordering::Acquire)
        && !cmd.has(flags::ALLOW_BUSY)
    {
        return reject(ctx, Some(cmd), CmdError::custom(scripting::busy_error(ctx.shared)));
    }
    if ctx.client.multi.is_some() && !matches!(cmd.spec.name, "exec" | "discard" | "multi" | "watch" | "quit" | "reset")
    {
        if let Some(m) = ctx.client.multi.as_mut() {
            let b = &ctx.client.shared.buffers;
            b.multi_len.store(m.queue.len() + 1, std::sync::atomic::Ordering::Relaxed);
            // Redis counts the arguments' bytes and a pointer per argument.
            let mem = argv.iter().map(|a| a.len() + std::mem::size_of::<usize>()).sum();
            b.multi_mem.fetch_add(mem, std::sync::atomic::Ordering::Relaxed);
            m.queue.push(argv);
        }
        return Reply::status("QUEUED");
    }
    ctx.client.shared.last_cmd.store(cmd.id, std::sync::atomic::Ordering::Relaxed);
    call(ctx, cmd, &argv)
}

/// Invokes a command's handler: frozen time at depth 0, statistics,
/// slowlog, and the post-command work of the core at depth 0.
pub fn call(ctx: &mut Ctx<'_>, cmd: &Command, argv: &[Bytes]) -> Reply {
    let top = ctx.core.call_depth == 0;
    if top {
        ctx.core.ks.now = ctx.shared.clock.now_ms();
        if ctx.core.lock_history.is_some() {
            let detail = matches!(cmd.spec.name, "evalsha" | "evalsha_ro" | "fcall" | "fcall_ro")
                .then(|| argv.get(1).cloned())
                .flatten();
            ctx.core.actor = crate::db::lock_history::Actor { client: ctx.client.id, command: cmd.spec.name, detail };
        }
    }
    let monitored = !ctx.core.monitors.is_empty() && ctx.client.caller != Caller::BlockedRerun;
    if monitored && cmd.has(flags::SKIP_MONITOR) && cmd.has(flags::MOVABLEKEYS) {
        // EVAL/FCALL and friends: shown before the commands their script runs.
        feed_monitors(ctx, argv);
    }
    ctx.core.call_depth += 1;
    let read_lookups = std::mem::replace(&mut ctx.core.ks.sig.read_lookups, cmd.has(flags::READONLY));
    ctx.core.ks.sig.lfu_seen = None;
    let dirty_before = ctx.core.ks.sig.dirty;
    let start = Instant::now();
    let mut result = (cmd.spec.handler)(ctx, argv);
    let nanos = start.elapsed().as_nanos() as u64;
    let usec = nanos / 1000;
    ctx.core.ks.sig.read_lookups = read_lookups;
    ctx.core.ks.sig.lfu_seen = None;
    ctx.core.call_depth -= 1;
    // The one branch client-side caching costs while no client tracks.
    if ctx.core.tracking.active {
        result = track_after_call(ctx, cmd, argv, top, result);
    }
    let stats = &mut ctx.core.stats;
    if ctx.core.call_depth > 0 {
        stats.nested_calls += 1;
        stats.nested_nanos += nanos;
    }
    let track_latency = ctx.core.config.latency_tracking;
    let stats = &mut ctx.core.stats;
    let st = &mut stats.commands[cmd.id];
    st.calls += 1;
    st.usec += usec;
    if track_latency {
        st.record_latency(usec);
    }
    stats.total_commands += 1;
    let reply = match result {
        Ok(r) => r,
        Err(e) => e.into(),
    };
    if let Some(text) = reply.error_text() {
        st.failed += 1;
        // A script's reply repeating a `redis.call` error counts once.
        if !std::mem::take(&mut stats.error_already_counted) {
            stats.count_error(text);
        }
    }
    // The one branch replication costs on a node without replicas.
    if ctx.core.repl.feeding() {
        replication::after_call(ctx, cmd, argv, &reply, dirty_before);
    }
    if monitored && !cmd.has(flags::SKIP_MONITOR) && !cmd.has(flags::ADMIN) {
        feed_monitors(ctx, argv);
    }
    if top {
        let threshold = ctx.core.config.slowlog_slower_than;
        if threshold >= 0 && usec as i64 >= threshold && !cmd.has(flags::SKIP_SLOWLOG) {
            record_slow(ctx, argv, usec);
        }
        if ctx.core.repl.feeding() {
            replication::end_unit(ctx);
        }
        ctx.core.after_command();
        if ctx.core.blocking.has_ready() {
            blocking::serve_ready(ctx);
        }
    }
    reply
}

/// Client-side caching after a command (at any depth): invalidations of
/// what it modified, then the keys a tracking client's read-only command
/// read (not a script's own reads: Redis 7.0 tracks only the keys `EVAL_RO`
/// and the like declare). At the top level, `CLIENT CACHING` expires and
/// the invalidations due to the client itself follow the reply.
fn track_after_call(ctx: &mut Ctx<'_>, cmd: &Command, argv: &[Bytes], top: bool, result: CmdResult) -> CmdResult {
    let id = ctx.client.id;
    let writer = if ctx.client.is_script() { 0 } else { id };
    ctx.core.track_modified(id, writer);
    let mode = ctx.core.clients.get_mut(&id).and_then(|r| r.tracking.as_mut());
    if let Some(t) = mode {
        if cmd.has(flags::READONLY) && !ctx.client.is_script() && t.remembers_reads() {
            for key in command::command_keys(cmd, argv) {
                ctx.core.tracking.remember(&key, id);
            }
        }
    }
    if !top {
        return result;
    }
    clear_caching(ctx, Some(cmd));
    if !ctx.core.tracking.has_deferred() {
        return result;
    }
    let mine = ctx.core.tracking.take_deferred(id);
    if mine.is_empty() || ctx.client.caller == Caller::BlockedRerun {
        for m in mine {
            ctx.client.shared.push_encoded(m);
        }
        return result;
    }
    let reply = result.unwrap_or_else(Reply::from);
    Ok(Reply::ThenPushes(Box::new(reply), mine))
}

/// `CLIENT CACHING` covers the next command (all of a MULTI block); other
/// CLIENT subcommands in between keep it, as in Redis.
fn clear_caching(ctx: &mut Ctx<'_>, cmd: Option<&Command>) {
    if cmd.is_some_and(|c| c.fullname.starts_with("client")) || ctx.client.multi.is_some() {
        return;
    }
    if let Some(t) = ctx.core.clients.get_mut(&ctx.client.id).and_then(|r| r.tracking.as_mut()) {
        t.caching = false;
    }
}

fn feed_monitors(ctx: &mut Ctx<'_>, argv: &[Bytes]) {
    let source = if ctx.client.is_script() { "lua".to_string() } else { ctx.client.shared.addr.to_string() };
    ctx.core.monitors.feed(ctx.shared.clock.now_us(), ctx.client.db(), &source, argv);
}

fn record_slow(ctx: &mut Ctx<'_>, argv: &[Bytes], usec: u64) {
    let max = ctx.core.config.slowlog_max_len;
    let stats = &mut ctx.core.stats;
    let args = argv
        .iter()
        .take(32)
        .enumerate()
        .map(|(i, a)| {
            if i == 31 && argv.len() > 32 {
                Bytes::from(format!("... ({} more arguments)", argv.len() - 31))
            } else if a.len() > 128 {
                let mut v = a[..128].to_vec();
                v.extend_from_slice(format!("... ({} more bytes)", a.len() - 128).as_bytes());
                Bytes::from(v)
            } else {
                a.clone()
            }
        })
        .collect();
    let entry = SlowEntry {
        id: stats.slowlog_next_id,
        time_secs: ctx.core.ks.now / 1000,
        duration_us: usec,
        args,
        addr: ctx.client.shared.addr.to_string(),
        name: ctx.core.clients.get(&ctx.client.id).map(|r| r.name.clone()).unwrap_or_default(),
    };
    stats.slowlog_next_id += 1;
    stats.slowlog.push_front(entry);
    while stats.slowlog.len() > max {
        stats.slowlog.pop_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_builds_and_flags_parse() {
        let t = table();
        assert!(t.get(b"GET").is_some());
        assert!(t.get(b"get").is_some());
        let c = t.get(b"client").unwrap();
        assert!(c.subcommands.contains_key(&b"setname"[..]));
        for c in t.commands.values() {
            assert!(c.spec.arity != 0, "{} has arity 0", c.fullname);
            for s in c.subcommands.values() {
                assert!(s.spec.arity != 0, "{} has arity 0", s.fullname);
            }
        }
    }

    #[test]
    fn unknown_command_text_matches_redis() {
        let argv = vec![Bytes::from("foo"), Bytes::from("a"), Bytes::from("b")];
        assert_eq!(
            unknown_command_error(&argv).to_string(),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        let argv = vec![Bytes::from("client"), Bytes::from("nope")];
        assert_eq!(unknown_subcommand_error(&argv).to_string(), "ERR unknown subcommand 'nope'. Try CLIENT HELP.");
    }
}
