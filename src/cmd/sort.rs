//! `SORT` and `SORT_RO`, following Redis's `sortCommandGeneric`: the same
//! option parsing, element loading (native order for `BY nosort`), weights
//! from `BY` patterns (`*` substitution, `->field` for hashes), numeric
//! scores with ties broken by the elements, `GET` patterns, and `STORE`.

use std::cmp::Ordering;

use bytes::Bytes;

use super::util::eq;
use super::{cmd, CommandSpec, Ctx};
use crate::db::{notify, Value};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("sort", sort, -2, "write denyoom movablekeys", 1, 1, 1, "@write @set @sortedset @list @slow @dangerous")
        .doc("Sort the elements in a list, set or sorted set", "1.0.0"),
    cmd("sort_ro", sort_ro, -2, "readonly movablekeys", 1, 1, 1, "@read @set @sortedset @list @slow @dangerous")
        .doc("Sort the elements in a list, set or sorted set. Read-only variant of SORT.", "7.0.0"),
];

fn sort(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ctx.with_read_lookups(true, |ctx| sort_generic(ctx, args, false))
}

fn sort_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    sort_generic(ctx, args, true)
}

/// Key positions of a SORT command line (`sortGetKeys`): the sorted key and
/// the last `STORE` destination.
pub fn sort_keys(argv: &[Bytes]) -> Vec<usize> {
    let mut keys = vec![1];
    let mut store = None;
    let mut i = 2;
    while i < argv.len() {
        if eq(&argv[i], "limit") {
            i += 2;
        } else if eq(&argv[i], "get") || eq(&argv[i], "by") {
            i += 1;
        } else if eq(&argv[i], "store") && i + 1 < argv.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    keys.extend(store);
    keys
}

/// One element being sorted: the element, its numeric score or the string
/// it is compared by (`ALPHA` with `BY`).
struct Item {
    obj: Bytes,
    score: f64,
    cmp: Option<Bytes>,
}

/// C `strcoll` in the C locale: bytes up to the first NUL.
fn c_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let cut = |s: &[u8]| s.iter().position(|&c| c == 0).map_or(s.len(), |n| n);
    a[..cut(a)].cmp(&b[..cut(b)])
}

