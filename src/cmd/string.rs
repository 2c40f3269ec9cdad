//! String commands. `SET key token NX PX 30000` is the most common lock of all.
//!
//! Redis 8.4's compare-and-set family (rows with `since` 8.4.0, so unknown
//! under older profiles): `DIGEST`, `DELEX`, `MSETEX` and `SET`'s
//! `IFEQ`/`IFNE`/`IFDEQ`/`IFDNE`. No 8.4 server can be installed where rlockd
//! is tested, so these follow Redis 8.4's documentation and command JSON
//! files (`src/commands/{digest,delex,msetex,set}.json`), and what its source
//! and issues say (#14496, #14502: the digest is always 16 lower-case hex
//! digits, a digest argument must be 16 characters and compares without
//! regard to case); where they are silent the choice is written at the
//! handler. Valkey 8.1's `SET … IFEQ` (its own semantics, checked against
//! valkey-server 8.1.8) is a separate option bit.

use bytes::Bytes;

use super::util::{eq, int};
use super::{cmd, CommandSpec, Ctx};
use crate::db::{notify, StrEnc, StrValue, Value};
use crate::error::{CmdError, CmdResult};
use crate::num::{self, LdError};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("get", get, 2, "readonly fast", 1, 1, 1, "@read @string @fast").doc("Get the value of a key", "1.0.0"),
    cmd("set", set, -3, "write denyoom", 1, 1, 1, "@write @string @slow").doc("Set the string value of a key", "1.0.0"),
    cmd("setnx", setnx, 3, "write denyoom fast", 1, 1, 1, "@write @string @fast")
        .doc("Set the value of a key, only if the key does not exist", "1.0.0"),
    cmd("setex", setex, 4, "write denyoom", 1, 1, 1, "@write @string @slow")
        .doc("Set the value and expiration of a key", "2.0.0"),
    cmd("psetex", psetex, 4, "write denyoom", 1, 1, 1, "@write @string @slow")
        .doc("Set the value and expiration in milliseconds of a key", "2.6.0"),
    cmd("getset", getset, 3, "write denyoom fast", 1, 1, 1, "@write @string @fast")
        .doc("Set the string value of a key and return its old value", "1.0.0"),
    cmd("getdel", getdel, 2, "write fast", 1, 1, 1, "@write @string @fast")
        .doc("Get the value of a key and delete the key", "6.2.0"),
    cmd("getex", getex, -2, "write fast", 1, 1, 1, "@write @string @fast")
        .doc("Get the value of a key and optionally set its expiration", "6.2.0"),
    cmd("mget", mget, -2, "readonly fast", 1, -1, 1, "@read @string @fast")
        .doc("Get the values of all the given keys", "1.0.0"),
    cmd("mset", mset, -3, "write denyoom", 1, -1, 2, "@write @string @slow")
        .doc("Set multiple keys to multiple values", "1.0.1"),
    cmd("msetnx", msetnx, -3, "write denyoom", 1, -1, 2, "@write @string @slow")
        .doc("Set multiple keys to multiple values, only if none of the keys exist", "1.0.1"),
    cmd("incr", incr, 2, "write denyoom fast", 1, 1, 1, "@write @string @fast")
        .doc("Increment the integer value of a key by one", "1.0.0"),
    cmd("decr", decr, 2, "write denyoom fast", 1, 1, 1, "@write @string @fast")
        .doc("Decrement the integer value of a key by one", "1.0.0"),
    cmd("incrby", incrby, 3, "write denyoom fast", 1, 1, 1, "@write @string @fast")
        .doc("Increment the integer value of a key by the given amount", "1.0.0"),
    cmd("decrby", decrby, 3, "write denyoom fast", 1, 1, 1, "@write @string @fast")
        .doc("Decrement the integer value of a key by the given number", "1.0.0"),
    cmd("incrbyfloat", incrbyfloat, 3, "write denyoom fast", 1, 1, 1, "@write @string @fast")
        .doc("Increment the float value of a key by the given amount", "2.6.0"),
    cmd("append", append, 3, "write denyoom fast", 1, 1, 1, "@write @string @fast")
        .doc("Append a value to a key", "2.0.0"),
    cmd("lcs", lcs, -3, "readonly", 1, 2, 1, "@read @string @slow").doc("Find longest common substring", "7.0.0"),
    cmd("strlen", strlen, 2, "readonly fast", 1, 1, 1, "@read @string @fast")
        .doc("Get the length of the value stored in a key", "2.2.0"),
    cmd("getrange", getrange, 4, "readonly", 1, 1, 1, "@read @string @slow")
        .doc("Get a substring of the string stored at a key", "2.4.0"),
    cmd("setrange", setrange, 4, "write denyoom", 1, 1, 1, "@write @string @slow")
        .doc("Overwrite part of a string at key starting at the specified offset", "2.2.0"),
    cmd("substr", substr, 4, "readonly", 1, 1, 1, "@read @string @slow")
        .doc("Get a substring of the string stored at a key", "1.0.0"),
    cmd("digest", digest, 2, "readonly fast", 1, 1, 1, "@read @string @fast")
        .doc("Returns the XXH3 hash of a string value.", "8.4.0"),
    cmd("delex", delex, -2, "write fast", 1, 1, 1, "@write @string @fast")
        .doc("Conditionally removes the specified key based on value or digest comparison.", "8.4.0"),
    cmd("msetex", msetex, -4, "write denyoom movablekeys", 0, 0, 0, "@write @string @slow")
        .doc("Atomically sets multiple string keys with a shared expiration in a single operation.", "8.4.0"),
];

