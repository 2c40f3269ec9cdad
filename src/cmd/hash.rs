//! Hash commands (Redis 7.0 `t_hash.c`), and field expiration: Redis 7.4's
//! `HEXPIRE` family and 8.0's `HGETEX`/`HSETEX`/`HGETDEL`, rows whose `since`
//! hides them under older profiles. A field past its deadline is never
//! returned: commands naming fields delete the due ones first (as Redis:
//! `hexpired`, replicated as `HDEL`), whole-hash readers skip them, and
//! `HLEN` counts them until they are deleted, as Redis does.
//!
//! Small hashes keep insertion order on deletion (like a listpack), so
//! `HGETALL`, `HKEYS` and a full `HSCAN` answer in the same order as Redis
//! for hashes Redis keeps as a listpack.

use bytes::Bytes;
use rand::Rng;

use super::util::{cursor, eq, int, scan_opts};
use super::{cmd, CommandSpec, Ctx};
use crate::db::value::HashValue;
use crate::db::{notify, scan_step, DbView, StrEnc, Value};
use crate::error::{CmdError, CmdResult};
use crate::glob;
use crate::num::{self, LdError};
use crate::protocol::{Reply, Resp};

pub static COMMANDS: &[CommandSpec] = &[
    cmd("hset", hset, -4, "write denyoom fast", 1, 1, 1, "@write @hash @fast")
        .doc("Set the string value of a hash field", "2.0.0"),
    cmd("hsetnx", hsetnx, 4, "write denyoom fast", 1, 1, 1, "@write @hash @fast")
        .doc("Set the value of a hash field, only if the field does not exist", "2.0.0"),
    cmd("hget", hget, 3, "readonly fast", 1, 1, 1, "@read @hash @fast").doc("Get the value of a hash field", "2.0.0"),
    cmd("hmget", hmget, -3, "readonly fast", 1, 1, 1, "@read @hash @fast")
        .doc("Get the values of all the given hash fields", "2.0.0"),
    cmd("hmset", hmset, -4, "write denyoom fast", 1, 1, 1, "@write @hash @fast")
        .doc("Set multiple hash fields to multiple values", "2.0.0"),
    cmd("hdel", hdel, -3, "write fast", 1, 1, 1, "@write @hash @fast").doc("Delete one or more hash fields", "2.0.0"),
    cmd("hexists", hexists, 3, "readonly fast", 1, 1, 1, "@read @hash @fast")
        .doc("Determine if a hash field exists", "2.0.0"),
    cmd("hlen", hlen, 2, "readonly fast", 1, 1, 1, "@read @hash @fast")
        .doc("Get the number of fields in a hash", "2.0.0"),
    cmd("hkeys", hkeys, 2, "readonly", 1, 1, 1, "@read @hash @slow").doc("Get all the fields in a hash", "2.0.0"),
    cmd("hvals", hvals, 2, "readonly", 1, 1, 1, "@read @hash @slow").doc("Get all the values in a hash", "2.0.0"),
    cmd("hgetall", hgetall, 2, "readonly", 1, 1, 1, "@read @hash @slow")
        .doc("Get all the fields and values in a hash", "2.0.0"),
    cmd("hincrby", hincrby, 4, "write denyoom fast", 1, 1, 1, "@write @hash @fast")
        .doc("Increment the integer value of a hash field by the given number", "2.0.0"),
    cmd("hincrbyfloat", hincrbyfloat, 4, "write denyoom fast", 1, 1, 1, "@write @hash @fast")
        .doc("Increment the float value of a hash field by the given amount", "2.6.0"),
    cmd("hstrlen", hstrlen, 3, "readonly fast", 1, 1, 1, "@read @hash @fast")
        .doc("Get the length of the value of a hash field", "3.2.0"),
    cmd("hscan", hscan, -3, "readonly", 1, 1, 1, "@read @hash @slow")
        .doc("Incrementally iterate hash fields and associated values", "2.8.0"),
    cmd("hrandfield", hrandfield, -2, "readonly", 1, 1, 1, "@read @hash @slow")
        .doc("Get one or multiple random fields from a hash", "6.2.0"),
    cmd("hexpire", hexpire, -6, "write fast", 1, 1, 1, "@write @hash @fast")
        .doc("Set expiry for hash field using relative time to expire (seconds)", "7.4.0"),
    cmd("hpexpire", hexpire, -6, "write fast", 1, 1, 1, "@write @hash @fast")
        .doc("Set expiry for hash field using relative time to expire (milliseconds)", "7.4.0"),
    cmd("hexpireat", hexpire, -6, "write fast", 1, 1, 1, "@write @hash @fast")
        .doc("Set expiry for hash field using an absolute Unix timestamp (seconds)", "7.4.0"),
    cmd("hpexpireat", hexpire, -6, "write fast", 1, 1, 1, "@write @hash @fast")
        .doc("Set expiry for hash field using an absolute Unix timestamp (milliseconds)", "7.4.0"),
    cmd("httl", httl, -5, "readonly fast", 1, 1, 1, "@read @hash @fast")
        .doc("Returns the TTL in seconds of a hash field.", "7.4.0"),
    cmd("hpttl", httl, -5, "readonly fast", 1, 1, 1, "@read @hash @fast")
        .doc("Returns the TTL in milliseconds of a hash field.", "7.4.0"),
    cmd("hexpiretime", httl, -5, "readonly fast", 1, 1, 1, "@read @hash @fast")
        .doc("Returns the expiration time of a hash field as a Unix timestamp, in seconds.", "7.4.0"),
    cmd("hpexpiretime", httl, -5, "readonly fast", 1, 1, 1, "@read @hash @fast")
        .doc("Returns the expiration time of a hash field as a Unix timestamp, in msec.", "7.4.0"),
    cmd("hpersist", hpersist, -5, "write fast", 1, 1, 1, "@write @hash @fast")
        .doc("Removes the expiration time for each specified field", "7.4.0"),
    cmd("hgetex", hgetex, -5, "write fast", 1, 1, 1, "@write @hash @fast")
        .doc("Get the value of one or more fields of a given hash key, and optionally set their expiration.", "8.0.0"),
    cmd("hsetex", hsetex, -6, "write denyoom fast", 1, 1, 1, "@write @hash @fast")
        .doc("Set the value of one or more fields of a given hash key, and optionally set their expiration.", "8.0.0"),
    cmd("hgetdel", hgetdel, -5, "write fast", 1, 1, 1, "@write @hash @fast")
        .doc("Returns the value of a field and deletes it from the hash.", "8.0.0"),
];

