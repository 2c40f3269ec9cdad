//! Sorted set commands (Redis 7.0 `t_zset.c`). The pops shared with the
//! blocking variants (`BZPOPMIN`, `BZMPOP`) live here.

use bytes::Bytes;
use rand::Rng;

use super::hash::{distinct_indices, empty_scan, random_count, MAX_RANDOM_REPLY};
use super::list::{long_at_least, parse_mpop};
use super::util::{cursor, eq, int, scan_opts};
use super::{cmd, CommandSpec, Ctx};
use crate::db::zset::{LexBound, ScoreBound, ZSet};
use crate::db::{notify, own, scan_step, DbView, EncLimits, Value};
use crate::error::{CmdError, CmdResult};
use crate::glob;
use crate::num;
use crate::protocol::{Reply, Resp};

pub static COMMANDS: &[CommandSpec] = &[
    cmd("zadd", zadd, -4, "write denyoom fast", 1, 1, 1, "@write @sortedset @fast")
        .doc("Add one or more members to a sorted set, or update its score if it already exists", "1.2.0"),
    cmd("zrem", zrem, -3, "write fast", 1, 1, 1, "@write @sortedset @fast")
        .doc("Remove one or more members from a sorted set", "1.2.0"),
    cmd("zscore", zscore, 3, "readonly fast", 1, 1, 1, "@read @sortedset @fast")
        .doc("Get the score associated with the given member in a sorted set", "1.2.0"),
    cmd("zmscore", zmscore, -3, "readonly fast", 1, 1, 1, "@read @sortedset @fast")
        .doc("Get the score associated with the given members in a sorted set", "6.2.0"),
    cmd("zincrby", zincrby, 4, "write denyoom fast", 1, 1, 1, "@write @sortedset @fast")
        .doc("Increment the score of a member in a sorted set", "1.2.0"),
    cmd("zcard", zcard, 2, "readonly fast", 1, 1, 1, "@read @sortedset @fast")
        .doc("Get the number of members in a sorted set", "1.2.0"),
    cmd("zcount", zcount, 4, "readonly fast", 1, 1, 1, "@read @sortedset @fast")
        .doc("Count the members in a sorted set with scores within the given values", "2.0.0"),
    cmd("zlexcount", zlexcount, 4, "readonly fast", 1, 1, 1, "@read @sortedset @fast")
        .doc("Count the number of members in a sorted set between a given lexicographical range", "2.8.9"),
    cmd("zrank", zrank, -3, "readonly fast", 1, 1, 1, "@read @sortedset @fast")
        .arity_7_0(3)
        .doc("Determine the index of a member in a sorted set", "2.0.0"),
    cmd("zrevrank", zrevrank, -3, "readonly fast", 1, 1, 1, "@read @sortedset @fast")
        .arity_7_0(3)
        .doc("Determine the index of a member in a sorted set, with scores ordered from high to low", "2.0.0"),
    cmd("zrange", zrange, -4, "readonly", 1, 1, 1, "@read @sortedset @slow")
        .doc("Return a range of members in a sorted set", "1.2.0"),
    cmd("zrangestore", zrangestore, -5, "write denyoom", 1, 2, 1, "@write @sortedset @slow")
        .doc("Store a range of members from sorted set into another key", "6.2.0"),
    cmd("zrangebyscore", zrangebyscore, -4, "readonly", 1, 1, 1, "@read @sortedset @slow")
        .doc("Return a range of members in a sorted set, by score", "1.0.5"),
    cmd("zrevrangebyscore", zrevrangebyscore, -4, "readonly", 1, 1, 1, "@read @sortedset @slow")
        .doc("Return a range of members in a sorted set, by score, with scores ordered from high to low", "2.2.0"),
    cmd("zrangebylex", zrangebylex, -4, "readonly", 1, 1, 1, "@read @sortedset @slow")
        .doc("Return a range of members in a sorted set, by lexicographical range", "2.8.9"),
    cmd("zrevrangebylex", zrevrangebylex, -4, "readonly", 1, 1, 1, "@read @sortedset @slow").doc(
        "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.",
        "2.8.9",
    ),
    cmd("zrevrange", zrevrange, -4, "readonly", 1, 1, 1, "@read @sortedset @slow")
        .doc("Return a range of members in a sorted set, by index, with scores ordered from high to low", "1.2.0"),
    cmd("zremrangebyscore", zremrangebyscore, 4, "write", 1, 1, 1, "@write @sortedset @slow")
        .doc("Remove all members in a sorted set within the given scores", "1.2.0"),
    cmd("zremrangebyrank", zremrangebyrank, 4, "write", 1, 1, 1, "@write @sortedset @slow")
        .doc("Remove all members in a sorted set within the given indexes", "2.0.0"),
    cmd("zremrangebylex", zremrangebylex, 4, "write", 1, 1, 1, "@write @sortedset @slow")
        .doc("Remove all members in a sorted set between the given lexicographical range", "2.8.9"),
    cmd("zpopmin", zpopmin, -2, "write fast", 1, 1, 1, "@write @sortedset @fast")
        .doc("Remove and return members with the lowest scores in a sorted set", "5.0.0"),
    cmd("zpopmax", zpopmax, -2, "write fast", 1, 1, 1, "@write @sortedset @fast")
        .doc("Remove and return members with the highest scores in a sorted set", "5.0.0"),
    cmd("zrandmember", zrandmember, -2, "readonly", 1, 1, 1, "@read @sortedset @slow")
        .doc("Get one or multiple random elements from a sorted set", "6.2.0"),
    cmd("zscan", zscan, -3, "readonly", 1, 1, 1, "@read @sortedset @slow")
        .doc("Incrementally iterate sorted sets elements and associated scores", "2.8.0"),
    cmd("zmpop", zmpop, -4, "write movablekeys", 0, 0, 0, "@write @sortedset @slow")
        .doc("Remove and return members with scores in a sorted set", "7.0.0"),
    cmd("zunionstore", zunionstore, -4, "write denyoom movablekeys", 1, 1, 1, "@write @sortedset @slow")
        .doc("Add multiple sorted sets and store the resulting sorted set in a new key", "2.0.0"),
    cmd("zinterstore", zinterstore, -4, "write denyoom movablekeys", 1, 1, 1, "@write @sortedset @slow")
        .doc("Intersect multiple sorted sets and store the resulting sorted set in a new key", "2.0.0"),
    cmd("zdiffstore", zdiffstore, -4, "write denyoom movablekeys", 1, 1, 1, "@write @sortedset @slow")
        .doc("Subtract multiple sorted sets and store the resulting sorted set in a new key", "6.2.0"),
    cmd("zunion", zunion, -3, "readonly movablekeys", 0, 0, 0, "@read @sortedset @slow")
        .doc("Add multiple sorted sets", "6.2.0"),
    cmd("zinter", zinter, -3, "readonly movablekeys", 0, 0, 0, "@read @sortedset @slow")
        .doc("Intersect multiple sorted sets", "6.2.0"),
    cmd("zdiff", zdiff, -3, "readonly movablekeys", 0, 0, 0, "@read @sortedset @slow")
        .doc("Subtract multiple sorted sets", "6.2.0"),
    cmd("zintercard", zintercard, -3, "readonly movablekeys", 0, 0, 0, "@read @sortedset @slow")
        .doc("Intersect multiple sorted sets and return the cardinality of the result", "7.0.0"),
];

