//! Connection commands: PING, ECHO, AUTH, HELLO, QUIT, RESET, SELECT.

use bytes::Bytes;

use super::generic::db_index;
use super::util::eq;
use super::{cmd, CommandSpec, Ctx};
use crate::client::ReplyMode;
use crate::error::{CmdError, CmdResult};
use crate::protocol::{Reply, Resp};

pub static COMMANDS: &[CommandSpec] = &[
    cmd("ping", ping, -1, "fast", 0, 0, 0, "@fast @connection")
        .hidden_flags("subscribed_ok")
        .doc("Ping the server", "1.0.0"),
    cmd("echo", echo, 2, "loading stale fast", 0, 0, 0, "@fast @connection").doc("Echo the given string", "1.0.0"),
    cmd("auth", auth, -2, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "@fast @connection")
        .doc("Authenticate to the server", "1.0.0"),
    cmd("hello", hello, -1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "@fast @connection")
        .doc("Handshake with Redis", "6.0.0"),
    cmd("quit", quit, -1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "@fast @connection")
        .hidden_flags("not_queued ends_multi subscribed_ok")
        .doc("Close the connection", "1.0.0"),
    cmd("reset", reset, 1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "@fast @connection")
        .hidden_flags("not_queued ends_multi subscribed_ok")
        .doc("Reset the connection", "6.2.0"),
    cmd("select", select, 2, "loading stale fast", 0, 0, 0, "@fast @connection")
        .doc("Change the selected database for the current connection", "1.0.0"),
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

fn select(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if let Some(refused) = super::cluster::select_refused(ctx, super::util::int(&args[1])?) {
        return Err(refused);
    }
    let db = db_index(ctx, &args[1])?;
    ctx.client.set_db(db);
    Ok(Reply::ok())
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

fn auth(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let (user, pass) = if args.len() == 2 {
        if ctx.core.acl.default_user().is_some_and(|d| d.nopass) {
            return Err(CmdError::custom(
                "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
            ));
        }
        (Bytes::from_static(b"default"), &args[1])
    } else {
        (args[1].clone(), &args[2])
    };
    if super::access::authenticate(ctx, &user, pass) {
        Ok(Reply::ok())
    } else {
        Err(CmdError::custom(WRONGPASS))
    }
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
            super::session::valid_client_name(&args[j + 1])?;
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
        if !super::access::authenticate(ctx, &u, &p) {
            return Err(CmdError::custom(WRONGPASS));
        }
    }
    if !ctx.client.authenticated && ctx.core.acl.auth_required() {
        // Redis 7.2 names the protocol argument in the hint.
        let form = if ctx.core.profile().at_least(7, 2, 0) { "HELLO <proto> AUTH" } else { "HELLO AUTH" };
        return Err(CmdError::custom(format!("NOAUTH HELLO must be called with the client already authenticated, otherwise the {form} <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")));
    }
    if let (Some(n), Some(r)) = (name, ctx.core.client_record(ctx.client.id)) {
        r.name = n;
    }
    if ver == 3 {
        ctx.client.set_resp(Resp::V3);
    } else if ver == 2 {
        ctx.client.set_resp(Resp::V2);
    }
    let proto = if ctx.client.resp == Resp::V3 { 3 } else { 2 };
    Ok(Reply::Map(vec![
        (Reply::bulk_str("server"), Reply::bulk_str(ctx.core.profile().server_name())),
        (Reply::bulk_str("version"), Reply::bulk(Bytes::from(ctx.core.profile().version().to_string()))),
        (Reply::bulk_str("proto"), Reply::Int(proto)),
        (Reply::bulk_str("id"), Reply::Int(ctx.client.id as i64)),
        (Reply::bulk_str("mode"), Reply::bulk_str(if ctx.core.cluster.is_some() { "cluster" } else { "standalone" })),
        (Reply::bulk_str("role"), Reply::bulk_str("master")),
        (Reply::bulk_str("modules"), Reply::Array(vec![])),
    ]))
}

fn quit(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.client.close = true;
    Ok(Reply::ok())
}

fn reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    super::session::discard_state(ctx);
    if ctx.core.monitors.remove(ctx.client.id) {
        ctx.client.shared.monitor.store(false, std::sync::atomic::Ordering::Relaxed);
    }
    super::pubsub::unsubscribe_all(ctx);
    ctx.client.set_db(0);
    ctx.client.set_resp(Resp::V2);
    ctx.client.reply_mode = ReplyMode::On;
    if let Some(r) = ctx.core.client_record(ctx.client.id) {
        r.name = Bytes::new();
    }
    super::session::tracking_off(ctx);
    super::session::set_user(ctx, Bytes::from_static(b"default"));
    ctx.client.authenticated = !ctx.core.acl.auth_required();
    Ok(Reply::status("RESET"))
}
