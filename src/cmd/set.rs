//! Set commands (Redis 7.0 `t_set.c`).
//!
//! Intsets (all integers, at most `set-max-intset-entries` members when
//! built) are answered in ascending numeric order, as Redis does; other
//! sets in insertion order (Redis: hash table order, unspecified).

use bytes::Bytes;
use indexmap::IndexSet;
use rand::Rng;

use super::hash::{distinct_indices, empty_scan, random_count, MAX_RANDOM_REPLY};
use super::list::long_at_least;
use super::util::{cursor, eq, scan_opts};
use super::{cmd, CommandSpec, Ctx};
use crate::db::value::SetValue;
use crate::db::{notify, scan_step, DbView, Hasher, StrEnc, Value};
use crate::error::{CmdError, CmdResult};
use crate::glob;
use crate::num::parse_i64_strict;
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("sadd", sadd, -3, "write denyoom fast", 1, 1, 1, "@write @set @fast")
        .doc("Add one or more members to a set", "1.0.0"),
    cmd("srem", srem, -3, "write fast", 1, 1, 1, "@write @set @fast")
        .doc("Remove one or more members from a set", "1.0.0"),
    cmd("smembers", smembers, 2, "readonly", 1, 1, 1, "@read @set @slow").doc("Get all the members in a set", "1.0.0"),
    cmd("sismember", sismember, 3, "readonly fast", 1, 1, 1, "@read @set @fast")
        .doc("Determine if a given value is a member of a set", "1.0.0"),
    cmd("smismember", smismember, -3, "readonly fast", 1, 1, 1, "@read @set @fast")
        .doc("Returns the membership associated with the given elements for a set", "6.2.0"),
    cmd("scard", scard, 2, "readonly fast", 1, 1, 1, "@read @set @fast")
        .doc("Get the number of members in a set", "1.0.0"),
    cmd("spop", spop, -2, "write fast", 1, 1, 1, "@write @set @fast")
        .doc("Remove and return one or multiple random members from a set", "1.0.0"),
    cmd("srandmember", srandmember, -2, "readonly", 1, 1, 1, "@read @set @slow")
        .doc("Get one or multiple random members from a set", "1.0.0"),
    cmd("smove", smove, 4, "write fast", 1, 2, 1, "@write @set @fast")
        .doc("Move a member from one set to another", "1.0.0"),
    cmd("sinter", sinter, -2, "readonly", 1, -1, 1, "@read @set @slow").doc("Intersect multiple sets", "1.0.0"),
    cmd("sunion", sunion, -2, "readonly", 1, -1, 1, "@read @set @slow").doc("Add multiple sets", "1.0.0"),
    cmd("sdiff", sdiff, -2, "readonly", 1, -1, 1, "@read @set @slow").doc("Subtract multiple sets", "1.0.0"),
    cmd("sinterstore", sinterstore, -3, "write denyoom", 1, -1, 1, "@write @set @slow")
        .doc("Intersect multiple sets and store the resulting set in a key", "1.0.0"),
    cmd("sunionstore", sunionstore, -3, "write denyoom", 1, -1, 1, "@write @set @slow")
        .doc("Add multiple sets and store the resulting set in a key", "1.0.0"),
    cmd("sdiffstore", sdiffstore, -3, "write denyoom", 1, -1, 1, "@write @set @slow")
        .doc("Subtract multiple sets and store the resulting set in a key", "1.0.0"),
    cmd("sintercard", sintercard, -3, "readonly movablekeys", 0, 0, 0, "@read @set @slow")
        .doc("Intersect multiple sets and return the cardinality of the result", "7.0.0"),
    cmd("sscan", sscan, -3, "readonly", 1, 1, 1, "@read @set @slow").doc("Incrementally iterate Set elements", "2.8.0"),
];

