//! Server-wide commands: TIME, SHUTDOWN, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB,
//! the persistence commands of an in-memory server (SAVE, BGSAVE,
//! LASTSAVE…) and MONITOR. The other server families have their own files
//! (`connection`, `client`, `config`, `command`, `info`, `diag`,
//! `replication`).

use bytes::Bytes;

use super::util::{eq, int};
use super::{cmd, CommandSpec, Ctx};
use crate::client::{Caller, ReplyMode};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("time", time, 1, "loading stale fast", 0, 0, 0, "@fast")
        .doc("Return the current server time", "2.6.0"),
    cmd("lolwut", lolwut, -1, "readonly fast", 0, 0, 0, "@read @fast")
        .doc("Display some computer art and the Redis version", "5.0.0"),
    cmd("shutdown", shutdown, -1, "admin noscript loading stale no_multi allow_busy", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Synchronously save the dataset to disk and then shut down the server", "1.0.0"),
    cmd("dbsize", dbsize, 1, "readonly fast", 0, 0, 0, "@keyspace @read @fast")
        .doc("Return the number of keys in the selected database", "1.0.0"),
    cmd("flushdb", flushdb, -1, "write", 0, 0, 0, "@keyspace @write @slow @dangerous")
        .doc("Remove all keys from the current database", "1.0.0"),
    cmd("flushall", flushall, -1, "write", 0, 0, 0, "@keyspace @write @slow @dangerous")
        .doc("Remove all keys from all databases", "1.0.0"),
    cmd("swapdb", swapdb, 3, "write fast", 0, 0, 0, "@keyspace @write @fast @dangerous")
        .doc("Swaps two Redis databases", "4.0.0"),
    cmd("lastsave", lastsave, 1, "loading stale fast", 0, 0, 0, "@admin @fast @dangerous")
        .doc("Get the UNIX time stamp of the last successful save to disk", "1.0.0"),
    cmd("save", save, 1, "admin noscript no_async_loading no_multi", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Synchronously save the dataset to disk", "1.0.0"),
    cmd("bgsave", bgsave, -1, "admin noscript no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Asynchronously save the dataset to disk", "1.0.0"),
    cmd("bgrewriteaof", bgrewriteaof, 1, "admin noscript no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Asynchronously rewrite the append-only file", "1.0.0"),
    cmd("waitaof", waitaof, 4, "blocking", 0, 0, 0, "@slow @blocking @connection")
        .doc("Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.", "7.2.0"),
    cmd("monitor", monitor, 1, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Listen for all requests received by the server in real time", "1.0.0"),
];

/// `LOLWUT [VERSION v] ...`: Redis 7.0 draws art for versions 5 and 6
/// (random each time; Redis 8 for 8 too) and otherwise answers its version
/// line, which is what a bare `LOLWUT` gives in 7.x.
fn lolwut(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // The version the server names itself by (Valkey's own).
    let reported = ctx.core.profile().version().to_string();
    let mut v = reported.clone();
    if args.len() >= 3 && eq(&args[1], "version") {
        // Redis prints the number as an unsigned int, then ".0.0".
        v = format!("{}.0.0", int(&args[2])? as u32);
    }
    let b = v.as_bytes();
    let minor_9 = b.get(1) == Some(&b'.') && b.get(2) == Some(&b'9');
    let minor_other = b.get(1) == Some(&b'.') && b.get(2) != Some(&b'9');
    // Redis 8 draws for version 8 too.
    let art_8 = b[0] == b'8' && ctx.core.profile().at_least(8, 0, 0);
    let art = (b[0] == b'5' || b[0] == b'6' || art_8) && minor_other || (b[0] == b'4' || b[0] == b'5') && minor_9;
    if art {
        return Err(CmdError::custom("ERR LOLWUT VERSION 5 and 6 draw computer art, which rlockd does not"));
    }
    Ok(Reply::Verbatim("txt", Bytes::from(format!("Redis ver. {reported}\n"))))
}

fn time(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    // From Redis 7.2 a script sees one time throughout: its start's.
    let in_script = ctx.client.caller == crate::client::Caller::Script;
    let us = if in_script && ctx.core.profile().at_least(7, 2, 0) {
        ctx.core.call_time_us
    } else {
        ctx.shared.clock.now_us()
    };
    Ok(Reply::Array(vec![
        Reply::Bulk(Bytes::from((us / 1_000_000).to_string())),
        Reply::Bulk(Bytes::from((us % 1_000_000).to_string())),
    ]))
}

fn shutdown(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    for a in &args[1..] {
        if !(eq(a, "nosave") || eq(a, "save") || eq(a, "now") || eq(a, "force") || eq(a, "abort")) {
            return Err(CmdError::Syntax);
        }
    }
    if args[1..].iter().any(|a| eq(a, "abort")) {
        return Err(CmdError::custom("ERR No shutdown in progress."));
    }
    if ctx.client.is_script() {
        return Err(CmdError::custom("ERR This Redis command is not allowed from script"));
    }
    // From a busy script's hook: only SHUTDOWN NOSAVE may stop the server.
    if ctx.shared.script.busy.load(std::sync::atomic::Ordering::Acquire) && !args[1..].iter().any(|a| eq(a, "nosave")) {
        return Err(CmdError::custom(super::scripting::busy_error(ctx.shared)));
    }
    tracing::info!("SHUTDOWN requested by client {}", ctx.client.id);
    ctx.shared.request_shutdown();
    ctx.client.close = true;
    ctx.client.reply_mode = ReplyMode::SkipThis;
    Ok(Reply::ok())
}

// ---- keyspace-wide ----

fn dbsize(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(ctx.db().len() as i64))
}

fn flush_opts(args: &[Bytes]) -> Result<(), CmdError> {
    match args.len() {
        1 => Ok(()),
        2 if eq(&args[1], "async") || eq(&args[1], "sync") => Ok(()),
        _ => Err(CmdError::Syntax),
    }
}

/// Empties database `index`, signalling every key for WATCH / blocked clients.
fn flush_db(ctx: &mut Ctx<'_>, index: usize) {
    let ks = &mut ctx.core.ks;
    ks.sig.images.all(&ks.dbs[index], index);
    if ks.sig.track_touches {
        let keys: Vec<crate::db::Key> = ks.dbs[index].keys().cloned().collect();
        for k in keys {
            ks.sig.touch(index, &k);
        }
    }
    ks.sig.dirty += ks.dbs[index].len() as u64;
    ks.dbs[index].clear();
}

/// Runs a flush; tracking clients get Redis's "everything" invalidation
/// (a null) instead of one per key, and the tracking table is emptied.
fn flush_tracked(ctx: &mut Ctx<'_>, flush: impl FnOnce(&mut Ctx<'_>)) {
    let tracking = ctx.core.tracking.active;
    if tracking {
        let writer = if ctx.client.is_script() { 0 } else { ctx.client.id };
        ctx.core.track_modified(ctx.client.id, writer);
    }
    flush(ctx);
    if tracking {
        let core = &mut *ctx.core;
        core.tracking.cursor = core.ks.sig.touched.len();
        core.tracking.on_flush(ctx.client.id, &mut core.clients);
    }
}

