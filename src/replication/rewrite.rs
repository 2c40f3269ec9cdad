//! What Redis 7.0 replicates for a command that changed the dataset: most
//! commands go as they came (the client's own spelling); those whose effect
//! depends on when or by chance they ran are rewritten into a deterministic
//! form, as Redis's command implementations rewrite their `argv`:
//!
//! | command | replicated as |
//! |---|---|
//! | `EXPIRE`/`PEXPIRE`/`EXPIREAT` | `PEXPIREAT key ms [flag]` (`DEL key` if the time had passed) |
//! | `SET … EX/PX/EXAT`, `SETEX`, `PSETEX` | `SET key value PXAT ms` |
//! | `SET … GET` | without `GET` |
//! | `DELEX` (8.4) | `DEL key` |
//! | `MSETEX … EX/PX` (8.4) | the same with `PXAT ms` in their place |
//! | `GETEX … EX/PX/EXAT/PXAT`, `GETEX … PERSIST` | `PEXPIREAT key ms`, `PERSIST key` |
//! | `GETDEL` | `DEL key` |
//! | `INCRBYFLOAT` | `SET key value KEEPTTL` |
//! | `HINCRBYFLOAT` | `HSET key field value` |
//! | `SPOP` | `SREM key member…` (`DEL key` when it emptied the set) |
//! | `BLPOP`/`BRPOP`, `BRPOPLPUSH`, `BLMOVE`, `BZPOPMIN`/`BZPOPMAX` | their non-blocking forms |
//! | `HEXPIRE`/`HPEXPIRE`/`HEXPIREAT`/`HPEXPIREAT` (7.4) | `HPEXPIREAT key ms [cond] FIELDS n` the fields it set; `HDEL key field` for each it deleted |
//! | `HGETEX … EX/PX/EXAT/PXAT`, `… PERSIST` (8.0) | `HPEXPIREAT key ms FIELDS …`, `HPERSIST key FIELDS …`; `HDEL key field` each for a time passed |
//! | `HSETEX … EX/PX/EXAT/PXAT` (8.0) | `HSETEX key … PXAT ms …` (`HDEL key field` each for a time passed) |
//! | `HGETDEL` (8.0) | `HDEL key field…` |
//! | `XREADGROUP … STREAMS k… > …` | per entry delivered: `XCLAIM key group consumer 0 id TIME ms RETRYCOUNT 1 FORCE JUSTID LASTID id` |
//!
//! (`XREADGROUP` with `NOACK`, or reading a consumer's history, still goes
//! as it came: Redis's forms need the group's read counter and each entry's
//! delivery count, which the reply does not carry.)
//!
//! Scripts and `EXEC` are not replicated themselves: the commands they run
//! are (see `cmd::replication`).

use bytes::Bytes;

use crate::protocol::Reply;

fn b(s: &'static str) -> Bytes {
    Bytes::from_static(s.as_bytes())
}

fn eq(a: &[u8], s: &str) -> bool {
    a.eq_ignore_ascii_case(s.as_bytes())
}

fn ms(n: u64) -> Bytes {
    Bytes::from(n.to_string())
}

/// What the keyspace holds for a key after the command: `None` if absent,
/// else its deadline (unix ms) if it has one.
pub type Lookup<'a> = &'a dyn Fn(&[u8]) -> Option<Option<u64>>;

