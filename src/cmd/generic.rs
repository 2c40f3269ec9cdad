//! Keyspace commands: DEL, EXISTS, TYPE, KEYS, SCAN, RENAME, COPY, MOVE,
//! OBJECT, the EXPIRE family, TTL, PERSIST.

use bytes::Bytes;

use super::util::{cursor, eq, int, scan_opts};
use super::{cmd, container, CommandSpec, Ctx};
use crate::db::value::ListValue;
use crate::db::{notify, EncLimits, Value};
use crate::error::{CmdError, CmdResult};
use crate::glob;
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("del", del, -2, "write", 1, -1, 1, "@keyspace @write @slow").doc("Delete a key", "1.0.0"),
    cmd("unlink", unlink, -2, "write fast", 1, -1, 1, "@keyspace @write @fast")
        .doc("Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.", "4.0.0"),
    cmd("exists", exists, -2, "readonly fast", 1, -1, 1, "@keyspace @read @fast")
        .doc("Determine if a key exists", "1.0.0"),
    cmd("type", type_, 2, "readonly fast", 1, 1, 1, "@keyspace @read @fast")
        .doc("Determine the type stored at key", "1.0.0"),
    cmd("keys", keys, 2, "readonly", 0, 0, 0, "@keyspace @read @slow @dangerous")
        .doc("Find all keys matching the given pattern", "1.0.0"),
    cmd("scan", scan, -2, "readonly", 0, 0, 0, "@keyspace @read @slow")
        .doc("Incrementally iterate the keys space", "2.8.0"),
    cmd("rename", rename, 3, "write", 1, 2, 1, "@keyspace @write @slow").doc("Rename a key", "1.0.0"),
    cmd("renamenx", renamenx, 3, "write fast", 1, 2, 1, "@keyspace @write @fast")
        .doc("Rename a key, only if the new key does not exist", "1.0.0"),
    cmd("randomkey", randomkey, 1, "readonly", 0, 0, 0, "@keyspace @read @slow")
        .doc("Return a random key from the keyspace", "1.0.0"),
    cmd("touch", touch, -2, "readonly fast", 1, -1, 1, "@keyspace @read @fast")
        .doc("Alters the last access time of a key(s). Returns the number of existing keys specified.", "3.2.1"),
    cmd("copy", copy_, -3, "write denyoom", 1, 2, 1, "@keyspace @write @slow").doc("Copy a key", "6.2.0"),
    cmd("move", move_, 3, "write fast", 1, 1, 1, "@keyspace @write @fast")
        .doc("Move a key to another database", "1.0.0"),
    cmd("object", container, -2, "", 0, 0, 0, "@slow")
        .subs(OBJECT_SUBS)
        .doc("A container for object introspection commands", "2.2.3"),
    cmd("expire", expire, -3, "write fast", 1, 1, 1, "@keyspace @write @fast")
        .doc("Set a key's time to live in seconds", "1.0.0"),
    cmd("pexpire", pexpire, -3, "write fast", 1, 1, 1, "@keyspace @write @fast")
        .doc("Set a key's time to live in milliseconds", "2.6.0"),
    cmd("expireat", expireat, -3, "write fast", 1, 1, 1, "@keyspace @write @fast")
        .doc("Set the expiration for a key as a UNIX timestamp", "1.2.0"),
    cmd("pexpireat", pexpireat, -3, "write fast", 1, 1, 1, "@keyspace @write @fast")
        .doc("Set the expiration for a key as a UNIX timestamp specified in milliseconds", "2.6.0"),
    cmd("ttl", ttl, 2, "readonly fast", 1, 1, 1, "@keyspace @read @fast")
        .doc("Get the time to live for a key in seconds", "1.0.0"),
    cmd("pttl", pttl, 2, "readonly fast", 1, 1, 1, "@keyspace @read @fast")
        .doc("Get the time to live for a key in milliseconds", "2.6.0"),
    cmd("expiretime", expiretime, 2, "readonly fast", 1, 1, 1, "@keyspace @read @fast")
        .doc("Get the expiration Unix timestamp for a key", "7.0.0"),
    cmd("pexpiretime", pexpiretime, 2, "readonly fast", 1, 1, 1, "@keyspace @read @fast")
        .doc("Get the expiration Unix timestamp for a key in milliseconds", "7.0.0"),
    cmd("persist", persist, 2, "write fast", 1, 1, 1, "@keyspace @write @fast")
        .doc("Remove the expiration from a key", "2.2.0"),
];