fn get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    Ok(match ctx.db().get_str(&args[1])? {
        Some(s) => s.reply(),
        None => Reply::Nil,
    })
}

const SET_NX: u32 = 1;
const SET_XX: u32 = 2;
const SET_GET: u32 = 4;
const SET_KEEPTTL: u32 = 8;
const SET_PERSIST: u32 = 16;
const SET_EX: u32 = 32;
const SET_PX: u32 = 64;
const SET_EXAT: u32 = 128;
const SET_PXAT: u32 = 256;
const ANY_EXPIRE: u32 = SET_EX | SET_PX | SET_EXAT | SET_PXAT;
/// Valkey 8.1's `IFEQ comparison-value`: set only over that value.
const SET_IFEQ: u32 = 512;
/// Redis 8.4's conditions: `IFEQ value`, `IFNE value`, `IFDEQ digest`,
/// `IFDNE digest` (one of them; not after `NX`/`XX`).
const SET_IF_EQ: u32 = 1024;
const SET_IF_NE: u32 = 2048;
const SET_IF_DEQ: u32 = 4096;
const SET_IF_DNE: u32 = 8192;
const ANY_IF: u32 = SET_IF_EQ | SET_IF_NE | SET_IF_DEQ | SET_IF_DNE;
/// What `MSETEX` takes of the options (Redis's `COMMAND_MSETEX`): `NX`,
/// `XX`, `KEEPTTL` and the expiries, not `GET` nor the conditions.
const MSETEX_OPTS: u8 = 2;

/// SET / GETEX / MSETEX options: the flags, the expiry argument, and the
/// condition's value (`IFEQ`…).
type StringOpts<'a> = (u32, Option<&'a Bytes>, Option<&'a Bytes>);

/// The condition bit `o` names under `profile`, if it is one: Redis 8.4's
/// four, or Valkey 8.1's `IFEQ` (its own bit). Only reached by a token no
/// other option matched, so a plain `SET` never asks the profile.
#[cold]
fn condition_bit(o: &[u8], profile: &crate::version::Profile) -> Option<u32> {
    if profile.is_valkey() {
        let valkey_81 = profile.version() >= crate::version::Version::new(8, 1, 0);
        return (valkey_81 && eq(o, "ifeq")).then_some(SET_IFEQ);
    }
    if !profile.at_least(8, 4, 0) {
        return None;
    }
    [("ifeq", SET_IF_EQ), ("ifne", SET_IF_NE), ("ifdeq", SET_IF_DEQ), ("ifdne", SET_IF_DNE)]
        .into_iter()
        .find(|(name, _)| eq(o, name))
        .map(|(_, bit)| bit)
}

