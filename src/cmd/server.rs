//! Connection and server commands: PING, ECHO, HELLO, AUTH, SELECT, CLIENT,
//! CONFIG, COMMAND, INFO, DBSIZE, FLUSH*, SWAPDB, DEBUG, MEMORY, SLOWLOG,
//! LATENCY, WAIT, ROLE, SHUTDOWN…

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::generic::{db_index, help_reply};
use super::util::{eq, int};
use super::{cmd, container, flags, table, Command, CommandSpec, Ctx};
use crate::client::ReplyMode;
use crate::error::{CmdError, CmdResult};
use crate::protocol::{Reply, Resp};
use crate::version::REDIS_VERSION;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("ping", ping, -1, "fast", 0, 0, 0, "@fast @connection")
        .doc("Ping the server", "1.0.0"),
    cmd("echo", echo, 2, "loading stale fast", 0, 0, 0, "@fast @connection")
        .doc("Echo the given string", "1.0.0"),
    cmd("time", time, 1, "loading stale fast", 0, 0, 0, "@fast")
        .doc("Return the current server time", "2.6.0"),
    cmd("info", info, -1, "loading stale", 0, 0, 0, "@slow @dangerous")
        .doc("Get information and statistics about the server", "1.0.0"),
    cmd("config", container, -2, "", 0, 0, 0, "@slow")
        .subs(CONFIG_SUBS)
        .doc("A container for server configuration commands", "2.0.0"),
    cmd("client", container, -2, "", 0, 0, 0, "@slow")
        .subs(CLIENT_SUBS)
        .doc("A container for client connection commands", "2.4.0"),
    cmd("auth", auth, -2, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "@fast @connection")
        .doc("Authenticate to the server", "1.0.0"),
    cmd("hello", hello, -1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "@fast @connection")
        .doc("Handshake with Redis", "6.0.0"),
    cmd("quit", quit, -1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "@fast @connection")
        .doc("Close the connection", "1.0.0"),
    cmd("reset", reset, 1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "@fast @connection")
        .doc("Reset the connection", "6.2.0"),
    cmd("select", select, 2, "loading stale fast", 0, 0, 0, "@fast @connection")
        .doc("Change the selected database for the current connection", "1.0.0"),
    cmd("shutdown", shutdown, -1, "admin noscript loading stale no_multi allow_busy", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Synchronously save the dataset to disk and then shut down the server", "1.0.0"),
    cmd("command", command, -1, "loading stale", 0, 0, 0, "@slow @connection")
        .subs(COMMAND_SUBS)
        .doc("Get array of Redis command details", "2.8.13"),
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
    cmd("debug", debug, -2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("A container for debugging commands", "1.0.0"),
    cmd("memory", container, -2, "", 0, 0, 0, "@slow")
        .subs(MEMORY_SUBS)
        .doc("A container for memory diagnostics commands", "4.0.0"),
    cmd("latency", container, -2, "", 0, 0, 0, "@slow")
        .subs(LATENCY_SUBS)
        .doc("A container for latency diagnostics commands", "2.8.13"),
    cmd("slowlog", container, -2, "", 0, 0, 0, "@slow")
        .subs(SLOWLOG_SUBS)
        .doc("A container for slow log commands", "2.2.12"),
    cmd("waitaof", waitaof, 4, "noscript", 0, 0, 0, "@slow @connection")
        .doc("Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.", "7.2.0"),
    cmd("wait", wait, 3, "noscript", 0, 0, 0, "@slow @connection")
        .doc("Wait for the synchronous replication of all the write commands sent in the context of the current connection", "3.0.0"),
    cmd("role", role, 1, "noscript loading stale fast", 0, 0, 0, "@admin @fast @dangerous")
        .doc("Return the role of the instance in the context of replication", "2.8.12"),
    cmd("monitor", monitor, 1, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Listen for all requests received by the server in real time", "1.0.0"),
];

static CONFIG_SUBS: &[CommandSpec] = &[
    cmd("get", config_get, -3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Get the values of configuration parameters", "2.0.0"),
    cmd("help", config_help, 2, "loading stale", 0, 0, 0, "@slow")
        .doc("Show helpful text about the different subcommands", "5.0.0"),
    cmd("resetstat", config_resetstat, 2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Reset the stats returned by INFO", "2.0.0"),
    cmd("rewrite", config_rewrite, 2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Rewrite the configuration file with the in memory configuration", "2.8.0"),
    cmd("set", config_set, -4, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Set configuration parameters to the given values", "2.0.0"),
];

static CLIENT_SUBS: &[CommandSpec] = &[
    cmd("caching", client_caching, 3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Instruct the server about tracking or not keys in the next request", "6.0.0"),
    cmd("getname", client_getname, 2, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get the current connection name", "2.6.9"),
    cmd("getredir", client_getredir, 2, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get tracking notifications redirection client ID if any", "6.0.0"),
    cmd("help", client_help, 2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Show helpful text about the different subcommands", "5.0.0"),
    cmd("id", client_id, 2, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Returns the client ID for the current connection", "5.0.0"),
    cmd("info", client_info, 2, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Returns information about the current client connection.", "6.2.0"),
    cmd("kill", client_kill, -3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .doc("Kill the connection of a client", "2.4.0"),
    cmd("list", client_list, -2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .doc("Get the list of client connections", "2.4.0"),
    cmd("no-touch", client_no_touch, 3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Controls whether commands sent by the client will alter the LRU/LFU of the keys they access.", "7.2.0"),
    cmd("setinfo", client_setinfo, -4, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Sets information specific to the client or connection.", "7.2.0"),
    cmd("no-evict", client_no_evict, 3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .doc("Set client eviction mode for the current connection", "7.0.0"),
    cmd("pause", client_pause, -3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .doc("Stop processing commands from clients for some time", "2.9.50"),
    cmd("reply", client_reply, 3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Instruct the server whether to reply to commands", "3.2.0"),
    cmd("setname", client_setname, 3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Set the current connection name", "2.6.9"),
    cmd("tracking", client_tracking, -3, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Enable or disable server assisted client side caching support", "6.0.0"),
    cmd("trackinginfo", client_trackinginfo, 2, "noscript loading stale", 0, 0, 0, "@slow @connection")
        .doc("Return information about server assisted client side caching for the current connection", "6.2.0"),
    cmd("unblock", client_unblock, -3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .doc("Unblock a client blocked in a blocking command from a different connection", "5.0.0"),
    cmd("unpause", client_unpause, 2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous @connection")
        .doc("Resume processing of clients that were paused", "6.2.0"),
];

static COMMAND_SUBS: &[CommandSpec] = &[
    cmd("count", command_count, 2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get total number of Redis commands", "2.8.13"),
    cmd("docs", command_docs, -2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get array of specific Redis command documentation", "7.0.0"),
    cmd("getkeys", command_getkeys, -4, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Extract keys given a full Redis command", "2.8.13"),
    cmd("getkeysandflags", command_getkeysandflags, -4, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Extract keys and access flags given a full Redis command", "7.0.0"),
    cmd("help", command_help, 2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Show helpful text about the different subcommands", "5.0.0"),
    cmd("info", command_info, -2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get array of specific Redis command details, or all when no argument is given.", "2.8.13"),
    cmd("list", command_list, -2, "loading stale", 0, 0, 0, "@slow @connection")
        .doc("Get an array of Redis command names", "7.0.0"),
];

static MEMORY_SUBS: &[CommandSpec] = &[
    cmd("doctor", memory_doctor, 2, "", 0, 0, 0, "@slow").doc("Outputs memory problems report", "4.0.0"),
    cmd("help", memory_help, 2, "loading stale", 0, 0, 0, "@slow")
        .doc("Show helpful text about the different subcommands", "4.0.0"),
    cmd("malloc-stats", memory_malloc_stats, 2, "", 0, 0, 0, "@slow").doc("Show allocator internal stats", "4.0.0"),
    cmd("purge", memory_purge, 2, "", 0, 0, 0, "@slow").doc("Ask the allocator to release memory", "4.0.0"),
    cmd("stats", memory_stats, 2, "", 0, 0, 0, "@slow").doc("Show memory usage details", "4.0.0"),
    cmd("usage", memory_usage, -3, "readonly", 2, 2, 1, "@read @slow")
        .doc("Estimate the memory usage of a key", "4.0.0"),
];

static LATENCY_SUBS: &[CommandSpec] = &[
    cmd("doctor", latency_doctor, 2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Return a human readable latency analysis report.", "2.8.13"),
    cmd("help", latency_help, 2, "loading stale", 0, 0, 0, "@slow")
        .doc("Show helpful text about the different subcommands.", "2.8.13"),
    cmd("graph", latency_graph, 3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Return a latency graph for the event.", "2.8.13"),
    cmd("histogram", latency_histogram, -2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Return the cumulative distribution of latencies of a subset of commands or all.", "7.0.0"),
    cmd("history", latency_history, 3, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Return timestamp-latency samples for the event.", "2.8.13"),
    cmd("latest", latency_latest, 2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Return the latest latency samples for all events.", "2.8.13"),
    cmd("reset", latency_reset, -2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Reset latency data for one or more events.", "2.8.13"),
];

static SLOWLOG_SUBS: &[CommandSpec] = &[
    cmd("get", slowlog_get, -2, "admin loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Get the slow log's entries", "2.2.12"),
    cmd("help", slowlog_help, 2, "loading stale", 0, 0, 0, "@slow")
        .doc("Show helpful text about the different subcommands", "6.2.0"),
    cmd("len", slowlog_len, 2, "admin loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Get the slow log's length", "2.2.12"),
    cmd("reset", slowlog_reset, 2, "admin loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Clear all entries from the slow log", "2.2.12"),
];

fn ping(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 2 {
        return Err(CmdError::WrongArity("ping".into()));
    }
    if ctx.client.in_resp2_pubsub() {
        let msg = args.get(1).cloned().unwrap_or_default();
        return Ok(Reply::Array(vec![Reply::bulk_str("pong"), Reply::Bulk(msg)]));
    }
    Ok(match args.get(1) {
        Some(m) => Reply::Bulk(m.clone()),
        None => Reply::status("PONG"),
    })
}

fn echo(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    Ok(Reply::Bulk(args[1].clone()))
}

fn time(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let us = ctx.shared.clock.now_us();
    Ok(Reply::Array(vec![
        Reply::Bulk(Bytes::from((us / 1_000_000).to_string())),
        Reply::Bulk(Bytes::from((us % 1_000_000).to_string())),
    ]))
}

fn select(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let db = db_index(ctx, &args[1])?;
    ctx.client.set_db(db);
    Ok(Reply::ok())
}

fn check_password(ctx: &Ctx<'_>, user: &[u8], pass: &[u8]) -> bool {
    if user != b"default" {
        return false;
    }
    match &ctx.core.config.requirepass {
        None => true,
        Some(pw) => pw[..] == *pass,
    }
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

fn auth(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let (user, pass): (&[u8], &[u8]) = if args.len() == 2 {
        if ctx.core.config.requirepass.is_none() {
            return Err(CmdError::custom(
                "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
            ));
        }
        (b"default", &args[1])
    } else {
        (&args[1], &args[2])
    };
    if check_password(ctx, user, pass) {
        ctx.client.authenticated = true;
        Ok(Reply::ok())
    } else {
        Err(CmdError::custom(WRONGPASS))
    }
}

fn valid_client_name(name: &[u8]) -> Result<(), CmdError> {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(CmdError::custom("ERR Client names cannot contain spaces, newlines or special characters."));
    }
    Ok(())
}

fn hello(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut ver = 0;
    let mut j = 1;
    if args.len() >= 2 {
        ver = crate::num::parse_i64_strict(&args[1])
            .ok_or_else(|| CmdError::custom("ERR Protocol version is not an integer or out of range"))?;
        j = 2;
        if !(2..=3).contains(&ver) {
            return Err(CmdError::custom("NOPROTO unsupported protocol version"));
        }
    }
    let mut creds = None;
    let mut name = None;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if eq(&args[j], "auth") && more >= 2 {
            creds = Some((args[j + 1].clone(), args[j + 2].clone()));
            j += 3;
        } else if eq(&args[j], "setname") && more >= 1 {
            valid_client_name(&args[j + 1])?;
            name = Some(args[j + 1].clone());
            j += 2;
        } else {
            return Err(CmdError::custom(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&args[j])
            )));
        }
    }
    if let Some((u, p)) = creds {
        if !check_password(ctx, &u, &p) {
            return Err(CmdError::custom(WRONGPASS));
        }
        ctx.client.authenticated = true;
    }
    if !ctx.client.authenticated && ctx.core.config.requirepass.is_some() {
        return Err(CmdError::custom("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(n) = name {
        *ctx.client.shared.name.lock() = n;
    }
    if ver == 3 {
        ctx.client.set_resp(Resp::V3);
    } else if ver == 2 {
        ctx.client.set_resp(Resp::V2);
    }
    let proto = if ctx.client.resp == Resp::V3 { 3 } else { 2 };
    Ok(Reply::Map(vec![
        (Reply::bulk_str("server"), Reply::bulk_str("redis")),
        (Reply::bulk_str("version"), Reply::bulk_str(REDIS_VERSION)),
        (Reply::bulk_str("proto"), Reply::Int(proto)),
        (Reply::bulk_str("id"), Reply::Int(ctx.client.id as i64)),
        (Reply::bulk_str("mode"), Reply::bulk_str("standalone")),
        (Reply::bulk_str("role"), Reply::bulk_str("master")),
        (Reply::bulk_str("modules"), Reply::Array(vec![])),
    ]))
}

fn quit(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.client.close = true;
    Ok(Reply::ok())
}

fn reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    super::tx::discard_state(ctx);
    if ctx.core.monitors.remove(ctx.client.id) {
        ctx.client.shared.monitor.store(false, std::sync::atomic::Ordering::Relaxed);
    }
    super::pubsub::unsubscribe_all(ctx);
    ctx.client.set_db(0);
    ctx.client.set_resp(Resp::V2);
    ctx.client.reply_mode = ReplyMode::On;
    *ctx.client.shared.name.lock() = Bytes::new();
    ctx.client.authenticated = ctx.core.config.requirepass.is_none();
    Ok(Reply::status("RESET"))
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
    if ks.sig.track_touches {
        let keys: Vec<Bytes> = ks.dbs[index].keys().cloned().collect();
        for k in keys {
            ks.sig.touch(index, &k);
        }
    }
    ks.sig.dirty += ks.dbs[index].len() as u64;
    ks.dbs[index].clear();
}

fn flushdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    flush_opts(args)?;
    let i = ctx.client.db;
    flush_db(ctx, i);
    Ok(Reply::ok())
}

fn flushall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    flush_opts(args)?;
    for i in 0..ctx.core.ks.dbs.len() {
        flush_db(ctx, i);
    }
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
        let ks = &mut ctx.core.ks;
        if ks.sig.track_touches {
            for i in [a, b] {
                let keys: Vec<Bytes> = ks.dbs[i].keys().cloned().collect();
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

// ---- CLIENT ----

fn client_id(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(ctx.client.id as i64))
}

fn client_getname(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let n = ctx.client.shared.name.lock().clone();
    Ok(if n.is_empty() { Reply::Nil } else { Reply::Bulk(n) })
}

fn client_setname(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    valid_client_name(&args[2])?;
    *ctx.client.shared.name.lock() = args[2].clone();
    Ok(Reply::ok())
}

fn client_setinfo(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() != 4 {
        return Err(CmdError::WrongArity("client|setinfo".into()));
    }
    let slot = if eq(&args[2], "lib-name") {
        valid_client_name(&args[3])
            .map_err(|_| CmdError::custom("ERR lib-name cannot contain spaces, newlines or special characters."))?;
        &ctx.client.shared.lib_name
    } else if eq(&args[2], "lib-ver") {
        valid_client_name(&args[3])
            .map_err(|_| CmdError::custom("ERR lib-ver cannot contain spaces, newlines or special characters."))?;
        &ctx.client.shared.lib_ver
    } else {
        return Err(CmdError::custom(format!("ERR Unrecognized option '{}'", String::from_utf8_lossy(&args[2]))));
    };
    *slot.lock() = args[3].clone();
    Ok(Reply::ok())
}

fn info_text(ctx: &Ctx<'_>, line: String) -> Reply {
    let text = Bytes::from(line);
    if ctx.client.resp == Resp::V3 {
        Reply::Verbatim("txt", text)
    } else {
        Reply::Bulk(text)
    }
}

fn client_info(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let line = ctx.client.shared.info_line(ctx.now_ms(), ctx.client.id + 7);
    Ok(info_text(ctx, format!("{line}\n")))
}

fn client_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut type_filter: Option<String> = None;
    let mut ids: Option<Vec<u64>> = None;
    let mut i = 2;
    while i < args.len() {
        if eq(&args[i], "type") && i + 1 < args.len() {
            let t = String::from_utf8_lossy(&args[i + 1]).to_ascii_lowercase();
            if !matches!(t.as_str(), "normal" | "master" | "replica" | "slave" | "pubsub") {
                return Err(CmdError::custom(format!("ERR Unknown client type '{t}'")));
            }
            type_filter = Some(t);
            i += 2;
        } else if eq(&args[i], "id") && i + 1 < args.len() {
            let mut v = Vec::new();
            i += 1;
            while i < args.len() {
                let id =
                    int(&args[i]).ok().filter(|x| *x > 0).ok_or_else(|| CmdError::custom("ERR Invalid client ID"))?;
                v.push(id as u64);
                i += 1;
            }
            ids = Some(v);
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let now = ctx.now_ms();
    let mut out = String::new();
    for (id, c) in &ctx.core.clients {
        if let Some(ids) = &ids {
            if !ids.contains(id) {
                continue;
            }
        }
        if let Some(t) = &type_filter {
            let is_pubsub = c.subscriptions() > 0;
            let ok = match t.as_str() {
                "pubsub" => is_pubsub,
                "normal" => !is_pubsub,
                _ => false,
            };
            if !ok {
                continue;
            }
        }
        out.push_str(&c.info_line(now, id + 7));
        out.push('\n');
    }
    Ok(info_text(ctx, out))
}

fn client_kill(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let self_id = ctx.client.id;
    if args.len() == 3 {
        // Old form: CLIENT KILL addr:port
        let addr = String::from_utf8_lossy(&args[2]).to_string();
        let target = ctx.core.clients.values().find(|c| c.addr.to_string() == addr).cloned();
        return match target {
            Some(c) => {
                if c.id == self_id {
                    ctx.client.close = true;
                } else {
                    c.kill();
                }
                Ok(Reply::ok())
            }
            None => Err(CmdError::custom("ERR No such client")),
        };
    }
    let mut id_f: Option<u64> = None;
    let mut addr_f: Option<String> = None;
    let mut laddr_f: Option<String> = None;
    let mut type_f: Option<String> = None;
    let mut user_f: Option<Vec<u8>> = None;
    let mut maxage: Option<u64> = None;
    let mut skipme = true;
    let mut i = 2;
    while i < args.len() {
        if i + 1 >= args.len() {
            return Err(CmdError::Syntax);
        }
        let (k, v) = (&args[i], &args[i + 1]);
        if eq(k, "id") {
            let id = int(v)
                .ok()
                .filter(|x| *x > 0)
                .ok_or_else(|| CmdError::custom("ERR client-id should be greater than 0"))?;
            id_f = Some(id as u64);
        } else if eq(k, "addr") {
            addr_f = Some(String::from_utf8_lossy(v).into());
        } else if eq(k, "laddr") {
            laddr_f = Some(String::from_utf8_lossy(v).into());
        } else if eq(k, "type") {
            let t = String::from_utf8_lossy(v).to_ascii_lowercase();
            if !matches!(t.as_str(), "normal" | "master" | "replica" | "slave" | "pubsub") {
                return Err(CmdError::custom(format!("ERR Unknown client type '{}'", String::from_utf8_lossy(v))));
            }
            type_f = Some(t);
        } else if eq(k, "user") {
            user_f = Some(v.to_vec());
        } else if eq(k, "skipme") {
            skipme = if eq(v, "yes") {
                true
            } else if eq(v, "no") {
                false
            } else {
                return Err(CmdError::Syntax);
            };
        } else if eq(k, "maxage") {
            maxage = Some(int(v)?.max(0) as u64);
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    if let Some(u) = &user_f {
        if u != b"default" {
            return Err(CmdError::custom(format!("ERR No such user '{}'", String::from_utf8_lossy(u))));
        }
    }
    let now = ctx.now_ms();
    let mut killed = 0;
    let victims: Vec<_> = ctx.core.clients.values().cloned().collect();
    for c in victims {
        if id_f.is_some_and(|id| id != c.id)
            || addr_f.as_ref().is_some_and(|a| *a != c.addr.to_string())
            || laddr_f.as_ref().is_some_and(|a| *a != c.laddr.to_string())
            || type_f.as_ref().is_some_and(|t| match t.as_str() {
                "pubsub" => c.subscriptions() == 0,
                "normal" => c.subscriptions() > 0,
                _ => true,
            })
            || maxage.is_some_and(|m| now.saturating_sub(c.created_ms) / 1000 < m)
        {
            continue;
        }
        if c.id == self_id {
            if skipme {
                continue;
            }
            ctx.client.close = true;
        } else {
            c.kill();
        }
        killed += 1;
    }
    Ok(Reply::Int(killed))
}

fn client_pause(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let ms = int(&args[2]).map_err(|_| CmdError::custom("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::custom("ERR timeout is negative"));
    }
    let writes_only = match args.get(3) {
        None => false,
        Some(a) if eq(a, "write") => true,
        Some(a) if eq(a, "all") => false,
        Some(_) => return Err(CmdError::custom("ERR CLIENT PAUSE mode must be WRITE or ALL")),
    };
    if args.len() > 4 {
        return Err(CmdError::Syntax);
    }
    let until = ctx.now_ms().saturating_add(ms as u64);
    ctx.shared.pause.set(until, writes_only);
    Ok(Reply::ok())
}

fn client_unpause(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.shared.pause.clear();
    Ok(Reply::ok())
}

fn on_off(a: &[u8]) -> Result<bool, CmdError> {
    if eq(a, "on") {
        Ok(true)
    } else if eq(a, "off") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

fn client_no_evict(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    on_off(&args[2])?;
    Ok(Reply::ok())
}

fn client_no_touch(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    on_off(&args[2])?;
    Ok(Reply::ok())
}

fn client_tracking(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if on_off(&args[2])? {
        return Err(CmdError::custom(
            "ERR CLIENT TRACKING ON is not supported by rlockd (client-side caching is not implemented)",
        ));
    }
    Ok(Reply::ok())
}

fn client_trackinginfo(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Map(vec![
        (Reply::bulk_str("flags"), Reply::Set(vec![Reply::bulk_str("off")])),
        (Reply::bulk_str("redirect"), Reply::Int(-1)),
        (Reply::bulk_str("prefixes"), Reply::Array(vec![])),
    ]))
}

fn client_getredir(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(-1))
}

fn client_caching(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Err(CmdError::custom(
        "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
    ))
}

fn client_reply(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let a = &args[2];
    if eq(a, "on") {
        ctx.client.reply_mode = ReplyMode::On;
        Ok(Reply::ok())
    } else if eq(a, "off") {
        ctx.client.reply_mode = ReplyMode::Off;
        Ok(Reply::ok())
    } else if eq(a, "skip") {
        ctx.client.reply_mode = ReplyMode::Skip;
        Ok(Reply::ok())
    } else {
        Err(CmdError::Syntax)
    }
}

fn client_unblock(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let id = int(&args[2])?;
    let with_error = match args.get(3) {
        None => false,
        Some(a) if eq(a, "timeout") => false,
        Some(a) if eq(a, "error") => true,
        Some(_) => return Err(CmdError::custom("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")),
    };
    if args.len() > 4 {
        return Err(CmdError::Syntax);
    }
    Ok(Reply::Int(i64::from(ctx.core.blocking.unblock_client(id as u64, with_error))))
}

fn client_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply("CLIENT", super::help::CLIENT_HELP))
}

// ---- CONFIG ----

fn config_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let pairs = ctx.core.config.get(&args[2..]);
    Ok(Reply::Map(pairs.into_iter().map(|(k, v)| (Reply::bulk(Bytes::from(k)), Reply::bulk(Bytes::from(v)))).collect()))
}

fn config_set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if !args.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    let pairs: Vec<&[Bytes]> = args[2..].chunks(2).collect();
    for (i, p) in pairs.iter().enumerate() {
        if pairs[..i].iter().any(|q| q[0].eq_ignore_ascii_case(&p[0])) {
            return Err(CmdError::custom(format!(
                "ERR CONFIG SET failed (possibly related to argument '{}') - duplicate parameter",
                String::from_utf8_lossy(&p[0])
            )));
        }
    }
    // All or nothing, as in Redis.
    let mut trial = ctx.core.config.clone();
    for p in &pairs {
        trial.set(&p[0], &p[1])?;
    }
    ctx.core.config = trial;
    ctx.core.config_changed();
    Ok(Reply::ok())
}

fn config_resetstat(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let n = ctx.core.stats.commands.len();
    let st = &mut ctx.core.stats;
    st.commands = vec![Default::default(); n];
    st.total_commands = 0;
    st.total_connections = 0;
    st.expired_keys = 0;
    st.keyspace_hits = 0;
    st.keyspace_misses = 0;
    st.total_error_replies = 0;
    st.error_counts.clear();
    st.pubsub_messages = 0;
    if let Some(s) = ctx.core.scripting.as_mut() {
        s.reset_stats();
    }
    Ok(Reply::ok())
}

fn config_rewrite(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Err(CmdError::custom("ERR The server is running without a config file"))
}

fn config_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply("CONFIG", super::help::CONFIG_HELP))
}

// ---- COMMAND ----

fn command_info_reply(c: &Command) -> Reply {
    let flag_names: Vec<Reply> =
        c.spec.flags.split_whitespace().map(|f| Reply::Status(Bytes::from_static(f.as_bytes()))).collect();
    let acl: Vec<Reply> =
        c.spec.acl.split_whitespace().map(|a| Reply::Status(Bytes::from_static(a.as_bytes()))).collect();
    let mut subs: Vec<&Command> = c.subcommands.values().collect();
    subs.sort_by(|a, b| a.fullname.cmp(&b.fullname));
    let meta = super::meta::get(&c.fullname);
    Reply::Array(vec![
        Reply::bulk_str(&c.fullname),
        Reply::Int(i64::from(c.spec.arity)),
        Reply::Set(flag_names),
        Reply::Int(i64::from(c.spec.first_key)),
        Reply::Int(i64::from(c.spec.last_key)),
        Reply::Int(i64::from(c.spec.step)),
        Reply::Set(acl),
        meta.map_or_else(|| Reply::Set(vec![]), |m| m.tips.clone()),
        meta.map_or_else(|| Reply::Array(vec![]), |m| m.key_specs.clone()),
        Reply::Array(subs.into_iter().map(command_info_reply).collect()),
    ])
}

fn command(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() == 1 {
        return Ok(Reply::Array(table().commands.values().map(command_info_reply).collect()));
    }
    Err(super::unknown_subcommand_error(args))
}

fn command_count(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(table().commands.len() as i64))
}

fn lookup_full(name: &[u8]) -> Option<&'static Command> {
    let lower = name.to_ascii_lowercase();
    match lower.iter().position(|&c| c == b'|') {
        Some(p) => table().get(&lower[..p])?.subcommands.get(&lower[p + 1..]),
        None => table().get(&lower),
    }
}

fn command_info(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() == 2 {
        return Ok(Reply::Array(table().commands.values().map(command_info_reply).collect()));
    }
    Ok(Reply::Array(args[2..].iter().map(|n| lookup_full(n).map_or(Reply::Nil, command_info_reply)).collect()))
}

/// Redis's documentation of the command (see `cmd::meta`), or the table's
/// summary for the commands Redis 7.0 does not have; subcommands are the
/// ones rlockd implements.
fn command_docs_entry(c: &Command) -> (Reply, Reply) {
    let mut m = match super::meta::get(&c.fullname) {
        Some(meta) => meta.docs.clone(),
        None => vec![
            (Reply::bulk_str("summary"), Reply::bulk_str(c.spec.summary)),
            (Reply::bulk_str("since"), Reply::bulk_str(c.spec.since)),
            (Reply::bulk_str("group"), Reply::bulk_str(c.group)),
        ],
    };
    if !c.subcommands.is_empty() {
        let mut subs: Vec<&Command> = c.subcommands.values().collect();
        subs.sort_by(|a, b| a.fullname.cmp(&b.fullname));
        m.push((Reply::bulk_str("subcommands"), Reply::Map(subs.into_iter().map(command_docs_entry).collect())));
    }
    (Reply::bulk_str(&c.fullname), Reply::Map(m))
}

fn command_docs(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() == 2 {
        return Ok(Reply::Map(table().commands.values().map(command_docs_entry).collect()));
    }
    Ok(Reply::Map(args[2..].iter().filter_map(|n| lookup_full(n)).map(command_docs_entry).collect()))
}

fn command_list(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut names: Vec<&Command> = Vec::new();
    for c in table().commands.values() {
        names.push(c);
        names.extend(c.subcommands.values());
    }
    let filter = match args.len() {
        2 => None,
        5 if eq(&args[2], "filterby") => Some((args[3].to_ascii_lowercase(), args[4].clone())),
        _ => return Err(CmdError::Syntax),
    };
    let out = names
        .into_iter()
        .filter(|c| match &filter {
            None => true,
            Some((by, v)) => match &by[..] {
                b"module" => false,
                b"aclcat" => {
                    let want = format!("@{}", String::from_utf8_lossy(v).to_ascii_lowercase());
                    c.spec.acl.split_whitespace().any(|a| a == want)
                }
                b"pattern" => crate::glob::matches(v, c.fullname.as_bytes(), true),
                _ => false,
            },
        })
        .map(|c| Reply::bulk_str(&c.fullname))
        .collect();
    if let Some((by, _)) = &filter {
        if !matches!(&by[..], b"module" | b"aclcat" | b"pattern") {
            return Err(CmdError::Syntax);
        }
    }
    Ok(Reply::Array(out))
}

fn command_getkeys(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let argv = &args[2..];
    let keys = getkeys_checked(argv)?;
    Ok(Reply::bulks(keys.into_iter().map(|(i, _)| argv[i].clone())))
}

/// `COMMAND GETKEYSANDFLAGS`: each key with its key-spec flags.
fn command_getkeysandflags(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let argv = &args[2..];
    let keys = getkeys_checked(argv)?;
    Ok(Reply::Array(
        keys.into_iter().map(|(pos, flags)| Reply::Array(vec![Reply::Bulk(argv[pos].clone()), flags])).collect(),
    ))
}

/// Redis's `getKeysSubcommandImpl` checks, in its order: unknown command,
/// a command without keys, arity, then no keys found (an empty list for
/// commands whose keys are optional, like EVAL).
fn getkeys_checked(argv: &[Bytes]) -> Result<Vec<(usize, Reply)>, CmdError> {
    let c = match table().lookup(argv) {
        super::Lookup::Found(c) => c,
        _ => return Err(CmdError::custom("ERR Invalid command specified")),
    };
    let has_keys = match super::meta::get(&c.fullname) {
        Some(m) => matches!(&m.key_specs, Reply::Set(v) | Reply::Array(v) if !v.is_empty()),
        None => c.spec.first_key > 0 || c.has(flags::MOVABLEKEYS),
    };
    if !has_keys {
        return Err(CmdError::custom("ERR The command has no key arguments"));
    }
    if !super::arity_ok(c.spec.arity, argv.len()) {
        return Err(CmdError::custom("ERR Invalid number of arguments specified for command"));
    }
    let keys = keys_and_flags(c, argv);
    if keys.is_empty() {
        if c.has(flags::NO_MANDATORY_KEYS) {
            return Ok(Vec::new());
        }
        return Err(CmdError::custom("ERR Invalid arguments specified for command"));
    }
    Ok(keys)
}

fn key_flags(names: &[&str]) -> Reply {
    Reply::Set(names.iter().map(|n| Reply::Status(Bytes::copy_from_slice(n.as_bytes()))).collect())
}

/// Key positions with their flags: Redis's own key-getting procedures for
/// SET, BITFIELD and SORT (whose key specs cannot say), the key specs
/// (`cmd::meta`) otherwise.
fn keys_and_flags(c: &Command, argv: &[Bytes]) -> Vec<(usize, Reply)> {
    match c.fullname.as_str() {
        "set" => {
            let get = argv[3..].iter().any(|a| eq(a, "get"));
            return vec![(1, if get { key_flags(&["RW", "access", "update"]) } else { key_flags(&["OW", "update"]) })];
        }
        "bitfield" => {
            let mut readonly = true;
            let mut i = 2;
            while i < argv.len() {
                let rem = argv.len() - i - 1;
                if eq(&argv[i], "get") && rem >= 2 {
                    i += 2;
                } else if eq(&argv[i], "overflow") && rem >= 1 {
                    i += 1;
                } else {
                    readonly = false;
                    break;
                }
                i += 1;
            }
            let flags = if readonly { key_flags(&["RO", "access"]) } else { key_flags(&["RW", "access", "update"]) };
            return vec![(1, flags)];
        }
        "sort" | "sort_ro" => {
            let keys = if c.fullname == "sort" { super::sort::sort_keys(argv) } else { vec![1] };
            return keys
                .into_iter()
                .map(|p| (p, if p == 1 { key_flags(&["RO", "access"]) } else { key_flags(&["OW", "update"]) }))
                .collect();
        }
        _ => {}
    }
    let specs = match super::meta::get(&c.fullname).map(|m| &m.key_specs) {
        Some(Reply::Set(specs) | Reply::Array(specs)) => specs,
        // The 7.2 commands rlockd adds: positions from the table.
        _ => return table_keys(c, argv).into_iter().map(|p| (p, Reply::Set(Vec::new()))).collect(),
    };
    let mut out = Vec::new();
    for spec in specs {
        let Some(found) = spec_keys(spec, argv) else { return Vec::new() };
        let flags = map_get(spec, "flags").cloned().unwrap_or(Reply::Set(Vec::new()));
        out.extend(found.into_iter().map(|p| (p, flags.clone())));
    }
    out
}

fn map_get<'a>(m: &'a Reply, key: &str) -> Option<&'a Reply> {
    let Reply::Map(pairs) = m else { return None };
    pairs.iter().find(|(k, _)| matches!(k, Reply::Bulk(b) if &b[..] == key.as_bytes())).map(|(_, v)| v)
}

fn map_int(m: &Reply, key: &str) -> Option<i64> {
    match map_get(m, key)? {
        Reply::Int(n) => Some(*n),
        _ => None,
    }
}

/// Redis's `getKeysUsingKeySpecs` for one spec; None for an invalid spec.
fn spec_keys(spec: &Reply, argv: &[Bytes]) -> Option<Vec<usize>> {
    let argc = argv.len() as i64;
    let bs = map_get(spec, "begin_search")?;
    let bs_spec = map_get(bs, "spec")?;
    let mut first = match map_get(bs, "type")? {
        Reply::Bulk(t) if &t[..] == b"index" => map_int(bs_spec, "index")?,
        Reply::Bulk(t) if &t[..] == b"keyword" => {
            let Reply::Bulk(kw) = map_get(bs_spec, "keyword")? else { return None };
            let from = map_int(bs_spec, "startfrom")?;
            let start = if from > 0 { from } else { argc + from };
            let end = if from > 0 { argc - 1 } else { 0 };
            let mut i = start;
            let mut found = 0;
            loop {
                if i >= argc || i < 1 {
                    break;
                }
                if argv[i as usize].eq_ignore_ascii_case(kw) {
                    found = i + 1;
                    break;
                }
                if i == end {
                    break;
                }
                i = if start <= end { i + 1 } else { i - 1 };
            }
            if found == 0 {
                return Some(Vec::new());
            }
            found
        }
        _ => return None,
    };
    let fk = map_get(spec, "find_keys")?;
    let fk_spec = map_get(fk, "spec")?;
    let (last, step) = match map_get(fk, "type")? {
        Reply::Bulk(t) if &t[..] == b"range" => {
            let lastkey = map_int(fk_spec, "lastkey")?;
            let step = map_int(fk_spec, "keystep")?;
            let limit = map_int(fk_spec, "limit")?;
            let last = if lastkey >= 0 {
                first + lastkey
            } else if limit == 0 {
                argc + lastkey
            } else {
                first + ((argc - first) / limit + lastkey)
            };
            (last, step)
        }
        Reply::Bulk(t) if &t[..] == b"keynum" => {
            let idx = map_int(fk_spec, "keynumidx")?;
            if idx >= argc - first {
                return None;
            }
            let n = crate::num::parse_i64_strict(&argv[(first + idx) as usize]).filter(|n| *n >= 0)?;
            first += map_int(fk_spec, "firstkey")?;
            (first + n - 1, map_int(fk_spec, "keystep")?)
        }
        _ => return None,
    };
    if last >= argc || last < first || first >= argc {
        return if last == first - 1 { Some(Vec::new()) } else { None };
    }
    Some((first..=last).step_by(step.max(1) as usize).map(|i| i as usize).collect())
}

/// Key positions from the table's first/last/step (the commands Redis 7.0
/// has no key specs for: rlockd's 7.2 additions).
fn table_keys(c: &Command, argv: &[Bytes]) -> Vec<usize> {
    let (first, last, step) = (c.spec.first_key, c.spec.last_key, c.spec.step);
    if first <= 0 {
        return Vec::new();
    }
    let last = if last < 0 { argv.len() as i32 + last } else { last };
    (first..=last).step_by(step.max(1) as usize).map(|i| i as usize).filter(|i| *i < argv.len()).collect()
}

fn command_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply("COMMAND", super::help::COMMAND_HELP))
}

// ---- INFO ----

const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];

/// `uname`'s "sysname release machine", as Redis prints `os`.
fn os_name() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let sysname = if cfg!(target_os = "linux") { "Linux" } else { std::env::consts::OS };
    format!("{sysname} {} {}", release.trim(), std::env::consts::ARCH)
}

/// Physical memory in bytes (`/proc/meminfo`), 0 if unknown.
fn total_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?.to_string();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// User and system CPU seconds of this process (`/proc/self/stat`).
fn cpu_seconds() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return (0.0, 0.0) };
    // Fields after the parenthesised command name; utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (ticks(11), ticks(12))
}

/// Redis's `bytesToHuman`: B, K, M, G… with two decimals.
fn bytes_human(n: u64) -> String {
    let n = n as f64;
    let units = ["B", "K", "M", "G", "T", "P"];
    let mut i = 0;
    let mut v = n;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{}B", n as u64)
    } else {
        format!("{v:.2}{}", units[i])
    }
}

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096)
}

fn info_section(ctx: &Ctx<'_>, name: &str, out: &mut String) -> bool {
    let now = ctx.now_ms();
    let up = now.saturating_sub(ctx.shared.started_ms) / 1000;
    let core = &*ctx.core;
    macro_rules! l { ($($t:tt)*) => {{ let _ = write!(out, $($t)*); out.push_str("\r\n"); }} }
    match name {
        "server" => {
            l!("# Server");
            l!("redis_version:{REDIS_VERSION}");
            l!("redis_git_sha1:00000000");
            l!("redis_git_dirty:0");
            l!("redis_build_id:0");
            l!("redis_mode:standalone");
            l!("os:{}", os_name());
            l!("arch_bits:64");
            l!("monotonic_clock:POSIX clock_gettime");
            l!("multiplexing_api:epoll");
            l!("atomicvar_api:c11-builtin");
            l!("gcc_version:0.0.0");
            l!("process_id:{}", std::process::id());
            l!("process_supervised:no");
            l!("run_id:{}", ctx.shared.run_id);
            l!("tcp_port:{}", ctx.shared.local_addr.port());
            l!("server_time_usec:{}", ctx.shared.clock.now_us());
            l!("uptime_in_seconds:{up}");
            l!("uptime_in_days:{}", up / 86400);
            l!("hz:{}", core.config.hz);
            l!("configured_hz:{}", core.config.hz);
            l!("lru_clock:{}", (now / 1000) & ((1 << 24) - 1));
            l!("executable:{}", std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default());
            l!("config_file:");
            l!("io_threads_active:0");
            l!("rlockd_version:{}", env!("CARGO_PKG_VERSION"));
        }
        "clients" => {
            let blocked = core.clients.values().filter(|c| c.blocked.load(Ordering::Relaxed)).count();
            l!("# Clients");
            l!("connected_clients:{}", core.clients.len());
            l!("cluster_connections:0");
            l!("maxclients:{}", core.config.get_str("maxclients"));
            l!("client_recent_max_input_buffer:0");
            l!("client_recent_max_output_buffer:0");
            l!("blocked_clients:{blocked}");
            l!("tracking_clients:0");
            l!("clients_in_timeout_table:{blocked}");
        }
        "memory" => {
            let rss = rss_bytes();
            let (lua, funcs, scripts) = core
                .scripting
                .as_ref()
                .map_or((0, 0, 0), |s| (s.eval_memory(), s.functions_memory(), s.script_count()));
            let maxmemory: u64 = core.config.get_str("maxmemory").parse().unwrap_or(0);
            let total = total_system_memory();
            l!("# Memory");
            l!("used_memory:{rss}");
            l!("used_memory_human:{}", bytes_human(rss));
            l!("used_memory_rss:{rss}");
            l!("used_memory_rss_human:{}", bytes_human(rss));
            l!("used_memory_peak:{rss}");
            l!("used_memory_peak_human:{}", bytes_human(rss));
            l!("used_memory_peak_perc:100.00%");
            l!("used_memory_overhead:0");
            l!("used_memory_startup:0");
            l!("used_memory_dataset:{rss}");
            l!("used_memory_dataset_perc:100.00%");
            l!("allocator_allocated:{rss}");
            l!("allocator_active:{rss}");
            l!("allocator_resident:{rss}");
            l!("total_system_memory:{total}");
            l!("total_system_memory_human:{}", bytes_human(total));
            l!("used_memory_lua:{lua}");
            l!("used_memory_vm_eval:{lua}");
            l!("used_memory_lua_human:{}", bytes_human(lua as u64));
            l!("used_memory_scripts_eval:0");
            l!("number_of_cached_scripts:{scripts}");
            l!("number_of_functions:{}", core.scripting.as_ref().map_or(0, |s| s.libraries.function_count()));
            l!("number_of_libraries:{}", core.scripting.as_ref().map_or(0, |s| s.libraries.libs.len()));
            l!("used_memory_vm_functions:{funcs}");
            l!("used_memory_vm_total:{}", lua + funcs);
            l!("used_memory_vm_total_human:{}", bytes_human((lua + funcs) as u64));
            l!("used_memory_functions:0");
            l!("used_memory_scripts:0");
            l!("used_memory_scripts_human:0B");
            l!("maxmemory:{maxmemory}");
            l!("maxmemory_human:{}", bytes_human(maxmemory));
            l!("maxmemory_policy:{}", core.config.get_str("maxmemory-policy"));
            l!("allocator_frag_ratio:1.00");
            l!("allocator_frag_bytes:0");
            l!("allocator_rss_ratio:1.00");
            l!("allocator_rss_bytes:0");
            l!("rss_overhead_ratio:1.00");
            l!("rss_overhead_bytes:0");
            l!("mem_fragmentation_ratio:1.00");
            l!("mem_fragmentation_bytes:0");
            l!("mem_not_counted_for_evict:0");
            l!("mem_replication_backlog:0");
            l!("mem_total_replication_buffers:0");
            l!("mem_clients_slaves:0");
            l!("mem_clients_normal:0");
            l!("mem_cluster_links:0");
            l!("mem_aof_buffer:0");
            l!("mem_allocator:{}", crate::version::allocator_name());
            l!("active_defrag_running:0");
            l!("lazyfree_pending_objects:0");
            l!("lazyfreed_objects:0");
        }
        "persistence" => {
            l!("# Persistence");
            l!("loading:0");
            l!("async_loading:0");
            l!("current_cow_peak:0");
            l!("current_cow_size:0");
            l!("current_cow_size_age:0");
            l!("current_fork_perc:0.00");
            l!("current_save_keys_processed:0");
            l!("current_save_keys_total:0");
            l!("rdb_changes_since_last_save:{}", core.ks.sig.dirty);
            l!("rdb_bgsave_in_progress:0");
            l!("rdb_last_save_time:{}", core.lastsave);
            l!("rdb_last_bgsave_status:ok");
            l!("rdb_last_bgsave_time_sec:-1");
            l!("rdb_current_bgsave_time_sec:-1");
            l!("rdb_saves:0");
            l!("rdb_last_cow_size:0");
            l!("rdb_last_load_keys_expired:0");
            l!("rdb_last_load_keys_loaded:0");
            l!("aof_enabled:0");
            l!("aof_rewrite_in_progress:0");
            l!("aof_rewrite_scheduled:0");
            l!("aof_last_rewrite_time_sec:-1");
            l!("aof_current_rewrite_time_sec:-1");
            l!("aof_last_bgrewrite_status:ok");
            l!("aof_rewrites:0");
            l!("aof_rewrites_consecutive_failures:0");
            l!("aof_last_write_status:ok");
            l!("aof_last_cow_size:0");
            l!("module_fork_in_progress:0");
            l!("module_fork_last_cow_size:0");
        }
        "stats" => {
            let st = &core.stats;
            let net = &ctx.shared.net;
            l!("# Stats");
            l!("total_connections_received:{}", st.total_connections);
            l!("total_commands_processed:{}", st.total_commands);
            l!("instantaneous_ops_per_sec:{}", st.instantaneous_ops());
            l!("total_net_input_bytes:{}", net.input_bytes.load(Ordering::Relaxed));
            l!("total_net_output_bytes:{}", net.output_bytes.load(Ordering::Relaxed));
            l!("total_net_repl_input_bytes:0");
            l!("total_net_repl_output_bytes:0");
            l!("instantaneous_input_kbps:0.00");
            l!("instantaneous_output_kbps:0.00");
            l!("instantaneous_input_repl_kbps:0.00");
            l!("instantaneous_output_repl_kbps:0.00");
            l!("rejected_connections:{}", st.rejected_connections);
            l!("sync_full:0");
            l!("sync_partial_ok:0");
            l!("sync_partial_err:0");
            l!("expired_keys:{}", st.expired_keys);
            l!("expired_stale_perc:0.00");
            l!("expired_time_cap_reached_count:0");
            l!("expire_cycle_cpu_milliseconds:0");
            l!("evicted_keys:0");
            l!("evicted_clients:0");
            l!("total_eviction_exceeded_time:0");
            l!("current_eviction_exceeded_time:0");
            l!("keyspace_hits:{}", st.keyspace_hits);
            l!("keyspace_misses:{}", st.keyspace_misses);
            l!("pubsub_channels:{}", core.pubsub.channel_count());
            l!("pubsub_patterns:{}", core.pubsub.pattern_count());
            l!("pubsubshard_channels:{}", core.pubsub.shard_channel_count());
            l!("latest_fork_usec:0");
            l!("total_forks:0");
            l!("migrate_cached_sockets:0");
            l!("slave_expires_tracked_keys:0");
            l!("active_defrag_hits:0");
            l!("active_defrag_misses:0");
            l!("active_defrag_key_hits:0");
            l!("active_defrag_key_misses:0");
            l!("total_active_defrag_time:0");
            l!("current_active_defrag_time:0");
            l!("tracking_total_keys:0");
            l!("tracking_total_items:0");
            l!("tracking_total_prefixes:0");
            l!("unexpected_error_replies:0");
            l!("total_error_replies:{}", st.total_error_replies);
            l!("dump_payload_sanitizations:0");
            l!("total_reads_processed:{}", net.reads.load(Ordering::Relaxed));
            l!("total_writes_processed:{}", net.writes.load(Ordering::Relaxed));
            l!("io_threaded_reads_processed:0");
            l!("io_threaded_writes_processed:0");
            l!("reply_buffer_shrinks:0");
            l!("reply_buffer_expands:0");
        }
        "replication" => {
            l!("# Replication");
            l!("role:master");
            l!("connected_slaves:0");
            l!("master_failover_state:no-failover");
            l!("master_replid:{}", ctx.shared.run_id);
            l!("master_replid2:0000000000000000000000000000000000000000");
            l!("master_repl_offset:0");
            l!("second_repl_offset:-1");
            l!("repl_backlog_active:0");
            l!("repl_backlog_size:1048576");
            l!("repl_backlog_first_byte_offset:0");
            l!("repl_backlog_histlen:0");
        }
        "cpu" => {
            let (user, sys) = cpu_seconds();
            l!("# CPU");
            l!("used_cpu_sys:{sys:.6}");
            l!("used_cpu_user:{user:.6}");
            l!("used_cpu_sys_children:0.000000");
            l!("used_cpu_user_children:0.000000");
            l!("used_cpu_sys_main_thread:{sys:.6}");
            l!("used_cpu_user_main_thread:{user:.6}");
        }
        "modules" => l!("# Modules"),
        "errorstats" => {
            l!("# Errorstats");
            for (prefix, n) in &core.stats.error_counts {
                l!("errorstat_{}:count={}", String::from_utf8_lossy(prefix), n);
            }
        }
        "cluster" => {
            l!("# Cluster");
            l!("cluster_enabled:0");
        }
        "keyspace" => {
            l!("# Keyspace");
            for (i, db) in core.ks.dbs.iter().enumerate() {
                if !db.is_empty() {
                    l!("db{}:keys={},expires={},avg_ttl=0", i, db.len(), db.expires_len());
                }
            }
        }
        "commandstats" => {
            l!("# Commandstats");
            for (id, st) in core.stats.commands.iter().enumerate() {
                if st.calls == 0 && st.rejected == 0 && st.failed == 0 {
                    continue;
                }
                let per = if st.calls > 0 { st.usec as f64 / st.calls as f64 } else { 0.0 };
                l!(
                    "cmdstat_{}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}",
                    table().names[id],
                    st.calls,
                    st.usec,
                    per,
                    st.rejected,
                    st.failed
                );
            }
        }
        "latencystats" => {
            l!("# Latencystats");
            let names: Vec<String> = core
                .config
                .latency_percentiles
                .iter()
                .map(|p| format!("p{}", crate::config::fmt_percentile(*p)))
                .collect();
            for (id, st) in core.stats.commands.iter().enumerate() {
                if st.latency_samples() == 0 {
                    continue;
                }
                let values: Vec<String> = core
                    .config
                    .latency_percentiles
                    .iter()
                    .zip(&names)
                    .map(|(p, n)| format!("{n}={:.3}", st.latency_percentile_ns(*p) as f64 / 1000.0))
                    .collect();
                l!("latency_percentiles_usec_{}:{}", table().names[id], values.join(","));
            }
        }
        "scriptstats" => {
            // rlockd's own section: where each cached script's time goes.
            l!("# Scriptstats");
            if let Some(scripting) = core.scripting.as_ref() {
                for (sha, st) in scripting.script_stats() {
                    if st.calls == 0 {
                        continue;
                    }
                    let usec = st.nanos as f64 / 1000.0;
                    let redis_usec = st.redis_nanos as f64 / 1000.0;
                    l!(
                        "script_{sha}:calls={},errors={},usec={:.0},usec_per_call={:.2},redis_calls={},redis_calls_per_call={:.2},redis_usec={:.0},lua_usec={:.0}",
                        st.calls,
                        st.errors,
                        usec,
                        usec / st.calls as f64,
                        st.redis_calls,
                        st.redis_calls as f64 / st.calls as f64,
                        redis_usec,
                        (usec - redis_usec).max(0.0)
                    );
                }
            }
        }
        _ => return false,
    }
    true
}

fn info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut sections: Vec<String> = Vec::new();
    let requested: Vec<String> = args[1..].iter().map(|a| String::from_utf8_lossy(a).to_ascii_lowercase()).collect();
    if requested.is_empty() || requested.iter().any(|s| s == "default") {
        sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string()));
    }
    for r in &requested {
        match r.as_str() {
            "all" | "everything" => {
                sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string()));
                sections.push("commandstats".into());
                sections.push("latencystats".into());
                sections.push("scriptstats".into());
            }
            "default" => {}
            other => sections.push(other.to_string()),
        }
    }
    let mut seen = Vec::new();
    let mut out = String::new();
    for s in sections {
        if seen.contains(&s) {
            continue;
        }
        let mut part = String::new();
        if info_section(ctx, &s, &mut part) {
            if !out.is_empty() {
                out.push_str("\r\n");
            }
            out.push_str(&part);
        }
        seen.push(s);
    }
    Ok(info_text(ctx, out))
}

// ---- DEBUG / MEMORY / LATENCY / SLOWLOG ----

fn debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    match sub.as_str() {
        "sleep" if args.len() == 3 => {
            let secs = crate::num::parse_double(&args[2]).unwrap_or(0.0).max(0.0);
            // Like Redis: the whole server sleeps (the core lock is held).
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
            Ok(Reply::ok())
        }
        "set-active-expire" if args.len() == 3 => {
            ctx.core.active_expire = int(&args[2])? != 0;
            Ok(Reply::ok())
        }
        "object" if args.len() == 3 => {
            let mut db = ctx.db();
            let Some(e) = db.entry(&args[2]) else {
                return Err(CmdError::NoSuchKey);
            };
            Ok(Reply::Status(Bytes::from(format!(
                "Value at:0x0 refcount:1 encoding:{} serializedlength:{} lru:0 lru_seconds_idle:0",
                e.encoding(),
                e.value.approx_size()
            ))))
        }
        "reload" | "change-repl-id" | "quicklist-packed-threshold" | "set-skip-checksum-validation" => Ok(Reply::ok()),
        "jmap" | "log" => Ok(Reply::ok()),
        "help" => Ok(help_reply(
            "DEBUG",
            &[
                "OBJECT <key>",
                "    Show low level info about the key and associated value.",
                "RELOAD",
                "    Accepted; the dataset is kept as is.",
                "SET-ACTIVE-EXPIRE <0|1>",
                "    Setting it to 0 disables active expiry of keys.",
                "SLEEP <seconds>",
                "    Stop the server for <seconds>. Decimals allowed.",
            ],
        )),
        _ => Err(CmdError::custom(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            String::from_utf8_lossy(&args[1])
        ))),
    }
}

fn memory_usage(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() != 3 && !(args.len() == 5 && eq(&args[3], "samples")) {
        return Err(CmdError::Syntax);
    }
    if args.len() == 5 {
        int(&args[4])?;
    }
    let key_len = args[2].len();
    Ok(ctx
        .with_read_lookups(false, |ctx| ctx.db().get(&args[2]).map(|v| v.approx_size()))
        .map_or(Reply::Nil, |size| Reply::Int((size + key_len + 56) as i64)))
}

fn memory_stats(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let rss = rss_bytes() as i64;
    Ok(Reply::Map(vec![
        (Reply::bulk_str("peak.allocated"), Reply::Int(rss)),
        (Reply::bulk_str("total.allocated"), Reply::Int(rss)),
        (Reply::bulk_str("keys.count"), Reply::Int(ctx.core.ks.total_keys() as i64)),
    ]))
}

fn memory_doctor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(info_text(
        ctx,
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base."
            .into(),
    ))
}

fn memory_purge(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::ok())
}

fn memory_malloc_stats(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(info_text(ctx, "Stats not supported for the current allocator".into()))
}

fn memory_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply("MEMORY", super::help::MEMORY_HELP))
}

fn latency_latest(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(vec![]))
}

fn latency_history(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(vec![]))
}

/// rlockd records no latency events (`latency-monitor-threshold` events).
fn latency_graph(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    Err(CmdError::custom(format!("ERR No samples available for event '{}'", String::from_utf8_lossy(&args[2]))))
}

/// `LATENCY HISTOGRAM [command ...]`: per command, its calls and the
/// cumulative count at each power-of-two latency bound (µs), as Redis's
/// hdr-histogram walk prints them.
fn latency_histogram(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let t = table();
    let mut chosen: Vec<&Command> = Vec::new();
    if args.len() == 2 {
        for c in t.commands.values() {
            chosen.push(c);
            chosen.extend(c.subcommands.values());
        }
    } else {
        for name in &args[2..] {
            if let Some(c) = lookup_full(name) {
                chosen.push(c);
                chosen.extend(c.subcommands.values());
            }
        }
    }
    let mut out = Vec::new();
    for c in chosen {
        let st = &ctx.core.stats.commands[c.id];
        let total = st.latency_samples();
        if total == 0 {
            continue;
        }
        let mut cdf = Vec::new();
        let mut cumulative = 0;
        for (b, n) in st.latency.iter().enumerate() {
            if *n == 0 {
                continue;
            }
            cumulative += n;
            cdf.push((Reply::Int(hdr_label_usec(1024 << b) as i64), Reply::Int(cumulative as i64)));
        }
        out.push((
            Reply::bulk_str(&c.fullname),
            Reply::Map(vec![
                (Reply::bulk_str("calls"), Reply::Int(total as i64)),
                (Reply::bulk_str("histogram_usec"), Reply::Map(cdf)),
            ]),
        ));
    }
    Ok(Reply::Map(out))
}

/// The µs label Redis prints for a power-of-two bound of `ns`: the highest
/// value equivalent to it in an hdr histogram with 2 significant digits.
fn hdr_label_usec(ns: u64) -> u64 {
    let magnitude = 63 - ns.leading_zeros() as u64;
    let granularity = 1u64 << magnitude.saturating_sub(7);
    (ns + granularity - 1) / 1000
}

fn latency_reset(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(0))
}

fn latency_doctor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(info_text(ctx, "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sleep better.\n".into()))
}

fn latency_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply("LATENCY", super::help::LATENCY_HELP))
}

