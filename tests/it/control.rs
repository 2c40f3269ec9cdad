//! Test control (`RLOCKD …` over RESP, the same through `Server` methods):
//! leases that run out by moving the clock, the lock view of every lock
//! kind the `lua/` scripts build, and a failover replayed with snapshots.

use crate::common::resp::{RawConn, Value};
use crate::common::server;

const REENTRANT_LOCK: &str = include_str!("../../lua/reentrant_lock.lua");
const FAIR_LOCK: &str = include_str!("../../lua/fair_lock.lua");
const READ_LOCK: &str = include_str!("../../lua/read_lock.lua");
const WRITE_LOCK: &str = include_str!("../../lua/write_lock.lua");
const SEMAPHORE_SET_PERMITS: &str = include_str!("../../lua/semaphore_set_permits.lua");

fn ok() -> Value {
    Value::Simple(b"OK".to_vec())
}

fn bulk(s: &str) -> Value {
    Value::Bulk(Some(s.as_bytes().to_vec()))
}

/// A field of a RESP3 map reply (connections here speak RESP3).
fn field<'a>(map: &'a Value, name: &str) -> &'a Value {
    let Value::Map(pairs) = map else { panic!("not a map: {map:?}") };
    &pairs.iter().find(|(k, _)| *k == bulk(name)).unwrap_or_else(|| panic!("no {name} in {map:?}")).1
}

fn resp3(port: u16) -> RawConn {
    let mut c = RawConn::connect(port);
    assert!(matches!(c.cmd(&["HELLO", "3"]), Value::Map(_)));
    c
}

#[test]
fn a_lease_runs_out_when_the_clock_moves() {
    let srv = server();
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Ex"]), ok());
    let mut sub = RawConn::connect(srv.port());
    sub.send(&[b"SUBSCRIBE".to_vec(), b"__keyevent@0__:expired".to_vec()]);
    assert!(sub.read().is_some());
    let Value::Int(_) = c.cmd(&["RLOCKD", "CLOCK", "FREEZE"]) else { panic!("CLOCK FREEZE") };
    let Value::Int(t0) = c.cmd(&["RLOCKD", "CLOCK", "GET"]) else { panic!("CLOCK GET") };
    // A Redisson lock with a 30 s lease.
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "myLock", "30000", "uuid-1:1"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["PTTL", "myLock"]), Value::Int(30000));
    assert_eq!(c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "29999"]), Value::Int(t0 + 29999));
    assert_eq!(c.cmd(&["PTTL", "myLock"]), Value::Int(1));
    assert_eq!(c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "1"]), Value::Int(t0 + 30000));
    // Gone at once, with its notification, in no wall time at all.
    assert_eq!(c.cmd(&["EXISTS", "myLock"]), Value::Int(0));
    assert_eq!(
        sub.read(),
        Some(Value::Agg(b'*', Some(vec![bulk("message"), bulk("__keyevent@0__:expired"), bulk("myLock")])))
    );
    // Another holder takes it.
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "myLock", "30000", "uuid-2:7"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["RLOCKD", "CLOCK", "SET", &(t0 - 1000).to_string()]), Value::Int(t0 - 1000));
    assert_eq!(c.cmd(&["TIME"]).bulks()[0], ((t0 - 1000) / 1000).to_string().into_bytes());
    let Value::Int(_) = c.cmd(&["RLOCKD", "CLOCK", "RESUME"]) else { panic!("CLOCK RESUME") };
}

