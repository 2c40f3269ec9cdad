//! hash integration tests (over TCP with the redis crate).

use std::collections::{HashMap, HashSet};

use super::common;

#[test]
fn hset_hgetall_round_trip_and_counts() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let added: i64 = redis::cmd("HSET").arg("h").arg(&[("a", "1"), ("b", "2")]).query(&mut c).unwrap();
    assert_eq!(added, 2);
    let added: i64 = redis::cmd("HSET").arg("h").arg("a").arg("10").arg("c").arg("3").query(&mut c).unwrap();
    assert_eq!(added, 1, "only new fields count");
    let all: HashMap<String, String> = redis::cmd("HGETALL").arg("h").query(&mut c).unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all["a"], "10");
    let keys: Vec<String> = redis::cmd("HKEYS").arg("h").query(&mut c).unwrap();
    assert_eq!(keys, vec!["a", "b", "c"], "small hashes keep insertion order");
    let got: Vec<Option<String>> = redis::cmd("HMGET").arg("h").arg("a").arg("zz").query(&mut c).unwrap();
    assert_eq!(got, vec![Some("10".to_string()), None]);
    let enc: String = redis::cmd("OBJECT").arg("ENCODING").arg("h").query(&mut c).unwrap();
    assert_eq!(enc, "listpack");
}

#[test]
fn deleting_the_last_field_deletes_the_key_and_its_ttl() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let _: i64 = redis::cmd("HSET").arg("h").arg("f").arg("v").query(&mut c).unwrap();
    let _: i64 = redis::cmd("EXPIRE").arg("h").arg(100).query(&mut c).unwrap();
    let n: i64 = redis::cmd("HDEL").arg("h").arg("f").arg("g").query(&mut c).unwrap();
    assert_eq!(n, 1);
    let exists: i64 = redis::cmd("EXISTS").arg("h").query(&mut c).unwrap();
    assert_eq!(exists, 0);
    let _: i64 = redis::cmd("HSET").arg("h").arg("f").arg("v").query(&mut c).unwrap();
    let ttl: i64 = redis::cmd("TTL").arg("h").query(&mut c).unwrap();
    assert_eq!(ttl, -1, "a recreated hash has no TTL");
}

#[test]
fn hincrby_and_hincrbyfloat_errors_and_values() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let n: i64 = redis::cmd("HINCRBY").arg("h").arg("n").arg(5).query(&mut c).unwrap();
    assert_eq!(n, 5);
    let f: String = redis::cmd("HINCRBYFLOAT").arg("h").arg("f").arg("10.5").query(&mut c).unwrap();
    assert_eq!(f, "10.5");
    let f: String = redis::cmd("HINCRBYFLOAT").arg("h").arg("f").arg("0.1").query(&mut c).unwrap();
    assert_eq!(f, "10.6");
    let err = redis::cmd("HINCRBY").arg("h").arg("f").arg(1).query::<i64>(&mut c).unwrap_err();
    assert_eq!(err.detail(), Some("hash value is not an integer"));
    let _: i64 = redis::cmd("HSET").arg("h").arg("s").arg("abc").query(&mut c).unwrap();
    let err = redis::cmd("HINCRBYFLOAT").arg("h").arg("s").arg(1).query::<String>(&mut c).unwrap_err();
    assert_eq!(err.detail(), Some("hash value is not a float"));
    let _: i64 = redis::cmd("HSET").arg("h").arg("max").arg(i64::MAX).query(&mut c).unwrap();
    let err = redis::cmd("HINCRBY").arg("h").arg("max").arg(1).query::<i64>(&mut c).unwrap_err();
    assert_eq!(err.detail(), Some("increment or decrement would overflow"));
}

#[test]
fn hscan_visits_every_field_of_a_large_hash() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let fields: Vec<(String, String)> = (0..1000).map(|i| (format!("f{i}"), format!("v{i}"))).collect();
    let _: i64 = redis::cmd("HSET").arg("big").arg(&fields).query(&mut c).unwrap();
    let enc: String = redis::cmd("OBJECT").arg("ENCODING").arg("big").query(&mut c).unwrap();
    assert_eq!(enc, "hashtable");
    let mut seen = HashMap::new();
    let mut cursor = 0u64;
    let mut rounds = 0;
    loop {
        let (next, items): (u64, Vec<String>) =
            redis::cmd("HSCAN").arg("big").arg(cursor).arg("COUNT").arg(50).query(&mut c).unwrap();
        for kv in items.chunks(2) {
            seen.insert(kv[0].clone(), kv[1].clone());
        }
        // Delete a few fields already returned; the rest must still all come back.
        if rounds < 5 {
            let _: i64 = redis::cmd("HDEL").arg("big").arg(format!("f{rounds}")).query(&mut c).unwrap();
        }
        rounds += 1;
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    for i in 5..1000 {
        assert_eq!(seen.get(&format!("f{i}")).map(String::as_str), Some(format!("v{i}").as_str()));
    }
    assert!(rounds >= 20, "COUNT 50 over 1000 fields takes many rounds ({rounds})");
}

#[test]
fn hrandfield_counts() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let fields: Vec<(String, i64)> = (0..20).map(|i| (format!("f{i}"), i)).collect();
    let _: i64 = redis::cmd("HSET").arg("h").arg(&fields).query(&mut c).unwrap();
    let some: Vec<String> = redis::cmd("HRANDFIELD").arg("h").arg(7).query(&mut c).unwrap();
    assert_eq!(some.len(), 7);
    assert_eq!(some.iter().collect::<HashSet<_>>().len(), 7, "positive count: distinct fields");
    let many: Vec<String> = redis::cmd("HRANDFIELD").arg("h").arg(-100).query(&mut c).unwrap();
    assert_eq!(many.len(), 100, "negative count: repeats allowed");
    assert!(many.iter().all(|f| f.starts_with('f')));
    let pairs: Vec<String> = redis::cmd("HRANDFIELD").arg("h").arg(3).arg("WITHVALUES").query(&mut c).unwrap();
    assert_eq!(pairs.len(), 6);
    for kv in pairs.chunks(2) {
        assert_eq!(kv[0], format!("f{}", kv[1]));
    }
    let all: Vec<String> = redis::cmd("HRANDFIELD").arg("h").arg(50).query(&mut c).unwrap();
    assert_eq!(all.len(), 20);
}

#[test]
fn wrong_type_is_reported() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let _: () = redis::cmd("SET").arg("s").arg("x").query(&mut c).unwrap();
    let err = redis::cmd("HGET").arg("s").arg("f").query::<Option<String>>(&mut c).unwrap_err();
    assert_eq!(err.code(), Some("WRONGTYPE"));
}
