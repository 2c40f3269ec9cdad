//! List commands (Redis 7.0 `t_list.c`). The pops shared with the blocking
//! variants (`BLPOP`, `BLMOVE`, `BLMPOP`) live here.

use bytes::Bytes;

use super::util::{eq, int};
use super::{cmd, CommandSpec, Ctx};
use crate::db::list_value::Elem;
use crate::db::value::ListValue;
use crate::db::{notify, DbView, Value};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("lpush", lpush, -3, "write denyoom fast", 1, 1, 1, "@write @list @fast")
        .doc("Prepend one or multiple elements to a list", "1.0.0"),
    cmd("rpush", rpush, -3, "write denyoom fast", 1, 1, 1, "@write @list @fast")
        .doc("Append one or multiple elements to a list", "1.0.0"),
    cmd("lpushx", lpushx, -3, "write denyoom fast", 1, 1, 1, "@write @list @fast")
        .doc("Prepend an element to a list, only if the list exists", "2.2.0"),
    cmd("rpushx", rpushx, -3, "write denyoom fast", 1, 1, 1, "@write @list @fast")
        .doc("Append an element to a list, only if the list exists", "2.2.0"),
    cmd("lpop", lpop, -2, "write fast", 1, 1, 1, "@write @list @fast")
        .doc("Remove and get the first elements in a list", "1.0.0"),
    cmd("rpop", rpop, -2, "write fast", 1, 1, 1, "@write @list @fast")
        .doc("Remove and get the last elements in a list", "1.0.0"),
    cmd("llen", llen, 2, "readonly fast", 1, 1, 1, "@read @list @fast").doc("Get the length of a list", "1.0.0"),
    cmd("lrange", lrange, 4, "readonly", 1, 1, 1, "@read @list @slow")
        .doc("Get a range of elements from a list", "1.0.0"),
    cmd("lindex", lindex, 3, "readonly", 1, 1, 1, "@read @list @slow")
        .doc("Get an element from a list by its index", "1.0.0"),
    cmd("lset", lset, 4, "write denyoom", 1, 1, 1, "@write @list @slow")
        .doc("Set the value of an element in a list by its index", "1.0.0"),
    cmd("linsert", linsert, 5, "write denyoom", 1, 1, 1, "@write @list @slow")
        .doc("Insert an element before or after another element in a list", "2.2.0"),
    cmd("lrem", lrem, 4, "write", 1, 1, 1, "@write @list @slow").doc("Remove elements from a list", "1.0.0"),
    cmd("ltrim", ltrim, 4, "write", 1, 1, 1, "@write @list @slow").doc("Trim a list to the specified range", "1.0.0"),
    cmd("lpos", lpos, -3, "readonly", 1, 1, 1, "@read @list @slow")
        .doc("Return the index of matching elements on a list", "6.0.6"),
    cmd("lmove", lmove, 5, "write denyoom", 1, 2, 1, "@write @list @slow")
        .doc("Pop an element from a list, push it to another list and return it", "6.2.0"),
    cmd("rpoplpush", rpoplpush, 3, "write denyoom", 1, 2, 1, "@write @list @slow")
        .doc("Remove the last element in a list, prepend it to another list and return it", "1.2.0"),
    cmd("lmpop", lmpop, -4, "write movablekeys", 0, 0, 0, "@write @list @slow")
        .doc("Pop elements from a list", "7.0.0"),
];

/// An end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Left,
    Right,
}

impl End {
    fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }
    fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }
}

/// `LEFT` / `RIGHT` (syntax error otherwise).
pub(crate) fn parse_end(arg: &[u8]) -> Result<End, CmdError> {
    if eq(arg, "left") {
        Ok(End::Left)
    } else if eq(arg, "right") {
        Ok(End::Right)
    } else {
        Err(CmdError::Syntax)
    }
}

/// Redis `getRangeLongFromObjectOrReply(.., min, LONG_MAX, msg)`: a non
/// integer or a value below `min` both answer `msg`.
pub(crate) fn long_at_least(arg: &[u8], min: i64, msg: &str) -> Result<i64, CmdError> {
    match crate::num::parse_i64_strict(arg) {
        Some(v) if v >= min => Ok(v),
        _ => Err(CmdError::custom(msg)),
    }
}