/// Parses SET / GETEX / MSETEX options exactly as Redis's
/// `parseExtendedStringArgumentsOrReply` (same precedence, same errors).
/// `kind`: 0 GETEX, 1 SET, [`MSETEX_OPTS`]. SET's conditions come from
/// `profile` ([`condition_bit`]): Valkey 8.1's `IFEQ` is exclusive with NX
/// and XX both ways; Redis 8.4's refuse any condition or NX/XX before them
/// (a repeated same one replaces its value), while its NX and XX check only
/// each other, as Redis 8.4's parser does.
fn parse_string_opts<'a>(
    args: &'a [Bytes],
    kind: u8,
    profile: &crate::version::Profile,
) -> Result<StringOpts<'a>, CmdError> {
    let is_set = kind == 1;
    let set_or_msetex = kind != 0;
    let mut f = 0u32;
    let mut expire = None;
    let mut ifeq = None;
    let mut j = 0;
    while j < args.len() {
        let o = &args[j];
        let has_next = j + 1 < args.len();
        if set_or_msetex && eq(o, "nx") && f & (SET_XX | SET_IFEQ) == 0 {
            f |= SET_NX;
        } else if set_or_msetex && eq(o, "xx") && f & (SET_NX | SET_IFEQ) == 0 {
            f |= SET_XX;
        } else if is_set && eq(o, "get") {
            f |= SET_GET;
        } else if set_or_msetex && eq(o, "keepttl") && f & (SET_PERSIST | ANY_EXPIRE) == 0 {
            f |= SET_KEEPTTL;
        } else if kind == 0 && eq(o, "persist") && f & (ANY_EXPIRE | SET_KEEPTTL) == 0 {
            f |= SET_PERSIST;
        } else if eq(o, "ex") && f & (SET_KEEPTTL | SET_PERSIST | SET_EXAT | SET_PX | SET_PXAT) == 0 && has_next {
            f |= SET_EX;
            expire = Some(&args[j + 1]);
            j += 1;
        } else if eq(o, "px") && f & (SET_KEEPTTL | SET_PERSIST | SET_EX | SET_EXAT | SET_PXAT) == 0 && has_next {
            f |= SET_PX;
            expire = Some(&args[j + 1]);
            j += 1;
        } else if eq(o, "exat") && f & (SET_KEEPTTL | SET_PERSIST | SET_EX | SET_PX | SET_PXAT) == 0 && has_next {
            f |= SET_EXAT;
            expire = Some(&args[j + 1]);
            j += 1;
        } else if eq(o, "pxat") && f & (SET_KEEPTTL | SET_PERSIST | SET_EX | SET_EXAT | SET_PX) == 0 && has_next {
            f |= SET_PXAT;
            expire = Some(&args[j + 1]);
            j += 1;
        } else {
            let bit = if is_set && has_next { condition_bit(o, profile) } else { None };
            let Some(bit) = bit else { return Err(CmdError::Syntax) };
            let excluded = if bit == SET_IFEQ { SET_NX | SET_XX | SET_IFEQ } else { (SET_NX | SET_XX | ANY_IF) & !bit };
            if f & excluded != 0 {
                return Err(CmdError::Syntax);
            }
            f |= bit;
            ifeq = Some(&args[j + 1]);
            j += 1;
        }
        j += 1;
    }
    Ok((f, expire, ifeq))
}

/// Redis `getExpireMillisecondsOrReply`: absolute deadline in ms.
fn expire_ms(ctx: &Ctx<'_>, name: &str, arg: &[u8], f: u32) -> Result<u64, CmdError> {
    let bad = || CmdError::custom(format!("ERR invalid expire time in '{name}' command"));
    let mut ms = int(arg)?;
    let seconds = f & (SET_EX | SET_EXAT) != 0;
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        return Err(bad());
    }
    if seconds {
        ms *= 1000;
    }
    if f & (SET_EX | SET_PX) != 0 {
        ms = ms.checked_add(ctx.now_ms() as i64).ok_or_else(bad)?;
    }
    if ms <= 0 {
        return Err(bad());
    }
    Ok(ms as u64)
}

