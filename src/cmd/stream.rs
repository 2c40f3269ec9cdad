//! Stream commands (Redis 7.0 `t_stream.c` behaviour: argument parsing,
//! error texts and reply shapes checked against redis-server 7.0.15).
//!
//! Under a Redis 8.2 profile: `XDELEX` and `XACKDEL` (rows since 8.2.0),
//! and `XADD`/`XTRIM`'s `KEEPREF | DELREF | ACKED` (read as options only
//! from 8.2; a 7.0 profile takes them for an id or a syntax error, as
//! 7.0 does), checked against redis-server 8.2.3. From 8.0 on, a group's
//! lag and read counter follow Redis 8's rules (`db::stream::LagRules`).
//!
//! Storage is `db::stream`. `XREAD`/`XREADGROUP` with `BLOCK` block through
//! `cmd::blocking` like `BLPOP`: a served waiter re-runs its own command
//! (with `$` resolved to the id it blocked at), so there is one read path.

use bytes::Bytes;

use super::blocking::{block_on_keys, can_block};
use super::help::help_reply;
use super::util::{eq, int};
use super::{cmd, container, CommandSpec, Ctx};
use crate::client::Caller;
use crate::db::stream::{
    del_code, Fields, Group, LagRules, NodeLimits, PendingEntry, RefPolicy, Stream, StreamId, Trim,
};
use crate::db::{notify, own, DbView, Value};
use crate::error::{CmdError, CmdResult};
use crate::protocol::{Reply, Resp};

pub static COMMANDS: &[CommandSpec] = &[
    cmd("xadd", xadd, -5, "write denyoom fast", 1, 1, 1, "@write @stream @fast")
        .doc("Appends a new entry to a stream", "5.0.0"),
    cmd("xrange", xrange, -4, "readonly", 1, 1, 1, "@read @stream @slow")
        .doc("Return a range of elements in a stream, with IDs matching the specified IDs interval", "5.0.0"),
    cmd("xrevrange", xrevrange, -4, "readonly", 1, 1, 1, "@read @stream @slow").doc(
        "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE",
        "5.0.0",
    ),
    cmd("xlen", xlen, 2, "readonly fast", 1, 1, 1, "@read @stream @fast")
        .doc("Return the number of entries in a stream", "5.0.0"),
    cmd("xdel", xdel, -3, "write fast", 1, 1, 1, "@write @stream @fast")
        .doc("Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.", "5.0.0"),
    cmd("xtrim", xtrim, -4, "write", 1, 1, 1, "@write @stream @slow")
        .doc("Trims the stream to (approximately if '~' is passed) a certain size", "5.0.0"),
    cmd("xdelex", xdelex, -5, "write fast", 1, 1, 1, "@write @stream @fast")
        .doc("Deletes one or multiple entries from the stream.", "8.2.0"),
    cmd("xackdel", xackdel, -6, "write fast", 1, 1, 1, "@write @stream @fast")
        .doc("Acknowledges and deletes one or multiple messages for a stream consumer group.", "8.2.0"),
    cmd("xread", xread, -4, "readonly blocking movablekeys", 0, 0, 0, "@read @stream @slow @blocking").doc(
        "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.",
        "5.0.0",
    ),
    cmd("xreadgroup", xreadgroup, -7, "write blocking movablekeys", 0, 0, 0, "@write @stream @slow @blocking").doc(
        "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.",
        "5.0.0",
    ),
    cmd("xack", xack, -4, "write fast", 1, 1, 1, "@write @stream @fast").doc(
        "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.",
        "5.0.0",
    ),
    cmd("xpending", xpending, -3, "readonly", 1, 1, 1, "@read @stream @slow").doc(
        "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.",
        "5.0.0",
    ),
    cmd("xclaim", xclaim, -6, "write fast", 1, 1, 1, "@write @stream @fast").doc(
        "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.",
        "5.0.0",
    ),
    cmd("xautoclaim", xautoclaim, -6, "write fast", 1, 1, 1, "@write @stream @fast").doc(
        "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.",
        "6.2.0",
    ),
    cmd("xsetid", xsetid, -3, "write denyoom fast", 1, 1, 1, "@write @stream @fast")
        .doc("An internal command for replicating stream values", "5.0.0"),
    cmd("xgroup", container, -2, "", 0, 0, 0, "@slow").subs(XGROUP_SUBS).doc("A container for consumer groups commands", "5.0.0"),
    cmd("xinfo", container, -2, "", 0, 0, 0, "@slow").subs(XINFO_SUBS).doc("A container for stream introspection commands", "5.0.0"),
];

static XGROUP_SUBS: &[CommandSpec] = &[
    cmd("create", xgroup_create, -5, "write denyoom", 2, 2, 1, "@write @stream @slow")
        .doc("Create a consumer group.", "5.0.0"),
    cmd("setid", xgroup_setid, -5, "write", 2, 2, 1, "@write @stream @slow")
        .doc("Set a consumer group to an arbitrary last delivered ID value.", "5.0.0"),
    cmd("destroy", xgroup_destroy, 4, "write", 2, 2, 1, "@write @stream @slow")
        .doc("Destroy a consumer group.", "5.0.0"),
    cmd("createconsumer", xgroup_createconsumer, 5, "write denyoom", 2, 2, 1, "@write @stream @slow")
        .doc("Create a consumer in a consumer group.", "6.2.0"),
    cmd("delconsumer", xgroup_delconsumer, 5, "write", 2, 2, 1, "@write @stream @slow")
        .doc("Delete a consumer from a consumer group.", "5.0.0"),
    cmd("help", xgroup_help, 2, "loading stale", 0, 0, 0, "@stream @slow")
        .doc("Show helpful text about the different subcommands", "5.0.0"),
];

static XINFO_SUBS: &[CommandSpec] = &[
    cmd("consumers", xinfo_consumers, 4, "readonly", 2, 2, 1, "@read @stream @slow")
        .doc("List the consumers in a consumer group", "5.0.0"),
    cmd("groups", xinfo_groups, 3, "readonly", 2, 2, 1, "@read @stream @slow")
        .doc("List the consumer groups of a stream", "5.0.0"),
    cmd("stream", xinfo_stream, -3, "readonly", 2, 2, 1, "@read @stream @slow")
        .doc("Get information about a stream", "5.0.0"),
    cmd("help", xinfo_help, 2, "loading stale", 0, 0, 0, "@stream @slow")
        .doc("Show helpful text about the different subcommands", "5.0.0"),
];

const XGROUP_HELP: &[&str] = &[
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
];

const XINFO_HELP: &[&str] = &[
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
];

// ---------------------------------------------------------------------------
// Argument parsing

fn invalid_id() -> CmdError {
    CmdError::custom("ERR Invalid stream ID specified as stream command argument")
}

