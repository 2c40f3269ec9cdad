//! `RLOCKD …`: test control, the reason to run rlockd instead of a Redis in
//! a container. Drive the server's clock, read every lock, and capture and
//! bring back the whole keyspace (a failover that loses the last writes).
//!
//! The namespace sits beside the command table, not in it: `COMMAND` lists
//! exactly Redis 7.0's commands, and with `test-control no` the namespace
//! answers Redis's unknown-command error. The in-process [`crate::Server`]
//! methods run the same functions (`clock_*` through [`crate::Clock`],
//! [`snapshot`], [`restore`], [`crate::db::locks::scan`]).

use bytes::Bytes;

use super::{CmdError, CmdResult, Ctx};
use crate::core::Core;
use crate::db::locks::{self, LockView};
use crate::faults::{Fault, FaultInfo, FaultKind, Faults};
use crate::protocol::Reply;

const HELP: &[&str] = &[
    "RLOCKD <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CLOCK GET",
    "    The server's time in unix milliseconds.",
    "CLOCK ADVANCE <ms>",
    "    Move time forward (or back, if negative): keys expire, timeouts fire.",
    "CLOCK SET <unix-ms>",
    "    Jump to that time.",
    "CLOCK FREEZE | RESUME",
    "    Stop time / let it run again from where it stands.",
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

/// True when `argv` is an `RLOCKD` command and the namespace is enabled.
pub(crate) fn is_control(ctx: &Ctx<'_>, argv: &[Bytes]) -> bool {
    argv[0].eq_ignore_ascii_case(b"rlockd") && ctx.core.config.get_str("test-control") == "yes"
}

fn eq(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

fn int(a: &[u8]) -> Result<i64, CmdError> {
    Ok(crate::num::parse_int(a)?)
}

/// Runs `RLOCKD …`.
pub(crate) fn run(ctx: &mut Ctx<'_>, argv: &[Bytes]) -> CmdResult {
    let Some(sub) = argv.get(1) else {
        return Err(CmdError::custom("ERR wrong number of arguments for 'rlockd' command"));
    };
    let unknown = || {
        CmdError::custom(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try RLOCKD HELP.",
            String::from_utf8_lossy(sub)
        ))
    };
    let n = argv.len();
    if eq(sub, "help") && n == 2 {
        let lines = HELP[..HELP.len() - 2].iter().chain(super::replication::HELP).chain(&HELP[HELP.len() - 2..]);
        return Ok(Reply::Array(lines.map(|l| Reply::status(l)).collect()));
    }
    if eq(sub, "clock") && n >= 3 {
        return clock(ctx, &argv[2..]).ok_or_else(unknown)?;
    }
    if eq(sub, "locks") && n <= 4 {
        let mut pattern = None;
        let mut text = false;
        for a in &argv[2..] {
            if eq(a, "text") && !text {
                text = true;
            } else if pattern.is_none() {
                pattern = Some(&a[..]);
            } else {
                return Err(CmdError::Syntax);
            }
        }
        let found = locks::scan(&ctx.core.ks.dbs, pattern, ctx.shared.clock.now_ms());
        return Ok(if text { locks_text(&found) } else { Reply::Array(found.iter().map(lock_reply).collect()) });
    }
    if eq(sub, "events") && n <= 5 {
        let mut key = None;
        let mut since = 0u64;
        let mut i = 2;
        while i < n {
            if eq(&argv[i], "since") && i + 1 < n {
                since =
                    u64::try_from(int(&argv[i + 1])?).map_err(|_| CmdError::custom("ERR SINCE must be positive"))?;
                i += 2;
            } else if key.is_none() {
                key = Some(&argv[i][..]);
                i += 1;
            } else {
                return Err(CmdError::Syntax);
            }
        }
        let events = ctx.core.lock_history.as_ref().map(|h| h.events(key, since)).unwrap_or_default();
        return Ok(Reply::Array(events.iter().map(event_reply).collect()));
    }
    if eq(sub, "check") && n <= 3 {
        let Some(history) = ctx.core.lock_history.as_mut() else { return Ok(Reply::Array(Vec::new())) };
        if n == 3 {
            if !eq(&argv[2], "reset") {
                return Err(CmdError::Syntax);
            }
            history.reset();
            ctx.core.repl.ledger.lock().violations.clear();
            return Ok(Reply::ok());
        }
        let mut all = history.violations().to_vec();
        all.extend(super::replication::violations(ctx.core));
        return Ok(Reply::Array(all.iter().map(|v| Reply::bulk_str(v)).collect()));
    }
    if eq(sub, "snapshot") && n == 3 {
        snapshot(ctx.core, argv[2].clone());
        return Ok(Reply::ok());
    }
    if eq(sub, "restore") && n == 3 {
        return if restore(ctx.core, &argv[2]) {
            Ok(Reply::ok())
        } else {
            Err(CmdError::custom(format!("ERR no snapshot named '{}'", String::from_utf8_lossy(&argv[2]))))
        };
    }
    if eq(sub, "scripts") && n <= 3 {
        let want = argv.get(2).map(|s| s.to_ascii_lowercase());
        let profiles = ctx.core.scripting.as_ref().map(|s| s.script_profiles()).unwrap_or_default();
        return Ok(Reply::Array(
            profiles
                .iter()
                .filter(|(sha, _, _)| want.as_ref().is_none_or(|w| w == sha.as_bytes()))
                .map(|(sha, st, p)| script_reply(sha, st, p))
                .collect(),
        ));
    }
    if eq(sub, "fault") && n >= 3 {
        return fault(ctx, &argv[2..]);
    }
    if eq(sub, "repl") && n >= 3 {
        return super::replication::control(ctx, &argv[2..]);
    }
    if eq(sub, "snapshots") && n == 2 {
        let mut names: Vec<&Bytes> = ctx.core.snapshots.keys().collect();
        names.sort();
        return Ok(Reply::Array(names.into_iter().map(|k| Reply::Bulk(k.clone())).collect()));
    }
    Err(unknown())
}

fn uint(a: &[u8]) -> Result<u64, CmdError> {
    u64::try_from(int(a)?).map_err(|_| CmdError::custom("ERR value is out of range, must be positive"))
}

/// `RLOCKD FAULT …`.
fn fault(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let op = &args[0];
    if eq(op, "list") && args.len() == 1 {
        return Ok(Reply::Array(ctx.shared.faults.list().iter().map(fault_reply).collect()));
    }
    if eq(op, "clear") && args.len() <= 2 {
        let id = args.get(1).map(|a| uint(a)).transpose()?;
        return Ok(Reply::Int(ctx.shared.faults.clear(id) as i64));
    }
    let (kind, rest) = parse_kind(args)?;
    let is_kill = kind.is_none();
    let mut f = Fault::new(kind.unwrap_or(FaultKind::DropMessages));
    let mut i = 0;
    while i < rest.len() {
        let Some(v) = rest.get(i + 1) else { return Err(CmdError::Syntax) };
        let o = &rest[i];
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
        i += 2;
    }
    match is_kill {
        // KILL acts now and stays nowhere.
        true => {
            if !f.scope.clients_only() || f.times.is_some() {
                return Err(CmdError::custom("ERR FAULT KILL takes only CLIENT and ID"));
            }
            Ok(Reply::Int(kill_clients(ctx.core, &f.scope, ctx.client.id) as i64))
        }
        false => {
            let message_fault = matches!(f.kind, FaultKind::DropMessages | FaultKind::DelayMessages { .. });
            let s = &f.scope;
            let command_scope =
                s.command.is_some() || s.key.is_some() || s.client_name.is_some() || s.client_id.is_some();
            if message_fault && command_scope {
                return Err(CmdError::custom("ERR DROPMSG and DELAYMSG take CHANNEL, not COMMAND, KEY, CLIENT or ID"));
            }
            if !message_fault && s.channel.is_some() {
                return Err(CmdError::custom("ERR CHANNEL goes with DROPMSG and DELAYMSG only"));
            }
            Ok(Reply::Int(add_fault(ctx.core, &ctx.shared.faults, f, ctx.client.id) as i64))
        }
    }
}

/// The fault kind at the head of `args` (None: `KILL`) and the options after it.
fn parse_kind(args: &[Bytes]) -> Result<(Option<FaultKind>, &[Bytes]), CmdError> {
    let op = &args[0];
    let need = |k: usize| if args.len() > k { Ok(()) } else { Err(CmdError::Syntax) };
    let kind = if eq(op, "error") {
        need(1)?;
        let text: Vec<u8> = args[1].iter().map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }).collect();
        if text.is_empty() {
            return Err(CmdError::custom("ERR the error message must not be empty"));
        }
        return Ok((Some(FaultKind::Error(Bytes::from(text))), &args[2..]));
    } else if eq(op, "latency") {
        need(1)?;
        let ms = uint(&args[1])?;
        if args.len() > 3 && eq(&args[2], "jitter") {
            return Ok((Some(FaultKind::Latency { ms, jitter_ms: uint(&args[3])? }), &args[4..]));
        }
        return Ok((Some(FaultKind::Latency { ms, jitter_ms: 0 }), &args[2..]));
    } else if eq(op, "close") {
        if args.len() > 1 && (eq(&args[1], "before") || eq(&args[1], "after")) {
            return Ok((Some(FaultKind::Close { after: eq(&args[1], "after") }), &args[2..]));
        }
        FaultKind::Close { after: false }
    } else if eq(op, "freeze") {
        need(1)?;
        return Ok((Some(FaultKind::Freeze { ms: uint(&args[1])? }), &args[2..]));
    } else if eq(op, "slowwrite") {
        need(2)?;
        let chunk = usize::try_from(uint(&args[1])?.max(1)).unwrap_or(usize::MAX);
        return Ok((Some(FaultKind::SlowWrite { chunk, delay_ms: uint(&args[2])? }), &args[3..]));
    } else if eq(op, "cutwrite") {
        need(1)?;
        let bytes = usize::try_from(uint(&args[1])?).unwrap_or(usize::MAX);
        return Ok((Some(FaultKind::CutWrite { bytes }), &args[2..]));
    } else if eq(op, "dropmsg") {
        FaultKind::DropMessages
    } else if eq(op, "delaymsg") {
        need(1)?;
        return Ok((Some(FaultKind::DelayMessages { ms: uint(&args[1])? }), &args[2..]));
    } else if eq(op, "kill") {
        return Ok((None, &args[1..]));
    } else {
        return Err(CmdError::custom(format!("ERR unknown fault '{}'. Try RLOCKD HELP.", String::from_utf8_lossy(op))));
    };
    Ok((Some(kind), &args[1..]))
}