/// The shared core of SET, SETNX, SETEX, PSETEX.
/// The string at `key`, read the way Redis's `lookupKeyRead` does inside a
/// write command (counted as a keyspace hit or miss); WRONGTYPE otherwise.
fn read_counted(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Reply>, CmdError> {
    ctx.with_read_lookups(true, |ctx| ctx.db().get_str(key).map(|s| s.map(StrValue::reply)))
}

#[allow(clippy::too_many_arguments)]
fn set_generic(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    val: &Bytes,
    f: u32,
    expire: Option<u64>,
    ifeq: Option<&Bytes>,
    abort: Reply,
    ok: Reply,
) -> CmdResult {
    let mut get_reply = None;
    if f & SET_GET != 0 {
        get_reply = Some(read_counted(ctx, key)?.unwrap_or(Reply::Nil));
    }
    if let Some(want) = ifeq {
        if f & SET_IFEQ != 0 {
            // Valkey: only over a string holding exactly `want` (another
            // type: WRONGTYPE).
            if ctx.db().get_str(key)?.map(|s| &s[..]) != Some(&want[..]) {
                return Ok(get_reply.unwrap_or(abort));
            }
        } else if !condition_holds(ctx, key, f, want)? {
            return Ok(get_reply.unwrap_or(abort));
        }
    }
    let valkey_past =
        ctx.core.profile().is_valkey() && f & (SET_EXAT | SET_PXAT) != 0 && expire.is_some_and(|at| at <= ctx.now_ms());
    let mut db = ctx.db();
    let found = db.exists(key);
    if (f & SET_NX != 0 && found) || (f & SET_XX != 0 && !found) {
        return Ok(get_reply.unwrap_or(abort));
    }
    if valkey_past {
        // Valkey 8: a value given a deadline already past is not stored;
        // the key it replaces expires.
        if found {
            db.expire_now(key);
        }
        return Ok(get_reply.unwrap_or(ok));
    }
    db.set(key, Value::Str(StrValue::new(val)), f & SET_KEEPTTL != 0);
    db.notify(notify::STRING, "set", key);
    if let Some(at) = expire {
        db.set_expire(key, at);
        db.notify(notify::GENERIC, "expire", key);
    }
    Ok(get_reply.unwrap_or(ok))
}

/// Redis 8.4's `SET` condition over the key's current value, in
/// `setGenericCommand`'s order: a missing key fails `IFEQ`/`IFDEQ` (and `NX`
/// is checked before the value is read, so `SET k v IFEQ x NX` over an
/// existing key aborts without a type check); a present one must be a
/// string (WRONGTYPE), and a digest must be 16 characters.
#[cold]
fn condition_holds(ctx: &mut Ctx<'_>, key: &Bytes, f: u32, want: &Bytes) -> Result<bool, CmdError> {
    let found = ctx.db().exists(key);
    if (f & SET_NX != 0 && found) || (f & (SET_XX | SET_IF_EQ | SET_IF_DEQ) != 0 && !found) {
        return Ok(false);
    }
    if !found {
        return Ok(true);
    }
    let cur = read_counted(ctx, key)?;
    let cur = cur.as_ref().and_then(Reply::as_bulk).unwrap_or_default();
    Ok(match f & ANY_IF {
        SET_IF_EQ => cur == &want[..],
        SET_IF_NE => cur != &want[..],
        SET_IF_DEQ => digest_matches(cur, want)?,
        _ => !digest_matches(cur, want)?,
    })
}

/// The digest of a string value as `DIGEST` prints it: XXH3 64-bit (seed
/// 0) of its bytes, 16 lower-case hex digits with leading zeros (Redis
/// 8.4's `stringDigest`, `%016llx` since #14502).
pub(crate) fn value_digest(v: &[u8]) -> [u8; 16] {
    let h = xxhash_rust::xxh3::xxh3_64(v);
    let mut out = [0u8; 16];
    for (i, d) in out.iter_mut().enumerate() {
        *d = b"0123456789abcdef"[((h >> (60 - 4 * i)) & 0xf) as usize];
    }
    out
}

/// Whether `digest` (an `IFDEQ`/`IFDNE` argument) names `value`'s digest:
/// exactly 16 characters or an error (Redis 8.4's `validateHexDigest`,
/// which checks only the length), compared without regard to case.
fn digest_matches(value: &[u8], digest: &[u8]) -> Result<bool, CmdError> {
    if digest.len() != 16 {
        return Err(CmdError::custom("ERR must be exactly 16 hexadecimal characters"));
    }
    Ok(value_digest(value).eq_ignore_ascii_case(digest))
}

fn set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let profile = ctx.core.profile();
    let (f, exp, ifeq) = parse_string_opts(&args[3..], 1, &profile)?;
    let expire = match exp {
        Some(e) => Some(expire_ms(ctx, "set", e, f)?),
        None => None,
    };
    set_generic(ctx, &args[1], &args[2], f, expire, ifeq, Reply::Nil, Reply::ok())
}

