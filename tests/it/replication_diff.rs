//! Replication compared with Redis 7.0: the same writes sent to a real
//! redis-server primary (with a real replica) and to an rlockd primary
//! (with an rlockd replica) must give the same replies, the same
//! `master_repl_offset` (the bytes of the replication stream: effects,
//! rewrites, `SELECT`s and `MULTI`/`EXEC` wrapping all count), and the same
//! `INFO replication`, `ROLE` and `WAIT` answers once ports, ids and ages
//! are blanked out.

use std::time::{Duration, Instant};

use crate::common::oracle::Oracle;
use crate::common::resp::{RawConn, Value};

const REENTRANT_LOCK: &str = include_str!("../../lua/reentrant_lock.lua");

/// A heartbeat far away: the PING Redis sends every period would make the
/// offsets depend on when the test runs.
const NO_PING: &str = "3600";

fn text(v: Value) -> String {
    match v {
        Value::Bulk(Some(b)) | Value::Verbatim(b) => String::from_utf8(b).expect("utf-8"),
        other => panic!("not text: {other:?}"),
    }
}

/// INFO replication with what differs between any two runs blanked out.
fn normalised_info(c: &mut RawConn, ports: &[u16]) -> String {
    let mut out = Vec::new();
    for line in text(c.cmd(&["INFO", "replication"])).lines() {
        let line = match line.split_once(':') {
            Some((k, _)) if k.starts_with("master_replid") && k != "master_replid2" => format!("{k}:<id>"),
            Some((k, _)) if k == "master_last_io_seconds_ago" => format!("{k}:<age>"),
            _ => line.to_string(),
        };
        let mut line = line;
        for (i, p) in ports.iter().enumerate() {
            line = line.replace(&p.to_string(), &format!("<port{i}>"));
        }
        // A replica's acknowledged offset and lag depend on when its
        // once-a-second ack last ran (in both servers).
        if let Some(at) = line.find(",offset=") {
            line.truncate(at);
            line.push_str(",offset=<acked>,lag=<lag>");
        }
        out.push(line);
    }
    out.join("\n")
}

fn normalised(v: Value, ports: &[u16]) -> String {
    let mut s = crate::common::resp::pretty(&v);
    for (i, p) in ports.iter().enumerate() {
        s = s.replace(&p.to_string(), &format!("<port{i}>"));
    }
    s
}

/// The writes both primaries get (replies compared one by one).
fn workload() -> Vec<Vec<&'static str>> {
    vec![
        vec!["SET", "a", "1"],
        vec!["SET", "b", "2", "EX", "100"],
        vec!["PEXPIRE", "a", "5000"],
        vec!["EVAL", "redis.call('set','x','1') return 1", "0"],
        vec!["EVAL", "redis.call('set','x','1') redis.call('incr','y') return 1", "0"],
        vec!["EVAL", "return redis.call('get','nokey')", "0"],
        vec!["SELECT", "3"],
        vec!["SET", "c", "1"],
        vec!["MULTI"],
        vec!["SET", "f", "1"],
        vec!["EXEC"],
        vec!["MULTI"],
        vec!["SET", "f", "1"],
        vec!["SET", "f", "2"],
        vec!["EXEC"],
        vec!["INCRBYFLOAT", "g", "1.5"],
        vec!["PUBLISH", "ch", "hi"],
        vec!["DEL", "nokey"],
        vec!["SET", "lock", "token", "NX", "PX", "30000"],
        vec!["SET", "lock", "token", "NX", "PX", "30000"],
        vec!["EVAL", REENTRANT_LOCK, "1", "myLock", "30000", "uuid-1:1"],
        vec!["EVAL", REENTRANT_LOCK, "1", "myLock", "30000", "uuid-1:1"],
        vec!["SELECT", "0"],
    ]
}

/// The last write and a `WAIT` for it, sent in one packet: a server sends
/// `REPLCONF GETACK` (37 bytes of the stream) only when its replica has not
/// acknowledged everything yet, and a periodic ack landing between two
/// separate round trips would make that, and the offsets, a matter of timing.
const LAST_WRITE_AND_WAIT: [&[&str]; 2] = [&["HSET", "h", "f", "v"], &["WAIT", "1", "0"]];

fn last_write_and_wait(c: &mut RawConn) -> Vec<Value> {
    let mut bytes = Vec::new();
    for cmd in LAST_WRITE_AND_WAIT {
        bytes.extend(crate::common::resp::encode(&cmd.iter().map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>()));
    }
    c.send_raw(&bytes);
    LAST_WRITE_AND_WAIT.iter().map(|_| c.read().expect("a reply")).collect()
}

