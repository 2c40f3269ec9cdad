//! zset integration tests (over TCP with the redis crate).

use std::collections::{HashMap, HashSet};

use rand::{Rng, SeedableRng};

use super::common;

#[test]
fn ranges_match_a_sorted_model() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let mut model: HashMap<String, i64> = HashMap::new();
    for _ in 0..20 {
        let mut args: Vec<(i64, String)> = Vec::new();
        for _ in 0..100 {
            let m = format!("m{}", rng.random_range(0..1500));
            let s = rng.random_range(-300..300);
            args.push((s, m.clone()));
            model.insert(m, s);
        }
        let _: i64 = redis::cmd("ZADD").arg("z").arg(&args).query(&mut c).unwrap();
    }
    let mut sorted: Vec<(i64, String)> = model.iter().map(|(m, s)| (*s, m.clone())).collect();
    sorted.sort();
    let card: usize = redis::cmd("ZCARD").arg("z").query(&mut c).unwrap();
    assert_eq!(card, sorted.len());
    let enc: String = redis::cmd("OBJECT").arg("ENCODING").arg("z").query(&mut c).unwrap();
    assert_eq!(enc, "skiplist");
    let all: Vec<(String, i64)> = redis::cmd("ZRANGE").arg("z").arg(0).arg(-1).arg("WITHSCORES").query(&mut c).unwrap();
    assert_eq!(all, sorted.iter().map(|(s, m)| (m.clone(), *s)).collect::<Vec<_>>());
    for (rank, (_, m)) in sorted.iter().enumerate().step_by(37) {
        let r: usize = redis::cmd("ZRANK").arg("z").arg(m).query(&mut c).unwrap();
        assert_eq!(r, rank);
        let rr: usize = redis::cmd("ZREVRANK").arg("z").arg(m).query(&mut c).unwrap();
        assert_eq!(rr, sorted.len() - 1 - rank);
    }
    let page: Vec<String> =
        redis::cmd("ZRANGEBYSCORE").arg("z").arg("(-100").arg(100).arg("LIMIT").arg(10).arg(25).query(&mut c).unwrap();
    let want: Vec<String> =
        sorted.iter().filter(|(s, _)| *s > -100 && *s <= 100).skip(10).take(25).map(|(_, m)| m.clone()).collect();
    assert_eq!(page, want);
    let rev: Vec<String> =
        redis::cmd("ZRANGE").arg("z").arg(50).arg("(-50").arg("BYSCORE").arg("REV").query(&mut c).unwrap();
    let mut want: Vec<String> = sorted.iter().filter(|(s, _)| *s > -50 && *s <= 50).map(|(_, m)| m.clone()).collect();
    want.reverse();
    assert_eq!(rev, want);
    let count: usize = redis::cmd("ZCOUNT").arg("z").arg(0).arg("+inf").query(&mut c).unwrap();
    assert_eq!(count, sorted.iter().filter(|(s, _)| *s >= 0).count());
    let removed: usize = redis::cmd("ZREMRANGEBYRANK").arg("z").arg(0).arg(99).query(&mut c).unwrap();
    assert_eq!(removed, 100);
    let first: Vec<String> = redis::cmd("ZRANGE").arg("z").arg(0).arg(0).query(&mut c).unwrap();
    assert_eq!(first, vec![sorted[100].1.clone()]);
}

#[test]
fn zadd_flags_and_zincrby() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let n: i64 = redis::cmd("ZADD").arg("z").arg(1).arg("a").arg(2).arg("b").query(&mut c).unwrap();
    assert_eq!(n, 2);
    let n: i64 = redis::cmd("ZADD").arg("z").arg("GT").arg("CH").arg(0).arg("a").arg(5).arg("b").query(&mut c).unwrap();
    assert_eq!(n, 1, "GT only raises scores");
    let s: Option<f64> = redis::cmd("ZADD").arg("z").arg("NX").arg("INCR").arg(1).arg("a").query(&mut c).unwrap();
    assert_eq!(s, None);
    let s: f64 = redis::cmd("ZINCRBY").arg("z").arg(2.5).arg("a").query(&mut c).unwrap();
    assert_eq!(s, 3.5);
    let err = redis::cmd("ZADD").arg("z").arg("NX").arg("XX").arg(1).arg("a").query::<i64>(&mut c).unwrap_err();
    assert_eq!(err.detail(), Some("XX and NX options at the same time are not compatible"));
    let _: f64 = redis::cmd("ZINCRBY").arg("z").arg("inf").arg("a").query(&mut c).unwrap();
    let err = redis::cmd("ZINCRBY").arg("z").arg("-inf").arg("a").query::<f64>(&mut c).unwrap_err();
    assert_eq!(err.detail(), Some("resulting score is not a number (NaN)"));
    let score: String = redis::cmd("ZSCORE").arg("z").arg("a").query(&mut c).unwrap();
    assert_eq!(score, "inf");
}