/// The list at `key`, `WRONGTYPE` for other types.
fn get_list<'a>(db: &'a mut DbView<'_>, key: &[u8]) -> Result<Option<&'a mut ListValue>, CmdError> {
    match db.get_mut(key) {
        None => Ok(None),
        Some(Value::List(l)) => Ok(Some(l)),
        Some(_) => Err(CmdError::WrongType),
    }
}

fn push_generic(ctx: &mut Ctx<'_>, args: &[Bytes], end: End, xx: bool) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    if get_list(&mut db, key)?.is_none() {
        if xx {
            return Ok(Reply::Int(0));
        }
        // Packed when the pushed elements fit it, else a ring with exactly
        // the room they take.
        db.insert_new(key, Value::List(ListValue::for_elements(&args[2..])));
    }
    let l = get_list(&mut db, key)?.expect("exists");
    for v in &args[2..] {
        match end {
            End::Left => l.push_front(v),
            End::Right => l.push_back(v),
        }
    }
    let len = l.len();
    db.touch(key);
    db.notify(notify::LIST, end.push_event(), key);
    Ok(Reply::Int(len as i64))
}

fn lpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push_generic(ctx, args, End::Left, false)
}

fn rpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push_generic(ctx, args, End::Right, false)
}

fn lpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push_generic(ctx, args, End::Left, true)
}

fn rpushx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    push_generic(ctx, args, End::Right, true)
}

/// Pops up to `count` elements from `end` of the list at `key` (which must
/// be a non-empty list), with notifications and deletion when emptied.
/// Elements come in pop order.
fn pop_n(db: &mut DbView<'_>, key: &Bytes, end: End, count: usize) -> Vec<Elem> {
    let Some(Value::List(l)) = db.get_mut(key) else { unreachable!("caller checked a list") };
    let out = match end {
        End::Left => l.pop_front_n(count),
        End::Right => l.pop_back_n(count),
    };
    db.notify(notify::LIST, end.pop_event(), key);
    db.touch(key);
    db.remove_if_empty(key);
    out
}

fn pop_generic(ctx: &mut Ctx<'_>, args: &[Bytes], end: End) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::WrongArity(String::from_utf8_lossy(&args[0]).to_ascii_lowercase()));
    }
    let count = if args.len() == 3 {
        Some(long_at_least(&args[2], 0, "ERR value is out of range, must be positive")? as usize)
    } else {
        None
    };
    let key = &args[1];
    let mut db = ctx.db();
    if get_list(&mut db, key)?.is_none() {
        return Ok(if count.is_some() { Reply::NilArray } else { Reply::Nil });
    }
    match count {
        Some(0) => Ok(Reply::Array(Vec::new())),
        Some(n) => Ok(Reply::Array(pop_n(&mut db, key, end, n).into_iter().map(Reply::from).collect())),
        None => Ok(pop_n(&mut db, key, end, 1).pop().expect("non-empty list").into()),
    }
}

fn lpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    pop_generic(ctx, args, End::Left)
}

fn rpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    pop_generic(ctx, args, End::Right)
}

/// Pops from the first non-empty list among `keys` (BLPOP, LMPOP…):
/// `None` if every key is missing; `WRONGTYPE` at the first existing
/// non-list key.
pub(crate) fn pop_first(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    end: End,
    count: usize,
) -> Result<Option<(Bytes, Vec<Elem>)>, CmdError> {
    let mut db = ctx.db();
    for k in keys {
        match get_list(&mut db, k)? {
            None => continue,
            Some(l) if l.is_empty() => continue,
            Some(_) => {
                let out = pop_n(&mut db, k, end, count);
                return Ok(Some((k.clone(), out)));
            }
        }
    }
    Ok(None)
}

fn llen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(Reply::Int(get_list(&mut db, &args[1])?.map_or(0, |l| l.len() as i64)))
}

/// Redis's index sanitising for LRANGE / LTRIM: `None` for an empty range.
fn list_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut s = if start < 0 { len.saturating_add(start) } else { start };
    let mut e = if end < 0 { len.saturating_add(end) } else { end };
    if s < 0 {
        s = 0;
    }
    if s > e || s >= len {
        return None;
    }
    if e >= len {
        e = len - 1;
    }
    Some((s as usize, e as usize))
}

