//! Pub/sub commands: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UN-
//! forms, PUBLISH, SPUBLISH, PUBSUB.
//!
//! A (un)subscribe command answers with one confirmation per channel. The
//! last one is the command's reply; the ones before it are pushed on the
//! client's outbound channel, which the connection writes before the reply
//! (so a pipelined client sees them in order, as from Redis).

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::{cmd, container, CommandSpec, Ctx};
use crate::client::{Caller, Outbound};
use crate::error::{CmdError, CmdResult};
use crate::glob;
use crate::protocol::Reply;
use crate::pubsub::Kind;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("subscribe", subscribe, -2, "pubsub noscript loading stale", 0, 0, 0, "@pubsub @slow")
        .hidden_flags("subscribed_ok channel_args")
        .doc("Listen for messages published to the given channels", "2.0.0"),
    cmd("unsubscribe", unsubscribe, -1, "pubsub noscript loading stale", 0, 0, 0, "@pubsub @slow")
        .hidden_flags("subscribed_ok")
        .doc("Stop listening for messages posted to the given channels", "2.0.0"),
    cmd("psubscribe", psubscribe, -2, "pubsub noscript loading stale", 0, 0, 0, "@pubsub @slow")
        .hidden_flags("subscribed_ok pattern_args")
        .doc("Listen for messages published to channels matching the given patterns", "2.0.0"),
    cmd("punsubscribe", punsubscribe, -1, "pubsub noscript loading stale", 0, 0, 0, "@pubsub @slow")
        .hidden_flags("subscribed_ok")
        .doc("Stop listening for messages posted to channels matching the given patterns", "2.0.0"),
    cmd("ssubscribe", ssubscribe, -2, "pubsub noscript loading stale", 1, -1, 1, "@pubsub @slow")
        .hidden_flags("subscribed_ok channel_args")
        .doc("Listen for messages published to the given shard channels", "7.0.0"),
    cmd("sunsubscribe", sunsubscribe, -1, "pubsub noscript loading stale", 1, -1, 1, "@pubsub @slow")
        .hidden_flags("subscribed_ok")
        .doc("Stop listening for messages posted to the given shard channels", "7.0.0"),
    cmd("publish", publish, 3, "pubsub loading stale fast", 0, 0, 0, "@pubsub @fast")
        .hidden_flags("channel_arg always_propagated")
        .doc("Post a message to a channel", "2.0.0"),
    cmd("spublish", spublish, 3, "pubsub loading stale fast", 1, 1, 1, "@pubsub @fast")
        .hidden_flags("channel_arg always_propagated")
        .doc("Post a message to a shard channel", "7.0.0"),
    cmd("pubsub", container, -2, "", 0, 0, 0, "@slow")
        .subs(PUBSUB_SUBS)
        .doc("A container for Pub/Sub commands", "2.8.0"),
];

static PUBSUB_SUBS: &[CommandSpec] = &[
    cmd("channels", pubsub_channels, -2, "pubsub loading stale", 0, 0, 0, "@pubsub @slow")
        .doc("List active channels", "2.8.0"),
    cmd("help", pubsub_help, 2, "loading stale", 0, 0, 0, "@slow")
        .doc("Show helpful text about the different subcommands", "6.2.0"),
    cmd("numpat", pubsub_numpat, 2, "pubsub loading stale", 0, 0, 0, "@pubsub @slow")
        .doc("Get the count of unique patterns pattern subscriptions", "2.8.0"),
    cmd("numsub", pubsub_numsub, -2, "pubsub loading stale", 0, 0, 0, "@pubsub @slow")
        .doc("Get the count of subscribers for channels", "2.8.0"),
    cmd("shardchannels", pubsub_shardchannels, -2, "pubsub loading stale", 0, 0, 0, "@pubsub @slow")
        .doc("List active shard channels", "7.0.0"),
    cmd("shardnumsub", pubsub_shardnumsub, -2, "pubsub loading stale", 0, 0, 0, "@pubsub @slow")
        .doc("Get the count of subscribers for shard channels", "7.0.0"),
];

/// The count a confirmation carries: channels + patterns, or (for the
/// shard commands) shard channels only — as Redis counts them.
fn sub_count(ctx: &Ctx<'_>, kind: Kind) -> i64 {
    let s = &ctx.client.shared;
    let n = match kind {
        Kind::Shard => s.sub_shard.load(Ordering::Relaxed),
        _ => s.sub_channels.load(Ordering::Relaxed) + s.sub_patterns.load(Ordering::Relaxed),
    };
    n as i64
}

fn confirmation(what: &'static str, name: Option<Bytes>, count: i64) -> Reply {
    Reply::Push(vec![
        Reply::Bulk(Bytes::from_static(what.as_bytes())),
        name.map_or(Reply::Nil, Reply::Bulk),
        Reply::Int(count),
    ])
}

/// Turns a list of confirmations into the command's reply: all but the last
/// go out on the push channel first.
fn confirmations(ctx: &mut Ctx<'_>, mut replies: Vec<Reply>) -> CmdResult {
    let last = replies.pop().expect("at least one confirmation");
    if !replies.is_empty() {
        // Our own deferred messages (inside EXEC) come first, as in Redis.
        let limit = ctx.core.config.pubsub_limit;
        ctx.core.pubsub.deliver_pending(limit, ctx.core.ks.now);
        for r in replies {
            ctx.client.shared.send(Outbound::Reply(r));
        }
    }
    Ok(last)
}