/// The latest field deadline Redis accepts (unix ms; `HFE_MAX_ABS_TIME_MSEC`).
pub(crate) const FIELD_EXPIRE_MAX: u64 = (1 << 46) - 1;

/// Largest number of elements a random-count reply may hold. Redis builds
/// any size (and a huge negative count exhausts its memory); rlockd refuses
/// beyond this with `ERR value is out of range`.
pub(crate) const MAX_RANDOM_REPLY: u64 = 10_000_000;

/// The hash at `key`, `WRONGTYPE` for other types.
fn get_hash<'a>(db: &'a mut DbView<'_>, key: &[u8]) -> Result<Option<&'a mut HashValue>, CmdError> {
    match db.get_mut(key) {
        None => Ok(None),
        Some(Value::Hash(h)) => Ok(Some(h)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// Whether some of `fields` of `h` are past their deadline (one branch for
/// a hash without field deadlines).
#[inline]
fn fields_due(h: &HashValue, fields: &[Bytes], now: u64) -> bool {
    h.has_ttls() && fields.iter().any(|f| h.is_expired(f, now))
}

/// The hash at `key` (`$get`: [`get_hash`] or [`hash_or_create`]) after
/// deleting those of `fields` whose deadline passed (Redis's lazy field
/// expiry: `hexpired`, and the key's `del` if that empties it). One
/// lookup unless a field is due: a macro, as a function returning the
/// first lookup's borrow could not look the key up again.
macro_rules! live_hash {
    ($db:expr, $key:expr, $fields:expr, get_hash) => {{
        let now = $db.now;
        let mut h = get_hash(&mut $db, $key)?;
        if h.as_deref().is_some_and(|h| fields_due(h, $fields, now)) {
            $db.expire_fields($key, $fields);
            h = get_hash(&mut $db, $key)?;
        }
        h
    }};
    // Every field due, not only some.
    ($db:expr, $key:expr, all) => {{
        let now = $db.now;
        let mut h = get_hash(&mut $db, $key)?;
        let due = h.as_deref().map(|h| h.expired(now)).unwrap_or_default();
        if !due.is_empty() {
            $db.expire_fields($key, &due);
            h = get_hash(&mut $db, $key)?;
        }
        h
    }};
    ($db:expr, $key:expr, $fields:expr, hash_or_create) => {{
        let now = $db.now;
        let mut h = hash_or_create(&mut $db, $key)?;
        if fields_due(h, $fields, now) {
            $db.expire_fields($key, $fields);
            h = hash_or_create(&mut $db, $key)?;
        }
        h
    }};
}

/// The hash at `key`, created empty if missing (the caller adds a field).
fn hash_or_create<'a>(db: &'a mut DbView<'_>, key: &Bytes) -> Result<&'a mut HashValue, CmdError> {
    hash_or_create_enc(db, key).map(|(h, _)| h)
}

/// [`hash_or_create`], and whether the hash is compact for Redis (then
/// field deadlines order its fields: [`HashValue::set_field_expire`]).
fn hash_or_create_enc<'a>(db: &'a mut DbView<'_>, key: &Bytes) -> Result<(&'a mut HashValue, bool), CmdError> {
    let e = db.entry_or_insert(key, || Value::Hash(HashValue::default()));
    let small = e.str_enc != StrEnc::Big;
    match &mut e.value {
        Value::Hash(h) => Ok((h, small)),
        _ => Err(CmdError::WrongType),
    }
}

/// The hash at `key` and whether it is compact for Redis (see
/// [`hash_or_create_enc`]).
fn get_hash_enc<'a>(db: &'a mut DbView<'_>, key: &[u8]) -> Result<Option<(&'a mut HashValue, bool)>, CmdError> {
    let Some(e) = db.entry(key) else { return Ok(None) };
    let small = e.str_enc != StrEnc::Big;
    match &mut e.value {
        Value::Hash(h) => Ok(Some((h, small))),
        _ => Err(CmdError::WrongType),
    }
}

/// The hash at `key` and whether it is a listpack, in one lookup.
fn get_hash_listpack<'a>(db: &'a mut DbView<'_>, key: &[u8]) -> Result<Option<(&'a mut HashValue, bool)>, CmdError> {
    let Some(e) = db.entry(key) else { return Ok(None) };
    let listpack = matches!(e.encoding(), "listpack" | "listpackex");
    match &mut e.value {
        Value::Hash(h) => Ok(Some((h, listpack))),
        _ => Err(CmdError::WrongType),
    }
}

