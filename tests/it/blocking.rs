//! blocking integration tests (over TCP with the redis crate).

use std::io::Write;
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use super::common::resp::{RawConn, Value};
use super::common::{self, blocked_clients, wait_blocked};

#[test]
fn blpop_is_woken_by_a_push_from_another_connection() {
    let srv = common::server();
    let mut waiter = common::conn(&srv);
    let mut pusher = common::conn(&srv);
    let t = thread::spawn(move || {
        let got: (String, String) = redis::cmd("BLPOP").arg("l1").arg("l2").arg(0).query(&mut waiter).unwrap();
        got
    });
    wait_blocked(&mut pusher, 1);
    let _: i64 = redis::cmd("RPUSH").arg("l2").arg("a").arg("b").query(&mut pusher).unwrap();
    assert_eq!(t.join().unwrap(), ("l2".to_string(), "a".to_string()));
    let rest: Vec<String> = redis::cmd("LRANGE").arg("l2").arg(0).arg(-1).query(&mut pusher).unwrap();
    assert_eq!(rest, vec!["b"]);
    assert_eq!(blocked_clients(&mut pusher), 0);
}

#[test]
fn two_waiters_are_served_first_come_first_served() {
    let srv = common::server();
    let mut ctl = common::conn(&srv);
    let mut w1 = common::conn(&srv);
    let mut w2 = common::conn(&srv);
    let t1 = thread::spawn(move || {
        let got: (String, String) = redis::cmd("BRPOP").arg("q").arg(0).query(&mut w1).unwrap();
        got.1
    });
    wait_blocked(&mut ctl, 1);
    let t2 = thread::spawn(move || {
        let got: (String, String) = redis::cmd("BRPOP").arg("q").arg(0).query(&mut w2).unwrap();
        got.1
    });
    wait_blocked(&mut ctl, 2);
    let _: i64 = redis::cmd("LPUSH").arg("q").arg("first").query(&mut ctl).unwrap();
    assert_eq!(t1.join().unwrap(), "first", "the earliest waiter is served first");
    wait_blocked(&mut ctl, 1);
    let _: i64 = redis::cmd("LPUSH").arg("q").arg("second").query(&mut ctl).unwrap();
    assert_eq!(t2.join().unwrap(), "second");
    let exists: i64 = redis::cmd("EXISTS").arg("q").query(&mut ctl).unwrap();
    assert_eq!(exists, 0);
}

#[test]
fn fractional_timeouts_expire_with_a_null_reply() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let start = Instant::now();
    let got: Option<(String, String)> = redis::cmd("BLPOP").arg("nothing").arg(0.3).query(&mut c).unwrap();
    let took = start.elapsed();
    assert_eq!(got, None);
    assert!(took >= Duration::from_millis(280) && took < Duration::from_secs(3), "took {took:?}");
    let start = Instant::now();
    let got: Option<String> =
        redis::cmd("BLMOVE").arg("a").arg("b").arg("LEFT").arg("LEFT").arg(0.15).query(&mut c).unwrap();
    assert_eq!(got, None);
    assert!(start.elapsed() >= Duration::from_millis(130));
    let got: Option<(String, String, f64)> = redis::cmd("BZPOPMIN").arg("z").arg(0.1).query(&mut c).unwrap();
    assert_eq!(got, None);
    assert_eq!(blocked_clients(&mut c), 0);
}

#[test]
fn a_disconnected_waiter_leaves_nothing_behind() {
    let srv = common::server();
    let mut ctl = common::conn(&srv);
    {
        let mut raw = TcpStream::connect(srv.addr()).unwrap();
        raw.write_all(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nl\r\n$1\r\n0\r\n").unwrap();
        wait_blocked(&mut ctl, 1);
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut ctl).unwrap();
        assert!(list.contains("cmd=blpop"), "{list}");
    }
    wait_blocked(&mut ctl, 0);
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut ctl).unwrap();
    assert!(!list.contains("cmd=blpop"), "{list}");
    let _: i64 = redis::cmd("RPUSH").arg("l").arg("v").query(&mut ctl).unwrap();
    let len: i64 = redis::cmd("LLEN").arg("l").query(&mut ctl).unwrap();
    assert_eq!(len, 1, "nobody consumed the element");
}

