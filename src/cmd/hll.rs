//! HyperLogLog commands (Redis 7.0 `hyperloglog.c`): PFADD, PFCOUNT,
//! PFMERGE, PFDEBUG, PFSELFTEST. Values are strings in Redis's exact
//! layout (`db/hll.rs`), edited in place.

use bytes::Bytes;
use rand::Rng;

use super::util::eq;
use super::{cmd, CommandSpec, Ctx};
use crate::db::hll::{self, Corrupt};
use crate::db::{notify, DbView, StrEnc, StrValue, Value};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("pfadd", pfadd, -2, "write denyoom fast", 1, 1, 1, "@write @hyperloglog @fast")
        .doc("Adds the specified elements to the specified HyperLogLog.", "2.8.9"),
    cmd("pfcount", pfcount, -2, "readonly", 1, -1, 1, "@read @hyperloglog @slow")
        .hidden_flags("may_replicate")
        .doc("Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).", "2.8.9"),
    cmd("pfmerge", pfmerge, -2, "write denyoom", 1, -1, 1, "@write @hyperloglog @slow")
        .doc("Merge N different HyperLogLogs into a single one.", "2.8.9"),
    cmd("pfdebug", pfdebug, 3, "write denyoom admin", 2, 2, 1, "@write @hyperloglog @admin @slow @dangerous")
        .doc("Internal commands for debugging HyperLogLog values", "2.8.9"),
    cmd("pfselftest", pfselftest, 1, "admin", 0, 0, 0, "@hyperloglog @admin @slow @dangerous")
        .doc("An internal command for testing HyperLogLog values", "2.8.9"),
];

fn not_hll() -> CmdError {
    CmdError::custom("WRONGTYPE Key is not a valid HyperLogLog string value.")
}

fn corrupt(_: Corrupt) -> CmdError {
    CmdError::custom("INVALIDOBJ Corrupted HLL object detected")
}

/// The HyperLogLog at `key`: `Ok(None)` if missing, `WRONGTYPE` for other
/// types and for strings that are not HyperLogLogs.
fn get_hll<'a>(db: &'a mut DbView<'_>, key: &[u8]) -> Result<Option<&'a mut StrValue>, CmdError> {
    match db.get_mut(key) {
        None => Ok(None),
        Some(Value::Str(s)) if hll::is_valid(s) => Ok(Some(s)),
        Some(Value::Str(_)) => Err(not_hll()),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// Runs `f` on the bytes of the HyperLogLog at `key` (which must exist
/// and be valid) as an owned buffer, stored back afterwards whatever `f`
/// returns (Redis edits the string in place, so a failure midway keeps
/// what was done). The string is `raw` from then on, as Redis unshares it.
fn edit<R>(db: &mut DbView<'_>, key: &[u8], f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    // The caller's lookup was the one Redis counts (keyspace hits).
    let counted = std::mem::replace(&mut db.sig.read_lookups, false);
    let value = db.get_mut(key);
    let Some(Value::Str(s)) = value else { unreachable!("checked by the caller") };
    let r = s.edit(0, f);
    db.set_str_enc(key, StrEnc::Raw);
    db.sig.read_lookups = counted;
    r
}

fn pfadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let sparse_max = ctx.core.config.hll_sparse_max_bytes;
    let mut db = ctx.db();
    let mut updated = false;
    if get_hll(&mut db, key)?.is_none() {
        db.insert_new(key, Value::Str(StrValue::from_vec(hll::new_empty())));
        updated = true;
    }
    let result = edit(&mut db, key, |v| {
        for e in &args[2..] {
            if hll::add(v, e, sparse_max)? {
                updated = true;
            }
        }
        if updated {
            hll::invalidate(v);
        }
        Ok(())
    });
    result.map_err(corrupt)?;
    if updated {
        db.touch(key);
        db.notify(notify::STRING, "pfadd", key);
    }
    Ok(Reply::Int(i64::from(updated)))
}

/// Merges the registers of every key in `keys` into `max` (missing keys
/// count as empty). True if one of them is dense.
fn merge_keys(ctx: &mut Ctx<'_>, keys: &[Bytes], max: &mut [u8]) -> Result<bool, CmdError> {
    let mut db = ctx.db();
    let mut dense = false;
    for k in keys {
        let Some(v) = get_hll(&mut db, k)? else { continue };
        dense |= !hll::is_sparse(v);
        hll::merge_into(max, v).map_err(corrupt)?;
    }
    Ok(dense)
}

fn pfcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 2 {
        let mut max = vec![0u8; hll::REGISTERS];
        merge_keys(ctx, &args[1..], &mut max)?;
        return Ok(Reply::Int(hll::count_raw(&max) as i64));
    }
    let key = &args[1];
    let mut db = ctx.db();
    let Some(v) = get_hll(&mut db, key)? else {
        return Ok(Reply::Int(0));
    };
    if let Some(card) = hll::cached(v) {
        db.set_str_enc(key, StrEnc::Raw);
        return Ok(Reply::Int(card as i64));
    }
    // Recompute and write the cache back (the value changes: a write in
    // all but name, as in Redis).
    let card = edit(&mut db, key, |v| {
        let card = hll::count(v)?;
        hll::set_cache(v, card);
        Ok(card)
    })
    .map_err(corrupt)?;
    db.touch(key);
    Ok(Reply::Int(card as i64))
}