#[test]
fn pops_and_store_operations() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let _: i64 = redis::cmd("ZADD").arg("a").arg(&[(1, "x"), (2, "y"), (3, "z")]).query(&mut c).unwrap();
    let _: i64 = redis::cmd("ZADD").arg("b").arg(&[(10, "y"), (20, "z"), (30, "w")]).query(&mut c).unwrap();
    let n: i64 =
        redis::cmd("ZUNIONSTORE").arg("u").arg(2).arg("a").arg("b").arg("WEIGHTS").arg(1).arg(2).query(&mut c).unwrap();
    assert_eq!(n, 4);
    let u: Vec<(String, f64)> = redis::cmd("ZRANGE").arg("u").arg(0).arg(-1).arg("WITHSCORES").query(&mut c).unwrap();
    assert_eq!(u, vec![("x".into(), 1.0), ("y".into(), 22.0), ("z".into(), 43.0), ("w".into(), 60.0)]);
    let n: i64 =
        redis::cmd("ZINTERSTORE").arg("i").arg(2).arg("a").arg("b").arg("AGGREGATE").arg("MIN").query(&mut c).unwrap();
    assert_eq!(n, 2);
    let low: Vec<(String, f64)> = redis::cmd("ZPOPMIN").arg("u").arg(2).query(&mut c).unwrap();
    assert_eq!(low, vec![("x".into(), 1.0), ("y".into(), 22.0)]);
    let (key, items): (String, Vec<(String, f64)>) =
        redis::cmd("ZMPOP").arg(2).arg("none").arg("u").arg("MAX").arg("COUNT").arg(10).query(&mut c).unwrap();
    assert_eq!(key, "u");
    assert_eq!(items, vec![("w".into(), 60.0), ("z".into(), 43.0)]);
    let exists: i64 = redis::cmd("EXISTS").arg("u").query(&mut c).unwrap();
    assert_eq!(exists, 0);
}

#[test]
fn zscan_and_zrandmember_on_a_large_set() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let items: Vec<(i64, String)> = (0..1000).map(|i| (i, format!("m{i}"))).collect();
    let _: i64 = redis::cmd("ZADD").arg("z").arg(&items).query(&mut c).unwrap();
    let mut seen = HashMap::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) =
            redis::cmd("ZSCAN").arg("z").arg(cursor).arg("COUNT").arg(100).query(&mut c).unwrap();
        for kv in batch.chunks(2) {
            seen.insert(kv[0].clone(), kv[1].clone());
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(seen.len(), 1000);
    assert_eq!(seen["m42"], "42");
    let some: Vec<String> = redis::cmd("ZRANDMEMBER").arg("z").arg(100).query(&mut c).unwrap();
    assert_eq!(some.iter().collect::<HashSet<_>>().len(), 100);
    let many: Vec<String> = redis::cmd("ZRANDMEMBER").arg("z").arg(-2000).query(&mut c).unwrap();
    assert_eq!(many.len(), 2000);
}

#[test]
fn lex_ranges() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let members: Vec<(i64, String)> =
        ["apple", "banana", "cherry", "date", "fig"].iter().map(|m| (0, m.to_string())).collect();
    let _: i64 = redis::cmd("ZADD").arg("l").arg(&members).query(&mut c).unwrap();
    let got: Vec<String> = redis::cmd("ZRANGEBYLEX").arg("l").arg("[b").arg("(d").query(&mut c).unwrap();
    assert_eq!(got, vec!["banana", "cherry"]);
    let n: i64 = redis::cmd("ZLEXCOUNT").arg("l").arg("(banana").arg("+").query(&mut c).unwrap();
    assert_eq!(n, 3);
    let err = redis::cmd("ZRANGEBYLEX").arg("l").arg("b").arg("+").query::<Vec<String>>(&mut c).unwrap_err();
    assert_eq!(err.detail(), Some("min or max not valid string range item"));
}