// ---------------------------------------------------------------------------
// Helpers

/// The sorted set at `key`, `WRONGTYPE` for other types.
fn get_zset<'a>(db: &'a mut DbView<'_>, key: &[u8]) -> Result<Option<&'a mut ZSet>, CmdError> {
    match db.get_mut(key) {
        None => Ok(None),
        Some(Value::ZSet(z)) => Ok(Some(z)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// The sorted set at `key` and whether it is a listpack, in one lookup.
fn get_zset_listpack<'a>(db: &'a mut DbView<'_>, key: &[u8]) -> Result<Option<(&'a mut ZSet, bool)>, CmdError> {
    let Some(e) = db.entry(key) else { return Ok(None) };
    let listpack = e.encoding() == "listpack";
    match &mut e.value {
        Value::ZSet(z) => Ok(Some((z, listpack))),
        _ => Err(CmdError::WrongType),
    }
}

/// A score as a listpack stores it: `-0` as `0` (Redis reads the `"-0"`
/// text back as the integer 0).
fn listpack_score(score: f64) -> f64 {
    if score == 0.0 {
        0.0
    } else {
        score
    }
}

/// True if Redis 7.0 keeps `z` (plus `extra`, about to be added) as a
/// listpack under `limits`.
fn listpack_like(z: &ZSet, extra: Option<&[u8]>, limits: &EncLimits) -> bool {
    let len = z.len() + usize::from(extra.is_some_and(|m| !z.contains(m)));
    let max = limits.zset_value;
    len <= limits.zset_entries && extra.is_none_or(|m| m.len() <= max) && z.max_member_len() <= max
}

/// A score as it will be stored: a listpack stores `-0` as `0` (Redis reads
/// the `"-0"` text back as the integer 0).
fn stored_score(z: &ZSet, member: &[u8], score: f64, limits: &EncLimits) -> f64 {
    if score == 0.0 && score.is_sign_negative() && listpack_like(z, Some(member), limits) {
        0.0
    } else {
        score
    }
}

/// Normalises `-0` scores of a freshly built result that Redis would
/// convert to a listpack.
fn normalize_built(z: &mut ZSet, limits: &EncLimits) {
    if !listpack_like(z, None, limits) {
        return;
    }
    let negz: Vec<Bytes> =
        z.iter().filter(|(_, s)| *s == 0.0 && s.is_sign_negative()).map(|(m, _)| Bytes::copy_from_slice(m)).collect();
    for m in negz {
        z.remove(&m);
        z.insert(m, 0.0);
    }
}

/// `[member, score]` pairs: flat in RESP2, nested in RESP3.
fn pairs_reply(items: Vec<(Bytes, f64)>, withscores: bool, resp: Resp) -> Reply {
    let mut out = Vec::with_capacity(items.len() * if withscores && resp == Resp::V2 { 2 } else { 1 });
    for (m, s) in items {
        if !withscores {
            out.push(Reply::Bulk(m));
        } else if resp == Resp::V3 {
            out.push(Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)]));
        } else {
            out.push(Reply::Bulk(m));
            out.push(Reply::Double(s));
        }
    }
    Reply::Array(out)
}

/// C `strtod` on the argument as `zslParseRange` calls it: leading spaces
/// allowed, stops at the first NUL, nothing may follow the number, the
/// empty string is 0, out-of-range values saturate, NaN refused.
fn strtod_full(b: &[u8]) -> Option<f64> {
    let s = &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())];
    if s.is_empty() {
        return Some(0.0);
    }
    let t = {
        let start = s.iter().position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
        &s[start..]
    };
    if let Some(v) = num::parse_double(t) {
        return Some(v);
    }
    // Overflow / underflow: strtod saturates (ERANGE), zslParseRange accepts.
    let v: f64 = std::str::from_utf8(t).ok()?.parse().ok()?;
    (!v.is_nan() && !t.iter().any(|c| c.is_ascii_alphabetic() && !matches!(c, b'e' | b'E'))).then_some(v)
}

