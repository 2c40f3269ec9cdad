//! `CONFIG GET/SET/RESETSTAT/REWRITE` (the parameters live in
//! `crate::config`).

use bytes::Bytes;

use super::help::help_reply;
use super::{cmd, container, CommandSpec, Ctx};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[cmd("config", container, -2, "", 0, 0, 0, "@slow")
    .subs(CONFIG_SUBS)
    .doc("A container for server configuration commands", "2.0.0")];

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

fn config_get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let pairs = ctx.core.config.get(&args[2..]);
    Ok(Reply::Map(pairs.into_iter().map(|(k, v)| (Reply::bulk(Bytes::from(k)), Reply::bulk(Bytes::from(v)))).collect()))
}

fn config_set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if !args.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    let pairs: Vec<(&[u8], &[u8])> = args[2..].chunks(2).map(|p| (&p[0][..], &p[1][..])).collect();
    let protected_ok = ctx.core.config.protected_allowed(ctx.client.shared.addr.is_local());
    let before = (ctx.core.config.get_str("bind").to_string(), ctx.core.config.port);
    let saved = ctx.core.config.clone();
    // All or nothing, as in Redis: nothing changes unless every value is valid.
    let set = ctx.core.config.set_many(&pairs, protected_ok)?;
    let after = (ctx.core.config.get_str("bind").to_string(), ctx.core.config.port);
    if after != before {
        if let Err(why) = relisten(ctx, &before) {
            ctx.core.config = saved;
            let (name, text) = if set.contains(&"bind") && after.0 != before.0 {
                ("bind", "Failed to bind to specified addresses.")
            } else {
                ("port", "Unable to listen on this port. Check server logs.")
            };
            tracing::warn!("CONFIG SET {name}: could not listen on '{}' port {}: {why}", after.0, after.1);
            return Err(CmdError::custom(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {text}"
            )));
        }
    }
    if set.contains(&"requirepass") {
        let pass = ctx.core.config.requirepass.clone();
        ctx.core.acl.set_requirepass(pass.as_deref());
    }
    ctx.core.config_changed();
    if set.contains(&"test-control") {
        super::control::switched(ctx);
    }
    if set.contains(&"maxmemory") && ctx.core.config.maxmemory > 0 {
        // As Redis's updateMaxmemory: evict down to the new limit now.
        let used = crate::memory::used_memory();
        if used > ctx.core.config.maxmemory {
            tracing::warn!(
                "WARNING: the new maxmemory value set via CONFIG SET ({}) is smaller than the current memory usage ({used}). This will result in key eviction and/or the inability to accept new write commands depending on the maxmemory-policy.",
                ctx.core.config.maxmemory
            );
        }
        super::limits::perform_evictions(ctx);
    }
    Ok(Reply::ok())
}

/// Listens where the new `bind` and `port` say (the current listeners
/// close first, and the old addresses are bound again if the new ones
/// fail; connected clients stay), before answering, as Redis's CONFIG SET
/// does.
fn relisten(ctx: &mut Ctx<'_>, before: &(String, u16)) -> std::io::Result<()> {
    let cfg = &ctx.core.config;
    let Some(io) = ctx.shared.io.get() else {
        // No listener (the in-process test harness): nothing to move.
        return Err(std::io::Error::other("no listener"));
    };
    let addr = io.relisten(cfg.get_str("bind"), cfg.port, &before.0, before.1, cfg.tcp_backlog)?;
    ctx.core.config.set_listen_port(addr.port());
    *ctx.shared.local_addr.lock() = addr;
    Ok(())
}

fn config_resetstat(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let n = ctx.core.stats.commands.len();
    let st = &mut ctx.core.stats;
    st.commands = vec![Default::default(); n];
    st.total_commands = 0;
    st.total_connections = 0;
    st.expired_keys = 0;
    st.evicted_keys = 0;
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

fn config_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply(ctx.core.profile(), "CONFIG", super::help::CONFIG_HELP))
}
