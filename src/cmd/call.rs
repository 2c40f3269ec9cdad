//! The one place a command's handler is invoked ([`call`]), whoever runs
//! it: a client's command line after dispatch's checks, `EXEC`'s queue, a
//! script's `redis.call`, a blocked client's command re-run. Around the
//! handler: the command's frozen time, statistics, client-side caching,
//! `MONITOR`, the slow log, and the core's post-command work at depth 0.
//!
//! **Invariant:** [`call`] is the only place a handler is invoked. At
//! nesting depth 0 it takes the command's time from the clock (`ks.now`);
//! nested calls — `EXEC`'s commands, a script's `redis.call`, a blocked
//! client's re-run — see the same frozen time, as in Redis. After the
//! handler at depth 0 it runs `Core::after_command` (expired-key stats,
//! WATCH invalidation, keys made ready for blocked clients, keyspace events,
//! deferred publishes).
//!
//! Statistics: calls, time, rejected and failed calls per command (`INFO
//! commandstats`), the time of nested calls (which `INFO scriptstats` uses
//! to split a script's time between Lua and its commands), and every error
//! reply by prefix (`Stats::count_error`, `INFO errorstats`; a script's reply
//! repeating a `redis.call` error counts once). Keyspace hits and misses are
//! counted while `Signals::read_lookups` is set: here for read-only
//! commands, and by the few write commands whose source reads Redis counts
//! (`Ctx::with_read_lookups`). The slow log records top-level commands.
//!
//! `MONITOR` is fed after a command ran, or before it for `EVAL`/`FCALL`
//! (`skip_monitor movablekeys`), so a script's `[db lua]` commands follow it
//! and EXEC's commands precede the EXEC; a blocked command re-run to serve
//! its waiter is not fed again.
//!
//! Client-side caching costs one branch while no client tracks
//! (`Tracking::active`): otherwise, after every handler at any depth, the
//! keys it modified are invalidated, a tracking client's read-only command
//! has its keys remembered, and at depth 0 the invalidations due to the
//! client itself ride behind its reply (`Reply::ThenPushes`).

use bytes::Bytes;

use super::command::command_keys;
use super::session::clear_caching;
use super::spec::{flags, Command, Ctx};
use crate::client::Caller;
use crate::core::{LogKind, SlowEntry, COMMANDLOG};
use crate::error::CmdResult;
use crate::protocol::Reply;
use crate::replication::feed::{Called, Recording};