/// A score bound; `redis8`: read as Redis 8's `zslParseRange` reads it
/// (`fast_float`, as its `SORT` does: no leading space, no hex form), up to
/// the first NUL as C's string is; before 8 (and on Valkey), `strtod`.
fn parse_score_bound(b: &[u8], redis8: bool) -> Option<ScoreBound> {
    let (rest, exclusive) = match b.first() {
        Some(b'(') => (&b[1..], true),
        _ => (b, false),
    };
    let value = if redis8 {
        num::sort_score_8(&rest[..rest.iter().position(|&c| c == 0).unwrap_or(rest.len())])
    } else {
        strtod_full(rest)
    };
    value.map(|value| ScoreBound { value, exclusive })
}

fn parse_score_range(ctx: &Ctx<'_>, min: &[u8], max: &[u8]) -> Result<(ScoreBound, ScoreBound), CmdError> {
    let redis8 = ctx.core.profile().at_least(8, 0, 0);
    match (parse_score_bound(min, redis8), parse_score_bound(max, redis8)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(CmdError::custom("ERR min or max is not a float")),
    }
}

fn parse_lex_bound(b: &[u8]) -> Option<LexBound> {
    let single = b.len() == 1 || b.get(1) == Some(&0);
    match b.first()? {
        b'+' if single => Some(LexBound::PosInf),
        b'-' if single => Some(LexBound::NegInf),
        b'(' => Some(LexBound::Value(Bytes::copy_from_slice(&b[1..]), true)),
        b'[' => Some(LexBound::Value(Bytes::copy_from_slice(&b[1..]), false)),
        _ => None,
    }
}

fn parse_lex_range(min: &[u8], max: &[u8]) -> Result<(LexBound, LexBound), CmdError> {
    match (parse_lex_bound(min), parse_lex_bound(max)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(CmdError::custom("ERR min or max not valid string range item")),
    }
}

/// Rank range sanitising shared by ZRANGE and ZREMRANGEBYRANK: inclusive
/// `(start, end)` or `None` when empty.
fn rank_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = len as i64;
    let mut s = if start < 0 { llen.saturating_add(start) } else { start };
    let mut e = if end < 0 { llen.saturating_add(end) } else { end };
    if s < 0 {
        s = 0;
    }
    if s > e || s >= llen {
        return None;
    }
    if e >= llen {
        e = llen - 1;
    }
    Some((s as usize, e as usize))
}

// ---------------------------------------------------------------------------
// ZADD / ZINCRBY / ZREM / lookups

const Z_NX: u8 = 1;
const Z_XX: u8 = 2;
const Z_GT: u8 = 4;
const Z_LT: u8 = 8;
const Z_INCR: u8 = 16;

pub(crate) fn zadd_generic(ctx: &mut Ctx<'_>, args: &[Bytes], mut flags: u8) -> CmdResult {
    let key = &args[1];
    let mut ch = false;
    let mut idx = 2;
    while idx < args.len() {
        let o = &args[idx];
        if eq(o, "nx") {
            flags |= Z_NX;
        } else if eq(o, "xx") {
            flags |= Z_XX;
        } else if eq(o, "ch") {
            ch = true;
        } else if eq(o, "incr") {
            flags |= Z_INCR;
        } else if eq(o, "gt") {
            flags |= Z_GT;
        } else if eq(o, "lt") {
            flags |= Z_LT;
        } else {
            break;
        }
        idx += 1;
    }
    let (incr, nx, xx, gt, lt) =
        (flags & Z_INCR != 0, flags & Z_NX != 0, flags & Z_XX != 0, flags & Z_GT != 0, flags & Z_LT != 0);
    let elements = args.len() - idx;
    if elements % 2 == 1 || elements == 0 {
        return Err(CmdError::Syntax);
    }
    let elements = elements / 2;
    if nx && xx {
        return Err(CmdError::custom("ERR XX and NX options at the same time are not compatible"));
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return Err(CmdError::custom("ERR GT, LT, and/or NX options at the same time are not compatible"));
    }
    if incr && elements > 1 {
        return Err(CmdError::custom("ERR INCR option supports a single increment-element pair"));
    }
    let mut scores = Vec::with_capacity(elements);
    for j in 0..elements {
        scores.push(num::parse_double(&args[idx + j * 2]).ok_or(CmdError::NotFloat)?);
    }
    let mut db = ctx.db();
    let limits = *db.limits();
    let exists = get_zset(&mut db, key)?.is_some();
    let (mut added, mut updated, mut processed) = (0i64, 0i64, 0i64);
    let mut last_score = 0.0;
    let mut result: Result<(), CmdError> = Ok(());
    let mut outgrown = false;
    if exists || !xx {
        if !exists {
            db.insert_new(key, Value::ZSet(ZSet::new()));
        }
        let (z, mut listpack) = get_zset_listpack(&mut db, key)?.expect("exists");
        for (j, &score0) in scores.iter().enumerate() {
            let member = &args[idx + 1 + j * 2];
            let mut score = score0;
            match z.score(member) {
                Some(cur) => {
                    if nx {
                        continue;
                    }
                    if incr {
                        score += cur;
                        if score.is_nan() {
                            result = Err(CmdError::custom("ERR resulting score is not a number (NaN)"));
                            break;
                        }
                    }
                    if (lt && score >= cur) || (gt && score <= cur) {
                        continue;
                    }
                    last_score = score;
                    processed += 1;
                    if score != cur {
                        let s = if listpack { listpack_score(score) } else { score };
                        z.insert(own(member), s);
                        updated += 1;
                    }
                }
                None => {
                    if xx {
                        continue;
                    }
                    // Redis converts a listpack before inserting a member
                    // past zset-max-listpack-value or -entries (updates of
                    // existing members never convert).
                    if member.len() > limits.zset_value || z.len() + 1 > limits.zset_entries {
                        outgrown = true;
                        listpack = false;
                        z.to_skiplist();
                    }
                    let s = if listpack { listpack_score(score) } else { score };
                    z.insert(own(member), s);
                    last_score = score;
                    added += 1;
                    processed += 1;
                }
            }
        }
    }
    if added > 0 || updated > 0 {
        // Past zset-max-listpack-entries/value a sorted set stays a skip list.
        db.mark_outgrown(key, outgrown);
        db.touch(key);
        db.notify(notify::ZSET, if incr { "zincr" } else { "zadd" }, key);
    }
    db.remove_if_empty(key);
    result?;
    Ok(if incr {
        if processed > 0 {
            Reply::Double(last_score)
        } else {
            Reply::Nil
        }
    } else {
        Reply::Int(if ch { added + updated } else { added })
    })
}