static OBJECT_SUBS: &[CommandSpec] = &[
    cmd("encoding", object_encoding, 3, "readonly", 2, 2, 1, "@keyspace @read @slow")
        .doc("Inspect the internal encoding of a Redis object", "2.2.3"),
    cmd("freq", object_freq, 3, "readonly", 2, 2, 1, "@keyspace @read @slow")
        .doc("Get the logarithmic access frequency counter of a Redis object", "4.0.0"),
    cmd("help", object_help, 2, "loading stale", 0, 0, 0, "@keyspace @slow")
        .doc("Show helpful text about the different subcommands", "6.2.0"),
    cmd("idletime", object_idletime, 3, "readonly", 2, 2, 1, "@keyspace @read @slow")
        .doc("Get the time since a Redis object was last accessed", "2.2.3"),
    cmd("refcount", object_refcount, 3, "readonly", 2, 2, 1, "@keyspace @read @slow")
        .doc("Get the number of references to the value of the key", "2.2.3"),
];

fn del(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    let mut n = 0;
    for k in &args[1..] {
        if db.remove(k).is_some() {
            db.notify(notify::GENERIC, "del", k);
            n += 1;
        }
    }
    Ok(Reply::Int(n))
}

fn unlink(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    del(ctx, args)
}

/// Not an access (the LRU/LFU data is left alone), as in Redis.
fn exists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(Reply::Int(args[1..].iter().filter(|k| db.entry_notouch(k).is_some()).count() as i64))
}

/// An access to each key that exists.
fn touch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(Reply::Int(args[1..].iter().filter(|k| db.exists(k)).count() as i64))
}

fn type_(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let t = ctx.db().entry_notouch(&args[1]).map_or("none", |e| e.value.type_name());
    Ok(Reply::status(t))
}

fn keys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let now = ctx.now_ms();
    let db = ctx.db();
    let pat = &args[1];
    let all = &pat[..] == b"*";
    let out: Vec<Reply> = db
        .raw()
        .iter()
        .filter(|(k, e)| e.expire().is_none_or(|at| at > now) && (all || glob::matches(pat, k, false)))
        .map(|(k, _)| Reply::Bulk(k.to_bytes()))
        .collect();
    Ok(Reply::Array(out))
}

fn scan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cur = cursor(&args[1])?;
    let opts = scan_opts(&args[2..], true)?;
    let now = ctx.now_ms();
    let mut db = ctx.db();
    let (next, range) = db.raw().scan_indices(cur, opts.count);
    let mut found: Vec<Bytes> = Vec::new();
    let mut expired: Vec<Bytes> = Vec::new();
    for i in range.rev() {
        let (k, e) = db.raw().get_index(i).expect("index in range");
        if e.expire().is_some_and(|at| at <= now) {
            expired.push(k.to_bytes());
            continue;
        }
        if let Some(p) = &opts.pattern {
            if !glob::matches(p, k, false) {
                continue;
            }
        }
        if let Some(t) = &opts.type_filter {
            if !t.eq_ignore_ascii_case(e.value.type_name().as_bytes()) {
                continue;
            }
        }
        found.push(k.to_bytes());
    }
    for k in expired {
        db.exists(&k); // lazy expiry deletes it
    }
    Ok(Reply::Array(vec![Reply::Bulk(Bytes::from(next.to_string())), Reply::bulks(found)]))
}

fn rename_generic(ctx: &mut Ctx<'_>, args: &[Bytes], nx: bool) -> CmdResult {
    let (src, dst) = (&args[1], &args[2]);
    // With keys embedded in values (Redis 8), the renamed key is a new
    // object: its access word starts again.
    let renew = ctx.core.profile().embeds_keys();
    let mut db = ctx.db();
    if !db.exists(src) {
        return Err(CmdError::NoSuchKey);
    }
    if src == dst {
        return Ok(if nx { Reply::Int(0) } else { Reply::ok() });
    }
    if nx && db.exists(dst) {
        return Ok(Reply::Int(0));
    }
    let (_, mut entry) = db.take_entry(src).expect("exists");
    if renew {
        entry.lru = db.new_access();
    }
    if db.remove(dst).is_some() {
        // Redis deletes the destination first (no separate event).
    }
    db.put_entry(dst, entry);
    db.notify(notify::GENERIC, "rename_from", src);
    db.notify(notify::GENERIC, "rename_to", dst);
    Ok(if nx { Reply::Int(1) } else { Reply::ok() })
}

