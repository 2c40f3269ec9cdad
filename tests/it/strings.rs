//! String commands through the real redis crate, including the simplest lock.

use super::common;

#[test]
fn set_nx_px_is_a_lock() {
    let srv = common::server();
    let mut a = common::conn(&srv);
    let mut b = common::conn(&srv);
    let got: Option<String> =
        redis::cmd("SET").arg("lock").arg("token-a").arg("NX").arg("PX").arg(30_000).query(&mut a).unwrap();
    assert_eq!(got.as_deref(), Some("OK"));
    let denied: Option<String> =
        redis::cmd("SET").arg("lock").arg("token-b").arg("NX").arg("PX").arg(30_000).query(&mut b).unwrap();
    assert_eq!(denied, None, "second acquirer gets nil");
    let pttl: i64 = redis::cmd("PTTL").arg("lock").query(&mut b).unwrap();
    assert!(pttl > 29_000 && pttl <= 30_000, "{pttl}");
    let holder: String = redis::cmd("GET").arg("lock").query(&mut b).unwrap();
    assert_eq!(holder, "token-a");
}

#[test]
fn lease_expires_and_lock_can_be_retaken() {
    let srv = common::server();
    let mut a = common::conn(&srv);
    let _: () = redis::cmd("SET").arg("lock").arg("a").arg("NX").arg("PX").arg(50).query(&mut a).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(80));
    let got: Option<String> =
        redis::cmd("SET").arg("lock").arg("b").arg("NX").arg("PX").arg(1000).query(&mut a).unwrap();
    assert_eq!(got.as_deref(), Some("OK"));
}

#[test]
fn counters_and_floats() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let n: i64 = redis::cmd("INCRBY").arg("n").arg(41).query(&mut c).unwrap();
    assert_eq!(n, 41);
    let n: i64 = redis::cmd("INCR").arg("n").query(&mut c).unwrap();
    assert_eq!(n, 42);
    let f: String = redis::cmd("INCRBYFLOAT").arg("f").arg("10.5").query(&mut c).unwrap();
    assert_eq!(f, "10.5");
    let f: String = redis::cmd("INCRBYFLOAT").arg("f").arg("0.1").query(&mut c).unwrap();
    assert_eq!(f, "10.6");
    let err = redis::cmd("INCR").arg("f").query::<i64>(&mut c).unwrap_err();
    assert_eq!(err.detail(), Some("value is not an integer or out of range"));
}

#[test]
fn append_and_setrange_grow_in_place() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    for i in 0..1000 {
        let _: i64 = redis::cmd("APPEND").arg("s").arg(format!("{:04}", i)).query(&mut c).unwrap();
    }
    let len: i64 = redis::cmd("STRLEN").arg("s").query(&mut c).unwrap();
    assert_eq!(len, 4000);
    let tail: String = redis::cmd("GETRANGE").arg("s").arg(-4).arg(-1).query(&mut c).unwrap();
    assert_eq!(tail, "0999");
    let n: i64 = redis::cmd("SETRANGE").arg("s").arg(0).arg("XY").query(&mut c).unwrap();
    assert_eq!(n, 4000);
    let head: String = redis::cmd("GETRANGE").arg("s").arg(0).arg(5).query(&mut c).unwrap();
    assert_eq!(head, "XY0000");
}