/// Redis's `string2ull`: a strict `long long` first (negative refused),
/// else `strtoull` (leading spaces and a sign allowed, whole string used).
fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::num::parse_i64_strict(s) {
        return (v >= 0).then_some(v as u64);
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Parses `ms-seq`, `ms` (seq = `missing_seq`), `-`, `+` (not when
/// `strict`), and with `allow_auto_seq` the `ms-*` form (second value false).
fn parse_id_full(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    allow_auto_seq: bool,
) -> Result<(StreamId, bool), CmdError> {
    let arg = &arg[..arg.iter().position(|&c| c == 0).unwrap_or(arg.len())];
    if arg.len() > 127 {
        return Err(invalid_id());
    }
    if arg == b"-" || arg == b"+" {
        if strict {
            return Err(invalid_id());
        }
        return Ok((if arg == b"-" { StreamId::MIN } else { StreamId::MAX }, true));
    }
    let (ms_part, seq_part) = match arg.iter().position(|&c| c == b'-') {
        Some(p) => (&arg[..p], Some(&arg[p + 1..])),
        None => (arg, None),
    };
    let ms = string2ull(ms_part).ok_or_else(invalid_id)?;
    match seq_part {
        Some(b"*") if allow_auto_seq => Ok((StreamId::new(ms, 0), false)),
        Some(s) => Ok((StreamId::new(ms, string2ull(s).ok_or_else(invalid_id)?), true)),
        None => Ok((StreamId::new(ms, missing_seq), true)),
    }
}

fn parse_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, CmdError> {
    parse_id_full(arg, missing_seq, false, false).map(|r| r.0)
}

fn parse_strict_id(arg: &[u8]) -> Result<StreamId, CmdError> {
    parse_id_full(arg, 0, true, false).map(|r| r.0)
}

/// An interval bound: `(id` is exclusive (strict id after the parenthesis).
fn parse_interval_id(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), CmdError> {
    if arg.len() > 1 && arg[0] == b'(' {
        Ok((parse_id_full(&arg[1..], missing_seq, true, false)?.0, true))
    } else {
        Ok((parse_id(arg, missing_seq)?, false))
    }
}

fn interval_start(arg: &[u8]) -> Result<StreamId, CmdError> {
    let (id, ex) = parse_interval_id(arg, 0)?;
    if ex {
        id.incr().ok_or_else(|| CmdError::custom("ERR invalid start ID for the interval"))
    } else {
        Ok(id)
    }
}

fn interval_end(arg: &[u8]) -> Result<StreamId, CmdError> {
    let (id, ex) = parse_interval_id(arg, u64::MAX)?;
    if ex {
        id.decr().ok_or_else(|| CmdError::custom("ERR invalid end ID for the interval"))
    } else {
        Ok(id)
    }
}

/// Trimming options of XADD / XTRIM.
#[derive(Debug, Default)]
struct TrimArgs {
    how: Option<Trim>,
    approx: bool,
    limit: u64,
    nomkstream: bool,
    /// Redis 8.2's `KEEPREF | DELREF | ACKED` (`None` when not given).
    policy: Option<RefPolicy>,
    /// XADD: the id argument's index and the id (None for `*`).
    id_pos: usize,
    id: Option<(StreamId, bool)>,
}

/// `KEEPREF`, `DELREF` or `ACKED` (any case), if `arg` is one.
fn ref_policy(arg: &[u8]) -> Option<RefPolicy> {
    if eq(arg, "keepref") {
        Some(RefPolicy::KeepRef)
    } else if eq(arg, "delref") {
        Some(RefPolicy::DelRef)
    } else if eq(arg, "acked") {
        Some(RefPolicy::Acked)
    } else {
        None
    }
}

/// XADD / XTRIM's options. `policies`: whether `KEEPREF | DELREF | ACKED`
/// are options (Redis 8.2); a second one is not (XADD reads it as the id,
/// XTRIM answers a syntax error), nor is any before 8.2.
fn parse_add_or_trim(args: &[Bytes], xadd: bool, limits: NodeLimits, policies: bool) -> Result<TrimArgs, CmdError> {
    let mut t = TrimArgs::default();
    let mut limit: i64 = 0;
    let mut limit_given = false;
    let argc = args.len();
    let mut i = 2;
    while i < argc {
        let more = argc - 1 - i;
        let opt = &args[i];
        if xadd && &opt[..] == b"*" {
            break;
        } else if (eq(opt, "maxlen") || eq(opt, "minid")) && more > 0 {
            if t.how.is_some() {
                return Err(CmdError::custom(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            t.approx = false;
            let next = &args[i + 1];
            if more >= 2 && &next[..] == b"~" {
                t.approx = true;
                i += 1;
            } else if more >= 2 && &next[..] == b"=" {
                i += 1;
            }
            if eq(opt, "maxlen") {
                let n = int(&args[i + 1])?;
                if n < 0 {
                    return Err(CmdError::custom("ERR The MAXLEN argument must be >= 0."));
                }
                t.how = Some(Trim::MaxLen(n as u64));
            } else {
                t.how = Some(Trim::MinId(parse_strict_id(&args[i + 1])?));
            }
            i += 1;
        } else if eq(opt, "limit") && more > 0 {
            limit = int(&args[i + 1])?;
            if limit < 0 {
                return Err(CmdError::custom("ERR The LIMIT argument must be >= 0."));
            }
            limit_given = true;
            i += 1;
        } else if xadd && eq(opt, "nomkstream") {
            t.nomkstream = true;
        } else if let Some(p) = ref_policy(opt).filter(|_| policies && t.policy.is_none()) {
            t.policy = Some(p);
        } else if xadd {
            t.id = Some(parse_id_full(opt, 0, true, true)?);
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    t.id_pos = i;
    if limit != 0 && t.how.is_none() {
        return Err(CmdError::custom("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"));
    }
    if !xadd && t.how.is_none() {
        return Err(CmdError::custom("ERR syntax error, XTRIM must be called with a trimming strategy"));
    }
    if limit_given {
        if !t.approx {
            return Err(CmdError::custom("ERR syntax error, LIMIT cannot be used without the special ~ option"));
        }
        t.limit = limit as u64;
    } else if t.approx {
        t.limit = limits.approx_trim_limit();
    }
    Ok(t)
}

// ---------------------------------------------------------------------------
// Lookup and replies

fn get_stream<'a>(db: &'a mut DbView<'_>, key: &[u8]) -> Result<Option<&'a mut Stream>, CmdError> {
    match db.get_mut(key) {
        None => Ok(None),
        Some(Value::Stream(s)) => Ok(Some(s)),
        Some(_) => Err(CmdError::WrongType),
    }
}

fn id_reply(id: &StreamId) -> Reply {
    Reply::Bulk(id.to_bytes())
}

fn fields_reply(f: &Fields) -> Reply {
    Reply::Array(f.iter().flat_map(|(k, v)| [Reply::Bulk(k.clone()), Reply::Bulk(v.clone())]).collect())
}

fn entry_reply(id: &StreamId, f: &Fields) -> Reply {
    Reply::Array(vec![id_reply(id), fields_reply(f)])
}

fn map_reply(pairs: Vec<(&'static str, Reply)>) -> Reply {
    Reply::Map(pairs.into_iter().map(|(k, v)| (Reply::bulk_str(k), v)).collect())
}

/// The lag rules of the profile: Redis 8.0's fixes from 8.0 on.
fn lag_rules(ctx: &Ctx<'_>) -> LagRules {
    if ctx.core.profile().at_least(8, 0, 0) {
        LagRules::Since80
    } else {
        LagRules::Redis70
    }
}

fn nogroup(key: &[u8], group: &[u8]) -> CmdError {
    CmdError::Raw([b"NOGROUP No such key '".as_slice(), key, b"' or consumer group '", group, b"'"].concat().into())
}

// ---------------------------------------------------------------------------
// XADD XRANGE XREVRANGE XLEN XDEL XTRIM XSETID

fn xadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let limits = ctx.core.config.stream_node;
    let t = parse_add_or_trim(args, true, limits, ctx.core.profile().at_least(8, 2, 0))?;
    let field_pos = t.id_pos + 1;
    if args.len() < field_pos + 2 || !(args.len() - field_pos).is_multiple_of(2) {
        return Err(CmdError::WrongArity("xadd".into()));
    }
    if let Some((id, true)) = t.id {
        if id.is_zero() {
            return Err(CmdError::custom("ERR The ID specified in XADD must be greater than 0-0"));
        }
    }
    let key = &args[1];
    let now = ctx.now_ms();
    let mut db = ctx.db();
    if get_stream(&mut db, key)?.is_none() {
        if t.nomkstream {
            return Ok(Reply::Nil);
        }
        db.insert_new(key, Value::Stream(Box::default()));
    }
    let s = get_stream(&mut db, key)?.expect("stream exists");
    let last = s.last_id;
    if last == StreamId::MAX {
        return Err(CmdError::custom("ERR The stream has exhausted the last possible ID, unable to add more items"));
    }
    let too_small =
        || CmdError::custom("ERR The ID specified in XADD is equal or smaller than the target stream top item");
    let id = match t.id {
        Some((id, true)) => {
            if id <= last {
                return Err(too_small());
            }
            id
        }
        Some((id, false)) => {
            if id.ms == last.ms {
                if last.seq == u64::MAX {
                    return Err(too_small());
                }
                StreamId::new(id.ms, last.seq + 1)
            } else if id.ms > last.ms {
                StreamId::new(id.ms, 0)
            } else {
                return Err(too_small());
            }
        }
        None => {
            if now > last.ms {
                StreamId::new(now, 0)
            } else {
                last.incr().expect("not exhausted")
            }
        }
    };
    let fields: Fields = args[field_pos..].chunks(2).map(|p| (own(&p[0]), own(&p[1]))).collect();
    s.append(id, fields, limits);
    let trimmed = match t.how {
        Some(how) => s.trim(how, t.approx, t.limit, t.policy.unwrap_or_default()),
        None => 0,
    };
    db.touch(key);
    db.notify(notify::STREAM, "xadd", key);
    if trimmed > 0 {
        db.notify(notify::STREAM, "xtrim", key);
    }
    Ok(id_reply(&id))
}

fn xtrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let policies = ctx.core.profile().at_least(8, 2, 0);
    let t = parse_add_or_trim(args, false, ctx.core.config.stream_node, policies)?;
    let mut db = ctx.db();
    let Some(s) = get_stream(&mut db, key)? else {
        return Ok(Reply::Int(0));
    };
    let n = s.trim(t.how.expect("strategy"), t.approx, t.limit, t.policy.unwrap_or_default());
    if n > 0 {
        db.touch(key);
        db.notify(notify::STREAM, "xtrim", key);
    }
    Ok(Reply::Int(n as i64))
}

fn range_generic(ctx: &mut Ctx<'_>, args: &[Bytes], rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev { (&args[3], &args[2]) } else { (&args[2], &args[3]) };
    let start = interval_start(start_arg)?;
    let end = interval_end(end_arg)?;
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if eq(&args[j], "count") && j + 1 < args.len() {
            count = int(&args[j + 1])?.max(0);
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let mut db = ctx.db();
    let Some(s) = get_stream(&mut db, &args[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    if count == 0 {
        return Ok(Reply::NilArray);
    }
    let limit = if count < 0 { usize::MAX } else { count as usize };
    let items: Vec<Reply> = if rev {
        s.range(start, end).rev().take(limit).map(|(id, f)| entry_reply(id, f)).collect()
    } else {
        s.range(start, end).take(limit).map(|(id, f)| entry_reply(id, f)).collect()
    };
    Ok(Reply::Array(items))
}

fn xrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_generic(ctx, args, false)
}

fn xrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    range_generic(ctx, args, true)
}

fn xlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(Reply::Int(get_stream(&mut db, &args[1])?.map_or(0, |s| s.len() as i64)))
}

fn xdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    if get_stream(&mut db, key)?.is_none() {
        return Ok(Reply::Int(0));
    }
    let ids = args[2..].iter().map(|a| parse_strict_id(a)).collect::<Result<Vec<_>, _>>()?;
    let s = get_stream(&mut db, key)?.expect("stream exists");
    let deleted = ids.iter().filter(|id| s.delete(id)).count();
    if deleted > 0 {
        db.touch(key);
        db.notify(notify::STREAM, "xdel", key);
    }
    Ok(Reply::Int(deleted as i64))
}

/// XDELEX / XACKDEL's options from `args[from..]`: the policy and the
/// ids of the (last) `IDS numids id…` block, unparsed. Any order; a second
/// policy is a syntax error.
fn parse_ids_block(args: &[Bytes], from: usize) -> Result<(RefPolicy, &[Bytes]), CmdError> {
    let mut policy = None;
    let mut ids: Option<&[Bytes]> = None;
    let mut i = from;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if eq(&args[i], "ids") && more > 0 {
            let n = crate::num::parse_i64_strict(&args[i + 1])
                .filter(|&n| n > 0)
                .ok_or_else(|| CmdError::custom("ERR Number of IDs must be a positive integer"))?;
            let first = i + 2;
            if n as u64 > (args.len() - first) as u64 {
                return Err(CmdError::custom("ERR The `numids` parameter must match the number of arguments"));
            }
            let n = n as usize;
            ids = Some(&args[first..first + n]);
            i = first + n;
        } else if let Some(p) = ref_policy(&args[i]).filter(|_| policy.is_none()) {
            policy = Some(p);
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    // Arity leaves no way to end without IDS but a second policy, already
    // refused above.
    let ids = ids.ok_or(CmdError::Syntax)?;
    Ok((policy.unwrap_or_default(), ids))
}

fn not_found_codes(n: usize) -> Reply {
    Reply::Array(vec![Reply::Int(del_code::NOT_FOUND); n])
}

/// XDELEX key [KEEPREF | DELREF | ACKED] IDS numids id… (Redis 8.2): one
/// [`del_code`] per id. The key's type is checked before the options, the
/// ids only once the stream is there.
fn xdelex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    get_stream(&mut db, key)?;
    let (policy, id_args) = parse_ids_block(args, 2)?;
    if get_stream(&mut db, key)?.is_none() {
        return Ok(not_found_codes(id_args.len()));
    }
    let ids = id_args.iter().map(|a| parse_strict_id(a)).collect::<Result<Vec<_>, _>>()?;
    let s = get_stream(&mut db, key)?.expect("stream exists");
    let codes: Vec<i64> = ids.iter().map(|id| s.delete_with(id, policy)).collect();
    let deleted = codes.iter().filter(|&&c| c == del_code::DELETED).count() as u64;
    if deleted > 0 {
        db.touch(key);
        db.sig.dirty += deleted - 1;
        db.notify(notify::STREAM, "xdel", key);
    }
    Ok(Reply::Array(codes.into_iter().map(Reply::Int).collect()))
}

/// XACKDEL key group [KEEPREF | DELREF | ACKED] IDS numids id… (Redis
/// 8.2): XACK then XDELEX's deletion, one [`del_code`] per id. No such key
/// or group answers -1 for every id (no NOGROUP error).
fn xackdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (key, group) = (&args[1], &args[2]);
    let mut db = ctx.db();
    get_stream(&mut db, key)?;
    let (policy, id_args) = parse_ids_block(args, 3)?;
    if !get_stream(&mut db, key)?.is_some_and(|s| s.groups.contains_key(group)) {
        return Ok(not_found_codes(id_args.len()));
    }
    let ids = id_args.iter().map(|a| parse_strict_id(a)).collect::<Result<Vec<_>, _>>()?;
    let s = get_stream(&mut db, key)?.expect("stream exists");
    let (mut acked, mut deleted) = (0u64, 0u64);
    let mut codes = Vec::with_capacity(ids.len());
    for id in &ids {
        let (code, gone) = s.ack_delete(group, id, policy);
        acked += u64::from(code != del_code::NOT_FOUND);
        deleted += u64::from(gone);
        codes.push(Reply::Int(code));
    }
    // Redis counts the acknowledgements (the key's touch one of them);
    // only a deletion signals the key.
    if deleted > 0 {
        db.touch(key);
        db.notify(notify::STREAM, "xdel", key);
    }
    db.sig.dirty += acked - u64::from(deleted > 0);
    Ok(Reply::Array(codes))
}

fn xsetid(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let id = parse_strict_id(&args[2])?;
    let mut entries_added: Option<u64> = None;
    let mut max_xdel = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if eq(&args[i], "entriesadded") && more > 0 {
            let n = int(&args[i + 1])?;
            if n < 0 {
                return Err(CmdError::custom("ERR entries_added must be positive"));
            }
            entries_added = Some(n as u64);
        } else if eq(&args[i], "maxdeletedid") && more > 0 {
            max_xdel = parse_strict_id(&args[i + 1])?;
            if id < max_xdel {
                return Err(CmdError::custom(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    let key = &args[1];
    let later = ctx.core.profile().at_least(7, 2, 0);
    let mut db = ctx.db();
    let Some(s) = get_stream(&mut db, key)? else {
        return Err(CmdError::NoSuchKey);
    };
    // Redis 7.2 keeps the last id at or above the largest id deleted.
    if later && id < s.max_deleted_id {
        return Err(CmdError::custom("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"));
    }
    if !s.is_empty() {
        if id < s.last_entry_id() {
            return Err(CmdError::custom("ERR The ID specified in XSETID is smaller than the target stream top item"));
        }
        if entries_added.is_some_and(|n| (s.len() as u64) > n) {
            return Err(CmdError::custom(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    s.last_id = id;
    if let Some(n) = entries_added {
        s.entries_added = n;
    }
    if !max_xdel.is_zero() {
        s.max_deleted_id = max_xdel;
    }
    db.sig.dirty += 1;
    db.notify(notify::STREAM, "xsetid", key);
    Ok(Reply::ok())
}

// ---------------------------------------------------------------------------
// XREAD XREADGROUP

/// Longest BLOCK handed to the core (see `cmd::blocking`).
const MAX_BLOCK_SECS: f64 = 1e10;

fn xread(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    read_generic(ctx, args, false)
}

fn xreadgroup(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    read_generic(ctx, args, true)
}

/// What one stream of an XREAD / XREADGROUP asks for.
enum ReadFrom {
    /// Entries after this id.
    After(StreamId),
    /// XREADGROUP `>`: entries after the group's last delivered id.
    New,
}

fn read_generic(ctx: &mut Ctx<'_>, args: &[Bytes], group_cmd: bool) -> CmdResult {
    let mut timeout_ms: Option<i64> = None;
    let mut count: i64 = 0;
    let mut streams_arg = 0;
    let mut nkeys = 0;
    let mut group: Option<(Bytes, Bytes)> = None;
    let mut noack = false;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let o = &args[i];
        if eq(o, "block") && more > 0 {
            // Redis 7.0 refuses BLOCK in a script; from 7.2 it reads without
            // blocking there.
            if ctx.client.is_script() && !ctx.core.profile().at_least(7, 2, 0) {
                return Err(CmdError::echo("ERR ", &args[0], " command is not allowed with BLOCK option from scripts"));
            }
            i += 1;
            let t = crate::num::parse_int(&args[i]).map_err(|_| CmdError::TimeoutNotInteger)?;
            if t < 0 {
                return Err(CmdError::NegativeTimeout);
            }
            super::blocking::check_deadline(ctx, t)?;
            timeout_ms = Some(t);
        } else if eq(o, "count") && more > 0 {
            i += 1;
            count = int(&args[i])?.max(0);
        } else if eq(o, "streams") && more > 0 {
            streams_arg = i + 1;
            let n = args.len() - streams_arg;
            if !n.is_multiple_of(2) {
                return Err(CmdError::custom(unbalanced_text(ctx.core.profile(), group_cmd)));
            }
            nkeys = n / 2;
            break;
        } else if eq(o, "group") && more >= 2 {
            if !group_cmd {
                return Err(CmdError::custom(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            group = Some((args[i + 1].clone(), args[i + 2].clone()));
            i += 2;
        } else if eq(o, "noack") {
            if !group_cmd {
                return Err(CmdError::custom(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            noack = true;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if streams_arg == 0 {
        return Err(CmdError::Syntax);
    }
    if group_cmd && group.is_none() {
        return Err(CmdError::custom("ERR Missing GROUP option for XREADGROUP"));
    }
    let keys = &args[streams_arg..streams_arg + nkeys];
    let id_args = &args[streams_arg + nkeys..];
    // Redis 7.0 answers a woken reader whose group went in words of its
    // own; 7.2 re-runs the command, which answers as it would at once.
    let rerun = ctx.client.caller == Caller::BlockedRerun && !ctx.core.profile().at_least(7, 2, 0);
    let mut from: Vec<ReadFrom> = Vec::with_capacity(nkeys);
    {
        let mut db = ctx.db();
        for (key, id_arg) in keys.iter().zip(id_args) {
            let s = get_stream(&mut db, key)?;
            if let Some((g, _)) = &group {
                if !s.as_ref().is_some_and(|s| s.groups.contains_key(g)) {
                    if rerun {
                        return Err(CmdError::custom(
                            "NOGROUP the consumer group this client was blocked on no longer exists",
                        ));
                    }
                    return Err(CmdError::Raw(
                        [
                            b"NOGROUP No such key '".as_slice(),
                            key,
                            b"' or consumer group '",
                            g,
                            b"' in XREADGROUP with GROUP option",
                        ]
                        .concat()
                        .into(),
                    ));
                }
            }
            if &id_arg[..] == b"$" {
                if group_cmd {
                    return Err(CmdError::custom(
                        "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                    ));
                }
                from.push(ReadFrom::After(s.map_or(StreamId::MIN, |s| s.last_id)));
            } else if &id_arg[..] == b">" {
                if !group_cmd {
                    return Err(CmdError::custom(
                        "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                    ));
                }
                from.push(ReadFrom::New);
            } else {
                from.push(ReadFrom::After(parse_strict_id(id_arg)?));
            }
        }
    }
    let now = ctx.now_ms();
    let resp3 = ctx.client.resp == Resp::V3;
    let rules = lag_rules(ctx);
    let consumer_on_ask = ctx.core.profile().at_least(7, 2, 0);
    let limit = if count == 0 { usize::MAX } else { count as usize };
    let mut out: Vec<(Reply, Reply)> = Vec::new();
    let mut db = ctx.db();
    let mut wrote = false;
    let mut created: Vec<Bytes> = Vec::new();
    for (key, f) in keys.iter().zip(&from) {
        let Some(s) = get_stream(&mut db, key)? else {
            continue;
        };
        let items = match (&group, f) {
            (None, ReadFrom::After(after)) => {
                // Served now if an entry is there to read; a blocked reader
                // is served once the stream's last id moved past its own,
                // even if the entries went meanwhile (Redis answers it an
                // empty list then).
                let top = if rerun { s.last_id } else { s.last_entry_id() };
                if top <= *after || (!rerun && s.is_empty()) {
                    continue;
                }
                let Some(start) = after.incr() else { continue };
                s.range(start, StreamId::MAX).take(limit).map(|(id, f)| entry_reply(id, f)).collect()
            }
            (Some((g, c)), ReadFrom::After(after)) => {
                wrote = true;
                if touch_consumer(s, g, c, now) {
                    created.push(key.clone());
                }
                let start = after.incr();
                read_history(s, g, c, start, limit, now)
            }
            (Some((g, c)), ReadFrom::New) => {
                let last = s.groups[g].last_id;
                let top = if rerun { s.last_id } else { s.last_entry_id() };
                if top <= last || (!rerun && s.is_empty()) {
                    // From Redis 7.2 the consumer is there once it asked,
                    // served or not; 7.0 makes it only when it is served.
                    if consumer_on_ask && touch_consumer(s, g, c, now) {
                        wrote = true;
                        created.push(key.clone());
                    }
                    continue;
                }
                wrote = true;
                if touch_consumer(s, g, c, now) {
                    created.push(key.clone());
                }
                read_new(s, g, c, last, limit, noack, now, rules)
            }
            (None, ReadFrom::New) => unreachable!("> refused without GROUP"),
        };
        out.push((Reply::Bulk(key.clone()), Reply::Array(items)));
    }
    if wrote {
        // Group state changed: Redis counts it dirty but signals no key
        // (WATCH stays valid), as for every group-only change here.
        db.sig.dirty += 1;
    }
    for key in &created {
        db.notify(notify::STREAM, "xgroup-createconsumer", key);
    }

    if !out.is_empty() {
        return Ok(if resp3 {
            Reply::Map(out)
        } else {
            Reply::Array(out.into_iter().map(|(k, v)| Reply::Array(vec![k, v])).collect())
        });
    }
    let Some(ms) = timeout_ms else {
        return Ok(Reply::NilArray);
    };
    if !can_block(ctx) {
        return Ok(Reply::NilArray);
    }
    // Block with `$` resolved to the ids it stands for now, so the re-run
    // that serves this waiter reads what was added after this point.
    let mut argv = args.to_vec();
    for (k, f) in from.iter().enumerate() {
        if let ReadFrom::After(id) = f {
            argv[streams_arg + nkeys + k] = id.to_bytes();
        }
    }
    let secs = (ms as f64 / 1000.0).min(MAX_BLOCK_SECS);
    block_on_keys(ctx, &argv, keys, secs, Reply::NilArray)
}

/// The consumer `name` of group `g`, created if missing (true; the caller
/// notifies), its seen time refreshed.
fn touch_consumer(s: &mut Stream, g: &[u8], name: &Bytes, now: u64) -> bool {
    let grp = s.groups.get_mut(g).expect("group exists");
    let created = !grp.consumers.contains_key(name);
    grp.consumers.entry(own(name)).or_default().seen_time = now;
    created
}

/// XREADGROUP with an id: the consumer's own pending entries after it.
fn read_history(s: &mut Stream, g: &[u8], c: &Bytes, start: Option<StreamId>, limit: usize, now: u64) -> Vec<Reply> {
    let Some(start) = start else { return Vec::new() };
    let ids: Vec<StreamId> = s.groups[g].consumers[c].pel.range(start..).take(limit).copied().collect();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        match s.get(&id) {
            Some(f) => {
                out.push(entry_reply(&id, f));
                if let Some(p) = s.groups.get_mut(g).and_then(|grp| grp.pel.get_mut(&id)) {
                    p.delivery_time = now;
                    p.delivery_count += 1;
                }
            }
            None => out.push(Reply::Array(vec![id_reply(&id), Reply::NilArray])),
        }
    }
    out
}

/// XREADGROUP `>`: entries after the group's last id, delivered to `c`.
#[allow(clippy::too_many_arguments)]
fn read_new(
    s: &mut Stream,
    g: &[u8],
    c: &Bytes,
    last: StreamId,
    limit: usize,
    noack: bool,
    now: u64,
    rules: LagRules,
) -> Vec<Reply> {
    let Some(start) = last.incr() else { return Vec::new() };
    let picked: Vec<(StreamId, Reply)> =
        s.range(start, StreamId::MAX).take(limit).map(|(id, f)| (*id, entry_reply(id, f))).collect();
    let mut out = Vec::with_capacity(picked.len());
    for (id, reply) in picked {
        s.advance_group(g, id, rules);
        if !noack {
            let grp = s.groups.get_mut(g).expect("group exists");
            if let Some(old) = grp.pel.get(&id).map(|p| p.consumer.clone()) {
                if let Some(oc) = grp.consumers.get_mut(&old) {
                    oc.pel.remove(&id);
                }
            }
            grp.pel.insert(id, PendingEntry { consumer: own(c), delivery_time: now, delivery_count: 1 });
            let consumer = grp.consumers.get_mut(c).expect("consumer exists");
            consumer.pel.insert(id);
            consumer.active_time = Some(now);
        }
        out.push(reply);
    }
    out
}

// ---------------------------------------------------------------------------
// XGROUP

fn subcommand_syntax(args: &[Bytes]) -> CmdError {
    let mut msg = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    let sub = &args[1];
    msg.extend_from_slice(&sub[..sub.len().min(128)]);
    msg.extend_from_slice(b"'. Try ");
    msg.extend_from_slice(&args[0].to_ascii_uppercase());
    msg.extend_from_slice(b" HELP.");
    CmdError::Raw(msg.into())
}

fn key_must_exist() -> CmdError {
    CmdError::custom(
        "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
    )
}

fn nogroup_for_key(group: &[u8], key: &[u8]) -> CmdError {
    CmdError::Raw(
        [b"NOGROUP No such consumer group '".as_slice(), group, b"' for key name '", key, b"'"].concat().into(),
    )
}

/// The checks every XGROUP subcommand but HELP makes: the key must exist
/// (unless `mkstream`), and SETID / CREATECONSUMER / DELCONSUMER need the
/// group. Returns whether the key exists.
fn xgroup_checks(ctx: &mut Ctx<'_>, args: &[Bytes], mkstream: bool, needs_group: bool) -> Result<bool, CmdError> {
    let mut db = ctx.db();
    let s = get_stream(&mut db, &args[2])?;
    if mkstream {
        return Ok(s.is_some());
    }
    let Some(s) = s else {
        return Err(key_must_exist());
    };
    if needs_group && !s.groups.contains_key(&args[3]) {
        return Err(nogroup_for_key(&args[3], &args[2]));
    }
    Ok(true)
}

fn parse_entries_read(arg: &[u8]) -> Result<Option<u64>, CmdError> {
    let n = int(arg)?;
    if n < 0 && n != -1 {
        return Err(CmdError::custom("ERR value for ENTRIESREAD must be positive or -1"));
    }
    Ok((n >= 0).then_some(n as u64))
}

/// Redis 8 keeps a group's `ENTRIESREAD` at most the stream's entries added.
fn clamp_entries_read(clamp: bool, entries_read: Option<u64>, s: &Stream) -> Option<u64> {
    match entries_read {
        Some(n) if clamp => Some(n.min(s.entries_added)),
        other => other,
    }
}

fn xgroup_create(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut mkstream = false;
    let mut entries_read = None;
    let mut i = 5;
    while i < args.len() {
        if eq(&args[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if eq(&args[i], "entriesread") && i + 1 < args.len() {
            entries_read = parse_entries_read(&args[i + 1])?;
            i += 2;
        } else {
            return Err(subcommand_syntax(args));
        }
    }
    let exists = xgroup_checks(ctx, args, mkstream, false)?;
    if args.len() > 8 {
        return Err(subcommand_syntax(args));
    }
    let key = &args[2];
    let clamp = ctx.core.profile().at_least(8, 0, 0);
    let mut db = ctx.db();
    let id = if &args[4][..] == b"$" {
        get_stream(&mut db, key)?.map_or(StreamId::MIN, |s| s.last_id)
    } else {
        parse_strict_id(&args[4])?
    };
    if !exists {
        db.insert_new(key, Value::Stream(Box::default()));
    }
    let s = get_stream(&mut db, key)?.expect("stream exists");
    if s.groups.contains_key(&args[3]) {
        return Err(CmdError::custom("BUSYGROUP Consumer Group name already exists"));
    }
    let entries_read = clamp_entries_read(clamp, entries_read, s);
    s.groups.insert(own(&args[3]), Group::new(id, entries_read));
    db.sig.dirty += 1;
    db.notify(notify::STREAM, "xgroup-create", key);
    Ok(Reply::ok())
}

fn xgroup_setid(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    // Redis checks the shape and ENTRIESREAD before the key.
    if args.len() != 5 && args.len() != 7 {
        return Err(subcommand_syntax(args));
    }
    let mut entries_read = None;
    if args.len() == 7 {
        if !eq(&args[5], "entriesread") {
            return Err(subcommand_syntax(args));
        }
        entries_read = parse_entries_read(&args[6])?;
    }
    xgroup_checks(ctx, args, false, true)?;
    let key = &args[2];
    let clamp = ctx.core.profile().at_least(8, 0, 0);
    let mut db = ctx.db();
    let s = get_stream(&mut db, key)?.expect("checked");
    let id = if &args[4][..] == b"$" { s.last_id } else { parse_id(&args[4], 0)? };
    let entries_read = clamp_entries_read(clamp, entries_read, s);
    let g = s.groups.get_mut(&args[3]).expect("checked");
    g.last_id = id;
    g.entries_read = entries_read;
    db.sig.dirty += 1;
    db.notify(notify::STREAM, "xgroup-setid", key);
    Ok(Reply::ok())
}

fn xgroup_destroy(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    xgroup_checks(ctx, args, false, false)?;
    let key = &args[2];
    let mut db = ctx.db();
    let s = get_stream(&mut db, key)?.expect("checked");
    if s.groups.remove(&args[3]).is_none() {
        return Ok(Reply::Int(0));
    }
    // Redis does not signal the key as modified (WATCH stays valid), but
    // wakes the XREADGROUP readers blocked on it, which answer NOGROUP.
    db.sig.dirty += 1;
    db.notify(notify::STREAM, "xgroup-destroy", key);
    let ready = (db.index, crate::db::Key::new(key));
    ctx.core.blocking.on_touched(&[ready]);
    Ok(Reply::Int(1))
}

fn xgroup_createconsumer(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    xgroup_checks(ctx, args, false, true)?;
    let key = &args[2];
    let now = ctx.now_ms();
    let mut db = ctx.db();
    let s = get_stream(&mut db, key)?.expect("checked");
    let g = s.groups.get_mut(&args[3]).expect("checked");
    if g.consumers.contains_key(&args[4]) {
        return Ok(Reply::Int(0));
    }
    g.consumers.insert(own(&args[4]), crate::db::stream::Consumer { seen_time: now, ..Default::default() });
    db.sig.dirty += 1;
    db.notify(notify::STREAM, "xgroup-createconsumer", key);
    Ok(Reply::Int(1))
}

fn xgroup_delconsumer(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    xgroup_checks(ctx, args, false, true)?;
    let key = &args[2];
    let mut db = ctx.db();
    let s = get_stream(&mut db, key)?.expect("checked");
    let g = s.groups.get_mut(&args[3]).expect("checked");
    let Some(c) = g.consumers.remove(&args[4]) else {
        return Ok(Reply::Int(0));
    };
    for id in &c.pel {
        g.pel.remove(id);
    }
    db.sig.dirty += 1;
    db.notify(notify::STREAM, "xgroup-delconsumer", key);
    Ok(Reply::Int(c.pel.len() as i64))
}

fn xgroup_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply(ctx.core.profile(), "XGROUP", XGROUP_HELP))
}

// ---------------------------------------------------------------------------
// XACK XPENDING XCLAIM XAUTOCLAIM

fn xack(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    if !get_stream(&mut db, key)?.is_some_and(|s| s.groups.contains_key(&args[2])) {
        return Ok(Reply::Int(0));
    }
    let ids = args[3..].iter().map(|a| parse_strict_id(a)).collect::<Result<Vec<_>, _>>()?;
    let s = get_stream(&mut db, key)?.expect("checked");
    let g = s.groups.get_mut(&args[2]).expect("checked");
    let acked = ids.iter().filter(|id| g.unpend(id)).count();
    if acked > 0 {
        db.sig.dirty += 1;
    }
    Ok(Reply::Int(acked as i64))
}

fn xpending(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let argc = args.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(CmdError::Syntax);
    }
    let mut min_idle: i64 = 0;
    let mut range = None;
    if argc >= 6 {
        let mut startidx = 3;
        if eq(&args[3], "idle") {
            min_idle = int(&args[4])?;
            if argc < 8 {
                return Err(CmdError::Syntax);
            }
            startidx += 2;
        }
        let count = int(&args[startidx + 2])?.max(0);
        let start = interval_start(&args[startidx])?;
        let end = interval_end(&args[startidx + 1])?;
        let consumer = args.get(startidx + 3).cloned();
        range = Some((start, end, count as usize, consumer));
    }
    let (key, gname) = (&args[1], &args[2]);
    let now = ctx.now_ms();
    let mut db = ctx.db();
    let s = get_stream(&mut db, key)?;
    let Some(g) = s.and_then(|s| s.groups.get(gname)) else {
        return Err(nogroup(key, gname));
    };
    let Some((start, end, count, consumer)) = range else {
        if g.pel.is_empty() {
            return Ok(Reply::Array(vec![Reply::Int(0), Reply::Nil, Reply::Nil, Reply::NilArray]));
        }
        let first = g.pel.keys().next().expect("non-empty");
        let last = g.pel.keys().next_back().expect("non-empty");
        let consumers = g
            .consumers
            .iter()
            .filter(|(_, c)| !c.pel.is_empty())
            .map(|(n, c)| Reply::Array(vec![Reply::Bulk(n.clone()), Reply::Bulk(c.pel.len().to_string().into())]))
            .collect();
        return Ok(Reply::Array(vec![
            Reply::Int(g.pel.len() as i64),
            id_reply(first),
            id_reply(last),
            Reply::Array(consumers),
        ]));
    };
    // Walked lazily from `start`: a long PEL costs only what is returned
    // (and what the IDLE filter skips).
    let ids: Box<dyn Iterator<Item = StreamId> + '_> = match &consumer {
        Some(c) => match g.consumers.get(c) {
            None => return Ok(Reply::Array(Vec::new())),
            Some(c) => Box::new(c.pel.range(start..).copied()),
        },
        None => Box::new(g.pel.range(start..).map(|(id, _)| *id)),
    };
    let mut out = Vec::new();
    for id in ids {
        if out.len() >= count || id > end {
            break;
        }
        let p = &g.pel[&id];
        if min_idle != 0 && (now as i64 - p.delivery_time as i64) < min_idle {
            continue;
        }
        out.push(Reply::Array(vec![
            id_reply(&id),
            Reply::Bulk(p.consumer.clone()),
            Reply::Int((now as i64 - p.delivery_time as i64).max(0)),
            Reply::Int(p.delivery_count as i64),
        ]));
    }
    Ok(Reply::Array(out))
}

/// Redis 7.2's XCLAIM and XAUTOCLAIM create their consumer before claiming
/// (Redis 7.0 only when it claims something): true if `later` and created.
fn eager_consumer(later: bool, s: &mut Stream, group: &[u8], name: &Bytes, now: u64) -> bool {
    let g = s.groups.get_mut(group).expect("checked");
    if !later || g.consumers.contains_key(name) {
        return false;
    }
    g.consumers.insert(own(name), crate::db::stream::Consumer { seen_time: now, ..Default::default() });
    true
}

/// Moves pending entry `id` of group `g` to consumer `name` (created if
/// needed; returns true if created), with a new delivery time.
/// `owned` is false for an entry FORCE just added to the PEL.
fn claim_to(g: &mut Group, id: StreamId, name: &Bytes, now: u64, owned: bool) -> bool {
    let created = !g.consumers.contains_key(name);
    let consumer = g.consumers.entry(own(name)).or_default();
    consumer.seen_time = now;
    consumer.active_time = Some(now);
    let p = g.pel.get_mut(&id).expect("pending");
    if !owned || p.consumer != *name {
        let old = std::mem::replace(&mut p.consumer, own(name));
        if owned {
            if let Some(oc) = g.consumers.get_mut(&old) {
                oc.pel.remove(&id);
            }
        }
        g.consumers.get_mut(name).expect("consumer").pel.insert(id);
    }
    created
}

fn xclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (key, gname, cname) = (&args[1], &args[2], &args[3]);
    let now = ctx.now_ms();
    {
        let mut db = ctx.db();
        let s = get_stream(&mut db, key)?;
        if !s.is_some_and(|s| s.groups.contains_key(gname)) {
            return Err(nogroup(key, gname));
        }
    }
    let min_idle = crate::num::parse_int(&args[4])
        .map_err(|_| CmdError::custom("ERR Invalid min-idle-time argument for XCLAIM"))?
        .max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < args.len() {
        match parse_strict_id(&args[j]) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let (mut force, mut justid) = (false, false);
    let mut delivery: Option<i64> = None;
    let mut retry: Option<i64> = None;
    let mut last_id = StreamId::MIN;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = &args[j];
        let num = |a: &[u8], what: &str| {
            crate::num::parse_int(a)
                .map_err(|_| CmdError::custom(format!("ERR Invalid {what} option argument for XCLAIM")))
        };
        if eq(opt, "force") {
            force = true;
        } else if eq(opt, "justid") {
            justid = true;
        } else if eq(opt, "idle") && more > 0 {
            j += 1;
            delivery = Some(now as i64 - num(&args[j], "IDLE")?);
        } else if eq(opt, "time") && more > 0 {
            j += 1;
            delivery = Some(num(&args[j], "TIME")?);
        } else if eq(opt, "retrycount") && more > 0 {
            j += 1;
            retry = Some(num(&args[j], "RETRYCOUNT")?);
        } else if eq(opt, "lastid") && more > 0 {
            j += 1;
            last_id = parse_strict_id(&args[j])?;
        } else {
            return Err(CmdError::echo("ERR Unrecognized XCLAIM option '", opt, "'"));
        }
        j += 1;
    }
    let delivery_time = match delivery {
        Some(t) if t >= 0 && t <= now as i64 => t as u64,
        _ => now,
    };
    let later = ctx.core.profile().at_least(7, 2, 0);
    let mut db = ctx.db();
    let s = get_stream(&mut db, key)?.expect("checked");
    let mut changed = false;
    let mut created = eager_consumer(later, s, gname, cname, now);
    let mut out = Vec::new();
    {
        let g = s.groups.get_mut(gname).expect("checked");
        if last_id > g.last_id {
            g.last_id = last_id;
            changed = true;
        }
    }
    for id in ids {
        let exists = s.contains(&id);
        let g = s.groups.get_mut(gname).expect("checked");
        if !exists {
            if g.unpend(&id) {
                changed = true;
            }
            continue;
        }
        let mut fresh = false;
        if force && !g.pel.contains_key(&id) {
            g.pel.insert(id, PendingEntry { consumer: Bytes::new(), delivery_time: now, delivery_count: 1 });
            fresh = true;
        }
        let Some(p) = g.pel.get(&id) else { continue };
        if !fresh && min_idle > 0 && (now as i64 - p.delivery_time as i64) < min_idle {
            continue;
        }
        created |= claim_to(g, id, cname, now, !fresh);
        let p = g.pel.get_mut(&id).expect("pending");
        p.delivery_time = delivery_time;
        match retry {
            Some(n) if n >= 0 => p.delivery_count = n as u64,
            _ if !justid => p.delivery_count += 1,
            _ => {}
        }
        changed = true;
        out.push(if justid { id_reply(&id) } else { entry_reply(&id, s.get(&id).expect("exists")) });
    }
    if changed || created {
        db.sig.dirty += 1;
    }
    if created {
        db.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    Ok(Reply::Array(out))
}

fn xautoclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (key, gname, cname) = (&args[1], &args[2], &args[3]);
    let now = ctx.now_ms();
    let min_idle = crate::num::parse_int(&args[4])
        .map_err(|_| CmdError::custom("ERR Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0);
    let start = interval_start(&args[5])?;
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if eq(&args[j], "count") && more > 0 {
            const MAX_COUNT: i64 = i64::MAX / 16;
            count = match crate::num::parse_int(&args[j + 1]) {
                Ok(n) if (1..=MAX_COUNT).contains(&n) => n,
                _ => return Err(CmdError::custom("ERR COUNT must be > 0")),
            };
            j += 1;
        } else if eq(&args[j], "justid") {
            justid = true;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    // Arguments first, then the key and group (Redis reports syntax
    // errors before any other).
    {
        let mut db = ctx.db();
        let s = get_stream(&mut db, key)?;
        if !s.is_some_and(|s| s.groups.contains_key(gname)) {
            return Err(nogroup(key, gname));
        }
    }
    let later = ctx.core.profile().at_least(7, 2, 0);
    let mut db = ctx.db();
    let s = get_stream(&mut db, key)?.expect("checked");
    let mut attempts = count.saturating_mul(10);
    let mut left = count;
    let mut out = Vec::new();
    let mut deleted = Vec::new();
    let mut changed = false;
    let mut created = eager_consumer(later, s, gname, cname, now);
    let mut cursor = start;
    let mut last_seen: Option<StreamId> = None;
    loop {
        if attempts == 0 || left == 0 {
            break;
        }
        attempts -= 1;
        let g = s.groups.get(gname).expect("checked");
        let Some((&id, p)) = g.pel.range(cursor..).next() else {
            last_seen = None;
            break;
        };
        last_seen = Some(id);
        cursor = match id.incr() {
            Some(n) => n,
            None => StreamId::MAX,
        };
        let idle_ok = min_idle == 0 || (now as i64 - p.delivery_time as i64) >= min_idle;
        if !s.contains(&id) {
            s.groups.get_mut(gname).expect("checked").unpend(&id);
            deleted.push(id_reply(&id));
            changed = true;
            left -= 1;
        } else if idle_ok {
            let g = s.groups.get_mut(gname).expect("checked");
            created |= claim_to(g, id, cname, now, true);
            let p = g.pel.get_mut(&id).expect("pending");
            p.delivery_time = now;
            if !justid {
                p.delivery_count += 1;
            }
            out.push(if justid { id_reply(&id) } else { entry_reply(&id, s.get(&id).expect("exists")) });
            changed = true;
            left -= 1;
        }
        if id == StreamId::MAX {
            break;
        }
    }
    // The cursor: the first pending id after the last one examined.
    let next = match last_seen {
        Some(id) => id.incr().and_then(|n| s.groups[gname].pel.range(n..).next().map(|(k, _)| *k)),
        None => None,
    }
    .unwrap_or(StreamId::MIN);
    if changed || created {
        db.sig.dirty += 1;
    }
    if created {
        db.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    Ok(Reply::Array(vec![id_reply(&next), Reply::Array(out), Reply::Array(deleted)]))
}

// ---------------------------------------------------------------------------
// XINFO

fn xinfo_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(help_reply(ctx.core.profile(), "XINFO", XINFO_HELP))
}

fn info_stream_of<'a>(db: &'a mut DbView<'_>, key: &[u8]) -> Result<&'a mut Stream, CmdError> {
    get_stream(db, key)?.ok_or(CmdError::NoSuchKey)
}

fn opt_int(v: Option<u64>) -> Reply {
    v.map_or(Reply::Nil, |n| Reply::Int(n as i64))
}

fn xinfo_consumers(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let now = ctx.now_ms() as i64;
    let later = ctx.core.profile().at_least(7, 2, 0);
    let mut db = ctx.db();
    let s = info_stream_of(&mut db, &args[2])?;
    let Some(g) = s.groups.get(&args[3]) else {
        return Err(nogroup_for_key(&args[3], &args[2]));
    };
    Ok(Reply::Array(
        g.consumers
            .iter()
            .map(|(n, c)| {
                let mut fields = vec![
                    ("name", Reply::Bulk(n.clone())),
                    ("pending", Reply::Int(c.pel.len() as i64)),
                    ("idle", Reply::Int((now - c.seen_time as i64).max(0))),
                ];
                // Redis 7.2: time since the consumer was last given entries.
                if later {
                    fields.push(("inactive", Reply::Int(c.active_time.map_or(-1, |t| now - t as i64))));
                }
                map_reply(fields)
            })
            .collect(),
    ))
}

fn xinfo_groups(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let rules = lag_rules(ctx);
    let mut db = ctx.db();
    let s = info_stream_of(&mut db, &args[2])?;
    Ok(Reply::Array(
        s.groups
            .iter()
            .map(|(n, g)| {
                map_reply(vec![
                    ("name", Reply::Bulk(n.clone())),
                    ("consumers", Reply::Int(g.consumers.len() as i64)),
                    ("pending", Reply::Int(g.pel.len() as i64)),
                    ("last-delivered-id", id_reply(&g.last_id)),
                    ("entries-read", opt_int(g.entries_read)),
                    ("lag", s.group_lag(g, rules).map_or(Reply::Nil, Reply::Int)),
                ])
            })
            .collect(),
    ))
}

fn xinfo_stream(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let rules = lag_rules(ctx);
    // Redis looks the key up before reading the options.
    let full = match args.len() {
        3 => Ok(None),
        4 if eq(&args[3], "full") => Ok(Some(10)),
        6 if eq(&args[3], "full") && eq(&args[4], "count") => int(&args[5]).map(|n| Some(n.max(0))),
        _ => Err(subcommand_syntax(args)),
    };
    let later = ctx.core.profile().at_least(7, 2, 0);
    let mut db = ctx.db();
    let s = info_stream_of(&mut db, &args[2])?;
    let full = full?;
    let mut out = vec![
        ("length", Reply::Int(s.len() as i64)),
        ("radix-tree-keys", Reply::Int(s.node_count() as i64)),
        ("radix-tree-nodes", Reply::Int(s.radix_tree_nodes() as i64)),
        ("last-generated-id", id_reply(&s.last_id)),
        ("max-deleted-entry-id", id_reply(&s.max_deleted_id)),
        ("entries-added", Reply::Int(s.entries_added as i64)),
        ("recorded-first-entry-id", id_reply(&s.first_id)),
    ];
    let Some(count) = full else {
        out.push(("groups", Reply::Int(s.groups.len() as i64)));
        let first = s.first_entry().map_or(Reply::Nil, |(id, f)| entry_reply(id, f));
        let last = s.last_entry().map_or(Reply::Nil, |(id, f)| entry_reply(id, f));
        out.push(("first-entry", first));
        out.push(("last-entry", last));
        return Ok(map_reply(out));
    };
    let limit = if count == 0 { usize::MAX } else { count as usize };
    let entries = s.range(StreamId::MIN, StreamId::MAX).take(limit).map(|(id, f)| entry_reply(id, f)).collect();
    out.push(("entries", Reply::Array(entries)));
    let groups = s
        .groups
        .iter()
        .map(|(n, g)| {
            let pending = g
                .pel
                .iter()
                .take(limit)
                .map(|(id, p)| {
                    Reply::Array(vec![
                        id_reply(id),
                        Reply::Bulk(p.consumer.clone()),
                        Reply::Int(p.delivery_time as i64),
                        Reply::Int(p.delivery_count as i64),
                    ])
                })
                .collect();
            let consumers = g
                .consumers
                .iter()
                .map(|(cn, c)| {
                    let pel = c
                        .pel
                        .iter()
                        .take(limit)
                        .map(|id| {
                            let p = &g.pel[id];
                            Reply::Array(vec![
                                id_reply(id),
                                Reply::Int(p.delivery_time as i64),
                                Reply::Int(p.delivery_count as i64),
                            ])
                        })
                        .collect();
                    let mut fields =
                        vec![("name", Reply::Bulk(cn.clone())), ("seen-time", Reply::Int(c.seen_time as i64))];
                    if later {
                        fields.push(("active-time", Reply::Int(c.active_time.map_or(-1, |t| t as i64))));
                    }
                    fields.push(("pel-count", Reply::Int(c.pel.len() as i64)));
                    fields.push(("pending", Reply::Array(pel)));
                    map_reply(fields)
                })
                .collect();
            map_reply(vec![
                ("name", Reply::Bulk(n.clone())),
                ("last-delivered-id", id_reply(&g.last_id)),
                ("entries-read", opt_int(g.entries_read)),
                ("lag", s.group_lag(g, rules).map_or(Reply::Nil, Reply::Int)),
                ("pel-count", Reply::Int(g.pel.len() as i64)),
                ("pending", Reply::Array(pending)),
                ("consumers", Reply::Array(consumers)),
            ])
        })
        .collect();
    out.push(("groups", Reply::Array(groups)));
    Ok(map_reply(out))
}

/// The error of a `STREAMS` list with a key or id too many: Redis 7.0
/// names XREAD for XREADGROUP too; 7.2 names the command and its own id
/// (`>`); 7.4 adds XREAD's `+` (Valkey 8.1 reads `+` but kept 7.2's text).
fn unbalanced_text(profile: crate::version::Profile, group_cmd: bool) -> &'static str {
    if !profile.at_least(7, 2, 0) {
        "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
    } else if group_cmd {
        "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified."
    } else if profile.at_least(7, 4, 0) {
        "ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be specified."
    } else {
        "ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified."
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis_does() {
        assert_eq!(parse_id(b"5", 0).unwrap(), StreamId::new(5, 0));
        assert_eq!(parse_id(b"5", u64::MAX).unwrap(), StreamId::new(5, u64::MAX));
        assert_eq!(parse_id(b"5-3", 0).unwrap(), StreamId::new(5, 3));
        assert_eq!(parse_id(b"-", 0).unwrap(), StreamId::MIN);
        assert_eq!(parse_id(b"+", 0).unwrap(), StreamId::MAX);
        assert!(parse_strict_id(b"-").is_err());
        assert!(parse_id(b"-1", 0).is_err());
        assert!(parse_id(b"a-1", 0).is_err());
        assert!(parse_id(b"1-", 0).is_err());
        assert_eq!(parse_id(b"18446744073709551615-1", 0).unwrap(), StreamId::new(u64::MAX, 1));
        assert!(parse_id(b"18446744073709551616", 0).is_err());
        assert_eq!(parse_id_full(b"7-*", 0, true, true).unwrap(), (StreamId::new(7, 0), false));
        assert!(parse_id_full(b"7-*", 0, true, false).is_err());
    }
}
