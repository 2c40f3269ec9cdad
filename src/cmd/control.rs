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
        return Ok(Reply::Array(HELP.iter().map(|l| Reply::status(l)).collect()));
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
            return Ok(Reply::ok());
        }
        return Ok(Reply::Array(history.violations().iter().map(|v| Reply::bulk_str(v)).collect()));
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
    if eq(sub, "snapshots") && n == 2 {
        let mut names: Vec<&Bytes> = ctx.core.snapshots.keys().collect();
        names.sort();
        return Ok(Reply::Array(names.into_iter().map(|k| Reply::Bulk(k.clone())).collect()));
    }
    Err(unknown())
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
        let keys: Vec<Bytes> = db.keys().cloned().collect();
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