fn slowlog_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let count = match args.get(2) {
        None => 10,
        Some(a) => {
            let n = int(a).map_err(|_| CmdError::custom("ERR count should be greater than or equal to -1"))?;
            if n < -1 {
                return Err(CmdError::custom("ERR count should be greater than or equal to -1"));
            }
            if n == -1 {
                usize::MAX
            } else {
                n as usize
            }
        }
    };
    Ok(Reply::Array(
        ctx.core
            .stats
            .slowlog
            .iter()
            .take(count)
            .map(|e| {
                Reply::Array(vec![
                    Reply::Int(e.id as i64),
                    Reply::Int(e.time_secs as i64),
                    Reply::Int(e.duration_us as i64),
                    Reply::bulks(e.args.iter().cloned()),
                    Reply::bulk_str(&e.addr),
                    Reply::Bulk(e.name.clone()),
                ])
            })
            .collect(),
    ))
}

fn slowlog_len(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(ctx.core.stats.slowlog.len() as i64))
}

fn slowlog_reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.core.stats.slowlog.clear();
    Ok(Reply::ok())
}

fn slowlog_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply("SLOWLOG", super::help::SLOWLOG_HELP))
}

// ---- replication-shaped answers of a lone master ----

fn wait(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    int(&args[1])?;
    let t = int(&args[2]).map_err(|_| CmdError::custom("ERR timeout is not an integer or out of range"))?;
    if t < 0 {
        return Err(CmdError::custom("ERR timeout is negative"));
    }
    Ok(Reply::Int(0))
}

fn waitaof(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let numlocal = int(&args[1])?;
    int(&args[2])?;
    let t = int(&args[3]).map_err(|_| CmdError::custom("ERR timeout is not an integer or out of range"))?;
    if t < 0 {
        return Err(CmdError::custom("ERR timeout is negative"));
    }
    if numlocal > 0 && ctx.core.config.get_str("appendonly") != "yes" {
        return Err(CmdError::custom("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."));
    }
    Ok(Reply::Array(vec![Reply::Int(0), Reply::Int(0)]))
}

fn role(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(vec![Reply::bulk_str("master"), Reply::Int(0), Reply::Array(vec![])]))
}

/// `MONITOR`: from now on this client also receives a line for every
/// command the server runs (see [`crate::monitor`]).
fn monitor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx.client.in_exec || ctx.client.multi.is_some() {
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