fn pfmerge(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let dst = &args[1];
    let mut max = vec![0u8; hll::REGISTERS];
    // Sources are read as Redis's lookupKeyRead reads them (hits/misses).
    let use_dense = ctx.with_read_lookups(true, |ctx| merge_keys(ctx, &args[1..], &mut max))?;
    let sparse_max = ctx.core.config.hll_sparse_max_bytes;
    let mut db = ctx.db();
    if get_hll(&mut db, dst)?.is_none() {
        db.insert_new(dst, Value::Str(StrValue::from_vec(hll::new_empty())));
    }
    edit(&mut db, dst, |v| {
        if use_dense {
            hll::to_dense(v)?;
        }
        for (i, &m) in max.iter().enumerate() {
            if m != 0 {
                // Redis ignores a failure here (the sources were valid).
                let _ = hll::set_register(v, i, m, sparse_max);
            }
        }
        hll::invalidate(v);
        Ok(())
    })
    .map_err(corrupt)?;
    db.touch(dst);
    db.notify(notify::STRING, "pfadd", dst);
    Ok(Reply::ok())
}

fn pfdebug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sub = &args[1];
    let key = &args[2];
    let mut db = ctx.db();
    let Some(v) = get_hll(&mut db, key)? else {
        return Err(CmdError::custom("ERR The specified key does not exist"));
    };
    let sparse = hll::is_sparse(v);
    if eq(sub, "getreg") {
        let regs = edit(&mut db, key, |v| {
            hll::to_dense(v)?;
            Ok(hll::dense_registers(v))
        })
        .map_err(corrupt)?;
        Ok(Reply::Array(regs.into_iter().map(|r| Reply::Int(i64::from(r))).collect()))
    } else if eq(sub, "decode") {
        let text = sparse.then(|| hll::decode_sparse(v));
        db.set_str_enc(key, StrEnc::Raw);
        let text = text.ok_or_else(|| CmdError::custom("ERR HLL encoding is not sparse"))?;
        Ok(Reply::Bulk(Bytes::from(text)))
    } else if eq(sub, "encoding") {
        db.set_str_enc(key, StrEnc::Raw);
        Ok(Reply::status(if sparse { "sparse" } else { "dense" }))
    } else if eq(sub, "todense") {
        let converted = edit(&mut db, key, hll::to_dense).map_err(corrupt)?;
        Ok(Reply::Int(i64::from(converted)))
    } else {
        db.set_str_enc(key, StrEnc::Raw);
        Err(CmdError::echo("ERR Unknown PFDEBUG subcommand '", sub, "'"))
    }
}

fn pfselftest(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let mut rng = rand::rng();
    match hll::selftest(|| rng.random()) {
        Ok(()) => Ok(Reply::ok()),
        Err(e) => Err(CmdError::custom(e)),
    }
}