fn subscribe_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind, what: &'static str) -> CmdResult {
    let me = ctx.client.shared.clone();
    let mut out = Vec::with_capacity(args.len() - 1);
    for name in &args[1..] {
        ctx.core.pubsub.subscribe(&me, kind, &Bytes::copy_from_slice(name));
        out.push(confirmation(what, Some(name.clone()), sub_count(ctx, kind)));
    }
    confirmations(ctx, out)
}

fn unsubscribe_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind, what: &'static str) -> CmdResult {
    let me = ctx.client.shared.clone();
    let names: Vec<Bytes> =
        if args.len() > 1 { args[1..].to_vec() } else { ctx.core.pubsub.subscriptions_of(me.id, kind) };
    if names.is_empty() {
        return Ok(confirmation(what, None, sub_count(ctx, kind)));
    }
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        ctx.core.pubsub.unsubscribe(&me, kind, &name);
        out.push(confirmation(what, Some(name), sub_count(ctx, kind)));
    }
    confirmations(ctx, out)
}

fn subscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    subscribe_generic(ctx, args, Kind::Channel, "subscribe")
}

fn psubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    subscribe_generic(ctx, args, Kind::Pattern, "psubscribe")
}

fn ssubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // Redis 7.0 flags a client running EXEC as "deny blocking", which only
    // SSUBSCRIBE refuses (SUBSCRIBE/PSUBSCRIBE allow MULTI for backward
    // compatibility).
    if ctx.client.caller == Caller::Exec {
        return Err(CmdError::custom("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client"));
    }
    subscribe_generic(ctx, args, Kind::Shard, "ssubscribe")
}

fn unsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Channel, "unsubscribe")
}

fn punsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Pattern, "punsubscribe")
}

fn sunsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Shard, "sunsubscribe")
}

/// Inside `EXEC` or a script (depth > 1) deliveries wait for the end of the
/// top-level command; keyspace events queued before this publish are
/// queued ahead of it so subscribers see Redis's order.
fn defer(ctx: &mut Ctx<'_>) -> bool {
    let defer = ctx.core.call_depth > 1;
    if defer {
        ctx.core.publish_events(true);
    }
    defer
}

fn publish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let defer = defer(ctx);
    let limit = ctx.core.config.pubsub_limit;
    // The command's time (no clock reading of its own), as Redis's cached
    // `server.unixtime` times the output buffer's soft limit.
    let now = ctx.core.ks.now;
    let n = ctx.core.pubsub.publish(&args[1], &args[2], limit, now, defer);
    ctx.core.stats.pubsub_messages += 1;
    super::cluster::propagate_publish(ctx, &args[1], &args[2]);
    Ok(Reply::Int(n as i64))
}

fn spublish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let defer = defer(ctx);
    let limit = ctx.core.config.pubsub_limit;
    // The command's time (no clock reading of its own), as Redis's cached
    // `server.unixtime` times the output buffer's soft limit.
    let now = ctx.core.ks.now;
    let n = ctx.core.pubsub.spublish(&args[1], &args[2], limit, now, defer);
    ctx.core.stats.pubsub_messages += 1;
    Ok(Reply::Int(n as i64))
}

/// `ERR unknown subcommand or wrong number of arguments for 'x'. Try PUBSUB HELP.`
fn subcommand_syntax_error(args: &[Bytes]) -> CmdError {
    let name = &args[1][..args[1].len().min(128)];
    CmdError::custom(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
        String::from_utf8_lossy(name)
    ))
}

fn channels_matching<'a>(names: impl Iterator<Item = &'a Bytes>, pattern: Option<&Bytes>) -> Reply {
    Reply::Array(
        names.filter(|c| pattern.is_none_or(|p| glob::matches(p, c, false))).map(|c| Reply::Bulk(c.clone())).collect(),
    )
}

fn pubsub_channels(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(subcommand_syntax_error(args));
    }
    Ok(channels_matching(ctx.core.pubsub.channels.keys(), args.get(2)))
}

fn pubsub_shardchannels(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(subcommand_syntax_error(args));
    }
    Ok(channels_matching(ctx.core.pubsub.shard.keys(), args.get(2)))
}

fn pubsub_numsub(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let t = &ctx.core.pubsub.channels;
    Ok(Reply::Array(
        args[2..]
            .iter()
            .flat_map(|c| [Reply::Bulk(c.clone()), Reply::Int(t.get(c).map_or(0, |s| s.len()) as i64)])
            .collect(),
    ))
}

fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let t = &ctx.core.pubsub.shard;
    Ok(Reply::Array(
        args[2..]
            .iter()
            .flat_map(|c| [Reply::Bulk(c.clone()), Reply::Int(t.get(c).map_or(0, |s| s.len()) as i64)])
            .collect(),
    ))
}

fn pubsub_numpat(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(ctx.core.pubsub.pattern_count() as i64))
}

fn pubsub_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    const LINES: &[&str] = &[
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
    ];
    Ok(super::help::help_reply(ctx.core.profile(), "PUBSUB", LINES))
}

/// RESET: leaves every subscription without sending confirmations.
pub fn unsubscribe_all(ctx: &mut Ctx<'_>) {
    let shared = ctx.client.shared.clone();
    ctx.core.pubsub.remove_client(&shared);
}