#[test]
fn the_lock_view_reads_every_layout() {
    let srv = server();
    let port = srv.port();
    let mut c = resp3(port);
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "re", "30000", "u1:1"]), Value::Null);
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "re", "30000", "u1:1"]), Value::Null);
    let fair = ["fair", "redisson_lock_queue:{fair}", "redisson_lock_timeout:{fair}"];
    assert_eq!(
        c.cmd(&["EVAL", FAIR_LOCK, "3", fair[0], fair[1], fair[2], "30000", "u1:1", "5000", "1000"]),
        Value::Null
    );
    assert!(matches!(
        c.cmd(&["EVAL", FAIR_LOCK, "3", fair[0], fair[1], fair[2], "30000", "u2:2", "5000", "1000"]),
        Value::Int(_)
    ));
    assert_eq!(
        c.cmd(&["EVAL", READ_LOCK, "2", "rw", "{rw}:u1:1:rwlock_timeout", "30000", "u1:1", "u1:1:write"]),
        Value::Null
    );
    assert_eq!(c.cmd(&["EVAL", WRITE_LOCK, "1", "w", "30000", "u3:3:write"]), Value::Null);
    assert_eq!(c.cmd(&["SET", "token", "tok-123", "NX", "PX", "10000"]), ok());
    assert_eq!(c.cmd(&["EVAL", SEMAPHORE_SET_PERMITS, "2", "permits", "redisson_sc:{permits}", "3"]), Value::Int(1));
    assert_eq!(c.cmd(&["ZADD", "sem", "1000", "client-a"]), Value::Int(1));
    assert_eq!(c.cmd(&["SET", "not-a-lock", "hello"]), ok());
    // Integers written by plain commands are data, not semaphores.
    assert_eq!(c.cmd(&["SET", "a", "1"]), ok());
    assert_eq!(c.cmd(&["INCR", "hits"]), Value::Int(1));

    let Value::Agg(_, Some(locks)) = c.cmd(&["RLOCKD", "LOCKS"]) else { panic!("LOCKS") };
    let by_key = |k: &str| locks.iter().find(|l| *field(l, "key") == bulk(k)).unwrap_or_else(|| panic!("{k}"));
    assert_eq!(locks.len(), 7, "{locks:?}");
    let re = by_key("re");
    assert_eq!(*field(re, "kind"), bulk("reentrant"));
    let Value::Agg(_, Some(holders)) = field(re, "holders") else { panic!() };
    assert_eq!(*field(&holders[0], "id"), bulk("u1:1"));
    assert_eq!(*field(&holders[0], "count"), Value::Int(2));
    let fairv = by_key("fair");
    assert_eq!(*field(fairv, "kind"), bulk("fair"));
    let Value::Agg(_, Some(waiters)) = field(fairv, "waiters") else { panic!() };
    assert_eq!(*field(&waiters[0], "id"), bulk("u2:2"));
    assert!(matches!(field(&waiters[0], "deadline_ms"), Value::Int(_)));
    assert_eq!(*field(by_key("rw"), "kind"), bulk("read-write"));
    assert_eq!(*field(by_key("rw"), "mode"), bulk("read"));
    let Value::Agg(_, Some(rw_holders)) = field(by_key("rw"), "holders") else { panic!() };
    assert!(matches!(field(&rw_holders[0], "lease_ms"), Value::Int(ms) if *ms > 29000));
    assert_eq!(*field(by_key("w"), "mode"), bulk("write"));
    assert_eq!(*field(by_key("token"), "kind"), bulk("token"));
    assert_eq!(*field(by_key("permits"), "kind"), bulk("counter"));
    assert_eq!(*field(by_key("permits"), "value"), Value::Int(3));
    // Once a script made it a counter, a plain command moving it is seen.
    assert_eq!(c.cmd(&["DECR", "permits"]), Value::Int(2));
    assert_eq!(*field(by_key("sem"), "kind"), bulk("zset-semaphore"));
    // A pattern, and the text form for logs.
    let Value::Agg(_, Some(one)) = c.cmd(&["RLOCKD", "LOCKS", "r*"]) else { panic!() };
    assert_eq!(one.len(), 2);
    let Value::Verbatim(text) = c.cmd(&["RLOCKD", "LOCKS", "re", "TEXT"]) else { panic!("TEXT") };
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("db0 re reentrant (lease") && text.contains("holder u1:1 x2"), "{text}");
    // The same through the in-process API.
    let view = srv.locks();
    assert_eq!(view.len(), 7);
    assert_eq!(view.iter().find(|l| &l.key[..] == b"re").unwrap().holders[0].count, 2);
    assert_eq!(view.iter().find(|l| &l.key[..] == b"permits").unwrap().value, Some(2));
    assert!(view.iter().all(|l| &l.key[..] != b"a" && &l.key[..] != b"hits"), "{view:?}");
    assert!(c.cmd(&["RLOCKD", "EVENTS", "a"]).bulks().is_empty());
}

#[test]
fn a_failover_that_loses_a_lock_lets_a_second_client_take_it() {
    let srv = server();
    let mut a = RawConn::connect(srv.port());
    let mut b = RawConn::connect(srv.port());
    assert_eq!(a.cmd(&["SET", "other", "kept"]), ok());
    // The replica's view before the lock was replicated.
    assert_eq!(a.cmd(&["RLOCKD", "SNAPSHOT", "replica"]), ok());
    assert_eq!(a.cmd(&["SET", "lock", "client-a", "NX", "PX", "30000"]), ok());
    assert_eq!(b.cmd(&["SET", "lock", "client-b", "NX", "PX", "30000"]), Value::Bulk(None));
    // The replica is promoted: the lock is gone, client B gets it too.
    assert_eq!(a.cmd(&["RLOCKD", "RESTORE", "replica"]), ok());
    assert_eq!(b.cmd(&["SET", "lock", "client-b", "NX", "PX", "30000"]), ok());
    assert_eq!(a.cmd(&["GET", "other"]), bulk("kept"));
    assert_eq!(a.cmd(&["RLOCKD", "SNAPSHOTS"]).bulks(), vec![b"replica".to_vec()]);
    assert_eq!(a.cmd(&["RLOCKD", "RESTORE", "nope"]), Value::Error(b"ERR no snapshot named 'nope'".to_vec()));
    // In-process: the same operations.
    srv.snapshot("s2");
    assert_eq!(a.cmd(&["DEL", "lock"]), Value::Int(1));
    assert!(srv.restore("s2"));
    assert_eq!(a.cmd(&["GET", "lock"]), bulk("client-b"));
}