/// Removes `field`, keeping the order of the rest in a listpack.
fn hash_remove(h: &mut HashValue, field: &[u8], listpack: bool) -> bool {
    if listpack {
        h.shift_remove(field)
    } else {
        h.swap_remove(field)
    }
}

fn arity_err(args: &[Bytes]) -> CmdError {
    CmdError::WrongArity(String::from_utf8_lossy(&args[0]).to_ascii_lowercase())
}

fn hset_generic(ctx: &mut Ctx<'_>, args: &[Bytes], is_hset: bool) -> CmdResult {
    if !args.len().is_multiple_of(2) {
        return Err(arity_err(args));
    }
    let key = &args[1];
    let mut db = ctx.db();
    let limits = *db.limits();
    let (h, small) = hash_or_create_enc(&mut db, key)?;
    let mut created = 0;
    let ttls = h.has_ttls();
    for fv in args[2..].chunks(2) {
        if h.insert(&fv[0], &fv[1]) {
            created += 1;
        }
        if ttls {
            // A value set whole drops the field's deadline.
            h.set_field_expire(&fv[0], 0, small);
        }
    }
    // Past hash-max-listpack-entries/value a hash stays a hashtable.
    let outgrown = h.len() > limits.hash_entries || args[2..].iter().any(|a| a.len() > limits.hash_value);
    db.mark_outgrown(key, outgrown);
    db.touch(key);
    db.notify(notify::HASH, "hset", key);
    Ok(if is_hset { Reply::Int(created) } else { Reply::ok() })
}

fn hset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    hset_generic(ctx, args, true)
}

fn hmset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    hset_generic(ctx, args, false)
}

fn hsetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    let limits = *db.limits();
    let h = live_hash!(db, key, &args[2..3], hash_or_create);
    if h.contains_key(&args[2][..]) {
        return Ok(Reply::Int(0));
    }
    h.insert(&args[2], &args[3]);
    let outgrown =
        h.len() > limits.hash_entries || args[2].len() > limits.hash_value || args[3].len() > limits.hash_value;
    db.mark_outgrown(key, outgrown);
    db.touch(key);
    db.notify(notify::HASH, "hset", key);
    Ok(Reply::Int(1))
}

fn hget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(live_hash!(db, &args[1], &args[2..3], get_hash)
        .and_then(|h| h.get(&args[2][..]).map(Bytes::copy_from_slice))
        .into())
}

fn hmget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    let h = live_hash!(db, &args[1], &args[2..], get_hash);
    Ok(Reply::Array(
        args[2..].iter().map(|f| h.as_ref().and_then(|h| h.get(&f[..]).map(Bytes::copy_from_slice)).into()).collect(),
    ))
}

fn hdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    let Some((h, listpack)) = get_hash_listpack(&mut db, key)? else {
        return Ok(Reply::Int(0));
    };
    let mut deleted = 0;
    for f in &args[2..] {
        if hash_remove(h, f, listpack) {
            deleted += 1;
            if h.is_empty() {
                break;
            }
        }
    }
    if deleted > 0 {
        db.touch(key);
        db.notify(notify::HASH, "hdel", key);
        db.remove_if_empty(key);
    }
    Ok(Reply::Int(deleted))
}

