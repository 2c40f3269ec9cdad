//! `RLOCKD REPL CRASH [<port>] [NOW]` and `REVIVE <port>`: test control's
//! crash of a node of this process. The handler checks the arguments and
//! the node's state, then asks the server (`ServerIo::change_node`) to carry
//! the change out on its event loop (`server/crash.rs`: what a crash does)
//! and, when the client may block, blocks it until that is done. The nodes
//! down are `replication::down`'s list, which the Sentinels read.

use std::net::SocketAddr;

use bytes::Bytes;

use super::util::eq;
use super::{arg, flag, Arg, Ctx};
use crate::core::Shared;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;
use crate::replication::down::{self, Change};

/// `REPL CRASH`'s arguments and help lines (a row of `RLOCKD REPL`'s
/// table, `cmd/replication.rs`).
pub(crate) const CRASH_ARGS: &[Arg] = &[arg("port", "port").opt(), flag("now", "NOW")];
pub(crate) const CRASH_HELP: &[&str] = &[
    "REPL CRASH [<port>] [NOW]",
    "    Crash the node on <port> of this process (default: this one): port closed, clients cut, unreplicated writes lost. NOW: the Sentinels notice at once.",
];
/// `REPL REVIVE`'s.
pub(crate) const REVIVE_ARGS: &[Arg] = &[arg("port", "port")];
pub(crate) const REVIVE_HELP: &[&str] =
    &["REPL REVIVE <port>", "    Bring a crashed node of this process back on its address."];

/// `RLOCKD REPL CRASH [<port>] [NOW]`.
pub(crate) fn crash(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, &args[2..], true)
}

/// `RLOCKD REPL REVIVE <port>`.
pub(crate) fn revive(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    run(ctx, &args[2..], false)
}

fn run(ctx: &mut Ctx<'_>, args: &[Bytes], crashing: bool) -> CmdResult {
    let me = *ctx.shared.local_addr.lock();
    let mut rest = &args[1..];
    let at_once = crashing && rest.last().is_some_and(|a| eq(a, "now"));
    if at_once {
        rest = &rest[..rest.len() - 1];
    }
    let port = match rest {
        [] if crashing => me.port(),
        [p] => match crate::num::parse_i64_strict(p) {
            Some(p) if (1..=65535).contains(&p) => p as u16,
            _ => return Err(CmdError::custom("ERR invalid port")),
        },
        _ => return Err(CmdError::Syntax),
    };
    let node = |port: u16| {
        crate::replication::registry::find(&me.ip().to_string(), port).and_then(|n| n.downcast::<Shared>().ok())
    };
    let target = node(port)
        .ok_or_else(|| CmdError::custom(format!("ERR no rlockd node of this process listens on port {port}")))?;
    let caller = node(me.port());
    let target_addr = SocketAddr::new(me.ip(), port);
    if crashing == down::down(*target.local_addr.lock()).is_some() {
        let state = if crashing { "already down" } else { "not down" };
        return Err(CmdError::custom(format!("ERR the node on port {} is {state}", target_addr.port())));
    }
    let Some(io) = ctx.shared.io.get().cloned() else {
        return Err(CmdError::custom("ERR this server has no event loop to crash"));
    };
    let waiter = (ctx.client.may_block() && caller.is_some())
        .then(|| super::blocking::block_until_answered(ctx, "ERR the crash did not finish"));
    let change = if crashing { Change::Crash { at_once } } else { Change::Revive };
    io.change_node(target, change, waiter);
    Ok(if waiter.is_some() { Reply::Nil } else { Reply::ok() })
}