fn zadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zadd_generic(ctx, args, 0)
}

fn zincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zadd_generic(ctx, args, Z_INCR)
}

fn zrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    let Some(z) = get_zset(&mut db, key)? else {
        return Ok(Reply::Int(0));
    };
    let mut deleted = 0;
    for m in &args[2..] {
        if z.remove(m).is_some() {
            deleted += 1;
        }
        if z.is_empty() {
            break;
        }
    }
    if deleted > 0 {
        db.notify(notify::ZSET, "zrem", key);
        db.remove_if_empty(key);
        db.touch(key);
    }
    Ok(Reply::Int(deleted))
}

fn zscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(get_zset(&mut db, &args[1])?.and_then(|z| z.score(&args[2])).map_or(Reply::Nil, Reply::Double))
}

fn zmscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    let z = get_zset(&mut db, &args[1])?;
    Ok(Reply::Array(
        args[2..].iter().map(|m| z.as_ref().and_then(|z| z.score(m)).map_or(Reply::Nil, Reply::Double)).collect(),
    ))
}

fn zcard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(Reply::Int(get_zset(&mut db, &args[1])?.map_or(0, |z| z.len() as i64)))
}

fn zcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (min, max) = parse_score_range(ctx, &args[2], &args[3])?;
    let mut db = ctx.db();
    Ok(Reply::Int(get_zset(&mut db, &args[1])?.map_or(0, |z| {
        let (lo, hi) = z.score_range(min, max);
        (hi - lo) as i64
    })))
}

fn zlexcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (min, max) = parse_lex_range(&args[2], &args[3])?;
    let mut db = ctx.db();
    Ok(Reply::Int(get_zset(&mut db, &args[1])?.map_or(0, |z| {
        let (lo, hi) = z.lex_range(&min, &max);
        (hi - lo) as i64
    })))
}

/// `ZRANK key member`, and from Redis 7.2 `[WITHSCORE]`: the rank and the
/// score, a null array when there is none.
fn zrank_generic(ctx: &mut Ctx<'_>, args: &[Bytes], reverse: bool) -> CmdResult {
    let max_args = if ctx.core.profile().at_least(7, 2, 0) { 4 } else { 3 };
    if args.len() > max_args {
        return Err(CmdError::WrongArity(if reverse { "zrevrank" } else { "zrank" }.into()));
    }
    let with_score = match args.get(3) {
        Some(a) if a.eq_ignore_ascii_case(b"withscore") => true,
        Some(_) => return Err(CmdError::Syntax),
        None => false,
    };
    let none = if with_score { Reply::NilArray } else { Reply::Nil };
    let mut db = ctx.db();
    let Some(z) = get_zset(&mut db, &args[1])? else {
        return Ok(none);
    };
    let Some(r) = z.rank(&args[2]) else {
        return Ok(none);
    };
    let rank = Reply::Int(if reverse { (z.len() - 1 - r) as i64 } else { r as i64 });
    if !with_score {
        return Ok(rank);
    }
    let score = z.score(&args[2]).expect("a ranked member has a score");
    Ok(Reply::Array(vec![rank, Reply::Double(score)]))
}

fn zrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrank_generic(ctx, args, false)
}

fn zrevrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrank_generic(ctx, args, true)
}

// ---------------------------------------------------------------------------
// ZRANGE family

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rank,
    Score,
    Lex,
}

/// A parsed range query.
struct RangeSpec {
    kind: Kind,
    reverse: bool,
    ranks: (i64, i64),
    scores: Option<(ScoreBound, ScoreBound)>,
    lex: Option<(LexBound, LexBound)>,
    offset: i64,
    limit: i64,
}