#[test]
fn test_control_can_be_switched_off() {
    let srv = rlockd::Server::start_with(rlockd::Config {
        params: vec![("test-control".into(), "no".into())],
        ..Default::default()
    })
    .expect("start");
    let mut c = RawConn::connect(srv.port());
    assert_eq!(
        c.cmd(&["RLOCKD", "CLOCK", "GET"]),
        Value::Error(b"ERR unknown command 'RLOCKD', with args beginning with: 'CLOCK' 'GET' ".to_vec())
    );
    let info = |c: &mut RawConn| match c.cmd(&["INFO", "rlockd"]) {
        Value::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
        other => panic!("INFO: {other:?}"),
    };
    assert!(info(&mut c).contains("\r\nrlockd_test_control:no\r\n"));
    let on = server();
    let mut c = RawConn::connect(on.port());
    assert!(info(&mut c).contains("\r\nrlockd_test_control:yes\r\n"));
    assert!(matches!(c.cmd(&["RLOCKD", "HELP"]), Value::Agg(_, Some(l)) if l.len() > 10));
    assert!(matches!(c.cmd(&["RLOCKD", "NOPE"]), Value::Error(e) if e.starts_with(b"ERR unknown subcommand")));
}

/// The README's example, as written there.
#[test]
fn readme_example_lease_expires_while_the_holder_is_paused() {
    let srv = rlockd::Server::start().unwrap();
    let mut con = redis::Client::open(srv.url()).unwrap().get_connection().unwrap();
    let _: () = redis::cmd("SET").arg("lock").arg("me").arg("PX").arg(30_000).query(&mut con).unwrap();
    srv.clock().freeze(true);
    assert_eq!(srv.locks()[0].kind, "token");
    srv.advance_clock(30_000); // no sleeping: the lease is over now
    assert!(srv.locks().is_empty());
}

/// Reads `n` "ready" lines from the binary and returns the ports they name.
fn ready_ports(out: &mut impl std::io::BufRead, n: usize) -> Vec<u16> {
    let mut ports = Vec::new();
    let mut line = String::new();
    while ports.len() < n {
        line.clear();
        assert!(out.read_line(&mut line).expect("stdout") > 0, "binary exited early");
        if let Some(p) = line.trim_end().strip_suffix(')').and_then(|l| l.rsplit("(port ").next()) {
            ports.push(p.parse().expect("port"));
        }
    }
    ports
}