fn setnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    set_generic(ctx, &args[1], &args[2], SET_NX, None, None, Reply::Int(0), Reply::Int(1))
}

fn setex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let at = expire_ms(ctx, "setex", &args[2], SET_EX)?;
    set_generic(ctx, &args[1], &args[3], 0, Some(at), None, Reply::Nil, Reply::ok())
}

fn psetex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let at = expire_ms(ctx, "psetex", &args[2], SET_PX)?;
    set_generic(ctx, &args[1], &args[3], 0, Some(at), None, Reply::Nil, Reply::ok())
}

fn getset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let old = read_counted(ctx, &args[1])?;
    let mut db = ctx.db();
    db.set(&args[1], Value::Str(StrValue::new(&args[2])), false);
    db.notify(notify::STRING, "set", &args[1]);
    Ok(old.unwrap_or(Reply::Nil))
}

fn getdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let old = read_counted(ctx, &args[1])?;
    let mut db = ctx.db();
    if old.is_some() {
        db.remove(&args[1]);
        db.notify(notify::GENERIC, "del", &args[1]);
    }
    Ok(old.unwrap_or(Reply::Nil))
}

fn getex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (f, exp, _) = parse_string_opts(&args[2..], 0, &ctx.core.profile())?;
    let key = &args[1];
    let Some(val) = read_counted(ctx, key)? else {
        return Ok(Reply::Nil);
    };
    let at = match exp {
        Some(e) => Some(expire_ms(ctx, "getex", e, f)?),
        None => None,
    };
    let now = ctx.now_ms();
    let valkey = ctx.core.profile().is_valkey();
    let mut db = ctx.db();
    match at {
        Some(at) if f & (SET_EXAT | SET_PXAT) != 0 && at <= now && valkey => db.expire_now(key),
        Some(at) if f & (SET_EXAT | SET_PXAT) != 0 && at <= now => {
            db.remove(key);
            db.notify(notify::GENERIC, "del", key);
        }
        Some(at) => {
            db.set_expire(key, at);
            db.touch(key);
            db.notify(notify::GENERIC, "expire", key);
        }
        None => {
            if f & SET_PERSIST != 0 && db.persist(key) {
                db.touch(key);
                db.notify(notify::GENERIC, "persist", key);
            }
        }
    }
    Ok(val)
}

fn mget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(Reply::Array(
        args[1..]
            .iter()
            .map(|k| match db.get_str(k) {
                Ok(Some(s)) => s.reply(),
                _ => Reply::Nil,
            })
            .collect(),
    ))
}

fn mset_generic(ctx: &mut Ctx<'_>, args: &[Bytes], nx: bool) -> CmdResult {
    if args.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity(String::from_utf8_lossy(&args[0]).to_ascii_lowercase()));
    }
    let mut db = ctx.db();
    if nx && args[1..].chunks(2).any(|kv| db.exists(&kv[0])) {
        return Ok(Reply::Int(0));
    }
    for kv in args[1..].chunks(2) {
        db.set(&kv[0], Value::Str(StrValue::new(&kv[1])), false);
        db.notify(notify::STRING, "set", &kv[0]);
    }
    Ok(if nx { Reply::Int(1) } else { Reply::ok() })
}

fn mset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    mset_generic(ctx, args, false)
}

fn msetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    mset_generic(ctx, args, true)
}

/// `DIGEST key`: [`value_digest`] of a string, nil for a missing key,
/// WRONGTYPE for another type.
fn digest(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    Ok(match ctx.db().get_str(&args[1])? {
        Some(v) => Reply::Bulk(Bytes::copy_from_slice(&value_digest(v))),
        None => Reply::Nil,
    })
}

