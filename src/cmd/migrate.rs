//! `MIGRATE`: keys moved to another server (an rlockd node, or any Redis)
//! as Redis 7.0 moves them: `DUMP` payloads sent as `RESTORE` (a cluster
//! node sends `RESTORE-ASKING`) over a connection made for the call,
//! synchronously (the event loop waits, as Redis's does), the keys deleted
//! here once the target accepted them (unless `COPY`). The commands are
//! encoded and the target's replies read by `protocol/`; the bytes travel
//! through the server's [`crate::core::ServerIo::exchange`] (`server/`
//! owns the sockets).

use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::util::eq;
use super::Ctx;
use crate::core::ExchangeError;
use crate::db::{notify, rdb};
use crate::error::{CmdError, CmdResult};
use crate::protocol::{decode, Reply, Resp};

/// Appends `args` as a command, in RESP (an array of bulk strings).
fn command(out: &mut BytesMut, args: Vec<Bytes>) {
    Reply::bulks(args).encode(Resp::V2, out);
}

/// The text of an error reply (`-…`), `None` for any other.
fn error_text(line: &[u8]) -> Option<Bytes> {
    match decode(line) {
        Some(Reply::Error(e)) => Some(e),
        _ => None,
    }
}

/// `MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
/// [AUTH password | AUTH2 username password] [KEYS key …]`.
pub fn migrate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (mut copy, mut replace) = (false, false);
    let (mut user, mut password): (Option<&Bytes>, Option<&Bytes>) = (None, None);
    let (mut first, mut count) = (3, 1);
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if eq(&args[j], "copy") {
            copy = true;
        } else if eq(&args[j], "replace") {
            replace = true;
        } else if eq(&args[j], "auth") {
            if more < 1 {
                return Err(CmdError::Syntax);
            }
            j += 1;
            password = Some(&args[j]);
        } else if eq(&args[j], "auth2") {
            if more < 2 {
                return Err(CmdError::Syntax);
            }
            user = Some(&args[j + 1]);
            password = Some(&args[j + 2]);
            j += 2;
        } else if eq(&args[j], "keys") {
            if !args[3].is_empty() {
                return Err(CmdError::custom(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            first = j + 1;
            count = args.len() - j - 1;
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let timeout = super::util::int(&args[5])?;
    let dbid = super::util::int(&args[4])?;
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let now = ctx.now_ms();
    let limits = *ctx.db().limits();
    let profile = ctx.core.profile();
    let version = profile.rdb_version();
    // The keys here (not expired), with their remaining time and payload.
    let mut found: Vec<(Bytes, i64, Bytes)> = Vec::new();
    {
        let mut db = ctx.db();
        for key in &args[first..first + count] {
            if let Some(e) = db.entry(key) {
                let ttl = e.expire().map_or(0, |at| (at as i64 - now as i64).max(1));
                let encoding = super::generic::encoding_in(e, profile, &limits);
                found.push((key.clone(), ttl, Bytes::from(rdb::dump(e, encoding, limits.list_fill, version))));
            }
        }
    }
    if found.is_empty() {
        return Ok(Reply::status("NOKEY"));
    }
    let restore = Bytes::from_static(if ctx.core.cluster.is_some() { b"RESTORE-ASKING" } else { b"RESTORE" });
    let word = Bytes::from_static;
    let mut out = BytesMut::new();
    if let Some(pw) = password {
        match user {
            Some(u) => command(&mut out, vec![word(b"AUTH"), u.clone(), pw.clone()]),
            None => command(&mut out, vec![word(b"AUTH"), pw.clone()]),
        }
    }
    command(&mut out, vec![word(b"SELECT"), Bytes::from(dbid.to_string())]);
    for (key, ttl, payload) in &found {
        let mut args = vec![restore.clone(), key.clone(), Bytes::from(ttl.to_string()), payload.clone()];
        if replace {
            args.push(word(b"REPLACE"));
        }
        command(&mut out, args);
    }
    let io_error = |writing: bool| {
        CmdError::custom(format!(
            "IOERR error or timeout {} to target instance",
            if writing { "writing" } else { "reading" }
        ))
    };
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    let port = String::from_utf8_lossy(&args[2]).into_owned();
    let connect_error = || CmdError::custom("IOERR error or timeout connecting to the client");
    // One reply a line: the target answers AUTH, SELECT and RESTORE with
    // a status or an error.
    let expected = usize::from(password.is_some()) + 1 + found.len();
    let Some(io) = ctx.shared.io.get() else {
        // No sockets (the in-process harness): nothing to connect to.
        return Err(connect_error());
    };
    let lines = match io.exchange(&host, &port, &out, expected, timeout) {
        Ok(lines) => lines,
        Err(ExchangeError::Resolve) => return Err(connect_error()),
        Err(ExchangeError::Write) => return Err(io_error(true)),
    };
    let mut lines = lines.into_iter();
    let mut line = || lines.next();
    let mut first_error: Option<Bytes> = None;
    if password.is_some() {
        let auth = line().ok_or_else(|| io_error(false))?;
        first_error = error_text(&auth);
    }
    let select = line().ok_or_else(|| io_error(false))?;
    if first_error.is_none() {
        first_error = error_text(&select);
    }
    // A refused AUTH or SELECT fails every key.
    let refused = first_error.is_some();
    for (answered, (key, _, _)) in found.iter().enumerate() {
        let Some(reply) = line() else {
            if answered == 0 && first_error.is_none() {
                return Err(io_error(false));
            }
            break;
        };
        let error = error_text(&reply);
        let failed = refused || error.is_some();
        if first_error.is_none() {
            first_error = error;
        }
        if !failed && !copy {
            let mut db = ctx.db();
            if db.remove(key).is_some() {
                db.notify(notify::GENERIC, "del", key);
            }
        }
    }
    match first_error {
        Some(e) => {
            Err(CmdError::custom(format!("ERR Target instance replied with error: {}", String::from_utf8_lossy(&e))))
        }
        None => Ok(Reply::ok()),
    }
}