fn flushdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    flush_opts(args)?;
    let i = ctx.client.db();
    flush_tracked(ctx, |ctx| flush_db(ctx, i));
    Ok(Reply::ok())
}

fn flushall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    flush_opts(args)?;
    flush_tracked(ctx, |ctx| {
        for i in 0..ctx.core.ks.dbs.len() {
            flush_db(ctx, i);
        }
    });
    Ok(Reply::ok())
}

fn swapdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let parse = |a: &[u8], what: &str| -> Result<i64, CmdError> {
        let v =
            crate::num::parse_i64_strict(a).ok_or_else(|| CmdError::custom(format!("ERR invalid {what} DB index")))?;
        if v < i64::from(i32::MIN) || v > i64::from(i32::MAX) {
            return Err(CmdError::custom(format!("ERR invalid {what} DB index")));
        }
        Ok(v)
    };
    let a = parse(&args[1], "first")?;
    let b = parse(&args[2], "second")?;
    let n = ctx.core.ks.dbs.len() as i64;
    if a < 0 || b < 0 || a >= n || b >= n {
        return Err(CmdError::custom("ERR DB index is out of range"));
    }
    let (a, b) = (a as usize, b as usize);
    if a != b {
        // Redis 7.0's SWAPDB invalidates WATCHes but sends no tracking
        // invalidations: its touches are skipped below.
        let tracking = ctx.core.tracking.active;
        if tracking {
            let writer = if ctx.client.is_script() { 0 } else { ctx.client.id };
            ctx.core.track_modified(ctx.client.id, writer);
        }
        let ks = &mut ctx.core.ks;
        for i in [a, b] {
            ks.sig.images.all(&ks.dbs[i], i);
        }
        if ks.sig.track_touches {
            for i in [a, b] {
                let keys: Vec<crate::db::Key> = ks.dbs[i].keys().cloned().collect();
                for k in keys {
                    ks.sig.touch(i, &k);
                    // The key appears in the other db too (WATCH of a key
                    // that SWAPDB makes exist is invalidated, as in Redis).
                    ks.sig.touched.push((a + b - i, k));
                }
            }
        }
        ks.dbs.swap(a, b);
        ks.sig.dirty += 1;
        if tracking {
            ctx.core.tracking.cursor = ctx.core.ks.sig.touched.len();
        }
        ctx.core.blocking.on_swapdb(a, b);
    }
    Ok(Reply::ok())
}

fn lastsave(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(ctx.core.lastsave as i64))
}

fn save(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.core.lastsave = ctx.now_ms() / 1000;
    Ok(Reply::ok())
}

fn bgsave(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 2 || (args.len() == 2 && !eq(&args[1], "schedule")) {
        return Err(CmdError::Syntax);
    }
    ctx.core.lastsave = ctx.now_ms() / 1000;
    Ok(Reply::status("Background saving started"))
}

fn bgrewriteaof(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::status("Background append only file rewriting started"))
}

// ---- replication-shaped answers of a lone master ----

fn waitaof(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let numlocal = int(&args[1])?;
    int(&args[2])?;
    let t = int(&args[3]).map_err(|_| CmdError::TimeoutNotInteger)?;
    if t < 0 {
        return Err(CmdError::NegativeTimeout);
    }
    super::blocking::check_deadline(ctx, t)?;
    if numlocal > 0 && !ctx.core.config.appendonly {
        return Err(CmdError::custom("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."));
    }
    Ok(Reply::Array(vec![Reply::Int(0), Reply::Int(0)]))
}

/// `MONITOR`: from now on this client also receives a line for every
/// command the server runs (see [`crate::monitor`]).
fn monitor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx.client.caller == Caller::Exec || ctx.client.multi.is_some() {
        return Err(CmdError::custom("ERR MONITOR isn't allowed for DENY BLOCKING client"));
    }
    let shared = &ctx.client.shared;
    if shared.monitor.swap(true, std::sync::atomic::Ordering::Relaxed) {
        // Already monitoring: Redis ignores it, without a reply.
        ctx.client.reply_mode = ReplyMode::SkipThis;
        return Ok(Reply::ok());
    }
    ctx.core.monitors.add(shared.clone());
    Ok(Reply::ok())
}