#[test]
fn client_unblock_with_timeout_and_error() {
    let srv = common::server();
    let mut ctl = common::conn(&srv);
    let mut w = common::conn(&srv);
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut w).unwrap();
    let none: i64 = redis::cmd("CLIENT").arg("UNBLOCK").arg(id).query(&mut ctl).unwrap();
    assert_eq!(none, 0, "not blocked yet");
    let t = thread::spawn(move || {
        let first: Option<(String, String)> = redis::cmd("BLPOP").arg("l").arg(0).query(&mut w).unwrap();
        let second = redis::cmd("BZPOPMAX").arg("z").arg(0).query::<Option<(String, String, f64)>>(&mut w);
        (first, second)
    });
    wait_blocked(&mut ctl, 1);
    let ok: i64 = redis::cmd("CLIENT").arg("UNBLOCK").arg(id).query(&mut ctl).unwrap();
    assert_eq!(ok, 1);
    // The waiter moves on to BZPOPMAX and blocks again.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut ctl).unwrap();
        if list.contains("cmd=bzpopmax") && blocked_clients(&mut ctl) == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "waiter did not block again: {list}");
        thread::sleep(Duration::from_millis(5));
    }
    let ok: i64 = redis::cmd("CLIENT").arg("UNBLOCK").arg(id).arg("ERROR").query(&mut ctl).unwrap();
    assert_eq!(ok, 1);
    let (first, second) = t.join().unwrap();
    assert_eq!(first, None, "unblocked like a timeout");
    let err = second.unwrap_err();
    assert_eq!(err.code(), Some("UNBLOCKED"));
    assert_eq!(blocked_clients(&mut ctl), 0);
}

#[test]
fn blmove_and_bzpopmin_are_woken() {
    let srv = common::server();
    let mut ctl = common::conn(&srv);
    let mut w1 = common::conn(&srv);
    let mut w2 = common::conn(&srv);
    let t1 = thread::spawn(move || {
        let v: String =
            redis::cmd("BLMOVE").arg("src").arg("dst").arg("RIGHT").arg("LEFT").arg(5).query(&mut w1).unwrap();
        v
    });
    let t2 = thread::spawn(move || {
        let v: (String, String, f64) = redis::cmd("BZPOPMIN").arg("z1").arg("z2").arg(5).query(&mut w2).unwrap();
        v
    });
    wait_blocked(&mut ctl, 2);
    let _: i64 = redis::cmd("RPUSH").arg("src").arg("x").arg("y").query(&mut ctl).unwrap();
    let _: i64 = redis::cmd("ZADD").arg("z2").arg(2.5).arg("m").arg(7).arg("n").query(&mut ctl).unwrap();
    assert_eq!(t1.join().unwrap(), "y");
    assert_eq!(t2.join().unwrap(), ("z2".to_string(), "m".to_string(), 2.5));
    let dst: Vec<String> = redis::cmd("LRANGE").arg("dst").arg(0).arg(-1).query(&mut ctl).unwrap();
    assert_eq!(dst, vec!["y"]);
    let left: Vec<String> = redis::cmd("ZRANGE").arg("z2").arg(0).arg(-1).query(&mut ctl).unwrap();
    assert_eq!(left, vec!["n"]);
}

