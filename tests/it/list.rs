//! list integration tests (over TCP with the redis crate).

use super::common;

#[test]
fn push_pop_and_ranges() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let n: i64 = redis::cmd("RPUSH").arg("l").arg(&["a", "b", "c"]).query(&mut c).unwrap();
    assert_eq!(n, 3);
    let n: i64 = redis::cmd("LPUSH").arg("l").arg(&["y", "x"]).query(&mut c).unwrap();
    assert_eq!(n, 5);
    let all: Vec<String> = redis::cmd("LRANGE").arg("l").arg(0).arg(-1).query(&mut c).unwrap();
    assert_eq!(all, vec!["x", "y", "a", "b", "c"]);
    let two: Vec<String> = redis::cmd("LPOP").arg("l").arg(2).query(&mut c).unwrap();
    assert_eq!(two, vec!["x", "y"]);
    let two: Vec<String> = redis::cmd("RPOP").arg("l").arg(2).query(&mut c).unwrap();
    assert_eq!(two, vec!["c", "b"], "RPOP with a count pops from the tail first");
    let none: Option<Vec<String>> = redis::cmd("LPOP").arg("missing").arg(2).query(&mut c).unwrap();
    assert_eq!(none, None);
    let last: String = redis::cmd("LPOP").arg("l").query(&mut c).unwrap();
    assert_eq!(last, "a");
    let exists: i64 = redis::cmd("EXISTS").arg("l").query(&mut c).unwrap();
    assert_eq!(exists, 0, "an emptied list is deleted");
}

#[test]
fn large_list_trim_index_and_rem() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let items: Vec<i64> = (0..10_000).collect();
    let _: i64 = redis::cmd("RPUSH").arg("l").arg(&items).query(&mut c).unwrap();
    let v: i64 = redis::cmd("LINDEX").arg("l").arg(-1).query(&mut c).unwrap();
    assert_eq!(v, 9_999);
    let _: () = redis::cmd("LTRIM").arg("l").arg(100).arg(-101).query(&mut c).unwrap();
    let len: i64 = redis::cmd("LLEN").arg("l").query(&mut c).unwrap();
    assert_eq!(len, 9_800);
    let first: i64 = redis::cmd("LINDEX").arg("l").arg(0).query(&mut c).unwrap();
    assert_eq!(first, 100);
    let pos: i64 = redis::cmd("LPOS").arg("l").arg(5_000).query(&mut c).unwrap();
    assert_eq!(pos, 4_900);
    let _: i64 = redis::cmd("RPUSH").arg("l").arg(&[7, 7, 7]).query(&mut c).unwrap();
    let removed: i64 = redis::cmd("LREM").arg("l").arg(-2).arg(7).query(&mut c).unwrap();
    assert_eq!(removed, 2);
    let all: Vec<i64> = redis::cmd("LPOS").arg("l").arg(7).arg("COUNT").arg(0).query(&mut c).unwrap();
    assert_eq!(all, vec![9_800], "the first pushed 7 (7 itself was trimmed away) is the one left");
    let enc: String = redis::cmd("OBJECT").arg("ENCODING").arg("l").query(&mut c).unwrap();
    assert_eq!(enc, "quicklist");
}

#[test]
fn lmove_rotates_and_moves() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let _: i64 = redis::cmd("RPUSH").arg("q").arg(&["1", "2", "3"]).query(&mut c).unwrap();
    let v: String = redis::cmd("LMOVE").arg("q").arg("q").arg("LEFT").arg("RIGHT").query(&mut c).unwrap();
    assert_eq!(v, "1");
    let all: Vec<String> = redis::cmd("LRANGE").arg("q").arg(0).arg(-1).query(&mut c).unwrap();
    assert_eq!(all, vec!["2", "3", "1"]);
    let v: String = redis::cmd("RPOPLPUSH").arg("q").arg("done").query(&mut c).unwrap();
    assert_eq!(v, "1");
    let done: Vec<String> = redis::cmd("LRANGE").arg("done").arg(0).arg(-1).query(&mut c).unwrap();
    assert_eq!(done, vec!["1"]);
    let none: Option<String> = redis::cmd("LMOVE").arg("nope").arg("q").arg("LEFT").arg("LEFT").query(&mut c).unwrap();
    assert_eq!(none, None);
    let _: () = redis::cmd("SET").arg("s").arg("x").query(&mut c).unwrap();
    let err = redis::cmd("LMOVE").arg("q").arg("s").arg("LEFT").arg("LEFT").query::<String>(&mut c).unwrap_err();
    assert_eq!(err.code(), Some("WRONGTYPE"));
    let len: i64 = redis::cmd("LLEN").arg("q").query(&mut c).unwrap();
    assert_eq!(len, 2, "nothing moved when the destination has the wrong type");
}

#[test]
fn lmpop_takes_from_the_first_non_empty_list() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let _: i64 = redis::cmd("RPUSH").arg("b").arg(&["1", "2", "3"]).query(&mut c).unwrap();
    let (key, items): (String, Vec<String>) =
        redis::cmd("LMPOP").arg(2).arg("a").arg("b").arg("RIGHT").arg("COUNT").arg(2).query(&mut c).unwrap();
    assert_eq!(key, "b");
    assert_eq!(items, vec!["3", "2"]);
    let none: Option<(String, Vec<String>)> = redis::cmd("LMPOP").arg(1).arg("a").arg("LEFT").query(&mut c).unwrap();
    assert!(none.is_none());
}