/// `DELEX key [IFEQ value | IFNE value | IFDEQ digest | IFDNE digest]`:
/// 1 if it deleted the key, else 0; replicated as `DEL key`.
///
/// Without a condition it deletes a key of any type. With one, the key
/// must hold a string (WRONGTYPE), and a digest must be 16 characters
/// (compared without regard to case). Redis's JSON gives arity -2 and one
/// optional condition; what it answers to `DELEX k IFEQ` or to more
/// arguments is not documented: rlockd answers the wrong-number-of-
/// arguments error, as Redis does for the arities a handler checks itself
/// (`MSET`'s odd count). The order of the rest follows the shape of Redis
/// 8.4's `delexCommand` as its fixes show it (the value is looked up, then
/// the condition's name read): a missing key answers 0 whatever the
/// condition, the type is checked next, and an unknown condition is a
/// syntax error.
fn delex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    if args.len() != 2 && args.len() != 4 {
        return Err(CmdError::WrongArity("delex".into()));
    }
    if args.len() == 2 {
        let mut db = ctx.db();
        if db.remove(key).is_none() {
            return Ok(Reply::Int(0));
        }
        db.notify(notify::GENERIC, "del", key);
        return Ok(Reply::Int(1));
    }
    let Some(cur) = read_counted(ctx, key)? else {
        return Ok(Reply::Int(0));
    };
    let cur = cur.as_bulk().unwrap_or_default();
    let (cond, arg) = (&args[2], &args[3]);
    let matched = if eq(cond, "ifeq") {
        cur == arg
    } else if eq(cond, "ifne") {
        cur != arg
    } else if eq(cond, "ifdeq") {
        digest_matches(cur, arg)?
    } else if eq(cond, "ifdne") {
        !digest_matches(cur, arg)?
    } else {
        return Err(CmdError::Syntax);
    };
    if !matched {
        return Ok(Reply::Int(0));
    }
    let mut db = ctx.db();
    db.remove(key);
    db.notify(notify::GENERIC, "del", key);
    Ok(Reply::Int(1))
}

/// `MSETEX numkeys key value [key value …] [NX | XX] [EX s | PX ms | EXAT
/// s | PXAT ms | KEEPTTL]` (Redis 8.4's `msetexCommand`): 1 when every key
/// was set, 0 when `NX` found one present or `XX` one missing (nothing is
/// set then). Checks in Redis's order: `numkeys` (1 to `INT_MAX`), that
/// the pairs are there, the options (`GET` and the conditions are syntax
/// errors here), the expiry, then the condition over all keys. Each key
/// gets its value (a previous TTL is dropped unless `KEEPTTL`), then its
/// deadline with an `expire` event, then the `set` event. Replicated as it
/// came but with `EX`/`PX` turned into `PXAT` (`replication/rewrite.rs`).
fn msetex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let numkeys = match crate::num::parse_int(&args[1]) {
        Ok(n) if (1..=i32::MAX as i64).contains(&n) => n as usize,
        _ => return Err(CmdError::custom("ERR invalid numkeys value")),
    };
    let end = numkeys.checked_mul(2).and_then(|n| n.checked_add(2)).filter(|&e| e <= args.len());
    let Some(end) = end else {
        return Err(CmdError::custom("ERR wrong number of key-value pairs"));
    };
    let (f, exp, _) = parse_string_opts(&args[end..], MSETEX_OPTS, &ctx.core.profile())?;
    let expire = match exp {
        Some(e) => Some(expire_ms(ctx, "msetex", e, f)?),
        None => None,
    };
    let pairs = &args[2..end];
    let mut db = ctx.db();
    if f & (SET_NX | SET_XX) != 0 {
        let nx = f & SET_NX != 0;
        if pairs.chunks(2).any(|kv| db.exists(&kv[0]) == nx) {
            return Ok(Reply::Int(0));
        }
    }
    for kv in pairs.chunks(2) {
        db.set(&kv[0], Value::Str(StrValue::new(&kv[1])), f & SET_KEEPTTL != 0);
        if let Some(at) = expire {
            db.set_expire(&kv[0], at);
            db.notify(notify::GENERIC, "expire", &kv[0]);
        }
        db.notify(notify::STRING, "set", &kv[0]);
    }
    Ok(Reply::Int(1))
}

fn incr_by(ctx: &mut Ctx<'_>, key: &Bytes, incr: i64) -> CmdResult {
    let mut db = ctx.db();
    let cur = match db.get_str(key)? {
        Some(s) => num::parse_int(s)?,
        None => 0,
    };
    let new = cur.checked_add(incr).ok_or(CmdError::Overflow)?;
    let v = Value::Str(StrValue::new(itoa::Buffer::new().format(new).as_bytes()));
    db.set(key, v, true);
    db.notify(notify::STRING, "incrby", key);
    Ok(Reply::Int(new))
}