#[test]
fn a_waiter_ignores_keys_of_another_type_until_a_list_appears() {
    let srv = common::server();
    let mut ctl = common::conn(&srv);
    let mut w = common::conn(&srv);
    let t = thread::spawn(move || {
        let got: (String, String) = redis::cmd("BLPOP").arg("k").arg(5).query(&mut w).unwrap();
        got
    });
    wait_blocked(&mut ctl, 1);
    let _: () = redis::cmd("SET").arg("k").arg("string").query(&mut ctl).unwrap();
    thread::sleep(Duration::from_millis(50));
    assert_eq!(blocked_clients(&mut ctl), 1, "still waiting");
    let _: i64 = redis::cmd("DEL").arg("k").query(&mut ctl).unwrap();
    let _: i64 = redis::cmd("RPUSH").arg("k").arg("v").query(&mut ctl).unwrap();
    assert_eq!(t.join().unwrap(), ("k".to_string(), "v".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_clients_block_and_wake() {
    let srv = common::server();
    let mut waiter = common::aconn(&srv).await;
    let mut pusher = common::aconn(&srv).await;
    let task = tokio::spawn(async move {
        let got: (String, Vec<(String, f64)>) = redis::cmd("BZMPOP")
            .arg(5)
            .arg(1)
            .arg("z")
            .arg("MAX")
            .arg("COUNT")
            .arg(2)
            .query_async(&mut waiter)
            .await
            .unwrap();
        got
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _: i64 = redis::cmd("ZADD")
        .arg("z")
        .arg(1)
        .arg("a")
        .arg(2)
        .arg("b")
        .arg(3)
        .arg("c")
        .query_async(&mut pusher)
        .await
        .unwrap();
    let (key, items) = task.await.unwrap();
    assert_eq!(key, "z");
    assert_eq!(items, vec![("c".to_string(), 3.0), ("b".to_string(), 2.0)]);
}

#[test]
fn resp3_timeout_and_served_replies() {
    use common::resp::{RawConn, Value};
    let srv = common::server();
    let mut c = RawConn::connect(srv.port());
    c.set_read_timeout(Duration::from_secs(5));
    let _ = c.cmd(&["HELLO", "3"]);
    assert_eq!(c.cmd(&["BLPOP", "l", "0.05"]), Value::Null);
    assert_eq!(c.cmd(&["BLMOVE", "a", "b", "LEFT", "LEFT", "0.05"]), Value::Null);
    let _ = c.cmd(&["ZADD", "z", "1.5", "m"]);
    assert_eq!(
        c.cmd(&["BZPOPMIN", "z", "0"]),
        Value::Agg(
            b'*',
            Some(vec![
                Value::Bulk(Some(b"z".to_vec())),
                Value::Bulk(Some(b"m".to_vec())),
                Value::Double(b"1.5".to_vec()),
            ])
        )
    );
}

/// Blocking timeouts are deadlines on the server's clock: with the clock
/// frozen, a BLPOP with a 1 s timeout stays blocked however long it waits,
/// and advancing the clock past its deadline times it out at once.
#[test]
fn blocking_timeouts_follow_the_server_clock() {
    let srv = common::server();
    let mut other = common::conn(&srv);
    let mut waiter = common::conn(&srv);
    srv.clock().freeze(true);
    let t = thread::spawn(move || {
        let got: Option<(String, String)> = redis::cmd("BLPOP").arg("l").arg(1).query(&mut waiter).unwrap();
        (got, Instant::now())
    });
    wait_blocked(&mut other, 1);
    thread::sleep(Duration::from_millis(1300));
    assert_eq!(blocked_clients(&mut other), 1, "a frozen clock never reaches the deadline");
    let advanced = Instant::now();
    srv.clock().advance_ms(1000);
    let (got, done) = t.join().unwrap();
    assert_eq!(got, None, "timed out");
    assert!(done.duration_since(advanced) < Duration::from_millis(500), "woken by the clock moving");
    srv.clock().freeze(false);
}

/// The `INFO commandstats` fields that do not depend on timing (calls,
/// rejected and failed calls) of the commands named, sorted, then
/// `INFO errorstats` and `total_error_replies`.
fn call_counts(c: &mut RawConn, commands: &[&str]) -> Vec<String> {
    let mut info = |section: &str| match c.cmd(&["INFO", section]) {
        Value::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("INFO answered {other:?}"),
    };
    let mut out: Vec<String> = info("commandstats")
        .lines()
        .filter_map(|l| l.strip_prefix("cmdstat_").and_then(|l| l.split_once(':')))
        .filter(|(name, _)| commands.contains(name))
        .map(|(name, fields)| {
            let kept: Vec<&str> = fields.split(',').filter(|f| !f.starts_with("usec")).collect();
            format!("{name}: {}", kept.join(","))
        })
        .collect();
    out.sort();
    out.extend(info("errorstats").lines().filter(|l| l.starts_with("errorstat_")).map(str::to_string));
    out.extend(info("stats").lines().filter(|l| l.starts_with("total_error_replies:")).map(str::to_string));
    out
}

/// Waits until `n` clients are blocked on the server `c` talks to.
fn wait_blocked_raw(c: &mut RawConn, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let Value::Bulk(Some(b)) = c.cmd(&["INFO", "clients"]) else { panic!("INFO clients") };
        if String::from_utf8_lossy(&b).contains(&format!("blocked_clients:{n}\r\n")) {
            return;
        }
        assert!(Instant::now() < deadline, "expected {n} blocked client(s)");
        thread::sleep(Duration::from_millis(5));
    }
}

/// Blocks `args` on a new connection to `port` (a raw one: no client
/// library handshake to count); returns the connection's id and the
/// thread holding its reply.
fn block(port: u16, args: &[&str]) -> (String, thread::JoinHandle<Value>) {
    let mut c = RawConn::connect(port);
    let id = c.cmd(&["CLIENT", "ID"]).as_int().expect("id").to_string();
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    c.send(&args);
    (id, thread::spawn(move || c.read().expect("reply")))
}

fn is_error(v: &Value, prefix: &str) -> bool {
    matches!(v, Value::Error(e) if e.starts_with(prefix.as_bytes()))
}

/// Blocking commands served, re-checked, unblocked with an error, timed
/// out and unblocked by `CLIENT UNBLOCK`, on the server at `port`.
fn unblocking_scenario(port: u16) -> Vec<String> {
    let mut ctl = RawConn::connect(port);
    ctl.cmd(&["FLUSHALL"]);
    ctl.cmd(&["CONFIG", "RESETSTAT"]);
    // Served by a push.
    let (_, t) = block(port, &["BLPOP", "l", "0"]);
    wait_blocked_raw(&mut ctl, 1);
    ctl.cmd(&["RPUSH", "l", "a"]);
    assert!(matches!(t.join().unwrap(), Value::Agg(b'*', Some(_))));
    // A reader re-checked without being served, then served.
    ctl.cmd(&["XADD", "s", "5-0", "f", "v"]);
    let (_, t) = block(port, &["XREAD", "BLOCK", "0", "STREAMS", "s", "10-0"]);
    wait_blocked_raw(&mut ctl, 1);
    ctl.cmd(&["XADD", "s", "6-0", "f", "v"]);
    ctl.cmd(&["XADD", "s", "11-0", "f", "v"]);
    assert!(matches!(t.join().unwrap(), Value::Agg(b'*', Some(_))));
    // Group readers answered an error: the group destroyed, the stream deleted.
    ctl.cmd(&["XGROUP", "CREATE", "s", "g", "$"]);
    let (_, t) = block(port, &["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"]);
    wait_blocked_raw(&mut ctl, 1);
    ctl.cmd(&["XGROUP", "DESTROY", "s", "g"]);
    assert!(is_error(&t.join().unwrap(), "NOGROUP "));
    ctl.cmd(&["XGROUP", "CREATE", "s", "g", "$"]);
    let (_, t) = block(port, &["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"]);
    wait_blocked_raw(&mut ctl, 1);
    ctl.cmd(&["DEL", "s"]);
    assert!(is_error(&t.join().unwrap(), "UNBLOCKED "));
    // Timed out.
    let (_, t) = block(port, &["BZPOPMIN", "z", "0.05"]);
    assert_eq!(t.join().unwrap(), Value::Agg(b'*', None));
    // CLIENT UNBLOCK, both reasons.
    for reason in ["TIMEOUT", "ERROR"] {
        let (id, t) = block(port, &["BRPOP", "q", "0"]);
        wait_blocked_raw(&mut ctl, 1);
        assert_eq!(ctl.cmd(&["CLIENT", "UNBLOCK", &id, reason]), Value::Int(1));
        t.join().unwrap();
    }
    call_counts(&mut ctl, &["blpop", "brpop", "bzpopmin", "xread", "xreadgroup", "xgroup|destroy", "del"])
}

#[test]
fn unblocked_commands_are_counted_as_redis_counts_them() {
    let srv = common::server();
    let ours = unblocking_scenario(srv.addr().port());
    // Each blocking command is one call, however it ended.
    for name in ["blpop", "xread", "bzpopmin"] {
        assert!(ours.contains(&format!("{name}: calls=1,rejected_calls=0,failed_calls=0")), "{name} in {ours:?}");
    }
    assert!(ours.contains(&"xreadgroup: calls=2,rejected_calls=0,failed_calls=2".to_string()), "{ours:?}");
    let Some(oracle) = common::oracle::Oracle::start() else { return };
    let theirs = unblocking_scenario(oracle.port);
    assert_eq!(ours, theirs, "rlockd, then redis-server");
}
