//! DUMP and RESTORE (`RESTORE-ASKING` too): a value serialized in Redis
//! 7.0's RDB format (see `db/rdb.rs`), with Redis's option checks and error
//! texts.

use bytes::Bytes;

use super::util::{eq, int};
use super::{cmd, CommandSpec, Ctx};
use crate::db::evict::Lfu;
use crate::db::notify;
use crate::db::rdb::{self, RdbError};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("dump", dump, 2, "readonly", 1, 1, 1, "@keyspace @read @slow")
        .doc("Return a serialized version of the value stored at the specified key.", "2.6.0"),
    cmd("restore", restore, -4, "write denyoom", 1, 1, 1, "@keyspace @write @slow @dangerous")
        .doc("Create a key using the provided serialized value, previously obtained using DUMP.", "2.6.0"),
    cmd("migrate", super::migrate::migrate, -6, "write movablekeys", 3, 3, 1, "@keyspace @write @slow @dangerous")
        .doc("Atomically transfer a key from a Redis instance to another one.", "2.6.0"),
    cmd("restore-asking", restore, -4, "write denyoom asking", 1, 1, 1, "@keyspace @write @slow @dangerous")
        .doc("An internal command for migrating keys in a cluster", "3.0.0"),
];

fn dump(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let profile = ctx.core.profile();
    let version = profile.rdb_version();
    let mut db = ctx.db();
    let limits = *db.limits();
    let Some(e) = db.entry(&args[1]) else {
        return Ok(Reply::Nil);
    };
    // The payload of the encoding this profile's server has (a small set
    // is a listpack from 7.2).
    let encoding = super::generic::encoding_in(e, profile, &limits);
    Ok(Reply::Bulk(Bytes::from(rdb::dump(e, encoding, limits.list_fill, version))))
}

fn restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let (mut replace, mut absttl) = (false, false);
    let mut idle: Option<i64> = None;
    let mut freq: Option<i64> = None;
    let mut j = 4;
    while j < args.len() {
        let more = j + 1 < args.len();
        if eq(&args[j], "replace") {
            replace = true;
        } else if eq(&args[j], "absttl") {
            absttl = true;
        } else if eq(&args[j], "idletime") && more && freq.is_none() {
            let v = int(&args[j + 1])?;
            if v < 0 {
                return Err(CmdError::custom("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(v);
            j += 1;
        } else if eq(&args[j], "freq") && more && idle.is_none() {
            let v = int(&args[j + 1])?;
            if !(0..=255).contains(&v) {
                return Err(CmdError::custom("ERR Invalid FREQ value, must be >= 0 and <= 255"));
            }
            freq = Some(v);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if !replace && ctx.db().exists(key) {
        return Err(CmdError::custom("BUSYKEY Target key name already exists."));
    }
    let ttl = int(&args[2])?;
    if ttl < 0 {
        return Err(CmdError::custom("ERR Invalid TTL value, must be >= 0"));
    }
    let value = match rdb::restore(&args[3], ctx.core.profile().rdb_version()) {
        Ok(v) => v,
        Err(RdbError::Checksum) => return Err(CmdError::custom("ERR DUMP payload version or checksum are wrong")),
        Err(RdbError::Format) => return Err(CmdError::custom("ERR Bad data format")),
    };
    let now = ctx.now_ms();
    let mut db = ctx.db();
    let lfu = db.lfu().is_some();
    let deleted = replace && db.remove(key).is_some();
    // Redis adds the time without an overflow check: a wrapped deadline is
    // in the past, and the key is not created.
    let deadline = if ttl != 0 && !absttl { ttl.wrapping_add(now as i64) } else { ttl };
    if deadline != 0 && deadline <= now as i64 {
        if deleted {
            db.notify(notify::GENERIC, "del", key);
        }
        return Ok(Reply::ok());
    }
    let enc = rdb::loaded_encoding(&args[3], &value, db.limits());
    db.insert_new(key, value);
    if let Some(enc) = enc {
        db.set_str_enc(key, enc);
    }
    if deadline != 0 {
        db.set_expire(key, deadline as u64);
        // Redis 8 makes the object with its deadline.
        db.settle_string(key, crate::db::embed::Step::StoredWithDeadline);
    }
    // An entry keeps either an access time or an access frequency: IDLETIME
    // applies under an LRU (or no) policy, FREQ under an LFU one.
    match (idle, freq, lfu) {
        (Some(idle), _, false) => {
            let stamp = crate::db::lru_stamp(now);
            db.set_lru(key, stamp.saturating_sub(u32::try_from(idle).unwrap_or(u32::MAX)));
        }
        (_, Some(freq), true) => db.set_lru(key, Lfu::word(now, u8::try_from(freq).unwrap_or(u8::MAX))),
        _ => {}
    }
    db.notify(notify::GENERIC, "restore", key);
    Ok(Reply::ok())
}