/// The set at `key`, `WRONGTYPE` for other types.
pub(crate) fn get_set<'a>(db: &'a mut DbView<'_>, key: &[u8]) -> Result<Option<&'a mut SetValue>, CmdError> {
    match db.get_mut(key) {
        None => Ok(None),
        Some(Value::Set(s)) => Ok(Some(s)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// The set at `key` and whether it is an intset, in one lookup.
fn get_set_intset<'a>(db: &'a mut DbView<'_>, key: &[u8]) -> Result<Option<(&'a mut SetValue, bool)>, CmdError> {
    let Some(e) = db.entry(key) else { return Ok(None) };
    let intset = e.encoding() == "intset";
    match &mut e.value {
        Value::Set(s) => Ok(Some((s, intset))),
        _ => Err(CmdError::WrongType),
    }
}

/// True if Redis 7.0 would build these members into an intset, with at
/// most `max` entries (`set-max-intset-entries`).
fn intset_like<'a>(len: usize, mut members: impl Iterator<Item = &'a [u8]>, max: usize) -> bool {
    len <= max && members.all(|m| parse_i64_strict(m).is_some())
}

/// Members in the order Redis replies with them (see the module docs):
/// ascending for an intset.
fn ordered(members: Vec<Bytes>, intset: bool) -> Vec<Bytes> {
    if intset {
        let mut v = members;
        v.sort_by_key(|m| parse_i64_strict(m).expect("integer member"));
        v
    } else {
        members
    }
}

fn set_reply(members: Vec<Bytes>, intset: bool) -> Reply {
    Reply::Set(ordered(members, intset).into_iter().map(Reply::Bulk).collect())
}

fn sadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    let limits = *db.limits();
    let max = limits.intset_entries();
    // Redis 7.2's encoding, before (a new set's: created for the members
    // it is given); 7.0's follows from the content below.
    let mut enc = if !limits.sets_listpack {
        None
    } else {
        match db.entry(key) {
            None => Some(Enc72::created(&args[2], args.len() - 2, &limits)),
            Some(e) if matches!(e.value, Value::Set(_)) => Some(Enc72::of(e, &limits)),
            Some(_) => return Err(CmdError::WrongType),
        }
    };
    if get_set(&mut db, key)?.is_none() {
        db.insert_new(key, Value::Set(SetValue::new()));
    }
    let s = get_set(&mut db, key)?.expect("exists");
    let mut added = 0;
    for m in &args[2..] {
        if s.insert(m) {
            added += 1;
            if let Some(enc) = enc.as_mut() {
                let was = *enc;
                *enc = was.adding(m, s, &limits);
                if was == Enc72::Intset && *enc == Enc72::Listpack {
                    in_intset_order(s);
                }
            }
        }
    }
    // Redis 7.0 converts an intset to a hashtable for a non-integer member
    // or past set-max-intset-entries, and never back.
    let outgrown = s.len() > max || args[2..].iter().any(|m| crate::num::parse_i64_strict(m).is_none());
    if added > 0 {
        match enc {
            Some(enc) => db.set_str_enc(key, enc.mark()),
            None => db.mark_outgrown(key, outgrown),
        }
        db.touch(key);
        db.notify(notify::SET, "sadd", key);
    }
    Ok(Reply::Int(added))
}

/// Puts the integers of a set that was an intset until its last member
/// (the one that is not an integer) in ascending order, that member after
/// them: the order of the listpack Redis 7.2 converts the intset into.
fn in_intset_order(s: &mut SetValue) {
    let mut members = s.to_vec();
    let last = members.pop();
    members.sort_by_key(|m| parse_i64_strict(m).unwrap_or(i64::MAX));
    let mut sorted = SetValue::new();
    for m in members.iter().chain(last.as_ref()) {
        sorted.insert(m);
    }
    *s = sorted;
}

/// A set's encoding in Redis 7.2 and later, as writes change it: an intset
/// while it holds integers only and at most `set-max-intset-entries`; a
/// listpack when a non-integer joins a small intset, or when the set is
/// created for members that are not all integers, or too many for an
/// intset, but few enough (`set-max-listpack-*`); a hashtable past those,
/// for good. A listpack never turns back into an intset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Enc72 {
    Intset,
    Listpack,
    Hashtable,
}

impl Enc72 {
    /// The encoding of the set `e` holds.
    fn of(e: &crate::db::Entry, limits: &crate::db::EncLimits) -> Enc72 {
        let name = match e.str_enc {
            StrEnc::Auto => e.value.encoding(limits),
            _ => e.encoding(),
        };
        match name {
            "intset" => Enc72::Intset,
            "listpack" => Enc72::Listpack,
            _ => Enc72::Hashtable,
        }
    }

    /// A new set for `hint` members, the first of them `first`.
    fn created(first: &[u8], hint: usize, limits: &crate::db::EncLimits) -> Enc72 {
        if parse_i64_strict(first).is_some() && hint <= limits.intset_entries() {
            Enc72::Intset
        } else if hint <= limits.set_listpack_entries {
            Enc72::Listpack
        } else {
            Enc72::Hashtable
        }
    }

