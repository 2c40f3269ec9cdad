//! `RLOCKD …`: test control, the reason to run rlockd instead of a Redis in
//! a container. Drive the server's clock, read every lock and what happened
//! to it, inject faults, and capture and bring back the whole keyspace (a
//! failover that loses the last writes). The state lives in
//! [`crate::control`]; this family parses the arguments and shapes the
//! replies, and the in-process [`crate::Server`] methods call the same
//! functions.
//!
//! `RLOCKD` is a container row of the command table like `CLIENT` or
//! `CONFIG`, so it goes through every check of dispatch (ACL included:
//! `+rlockd|clock`, NOPERM, `ACL LOG`, `ACL DRYRUN`). Its rows carry the
//! hidden `test_control` flag: with `test-control no` the whole family
//! answers Redis's unknown-command error, and whatever enumerates the table
//! (`COMMAND`, `COMMAND COUNT/LIST/DOCS/INFO` without names, `ACL CAT
//! <category>`) leaves it out, so a Redis client counts exactly Redis
//! 7.0's commands; `COMMAND INFO rlockd` and `COMMAND DOCS rlockd` answer by
//! name. Every subcommand is `@admin @slow @dangerous` (HELP only
//! `@slow`). They take no key specs, as `KEYS`, `SCAN` and `FLUSHALL` take
//! none: `LOCKS` and `EVENTS` show a restricted user only the locks whose
//! keys it may read; `SNAPSHOT`, `RESTORE` and `CLOCK` act on the whole
//! keyspace and are granted or refused as a whole.

use bytes::Bytes;

use super::util::{eq, int};
use super::{cmd, container, CommandSpec, Ctx};
use crate::control::faults::{Fault, FaultInfo, FaultKind};
use crate::control::locks::LockView;
use crate::core::Core;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

/// Flags of the subcommands that act (every one but HELP).
const ACTS: &str = "admin noscript loading stale";
/// Their ACL categories.
const ACTS_ACL: &str = "@admin @slow @dangerous";
/// rlockd's own flags of every row: unknown while `test-control` is off,
/// never listed or faulted, and not held back by `CLIENT PAUSE` (a test can
/// move the clock past a pause).
const TEST_CONTROL: &str = "test_control pause_exempt";

pub static COMMANDS: &[CommandSpec] = &[cmd("rlockd", container, -2, "", 0, 0, 0, "@slow")
    .subs(RLOCKD_SUBS)
    .hidden_flags(TEST_CONTROL)
    .doc("A container for rlockd's test-control commands", "7.0.0")];