#[test]
fn many_nodes_from_one_process_each_with_its_own_clock() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rlockd"))
        .args(["--nodes", "3", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start rlockd");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let ports = ready_ports(&mut out, 3);
    let mut nodes: Vec<RawConn> = ports.iter().map(|p| RawConn::connect(*p)).collect();
    // Independent keyspaces.
    assert_eq!(nodes[0].cmd(&["SET", "lock", "a", "NX", "PX", "10000"]), ok());
    assert_eq!(nodes[1].cmd(&["SET", "lock", "b", "NX", "PX", "10000"]), ok());
    // Independent clocks: a skew on one node moves no other.
    let Value::Int(before) = nodes[2].cmd(&["RLOCKD", "CLOCK", "GET"]) else { panic!() };
    let Value::Int(skewed) = nodes[0].cmd(&["RLOCKD", "CLOCK", "SKEW", "3600000"]) else { panic!() };
    let Value::Int(after) = nodes[2].cmd(&["RLOCKD", "CLOCK", "GET"]) else { panic!() };
    assert!(skewed >= before + 3_600_000);
    assert!(after < before + 60_000);
    assert_eq!(nodes[0].cmd(&["EXISTS", "lock"]), Value::Int(0), "the skew expired node 0's lock only");
    assert_eq!(nodes[1].cmd(&["EXISTS", "lock"]), Value::Int(1));
    // SHUTDOWN stops one node; the others serve on; the last one ends the process.
    for (i, node) in nodes.iter_mut().enumerate() {
        node.send(&[b"SHUTDOWN".to_vec(), b"NOSAVE".to_vec()]);
        assert_eq!(node.read(), None);
        if i < 2 {
            assert_eq!(RawConn::connect(ports[2]).cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
        }
    }
    assert!(child.wait().expect("exit").success());
}

#[test]
fn start_many_in_process() {
    let nodes = rlockd::Server::start_many(5, rlockd::Config::default()).expect("start");
    assert_eq!(nodes.len(), 5);
    let ports: std::collections::BTreeSet<u16> = nodes.iter().map(|n| n.port()).collect();
    assert_eq!(ports.len(), 5);
    nodes[0].clock().freeze(true);
    nodes[1].advance_clock(60_000);
    assert!(nodes[1].clock().now_ms() > nodes[2].clock().now_ms() + 50_000);
}

const REENTRANT_RENEW: &str = include_str!("../../lua/reentrant_renew.lua");
const REENTRANT_UNLOCK: &str = include_str!("../../lua/reentrant_unlock.lua");

/// (event, holder) pairs of `RLOCKD EVENTS key`.
fn events(c: &mut RawConn, key: &str) -> Vec<(String, String)> {
    let Value::Agg(_, Some(list)) = c.cmd(&["RLOCKD", "EVENTS", key]) else { panic!("EVENTS") };
    list.iter()
        .map(|e| {
            let s = |n: &str| match field(e, n) {
                Value::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
                other => panic!("{n}: {other:?}"),
            };
            (s("event"), s("holder"))
        })
        .collect()
}

#[test]
fn events_follow_a_lock_through_its_life() {
    let srv = server();
    let mut c = resp3(srv.port());
    let lock = |c: &mut RawConn, holder: &str| c.cmd(&["EVAL", REENTRANT_LOCK, "1", "L", "30000", holder]);
    assert_eq!(lock(&mut c, "u1:1"), Value::Null);
    assert_eq!(lock(&mut c, "u1:1"), Value::Null);
    assert_eq!(c.cmd(&["EVAL", REENTRANT_RENEW, "1", "L", "60000", "u1:1"]), Value::Int(1));
    assert_eq!(
        c.cmd(&["EVAL", REENTRANT_UNLOCK, "2", "L", "redisson_lock__channel:{L}", "0", "30000", "u1:1"]),
        Value::Int(0)
    );
    assert_eq!(
        c.cmd(&["EVAL", REENTRANT_UNLOCK, "2", "L", "redisson_lock__channel:{L}", "0", "30000", "u1:1"]),
        Value::Int(1)
    );
    let pairs = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
    assert_eq!(
        events(&mut c, "L"),
        pairs(&[
            ("acquired", "u1:1"),
            ("reentered", "u1:1"),
            ("renewed", "u1:1"),
            ("released", "u1:1"),
            ("released", "u1:1"),
        ])
    );
    // Who did it: the client and the command.
    let Value::Agg(_, Some(list)) = c.cmd(&["RLOCKD", "EVENTS", "L", "SINCE", "4"]) else { panic!() };
    assert_eq!(list.len(), 1);
    assert_eq!(*field(&list[0], "command"), bulk("eval"));
    assert!(matches!(field(&list[0], "client"), Value::Int(id) if *id > 0));
    assert_eq!(c.cmd(&["RLOCKD", "CHECK"]), Value::Agg(b'*', Some(vec![])));
    assert!(srv.check_locks().is_empty());
    assert_eq!(srv.lock_events().len(), 5);
}

#[test]
fn check_catches_a_lock_taken_after_its_lease_expired_while_held() {
    let srv = server();
    let mut c = resp3(srv.port());
    let Value::Int(_) = c.cmd(&["RLOCKD", "CLOCK", "FREEZE"]) else { panic!() };
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "L", "30000", "u1:1"]), Value::Null);
    // The holder is paused past its lease: nobody released it.
    let Value::Int(_) = c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "30001"]) else { panic!() };
    assert_eq!(events(&mut c, "L").last().cloned(), Some(("expired".into(), "u1:1".into())));
    // A second client takes it: two holders believe they own it.
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "L", "30000", "u2:9"]), Value::Null);
    let Value::Agg(_, Some(v)) = c.cmd(&["RLOCKD", "CHECK"]) else { panic!("CHECK") };
    assert_eq!(v.len(), 1);
    let Value::Bulk(Some(text)) = &v[0] else { panic!() };
    let text = String::from_utf8_lossy(text);
    assert!(text.contains("acquired by u2:9 after its lease expired while held by u1:1"), "{text}");
    assert_eq!(srv.check_locks().len(), 1);
    assert_eq!(c.cmd(&["RLOCKD", "CHECK", "RESET"]), ok());
    assert!(srv.check_locks().is_empty());
    // The same holder coming back after its own expiry is not a violation.
    let Value::Int(_) = c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "30001"]) else { panic!() };
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "L", "30000", "u2:9"]), Value::Null);
    assert!(srv.check_locks().is_empty());
}