fn rename(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    rename_generic(ctx, args, false)
}

fn renamenx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    rename_generic(ctx, args, true)
}

/// Not counted as a keyspace hit (Redis peeks at the key it picked).
fn randomkey(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    ctx.with_read_lookups(false, random_key)
}

fn random_key(ctx: &mut Ctx<'_>) -> CmdResult {
    use rand::Rng;
    let mut db = ctx.db();
    let mut rng = rand::rng();
    for _ in 0..100 {
        let len = db.raw().len();
        if len == 0 {
            return Ok(Reply::Nil);
        }
        let i = rng.random_range(0..len);
        let k = db.raw().get_index(i).expect("index").0.to_bytes();
        if db.entry_notouch(&k).is_some() {
            return Ok(Reply::Bulk(k));
        }
    }
    // Mostly expired keys: fall back to a linear search.
    let now = db.now;
    let found = db.raw().iter().find(|(_, e)| e.expire().is_none_or(|at| at > now)).map(|(k, _)| k.to_bytes());
    Ok(found.map_or(Reply::Nil, Reply::Bulk))
}

/// Redis `getIntFromObjectOrReply` range error.
const INT_RANGE: CmdError =
    CmdError::Raw(Bytes::from_static(b"ERR value is out of range, value must between -2147483648 and 2147483647"));

/// Parses a database index argument as SELECT/MOVE/COPY do.
pub(crate) fn db_index(ctx: &Ctx<'_>, arg: &[u8]) -> Result<usize, CmdError> {
    let v = int(arg)?;
    if v < i64::from(i32::MIN) || v > i64::from(i32::MAX) {
        return Err(INT_RANGE.clone());
    }
    if v < 0 || v as usize >= ctx.core.ks.dbs.len() {
        return Err(CmdError::DbIndex);
    }
    Ok(v as usize)
}