fn hexists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(Reply::Int(live_hash!(db, &args[1], &args[2..3], get_hash).is_some_and(|h| h.contains_key(&args[2][..])).into()))
}

fn hlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(Reply::Int(get_hash(&mut db, &args[1])?.map_or(0, |h| h.len() as i64)))
}

fn hstrlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(Reply::Int(
        live_hash!(db, &args[1], &args[2..3], get_hash).and_then(|h| h.get(&args[2][..])).map_or(0, |v| v.len() as i64),
    ))
}

fn hkeys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    let now = db.now;
    Ok(Reply::bulks(
        get_hash(&mut db, &args[1])?
            .map(|h| h.live(now).into_iter().map(|(k, _)| Bytes::copy_from_slice(k)).collect::<Vec<_>>())
            .unwrap_or_default(),
    ))
}

fn hvals(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    let now = db.now;
    Ok(Reply::bulks(
        get_hash(&mut db, &args[1])?
            .map(|h| h.live(now).into_iter().map(|(_, v)| Bytes::copy_from_slice(v)).collect::<Vec<_>>())
            .unwrap_or_default(),
    ))
}

fn hgetall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    let now = db.now;
    Ok(Reply::Map(
        get_hash(&mut db, &args[1])?
            .map(|h| {
                h.live(now)
                    .into_iter()
                    .map(|(k, v)| (Reply::Bulk(Bytes::copy_from_slice(k)), Reply::Bulk(Bytes::copy_from_slice(v))))
                    .collect()
            })
            .unwrap_or_default(),
    ))
}

fn hincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let incr = int(&args[3])?;
    let key = &args[1];
    let mut db = ctx.db();
    let limits = *db.limits();
    let h = live_hash!(db, key, &args[2..3], hash_or_create);
    let cur = match h.get(&args[2][..]) {
        Some(v) => num::parse_i64_strict(v).ok_or_else(|| CmdError::custom("ERR hash value is not an integer"))?,
        None => 0,
    };
    let Some(new) = cur.checked_add(incr) else {
        let empty = h.is_empty();
        if empty {
            db.remove(key);
        }
        return Err(CmdError::Overflow);
    };
    let mut buf = itoa::Buffer::new();
    let text = buf.format(new).as_bytes();
    let long = text.len() > limits.hash_value || args[2].len() > limits.hash_value;
    h.insert(&args[2], text);
    let outgrown = long || h.len() > limits.hash_entries;
    db.mark_outgrown(key, outgrown);
    db.touch(key);
    db.notify(notify::HASH, "hincrby", key);
    Ok(Reply::Int(new))
}

fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    match num::normalize_long_double(&args[3]).as_deref() {
        None => return Err(CmdError::NotFloat),
        Some("inf" | "-inf") => return Err(CmdError::custom("ERR value is NaN or Infinity")),
        Some(_) => {}
    }
    let key = &args[1];
    let mut db = ctx.db();
    let limits = *db.limits();
    let h = live_hash!(db, key, &args[2..3], hash_or_create);
    let cur = h.get(&args[2][..]).map(Bytes::copy_from_slice);
    let res = num::incr_long_double(cur.as_deref(), &args[3]).map_err(|e| match e {
        LdError::Current => CmdError::custom("ERR hash value is not a float"),
        LdError::Increment => CmdError::NotFloat,
        LdError::NanOrInf => CmdError::NanOrInfinity,
    });
    let new = match res {
        Ok(n) => Bytes::from(n),
        Err(e) => {
            if h.is_empty() {
                db.remove(key);
            }
            return Err(e);
        }
    };
    h.insert(&args[2], &new);
    let outgrown = h.len() > limits.hash_entries || args[2].len() > limits.hash_value || new.len() > limits.hash_value;
    db.mark_outgrown(key, outgrown);
    db.touch(key);
    db.notify(notify::HASH, "hincrbyfloat", key);
    Ok(Reply::Bulk(new))
}

fn hscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cur = cursor(&args[2])?;
    let opts = scan_opts(&args[3..], false)?;
    let mut db = ctx.db();
    let now = db.now;
    let Some((h, listpack)) = get_hash_listpack(&mut db, &args[1])? else {
        return Ok(empty_scan());
    };
    let (next, range) = if listpack { (0, 0..h.len()) } else { scan_step(h.len(), cur, opts.count) };
    let mut out = Vec::new();
    let idx: Box<dyn Iterator<Item = usize>> = if listpack { Box::new(range) } else { Box::new(range.rev()) };
    for i in idx {
        let (k, v) = h.get_index(i).expect("index in range");
        if h.is_expired(k, now) {
            continue;
        }
        if let Some(p) = &opts.pattern {
            if !glob::matches(p, k, false) {
                continue;
            }
        }
        out.push(Reply::Bulk(Bytes::copy_from_slice(k)));
        out.push(Reply::Bulk(Bytes::copy_from_slice(v)));
    }
    Ok(Reply::Array(vec![Reply::Bulk(Bytes::from(next.to_string())), Reply::Array(out)]))
}