fn lrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let start = int(&args[2])?;
    let end = int(&args[3])?;
    let mut db = ctx.db();
    let Some(l) = get_list(&mut db, &args[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    Ok(match list_range(start, end, l.len()) {
        None => Reply::Array(Vec::new()),
        Some((s, e)) => Reply::Array(l.replies(s..=e)),
    })
}

/// A possibly negative list index resolved against `len`.
fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let i = if index < 0 { (len as i64).checked_add(index)? } else { index };
    (i >= 0 && (i as u64) < len as u64).then_some(i as usize)
}

fn lindex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    let Some(l) = get_list(&mut db, &args[1])? else {
        return Ok(Reply::Nil);
    };
    let index = int(&args[2])?;
    Ok(resolve_index(index, l.len()).and_then(|i| l.reply_at(i)).unwrap_or(Reply::Nil))
}

fn lset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    let Some(l) = get_list(&mut db, key)? else {
        return Err(CmdError::NoSuchKey);
    };
    let index = int(&args[2])?;
    let Some(i) = resolve_index(index, l.len()) else {
        return Err(CmdError::OutOfRange);
    };
    l.set(i, &args[3]);
    db.touch(key);
    db.notify(notify::LIST, "lset", key);
    Ok(Reply::ok())
}

fn linsert(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let after = if eq(&args[2], "after") {
        true
    } else if eq(&args[2], "before") {
        false
    } else {
        return Err(CmdError::Syntax);
    };
    let key = &args[1];
    let mut db = ctx.db();
    let Some(l) = get_list(&mut db, key)? else {
        return Ok(Reply::Int(0));
    };
    let Some(pos) = l.position(&args[3]) else {
        return Ok(Reply::Int(-1));
    };
    l.insert(if after { pos + 1 } else { pos }, &args[4]);
    let len = l.len();
    db.touch(key);
    db.notify(notify::LIST, "linsert", key);
    Ok(Reply::Int(len as i64))
}