fn copy_(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (src, dst) = (&args[1], &args[2]);
    let mut target = ctx.client.db();
    let mut replace = false;
    let mut i = 3;
    while i < args.len() {
        if eq(&args[i], "replace") {
            replace = true;
            i += 1;
        } else if eq(&args[i], "db") && i + 1 < args.len() {
            target = db_index(ctx, &args[i + 1])?;
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    if target == ctx.client.db() && src == dst {
        return Err(CmdError::SameObject);
    }
    let Some(mut entry) = ctx.with_read_lookups(true, |ctx| ctx.db().entry(src).cloned()) else {
        return Ok(Reply::Int(0));
    };
    let mut tdb = ctx.core.ks.view(target);
    // The copy is a new object: its access data starts afresh.
    entry.lru = tdb.new_access();
    if tdb.exists(dst) {
        if !replace {
            return Ok(Reply::Int(0));
        }
        tdb.remove(dst);
    }
    tdb.put_entry(dst, entry);
    tdb.notify(notify::GENERIC, "copy_to", dst);
    Ok(Reply::Int(1))
}

fn move_(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let target = db_index(ctx, &args[2])?;
    if target == ctx.client.db() {
        return Err(CmdError::SameObject);
    }
    if !ctx.db().exists(key) {
        return Ok(Reply::Int(0));
    }
    if ctx.core.ks.view(target).exists(key) {
        return Ok(Reply::Int(0));
    }
    let renew = ctx.core.profile().embeds_keys();
    let (_, mut entry) = ctx.db().take_entry(key).expect("exists");
    ctx.db().notify(notify::GENERIC, "move_from", key);
    let mut tdb = ctx.core.ks.view(target);
    if renew {
        entry.lru = tdb.new_access();
    }
    tdb.put_entry_then_expire(key, entry);
    tdb.notify(notify::GENERIC, "move_to", key);
    Ok(Reply::Int(1))
}

// OBJECT's lookups are not accesses (Redis's `LOOKUP_NOTOUCH`).

fn object_encoding(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let profile = ctx.core.profile();
    let mut db = ctx.db();
    let limits = *db.limits();
    Ok(db.entry_notouch(&args[2]).map_or(Reply::Nil, |e| Reply::bulk_str(encoding_in(e, profile, &limits))))
}

/// What `OBJECT ENCODING` and `DEBUG OBJECT` say for `e` under `profile`:
/// the entry's own encoding (Redis 7.0's), except that from 7.2 a small
/// list, and a small set that is not an intset, is a listpack.
pub(crate) fn encoding_in(e: &crate::db::Entry, profile: crate::version::Profile, limits: &EncLimits) -> &'static str {
    let since_7_2 = profile.at_least(7, 2, 0);
    match &e.value {
        Value::List(l) if since_7_2 && list_fits_listpack(l, limits) => "listpack",
        // A set's mark says which, once a write has set it (Redis 7.2's
        // conversions depend on history); its content, before.
        Value::Set(set) if since_7_2 && e.str_enc == crate::db::StrEnc::Auto && set_is_listpack(set, limits) => {
            "listpack"
        }
        _ => e.encoding(),
    }
}

/// Whether a set is a listpack under Redis 7.2 and later, which keep a
/// small set that is not all integers (or too long for an intset) in one
/// (`set-max-listpack-entries`, `set-max-listpack-value`). By content: a
/// set that grew past the limits and shrank stays a hashtable on Redis.
fn set_is_listpack(set: &crate::db::value::SetValue, limits: &EncLimits) -> bool {
    let ints = set.iter().all(|m| crate::num::parse_i64_strict(m).is_some());
    let intset = ints && set.len() <= limits.intset_entries();
    !intset && set.len() <= limits.set_listpack_entries && set.iter().all(|m| m.len() <= limits.set_listpack_value)
}

/// Whether a list is one listpack under Redis 7.2 and later (which keep a
/// small list as a listpack, where 7.0 always has a quicklist): its
/// listpack's bytes within `list-max-listpack-size`'s size class, or its
/// entries within the count (and 8 kB) when the setting is positive. By
/// content: Redis converts a shrinking quicklist back only below half the
/// limit, so a list that grew past it and shrank to just under it is a
/// quicklist there and a listpack here.
fn list_fits_listpack(list: &ListValue, limits: &EncLimits) -> bool {
    let max_bytes = limits.list_node_bytes();
    let max_count =
        if limits.list_fill < 0 { usize::MAX } else { usize::try_from(limits.list_fill).unwrap_or(usize::MAX) };
    if list.len() > max_count {
        return false;
    }
    // A listpack: a 6-byte header, each entry's encoding, data and
    // back-length, and the end byte.
    let mut bytes = 7usize;
    for v in list {
        let body = match crate::num::parse_i64_strict(v).filter(|_| v.len() <= 20) {
            Some(n) if (0..128).contains(&n) => 1,
            Some(n) if (-4096..4096).contains(&n) => 2,
            Some(n) if i16::try_from(n).is_ok() => 3,
            Some(n) if (-(1 << 23)..(1 << 23)).contains(&n) => 4,
            Some(n) if i32::try_from(n).is_ok() => 5,
            Some(_) => 9,
            None if v.len() < 64 => 1 + v.len(),
            None if v.len() < 4096 => 2 + v.len(),
            None => 5 + v.len(),
        };
        let back = match body {
            0..=127 => 1,
            128..=16383 => 2,
            16384..=2097151 => 3,
            2097152..=268435455 => 4,
            _ => 5,
        };
        bytes += body + back;
        if bytes > max_bytes {
            return false;
        }
    }
    true
}

/// The access counter, decayed to now (not stored back).
fn object_freq(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let now = ctx.now_ms();
    let mut db = ctx.db();
    let lfu = db.lfu();
    let Some(word) = db.entry_notouch(&args[2]).map(|e| e.lru) else {
        return Ok(Reply::Nil);
    };
    let Some(lfu) = lfu else {
        return Err(CmdError::custom("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    };
    Ok(Reply::Int(i64::from(lfu.counter(word, now))))
}

fn object_idletime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let now = crate::db::lru_stamp(ctx.now_ms());
    let mut db = ctx.db();
    let lfu = db.lfu().is_some();
    let Some(stamp) = db.entry_notouch(&args[2]).map(|e| e.lru) else {
        return Ok(Reply::Nil);
    };
    if lfu {
        return Err(CmdError::custom("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."));
    }
    Ok(Reply::Int(i64::from(now.saturating_sub(stamp))))
}

/// 1, except for the integers 0..9999 Redis stores as shared objects
/// (refcount `INT_MAX`) until it embeds keys in their values (8.0).
fn object_refcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let shares = !ctx.core.profile().embeds_keys();
    let mut db = ctx.db();
    let Some(e) = db.entry_notouch(&args[2]) else { return Ok(Reply::Nil) };
    let shared = match &e.value {
        crate::db::Value::Str(s) if shares && e.encoding() == "int" => {
            crate::num::parse_i64_strict(s).is_some_and(|n| (0..10_000).contains(&n))
        }
        _ => false,
    };
    Ok(Reply::Int(if shared { i64::from(i32::MAX) } else { 1 }))
}

fn object_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(super::help::help_reply(ctx.core.profile(), "OBJECT", super::help::OBJECT_HELP))
}

const EXPIRE_NX: u8 = 1;
const EXPIRE_XX: u8 = 2;
const EXPIRE_GT: u8 = 4;
const EXPIRE_LT: u8 = 8;

fn expire_generic(ctx: &mut Ctx<'_>, args: &[Bytes], base_ms: u64, seconds: bool) -> CmdResult {
    let bad_time = || {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
        CmdError::custom(format!("ERR invalid expire time in '{name}' command"))
    };
    let mut fl = 0u8;
    for a in &args[3..] {
        fl |= if eq(a, "nx") {
            EXPIRE_NX
        } else if eq(a, "xx") {
            EXPIRE_XX
        } else if eq(a, "gt") {
            EXPIRE_GT
        } else if eq(a, "lt") {
            EXPIRE_LT
        } else {
            return Err(CmdError::echo("ERR Unsupported option ", a, ""));
        };
    }
    if fl & EXPIRE_NX != 0 && fl & (EXPIRE_XX | EXPIRE_GT | EXPIRE_LT) != 0 {
        return Err(CmdError::custom("ERR NX and XX, GT or LT options at the same time are not compatible"));
    }
    if fl & EXPIRE_GT != 0 && fl & EXPIRE_LT != 0 {
        return Err(CmdError::custom("ERR GT and LT options at the same time are not compatible"));
    }
    let mut when = int(&args[2])?;
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return Err(bad_time());
        }
        when *= 1000;
    }
    let base = base_ms as i64;
    if when > i64::MAX - base {
        return Err(bad_time());
    }
    when += base;
    let key = &args[1];
    let now = ctx.now_ms() as i64;
    // Valkey 8 expires a key given a past deadline (Redis deletes it).
    let valkey = ctx.core.profile().is_valkey();
    let mut db = ctx.db();
    let Some(cur) = db.expire_of(key) else {
        return Ok(Reply::Int(0));
    };
    if fl != 0 {
        let cur = cur.map_or(-1, |c| c as i64);
        if fl & EXPIRE_NX != 0 && cur != -1 {
            return Ok(Reply::Int(0));
        }
        if fl & EXPIRE_XX != 0 && cur == -1 {
            return Ok(Reply::Int(0));
        }
        if fl & EXPIRE_GT != 0 && (when <= cur || cur == -1) {
            return Ok(Reply::Int(0));
        }
        if fl & EXPIRE_LT != 0 && cur != -1 && when >= cur {
            return Ok(Reply::Int(0));
        }
    }
    if when <= now && valkey {
        db.expire_now(key);
    } else if when <= now {
        db.remove(key);
        db.notify(notify::GENERIC, "del", key);
    } else {
        db.set_expire(key, when as u64);
        db.touch(key);
        db.notify(notify::GENERIC, "expire", key);
    }
    Ok(Reply::Int(1))
}