fn incr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    incr_by(ctx, &args[1], 1)
}

fn decr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    incr_by(ctx, &args[1], -1)
}

fn incrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let n = int(&args[2])?;
    incr_by(ctx, &args[1], n)
}

fn decrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let n = int(&args[2])?;
    if n == i64::MIN {
        return Err(CmdError::custom("ERR decrement would overflow"));
    }
    incr_by(ctx, &args[1], -n)
}

fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    let cur = db.get_str(key)?.cloned();
    let new = num::incr_long_double(cur.as_deref(), &args[2]).map_err(|e| match e {
        LdError::Current | LdError::Increment => CmdError::NotFloat,
        LdError::NanOrInf => CmdError::NanOrInfinity,
    })?;
    let b = Bytes::from(new);
    db.set_float(key, Value::Str(StrValue::new(&b)));
    db.notify(notify::STRING, "incrbyfloat", key);
    Ok(Reply::Bulk(b))
}

fn check_len(ctx: &Ctx<'_>, total: u64) -> Result<(), CmdError> {
    if total > ctx.core.config.proto_max_bulk as u64 {
        return Err(CmdError::custom("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
    }
    Ok(())
}

fn append(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let cur_len = match ctx.db().get_str(key)? {
        Some(s) => s.len(),
        None => {
            let mut db = ctx.db();
            db.set(key, Value::Str(StrValue::new(&args[2])), false);
            db.notify(notify::STRING, "append", key);
            return Ok(Reply::Int(args[2].len() as i64));
        }
    };
    check_len(ctx, (cur_len + args[2].len()) as u64)?;
    let mut db = ctx.db();
    let Some(Value::Str(s)) = db.get_mut(key) else { unreachable!("checked string above") };
    s.edit(args[2].len(), |m| m.extend_from_slice(&args[2]));
    let len = s.len();
    db.set_str_enc(key, StrEnc::Raw);
    db.touch(key);
    db.notify(notify::STRING, "append", key);
    Ok(Reply::Int(len as i64))
}

fn strlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    Ok(Reply::Int(ctx.db().get_str(&args[1])?.map_or(0, |s| s.len() as i64)))
}

fn getrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut start = int(&args[2])?;
    let mut end = int(&args[3])?;
    let mut db = ctx.db();
    let Some(s) = db.get_str(&args[1])? else {
        return Ok(Reply::Bulk(Bytes::new()));
    };
    let len = s.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Ok(Reply::Bulk(Bytes::new()));
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return Ok(Reply::Bulk(Bytes::new()));
    }
    Ok(Reply::Bulk(Bytes::copy_from_slice(&s[start as usize..=end as usize])))
}

fn substr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    getrange(ctx, args)
}

fn setrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let offset = int(&args[2])?;
    if offset < 0 {
        return Err(CmdError::custom("ERR offset is out of range"));
    }
    let value = &args[3];
    let offset = offset as usize;
    let exists = ctx.db().get_str(key)?.map(|s| s.len());
    match exists {
        None => {
            if value.is_empty() {
                return Ok(Reply::Int(0));
            }
            check_len(ctx, offset as u64 + value.len() as u64)?;
            let mut v = vec![0u8; offset];
            v.extend_from_slice(value);
            let len = v.len();
            let mut db = ctx.db();
            db.set(key, Value::Str(StrValue::from_vec(v)), false);
            db.set_str_enc(key, StrEnc::Raw);
            db.notify(notify::STRING, "setrange", key);
            Ok(Reply::Int(len as i64))
        }
        Some(olen) => {
            if value.is_empty() {
                return Ok(Reply::Int(olen as i64));
            }
            check_len(ctx, offset as u64 + value.len() as u64)?;
            let mut db = ctx.db();
            let Some(Value::Str(s)) = db.get_mut(key) else { unreachable!("checked string above") };
            let need = offset + value.len();
            s.edit(need.saturating_sub(s.len()), |m| {
                if m.len() < need {
                    m.resize(need, 0);
                }
                m[offset..need].copy_from_slice(value);
            });
            let len = s.len();
            db.set_str_enc(key, StrEnc::Raw);
            db.touch(key);
            db.notify(notify::STRING, "setrange", key);
            Ok(Reply::Int(len as i64))
        }
    }
}