#[test]
fn check_catches_a_semaphore_below_zero_and_a_fair_lock_out_of_order() {
    let srv = server();
    let mut c = resp3(srv.port());
    assert_eq!(c.cmd(&["EVAL", SEMAPHORE_SET_PERMITS, "2", "permits", "redisson_sc:{permits}", "1"]), Value::Int(1));
    assert_eq!(c.cmd(&["DECRBY", "permits", "2"]), Value::Int(-1));
    // A plain integer going negative is no semaphore's business.
    assert_eq!(c.cmd(&["DECRBY", "balance", "5"]), Value::Int(-5));
    // A fair lock with u2 then u3 queued; u3 is let in first by a buggy client.
    let fair = ["F", "redisson_lock_queue:{F}", "redisson_lock_timeout:{F}"];
    let take = |c: &mut RawConn, h: &str| {
        c.cmd(&["EVAL", FAIR_LOCK, "3", fair[0], fair[1], fair[2], "30000", h, "5000", "1000"])
    };
    assert_eq!(take(&mut c, "u1:1"), Value::Null);
    assert!(matches!(take(&mut c, "u2:2"), Value::Int(_)));
    assert!(matches!(take(&mut c, "u3:3"), Value::Int(_)));
    assert_eq!(c.cmd(&["DEL", "F"]), Value::Int(1));
    assert_eq!(c.cmd(&["HSET", "F", "u3:3", "1"]), Value::Int(1));
    let v = srv.check_locks();
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v.iter().any(|s| s.contains("permits: counter below zero")));
    assert!(v.iter().any(|s| s.contains("fair lock served u3:3 before u2:2")));
}

#[test]
fn lock_events_are_published_live_as_json() {
    let srv = server();
    let mut sub = RawConn::connect(srv.port());
    sub.send(&[b"SUBSCRIBE".to_vec(), b"__rlockd__:lockevents".to_vec()]);
    assert!(sub.read().is_some());
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "liveLock", "30000", "uuid-9:1"]), Value::Bulk(None));
    let msg = sub.read().expect("a lock event");
    let parts = msg.bulks();
    assert_eq!(parts[0], b"message".to_vec());
    assert_eq!(parts[1], b"__rlockd__:lockevents".to_vec());
    let json = String::from_utf8(parts[2].clone()).unwrap();
    assert!(json.starts_with("{\"id\":"), "{json}");
    for needle in [
        "\"key\":\"liveLock\"",
        "\"kind\":\"reentrant\"",
        "\"event\":\"acquired\"",
        "\"holder\":\"uuid-9:1\"",
        "\"command\":\"eval\"",
    ] {
        assert!(json.contains(needle), "{needle} in {json}");
    }
    // Moving the clock past the lease publishes its expiry.
    assert!(matches!(c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "31000"]), Value::Int(_)));
    let json = String::from_utf8(sub.read().expect("expiry event").bulks()[2].clone()).unwrap();
    assert!(json.contains("\"event\":\"expired\""), "{json}");
}

/// Redlock over five nodes with the Jepsen-style nemeses test control
/// offers: one node frozen (a pause or partition: the client's request times
/// out there) and clocks jumped forward on others. With one node frozen and
/// one skewed, a second client cannot reach a majority; once three clocks
/// jumped past the lease it can, and two clients hold "the" lock — the
/// clock-dependence of Redlock's safety argument, shown in milliseconds.
#[test]
fn redlock_over_five_nodes_with_one_frozen_and_clocks_skewed() {
    let nodes = rlockd::Server::start_many(5, rlockd::Config::default()).expect("start");
    let mut ctl: Vec<RawConn> = nodes.iter().map(|n| RawConn::connect(n.port())).collect();
    assert!(matches!(ctl[0].cmd(&["RLOCKD", "FAULT", "FREEZE", "3000"]), Value::Int(_)));
    // One acquisition attempt: SET NX PX on every node, 300 ms per node.
    let acquire = |token: &str| -> usize {
        let mut won = 0;
        for n in &nodes {
            let mut c = RawConn::connect(n.port());
            c.set_read_timeout(std::time::Duration::from_millis(300));
            c.send(&[
                b"SET".to_vec(),
                b"res".to_vec(),
                token.as_bytes().to_vec(),
                b"NX".to_vec(),
                b"PX".to_vec(),
                b"10000".to_vec(),
            ]);
            if c.read() == Some(ok()) {
                won += 1;
            }
        }
        won
    };
    assert_eq!(acquire("client-a"), 4, "every node but the frozen one");
    // Node 1's clock jumps past the lease: its copy of A's lock expires.
    assert!(matches!(ctl[1].cmd(&["RLOCKD", "CLOCK", "SKEW", "10001"]), Value::Int(_)));
    assert_eq!(acquire("client-b"), 1, "B gets node 1 only: no majority, the lock is safe");
    for i in [2, 3] {
        assert!(matches!(ctl[i].cmd(&["RLOCKD", "CLOCK", "SKEW", "10001"]), Value::Int(_)));
    }
    // B already holds node 1; nodes 2 and 3 now expired A's copies.
    assert_eq!(acquire("client-b"), 2);
    let holders: Vec<Value> = ctl[1..].iter_mut().map(|c| c.cmd(&["GET", "res"])).collect();
    assert_eq!(holders, vec![bulk("client-b"), bulk("client-b"), bulk("client-b"), bulk("client-a")]);
    // B has 3 of 5 while A still believes it holds its 4 of 5: unsafe.
}