    /// After `m` was added to `s` (which now holds it).
    fn adding(self, m: &[u8], s: &SetValue, limits: &crate::db::EncLimits) -> Enc72 {
        let len = s.len();
        let fits = |x: &[u8]| x.len() <= limits.set_listpack_value;
        match self {
            Enc72::Intset if parse_i64_strict(m).is_some() => {
                if len > limits.intset_entries() {
                    Enc72::Hashtable
                } else {
                    Enc72::Intset
                }
            }
            Enc72::Intset if len <= limits.set_listpack_entries && s.iter().all(fits) => Enc72::Listpack,
            Enc72::Listpack if len <= limits.set_listpack_entries && fits(m) => Enc72::Listpack,
            _ => Enc72::Hashtable,
        }
    }

    /// The entry's mark for it.
    fn mark(self) -> StrEnc {
        match self {
            Enc72::Intset => StrEnc::Small,
            Enc72::Listpack => StrEnc::SetListpack,
            Enc72::Hashtable => StrEnc::Big,
        }
    }
}

fn srem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let mut db = ctx.db();
    let Some(s) = get_set(&mut db, key)? else {
        return Ok(Reply::Int(0));
    };
    let mut removed = 0;
    for m in &args[2..] {
        if s.remove(m) {
            removed += 1;
            if s.is_empty() {
                break;
            }
        }
    }
    if removed > 0 {
        db.notify(notify::SET, "srem", key);
        db.remove_if_empty(key);
        db.touch(key);
    }
    Ok(Reply::Int(removed))
}

fn smembers(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(match get_set_intset(&mut db, &args[1])? {
        Some((s, intset)) => set_reply(s.to_vec(), intset),
        None => Reply::Set(Vec::new()),
    })
}

fn sismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(Reply::Int(get_set(&mut db, &args[1])?.is_some_and(|s| s.contains(&args[2][..])).into()))
}

fn smismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    let s = get_set(&mut db, &args[1])?;
    Ok(Reply::Array(
        args[2..].iter().map(|m| Reply::Int(s.as_ref().is_some_and(|s| s.contains(&m[..])).into())).collect(),
    ))
}

fn scard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut db = ctx.db();
    Ok(Reply::Int(get_set(&mut db, &args[1])?.map_or(0, |s| s.len() as i64)))
}

fn spop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let count = if args.len() == 3 {
        Some(long_at_least(&args[2], 0, "ERR value is out of range, must be positive")? as u64)
    } else {
        None
    };
    let mut db = ctx.db();
    let Some((s, intset)) = get_set_intset(&mut db, key)? else {
        return Ok(if count.is_some() { Reply::Set(Vec::new()) } else { Reply::Nil });
    };
    let popped: Vec<Bytes> = match count {
        Some(0) => return Ok(Reply::Set(Vec::new())),
        Some(n) if n >= s.len() as u64 => {
            let all = ordered(s.to_vec(), intset);
            s.clear();
            all
        }
        Some(n) => {
            let mut idx = distinct_indices(s.len(), n as usize);
            idx.sort_unstable_by(|a, b| b.cmp(a));
            let mut out = Vec::with_capacity(idx.len());
            for i in idx {
                out.push(s.remove_index(i));
            }
            out
        }
        None => {
            let i = rand::rng().random_range(0..s.len());
            vec![s.remove_index(i)]
        }
    };
    db.notify(notify::SET, "spop", key);
    db.remove_if_empty(key);
    db.touch(key);
    Ok(match count {
        Some(_) => Reply::Set(popped.into_iter().map(Reply::Bulk).collect()),
        None => Reply::Bulk(popped.into_iter().next().expect("one")),
    })
}

