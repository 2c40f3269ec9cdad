//! Diagnostics: DEBUG, MEMORY, LATENCY, SLOWLOG, and Valkey 8.1's
//! COMMANDLOG (the slow log and two more: large requests, large replies).

use bytes::Bytes;

use super::help::help_reply;
use super::util::{eq, info_text, int};
use super::{cmd, container, table, Command, CommandSpec, Ctx};
use crate::core::LogKind;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("debug", debug, -2, "admin noscript loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .hidden_flags("protected")
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
    cmd("commandlog", container, -2, "", 0, 0, 0, "@slow")
        .subs(COMMANDLOG_SUBS)
        .valkey_only("A container for command log commands.", "8.1.0"),
];

static COMMANDLOG_SUBS: &[CommandSpec] = &[
    cmd("get", commandlog_get, 4, "admin loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .valkey_only("Returns the specified command log's entries.", "8.1.0"),
    cmd("help", commandlog_help, 2, "loading stale", 0, 0, 0, "@slow")
        .valkey_only("Show helpful text about the different subcommands", "8.1.0"),
    cmd("len", commandlog_len, 3, "admin loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .valkey_only("Returns the number of entries in the specified type of command log.", "8.1.0"),
    cmd("reset", commandlog_reset, 3, "admin loading stale", 0, 0, 0, "@admin @slow @dangerous")
        .valkey_only("Clears all entries from the specified type of command log.", "8.1.0"),
];

static MEMORY_SUBS: &[CommandSpec] = &[
    cmd("doctor", memory_doctor, 2, "", 0, 0, 0, "@slow").doc("Outputs memory problems report", "4.0.0"),
    cmd("help", memory_help, 2, "loading stale", 0, 0, 0, "@slow")
        .doc("Show helpful text about the different subcommands", "4.0.0"),
    cmd("malloc-stats", memory_malloc_stats, 2, "", 0, 0, 0, "@slow")
        .in_valkey("loading")
        .doc("Show allocator internal stats", "4.0.0"),
    cmd("purge", memory_purge, 2, "", 0, 0, 0, "@slow")
        .in_valkey("loading")
        .doc("Ask the allocator to release memory", "4.0.0"),
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

fn debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    match sub.as_str() {
        "sleep" if args.len() == 3 => {
            let secs = crate::num::parse_double(&args[2]).unwrap_or(0.0).max(0.0);
            // Like Redis: the whole server sleeps (the core lock is held).
            match ctx.shared.io.get() {
                Some(io) => io.sleep(std::time::Duration::from_secs_f64(secs.min(3600.0))),
                None if secs == 0.0 => {}
                None => return Err(CmdError::custom("ERR DEBUG SLEEP needs a server with an event loop")),
            }
            Ok(Reply::ok())
        }
        "set-active-expire" if args.len() == 3 => {
            ctx.core.active_expire = int(&args[2])? != 0;
            Ok(Reply::ok())
        }
        "object" if args.len() == 3 => {
            // Redis prints the access word as its 24-bit LRU clock (the LFU
            // word under an LFU policy) and the idle time estimated from it
            // either way.
            const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;
            let clock = crate::db::lru_stamp(ctx.now_ms()) & LRU_CLOCK_MAX;
            let profile = ctx.core.profile();
            let mut db = ctx.db();
            let limits = *db.limits();
            let Some(e) = db.entry_notouch(&args[2]) else {
                return Err(CmdError::NoSuchKey);
            };
            let lru = e.lru & LRU_CLOCK_MAX;
            let idle = if clock >= lru { clock - lru } else { clock + (LRU_CLOCK_MAX - lru) };
            Ok(Reply::Status(Bytes::from(format!(
                "Value at:0x0 refcount:1 encoding:{} serializedlength:{} lru:{lru} lru_seconds_idle:{idle}",
                super::generic::encoding_in(e, profile, &limits),
                e.value.approx_size()
            ))))
        }
        "reload" => {
            reload(ctx);
            Ok(Reply::ok())
        }
        "change-repl-id" | "quicklist-packed-threshold" | "set-skip-checksum-validation" => Ok(Reply::ok()),
        "jmap" | "log" => Ok(Reply::ok()),
        "help" => Ok(help_reply(
            ctx.core.profile(),
            "DEBUG",
            &[
                "OBJECT <key>",
                "    Show low level info about the key and associated value.",
                "RELOAD",
                "    Re-encode every value as a save and a load would (the data are kept).",
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
        .with_read_lookups(false, |ctx| ctx.db().entry_notouch(&args[2]).map(|e| e.value.approx_size()))
        .map_or(Reply::Nil, |size| Reply::Int((size + key_len + 56) as i64)))
}

fn memory_stats(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let rss = crate::memory::rss() as i64;
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

fn memory_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply(ctx.core.profile(), "MEMORY", super::help::MEMORY_HELP))
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
            if let Some(c) = super::command::lookup_full(name) {
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

fn latency_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply(ctx.core.profile(), "LATENCY", super::help::LATENCY_HELP))
}

fn slowlog_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let count = match args.get(2) {
        None => 10,
        Some(a) => log_count(a).ok_or(CmdError::CountBelowMinusOne)?,
    };
    Ok(log_entries(ctx, LogKind::Slow, count))
}

/// A `GET` count: -1 for all.
fn log_count(a: &Bytes) -> Option<usize> {
    match int(a).ok()? {
        -1 => Some(usize::MAX),
        n if n >= 0 => Some(n as usize),
        _ => None,
    }
}

fn log_entries(ctx: &Ctx<'_>, kind: LogKind, count: usize) -> Reply {
    Reply::Array(
        ctx.core.stats.commandlog[kind as usize]
            .entries
            .iter()
            .take(count)
            .map(|e| {
                Reply::Array(vec![
                    Reply::Int(e.id as i64),
                    Reply::Int(e.time_secs as i64),
                    Reply::Int(e.value as i64),
                    Reply::bulks(e.args.iter().cloned()),
                    Reply::bulk_str(&e.addr),
                    Reply::Bulk(e.name.clone()),
                ])
            })
            .collect(),
    )
}

fn slowlog_len(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(ctx.core.stats.commandlog[LogKind::Slow as usize].entries.len() as i64))
}

fn slowlog_reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.core.stats.commandlog[LogKind::Slow as usize].entries.clear();
    Ok(Reply::ok())
}

/// A `COMMANDLOG` type (any case).
fn log_kind(a: &Bytes) -> Result<LogKind, CmdError> {
    const KINDS: [LogKind; 3] = [LogKind::Slow, LogKind::LargeRequest, LogKind::LargeReply];
    LogKind::NAMES
        .iter()
        .position(|n| eq(a, n))
        .map(|i| KINDS[i])
        .ok_or_else(|| CmdError::custom("ERR type should be one of the following: slow, large-request, large-reply"))
}

fn commandlog_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let count =
        log_count(&args[2]).ok_or_else(|| CmdError::custom("ERR count should be greater than or equal to -1"))?;
    let kind = log_kind(&args[3])?;
    Ok(log_entries(ctx, kind, count))
}