pub(crate) fn empty_scan() -> Reply {
    Reply::Array(vec![Reply::Bulk(Bytes::from_static(b"0")), Reply::Array(Vec::new())])
}

/// Parses the `count` of HRANDFIELD / ZRANDMEMBER / SRANDMEMBER (Redis 7.0.15
/// range check).
pub(crate) fn random_count(arg: &[u8]) -> Result<i64, CmdError> {
    let l = int(arg)?;
    if l == i64::MIN {
        return Err(CmdError::custom(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    Ok(l)
}

/// Picks `count` distinct indices out of `0..size` (count < size), in a
/// random order.
pub(crate) fn distinct_indices(size: usize, count: usize) -> Vec<usize> {
    let mut rng = rand::rng();
    if count * 3 > size {
        let mut all: Vec<usize> = (0..size).collect();
        for i in 0..count {
            let j = rng.random_range(i..size);
            all.swap(i, j);
        }
        all.truncate(count);
        all
    } else {
        let mut seen = std::collections::HashSet::with_capacity(count);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let i = rng.random_range(0..size);
            if seen.insert(i) {
                out.push(i);
            }
        }
        out
    }
}

fn hrandfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let resp = ctx.client.resp;
    if args.len() >= 3 {
        let l = random_count(&args[2])?;
        let withvalues = match args.len() {
            3 => false,
            4 if eq(&args[3], "withvalues") => true,
            _ => return Err(CmdError::Syntax),
        };
        if withvalues && l < i64::MIN / 2 {
            return Err(CmdError::ValueOutOfRange);
        }
        let mut db = ctx.db();
        let Some(h) = live_hash!(db, &args[1], all) else {
            return Ok(Reply::Array(Vec::new()));
        };
        let pair = |i: usize, out: &mut Vec<Reply>| {
            let (k, v) = h.get_index(i).expect("index");
            if withvalues {
                if resp == Resp::V3 {
                    out.push(Reply::Array(vec![
                        Reply::Bulk(Bytes::copy_from_slice(k)),
                        Reply::Bulk(Bytes::copy_from_slice(v)),
                    ]));
                } else {
                    out.push(Reply::Bulk(Bytes::copy_from_slice(k)));
                    out.push(Reply::Bulk(Bytes::copy_from_slice(v)));
                }
            } else {
                out.push(Reply::Bulk(Bytes::copy_from_slice(k)));
            }
        };
        let size = h.len();
        let mut out = Vec::new();
        if l == 0 {
            return Ok(Reply::Array(out));
        }
        if l < 0 {
            let n = l.unsigned_abs();
            if n > MAX_RANDOM_REPLY {
                return Err(CmdError::ValueOutOfRange);
            }
            let mut rng = rand::rng();
            for _ in 0..n {
                pair(rng.random_range(0..size), &mut out);
            }
        } else if l as u64 >= size as u64 {
            for i in 0..size {
                pair(i, &mut out);
            }
        } else {
            for i in distinct_indices(size, l as usize) {
                pair(i, &mut out);
            }
        }
        return Ok(Reply::Array(out));
    }
    let mut db = ctx.db();
    let Some(h) = live_hash!(db, &args[1], all) else {
        return Ok(Reply::Nil);
    };
    let i = rand::rng().random_range(0..h.len());
    Ok(Reply::Bulk(Bytes::copy_from_slice(h.get_index(i).expect("index").0)))
}

/// The fields named by `FIELDS numfields field…` starting at `args[at]`
/// (Redis 7.4's checks and texts).
fn fields_arg(args: &[Bytes], at: usize) -> Result<&[Bytes], CmdError> {
    if at >= args.len() || !eq(&args[at], "fields") {
        return Err(CmdError::custom("ERR Mandatory argument FIELDS is missing or not at the right position"));
    }
    let n = args.get(at + 1).and_then(|a| num::parse_i64_strict(a)).filter(|&n| n > 0);
    let Some(n) = n else {
        return Err(CmdError::custom("ERR Parameter `numFields` should be greater than 0"));
    };
    let rest = &args[at + 2..];
    if n as u64 != rest.len() as u64 {
        return Err(CmdError::custom("ERR The `numfields` parameter must match the number of arguments"));
    }
    Ok(rest)
}

/// Whether the key holds something other than a hash (one lookup, the
/// access Redis's own lookup counts).
fn check_hash(db: &mut DbView<'_>, key: &[u8]) -> Result<bool, CmdError> {
    match db.get(key) {
        None => Ok(false),
        Some(Value::Hash(_)) => Ok(true),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// The fields of `HGETEX`/`HGETDEL`: `FIELDS numfields field…` exactly at
/// `args[at]` (Redis 8.0's texts, which differ from `HEXPIRE`'s).
fn get_fields_arg(args: &[Bytes], at: usize) -> Result<&[Bytes], CmdError> {
    if at >= args.len() || !eq(&args[at], "fields") {
        return Err(CmdError::custom("ERR Mandatory argument FIELDS is missing or not at the right position"));
    }
    let n = args.get(at + 1).and_then(|a| num::parse_i64_strict(a)).filter(|&n| n > 0);
    let Some(n) = n else {
        return Err(CmdError::custom("ERR Number of fields must be a positive integer"));
    };
    let rest = &args[at + 2..];
    if n as u64 != rest.len() as u64 {
        return Err(CmdError::custom("ERR The `numfields` parameter must match the number of arguments"));
    }
    Ok(rest)
}

/// `-2` for each field of a missing hash.
fn all_missing(fields: &[Bytes]) -> Reply {
    Reply::Array(fields.iter().map(|_| Reply::Int(-2)).collect())
}

/// A command's time argument as an absolute deadline in unix ms: `scale`
/// 1000 for seconds, `relative` from the command's time. Redis 7.4's
/// checks and texts.
fn deadline_arg(arg: &[u8], name: &str, scale: i64, relative: bool, now: u64) -> Result<u64, CmdError> {
    let t = int(arg)?;
    if t < 0 {
        return Err(CmdError::custom("ERR invalid expire time, must be >= 0"));
    }
    let invalid = || CmdError::custom(format!("ERR invalid expire time in '{name}' command"));
    let ms = t.checked_mul(scale).ok_or_else(invalid)?;
    let at = if relative { ms.checked_add(now as i64).ok_or_else(invalid)? } else { ms };
    if at as u64 > FIELD_EXPIRE_MAX {
        return Err(invalid());
    }
    Ok(at as u64)
}

/// `HEXPIRE`, `HPEXPIRE`, `HEXPIREAT`, `HPEXPIREAT`.
fn hexpire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let (scale, relative) = match name.as_str() {
        "hexpire" => (1000, true),
        "hpexpire" => (1, true),
        "hexpireat" => (1000, false),
        _ => (1, false),
    };
    let key = &args[1];
    let mut db = ctx.db();
    let exists = check_hash(&mut db, key)?;
    let now = db.now;
    let at = deadline_arg(&args[2], &name, scale, relative, now)?;
    #[derive(PartialEq)]
    enum Cond {
        Always,
        Nx,
        Xx,
        Gt,
        Lt,
    }
    let cond = match &args[3] {
        a if eq(a, "nx") => Cond::Nx,
        a if eq(a, "xx") => Cond::Xx,
        a if eq(a, "gt") => Cond::Gt,
        a if eq(a, "lt") => Cond::Lt,
        _ => Cond::Always,
    };
    let fields = fields_arg(args, if cond == Cond::Always { 3 } else { 4 })?;
    if !exists {
        return Ok(all_missing(fields));
    }
    let Some((h, small)) = get_hash_enc(&mut db, key)? else { unreachable!("checked a hash") };
    let (mut set, mut deleted) = (0, 0);
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        let Some(cur) = h.field_expire(f) else {
            out.push(Reply::Int(-2));
            continue;
        };
        let ok = match cond {
            Cond::Always => true,
            Cond::Nx => cur == 0,
            Cond::Xx => cur != 0,
            Cond::Gt => cur != 0 && at > cur,
            Cond::Lt => cur == 0 || at < cur,
        };
        if !ok {
            out.push(Reply::Int(0));
        } else if at <= now {
            h.shift_remove(f);
            deleted += 1;
            out.push(Reply::Int(2));
        } else {
            h.set_field_expire(f, at, small);
            set += 1;
            out.push(Reply::Int(1));
        }
    }
    if set > 0 {
        db.fields_changed(key);
        db.touch(key);
        db.notify(notify::HASH, "hexpire", key);
    }
    if deleted > 0 {
        db.touch(key);
        db.notify(notify::HASH, "hdel", key);
        db.remove_if_empty(key);
    }
    Ok(Reply::Array(out))
}

/// `HTTL`, `HPTTL`, `HEXPIRETIME`, `HPEXPIRETIME`.
fn httl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let key = &args[1];
    let mut db = ctx.db();
    let exists = check_hash(&mut db, key)?;
    let fields = get_fields_arg(args, 2)?;
    if !exists {
        return Ok(all_missing(fields));
    }
    let now = db.now;
    let Some(Value::Hash(h)) = db.get(key) else { unreachable!("checked a hash") };
    let out = fields
        .iter()
        .map(|f| {
            Reply::Int(match h.field_expire(f) {
                None => -2,
                Some(at) if at != 0 && at <= now => -2,
                Some(0) => -1,
                Some(at) => match name.as_str() {
                    "httl" => ((at - now).div_ceil(1000)) as i64,
                    "hpttl" => (at - now) as i64,
                    "hexpiretime" => at.div_ceil(1000) as i64,
                    _ => at as i64,
                },
            })
        })
        .collect();
    Ok(Reply::Array(out))
}