fn srandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    if args.len() == 3 {
        let l = random_count(&args[2])?;
        let mut db = ctx.db();
        let Some((s, intset)) = get_set_intset(&mut db, &args[1])? else {
            return Ok(Reply::Array(Vec::new()));
        };
        let size = s.len();
        if l == 0 {
            return Ok(Reply::Array(Vec::new()));
        }
        let out: Vec<Bytes> = if l < 0 {
            let n = l.unsigned_abs();
            if n > MAX_RANDOM_REPLY {
                return Err(CmdError::ValueOutOfRange);
            }
            let mut rng = rand::rng();
            let at = s.indexed();
            (0..n).map(|_| at.bytes(rng.random_range(0..size))).collect()
        } else if l as u64 >= size as u64 {
            ordered(s.to_vec(), intset)
        } else {
            let at = s.indexed();
            distinct_indices(size, l as usize).into_iter().map(|i| at.bytes(i)).collect()
        };
        return Ok(Reply::bulks(out));
    }
    let mut db = ctx.db();
    let Some(s) = get_set(&mut db, &args[1])? else {
        return Ok(Reply::Nil);
    };
    let i = rand::rng().random_range(0..s.len());
    Ok(Reply::Bulk(Bytes::copy_from_slice(s.iter().nth(i).expect("index"))))
}

fn smove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (src, dst, m) = (&args[1], &args[2], &args[3]);
    let mut db = ctx.db();
    if !db.exists(src) {
        return Ok(Reply::Int(0));
    }
    get_set(&mut db, src)?;
    get_set(&mut db, dst)?;
    if src == dst {
        return Ok(Reply::Int(get_set(&mut db, src)?.is_some_and(|s| s.contains(&m[..])).into()));
    }
    let s = get_set(&mut db, src)?.expect("exists");
    if !s.remove(m) {
        return Ok(Reply::Int(0));
    }
    db.notify(notify::SET, "srem", src);
    db.remove_if_empty(src);
    db.touch(src);
    let limits = *db.limits();
    let (exists, before) = match db.entry(dst) {
        None => (false, None),
        Some(e) => (true, limits.sets_listpack.then(|| Enc72::of(e, &limits))),
    };
    if !exists {
        db.insert_new(dst, Value::Set(SetValue::new()));
    }
    let max = limits.intset_entries();
    let d = get_set(&mut db, dst)?.expect("exists");
    if d.insert(m) {
        if limits.sets_listpack {
            let was = before.unwrap_or_else(|| Enc72::created(m, 1, &limits));
            let enc = was.adding(m, d, &limits);
            if was == Enc72::Intset && enc == Enc72::Listpack {
                in_intset_order(d);
            }
            db.set_str_enc(dst, enc.mark());
        } else {
            let outgrown = d.len() > max || crate::num::parse_i64_strict(m).is_none();
            db.mark_outgrown(dst, outgrown);
        }
        db.touch(dst);
        db.notify(notify::SET, "sadd", dst);
    }
    Ok(Reply::Int(1))
}

/// The sets named by `keys` (missing keys are `None`), types checked in
/// order.
fn load_sets<'a>(db: &'a mut DbView<'_>, keys: &[Bytes]) -> Result<Vec<Option<&'a SetValue>>, CmdError> {
    for k in keys {
        get_set(db, k)?;
    }
    let raw = db.raw();
    Ok(keys
        .iter()
        .map(|k| match raw.peek(k).map(|e| &e.value) {
            Some(Value::Set(s)) => Some(s),
            _ => None,
        })
        .collect())
}

/// Result of a set operation and whether it should be answered in numeric
/// order (Redis iterates an intset there).
struct SetOpResult {
    members: Vec<Bytes>,
    numeric_order: bool,
}

fn inter(sets: &[Option<&SetValue>], limit: usize, max: usize) -> SetOpResult {
    if sets.iter().any(|s| s.is_none()) {
        return SetOpResult { members: Vec::new(), numeric_order: false };
    }
    let mut v: Vec<&SetValue> = sets.iter().map(|s| s.expect("checked")).collect();
    v.sort_by_key(|s| s.len());
    let first = v[0];
    let numeric = intset_like(first.len(), first.iter(), max);
    let at = first.indexed();
    let mut iter_order: Vec<usize> = (0..first.len()).collect();
    if numeric {
        iter_order.sort_by_key(|&i| parse_i64_strict(at.get(i)).expect("integer"));
    }
    let mut out = Vec::new();
    for i in iter_order {
        if v[1..].iter().all(|s| s.contains(at.get(i))) {
            out.push(at.bytes(i));
            if limit != 0 && out.len() >= limit {
                break;
            }
        }
    }
    SetOpResult { members: out, numeric_order: numeric }
}

