//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Queuing happens in [`super::dispatch::process`] (every command but those
//! flagged `not_queued` — EXEC, DISCARD, MULTI, WATCH, QUIT and RESET — is
//! answered `QUEUED` inside MULTI, and a command rejected while queuing
//! marks the transaction dirty). EXEC runs the queue through
//! [`super::call::call`] under the core lock already held, with
//! the client's caller set to `Exec` so blocking commands answer at once.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::session::discard_state;
use super::{cmd, table, CommandSpec, Ctx, Lookup};
use crate::client::{Caller, MultiState};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("multi", multi, 1, "noscript loading stale fast allow_busy", 0, 0, 0, "@fast @transaction")
        .in_valkey("noscript loading stale fast no_multi allow_busy")
        .hidden_flags("not_queued")
        .doc("Mark the start of a transaction block", "1.2.0"),
    cmd("exec", exec, 1, "noscript loading stale skip_slowlog", 0, 0, 0, "@slow @transaction")
        .in_valkey("noscript loading stale skip_commandlog")
        .hidden_flags("runs_queue not_queued ends_multi")
        .doc("Execute all commands issued after MULTI", "1.2.0"),
    cmd("discard", discard, 1, "noscript loading stale fast allow_busy", 0, 0, 0, "@fast @transaction")
        .hidden_flags("not_queued ends_multi")
        .doc("Discard all commands issued after MULTI", "2.0.0"),
    cmd("watch", watch, -2, "noscript loading stale fast allow_busy", 1, -1, 1, "@fast @transaction")
        .in_valkey("noscript loading stale fast no_multi allow_busy")
        .hidden_flags("not_queued")
        .doc("Watch the given keys to determine execution of the MULTI/EXEC block", "2.2.0"),
    cmd("unwatch", unwatch, 1, "noscript loading stale fast allow_busy", 0, 0, 0, "@fast @transaction")
        .doc("Forget about all watched keys", "2.2.0"),
];

fn multi(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(CmdError::custom("ERR MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(MultiState::default());
    let b = &ctx.client.shared.buffers;
    b.multi_len.store(0, Ordering::Relaxed);
    b.multi_mem.store(0, Ordering::Relaxed);
    ctx.client.shared.in_multi.store(true, Ordering::Relaxed);
    Ok(Reply::ok())
}

fn discard(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    if ctx.client.multi.is_none() {
        return Err(CmdError::custom("ERR DISCARD without MULTI"));
    }
    discard_state(ctx);
    Ok(Reply::ok())
}

fn exec(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let Some(state) = ctx.client.multi.take() else {
        return Err(CmdError::custom("ERR EXEC without MULTI"));
    };
    // `CLIENT LIST` shows the transaction (flag x, multi=N) until EXEC ends.
    let result = exec_queued(ctx, state);
    ctx.client.shared.in_multi.store(false, Ordering::Relaxed);
    result
}

fn exec_queued(ctx: &mut Ctx<'_>, state: MultiState) -> CmdResult {
    let id = ctx.client.id;
    if state.dirty {
        ctx.core.watches.unwatch(id);
        return Err(CmdError::custom("EXECABORT Transaction discarded because of previous errors."));
    }
    let now = ctx.now_ms();
    let aborted = ctx.core.watches.is_dirty(id, &ctx.core.ks, now);
    // Unwatch before running: our own writes must not count.
    ctx.core.watches.unwatch(id);
    if aborted {
        return Ok(Reply::NilArray);
    }
    let caller = std::mem::replace(&mut ctx.client.caller, Caller::Exec);
    let mut replies = Vec::with_capacity(state.queue.len());
    let resp3 = ctx.client.resp == crate::protocol::Resp::V3;
    for argv in &state.queue {
        let reply = match table().lookup(argv) {
            Lookup::Found(c) => match super::access::check_in_exec(ctx, c, argv) {
                Some(err) => err.into(),
                None => super::call::call(ctx, c, argv),
            },
            // Queued commands were resolved when queued; the table is immutable.
            Lookup::Unknown => super::unknown_command_error(argv).into(),
            Lookup::UnknownSub => super::unknown_subcommand_error(argv).into(),
        };
        // Messages this command published (or keyspace events it raised),
        // in order; a RESP3 subscriber gets its own inside the EXEC array,
        // before this command's reply, as Redis writes them.
        ctx.core.publish_events(true);
        let mine = if resp3 { ctx.core.pubsub.take_pending_for(id) } else { Vec::new() };
        replies.push(if mine.is_empty() { reply } else { Reply::AfterPushes(mine, Box::new(reply)) });
    }
    ctx.client.caller = caller;
    Ok(Reply::Array(replies))
}

fn watch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(CmdError::custom("ERR WATCH inside MULTI is not allowed"));
    }
    let db = ctx.client.db();
    let now = ctx.now_ms();
    for key in &args[1..] {
        // Redis's keyIsExpired: looks, never deletes.
        let expired = crate::tx::is_expired(&ctx.core.ks, db, key, now);
        ctx.core.watches.watch(ctx.client.id, db, key, expired);
    }
    Ok(Reply::ok())
}

fn unwatch(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.core.watches.unwatch(ctx.client.id);
    Ok(Reply::ok())
}