/// `HPERSIST`.
fn hpersist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    let exists = check_hash(&mut db, key)?;
    let fields = get_fields_arg(args, 2)?;
    if !exists {
        return Ok(all_missing(fields));
    }
    let now = db.now;
    let Some((h, small)) = get_hash_enc(&mut db, key)? else { unreachable!("checked a hash") };
    let mut changed = 0;
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        out.push(Reply::Int(match h.field_expire(f) {
            None => -2,
            Some(at) if at != 0 && at <= now => -2,
            Some(0) => -1,
            Some(_) => {
                h.set_field_expire(f, 0, small);
                changed += 1;
                1
            }
        }));
    }
    if changed > 0 {
        db.touch(key);
        db.notify(notify::HASH, "hpersist", key);
    }
    Ok(Reply::Array(out))
}

/// An expiry option of `HGETEX`/`HSETEX`: (scale to ms, relative).
fn expiry_option(arg: &[u8]) -> Option<(i64, bool)> {
    match arg {
        a if eq(a, "ex") => Some((1000, true)),
        a if eq(a, "px") => Some((1, true)),
        a if eq(a, "exat") => Some((1000, false)),
        a if eq(a, "pxat") => Some((1, false)),
        _ => None,
    }
}

/// What to do with the deadline of the fields a command names.
#[derive(Clone, Copy, PartialEq)]
enum FieldTtl {
    /// Leave it (`HGETEX` without option, `HSETEX … KEEPTTL`).
    Keep,
    /// Drop it (`PERSIST`; `HSETEX` without option).
    Drop,
    /// Set this deadline (deleting the field if it is not in the future).
    At(u64),
}