/// Elements of `z` for a range query, in reply order.
fn range_items(z: &ZSet, q: &RangeSpec) -> Vec<(Bytes, f64)> {
    let RangeSpec { kind, reverse, ranks: (start, end), scores, ref lex, offset, limit } = *q;
    let collect =
        |it: crate::db::zset::Iter<'_>, n: usize| it.take(n).map(|(m, s)| (Bytes::copy_from_slice(m), s)).collect();
    match kind {
        Kind::Rank => {
            let Some((s, e)) = rank_range(start, end, z.len()) else {
                return Vec::new();
            };
            let n = e - s + 1;
            if reverse {
                collect(z.iter_rev_from(z.len() - 1 - s), n)
            } else {
                collect(z.iter_from(s), n)
            }
        }
        Kind::Score | Kind::Lex => {
            if kind == Kind::Score && offset > 0 && offset as u64 >= z.len() as u64 {
                return Vec::new();
            }
            if offset < 0 || limit == 0 {
                return Vec::new();
            }
            let (lo, hi) = match kind {
                Kind::Score => {
                    let (a, b) = scores.expect("score range");
                    z.score_range(a, b)
                }
                _ => {
                    let (a, b) = lex.as_ref().expect("lex range");
                    if reverse {
                        z.lex_range_rev(a, b)
                    } else {
                        z.lex_range(a, b)
                    }
                }
            };
            let avail = (hi - lo) as u64;
            let offset = offset as u64;
            if offset >= avail {
                return Vec::new();
            }
            let mut n = avail - offset;
            if limit > 0 {
                n = n.min(limit as u64);
            }
            let n = n as usize;
            if reverse {
                collect(z.iter_rev_from(hi - 1 - offset as usize), n)
            } else {
                collect(z.iter_from(lo + offset as usize), n)
            }
        }
    }
}

fn zrange_generic(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    argc_start: usize,
    store: Option<&Bytes>,
    mut kind: Option<Kind>,
    mut reverse: Option<bool>,
) -> CmdResult {
    let key = &args[argc_start];
    let mut minidx = argc_start + 1;
    let mut maxidx = argc_start + 2;
    let mut withscores = false;
    let mut offset: i64 = 0;
    let mut limit: i64 = -1;
    let mut j = argc_start + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if store.is_none() && eq(a, "withscores") {
            withscores = true;
        } else if eq(a, "limit") && left >= 2 {
            offset = int(&args[j + 1])?;
            limit = int(&args[j + 2])?;
            j += 2;
        } else if reverse.is_none() && eq(a, "rev") {
            reverse = Some(true);
        } else if kind.is_none() && eq(a, "bylex") {
            kind = Some(Kind::Lex);
        } else if kind.is_none() && eq(a, "byscore") {
            kind = Some(Kind::Score);
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let reverse = reverse.unwrap_or(false);
    let kind = kind.unwrap_or(Kind::Rank);
    if limit != -1 && kind == Kind::Rank {
        return Err(CmdError::custom(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && kind == Kind::Lex {
        return Err(CmdError::custom("ERR syntax error, WITHSCORES not supported in combination with BYLEX"));
    }
    if reverse && kind != Kind::Rank {
        std::mem::swap(&mut minidx, &mut maxidx);
    }
    let mut ranks = (0, 0);
    let mut scores = None;
    let mut lex = None;
    match kind {
        Kind::Rank => ranks = (int(&args[minidx])?, int(&args[maxidx])?),
        Kind::Score => scores = Some(parse_score_range(ctx, &args[minidx], &args[maxidx])?),
        Kind::Lex => lex = Some(parse_lex_range(&args[minidx], &args[maxidx])?),
    }
    let resp = ctx.client.resp;
    let mut db = ctx.db();
    let items = match get_zset(&mut db, key)? {
        None => Vec::new(),
        Some(z) => range_items(z, &RangeSpec { kind, reverse, ranks, scores, lex, offset, limit }),
    };
    match store {
        None => Ok(pairs_reply(items, withscores, resp)),
        Some(dst) => {
            let n = items.len();
            if n == 0 {
                if db.remove(dst).is_some() {
                    db.notify(notify::GENERIC, "del", dst);
                }
                return Ok(Reply::Int(0));
            }
            let limits = *db.limits();
            let mut z = ZSet::new();
            for (m, s) in items {
                let s = stored_score(&z, &m, s, &limits);
                z.insert(own(&m), s);
            }
            db.set(dst, Value::ZSet(z), false);
            db.notify(notify::ZSET, "zrangestore", dst);
            Ok(Reply::Int(n as i64))
        }
    }
}

fn zrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, 1, None, None, None)
}

fn zrangestore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let dst = args[1].clone();
    ctx.with_read_lookups(true, |ctx| zrange_generic(ctx, args, 2, Some(&dst), None, None))
}

fn zrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, 1, None, Some(Kind::Rank), Some(true))
}

fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, 1, None, Some(Kind::Score), Some(false))
}

fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, 1, None, Some(Kind::Score), Some(true))
}

fn zrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, 1, None, Some(Kind::Lex), Some(false))
}

fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zrange_generic(ctx, args, 1, None, Some(Kind::Lex), Some(true))
}

fn zremrange_generic(ctx: &mut Ctx<'_>, args: &[Bytes], kind: Kind) -> CmdResult {
    let key = &args[1];
    let mut ranks = (0, 0);
    let mut scores = None;
    let mut lex = None;
    let event = match kind {
        Kind::Rank => {
            ranks = (int(&args[2])?, int(&args[3])?);
            "zremrangebyrank"
        }
        Kind::Score => {
            scores = Some(parse_score_range(ctx, &args[2], &args[3])?);
            "zremrangebyscore"
        }
        Kind::Lex => {
            lex = Some(parse_lex_range(&args[2], &args[3])?);
            "zremrangebylex"
        }
    };
    let mut db = ctx.db();
    let Some(z) = get_zset(&mut db, key)? else {
        return Ok(Reply::Int(0));
    };
    let (lo, hi) = match kind {
        Kind::Rank => match rank_range(ranks.0, ranks.1, z.len()) {
            None => return Ok(Reply::Int(0)),
            Some((s, e)) => (s, e + 1),
        },
        Kind::Score => {
            let (a, b) = scores.expect("parsed");
            z.score_range(a, b)
        }
        Kind::Lex => {
            let (a, b) = lex.as_ref().expect("parsed");
            z.lex_range(a, b)
        }
    };
    let deleted = z.remove_rank_range(lo, hi).len();
    if deleted > 0 {
        db.touch(key);
        db.notify(notify::ZSET, event, key);
        db.remove_if_empty(key);
    }
    Ok(Reply::Int(deleted as i64))
}

fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zremrange_generic(ctx, args, Kind::Score)
}

fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zremrange_generic(ctx, args, Kind::Rank)
}

fn zremrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zremrange_generic(ctx, args, Kind::Lex)
}

// ---------------------------------------------------------------------------
// Pops

/// A key and the `(member, score)` pairs popped from it.
pub(crate) type Popped = (Bytes, Vec<(Bytes, f64)>);

/// Pops up to `count` members from the first existing sorted set among
/// `keys` (lowest first, or highest with `max`). `None` when no key exists;
/// `WRONGTYPE` at the first existing key of another type.
pub(crate) fn zpop_first(ctx: &mut Ctx<'_>, keys: &[Bytes], max: bool, count: u64) -> Result<Option<Popped>, CmdError> {
    let mut db = ctx.db();
    for k in keys {
        let Some(z) = get_zset(&mut db, k)? else {
            continue;
        };
        if count == 0 {
            return Ok(Some((k.clone(), Vec::new())));
        }
        let n = (count.min(z.len() as u64)) as usize;
        let out = if max {
            let len = z.len();
            let mut v = z.remove_rank_range(len - n, len);
            v.reverse();
            v
        } else {
            z.remove_rank_range(0, n)
        };
        db.notify(notify::ZSET, if max { "zpopmax" } else { "zpopmin" }, k);
        db.touch(k);
        db.remove_if_empty(k);
        return Ok(Some((k.clone(), out)));
    }
    Ok(None)
}

fn zpop_minmax(ctx: &mut Ctx<'_>, args: &[Bytes], max: bool) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let count = if args.len() == 3 {
        Some(long_at_least(&args[2], 0, "ERR value is out of range, must be positive")? as u64)
    } else {
        None
    };
    let resp = ctx.client.resp;
    let nested = resp == Resp::V3 && count.is_some();
    let items = zpop_first(ctx, &args[1..2], max, count.unwrap_or(1))?.map(|(_, v)| v).unwrap_or_default();
    Ok(if nested {
        pairs_reply(items, true, Resp::V3)
    } else {
        let mut out = Vec::with_capacity(items.len() * 2);
        for (m, s) in items {
            out.push(Reply::Bulk(m));
            out.push(Reply::Double(s));
        }
        Reply::Array(out)
    })
}

fn zpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zpop_minmax(ctx, args, false)
}

fn zpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    zpop_minmax(ctx, args, true)
}

pub(crate) fn parse_minmax(a: &[u8]) -> Option<bool> {
    if eq(a, "min") {
        Some(false)
    } else if eq(a, "max") {
        Some(true)
    } else {
        None
    }
}

/// `[key, [[member, score], ...]]` (ZMPOP / BZMPOP, both protocols).
pub(crate) fn zmpop_reply(key: Bytes, items: Vec<(Bytes, f64)>) -> Reply {
    Reply::Array(vec![
        Reply::Bulk(key),
        Reply::Array(items.into_iter().map(|(m, s)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)])).collect()),
    ])
}

fn zmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let p = parse_mpop(args, 1, parse_minmax)?;
    Ok(match zpop_first(ctx, &p.keys, p.where_, p.count as u64)? {
        Some((k, items)) => zmpop_reply(k, items),
        None => Reply::NilArray,
    })
}

// ---------------------------------------------------------------------------
// ZRANDMEMBER / ZSCAN

fn zrandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let resp = ctx.client.resp;
    if args.len() >= 3 {
        let l = random_count(&args[2])?;
        let withscores = match args.len() {
            3 => false,
            4 if eq(&args[3], "withscores") => true,
            _ => return Err(CmdError::Syntax),
        };
        if withscores && l < i64::MIN / 2 {
            return Err(CmdError::ValueOutOfRange);
        }
        let mut db = ctx.db();
        let Some(z) = get_zset(&mut db, &args[1])? else {
            return Ok(Reply::Array(Vec::new()));
        };
        let size = z.len();
        if l == 0 {
            return Ok(Reply::Array(Vec::new()));
        }
        let pick = |i: usize| {
            let (m, s) = z.entry_at(i).expect("index");
            (Bytes::copy_from_slice(m), s)
        };
        let items: Vec<(Bytes, f64)> = if l < 0 {
            let n = l.unsigned_abs();
            if n > MAX_RANDOM_REPLY {
                return Err(CmdError::ValueOutOfRange);
            }
            let mut rng = rand::rng();
            (0..n).map(|_| pick(rng.random_range(0..size))).collect()
        } else if l as u64 >= size as u64 {
            let mut v: Vec<(Bytes, f64)> = z.iter().map(|(m, s)| (Bytes::copy_from_slice(m), s)).collect();
            v.reverse();
            v
        } else {
            distinct_indices(size, l as usize).into_iter().map(pick).collect()
        };
        return Ok(pairs_reply(items, withscores, resp));
    }
    let mut db = ctx.db();
    let Some(z) = get_zset(&mut db, &args[1])? else {
        return Ok(Reply::Nil);
    };
    let i = rand::rng().random_range(0..z.len());
    Ok(Reply::Bulk(Bytes::copy_from_slice(z.entry_at(i).expect("index").0)))
}