/// `RLOCKD SCRIPTS`: each cached script's cost in figures that do not
/// depend on the machine — the same instructions for the same work, the
/// commands it ran and the keys they named.
#[test]
fn scripts_report_a_machine_independent_cost() {
    let srv = server();
    let mut c = resp3(srv.port());
    let Value::Bulk(Some(sha)) = c.cmd(&["SCRIPT", "LOAD", REENTRANT_LOCK]) else { panic!("SCRIPT LOAD") };
    let sha = String::from_utf8(sha).unwrap();
    for i in 0..3 {
        assert_eq!(c.cmd(&["EVALSHA", &sha, "1", &format!("lock{i}"), "30000", "uuid-1:1"]), Value::Null);
    }
    let Value::Agg(_, Some(list)) = c.cmd(&["RLOCKD", "SCRIPTS"]) else { panic!("RLOCKD SCRIPTS") };
    assert_eq!(list.len(), 1);
    let p = &list[0];
    assert_eq!(field(p, "sha"), &bulk(&sha));
    assert_eq!(field(p, "calls"), &Value::Int(3));
    let Value::Int(instructions) = field(p, "instructions") else { panic!("instructions") };
    assert!(*instructions > 0 && instructions % 3 == 0, "three identical runs: {instructions}");
    // EXISTS (a read of one key), then HINCRBY and PEXPIRE (writes).
    let Value::Map(commands) = field(p, "commands") else { panic!("commands") };
    assert_eq!(
        commands,
        &vec![(bulk("exists"), Value::Int(3)), (bulk("hincrby"), Value::Int(3)), (bulk("pexpire"), Value::Int(3))]
    );
    assert_eq!(field(p, "keys_read"), &Value::Int(3));
    assert_eq!(field(p, "keys_written"), &Value::Int(6));
    // The same figures through the Rust API, and per call in INFO.
    let profiles = srv.script_profiles();
    assert_eq!(profiles[0].0, sha);
    assert_eq!(profiles[0].2.instructions as i64, *instructions);
    let info = match c.cmd(&["INFO", "scriptstats"]) {
        Value::Verbatim(b) | Value::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
        other => panic!("INFO: {other:?}"),
    };
    assert!(info.contains(&format!(",instructions_per_call={:.1},", *instructions as f64 / 3.0)), "{info}");
}

/// A semaphore with many holders is followed holder by holder; values past
/// a lock's sizes (a job queue's big sorted set, a cached string with a
/// TTL) are not read as locks at all.
#[test]
fn big_values_are_not_locks_and_many_holders_are_followed() {
    let srv = server();
    let mut c = resp3(srv.port());
    // 1,000 holders: a semaphore. One leaves and another comes.
    let fill = "for i = 1, tonumber(ARGV[1]) do redis.call('zadd', KEYS[1], i, 'holder-' .. i) end";
    assert_eq!(c.cmd(&["EVAL", fill, "1", "sem", "1000"]), Value::Null);
    assert_eq!(c.cmd(&["ZREM", "sem", "holder-500"]), Value::Int(1));
    assert_eq!(c.cmd(&["ZADD", "sem", "2000", "holder-new"]), Value::Int(1));
    let ev = events(&mut c, "sem");
    assert_eq!(ev.len(), 1002, "1000 acquired, then one released and one acquired");
    assert_eq!(ev[1000], ("released".to_string(), "holder-500".to_string()));
    assert_eq!(ev[1001], ("acquired".to_string(), "holder-new".to_string()));
    // One more member: a sorted set, not a semaphore; it leaves the view.
    assert_eq!(c.cmd(&["ZADD", "sem", "3000", "holder-1001"]), Value::Int(1));
    assert_eq!(c.cmd(&["EVAL", fill, "1", "queue", "5000"]), Value::Null);
    assert_eq!(c.cmd(&["ZINCRBY", "queue", "1", "holder-7"]), Value::Double(b"8".to_vec()));
    assert_eq!(events(&mut c, "queue"), Vec::new());
    // A 512-byte string with a TTL is a token; a longer one is a value.
    let token = "t".repeat(512);
    let value = "v".repeat(513);
    assert_eq!(c.cmd(&["SET", "tok", &token, "PX", "10000"]), ok());
    assert_eq!(c.cmd(&["SET", "cached", &value, "PX", "10000"]), ok());
    let Value::Agg(_, Some(locks)) = c.cmd(&["RLOCKD", "LOCKS"]) else { panic!("LOCKS") };
    let keys: Vec<&Value> = locks.iter().map(|l| field(l, "key")).collect();
    assert_eq!(keys, vec![&bulk("tok")], "{locks:?}");
    assert_eq!(events(&mut c, "cached"), Vec::new());
}