fn union_or_diff(sets: &[Option<&SetValue>], diff: bool, max: usize) -> SetOpResult {
    let mut acc: IndexSet<Bytes, Hasher> = IndexSet::default();
    if diff {
        if let Some(first) = sets[0] {
            let at = first.indexed();
            for i in 0..first.len() {
                if !sets[1..].iter().flatten().any(|s| s.contains(at.get(i))) {
                    acc.insert(at.bytes(i));
                }
            }
        }
    } else {
        for s in sets.iter().flatten() {
            acc.extend(s.to_vec());
        }
    }
    let members: Vec<Bytes> = acc.into_iter().collect();
    let numeric = intset_like(members.len(), members.iter().map(|m| &m[..]), max);
    SetOpResult { members, numeric_order: numeric }
}

#[derive(Clone, Copy, PartialEq)]
enum SetOp {
    Inter,
    Union,
    Diff,
}

fn setop(ctx: &mut Ctx<'_>, keys: &[Bytes], dst: Option<&Bytes>, op: SetOp) -> CmdResult {
    let mut db = ctx.db();
    let max = db.limits().intset_entries();
    let sets = load_sets(&mut db, keys)?;
    let r = match op {
        SetOp::Inter => inter(&sets, 0, max),
        SetOp::Union => union_or_diff(&sets, false, max),
        SetOp::Diff => union_or_diff(&sets, true, max),
    };
    let mut r = r;
    if r.numeric_order {
        r.members.sort_by_key(|m| parse_i64_strict(m).expect("integer"));
    }
    let Some(dst) = dst else {
        return Ok(Reply::Set(r.members.into_iter().map(Reply::Bulk).collect()));
    };
    let n = r.members.len();
    if n == 0 {
        if db.remove(dst).is_some() {
            db.notify(notify::GENERIC, "del", dst);
        }
        return Ok(Reply::Int(0));
    }
    db.set(dst, Value::Set(SetValue::from_distinct(r.members)), false);
    let ev = match op {
        SetOp::Inter => "sinterstore",
        SetOp::Union => "sunionstore",
        SetOp::Diff => "sdiffstore",
    };
    db.notify(notify::SET, ev, dst);
    Ok(Reply::Int(n as i64))
}

fn sinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    setop(ctx, &args[1..], None, SetOp::Inter)
}

fn sunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    setop(ctx, &args[1..], None, SetOp::Union)
}

fn sdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    setop(ctx, &args[1..], None, SetOp::Diff)
}

// The *STORE forms read their sources as Redis's lookupKeyRead does.
fn sinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ctx.with_read_lookups(true, |ctx| setop(ctx, &args[2..], Some(&args[1]), SetOp::Inter))
}

fn sunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ctx.with_read_lookups(true, |ctx| setop(ctx, &args[2..], Some(&args[1]), SetOp::Union))
}

fn sdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ctx.with_read_lookups(true, |ctx| setop(ctx, &args[2..], Some(&args[1]), SetOp::Diff))
}

fn sintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let numkeys = long_at_least(&args[1], 1, "ERR numkeys should be greater than 0")? as u64;
    if numkeys > (args.len() - 2) as u64 {
        return Err(CmdError::custom("ERR Number of keys can't be greater than number of args"));
    }
    let numkeys = numkeys as usize;
    let mut limit = 0usize;
    let mut j = 2 + numkeys;
    while j < args.len() {
        if eq(&args[j], "limit") && j + 1 < args.len() {
            limit = long_at_least(&args[j + 1], 0, "ERR LIMIT can't be negative")? as usize;
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let mut db = ctx.db();
    let max = db.limits().intset_entries();
    let sets = load_sets(&mut db, &args[2..2 + numkeys])?;
    Ok(Reply::Int(inter(&sets, limit, max).members.len() as i64))
}

fn sscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let cur = cursor(&args[2])?;
    let opts = scan_opts(&args[3..], false)?;
    let mut db = ctx.db();
    let Some((s, intset)) = get_set_intset(&mut db, &args[1])? else {
        return Ok(empty_scan());
    };
    let (next, members): (u64, Vec<Bytes>) = if intset {
        (0, ordered(s.to_vec(), true))
    } else {
        let (next, range) = scan_step(s.len(), cur, opts.count);
        let at = s.indexed();
        (next, range.rev().map(|i| at.bytes(i)).collect())
    };
    let out: Vec<Reply> = members
        .into_iter()
        .filter(|m| opts.pattern.as_ref().is_none_or(|p| glob::matches(p, m, false)))
        .map(Reply::Bulk)
        .collect();
    Ok(Reply::Array(vec![Reply::Bulk(Bytes::from(next.to_string())), Reply::Array(out)]))
}