fn zscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cur = cursor(&args[2])?;
    let opts = scan_opts(&args[3..], false)?;
    let mut db = ctx.db();
    let Some((z, listpack)) = get_zset_listpack(&mut db, &args[1])? else {
        return Ok(empty_scan());
    };
    let (next, items): (u64, Vec<(Bytes, f64)>) = if listpack {
        (0, z.iter().map(|(m, s)| (Bytes::copy_from_slice(m), s)).collect())
    } else {
        let (next, range) = scan_step(z.len(), cur, opts.count);
        (
            next,
            range
                .rev()
                .map(|i| {
                    let (m, s) = z.entry_at(i).expect("index");
                    (Bytes::copy_from_slice(m), s)
                })
                .collect(),
        )
    };
    let short = ctx.core.profile().at_least(7, 2, 0);
    let mut out = Vec::new();
    for (m, s) in items {
        if opts.pattern.as_ref().is_some_and(|p| !glob::matches(p, &m, false)) {
            continue;
        }
        out.push(Reply::Bulk(m));
        out.push(Reply::Bulk(Bytes::from(if short { num::fmt_short(s) } else { num::fmt_double(s) })));
    }
    Ok(Reply::Array(vec![Reply::Bulk(Bytes::from(next.to_string())), Reply::Array(out)]))
}

// ---------------------------------------------------------------------------
// ZUNION / ZINTER / ZDIFF (+STORE), ZINTERCARD

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggr {
    Sum,
    Min,
    Max,
}

fn aggregate(target: &mut f64, val: f64, a: Aggr) {
    match a {
        Aggr::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggr::Min => {
            if val < *target {
                *target = val;
            }
        }
        Aggr::Max => {
            if val > *target {
                *target = val;
            }
        }
    }
}

/// A source of ZUNION & co.: a sorted set, a plain set (scores 1), or a
/// missing key.
enum Src<'a> {
    Missing,
    Z(&'a ZSet),
    S(&'a crate::db::value::SetValue),
}

impl Src<'_> {
    fn len(&self) -> usize {
        match self {
            Src::Missing => 0,
            Src::Z(z) => z.len(),
            Src::S(s) => s.len(),
        }
    }
    fn find(&self, m: &[u8]) -> Option<f64> {
        match self {
            Src::Missing => None,
            Src::Z(z) => z.score(m),
            Src::S(s) => s.contains(m).then_some(1.0),
        }
    }
    /// Elements in Redis's iteration order (sorted sets from the highest).
    fn elements(&self) -> Vec<(&[u8], f64)> {
        match self {
            Src::Missing => Vec::new(),
            Src::Z(z) => {
                let mut v: Vec<(&[u8], f64)> = z.iter().collect();
                v.reverse();
                v
            }
            Src::S(s) => s.iter().map(|m| (m, 1.0)).collect(),
        }
    }
}

fn setop_generic(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    dst: Option<&Bytes>,
    numkeys_idx: usize,
    op: Op,
    card: bool,
) -> CmdResult {
    let setnum = int(&args[numkeys_idx])?;
    if setnum < 1 {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
        return Err(CmdError::custom(format!("ERR at least 1 input key is needed for '{name}' command")));
    }
    if setnum as u64 > (args.len() - numkeys_idx - 1) as u64 {
        return Err(CmdError::Syntax);
    }
    let setnum = setnum as usize;
    let keys = &args[numkeys_idx + 1..numkeys_idx + 1 + setnum];
    let resp = ctx.client.resp;
    let mut db = ctx.db();
    for k in keys {
        match db.get(k) {
            None | Some(Value::ZSet(_)) | Some(Value::Set(_)) => {}
            Some(_) => return Err(CmdError::WrongType),
        }
    }
    let mut weights = vec![1.0f64; setnum];
    let mut aggr = Aggr::Sum;
    let mut withscores = false;
    let mut limit: u64 = 0;
    let mut j = numkeys_idx + 1 + setnum;
    while j < args.len() {
        let remaining = args.len() - j;
        let a = &args[j];
        if op != Op::Diff && !card && remaining > setnum && eq(a, "weights") {
            j += 1;
            for w in weights.iter_mut() {
                *w = num::parse_double(&args[j]).ok_or_else(|| CmdError::custom("ERR weight value is not a float"))?;
                j += 1;
            }
        } else if op != Op::Diff && !card && remaining >= 2 && eq(a, "aggregate") {
            let v = &args[j + 1];
            aggr = if eq(v, "sum") {
                Aggr::Sum
            } else if eq(v, "min") {
                Aggr::Min
            } else if eq(v, "max") {
                Aggr::Max
            } else {
                return Err(CmdError::Syntax);
            };
            j += 2;
        } else if dst.is_none() && !card && eq(a, "withscores") {
            withscores = true;
            j += 1;
        } else if card && remaining >= 2 && eq(a, "limit") {
            limit = long_at_least(&args[j + 1], 0, "ERR LIMIT can't be negative")? as u64;
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    // Borrow every source immutably (lazy expiry already ran above).
    let raw = db.raw();
    let mut src: Vec<(usize, Src<'_>, f64)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let s = match raw.peek(k).map(|e| &e.value) {
                Some(Value::ZSet(z)) => Src::Z(z),
                Some(Value::Set(s)) => Src::S(s),
                _ => Src::Missing,
            };
            (i, s, weights[i])
        })
        .collect();
    // Same key twice = same object in Redis.
    let same = |a: usize, b: usize| a == b || keys[a] == keys[b];
    let mut result = ZSet::new();
    let mut cardinality: u64 = 0;
    match op {
        Op::Inter => {
            src.sort_by_key(|s| s.1.len());
            if src[0].1.len() > 0 {
                let first_idx = src[0].0;
                for (m, sc) in src[0].1.elements() {
                    let mut score = src[0].2 * sc;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    let mut all = true;
                    for s in &src[1..] {
                        if same(s.0, first_idx) {
                            aggregate(&mut score, sc * s.2, aggr);
                        } else if let Some(v) = s.1.find(m) {
                            aggregate(&mut score, v * s.2, aggr);
                        } else {
                            all = false;
                            break;
                        }
                    }
                    if all {
                        if card {
                            cardinality += 1;
                            if limit != 0 && cardinality >= limit {
                                break;
                            }
                        } else {
                            result.insert(Bytes::copy_from_slice(m), score);
                        }
                    }
                }
            }
        }
        Op::Union => {
            src.sort_by_key(|s| s.1.len());
            let mut acc: crate::db::Map<Bytes, f64> = crate::db::Map::default();
            for s in &src {
                for (m, sc) in s.1.elements() {
                    let mut score = s.2 * sc;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get_mut(m) {
                        Some(t) => aggregate(t, score, aggr),
                        None => {
                            acc.insert(Bytes::copy_from_slice(m), score);
                        }
                    }
                }
            }
            for (m, s) in acc {
                result.insert(m, s);
            }
        }
        Op::Diff => {
            if src[0].1.len() > 0 && !src[1..].iter().any(|s| same(s.0, src[0].0)) {
                for (m, sc) in src[0].1.elements() {
                    if !src[1..].iter().any(|s| s.1.find(m).is_some()) {
                        result.insert(Bytes::copy_from_slice(m), sc);
                    }
                }
            }
        }
    }
    if card {
        return Ok(Reply::Int(cardinality as i64));
    }
    let Some(dst) = dst else {
        let items: Vec<(Bytes, f64)> = result.iter().map(|(m, s)| (Bytes::copy_from_slice(m), s)).collect();
        return Ok(pairs_reply(items, withscores, resp));
    };
    let n = result.len();
    if n == 0 {
        if db.remove(dst).is_some() {
            db.notify(notify::GENERIC, "del", dst);
        }
        return Ok(Reply::Int(0));
    }
    let limits = *db.limits();
    normalize_built(&mut result, &limits);
    db.set(dst, Value::ZSet(result), false);
    let ev = match op {
        Op::Union => "zunionstore",
        Op::Inter => "zinterstore",
        Op::Diff => "zdiffstore",
    };
    db.notify(notify::ZSET, ev, dst);
    Ok(Reply::Int(n as i64))
}