/// Sets `f` (for `RLOCKD FAULT` and [`crate::Server::add_fault`]). A freeze
/// stops the matching connections open now at once (except `caller`'s, so
/// the test that sets it gets its answer); later ones freeze on their first
/// matching command.
pub(crate) fn add_fault(core: &Core, faults: &Faults, f: Fault, caller: u64) -> u64 {
    if matches!(f.kind, FaultKind::Freeze { .. }) && f.scope.clients_only() {
        let ids = core
            .clients
            .values()
            .filter(|r| r.shared.id != caller && f.scope.client_matches(r.shared.id, &r.name))
            .map(|r| r.shared.id)
            .collect();
        return faults.add_freezing(f, ids);
    }
    faults.add(f)
}

/// Closes the connections matching `scope` (not `caller`'s); returns how many.
pub(crate) fn kill_clients(core: &Core, scope: &crate::faults::Scope, caller: u64) -> usize {
    let mut n = 0;
    for r in core.clients.values() {
        if r.shared.id != caller && scope.client_matches(r.shared.id, &r.name) {
            r.shared.kill();
            n += 1;
        }
    }
    n
}

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

/// `RLOCKD CLOCK …`; `None` for an unknown form.
fn clock(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Option<CmdResult> {
    let clock = &ctx.shared.clock;
    let op = &args[0];
    let arg = || args.get(1).map(|a| int(a));
    let moved = match (args.len(), op) {
        (1, o) if eq(o, "get") => return Some(Ok(Reply::Int(clock.now_ms() as i64))),
        (1, o) if eq(o, "info") => {
            return Some(Ok(Reply::Map(vec![
                (Reply::bulk_str("now_ms"), Reply::Int(clock.now_ms() as i64)),
                (Reply::bulk_str("offset_ms"), Reply::Int(clock.offset_ms())),
                (Reply::bulk_str("frozen"), Reply::Int(i64::from(clock.is_frozen()))),
            ])))
        }
        (1, o) if eq(o, "freeze") => {
            clock.freeze(true);
            false
        }
        (1, o) if eq(o, "resume") => {
            clock.freeze(false);
            false
        }
        (2, o) if eq(o, "advance") => match arg()? {
            Ok(ms) => {
                clock.advance_ms(ms);
                true
            }
            Err(e) => return Some(Err(e)),
        },
        (2, o) if eq(o, "set") => match arg()? {
            Ok(ms) if ms >= 0 => {
                clock.set_ms(ms as u64);
                true
            }
            Ok(_) => return Some(Err(CmdError::custom("ERR the time must be positive"))),
            Err(e) => return Some(Err(e)),
        },
        (2, o) if eq(o, "skew") => match arg()? {
            Ok(ms) => {
                clock.skew_ms(ms);
                true
            }
            Err(e) => return Some(Err(e)),
        },
        _ => return None,
    };
    if moved {
        expire_now(ctx.core, ctx.shared.clock.now_ms());
    }
    Some(Ok(Reply::Int(ctx.shared.clock.now_ms() as i64)))
}

/// After a jump, every key now due goes at once (with its `expired` event),
/// rather than at the next active-expiry round: a test sees the effect of
/// the time it set as soon as the command returns.
pub(crate) fn expire_now(core: &mut Core, now_ms: u64) {
    core.ks.now = now_ms;
    let ks = &mut core.ks;
    for i in 0..ks.dbs.len() {
        while ks.dbs[i].expire_due(i, now_ms, 1024, &mut ks.sig) == 1024 {}
    }
}

/// Captures every database under `name` (replacing an older snapshot).
pub(crate) fn snapshot(core: &mut Core, name: Bytes) {
    let dbs = core.ks.dbs.clone();
    core.snapshots.insert(name, dbs);
}

/// Replaces every database with snapshot `name`; false if there is none.
/// Deadlines are absolute: keys whose time passed since the capture expire.
/// WATCH and blocked clients see every key of before and after as touched.
pub(crate) fn restore(core: &mut Core, name: &[u8]) -> bool {
    let Some(dbs) = core.snapshots.get(name).cloned() else {
        return false;
    };
    let ks = &mut core.ks;
    for (i, db) in ks.dbs.iter().chain(dbs.iter()).enumerate() {
        let index = i % dbs.len().max(1);
        let keys: Vec<Bytes> = db.keys().map(crate::db::Key::to_bytes).collect();
        for k in keys {
            ks.sig.touch(index, &k);
        }
    }
    ks.dbs = dbs;
    true
}

fn event_reply(e: &crate::db::lock_history::LockEvent) -> Reply {
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