/// `CLOCK RESUME` lets time run as if it had never stopped: the moves made
/// while frozen stay, the real time spent frozen is caught up (it is not
/// left behind as an offset from the system clock).
#[test]
fn clock_resume_catches_up_the_time_spent_frozen() {
    let srv = server();
    let mut c = resp3(srv.port());
    let offset = |c: &mut RawConn| match field(&c.cmd(&["RLOCKD", "CLOCK", "INFO"]), "offset_ms") {
        Value::Int(ms) => *ms,
        other => panic!("offset_ms: {other:?}"),
    };
    let Value::Int(frozen_at) = c.cmd(&["RLOCKD", "CLOCK", "FREEZE"]) else { panic!("FREEZE") };
    assert_eq!(c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "1000"]), Value::Int(frozen_at + 1000));
    std::thread::sleep(std::time::Duration::from_millis(50));
    let Value::Int(resumed) = c.cmd(&["RLOCKD", "CLOCK", "RESUME"]) else { panic!("RESUME") };
    assert!(resumed >= frozen_at + 1050, "{resumed} vs {frozen_at}");
    let off = offset(&mut c);
    assert!((995..=1000).contains(&off), "offset after RESUME: {off}");
    // A jump while frozen: time goes on from where it was set.
    assert!(matches!(c.cmd(&["RLOCKD", "CLOCK", "FREEZE"]), Value::Int(_)));
    assert_eq!(c.cmd(&["RLOCKD", "CLOCK", "SET", "1000000000000"]), Value::Int(1_000_000_000_000));
    let Value::Int(t) = c.cmd(&["RLOCKD", "CLOCK", "RESUME"]) else { panic!("RESUME") };
    assert!((1_000_000_000_000..1_000_000_060_000).contains(&t), "{t}");
}

/// `CONFIG SET test-control` switches test control at run time: off, the
/// server is plain Redis again (RLOCKD unknown, faults cleared, the clock
/// on real time, no lock events), and the history and snapshots are gone;
/// on again, a new history takes the locks held then as they are.
#[test]
fn test_control_switches_at_run_time() {
    let srv = server();
    let mut c = resp3(srv.port());
    let mut sub = RawConn::connect(srv.port());
    sub.send(&[b"SUBSCRIBE".to_vec(), b"__rlockd__:lockevents".to_vec()]);
    assert!(sub.read().is_some());
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "held", "30000", "u1:1"]), Value::Null);
    assert!(sub.read().is_some(), "an event while on");
    assert_eq!(c.cmd(&["RLOCKD", "SNAPSHOT", "s"]), ok());
    assert!(matches!(c.cmd(&["RLOCKD", "FAULT", "LATENCY", "1", "COMMAND", "nothing"]), Value::Int(_)));
    assert!(matches!(c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "-3600000"]), Value::Int(_)));

    assert_eq!(c.cmd(&["CONFIG", "SET", "test-control", "no"]), ok());
    assert_eq!(*field(&c.cmd(&["CONFIG", "GET", "test-control"]), "test-control"), bulk("no"));
    assert_eq!(
        c.cmd(&["RLOCKD", "CLOCK", "GET"]),
        Value::Error(b"ERR unknown command 'RLOCKD', with args beginning with: 'CLOCK' 'GET' ".to_vec())
    );
    assert_eq!(c.cmd(&["COMMAND", "INFO", "rlockd"]), Value::Agg(b'*', Some(vec![Value::Null])));
    assert!(srv.faults().is_empty());
    let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let secs: u64 = String::from_utf8(c.cmd(&["TIME"]).bulks()[0].clone()).unwrap().parse().unwrap();
    assert!(secs.abs_diff(wall) <= 2, "the clock is back on real time: {secs} vs {wall}");
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "held", "30000", "u1:1"]), Value::Null);
    assert!(srv.lock_events().is_empty());

    assert_eq!(c.cmd(&["CONFIG", "SET", "test-control", "yes"]), ok());
    assert!(c.cmd(&["RLOCKD", "SNAPSHOTS"]).bulks().is_empty());
    assert!(c.cmd(&["RLOCKD", "EVENTS"]).bulks().is_empty());
    // The lock held before is known as held: taking it again is a re-entry.
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "held", "30000", "u1:1"]), Value::Null);
    let events = srv.lock_events();
    assert_eq!(events.iter().map(|e| (e.event, e.count)).collect::<Vec<_>>(), [("reentered", 3)]);
    // Messages published while off never came; the one now does.
    let msg = sub.read().expect("an event once on again").bulks();
    assert!(String::from_utf8_lossy(&msg[2]).contains("\"event\":\"reentered\""), "{msg:?}");
}