fn expire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let now = ctx.now_ms();
    expire_generic(ctx, args, now, true)
}

fn pexpire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let now = ctx.now_ms();
    expire_generic(ctx, args, now, false)
}

fn expireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    expire_generic(ctx, args, 0, true)
}

fn pexpireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    expire_generic(ctx, args, 0, false)
}

fn ttl_generic(ctx: &mut Ctx<'_>, key: &[u8], ms: bool, absolute: bool) -> CmdResult {
    let now = ctx.now_ms() as i64;
    Ok(Reply::Int(match ctx.db().expire_of_notouch(key) {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => {
            let at = at as i64;
            if absolute {
                if ms {
                    at
                } else {
                    at / 1000
                }
            } else {
                let ttl = (at - now).max(0);
                if ms {
                    ttl
                } else {
                    (ttl + 500) / 1000
                }
            }
        }
    }))
}

fn ttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, &args[1], false, false)
}

fn pttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, &args[1], true, false)
}

fn expiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, &args[1], false, true)
}

fn pexpiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ttl_generic(ctx, &args[1], true, true)
}

fn persist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    // An access, as Redis's lookup for a write is.
    db.exists(key);
    if db.persist(key) {
        db.touch(key);
        db.notify(notify::GENERIC, "persist", key);
        Ok(Reply::Int(1))
    } else {
        Ok(Reply::Int(0))
    }
}
