//! set integration tests (over TCP with the redis crate).

use std::collections::HashSet;

use super::common;

#[test]
fn membership_and_encodings() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let n: i64 = redis::cmd("SADD").arg("i").arg(&[3, 1, 2, 3]).query(&mut c).unwrap();
    assert_eq!(n, 3);
    let members: Vec<i64> = redis::cmd("SMEMBERS").arg("i").query(&mut c).unwrap();
    assert_eq!(members, vec![1, 2, 3], "intsets answer in numeric order");
    let enc: String = redis::cmd("OBJECT").arg("ENCODING").arg("i").query(&mut c).unwrap();
    assert_eq!(enc, "intset");
    let _: i64 = redis::cmd("SADD").arg("i").arg("x").query(&mut c).unwrap();
    let enc: String = redis::cmd("OBJECT").arg("ENCODING").arg("i").query(&mut c).unwrap();
    assert_eq!(enc, "hashtable");
    let is: Vec<bool> = redis::cmd("SMISMEMBER").arg("i").arg("x").arg("y").query(&mut c).unwrap();
    assert_eq!(is, vec![true, false]);
    let n: i64 = redis::cmd("SREM").arg("i").arg(&["1", "2", "3", "x"]).query(&mut c).unwrap();
    assert_eq!(n, 4);
    let exists: i64 = redis::cmd("EXISTS").arg("i").query(&mut c).unwrap();
    assert_eq!(exists, 0);
}

#[test]
fn spop_and_srandmember_counts() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let items: Vec<String> = (0..100).map(|i| format!("m{i}")).collect();
    let _: i64 = redis::cmd("SADD").arg("s").arg(&items).query(&mut c).unwrap();
    let some: Vec<String> = redis::cmd("SRANDMEMBER").arg("s").arg(30).query(&mut c).unwrap();
    assert_eq!(some.iter().collect::<HashSet<_>>().len(), 30);
    let many: Vec<String> = redis::cmd("SRANDMEMBER").arg("s").arg(-500).query(&mut c).unwrap();
    assert_eq!(many.len(), 500);
    assert!(many.iter().all(|m| items.contains(m)));
    let popped: Vec<String> = redis::cmd("SPOP").arg("s").arg(40).query(&mut c).unwrap();
    assert_eq!(popped.iter().collect::<HashSet<_>>().len(), 40);
    let card: i64 = redis::cmd("SCARD").arg("s").query(&mut c).unwrap();
    assert_eq!(card, 60);
    for m in &popped {
        let is: bool = redis::cmd("SISMEMBER").arg("s").arg(m).query(&mut c).unwrap();
        assert!(!is, "{m} was popped");
    }
    let rest: Vec<String> = redis::cmd("SPOP").arg("s").arg(1000).query(&mut c).unwrap();
    assert_eq!(rest.len(), 60);
    let exists: i64 = redis::cmd("EXISTS").arg("s").query(&mut c).unwrap();
    assert_eq!(exists, 0);
}

#[test]
fn algebra_and_store() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let _: i64 = redis::cmd("SADD").arg("a").arg(&["x", "y", "z"]).query(&mut c).unwrap();
    let _: i64 = redis::cmd("SADD").arg("b").arg(&["y", "z", "w"]).query(&mut c).unwrap();
    let inter: HashSet<String> = redis::cmd("SINTER").arg("a").arg("b").query(&mut c).unwrap();
    assert_eq!(inter, ["y", "z"].iter().map(|s| s.to_string()).collect());
    let n: i64 = redis::cmd("SUNIONSTORE").arg("u").arg("a").arg("b").query(&mut c).unwrap();
    assert_eq!(n, 4);
    let n: i64 = redis::cmd("SDIFFSTORE").arg("d").arg("a").arg("b").query(&mut c).unwrap();
    assert_eq!(n, 1);
    let d: Vec<String> = redis::cmd("SMEMBERS").arg("d").query(&mut c).unwrap();
    assert_eq!(d, vec!["x"]);
    let card: i64 = redis::cmd("SINTERCARD").arg(2).arg("a").arg("b").arg("LIMIT").arg(1).query(&mut c).unwrap();
    assert_eq!(card, 1);
    let n: i64 = redis::cmd("SINTERSTORE").arg("d").arg("a").arg("missing").query(&mut c).unwrap();
    assert_eq!(n, 0);
    let exists: i64 = redis::cmd("EXISTS").arg("d").query(&mut c).unwrap();
    assert_eq!(exists, 0, "an empty result deletes the destination");
    let moved: i64 = redis::cmd("SMOVE").arg("a").arg("b").arg("x").query(&mut c).unwrap();
    assert_eq!(moved, 1);
    let card: i64 = redis::cmd("SCARD").arg("b").query(&mut c).unwrap();
    assert_eq!(card, 4);
}

#[test]
fn sscan_visits_every_member() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let items: Vec<String> = (0..2000).map(|i| format!("m{i}")).collect();
    let _: i64 = redis::cmd("SADD").arg("s").arg(&items).query(&mut c).unwrap();
    let mut seen = HashSet::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) =
            redis::cmd("SSCAN").arg("s").arg(cursor).arg("MATCH").arg("m1*").query(&mut c).unwrap();
        seen.extend(batch);
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    let want: HashSet<String> = items.into_iter().filter(|m| m.starts_with("m1")).collect();
    assert_eq!(seen, want);
}