/// An integer argument whose negation must exist: from Redis 7.2 (LREM's
/// count, LPOS's RANK) the smallest `long long` is refused; 7.0 takes it.
fn negatable(ctx: &Ctx<'_>, arg: &[u8]) -> Result<i64, CmdError> {
    let n = int(arg)?;
    if n == i64::MIN && ctx.core.profile().at_least(7, 2, 0) {
        return Err(CmdError::custom(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    Ok(n)
}

fn lrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let count = negatable(ctx, &args[2])?;
    let key = &args[1];
    let elem = &args[3];
    let mut db = ctx.db();
    let Some(l) = get_list(&mut db, key)? else {
        return Ok(Reply::Int(0));
    };
    let removed = l.remove_eq(elem, count.unsigned_abs(), count < 0);
    if removed > 0 {
        db.touch(key);
        db.notify(notify::LIST, "lrem", key);
        db.remove_if_empty(key);
    }
    Ok(Reply::Int(removed as i64))
}

fn ltrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let start = int(&args[2])?;
    let end = int(&args[3])?;
    let key = &args[1];
    let mut db = ctx.db();
    let Some(l) = get_list(&mut db, key)? else {
        return Ok(Reply::ok());
    };
    match list_range(start, end, l.len()) {
        None => l.clear(),
        Some((s, e)) => l.retain_range(s..e + 1),
    }
    db.notify(notify::LIST, "ltrim", key);
    db.remove_if_empty(key);
    db.touch(key);
    Ok(Reply::ok())
}

fn lpos(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut rank: i64 = 1;
    let mut count: i64 = -1;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < args.len() {
        let more = j + 1 < args.len();
        if eq(&args[j], "rank") && more {
            rank = negatable(ctx, &args[j + 1])?;
            if rank == 0 {
                return Err(CmdError::custom(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if eq(&args[j], "count") && more {
            count = long_at_least(&args[j + 1], 0, "ERR COUNT can't be negative")?;
        } else if eq(&args[j], "maxlen") && more {
            maxlen = long_at_least(&args[j + 1], 0, "ERR MAXLEN can't be negative")?;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 2;
    }
    let reverse = rank < 0;
    if reverse {
        rank = rank.wrapping_neg();
    }
    let mut db = ctx.db();
    let Some(l) = get_list(&mut db, &args[1])? else {
        return Ok(if count != -1 { Reply::Array(Vec::new()) } else { Reply::Nil });
    };
    let elem = &args[2];
    let len = l.len();
    let mut matches: i64 = 0;
    let mut found = Vec::new();
    let mut single = None;
    let mut walk = l.iter();
    for index in 0..len {
        if maxlen != 0 && index as i64 >= maxlen {
            break;
        }
        let pos = if reverse { len - 1 - index } else { index };
        let e = if reverse { walk.next_back() } else { walk.next() }.expect("within the length");
        if e == &elem[..] {
            matches += 1;
            if matches >= rank {
                if count != -1 {
                    found.push(Reply::Int(pos as i64));
                    if count != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= count {
                        break;
                    }
                } else {
                    single = Some(pos);
                    break;
                }
            }
        }
    }
    Ok(if count != -1 { Reply::Array(found) } else { single.map_or(Reply::Nil, |p| Reply::Int(p as i64)) })
}

/// LMOVE core: `None` when `src` does not exist. Checks both types before
/// moving anything.
pub(crate) fn move_element(
    ctx: &mut Ctx<'_>,
    src: &Bytes,
    dst: &Bytes,
    from: End,
    to: End,
) -> Result<Option<Elem>, CmdError> {
    let mut db = ctx.db();
    if get_list(&mut db, src)?.is_none_or(|l| l.is_empty()) {
        return Ok(None);
    }
    let dst_exists = get_list(&mut db, dst)?.is_some();
    let l = get_list(&mut db, src)?.expect("checked");
    let v = match from {
        End::Left => l.pop_front(),
        End::Right => l.pop_back(),
    }
    .expect("non-empty");
    if !dst_exists && src != dst {
        db.insert_new(dst, Value::List(ListValue::new()));
    }
    let d = get_list(&mut db, dst)?.expect("exists");
    d.push_elem(to == End::Left, v.clone());
    db.touch(dst);
    db.notify(notify::LIST, to.push_event(), dst);
    db.notify(notify::LIST, from.pop_event(), src);
    db.remove_if_empty(src);
    db.touch(src);
    Ok(Some(v))
}

fn lmove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let from = parse_end(&args[3])?;
    let to = parse_end(&args[4])?;
    Ok(move_element(ctx, &args[1], &args[2], from, to)?.map_or(Reply::Nil, Reply::from))
}

fn rpoplpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    Ok(move_element(ctx, &args[1], &args[2], End::Right, End::Left)?.map_or(Reply::Nil, Reply::from))
}

/// Parsed `numkeys key... LEFT|RIGHT [COUNT n]` (LMPOP / BLMPOP), or the
/// MIN|MAX form for ZMPOP / BZMPOP via `parse_where`.
pub(crate) struct MPop<W> {
    pub keys: Vec<Bytes>,
    pub where_: W,
    pub count: usize,
}

pub(crate) fn parse_mpop<W>(
    args: &[Bytes],
    numkeys_idx: usize,
    parse_where: impl Fn(&[u8]) -> Option<W>,
) -> Result<MPop<W>, CmdError> {
    let numkeys = long_at_least(&args[numkeys_idx], 1, "ERR numkeys should be greater than 0")? as u64;
    let where_idx = (numkeys_idx as u64).saturating_add(numkeys).saturating_add(1);
    if where_idx >= args.len() as u64 {
        return Err(CmdError::Syntax);
    }
    let where_idx = where_idx as usize;
    let where_ = parse_where(&args[where_idx]).ok_or(CmdError::Syntax)?;
    let mut count: i64 = -1;
    let mut j = where_idx + 1;
    while j < args.len() {
        if count == -1 && eq(&args[j], "count") && j + 1 < args.len() {
            count = long_at_least(&args[j + 1], 1, "ERR count should be greater than 0")?;
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok(MPop {
        keys: args[numkeys_idx + 1..where_idx].to_vec(),
        where_,
        count: if count == -1 { 1 } else { count as usize },
    })
}

pub(crate) fn parse_lr(a: &[u8]) -> Option<End> {
    parse_end(a).ok()
}

/// `[key, [elements]]`.
pub(crate) fn key_and_elements(key: Bytes, elems: Vec<Elem>) -> Reply {
    Reply::Array(vec![Reply::Bulk(key), Reply::Array(elems.into_iter().map(Reply::from).collect())])
}

fn lmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let p = parse_mpop(args, 1, parse_lr)?;
    Ok(match pop_first(ctx, &p.keys, p.where_, p.count)? {
        Some((k, elems)) => key_and_elements(k, elems),
        None => Reply::NilArray,
    })
}