/// Invokes a command's handler: frozen time at depth 0, statistics,
/// slowlog, and the post-command work of the core at depth 0 (clients
/// blocked on keys it made ready are served by [`super::dispatch::process`]).
pub fn call(ctx: &mut Ctx<'_>, cmd: &Command, argv: &[Bytes]) -> Reply {
    let top = ctx.core.call_depth == 0;
    // One reading of the system clock is the command's time at depth 0
    // and the start of its duration (on the system clock, as Redis 7.0's
    // `ustime()`; a step of the system clock back reads as 0 µs).
    let start = crate::clock::system_ns();
    if top {
        let us = ctx.shared.clock.at_system_us(start / 1000);
        ctx.core.call_time_us = us;
        ctx.core.ks.now = us / 1000;
        if ctx.core.control.is_on() {
            let detail = if cmd.has(flags::NAMES_SCRIPT) { argv.get(1).map(|d| &d[..]) } else { None };
            ctx.core.control.actor.set(ctx.client.id, cmd.spec.name, detail);
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
    let mut result = (cmd.spec.handler)(ctx, argv);
    let nanos = crate::clock::system_ns().saturating_sub(start);
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
    let mut reply = match result {
        Ok(r) => r,
        Err(e) => e.into(),
    };
    // From Redis 7.2, doubles are printed in their shortest form.
    if ctx.core.config.profile.at_least(7, 2, 0) {
        reply = reply.with_short_doubles();
    }
    // As Redis 7.0 counts a blocking command: one call when it blocks
    // (no latency sample, no slowlog entry yet); when it is unblocked, the
    // re-run that serves it adds its time, failure, latency sample and
    // slowlog entry but no call (`blocking::rerun`, `count_unblocked`).
    let rerun = ctx.client.caller == Caller::BlockedRerun;
    let blocked = ctx.client.block.is_some();
    if !rerun {
        let track_latency = ctx.core.config.latency_tracking;
        let stats = &mut ctx.core.stats;
        let st = &mut stats.commands[cmd.id];
        st.calls += 1;
        st.usec += usec;
        if track_latency && !blocked {
            st.record_latency(usec);
        }
        stats.total_commands += 1;
        if let Some(text) = reply.error_text() {
            st.failed += 1;
            // A script's reply repeating a `redis.call` error counts once.
            if !std::mem::take(&mut stats.error_already_counted) {
                stats.count_error(text);
            }
        }
    }
    // The one branch replication costs on a node without replicas.
    if ctx.core.repl.feeding() {
        let called = Called {
            name: cmd.spec.name,
            argv,
            reply: &reply,
            db: ctx.client.db(),
            dirty_before,
            recording: recording(cmd),
        };
        ctx.core.repl.after_call(&mut ctx.core.ks, &called);
    }
    if monitored && !cmd.has(flags::SKIP_MONITOR) && !cmd.has(flags::ADMIN) {
        feed_monitors(ctx, argv);
    }
    if top {
        // A refused acquire, for the lock history (`RLOCKD HISTORY`).
        if matches!(reply, Reply::Nil | Reply::Int(_)) && ctx.core.control.is_on() {
            let (db, core) = (ctx.client.db(), &mut *ctx.core);
            let now = core.ks.now;
            core.control.after_reply(&core.ks, db, argv, &reply, now);
        }
        if !rerun && !blocked {
            slowlog_if_slow(ctx, cmd, argv, usec);
            if ctx.core.config.profile.has(&COMMANDLOG) {
                log_if_large(ctx, cmd, argv, &reply);
            }
        }
        if ctx.core.repl.feeding() {
            ctx.core.repl.end_unit(ctx.client.id);
        }
        ctx.core.after_command();
    }
    reply
}

/// How the replicas receive `cmd`, from its row's flags.
fn recording(cmd: &Command) -> Recording {
    if cmd.has(flags::RUNS_OTHERS) {
        Recording::RunsOthers
    } else if cmd.has(flags::ALWAYS_PROPAGATED) {
        Recording::Always
    } else {
        Recording::WhenChanged
    }
}

/// Counts the unblocking of a blocked `cmd` answered `reply` after `usec`
/// of work (Redis's `updateStatsOnUnblock`): time, a failed call if the
/// reply is an error, and a latency sample, but no new call.
pub(crate) fn count_unblocked(core: &mut crate::core::Core, cmd: &Command, usec: u64, reply: &Reply) {
    let track_latency = core.config.latency_tracking;
    let stats = &mut core.stats;
    let st = &mut stats.commands[cmd.id];
    st.usec += usec;
    if track_latency {
        st.record_latency(usec);
    }
    if let Some(text) = reply.error_text() {
        st.failed += 1;
        stats.count_error(text);
    }
}

/// The slowlog entry of an unblocked command: its arguments as it blocked.
pub(crate) fn slowlog_unblocked(ctx: &mut Ctx<'_>, argv: &[Bytes], usec: u64) {
    if let super::Lookup::Found(cmd) = super::table().lookup(argv) {
        slowlog_if_slow(ctx, cmd, argv, usec);
    }
}

fn slowlog_if_slow(ctx: &mut Ctx<'_>, cmd: &Command, argv: &[Bytes], usec: u64) {
    let threshold = ctx.core.config.slowlog_slower_than;
    if threshold >= 0 && usec as i64 >= threshold && !cmd.has(flags::SKIP_SLOWLOG) {
        record_slow(ctx, LogKind::Slow, argv, usec);
    }
}

/// Valkey 8.1's large-request and large-reply logs: the request's size as
/// a RESP array of bulk strings (what clients send; an inline command is
/// counted so too) and the reply's as encoded for the client, each logged
/// when it reaches its threshold.
fn log_if_large(ctx: &mut Ctx<'_>, cmd: &Command, argv: &[Bytes], reply: &Reply) {
    if cmd.has(flags::SKIP_SLOWLOG) {
        return;
    }
    let config = &ctx.core.config;
    let (request, response) = (config.commandlog_request_larger_than, config.commandlog_reply_larger_than);
    if request >= 0 {
        let digits = |n: usize| n.checked_ilog10().unwrap_or(0) as usize + 1;
        let size = 3 + digits(argv.len()) + argv.iter().map(|a| 5 + digits(a.len()) + a.len()).sum::<usize>();
        if size as i64 >= request {
            record_slow(ctx, LogKind::LargeRequest, argv, size as u64);
        }
    }
    if response >= 0 {
        let size = reply.to_bytes(ctx.client.shared.resp()).len();
        if size as i64 >= response {
            record_slow(ctx, LogKind::LargeReply, argv, size as u64);
        }
    }
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
            for key in command_keys(cmd, argv) {
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

fn feed_monitors(ctx: &mut Ctx<'_>, argv: &[Bytes]) {
    // As Redis's `replicationFeedMonitors`: `unix:<path>` for a Unix-socket client.
    let source = match &ctx.client.shared.addr {
        _ if ctx.client.is_script() => "lua".to_string(),
        crate::client::ClientAddr::Unix(path) => format!("unix:{path}"),
        addr => addr.to_string(),
    };
    ctx.core.monitors.feed(ctx.shared.clock.now_us(), ctx.client.db(), &source, argv);
}

fn record_slow(ctx: &mut Ctx<'_>, kind: LogKind, argv: &[Bytes], value: u64) {
    let config = &ctx.core.config;
    let max = match kind {
        LogKind::Slow => config.slowlog_max_len,
        LogKind::LargeRequest => config.commandlog_request_max_len,
        LogKind::LargeReply => config.commandlog_reply_max_len,
    };
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
    let name = ctx.core.clients.get(&ctx.client.id).map(|r| r.name.clone()).unwrap_or_default();
    let log = &mut ctx.core.stats.commandlog[kind as usize];
    let entry = SlowEntry {
        id: log.next_id,
        time_secs: ctx.core.ks.now / 1000,
        value,
        args,
        addr: ctx.client.shared.addr.to_string(),
        name,
    };
    log.next_id += 1;
    log.entries.push_front(entry);
    while log.entries.len() > max {
        log.entries.pop_back();
    }
}
