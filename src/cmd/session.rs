//! The calling connection's own state, as several command families change
//! or show it: its name, user, transaction and tracking, and its
//! `CLIENT INFO` line (`CLIENT`, `HELLO`, `RESET`, `DISCARD`, `ACL LOG`).

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::spec::{flags, Command};
use super::{table, Ctx};
use crate::client::{ClientRecord, ClientShared, NO_COMMAND};
use crate::error::CmdError;

/// `CLIENT SETNAME`'s (and `HELLO SETNAME`'s, `CLIENT SETINFO`'s) check of a name.
pub(crate) fn valid_client_name(name: &[u8]) -> Result<(), CmdError> {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(CmdError::custom("ERR Client names cannot contain spaces, newlines or special characters."));
    }
    Ok(())
}

/// Makes the client run as `user` (and `CLIENT LIST` show it).
pub(crate) fn set_user(ctx: &mut Ctx<'_>, user: Bytes) {
    if let Some(r) = ctx.core.client_record(ctx.client.id) {
        r.user = user.clone();
    }
    ctx.client.user = user;
}

/// The calling client's `CLIENT INFO` line (also `ACL LOG`'s `client-info`).
pub(crate) fn info_line_of(ctx: &Ctx<'_>, now: u64) -> String {
    let lib = lib_fields(ctx);
    let (id, current) = (ctx.client.id, ctx.client.current);
    match ctx.core.clients.get(&id) {
        Some(r) => r.info_line(now, id + 7, last_cmd_name(&r.shared), current, lib),
        None => ClientRecord::new(ctx.client.shared.clone()).info_line(now, id + 7, "NULL", current, lib),
    }
}

/// Redis 7.2 added `lib-name` and `lib-ver` to `CLIENT LIST`; 7.0 has
/// neither, so they follow the profile.
pub(crate) fn lib_fields(ctx: &Ctx<'_>) -> bool {
    ctx.core.profile().at_least(7, 2, 0)
}

/// The name of the last command `c` ran (`cmd=` in CLIENT LIST).
pub(crate) fn last_cmd_name(c: &ClientShared) -> &'static str {
    match c.last_cmd.load(Ordering::Relaxed) {
        NO_COMMAND => "NULL",
        id => table().names.get(id).map_or("NULL", String::as_str),
    }
}

/// Turns the calling client's tracking off (`CLIENT TRACKING off`, `RESET`).
pub(crate) fn tracking_off(ctx: &mut Ctx<'_>) {
    let id = ctx.client.id;
    if let Some(mode) = ctx.core.client_record(id).and_then(|r| r.tracking.take()) {
        ctx.core.tracking.disable(id, &mode);
    }
}

/// Drops the client's MULTI state and WATCHes (DISCARD, RESET, disconnect).
pub(crate) fn discard_state(ctx: &mut Ctx<'_>) {
    ctx.client.multi = None;
    ctx.client.shared.in_multi.store(false, Ordering::Relaxed);
    ctx.core.watches.unwatch(ctx.client.id);
}

/// `CLIENT CACHING` covers the next command (all of a MULTI block); other
/// CLIENT subcommands in between keep it, as in Redis.
pub(crate) fn clear_caching(ctx: &mut Ctx<'_>, cmd: Option<&Command>) {
    if cmd.is_some_and(|c| c.has(flags::KEEPS_CACHING)) || ctx.client.multi.is_some() {
        return;
    }
    if let Some(t) = ctx.core.clients.get_mut(&ctx.client.id).and_then(|r| r.tracking.as_mut()) {
        t.caching = false;
    }
}