/// `lookupKeyByPattern`: `#` is the element itself; otherwise the first
/// `*` is replaced by the element and the key (or `key->field` of a hash)
/// is read; anything else is missing.
fn lookup_pattern(ctx: &mut Ctx<'_>, pattern: &[u8], subst: &Bytes) -> Option<Bytes> {
    let pattern = &pattern[..pattern.iter().position(|&c| c == 0).unwrap_or(pattern.len())];
    if pattern == b"#" {
        return Some(subst.clone());
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    let rest = &pattern[star + 1..];
    let arrow = rest.windows(2).position(|w| w == b"->").filter(|&p| p + 2 < rest.len());
    let (post, field) = match arrow {
        Some(p) => (&rest[..p], Some(&rest[p + 2..])),
        None => (rest, None),
    };
    let mut key = pattern[..star].to_vec();
    key.extend_from_slice(subst);
    key.extend_from_slice(post);
    let mut db = ctx.db();
    match (db.get(&key), field) {
        (Some(Value::Str(s)), None) => Some(s.to_bytes()),
        (Some(Value::Hash(h)), Some(f)) => h.get(f).map(Bytes::copy_from_slice),
        _ => None,
    }
}

fn sort_generic(ctx: &mut Ctx<'_>, args: &[Bytes], readonly: bool) -> CmdResult {
    let (mut desc, mut alpha, mut dontsort) = (false, false, false);
    let (mut limit_start, mut limit_count) = (0i64, -1i64);
    let mut sortby: Option<&Bytes> = None;
    let mut store: Option<&Bytes> = None;
    let mut gets: Vec<&Bytes> = Vec::new();
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        if eq(&args[j], "asc") {
            desc = false;
        } else if eq(&args[j], "desc") {
            desc = true;
        } else if eq(&args[j], "alpha") {
            alpha = true;
        } else if eq(&args[j], "limit") && left >= 2 {
            limit_start = crate::num::parse_int(&args[j + 1])?;
            limit_count = crate::num::parse_int(&args[j + 2])?;
            j += 2;
        } else if !readonly && eq(&args[j], "store") && left >= 1 {
            store = Some(&args[j + 1]);
            j += 1;
        } else if eq(&args[j], "by") && left >= 1 {
            sortby = Some(&args[j + 1]);
            if !args[j + 1].contains(&b'*') {
                dontsort = true;
            }
            j += 1;
        } else if eq(&args[j], "get") && left >= 1 {
            gets.push(&args[j + 1]);
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    #[derive(PartialEq)]
    enum Kind {
        List,
        Set,
        ZSet,
    }
    // The elements are read straight from the stored value (no copy of it).
    let (kind, native, mut start, mut end, mut items) = {
        let mut db = ctx.db();
        let (kind, len) = match db.get(&args[1]) {
            None => (Kind::List, 0),
            Some(Value::List(l)) => (Kind::List, l.len()),
            Some(Value::Set(s)) => (Kind::Set, s.len()),
            Some(Value::ZSet(z)) => (Kind::ZSet, z.len()),
            Some(_) => return Err(CmdError::WrongType),
        };
        let len = len as i64;
        let mut start = limit_start.max(0).min(len);
        let limit_count = limit_count.max(-1).min(len);
        let mut end = if limit_count < 0 { len - 1 } else { start + limit_count - 1 };
        if start >= len {
            start = len - 1;
            end = len - 2;
        }
        if end >= len {
            end = len - 1;
        }
        let native = dontsort && kind != Kind::Set;
        let mut items: Vec<Item> = Vec::new();
        let item = |obj: &[u8]| Item { obj: Bytes::copy_from_slice(obj), score: 0.0, cmp: None };
        let n = (end - start + 1).max(0) as usize;
        match db.get(&args[1]) {
            // Native order, only the LIMIT range, walked from the chosen end.
            Some(Value::List(l)) if native => {
                if desc {
                    items.extend(l.iter().rev().skip(start as usize).take(n).map(item));
                } else {
                    items.extend(l.iter().skip(start as usize).take(n).map(item));
                }
            }
            Some(Value::ZSet(z)) if native && n > 0 => {
                if desc {
                    items.extend(z.iter_rev_from((len - 1 - start) as usize).take(n).map(|(m, _)| item(m)));
                } else {
                    items.extend(z.iter_from(start as usize).take(n).map(|(m, _)| item(m)));
                }
            }
            Some(Value::ZSet(_)) if native => {}
            Some(Value::List(l)) => items.extend(l.iter().map(item)),
            Some(Value::Set(s)) => items.extend(s.iter().map(item)),
            Some(Value::ZSet(z)) => items.extend(z.iter().map(|(m, _)| item(m))),
            _ => {}
        }
        (kind, native, start, end, items)
    };
    if kind == Kind::ZSet {
        // Redis converts a sorted set to a skip list to sort it, for good.
        ctx.db().mark_outgrown(&args[1], true);
    }
    // A set has no order of its own: stored or scripted results are sorted.
    if dontsort && kind == Kind::Set && (store.is_some() || ctx.client.is_script()) {
        dontsort = false;
        alpha = true;
        sortby = None;
    }
    if native {
        end -= start;
        start = 0;
    }
    let mut conversion_error = false;
    let score_of = if ctx.core.profile().at_least(8, 0, 0) { crate::num::sort_score_8 } else { crate::num::sort_score };
    if !dontsort {
        for it in &mut items {
            let by = match sortby {
                Some(p) => match lookup_pattern(ctx, p, &it.obj) {
                    Some(v) => v,
                    None => continue,
                },
                None => it.obj.clone(),
            };
            if alpha {
                if sortby.is_some() {
                    it.cmp = Some(by);
                }
            } else {
                match score_of(&by) {
                    Some(s) => it.score = s,
                    None => conversion_error = true,
                }
            }
        }
        let by_pattern = sortby.is_some();
        let storing = store.is_some();
        items.sort_by(|a, b| {
            let c = if !alpha {
                a.score.partial_cmp(&b.score).unwrap_or(Ordering::Equal).then_with(|| a.obj.cmp(&b.obj))
            } else if by_pattern {
                match (&a.cmp, &b.cmp) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) => {
                        if storing {
                            x.cmp(y)
                        } else {
                            c_cmp(x, y)
                        }
                    }
                }
            } else if storing {
                a.obj.cmp(&b.obj)
            } else {
                c_cmp(&a.obj, &b.obj)
            };
            if desc {
                c.reverse()
            } else {
                c
            }
        });
    }
    if conversion_error {
        return Err(CmdError::custom("ERR One or more scores can't be converted into double"));
    }
    let range: Vec<&Item> =
        if end >= start { items[start as usize..=end as usize].iter().collect() } else { Vec::new() };
    let mut out: Vec<Option<Bytes>> = Vec::new();
    for it in range {
        if gets.is_empty() {
            out.push(Some(it.obj.clone()));
        }
        for g in &gets {
            out.push(lookup_pattern(ctx, g, &it.obj));
        }
    }
    let Some(dst) = store else {
        return Ok(Reply::Array(out.into_iter().map(|v| v.map_or(Reply::Nil, Reply::Bulk)).collect()));
    };
    let n = out.len();
    let mut db = ctx.db();
    if n > 0 {
        let list = out.into_iter().map(Option::unwrap_or_default).collect();
        db.set(dst, Value::List(list), false);
        db.notify(notify::LIST, "sortstore", dst);
    } else if db.remove(dst).is_some() {
        db.notify(notify::GENERIC, "del", dst);
    }
    Ok(Reply::Int(n as i64))
}