/// Waits (bounded: a hang guard, not a timing target) until `primary`
/// reports an online replica.
fn until_online(primary: &mut RawConn) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !text(primary.cmd(&["INFO", "replication"])).contains("state=online") {
        assert!(Instant::now() < deadline, "the replica never came online");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn replication_matches_redis() {
    let (Some(rp), Some(rr)) = (Oracle::start(), Oracle::start()) else { return };
    let mut redis_p = RawConn::connect(rp.port);
    let mut redis_r = RawConn::connect(rr.port);
    for (k, v) in [("repl-diskless-sync-delay", "0"), ("repl-ping-replica-period", NO_PING)] {
        assert_eq!(redis_p.cmd(&["CONFIG", "SET", k, v]), Value::Simple(b"OK".to_vec()));
    }
    // The replica loads the primary's data from the socket: no dump.rdb
    // left in the working directory (a later primary would resume its id).
    assert_eq!(redis_r.cmd(&["CONFIG", "SET", "repl-diskless-load", "swapdb"]), Value::Simple(b"OK".to_vec()));
    redis_r.cmd(&["REPLICAOF", "127.0.0.1", &rp.port.to_string()]);
    until_online(&mut redis_p);

    let mut config = rlockd::Config::default();
    config.params.push(("repl-ping-replica-period".into(), NO_PING.into()));
    let nodes = rlockd::Server::start_with_replicas(1, config).expect("start");
    let mut ours_p = RawConn::connect(nodes[0].port());
    let mut ours_r = RawConn::connect(nodes[1].port());

    for cmd in workload() {
        let theirs = redis_p.cmd(&cmd);
        let ours = ours_p.cmd(&cmd);
        assert_eq!(ours, theirs, "{cmd:?}");
    }
    assert_eq!(last_write_and_wait(&mut ours_p), last_write_and_wait(&mut redis_p), "HSET + WAIT 1 0");
    let redis_ports = [rp.port, rr.port];
    let our_ports = [nodes[0].port(), nodes[1].port()];
    // The offsets: the same stream, byte for byte in length.
    assert_eq!(normalised_info(&mut ours_p, &our_ports), normalised_info(&mut redis_p, &redis_ports));
    // A replica's view; it has applied everything WAIT counted.
    until_equal_offsets(&mut redis_r, &mut redis_p);
    assert_eq!(normalised_info(&mut ours_r, &our_ports), normalised_info(&mut redis_r, &redis_ports));
    assert_eq!(normalised(ours_p.cmd(&["ROLE"]), &our_ports), normalised(redis_p.cmd(&["ROLE"]), &redis_ports));
    assert_eq!(normalised(ours_r.cmd(&["ROLE"]), &our_ports), normalised(redis_r.cmd(&["ROLE"]), &redis_ports));
    for cmd in [vec!["SET", "z", "1"], vec!["WAIT", "0", "0"], vec!["EVAL", "return redis.call('del','a')", "0"]] {
        assert_eq!(ours_r.cmd(&cmd), redis_r.cmd(&cmd), "{cmd:?} on the replica");
    }
    for key in ["a", "b", "x", "y", "f", "g", "h", "lock", "myLock"] {
        for (db, name) in [("0", key), ("3", key)] {
            ours_r.cmd(&["SELECT", db]);
            redis_r.cmd(&["SELECT", db]);
            assert_eq!(ours_r.cmd(&["DUMP", name]), redis_r.cmd(&["DUMP", name]), "db {db} key {name}");
            assert_eq!(
                ours_r.cmd(&["PEXPIRETIME", name]).as_int().map(|t| t > 0),
                redis_r.cmd(&["PEXPIRETIME", name]).as_int().map(|t| t > 0)
            );
        }
    }
}

/// Waits (bounded) until the replica has processed the primary's stream.
fn until_equal_offsets(replica: &mut RawConn, primary: &mut RawConn) {
    let field = |c: &mut RawConn, k: &str| {
        text(c.cmd(&["INFO", "replication"])).lines().find_map(|l| l.strip_prefix(k).map(str::to_string))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while field(replica, "slave_repl_offset:") != field(primary, "master_repl_offset:") {
        assert!(Instant::now() < deadline, "the replica never caught up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A redis-sentinel child process watching `port` as `mymaster`.
struct RealSentinel {
    child: std::process::Child,
    port: u16,
}

impl Drop for RealSentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn real_sentinel(master_port: u16) -> Option<RealSentinel> {
    let server = crate::common::oracle::redis_server_path()?;
    let sentinel = std::path::Path::new(&server).with_file_name("redis-sentinel");
    if !sentinel.is_file() {
        if std::env::var("RLOCKD_REQUIRE_REDIS").is_ok_and(|v| v == "1") {
            panic!("redis-sentinel is required (RLOCKD_REQUIRE_REDIS=1) but not installed");
        }
        crate::common::skip::skipped("redis-sentinel is not installed, so the Sentinel replies were not compared");
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sentinel-{port}"));
    std::fs::create_dir_all(&dir).ok()?;
    let conf = dir.join("sentinel.conf");
    std::fs::write(
        &conf,
        format!(
            "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor mymaster 127.0.0.1 {master_port} 1\n",
            dir.display()
        ),
    )
    .ok()?;
    let child = std::process::Command::new(sentinel)
        .arg(&conf)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    Some(RealSentinel { child, port })
}

/// The field names of a Sentinel map reply, in order.
fn field_names(v: &Value) -> Vec<String> {
    match v {
        Value::Agg(_, Some(items)) => {
            items.iter().step_by(2).map(|k| String::from_utf8_lossy(&k.bulks_or_self()).into_owned()).collect()
        }
        other => panic!("not a Sentinel record: {other:?}"),
    }
}

trait BulkText {
    fn bulks_or_self(&self) -> Vec<u8>;
}

impl BulkText for Value {
    fn bulks_or_self(&self) -> Vec<u8> {
        match self {
            Value::Bulk(Some(b)) | Value::Simple(b) => b.clone(),
            other => format!("{other:?}").into_bytes(),
        }
    }
}

#[test]
fn sentinel_replies_match_redis_sentinel() {
    let (Some(rp), Some(rr)) = (Oracle::start(), Oracle::start()) else { return };
    let mut redis_p = RawConn::connect(rp.port);
    let mut redis_r = RawConn::connect(rr.port);
    redis_p.cmd(&["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
    redis_r.cmd(&["CONFIG", "SET", "repl-diskless-load", "swapdb"]);
    redis_r.cmd(&["REPLICAOF", "127.0.0.1", &rp.port.to_string()]);
    until_online(&mut redis_p);
    let Some(real) = real_sentinel(rp.port) else { return };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut theirs = loop {
        if let Ok(mut c) = RawConn::try_connect(real.port) {
            let replicas = c.cmd(&["SENTINEL", "REPLICAS", "mymaster"]);
            if matches!(&replicas, Value::Agg(_, Some(v)) if !v.is_empty()) {
                break c;
            }
        }
        assert!(Instant::now() < deadline, "redis-sentinel never saw the replica");
        std::thread::sleep(Duration::from_millis(50));
    };
    let nodes = rlockd::Server::start_with_replicas(1, rlockd::Config::default()).expect("start");
    let ip = "127.0.0.1".parse().expect("ip");
    let group = rlockd::Sentinel::start_group(ip, &[0], &[("mymaster", nodes[0].addr())], 1).expect("sentinel");
    let mut ours = RawConn::connect(group[0].port());
    let (their_ports, our_ports) = ([rp.port, rr.port, real.port], [nodes[0].port(), nodes[1].port(), group[0].port()]);
    for cmd in [
        vec!["PING"],
        vec!["ROLE"],
        vec!["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"],
        vec!["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope"],
        vec!["SENTINEL", "MASTER", "nope"],
        vec!["SENTINEL", "CKQUORUM", "mymaster"],
        vec!["SENTINEL", "SENTINELS", "mymaster"],
        vec!["SENTINEL", "NOPE"],
        vec!["GET", "x"],
        vec!["CLIENT", "SETNAME", "n"],
        vec!["CLIENT", "GETNAME"],
    ] {
        assert_eq!(normalised(ours.cmd(&cmd), &our_ports), normalised(theirs.cmd(&cmd), &their_ports), "{cmd:?}");
    }
    for cmd in [vec!["SENTINEL", "MASTER", "mymaster"], vec!["SENTINEL", "REPLICAS", "mymaster"]] {
        let (o, t) = (ours.cmd(&cmd), theirs.cmd(&cmd));
        let first = |v: &Value| match v {
            Value::Agg(_, Some(items)) if matches!(items.first(), Some(Value::Agg(..))) => items[0].clone(),
            other => other.clone(),
        };
        assert_eq!(field_names(&first(&o)), field_names(&first(&t)), "{cmd:?}");
    }
    let info = |c: &mut RawConn, ports: &[u16]| {
        let t = text(c.cmd(&["INFO", "sentinel"]));
        let mut t = t.replace("\r\n", "\n");
        for (i, p) in ports.iter().enumerate() {
            t = t.replace(&p.to_string(), &format!("<port{i}>"));
        }
        t
    };
    assert_eq!(info(&mut ours, &our_ports), info(&mut theirs, &their_ports));
}