fn zunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let dst = args[1].clone();
    ctx.with_read_lookups(true, |ctx| setop_generic(ctx, args, Some(&dst), 2, Op::Union, false))
}

fn zinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let dst = args[1].clone();
    ctx.with_read_lookups(true, |ctx| setop_generic(ctx, args, Some(&dst), 2, Op::Inter, false))
}

fn zdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let dst = args[1].clone();
    ctx.with_read_lookups(true, |ctx| setop_generic(ctx, args, Some(&dst), 2, Op::Diff, false))
}

fn zunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    setop_generic(ctx, args, None, 1, Op::Union, false)
}

fn zinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    setop_generic(ctx, args, None, 1, Op::Inter, false)
}

fn zdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    setop_generic(ctx, args, None, 1, Op::Diff, false)
}

fn zintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    setop_generic(ctx, args, None, 1, Op::Inter, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_bounds_parse_like_zsl_parse_range() {
        assert_eq!(parse_score_bound(b"(1.5", false), Some(ScoreBound { value: 1.5, exclusive: true }));
        assert_eq!(parse_score_bound(b"", false), Some(ScoreBound { value: 0.0, exclusive: false }));
        assert_eq!(parse_score_bound(b"(", false), Some(ScoreBound { value: 0.0, exclusive: true }));
        assert_eq!(parse_score_bound(b" 1", false), Some(ScoreBound { value: 1.0, exclusive: false }));
        assert_eq!(parse_score_bound(b"1e400", false).map(|b| b.value), Some(f64::INFINITY));
        assert_eq!(parse_score_bound(b"1\0x", false).map(|b| b.value), Some(1.0));
        assert_eq!(parse_score_bound(b"   ", false), None);
        assert_eq!(parse_score_bound(b"nan", false), None);
        assert_eq!(parse_score_bound(b"1 ", false), None);
        assert_eq!(parse_score_bound(b"-", false), None);
        assert_eq!(parse_score_bound(b"0x10", false).map(|b| b.value), Some(16.0));
        // Redis 8: no leading space, no hex form; the rest as before.
        assert_eq!(parse_score_bound(b" 1", true), None);
        assert_eq!(parse_score_bound(b"0x10", true), None);
        assert_eq!(parse_score_bound(b"(+1", true), Some(ScoreBound { value: 1.0, exclusive: true }));
        assert_eq!(parse_score_bound(b"(", true), Some(ScoreBound { value: 0.0, exclusive: true }));
        assert_eq!(parse_score_bound(b"1e400", true).map(|b| b.value), Some(f64::INFINITY));
        assert_eq!(parse_score_bound(b"1\0x", true).map(|b| b.value), Some(1.0));
        assert_eq!(parse_score_bound(b"nan", true), None);
        assert_eq!(parse_lex_bound(b"-"), Some(LexBound::NegInf));
        assert_eq!(parse_lex_bound(b"-\0"), Some(LexBound::NegInf));
        assert_eq!(parse_lex_bound(b"-a"), None);
        assert_eq!(parse_lex_bound(b"a"), None);
        assert_eq!(parse_lex_bound(b""), None);
    }
}