fn commandlog_len(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let kind = log_kind(&args[2])?;
    Ok(Reply::Int(ctx.core.stats.commandlog[kind as usize].entries.len() as i64))
}

fn commandlog_reset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let kind = log_kind(&args[2])?;
    ctx.core.stats.commandlog[kind as usize].entries.clear();
    Ok(Reply::ok())
}

fn commandlog_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply(ctx.core.profile(), "COMMANDLOG", super::help::COMMANDLOG_HELP))
}

fn slowlog_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply(ctx.core.profile(), "SLOWLOG", super::help::SLOWLOG_HELP))
}

/// `DEBUG RELOAD`: Redis saves the dataset and loads it back, which keeps
/// the data and re-derives every value's encoding from what the load reads
/// (a string `int`/`embstr`/`raw` from its content, a hash, set or sorted
/// set saved compact kept compact within the thresholds in force, a large
/// one made compact again if it now fits them) and, unless the eviction
/// policy saves them, the access times. rlockd keeps the data in place and
/// re-derives the same.
fn reload(ctx: &mut Ctx<'_>) {
    let profile = ctx.core.profile();
    let version = profile.rdb_version();
    let keeps_access = ctx.core.config.maxmemory_policy.saves_access();
    for index in 0..ctx.core.ks.dbs.len() {
        let mut db = ctx.core.ks.view(index);
        let limits = *db.limits();
        let keys: Vec<Bytes> = db.raw().keys().map(|k| k.to_bytes()).collect();
        for key in keys {
            let Some(e) = db.entry_notouch(&key) else { continue };
            let encoding = super::generic::encoding_in(e, profile, &limits);
            let t = crate::db::rdb::dump(e, encoding, limits.list_fill, version)[0];
            db.reloaded(&key, t, keeps_access);
        }
    }
}
