//! Test control (`RLOCKD …` over RESP, the same through `Server` methods):
//! leases that run out by moving the clock, the lock view of every lock
//! kind the `lua/` scripts build, and a failover replayed with snapshots.

use crate::common::resp::{RawConn, Value};
use crate::common::server;

const REENTRANT_LOCK: &str = include_str!("../../lua/reentrant_lock.lua");
const FAIR_LOCK: &str = include_str!("../../lua/fair_lock.lua");
const READ_LOCK: &str = include_str!("../../lua/read_lock.lua");
const WRITE_LOCK: &str = include_str!("../../lua/write_lock.lua");

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
    assert_eq!(c.cmd(&["SET", "permits", "3"]), ok());
    assert_eq!(c.cmd(&["ZADD", "sem", "1000", "client-a"]), Value::Int(1));
    assert_eq!(c.cmd(&["SET", "not-a-lock", "hello"]), ok());

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
    assert_eq!(*field(by_key("permits"), "value"), Value::Int(3));
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
    let on = server();
    let mut c = RawConn::connect(on.port());
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