/// `HGETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST] FIELDS numfields field…`.
fn hgetex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    let now = db.now;
    let exists = check_hash(&mut db, key)?;
    let (ttl, at) = if let Some((scale, relative)) = expiry_option(&args[2]) {
        let deadline =
            args.get(3).map_or(Err(CmdError::Syntax), |a| deadline_arg(a, "hgetex", scale, relative, now))?;
        (FieldTtl::At(deadline), 4)
    } else if eq(&args[2], "persist") {
        (FieldTtl::Drop, 3)
    } else {
        (FieldTtl::Keep, 2)
    };
    let fields = get_fields_arg(args, at)?;
    if !exists {
        return Ok(Reply::Array(fields.iter().map(|_| Reply::Nil).collect()));
    }
    if live_hash!(db, key, fields, get_hash).is_none() {
        return Ok(Reply::Array(fields.iter().map(|_| Reply::Nil).collect()));
    }
    let Some((h, small)) = get_hash_enc(&mut db, key)? else { unreachable!("checked a hash") };
    let (mut set, mut persisted, mut deleted) = (0, 0, 0);
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        let Some(v) = h.get(&f[..]) else {
            out.push(Reply::Nil);
            continue;
        };
        out.push(Reply::Bulk(Bytes::copy_from_slice(v)));
        match ttl {
            FieldTtl::Keep => {}
            FieldTtl::Drop => {
                if h.field_expire(f).is_some_and(|at| at != 0) {
                    h.set_field_expire(f, 0, small);
                    persisted += 1;
                }
            }
            FieldTtl::At(at) if at <= now => {
                h.shift_remove(&f[..]);
                deleted += 1;
            }
            FieldTtl::At(at) => {
                h.set_field_expire(f, at, small);
                set += 1;
            }
        }
    }
    if set > 0 {
        db.fields_changed(key);
        db.touch(key);
        db.notify(notify::HASH, "hexpire", key);
    }
    if persisted > 0 {
        db.touch(key);
        db.notify(notify::HASH, "hpersist", key);
    }
    if deleted > 0 {
        db.touch(key);
        db.notify(notify::HASH, "hdel", key);
        db.remove_if_empty(key);
    }
    Ok(Reply::Array(out))
}