/// `LCS a b [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]`: Redis's dynamic
/// programming table and its backward walk, so the matched ranges come out
/// exactly as Redis reports them.
fn lcs(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (a, b) = {
        let mut db = ctx.db();
        let wrong = || CmdError::custom("ERR The specified keys must contain string values");
        let a = match db.get(&args[1]) {
            None => Bytes::new(),
            Some(Value::Str(s)) => s.to_bytes(),
            Some(_) => return Err(wrong()),
        };
        let b = match db.get(&args[2]) {
            None => Bytes::new(),
            Some(Value::Str(s)) => s.to_bytes(),
            Some(_) => return Err(wrong()),
        };
        (a, b)
    };
    let (mut get_len, mut get_idx, mut with_match_len, mut min_match_len) = (false, false, false, 0i64);
    let mut j = 3;
    while j < args.len() {
        if eq(&args[j], "idx") {
            get_idx = true;
        } else if eq(&args[j], "len") {
            get_len = true;
        } else if eq(&args[j], "withmatchlen") {
            with_match_len = true;
        } else if eq(&args[j], "minmatchlen") && j + 1 < args.len() {
            min_match_len = int(&args[j + 1])?.max(0);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if get_idx && get_len {
        return Err(CmdError::custom("ERR If you want both the length and indexes, please just use IDX."));
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    if cells.saturating_mul(4) > ctx.core.config.proto_max_bulk as u64 {
        return Err(CmdError::custom("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"));
    }
    let w = blen + 1;
    let mut t = vec![0u32; cells as usize];
    for i in 1..=alen {
        for j in 1..=blen {
            t[i * w + j] = if a[i - 1] == b[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    let total = t[alen * w + blen] as usize;
    let compute = get_idx || !get_len;
    let mut result = vec![0u8; if compute { total } else { 0 }];
    let mut matches = Vec::new();
    let (mut idx, mut i, mut j) = (total, alen, blen);
    // `arange_start == alen` means no range is open.
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0, 0, 0);
    while compute && i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if a_start == alen {
                (a_start, a_end, b_start, b_end) = (i - 1, i - 1, j - 1, j - 1);
            } else if a_start == i && b_start == j {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if t[(i - 1) * w + j] > t[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        if emit {
            let len = a_end as i64 - a_start as i64 + 1;
            if get_idx && (min_match_len == 0 || len >= min_match_len) {
                let range = |s: usize, e: usize| Reply::Array(vec![Reply::Int(s as i64), Reply::Int(e as i64)]);
                let mut m = vec![range(a_start, a_end), range(b_start, b_end)];
                if with_match_len {
                    m.push(Reply::Int(len));
                }
                matches.push(Reply::Array(m));
            }
            a_start = alen;
        }
    }
    Ok(if get_idx {
        Reply::Map(vec![
            (Reply::bulk_str("matches"), Reply::Array(matches)),
            (Reply::bulk_str("len"), Reply::Int(total as i64)),
        ])
    } else if get_len {
        Reply::Int(total as i64)
    } else {
        Reply::Bulk(Bytes::from(result))
    })
}

#[cfg(test)]
mod tests {
    use super::value_digest;

    #[test]
    fn digests_are_xxh3_in_sixteen_lower_case_hex_digits() {
        // XXH3-64 (seed 0) vectors from public documentation: the empty
        // input (xxHash's own), Redis 8.4's DIGEST page ("Hello world"),
        // Dragonfly's DIGEST page ("hello", "test"), Tenzir's hash_xxh3
        // ("foo"), and redis/redis#14496's value whose digest starts with
        // zeros (printed with them since #14502).
        let cases: &[(&[u8], &str)] = &[
            (b"", "2d06800538d394c2"),
            (b"Hello world", "b6acb9d84a38ff74"),
            (b"hello", "9555e8555c62dcfd"),
            (b"test", "9ec9f7918d7dfc40"),
            (b"foo", "ab6e5f64077e7d8a"),
            (
                b"v8lf0c11xh8ymlqztfd3eeq16kfn4sspw7fqmnuuq3k3t75em5wdizgcdw7uc26nnf961u2jkfzkjytls2kwlj7626sd",
                "00006c38adf31777",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                std::str::from_utf8(&value_digest(input)).unwrap(),
                *want,
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }
}