/// The commands to replicate for `name` (the table row's lower-case name)
/// run as `argv` with `reply`, at `now_ms` (the command's time).
pub fn replicated(name: &str, argv: &[Bytes], reply: &Reply, key: Lookup<'_>, now_ms: u64) -> Vec<Vec<Bytes>> {
    let k = || argv[1].clone();
    let del = || vec![b("DEL"), argv[1].clone()];
    let bulk = |r: &Reply| match r {
        Reply::Bulk(v) => Some(v.clone()),
        Reply::InlineBulk(_) | Reply::SharedBulk(_) => r.as_bulk().map(Bytes::copy_from_slice),
        _ => None,
    };
    let one = |v: Vec<Bytes>| vec![v];
    match name {
        "expire" | "pexpire" | "expireat" | "pexpireat" => match key(&argv[1]) {
            None => one(del()),
            Some(_) if name == "pexpireat" => one(argv.to_vec()),
            Some(deadline) => {
                let mut v = vec![b("PEXPIREAT"), k(), ms(deadline.unwrap_or(0))];
                v.extend_from_slice(&argv[3..]);
                one(v)
            }
        },
        "set" => {
            let mut relative = false;
            let mut get = None;
            let mut i = 3;
            while i < argv.len() {
                let a = &argv[i];
                if eq(a, "ex") || eq(a, "px") || eq(a, "exat") {
                    relative = true;
                    i += 1;
                } else if eq(a, "pxat") || ["ifeq", "ifne", "ifdeq", "ifdne"].iter().any(|c| eq(a, c)) {
                    // A condition's value is not an option (`SET k v IFEQ ex`).
                    i += 1;
                } else if eq(a, "get") {
                    get = Some(i);
                }
                i += 1;
            }
            match (relative, key(&argv[1])) {
                (true, Some(Some(d))) => one(vec![b("SET"), k(), argv[2].clone(), b("PXAT"), ms(d)]),
                _ => match get {
                    Some(g) => one(argv.iter().enumerate().filter(|(i, _)| *i != g).map(|(_, a)| a.clone()).collect()),
                    None => one(argv.to_vec()),
                },
            }
        }
        "setex" | "psetex" => match key(&argv[1]) {
            Some(Some(d)) => one(vec![b("SET"), k(), argv[3].clone(), b("PXAT"), ms(d)]),
            _ => one(argv.to_vec()),
        },
        "getex" => match key(&argv[1]) {
            None => one(del()),
            Some(_) if argv.get(2).is_some_and(|a| eq(a, "persist")) => one(vec![b("PERSIST"), k()]),
            Some(Some(d)) => one(vec![b("PEXPIREAT"), k(), ms(d)]),
            Some(None) => Vec::new(),
        },
        "getdel" | "delex" => one(del()),
        "msetex" => one(msetex(argv, key)),
        "incrbyfloat" => match bulk(reply) {
            Some(v) => one(vec![b("SET"), k(), v, b("KEEPTTL")]),
            None => one(argv.to_vec()),
        },
        "hincrbyfloat" => match bulk(reply) {
            Some(v) => one(vec![b("HSET"), k(), argv[2].clone(), v]),
            None => one(argv.to_vec()),
        },
        "spop" => {
            let members: Vec<Bytes> = match reply {
                Reply::Array(a) | Reply::Set(a) => a.iter().filter_map(bulk).collect(),
                one => bulk(one).into_iter().collect(),
            };
            if argv.len() > 2 && key(&argv[1]).is_none() {
                one(del())
            } else if members.is_empty() {
                Vec::new()
            } else {
                let mut v = vec![b("SREM"), k()];
                v.extend(members);
                one(v)
            }
        }
        "blpop" | "brpop" | "bzpopmin" | "bzpopmax" => {
            let popped = match reply {
                Reply::Array(a) => a.first().and_then(bulk),
                _ => None,
            };
            let cmd = match name {
                "blpop" => "LPOP",
                "brpop" => "RPOP",
                "bzpopmin" => "ZPOPMIN",
                _ => "ZPOPMAX",
            };
            popped.map(|key| one(vec![b(cmd), key])).unwrap_or_default()
        }
        "brpoplpush" => one(vec![b("RPOPLPUSH"), argv[1].clone(), argv[2].clone()]),
        "blmove" => one(vec![b("LMOVE"), argv[1].clone(), argv[2].clone(), argv[3].clone(), argv[4].clone()]),
        "xreadgroup" => xreadgroup(argv, reply, now_ms).unwrap_or_else(|| one(argv.to_vec())),
        "hexpire" | "hpexpire" | "hexpireat" | "hpexpireat" => hexpire(name, argv, reply, now_ms),
        "hgetex" => hgetex(argv, reply, now_ms),
        "hsetex" => hsetex(argv, now_ms).unwrap_or_else(|| one(argv.to_vec())),
        "hgetdel" => {
            let fields = argv.iter().position(|a| eq(a, "fields")).map_or(&argv[0..0], |i| &argv[i + 2..]);
            let mut v = vec![b("HDEL"), k()];
            v.extend_from_slice(fields);
            one(v)
        }
        _ => one(argv.to_vec()),
    }
}

/// `MSETEX` as Redis 8.4 rewrites it: a relative `EX`/`PX` becomes `PXAT`
/// and the deadline the keys got, in place; the rest as it came.
fn msetex(argv: &[Bytes], key: Lookup<'_>) -> Vec<Bytes> {
    let mut v = argv.to_vec();
    let numkeys = std::str::from_utf8(&argv[1]).ok().and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
    let mut i = 2 + 2 * numkeys;
    while i + 1 < v.len() {
        if eq(&v[i], "ex") || eq(&v[i], "px") {
            if let Some(Some(d)) = key(&argv[2]) {
                v[i] = b("PXAT");
                v[i + 1] = ms(d);
            }
            break;
        }
        i += 1;
    }
    v
}

