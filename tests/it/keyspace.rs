//! Keyspace and expiry over TCP.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::common;

#[test]
fn active_expiry_reclaims_keys_nobody_touches() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let mut pipe = redis::pipe();
    for i in 0..50_000 {
        pipe.cmd("SET").arg(format!("k{i}")).arg("v").arg("PX").arg(100).ignore();
    }
    pipe.cmd("SET").arg("keep").arg("v").ignore();
    let _: () = pipe.query(&mut c).unwrap();
    let start = Instant::now();
    loop {
        let info: String = redis::cmd("INFO").arg("keyspace").query(&mut c).unwrap();
        if info.contains("db0:keys=1,expires=0") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "keys not reclaimed: {info}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let stats: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    assert!(stats.contains("expired_keys:50000"), "{stats}");
}

#[test]
fn debug_set_active_expire_0_leaves_reclaiming_to_access() {
    let srv = common::debug_server();
    let mut c = common::conn(&srv);
    let _: () = redis::cmd("DEBUG").arg("SET-ACTIVE-EXPIRE").arg(0).query(&mut c).unwrap();
    let _: () = redis::cmd("SET").arg("k").arg("v").arg("PX").arg(20).query(&mut c).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let info: String = redis::cmd("INFO").arg("keyspace").query(&mut c).unwrap();
    assert!(info.contains("db0:keys=1"), "still stored: {info}");
    let v: Option<String> = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v, None, "but never visible");
    let info: String = redis::cmd("INFO").arg("keyspace").query(&mut c).unwrap();
    assert!(!info.contains("db0:"), "reclaimed on access: {info}");
}

#[test]
fn full_scan_returns_every_key_present_throughout() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let mut churn = common::conn(&srv);
    let mut pipe = redis::pipe();
    for i in 0..5000 {
        pipe.cmd("SET").arg(format!("stable:{i}")).arg(i).ignore();
        pipe.cmd("SET").arg(format!("churn:{i}")).arg(i).ignore();
    }
    let _: () = pipe.query(&mut c).unwrap();
    let mut seen = HashSet::new();
    let mut cursor: u64 = 0;
    let mut round = 0;
    loop {
        let (next, keys): (u64, Vec<String>) =
            redis::cmd("SCAN").arg(cursor).arg("COUNT").arg(100).query(&mut c).unwrap();
        seen.extend(keys);
        // Between steps another client deletes and adds keys.
        let _: () = redis::cmd("DEL").arg(format!("churn:{round}")).query(&mut churn).unwrap();
        let _: () = redis::cmd("SET").arg(format!("new:{round}")).arg(1).query(&mut churn).unwrap();
        round += 1;
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    for i in 0..5000 {
        assert!(seen.contains(&format!("stable:{i}")), "missed stable:{i}");
    }
    let (_, typed): (u64, Vec<String>) =
        redis::cmd("SCAN").arg(0).arg("COUNT").arg(100_000).arg("TYPE").arg("string").query(&mut c).unwrap();
    assert!(typed.len() >= 5000);
    let (_, matched): (u64, Vec<String>) =
        redis::cmd("SCAN").arg(0).arg("COUNT").arg(100_000).arg("MATCH").arg("stable:1*").query(&mut c).unwrap();
    assert_eq!(matched.len(), 1111);
}

#[test]
fn time_is_frozen_within_a_command() {
    // RENAME of a key moves its TTL exactly; the deadline doesn't drift.
    let srv = common::server();
    let mut c = common::conn(&srv);
    let _: () = redis::cmd("SET").arg("a").arg("1").query(&mut c).unwrap();
    let _: () = redis::cmd("PEXPIREAT").arg("a").arg(99_999_999_999_999u64).query(&mut c).unwrap();
    let _: () = redis::cmd("RENAME").arg("a").arg("b").query(&mut c).unwrap();
    let at: i64 = redis::cmd("PEXPIRETIME").arg("b").query(&mut c).unwrap();
    assert_eq!(at, 99_999_999_999_999);
}