/// With test control on (the default), a plain Redis client sees nothing
/// of it: INFO's default and `all` fields, the command listings, ACL
/// categories and MONITOR show what redis-server shows; `RLOCKD` answers
/// by name only (`COMMAND INFO rlockd`).
#[test]
fn test_control_is_invisible_to_a_plain_redis_client() {
    let srv = server();
    let mut c = RawConn::connect(srv.port());
    let fields = |c: &mut RawConn, section: &str| -> Vec<String> {
        let Value::Bulk(Some(info)) = c.cmd(&["INFO", section]) else { panic!("INFO {section}") };
        let mut names: Vec<String> = String::from_utf8(info)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect();
        names.sort();
        names
    };
    if let Some(oracle) = crate::common::oracle::Oracle::start() {
        let mut o = RawConn::connect(oracle.port);
        for section in ["default", "all"] {
            assert_eq!(fields(&mut c, section), fields(&mut o, section), "INFO {section}");
        }
    }
    let listed = c.cmd(&["COMMAND", "LIST"]).bulks();
    assert!(!listed.iter().any(|n| n.starts_with(b"rlockd")), "COMMAND LIST");
    assert_eq!(c.cmd(&["COMMAND", "COUNT"]), Value::Int(listed.iter().filter(|n| !n.contains(&b'|')).count() as i64));
    let Value::Agg(_, Some(all)) = c.cmd(&["COMMAND"]) else { panic!("COMMAND") };
    assert_eq!(all.len(), listed.iter().filter(|n| !n.contains(&b'|')).count());
    for cat in ["admin", "dangerous", "slow"] {
        assert!(!c.cmd(&["ACL", "CAT", cat]).bulks().iter().any(|n| n.starts_with(b"rlockd")), "ACL CAT {cat}");
    }
    assert!(matches!(c.cmd(&["COMMAND", "INFO", "rlockd"]), Value::Agg(_, Some(v)) if v[0] != Value::Null));
    assert_eq!(fields(&mut c, "rlockd"), ["rlockd_test_control", "rlockd_version"]);
    // MONITOR shows no RLOCKD line (an admin command, as CONFIG is).
    let mut mon = RawConn::connect(srv.port());
    assert_eq!(mon.cmd(&["MONITOR"]), ok());
    assert!(matches!(c.cmd(&["RLOCKD", "CLOCK", "GET"]), Value::Int(_)));
    assert_eq!(c.cmd(&["SET", "after", "1"]), ok());
    let Some(Value::Simple(line)) = mon.read() else { panic!("a MONITOR line") };
    assert!(String::from_utf8_lossy(&line).ends_with("\"SET\" \"after\" \"1\""), "{}", String::from_utf8_lossy(&line));
}

/// `CLIENT PAUSE` does not hold test control back: a test can still move
/// the clock (or look at the locks) while every other command waits.
#[test]
fn test_control_runs_while_clients_are_paused() {
    let srv = server();
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["CLIENT", "PAUSE", "60000", "ALL"]), ok());
    let mut other = RawConn::connect(srv.port());
    other.set_read_timeout(std::time::Duration::from_secs(5));
    assert!(matches!(other.cmd(&["RLOCKD", "CLOCK", "GET"]), Value::Int(_)), "answered during the pause");
    assert_eq!(other.cmd(&["RLOCKD", "LOCKS"]), Value::Agg(b'*', Some(Vec::new())));
    assert_eq!(c.cmd(&["CLIENT", "UNPAUSE"]), ok());
}