/// `XREADGROUP GROUP g c … STREAMS k… >…` as Redis's `streamPropagateXCLAIM`
/// writes each new delivery; `None` for the forms that go as they came.
fn xreadgroup(argv: &[Bytes], reply: &Reply, now_ms: u64) -> Option<Vec<Vec<Bytes>>> {
    let (mut group, mut consumer, mut streams) = (None, None, None);
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if eq(a, "group") && i + 2 < argv.len() {
            group = Some(argv[i + 1].clone());
            consumer = Some(argv[i + 2].clone());
            i += 3;
        } else if eq(a, "count") || eq(a, "block") {
            i += 2;
        } else if eq(a, "noack") {
            return None;
        } else if eq(a, "streams") {
            streams = Some(i + 1);
            break;
        } else {
            return None;
        }
    }
    let (group, consumer, start) = (group?, consumer?, streams?);
    let rest = &argv[start..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) || rest[rest.len() / 2..].iter().any(|id| id.as_ref() != b">") {
        return None;
    }
    let per_key: Vec<(&Reply, &Reply)> = match reply {
        Reply::Array(items) => items
            .iter()
            .filter_map(|kv| if let Reply::Array(p) = kv { Some((p.first()?, p.get(1)?)) } else { None })
            .collect(),
        Reply::Map(pairs) => pairs.iter().map(|(k, v)| (k, v)).collect(),
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for (key, entries) in per_key {
        let Reply::Bulk(key) = key else { return None };
        let Reply::Array(entries) = entries else { return None };
        for e in entries {
            let Reply::Array(e) = e else { return None };
            let Some(Reply::Bulk(id)) = e.first() else { return None };
            out.push(vec![
                b("XCLAIM"),
                key.clone(),
                group.clone(),
                consumer.clone(),
                b("0"),
                id.clone(),
                b("TIME"),
                ms(now_ms),
                b("RETRYCOUNT"),
                b("1"),
                b("FORCE"),
                b("JUSTID"),
                b("LASTID"),
                id.clone(),
            ]);
        }
    }
    Some(out)
}

/// The absolute deadline in ms of a field-expiry time argument (`scale`
/// 1000 for seconds; relative to `now_ms` unless `at`), as the command
/// computed it (it succeeded, so the argument is valid).
fn field_deadline(arg: &[u8], scale: u64, relative: bool, now_ms: u64) -> u64 {
    let t: u64 = std::str::from_utf8(arg).ok().and_then(|t| t.parse().ok()).unwrap_or(0);
    t * scale + if relative { now_ms } else { 0 }
}

/// The expiry option word of `HGETEX`/`HSETEX`: (scale to ms, relative).
fn field_option(a: &[u8]) -> Option<(u64, bool)> {
    [("ex", 1000, true), ("px", 1, true), ("exat", 1000, false), ("pxat", 1, false)]
        .into_iter()
        .find(|(w, _, _)| eq(a, w))
        .map(|(_, scale, rel)| (scale, rel))
}

/// `HEXPIRE` & co: the fields set (reply 1) under one absolute deadline,
/// the fields deleted (reply 2, a time passed) as `HDEL`.
fn hexpire(name: &str, argv: &[Bytes], reply: &Reply, now_ms: u64) -> Vec<Vec<Bytes>> {
    let (scale, relative) = match name {
        "hexpire" => (1000, true),
        "hpexpire" => (1, true),
        "hexpireat" => (1000, false),
        _ => (1, false),
    };
    let at = field_deadline(&argv[2], scale, relative, now_ms);
    let Some(f) = argv.iter().skip(3).position(|a| eq(a, "fields")).map(|i| i + 3) else { return Vec::new() };
    let codes: Vec<i64> = match reply {
        Reply::Array(r) => r.iter().map(|c| if let Reply::Int(c) = c { *c } else { 0 }).collect(),
        _ => return Vec::new(),
    };
    let pick = |code: i64| -> Vec<Bytes> {
        argv[f + 2..].iter().zip(&codes).filter(|(_, &c)| c == code).map(|(a, _)| a.clone()).collect()
    };
    let mut out = Vec::new();
    let set = pick(1);
    if !set.is_empty() {
        let mut v = vec![b("HPEXPIREAT"), argv[1].clone(), ms(at)];
        v.extend_from_slice(&argv[3..f]);
        v.push(argv[f].clone());
        v.push(Bytes::from(set.len().to_string()));
        v.extend(set);
        out.push(v);
    }
    out.extend(pick(2).into_iter().map(|f| vec![b("HDEL"), argv[1].clone(), f]));
    out
}