/// `HSETEX key [FNX|FXX] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL] FIELDS numfields field value…`.
fn hsetex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let now = ctx.core.ks.now;
    let (mut fnx, mut fxx) = (false, false);
    let mut ttl = None;
    let mut i = 2;
    let fields = loop {
        let Some(a) = args.get(i) else {
            return Err(CmdError::custom("ERR Mandatory argument FIELDS is missing or not at the right position"));
        };
        if eq(a, "fields") {
            let n = args
                .get(i + 1)
                .and_then(|a| num::parse_i64_strict(a))
                .filter(|&n| n > 0 && n <= i64::from(i32::MAX))
                .ok_or_else(|| CmdError::custom("ERR invalid number of fields"))?;
            let rest = &args[(i + 2).min(args.len())..];
            if n as u64 * 2 != rest.len() as u64 {
                return Err(arity_err(args));
            }
            break rest;
        } else if eq(a, "fnx") || eq(a, "fxx") {
            if fnx || fxx {
                return Err(CmdError::custom("ERR Only one of FXX or FNX arguments can be specified"));
            }
            (fnx, fxx) = (eq(a, "fnx"), eq(a, "fxx"));
            i += 1;
        } else if let Some((scale, relative)) =
            expiry_option(a).map(Some).unwrap_or(eq(a, "keepttl").then_some((0, false)))
        {
            if ttl.is_some() {
                return Err(CmdError::custom(
                    "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified",
                ));
            }
            if scale == 0 {
                ttl = Some(FieldTtl::Keep);
                i += 1;
            } else {
                let v = args.get(i + 1).ok_or(CmdError::Syntax)?;
                ttl = Some(FieldTtl::At(deadline_arg(v, "hsetex", scale, relative, now)?));
                i += 2;
            }
        } else {
            return Err(CmdError::Raw(Bytes::from([&b"ERR unknown argument: "[..], &a[..]].concat())));
        }
    };
    let ttl = ttl.unwrap_or(FieldTtl::Drop);
    let mut db = ctx.db();
    let limits = *db.limits();
    let exists = check_hash(&mut db, key)?;
    let names: Vec<Bytes> = fields.chunks(2).map(|fv| fv[0].clone()).collect();
    if exists {
        // Due fields go first, but the hash stays for the write (no `del`).
        let due = get_hash(&mut db, key)?.is_some_and(|h| fields_due(h, &names, now));
        if due {
            db.expire_fields_then(key, &names, false);
        }
    }
    if fnx || fxx {
        let h = get_hash(&mut db, key)?;
        let ok = names.iter().all(|f| h.as_ref().is_some_and(|h| h.contains_key(&f[..])) == fxx);
        if !ok {
            db.remove_if_empty(key);
            return Ok(Reply::Int(0));
        }
    }
    let (h, small) = hash_or_create_enc(&mut db, key)?;
    let (mut set, mut deleted) = (0, 0);
    for fv in fields.chunks(2) {
        h.insert(&fv[0], &fv[1]);
        match ttl {
            FieldTtl::Keep => {}
            FieldTtl::Drop => {
                h.set_field_expire(&fv[0], 0, small);
            }
            FieldTtl::At(at) if at <= now => {
                h.shift_remove(&fv[0][..]);
                deleted += 1;
            }
            FieldTtl::At(at) => {
                h.set_field_expire(&fv[0], at, small);
                set += 1;
            }
        }
    }
    let outgrown = h.len() > limits.hash_entries || fields.iter().any(|a| a.len() > limits.hash_value);
    db.mark_outgrown(key, outgrown);
    db.touch(key);
    db.notify(notify::HASH, "hset", key);
    if set > 0 {
        db.fields_changed(key);
        db.notify(notify::HASH, "hexpire", key);
    }
    if deleted > 0 {
        db.notify(notify::HASH, "hdel", key);
        db.remove_if_empty(key);
    }
    Ok(Reply::Int(1))
}

/// `HGETDEL key FIELDS numfields field…`.
fn hgetdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    let exists = check_hash(&mut db, key)?;
    let fields = get_fields_arg(args, 2)?;
    let nils = || Reply::Array(fields.iter().map(|_| Reply::Nil).collect());
    if !exists {
        return Ok(nils());
    }
    if live_hash!(db, key, fields, get_hash).is_none() {
        return Ok(nils());
    }
    let Some((h, listpack)) = get_hash_listpack(&mut db, key)? else { return Ok(nils()) };
    let mut deleted = 0;
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        match h.get(&f[..]).map(Bytes::copy_from_slice) {
            Some(v) => {
                hash_remove(h, f, listpack);
                deleted += 1;
                out.push(Reply::Bulk(v));
            }
            None => out.push(Reply::Nil),
        }
    }
    if deleted > 0 {
        db.touch(key);
        db.notify(notify::HASH, "hdel", key);
        db.remove_if_empty(key);
    }
    Ok(Reply::Array(out))
}