static RLOCKD_SUBS: &[CommandSpec] = &[
    cmd("check", rlockd_check, -2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Every lock-safety violation seen; RESET forgets them", "7.0.0"),
    cmd("cluster", rlockd_cluster, -3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Move a cluster slot, take a node down or bring it up", "7.0.0"),
    cmd("clock", rlockd_clock, -3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Read, freeze, move or skew the server's clock", "7.0.0"),
    cmd("events", rlockd_events, -2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("What happened to the locks, oldest first", "7.0.0"),
    cmd("fault", rlockd_fault, -3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Inject, list, clear faults; close connections", "7.0.0"),
    cmd("help", rlockd_help, 2, "loading stale", 0, 0, 0, "@slow")
        .hidden_flags(TEST_CONTROL)
        .doc("Show helpful text about the different subcommands", "7.0.0"),
    cmd("locks", rlockd_locks, -2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("The locks in the keyspace: kind, holders, leases, waiters", "7.0.0"),
    cmd("repl", rlockd_repl, -3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Pause, lag, drop or break replication; fail over; crash a node", "7.0.0"),
    cmd("restore", rlockd_restore, 3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Replace every database with a snapshot", "7.0.0"),
    cmd("scripts", rlockd_scripts, -2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Each cached script's machine-independent cost", "7.0.0"),
    cmd("snapshot", rlockd_snapshot, 3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Capture every database with its TTLs under a name", "7.0.0"),
    cmd("snapshots", rlockd_snapshots, 2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("The snapshot names", "7.0.0"),
];

fn rlockd_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    // The cluster's lines go before the closing HELP entry.
    let (body, help) = HELP.split_at(HELP.len() - 2);
    let lines = body
        .iter()
        .chain(super::cluster::CONTROL_HELP)
        .chain(super::replication::HELP)
        .chain(super::crash::HELP)
        .chain(help);
    Ok(Reply::Array(lines.map(|l| Reply::status(l)).collect()))
}

/// `RLOCKD REPL …`: replication's test control (`cmd/replication.rs`).
fn rlockd_repl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if let Some(r) = super::crash::control(ctx, &args[2..]) {
        return r;
    }
    super::replication::control(ctx, &args[2..])
}

/// `RLOCKD CLUSTER …`: the cluster's test control (`cmd/cluster.rs`).
fn rlockd_cluster(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    super::cluster::control(ctx, &args[2..])
}

/// The caller's user may read `key` with the subcommand `args` runs (a
/// selector grants commands and keys together); always while `default` is
/// the only, unrestricted, user. `LOCKS` and `EVENTS` show only such locks.
fn may_read(core: &Core, user: &[u8], args: &[Bytes], key: &[u8]) -> bool {
    if core.acl.open {
        return true;
    }
    let (Some(user), super::Lookup::Found(c)) = (core.acl.users.get(user), super::table().lookup(args)) else {
        return false;
    };
    let argv = [args[0].clone(), Bytes::copy_from_slice(key)];
    let keys = || vec![(1, true, false)];
    user.check(&crate::acl::Request { id: c.id, argv: &argv, no_auth: false, keys: &keys, channels: &Vec::new }).is_ok()
}

/// What the calling client may see of the keys it asks about: its user
/// and its command line (checked as `may_read` checks them), kept for a
/// reply made after the handler returned.
#[derive(Clone)]
struct Reader {
    user: Bytes,
    args: Vec<Bytes>,
}

impl Reader {
    fn of(ctx: &Ctx<'_>, args: &[Bytes]) -> Reader {
        Reader { user: ctx.client.user.clone(), args: args.to_vec() }
    }

    fn may_read(&self, core: &Core, key: &[u8]) -> bool {
        may_read(core, &self.user, &self.args, key)
    }
}

fn rlockd_locks(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut pattern = None;
    let mut text = false;
    for a in &args[2..] {
        if eq(a, "text") && !text {
            text = true;
        } else if pattern.is_none() {
            pattern = Some(a.clone());
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let reader = Reader::of(ctx, args);
    let show = move |core: &mut Core, mut found: Vec<LockView>, reader: &Reader| {
        found.retain(|l| reader.may_read(core, &l.key));
        Ok(if text { locks_text(&found) } else { Reply::Array(found.iter().map(lock_reply).collect()) })
    };
    // A cluster node shows the locks of every primary (one view).
    let of = {
        let pattern = pattern.clone();
        move |core: &mut Core, now| core.control.locks(&core.ks, pattern.as_deref(), now)
    };
    let r = reader.clone();
    if let Some(result) = super::cluster::each_primary(ctx, of, move |core, all| show(core, all.concat(), &r)) {
        return result;
    }
    let found = ctx.core.control.locks(&ctx.core.ks, pattern.as_deref(), ctx.shared.clock.now_ms());
    show(ctx.core, found, &reader)
}

fn rlockd_events(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let n = args.len();
    if n > 5 {
        return Err(CmdError::Syntax);
    }
    let mut key = None;
    let mut since = 0u64;
    let mut i = 2;
    while i < n {
        if eq(&args[i], "since") && i + 1 < n {
            since = u64::try_from(int(&args[i + 1])?).map_err(|_| CmdError::custom("ERR SINCE must be positive"))?;
            i += 2;
        } else if key.is_none() {
            key = Some(args[i].clone());
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let of = move |core: &mut Core, _| {
        core.control.history.as_ref().map(|h| h.events(key.as_deref(), since)).unwrap_or_default()
    };
    let show = |core: &mut Core, mut events: Vec<crate::control::history::LockEvent>, reader: &Reader| {
        events.retain(|e| reader.may_read(core, &e.key));
        Ok(Reply::Array(events.iter().map(event_reply).collect()))
    };
    let reader = Reader::of(ctx, args);
    // A cluster node shows every primary's events (ids count per node), in
    // time order.
    let r = reader.clone();
    let all = move |core: &mut Core, all: Vec<Vec<crate::control::history::LockEvent>>| {
        let mut all = all.concat();
        all.sort_by_key(|e| e.time_ms);
        show(core, all, &r)
    };
    if let Some(result) = super::cluster::each_primary(ctx, of.clone(), all) {
        return result;
    }
    let events = of(ctx.core, 0);
    show(ctx.core, events, &reader)
}

/// `RLOCKD CHECK [RESET]`: this node's lock history's violations, then the
/// holders lost by a failover of its primary/replica group.
fn rlockd_check(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    match args.get(2) {
        None => {
            let of =
                |core: &mut Core, _| core.control.history.as_ref().map(|h| h.violations().to_vec()).unwrap_or_default();
            // A cluster node: every primary's, then the cluster's ledger.
            let show = |core: &mut Core, mut all: Vec<String>| {
                all.extend(core.repl.violations());
                Ok(Reply::Array(all.iter().map(|v| Reply::bulk_str(v)).collect()))
            };
            if let Some(result) = super::cluster::each_primary(ctx, of, move |core, all| show(core, all.concat())) {
                return result;
            }
            let all = of(ctx.core, 0);
            show(ctx.core, all)
        }
        Some(a) if args.len() == 3 && eq(a, "reset") => {
            let reset = |core: &mut Core, _| {
                if let Some(history) = core.control.history.as_mut() {
                    history.reset();
                }
            };
            let done = |core: &mut Core| {
                core.repl.ledger.lock().violations.clear();
                Ok(Reply::ok())
            };
            if let Some(result) = super::cluster::each_primary(ctx, reset, move |core, _| done(core)) {
                return result;
            }
            reset(ctx.core, 0);
            done(ctx.core)
        }
        Some(_) => Err(CmdError::Syntax),
    }
}

fn rlockd_snapshot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ctx.core.control.snapshot(&ctx.core.ks, args[2].clone());
    Ok(Reply::ok())
}

fn rlockd_restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.core.control.restore(&mut ctx.core.ks, &args[2]) {
        Ok(Reply::ok())
    } else {
        Err(CmdError::custom(format!("ERR no snapshot named '{}'", String::from_utf8_lossy(&args[2]))))
    }
}

fn rlockd_snapshots(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(ctx.core.control.snapshot_names().into_iter().map(Reply::Bulk).collect()))
}

fn rlockd_scripts(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let want = args.get(2).map(|s| s.to_ascii_lowercase());
    let profiles = ctx.core.scripting.as_ref().map(|s| s.script_profiles()).unwrap_or_default();
    Ok(Reply::Array(
        profiles
            .iter()
            .filter(|(sha, _, _)| want.as_ref().is_none_or(|w| w == sha.as_bytes()))
            .map(|(sha, st, p)| script_reply(sha, st, p))
            .collect(),
    ))
}

/// Turns test control on or off after `CONFIG SET test-control` (see
/// [`crate::control`]): off clears the faults and lets the clock run on
/// real time again, which expires what is due.
pub(crate) fn switched(ctx: &mut Ctx<'_>) {
    let on = ctx.core.config.test_control;
    if on == ctx.core.control.is_on() {
        return;
    }
    ctx.core.control.switch(on, &mut ctx.core.ks);
    if !on {
        ctx.shared.faults.clear(None);
        ctx.shared.clock.reset();
        crate::control::expire_now(&mut ctx.core.ks, ctx.shared.clock.now_ms());
    }
}

fn uint(a: &[u8]) -> Result<u64, CmdError> {
    u64::try_from(int(a)?).map_err(|_| CmdError::custom("ERR value is out of range, must be positive"))
}

/// What an `RLOCKD FAULT` operation does: the kind it sets (`None`: it
/// acts at once, as `KILL`) and the options left after its own arguments.
type FaultParse = fn(&[Bytes]) -> Result<(Option<FaultKind>, &[Bytes]), CmdError>;

/// `RLOCKD FAULT <op> …`: the operations that act on the store, then the
/// kinds, each with the parser of its own arguments.
static FAULT_OPS: &[(&str, FaultParse)] = &[
    ("error", |a| {
        let text: Vec<u8> = a
            .first()
            .ok_or(CmdError::Syntax)?
            .iter()
            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
            .collect();
        if text.is_empty() {
            return Err(CmdError::custom("ERR the error message must not be empty"));
        }
        Ok((Some(FaultKind::Error(Bytes::from(text))), &a[1..]))
    }),
    ("latency", |a| {
        let ms = uint(a.first().ok_or(CmdError::Syntax)?)?;
        if a.len() > 2 && eq(&a[1], "jitter") {
            return Ok((Some(FaultKind::Latency { ms, jitter_ms: uint(&a[2])? }), &a[3..]));
        }
        Ok((Some(FaultKind::Latency { ms, jitter_ms: 0 }), &a[1..]))
    }),
    ("close", |a| match a.first() {
        Some(w) if eq(w, "before") || eq(w, "after") => Ok((Some(FaultKind::Close { after: eq(w, "after") }), &a[1..])),
        _ => Ok((Some(FaultKind::Close { after: false }), a)),
    }),
    ("freeze", |a| Ok((Some(FaultKind::Freeze { ms: uint(a.first().ok_or(CmdError::Syntax)?)? }), &a[1..]))),
    ("slowwrite", |a| {
        if a.len() < 2 {
            return Err(CmdError::Syntax);
        }
        let chunk = usize::try_from(uint(&a[0])?.max(1)).unwrap_or(usize::MAX);
        Ok((Some(FaultKind::SlowWrite { chunk, delay_ms: uint(&a[1])? }), &a[2..]))
    }),
    ("cutwrite", |a| {
        let bytes = usize::try_from(uint(a.first().ok_or(CmdError::Syntax)?)?).unwrap_or(usize::MAX);
        Ok((Some(FaultKind::CutWrite { bytes }), &a[1..]))
    }),
    ("dropmsg", |a| Ok((Some(FaultKind::DropMessages), a))),
    ("delaymsg", |a| Ok((Some(FaultKind::DelayMessages { ms: uint(a.first().ok_or(CmdError::Syntax)?)? }), &a[1..]))),
    ("kill", |a| Ok((None, a))),
];

/// `RLOCKD FAULT …`.
fn rlockd_fault(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (op, rest) = (&args[2], &args[3..]);
    if eq(op, "list") && rest.is_empty() {
        return Ok(Reply::Array(ctx.shared.faults.list().iter().map(fault_reply).collect()));
    }
    if eq(op, "clear") && rest.len() <= 1 {
        let id = rest.first().map(|a| uint(a)).transpose()?;
        return Ok(Reply::Int(ctx.shared.faults.clear(id) as i64));
    }
    let Some((_, parse)) = FAULT_OPS.iter().find(|(name, _)| eq(op, name)) else {
        return Err(CmdError::custom(format!("ERR unknown fault '{}'. Try RLOCKD HELP.", String::from_utf8_lossy(op))));
    };
    let (kind, rest) = parse(rest)?;
    let is_kill = kind.is_none();
    let mut f = Fault::new(kind.unwrap_or(FaultKind::DropMessages));
    for pair in rest.chunks(2) {
        let [o, v] = pair else { return Err(CmdError::Syntax) };
        if eq(o, "command") {
            f.scope.command = Some(Bytes::from(v.to_ascii_lowercase()));
        } else if eq(o, "key") {
            f.scope.key = Some(v.clone());
        } else if eq(o, "client") {
            f.scope.client_name = Some(v.clone());
        } else if eq(o, "id") {
            f.scope.client_id = Some(uint(v)?);
        } else if eq(o, "channel") {
            f.scope.channel = Some(v.clone());
        } else if eq(o, "times") {
            f.times = Some(uint(v)?);
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let clients = &ctx.core.clients;
    if is_kill {
        // KILL acts now and stays nowhere.
        if !f.scope.clients_only() || f.times.is_some() {
            return Err(CmdError::custom("ERR FAULT KILL takes only CLIENT and ID"));
        }
        return Ok(Reply::Int(crate::control::kill_clients(clients, &f.scope, ctx.client.id) as i64));
    }
    let message_fault = matches!(f.kind, FaultKind::DropMessages | FaultKind::DelayMessages { .. });
    let s = &f.scope;
    let command_scope = s.command.is_some() || s.key.is_some() || s.client_name.is_some() || s.client_id.is_some();
    if message_fault && command_scope {
        return Err(CmdError::custom("ERR DROPMSG and DELAYMSG take CHANNEL, not COMMAND, KEY, CLIENT or ID"));
    }
    if !message_fault && s.channel.is_some() {
        return Err(CmdError::custom("ERR CHANNEL goes with DROPMSG and DELAYMSG only"));
    }
    Ok(Reply::Int(crate::control::add_fault(clients, &ctx.shared.faults, f, ctx.client.id) as i64))
}

const HELP: &[&str] = &[
    "RLOCKD <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CLOCK GET",
    "    The server's time in unix milliseconds.",
    "CLOCK ADVANCE <ms>",
    "    Move time forward (or back, if negative): keys expire, timeouts fire.",
    "CLOCK SET <unix-ms>",
    "    Jump to that time.",
    "CLOCK FREEZE | RESUME",
    "    Stop time / let it run again as if it had never stopped (moves made meanwhile stay).",
    "CLOCK SKEW <ms>",
    "    Run that far ahead of (or behind) the system clock.",
    "CLOCK INFO",
    "    Time, offset from the system clock, frozen or not.",
    "LOCKS [<pattern>] [TEXT]",
    "    The locks in the keyspace: kind, holders, leases, waiters.",
    "EVENTS [<key>] [SINCE <id>]",
    "    What happened to the locks: acquired, reentered, renewed, released, expired.",
    "CHECK [RESET]",
    "    Every safety violation seen (empty: nothing was unsafe); RESET forgets them.",
    "SNAPSHOT <name>",
    "    Capture every database with its TTLs under that name.",
    "RESTORE <name>",
    "    Replace every database with a snapshot (as after a failover).",
    "SNAPSHOTS",
    "    The snapshot names.",
    "FAULT <kind> [<args>] [COMMAND <pattern>] [KEY <pattern>] [CLIENT <name-pattern>] [ID <client-id>]",
    "      [CHANNEL <pattern>] [TIMES <n>]",
    "    Inject a fault for matching commands, clients or channels (every condition given must hold;",
    "    TIMES: only that many times). Returns the fault's id. Kinds:",
    "    ERROR <message>           answer with this error instead of running the command",
    "    LATENCY <ms> [JITTER <ms>] hold the reply back",
    "    CLOSE [BEFORE|AFTER]      close the connection before the command runs, or after it ran unanswered",
    "    FREEZE <ms>               answer nothing for that long (the clock runs on)",
    "    SLOWWRITE <bytes> <ms>    write the reply that many bytes at a time, that far apart",
    "    CUTWRITE <bytes>          write only that much of the reply, then close",
    "    DROPMSG                   lose messages published on matching channels",
    "    DELAYMSG <ms>             deliver them that much later",
    "SCRIPTS [<sha>]",
    "    Each cached script's cost in machine-independent figures: Lua instructions, commands by",
    "    name, keys read and written (totals and per call), beside its calls, errors and time.",
    "FAULT KILL [CLIENT <name-pattern>] [ID <client-id>]",
    "    Close matching connections now (not this one); returns how many.",
    "FAULT LIST",
    "    The faults set, with their hits.",
    "FAULT CLEAR [<id>]",
    "    Remove one fault, or all; returns how many.",
    "HELP",
    "    Print this help.",
];

fn script_reply(sha: &str, st: &crate::script::ScriptStats, p: &crate::script::ScriptProfile) -> Reply {
    let per_call = |v: u64| Reply::Double(if st.calls == 0 { 0.0 } else { v as f64 / st.calls as f64 });
    let commands = p.commands.iter().map(|(name, n)| (Reply::bulk_str(name), Reply::Int(*n as i64))).collect();
    Reply::Map(vec![
        (Reply::bulk_str("sha"), Reply::bulk_str(sha)),
        (Reply::bulk_str("calls"), Reply::Int(st.calls as i64)),
        (Reply::bulk_str("errors"), Reply::Int(st.errors as i64)),
        (Reply::bulk_str("instructions"), Reply::Int(p.instructions as i64)),
        (Reply::bulk_str("instructions_per_call"), per_call(p.instructions)),
        (Reply::bulk_str("redis_calls"), Reply::Int(st.redis_calls as i64)),
        (Reply::bulk_str("redis_calls_per_call"), per_call(st.redis_calls)),
        (Reply::bulk_str("commands"), Reply::Map(commands)),
        (Reply::bulk_str("keys_read"), Reply::Int(p.keys_read as i64)),
        (Reply::bulk_str("keys_written"), Reply::Int(p.keys_written as i64)),
        (Reply::bulk_str("usec"), Reply::Int((st.nanos / 1000) as i64)),
    ])
}

fn fault_reply(info: &FaultInfo) -> Reply {
    let f = &info.fault;
    let params = match &f.kind {
        FaultKind::Error(t) => Reply::Bulk(t.clone()),
        FaultKind::Latency { ms, jitter_ms } => Reply::bulk_str(&format!("{ms} ms, jitter {jitter_ms} ms")),
        FaultKind::Close { after } => Reply::bulk_str(if *after { "after" } else { "before" }),
        FaultKind::Freeze { ms } | FaultKind::DelayMessages { ms } => Reply::bulk_str(&format!("{ms} ms")),
        FaultKind::SlowWrite { chunk, delay_ms } => Reply::bulk_str(&format!("{chunk} bytes every {delay_ms} ms")),
        FaultKind::CutWrite { bytes } => Reply::bulk_str(&format!("{bytes} bytes")),
        FaultKind::DropMessages => Reply::bulk_str(""),
    };
    let opt = |b: &Option<Bytes>| b.clone().map_or(Reply::Nil, Reply::Bulk);
    Reply::Map(vec![
        (Reply::bulk_str("id"), Reply::Int(info.id as i64)),
        (Reply::bulk_str("kind"), Reply::bulk_str(f.kind.name())),
        (Reply::bulk_str("params"), params),
        (Reply::bulk_str("command"), opt(&f.scope.command)),
        (Reply::bulk_str("key"), opt(&f.scope.key)),
        (Reply::bulk_str("client"), opt(&f.scope.client_name)),
        (Reply::bulk_str("client_id"), f.scope.client_id.map_or(Reply::Nil, |i| Reply::Int(i as i64))),
        (Reply::bulk_str("channel"), opt(&f.scope.channel)),
        (Reply::bulk_str("times_left"), f.times.map_or(Reply::Nil, |t| Reply::Int(t as i64))),
        (Reply::bulk_str("hits"), Reply::Int(info.hits as i64)),
    ])
}

/// A `RLOCKD CLOCK` operation: its name, its number of arguments, and
/// what it does; `Some(reply)` answers at once, `None` means the clock
/// moved (due keys expire, the reply is the new time).
type ClockOp = fn(&crate::clock::Clock, Option<i64>) -> Result<Option<Reply>, CmdError>;

static CLOCK_OPS: &[(&str, usize, ClockOp)] = &[
    ("get", 0, |c, _| Ok(Some(Reply::Int(c.now_ms() as i64)))),
    ("info", 0, |c, _| {
        Ok(Some(Reply::Map(vec![
            (Reply::bulk_str("now_ms"), Reply::Int(c.now_ms() as i64)),
            (Reply::bulk_str("offset_ms"), Reply::Int(c.offset_ms())),
            (Reply::bulk_str("frozen"), Reply::Int(i64::from(c.is_frozen()))),
        ])))
    }),
    ("freeze", 0, |c, _| {
        c.freeze(true);
        Ok(None)
    }),
    ("resume", 0, |c, _| {
        c.freeze(false);
        Ok(None)
    }),
    ("advance", 1, |c, ms| {
        c.advance_ms(ms.unwrap_or(0));
        Ok(None)
    }),
    ("set", 1, |c, ms| match ms {
        Some(ms) if ms >= 0 => {
            c.set_ms(ms as u64);
            Ok(None)
        }
        _ => Err(CmdError::custom("ERR the time must be positive")),
    }),
    ("skew", 1, |c, ms| {
        c.skew_ms(ms.unwrap_or(0));
        Ok(None)
    }),
];

/// `RLOCKD CLOCK …`.
fn rlockd_clock(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (op, rest) = (&args[2], &args[3..]);
    let Some((_, _, run)) = CLOCK_OPS.iter().find(|(name, n, _)| eq(op, name) && *n == rest.len()) else {
        return Err(super::help::subcommand_syntax(args));
    };
    let arg = rest.first().map(|a| int(a)).transpose()?;
    if let Some(reply) = run(&ctx.shared.clock, arg)? {
        return Ok(reply);
    }
    let now = ctx.shared.clock.now_ms();
    crate::control::expire_now(&mut ctx.core.ks, now);
    Ok(Reply::Int(now as i64))
}

fn event_reply(e: &crate::control::history::LockEvent) -> Reply {
    Reply::Map(vec![
        (Reply::bulk_str("id"), Reply::Int(e.id as i64)),
        (Reply::bulk_str("time_ms"), Reply::Int(e.time_ms as i64)),
        (Reply::bulk_str("db"), Reply::Int(e.db as i64)),
        (Reply::bulk_str("key"), Reply::Bulk(e.key.clone())),
        (Reply::bulk_str("kind"), Reply::bulk_str(e.kind)),
        (Reply::bulk_str("event"), Reply::bulk_str(e.event)),
        (Reply::bulk_str("holder"), Reply::Bulk(e.holder.clone())),
        (Reply::bulk_str("count"), Reply::Int(e.count)),
        (Reply::bulk_str("client"), Reply::Int(e.client as i64)),
        (Reply::bulk_str("command"), Reply::bulk_str(&e.command)),
    ])
}

fn opt_int(v: Option<i64>) -> Reply {
    v.map_or(Reply::Nil, Reply::Int)
}

fn lock_reply(l: &LockView) -> Reply {
    let holders = l
        .holders
        .iter()
        .map(|h| {
            Reply::Map(vec![
                (Reply::bulk_str("id"), Reply::Bulk(h.id.clone())),
                (Reply::bulk_str("count"), Reply::Int(h.count)),
                (Reply::bulk_str("lease_ms"), opt_int(h.lease_ms)),
                (Reply::bulk_str("score"), h.score.map_or(Reply::Nil, Reply::Double)),
            ])
        })
        .collect();
    let waiters = l
        .waiters
        .iter()
        .map(|w| {
            Reply::Map(vec![
                (Reply::bulk_str("id"), Reply::Bulk(w.id.clone())),
                (Reply::bulk_str("deadline_ms"), opt_int(w.deadline_ms)),
            ])
        })
        .collect();
    Reply::Map(vec![
        (Reply::bulk_str("key"), Reply::Bulk(l.key.clone())),
        (Reply::bulk_str("db"), Reply::Int(l.db as i64)),
        (Reply::bulk_str("kind"), Reply::bulk_str(l.kind)),
        (Reply::bulk_str("mode"), l.mode.clone().map_or(Reply::Nil, Reply::Bulk)),
        (Reply::bulk_str("lease_ms"), opt_int(l.lease_ms)),
        (Reply::bulk_str("value"), opt_int(l.value)),
        (Reply::bulk_str("holders"), Reply::Array(holders)),
        (Reply::bulk_str("waiters"), Reply::Array(waiters)),
    ])
}

/// The readable form: one line per lock, then one per holder and waiter.
pub fn locks_text(found: &[LockView]) -> Reply {
    use std::fmt::Write;
    let mut s = String::new();
    for l in found {
        let lease = l.lease_ms.map_or("no lease".to_string(), |ms| format!("lease {ms} ms"));
        let _ = write!(s, "db{} {} {}", l.db, String::from_utf8_lossy(&l.key), l.kind);
        if let Some(m) = &l.mode {
            let _ = write!(s, " mode={}", String::from_utf8_lossy(m));
        }
        if let Some(v) = l.value {
            let _ = write!(s, " value={v}");
        }
        let _ = writeln!(s, " ({lease})");
        for h in &l.holders {
            let _ = write!(s, "  holder {} x{}", String::from_utf8_lossy(&h.id), h.count);
            if let Some(ms) = h.lease_ms {
                let _ = write!(s, " lease {ms} ms");
            }
            if let Some(score) = h.score {
                let _ = write!(s, " score {score}");
            }
            s.push('\n');
        }
        for (i, w) in l.waiters.iter().enumerate() {
            let _ = write!(s, "  waiter #{} {}", i + 1, String::from_utf8_lossy(&w.id));
            if let Some(d) = w.deadline_ms {
                let _ = write!(s, " until {d}");
            }
            s.push('\n');
        }
    }
    Reply::Verbatim("txt", Bytes::from(s))
}