/// `HGETEX`: its new deadline or `PERSIST` for the fields it names, or an
/// `HDEL` of those it returned when the time had passed.
fn hgetex(argv: &[Bytes], reply: &Reply, now_ms: u64) -> Vec<Vec<Bytes>> {
    let Some(f) = argv.iter().skip(2).position(|a| eq(a, "fields")).map(|i| i + 2) else { return Vec::new() };
    let fields = &argv[f..];
    if eq(&argv[2], "persist") {
        let mut v = vec![b("HPERSIST"), argv[1].clone()];
        v.extend_from_slice(fields);
        return vec![v];
    }
    let Some((scale, relative)) = field_option(&argv[2]) else { return Vec::new() };
    let at = field_deadline(&argv[3], scale, relative, now_ms);
    if at <= now_ms {
        let Reply::Array(values) = reply else { return Vec::new() };
        return fields[2..]
            .iter()
            .zip(values)
            .filter(|(_, r)| !matches!(r, Reply::Nil))
            .map(|(f, _)| vec![b("HDEL"), argv[1].clone(), f.clone()])
            .collect();
    }
    let mut v = vec![b("HPEXPIREAT"), argv[1].clone(), ms(at)];
    v.extend_from_slice(fields);
    vec![v]
}

/// `HSETEX` with a relative or second time: the same with `PXAT ms`; an
/// `HDEL` of its fields when the time had passed. `None`: as it came.
fn hsetex(argv: &[Bytes], now_ms: u64) -> Option<Vec<Vec<Bytes>>> {
    let f = argv.iter().skip(2).position(|a| eq(a, "fields")).map(|i| i + 2)?;
    let o = (2..f).find(|&i| field_option(&argv[i]).is_some())?;
    let (scale, relative) = field_option(&argv[o])?;
    let at = field_deadline(argv.get(o + 1)?, scale, relative, now_ms);
    if at <= now_ms {
        return Some(argv[f + 2..].chunks(2).map(|fv| vec![b("HDEL"), argv[1].clone(), fv[0].clone()]).collect());
    }
    let mut v = argv[..o].to_vec();
    v.extend([b("PXAT"), ms(at)]);
    v.extend_from_slice(&argv[o + 2..]);
    Some(vec![v])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<Bytes> {
        s.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect()
    }

    #[test]
    fn relative_expiries_become_absolute() {
        let at = |_: &[u8]| Some(Some(5000));
        assert_eq!(
            replicated("pexpire", &v(&["pexpire", "k", "10"]), &Reply::Int(1), &at, 0),
            vec![v(&["PEXPIREAT", "k", "5000"])]
        );
        assert_eq!(
            replicated("set", &v(&["SET", "k", "x", "NX", "PX", "10"]), &Reply::ok(), &at, 0),
            vec![v(&["SET", "k", "x", "PXAT", "5000"])]
        );
        let gone = |_: &[u8]| None;
        assert_eq!(replicated("expire", &v(&["expire", "k", "-1"]), &Reply::Int(1), &gone, 0), vec![v(&["DEL", "k"])]);
        let plain = |_: &[u8]| Some(None);
        assert_eq!(
            replicated("set", &v(&["set", "k", "x", "GET"]), &Reply::Nil, &plain, 0),
            vec![v(&["set", "k", "x"])]
        );
    }

    #[test]
    fn redis_8_4_compare_and_set_family() {
        let at = |_: &[u8]| Some(Some(5000));
        let plain = |_: &[u8]| Some(None);
        let gone = |_: &[u8]| None;
        assert_eq!(
            replicated("delex", &v(&["delex", "k", "IFEQ", "t"]), &Reply::Int(1), &gone, 0),
            vec![v(&["DEL", "k"])]
        );
        // A condition's value is not read as an option.
        assert_eq!(
            replicated("set", &v(&["set", "k", "x", "IFEQ", "ex"]), &Reply::ok(), &plain, 0),
            vec![v(&["set", "k", "x", "IFEQ", "ex"])]
        );
        assert_eq!(
            replicated("set", &v(&["set", "k", "x", "IFDNE", "get", "GET"]), &Reply::Nil, &plain, 0),
            vec![v(&["set", "k", "x", "IFDNE", "get"])]
        );
        assert_eq!(
            replicated("set", &v(&["set", "k", "x", "IFNE", "y", "EX", "5"]), &Reply::ok(), &at, 0),
            vec![v(&["SET", "k", "x", "PXAT", "5000"])]
        );
        assert_eq!(
            replicated("msetex", &v(&["msetex", "2", "a", "px", "b", "2", "NX", "px", "10"]), &Reply::Int(1), &at, 0),
            vec![v(&["msetex", "2", "a", "px", "b", "2", "NX", "PXAT", "5000"])]
        );
        let absolute = v(&["MSETEX", "1", "a", "1", "EXAT", "10", "XX"]);
        assert_eq!(replicated("msetex", &absolute, &Reply::Int(1), &at, 0), vec![absolute.clone()]);
    }

    /// Field expiry commands go with absolute times and only the fields
    /// they changed (redis 8.2.3's stream).
    #[test]
    fn field_expiry_commands_become_absolute() {
        let none: Lookup<'_> = &|_| None;
        let codes = |c: &[i64]| Reply::Array(c.iter().map(|&c| Reply::Int(c)).collect());
        let argv = v(&["hexpire", "h", "100", "NX", "fields", "3", "a", "b", "zz"]);
        assert_eq!(
            replicated("hexpire", &argv, &codes(&[1, 0, -2]), none, 1_000),
            vec![v(&["HPEXPIREAT", "h", "101000", "NX", "fields", "1", "a"])]
        );
        let argv = v(&["hpexpireat", "h", "1", "FIELDS", "3", "a", "b", "c"]);
        assert_eq!(
            replicated("hpexpireat", &argv, &codes(&[2, -2, 2]), none, 1_000),
            vec![v(&["HDEL", "h", "a"]), v(&["HDEL", "h", "c"])]
        );
        let argv = v(&["hgetex", "h", "EX", "10", "FIELDS", "2", "a", "zz"]);
        let values = Reply::Array(vec![Reply::Bulk(Bytes::from("1")), Reply::Nil]);
        assert_eq!(
            replicated("hgetex", &argv, &values, none, 1_000),
            vec![v(&["HPEXPIREAT", "h", "11000", "FIELDS", "2", "a", "zz"])]
        );
        let argv = v(&["hgetex", "h", "EXAT", "0", "FIELDS", "2", "a", "zz"]);
        assert_eq!(replicated("hgetex", &argv, &values, none, 1_000), vec![v(&["HDEL", "h", "a"])]);
        let argv = v(&["hgetex", "h", "persist", "fields", "1", "a"]);
        assert_eq!(replicated("hgetex", &argv, &values, none, 1_000), vec![v(&["HPERSIST", "h", "fields", "1", "a"])]);
        let argv = v(&["hsetex", "h", "FNX", "ex", "10", "fields", "1", "a", "1"]);
        assert_eq!(
            replicated("hsetex", &argv, &Reply::Int(1), none, 1_000),
            vec![v(&["hsetex", "h", "FNX", "PXAT", "11000", "fields", "1", "a", "1"])]
        );
        let argv = v(&["hgetdel", "h", "fields", "2", "a", "zz"]);
        assert_eq!(replicated("hgetdel", &argv, &values, none, 1_000), vec![v(&["HDEL", "h", "a", "zz"])]);
    }

    #[test]
    fn xreadgroup_becomes_xclaims() {
        let any = |_: &[u8]| Some(None);
        let entry = |id: &str| Reply::Array(vec![Reply::bulk_str(id), Reply::Array(vec![Reply::bulk_str("f")])]);
        let reply = Reply::Array(vec![Reply::Array(vec![
            Reply::bulk_str("s"),
            Reply::Array(vec![entry("1-1"), entry("2-1")]),
        ])]);
        let argv = v(&["XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">"]);
        let claim = |id: &str| {
            v(&["XCLAIM", "s", "g", "c", "0", id, "TIME", "77", "RETRYCOUNT", "1", "FORCE", "JUSTID", "LASTID", id])
        };
        assert_eq!(replicated("xreadgroup", &argv, &reply, &any, 77), vec![claim("1-1"), claim("2-1")]);
        let noack = v(&["XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">"]);
        assert_eq!(replicated("xreadgroup", &noack, &reply, &any, 77), vec![noack.clone()]);
        let history = v(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"]);
        assert_eq!(replicated("xreadgroup", &history, &reply, &any, 77), vec![history.clone()]);
    }
}
