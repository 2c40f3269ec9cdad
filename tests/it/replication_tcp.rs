//! Replication over TCP with a real redis-server on either side: a
//! redis-server replica of an rlockd primary, an rlockd replica of a
//! redis-server primary, and the bytes `SYNC` reads from each. What is
//! compared: keyspaces (every key's `DUMP` and exact `PEXPIRETIME`, the
//! function libraries), `WAIT`, `INFO replication` field by field, and the
//! replication stream byte for byte.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::oracle::Oracle;
use crate::common::resp::{pretty, RawConn, Value};

const REENTRANT_LOCK: &str = include_str!("../../lua/reentrant_lock.lua");

/// No heartbeat during a test: the offsets must not depend on timing.
const NO_PING: &str = "3600";

fn ok(v: Value) {
    assert_eq!(v, Value::Simple(b"OK".to_vec()));
}

fn text(v: Value) -> String {
    match v {
        Value::Bulk(Some(b)) | Value::Verbatim(b) => String::from_utf8(b).expect("utf-8"),
        other => panic!("not text: {other:?}"),
    }
}

fn info_field(c: &mut RawConn, key: &str) -> Option<String> {
    text(c.cmd(&["INFO", "replication"])).lines().find_map(|l| l.strip_prefix(&format!("{key}:")).map(str::to_string))
}

/// Waits (bounded: a hang guard) until `cond` holds.
fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: never happened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A redis-server started as a replica-to-be: it loads the primary's file
/// from the socket (no dump.rdb left behind).
fn replica_oracle() -> Option<(Oracle, RawConn)> {
    let o = Oracle::start()?;
    let mut c = RawConn::connect(o.port);
    ok(c.cmd(&["CONFIG", "SET", "repl-diskless-load", "swapdb"]));
    Some((o, c))
}

/// A redis-server primary with no heartbeat and no transfer delay, its
/// files (the disk-based `SYNC` transfer) in a directory of the target.
fn primary_oracle() -> Option<(Oracle, RawConn)> {
    // A directory of its own: a redis-server loads the dump.rdb it finds.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("replication-tcp-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let o = Oracle::start_with(&["--dir", dir.to_str().expect("path")])?;
    let mut c = RawConn::connect(o.port);
    for (k, v) in [("repl-diskless-sync-delay", "0"), ("repl-ping-replica-period", NO_PING)] {
        ok(c.cmd(&["CONFIG", "SET", k, v]));
    }
    Some((o, c))
}

fn rlockd_primary() -> (rlockd::Server, RawConn) {
    let mut config = rlockd::Config::default();
    config.params.push(("repl-ping-replica-period".into(), NO_PING.into()));
    let srv = rlockd::Server::start_many(1, config).expect("start").remove(0);
    let c = RawConn::connect(srv.port());
    (srv, c)
}

/// Data that reaches a replica in the RDB file: every type, expiries,
/// several databases, a function library.
fn before_attach() -> Vec<Vec<String>> {
    let mut cmds: Vec<Vec<String>> = Vec::new();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    cmds.push(s(&["SET", "str", "hello"]));
    cmds.push(s(&["SET", "int", "12345"]));
    cmds.push(s(&["SET", "long", &"lorem ipsum ".repeat(20)]));
    cmds.push(s(&["SET", "ttl", "v", "PXAT", "4102444800000"]));
    cmds.push(s(&["RPUSH", "list", "a", "b", "c", "1", "2"]));
    cmds.push(s(&["SADD", "iset", "1", "2", "3"]));
    cmds.push(s(&["SADD", "set", "x", "y"]));
    cmds.push(s(&["HSET", "hash", "f1", "v1", "f2", "v2"]));
    cmds.push(s(&["ZADD", "zset", "1", "a", "2.5", "b"]));
    cmds.push(s(&["XADD", "stream", "1-1", "f", "v"]));
    cmds.push(s(&["XGROUP", "CREATE", "stream", "g", "0"]));
    let big: Vec<String> = (0..300).map(|i| format!("member-{i}")).collect();
    let mut sadd = s(&["SADD", "bigset"]);
    sadd.extend(big.iter().cloned());
    cmds.push(sadd);
    let mut hset = s(&["HSET", "bighash"]);
    for m in &big {
        hset.push(m.clone());
        hset.push("x".repeat(70));
    }
    cmds.push(hset);
    cmds.push(s(&["EVAL", REENTRANT_LOCK, "1", "lock:rdb", "60000", "uuid-0:1"]));
    cmds.push(s(&["SELECT", "5"]));
    cmds.push(s(&["SET", "in5", "five", "EX", "10000"]));
    cmds.push(s(&["SELECT", "0"]));
    cmds.push(s(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=tlib\nredis.register_function('tf', function(k, a) return redis.call('set', k[1], a[1]) end)",
    ]));
    cmds
}

/// Writes that reach a replica in the stream: scripts, lock scripts,
/// relative and absolute expiries, transactions, deletions.
fn after_attach() -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        s(&["SET", "a", "1"]),
        s(&["SET", "b", "2", "EX", "100"]),
        s(&["PEXPIRE", "a", "50000"]),
        s(&["EVAL", "redis.call('set','x','1') redis.call('expire','x',500) return 1", "0"]),
        s(&["EVAL", "redis.call('incr','y') redis.call('incrbyfloat','z','1.5') return 1", "0"]),
        s(&["EVAL", REENTRANT_LOCK, "1", "myLock", "30000", "uuid-1:1"]),
        s(&["EVAL", REENTRANT_LOCK, "1", "myLock", "30000", "uuid-1:1"]),
        s(&["SET", "lock", "token", "NX", "PX", "30000"]),
        s(&["FCALL", "tf", "1", "viafunc", "42"]),
        s(&["MULTI"]),
        s(&["HSET", "h", "f", "v"]),
        s(&["LPUSH", "list", "z"]),
        s(&["EXEC"]),
        s(&["SELECT", "3"]),
        s(&["SET", "c", "1"]),
        s(&["SELECT", "0"]),
        s(&["DEL", "str", "nokey"]),
        s(&["SREM", "iset", "2"]),
        s(&["XADD", "stream", "2-1", "f", "w"]),
        s(&["XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "stream", ">"]),
    ]
}

fn run(c: &mut RawConn, cmds: &[Vec<String>]) -> Vec<Value> {
    cmds.iter().map(|cmd| c.cmd(&cmd.iter().map(String::as_str).collect::<Vec<_>>())).collect()
}

/// Every key of every database: its type, encoding, content (members of
/// unordered types sorted: a hash table's order is the server's own), exact
/// `PEXPIRETIME`; and the function libraries.
fn keyspace(c: &mut RawConn) -> Vec<String> {
    let mut out = Vec::new();
    for db in 0..16 {
        c.cmd(&["SELECT", &db.to_string()]);
        let keys = c.cmd(&["KEYS", "*"]).bulks();
        let mut keys: Vec<String> = keys.into_iter().map(|k| String::from_utf8(k).expect("key")).collect();
        keys.sort();
        for k in keys {
            let Value::Simple(t) = c.cmd(&["TYPE", &k]) else { panic!("TYPE") };
            let content = match t.as_slice() {
                b"string" => c.cmd(&["GET", &k]),
                b"list" => c.cmd(&["LRANGE", &k, "0", "-1"]),
                b"set" => c.cmd(&["SMEMBERS", &k]).sorted(),
                b"hash" => c.cmd(&["HGETALL", &k]).sorted_pairs(),
                b"zset" => c.cmd(&["ZRANGE", &k, "0", "-1", "WITHSCORES"]),
                b"stream" => {
                    Value::Agg(b'*', Some(vec![c.cmd(&["XRANGE", &k, "-", "+"]), c.cmd(&["XINFO", "GROUPS", &k])]))
                }
                other => panic!("type {}", String::from_utf8_lossy(other)),
            };
            let enc = pretty(&c.cmd(&["OBJECT", "ENCODING", &k]));
            let at = pretty(&c.cmd(&["PEXPIRETIME", &k]));
            out.push(format!("db{db} {k} {enc} {} {at}", pretty(&content)));
        }
    }
    c.cmd(&["SELECT", "0"]);
    out.push(pretty(&c.cmd(&["FUNCTION", "LIST", "WITHCODE"])));
    out
}

/// Two keyspaces, line by line (the first difference named).
fn assert_same_keyspace(ours: Vec<String>, theirs: Vec<String>) {
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(a, b);
    }
    assert_eq!(ours.len(), theirs.len(), "{ours:#?}\n{theirs:#?}");
}

/// `INFO replication` with what differs between any two runs blanked out:
/// ids, ports, and a replica's acknowledged offset and lag (they depend on
/// when its once-a-second ACK last ran, in both servers).
fn normalised_info(c: &mut RawConn, ports: &[u16]) -> Vec<String> {
    let mut out = Vec::new();
    for line in text(c.cmd(&["INFO", "replication"])).lines() {
        let mut line = match line.split_once(':') {
            Some(("master_replid", _)) => "master_replid:<id>".to_string(),
            Some((k, _)) if k == "master_last_io_seconds_ago" => format!("{k}:<age>"),
            _ => line.to_string(),
        };
        for (i, p) in ports.iter().enumerate() {
            line = line.replace(&p.to_string(), &format!("<port{i}>"));
        }
        if let Some(at) = line.find(",offset=") {
            line.truncate(at);
            line.push_str(",offset=<acked>,lag=<lag>");
        }
        out.push(line);
    }
    out
}

#[test]
fn redis_server_replicates_an_rlockd_primary() {
    let Some((r1o, mut r1)) = replica_oracle() else { return };
    let Some((rp, mut redis_p)) = primary_oracle() else { return };
    let Some((r2o, mut r2)) = replica_oracle() else { return };
    let (ours, mut ours_p) = rlockd_primary();

    let before = before_attach();
    assert_eq!(run(&mut ours_p, &before), run(&mut redis_p, &before));
    ok(r1.cmd(&["REPLICAOF", "127.0.0.1", &ours.port().to_string()]));
    ok(r2.cmd(&["REPLICAOF", "127.0.0.1", &rp.port.to_string()]));
    until("the redis-server replica of rlockd online", || {
        info_field(&mut ours_p, "slave0").is_some_and(|s| s.contains("state=online"))
            && info_field(&mut r1, "master_link_status").as_deref() == Some("up")
    });
    until("the redis-server replica of redis-server online", || {
        info_field(&mut redis_p, "slave0").is_some_and(|s| s.contains("state=online"))
            && info_field(&mut r2, "master_link_status").as_deref() == Some("up")
    });

    let after = after_attach();
    let (mine, theirs) = (run(&mut ours_p, &after), run(&mut redis_p, &after));
    for ((m, t), cmd) in mine.iter().zip(&theirs).zip(&after) {
        assert_eq!(m, t, "{cmd:?}");
    }
    // WAIT counts the real replica's acknowledgement.
    assert_eq!(ours_p.cmd(&["WAIT", "1", "1000"]), Value::Int(1));
    assert_eq!(redis_p.cmd(&["WAIT", "1", "1000"]), Value::Int(1));
    until("the replica of rlockd caught up", || {
        info_field(&mut r1, "slave_repl_offset") == info_field(&mut ours_p, "master_repl_offset")
    });

    // The replica holds exactly rlockd's keyspace, deadlines included (but
    // a stream group's read counter, which Redis's XCLAIM form leaves
    // unset on a replica: the same between a redis-server primary and its
    // replicas).
    let primary: Vec<String> =
        keyspace(&mut ours_p).into_iter().map(|l| l.replace("\"entries-read\", :1", "\"entries-read\", nil")).collect();
    assert_same_keyspace(keyspace(&mut r1), primary);

    // INFO replication of the two primaries, field by field (the same
    // stream: the same offsets and backlog figures).
    let (a, b) =
        (normalised_info(&mut ours_p, &[ours.port(), r1o.port]), normalised_info(&mut redis_p, &[rp.port, r2o.port]));
    assert_eq!(a, b);
    // A replica's connection is not a connected client (INFO clients).
    let clients = |c: &mut RawConn| {
        text(c.cmd(&["INFO", "clients"])).lines().find(|l| l.starts_with("connected_clients:")).map(str::to_string)
    };
    assert_eq!(clients(&mut ours_p), clients(&mut redis_p));
    let stats = |c: &mut RawConn| {
        text(c.cmd(&["INFO", "stats"]))
            .lines()
            .filter(|l| l.starts_with("sync_"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(stats(&mut ours_p), stats(&mut redis_p));
    // The stream connection is a replica client.
    let list = text(ours_p.cmd(&["CLIENT", "LIST"]));
    assert!(list.lines().any(|l| l.contains(" flags=S ") && l.contains("cmd=replconf")), "{list}");
    let Value::Agg(_, Some(role)) = ours_p.cmd(&["ROLE"]) else { panic!("ROLE") };
    assert_eq!(role.len(), 3);
    for c in [&mut ours_p, &mut redis_p] {
        assert_eq!(text(c.cmd(&["CLIENT", "LIST", "TYPE", "replica"])).lines().count(), 1);
        assert_eq!(text(c.cmd(&["CLIENT", "LIST", "TYPE", "normal"])).lines().count(), 1);
    }
    // Its link cut, the replica comes back (from the backlog) and follows on.
    assert_eq!(ours_p.cmd(&["CLIENT", "KILL", "TYPE", "replica"]), Value::Int(1));
    ok(ours_p.cmd(&["SET", "after-the-cut", "1"]));
    until("the replica is back", || ours_p.cmd(&["WAIT", "1", "100"]) == Value::Int(1));
    assert_eq!(r1.cmd(&["GET", "after-the-cut"]), Value::Bulk(Some(b"1".to_vec())));
    assert!(stats(&mut ours_p).contains(&"sync_partial_ok:1".to_string()), "{:?}", stats(&mut ours_p));
}

#[test]
fn rlockd_replicates_a_redis_server_primary() {
    let Some((rp, mut redis_p)) = primary_oracle() else { return };
    let Some((_ro, mut redis_r)) = replica_oracle() else { return };
    let (ours, mut ours_r) = rlockd_primary();
    run(&mut redis_p, &before_attach());
    ok(ours_r.cmd(&["REPLICAOF", "127.0.0.1", &rp.port.to_string()]));
    ok(redis_r.cmd(&["REPLICAOF", "127.0.0.1", &rp.port.to_string()]));
    until("rlockd and redis-server online as replicas", || {
        info_field(&mut ours_r, "master_link_status").as_deref() == Some("up")
            && info_field(&mut redis_r, "master_link_status").as_deref() == Some("up")
            && info_field(&mut redis_p, "connected_slaves").as_deref() == Some("2")
    });
    run(&mut redis_p, &after_attach());
    assert_eq!(redis_p.cmd(&["WAIT", "2", "1000"]), Value::Int(2));
    until("both replicas caught up", || {
        let end = info_field(&mut redis_p, "master_repl_offset");
        info_field(&mut ours_r, "slave_repl_offset") == end && info_field(&mut redis_r, "slave_repl_offset") == end
    });
    // The same keyspace as a redis-server replica of the same primary (a
    // replica's, not the primary's: Redis's own replicas differ from their
    // primary in places, e.g. a stream group's entries-read after XCLAIM).
    assert_same_keyspace(keyspace(&mut ours_r), keyspace(&mut redis_r));
    // A read-only replica, as redis-server's.
    let refused = ours_r.cmd(&["SET", "k", "v"]);
    assert_eq!(
        format!("{refused:?}"),
        format!("{:?}", Value::Error(b"READONLY You can't write against a read only replica.".to_vec()))
    );
    let Value::Agg(_, Some(role)) = ours_r.cmd(&["ROLE"]) else { panic!("ROLE") };
    assert_eq!(role[3], Value::Bulk(Some(b"connected".to_vec())));
    // The link drops with the primary; the replica reconnects and
    // resynchronises when it is back (another redis-server on the same port
    // is not possible here: a new primary address instead).
    let Some((rp2, mut redis_p2)) = primary_oracle() else { return };
    ok(redis_p2.cmd(&["SET", "fresh", "1"]));
    ok(ours_r.cmd(&["REPLICAOF", "127.0.0.1", &rp2.port.to_string()]));
    until("rlockd follows the new primary", || {
        ours_r.cmd(&["EXISTS", "fresh"]) == Value::Int(1) && ours_r.cmd(&["EXISTS", "a"]) == Value::Int(0)
    });
    drop(rp2);
    until("rlockd sees the link down", || info_field(&mut ours_r, "master_link_status").as_deref() == Some("down"));
    assert!(info_field(&mut ours_r, "master_link_down_since_seconds").is_some());
    ok(ours_r.cmd(&["REPLICAOF", "NO", "ONE"]));
    ok(ours_r.cmd(&["SET", "k", "v"]));
    drop(ours);
}

/// `SYNC` on a raw connection, as Redis's test helper does: skips the
/// newlines a primary sends while it prepares the file, reads `$<len>` and
/// the file; returns the connection and the file.
fn attach_sync(port: u16) -> (TcpStream, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.write_all(b"SYNC\r\n").expect("write");
    let mut header = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        s.read_exact(&mut byte).expect("header");
        if byte[0] == b'\n' {
            if header.is_empty() {
                continue;
            }
            break;
        }
        header.push(byte[0]);
    }
    let header = String::from_utf8(header).expect("header");
    let len: usize = header.trim_end().strip_prefix('$').expect("$<len>").parse().expect("len");
    let mut file = vec![0; len];
    s.read_exact(&mut file).expect("file");
    (s, file)
}

#[test]
fn sync_streams_the_same_bytes_as_redis() {
    let Some((rp, mut redis_p)) = primary_oracle() else { return };
    let (ours, mut ours_p) = rlockd_primary();
    // Time-independent writes only (relative expiries become absolute
    // deadlines, which differ between two servers by their clocks).
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let cmds = vec![
        s(&["SET", "a", "1"]),
        s(&["SET", "b", "2", "EXAT", "4102444800"]),
        s(&["EXPIREAT", "a", "4102444800"]),
        s(&["EVAL", "redis.call('set','x','1') redis.call('incr','y') return 1", "0"]),
        s(&["EVAL", "return redis.call('get','nokey')", "0"]),
        s(&["SELECT", "3"]),
        s(&["MULTI"]),
        s(&["SET", "f", "1"]),
        s(&["SET", "f", "2"]),
        s(&["EXEC"]),
        s(&["INCRBYFLOAT", "g", "1.5"]),
        s(&["PUBLISH", "ch", "hi"]),
        s(&["SELECT", "0"]),
        s(&["DEL", "a", "nokey"]),
        s(&["HSET", "h", "f", "v"]),
        s(&["SPOP", "nokey"]),
        s(&[
            "FUNCTION",
            "LOAD",
            "#!lua name=slib\nredis.register_function('sf', function(k) return redis.call('incr', k[1]) end)",
        ]),
        s(&["FCALL", "sf", "1", "counter"]),
    ];
    let mut streams = Vec::new();
    for (port, c) in [(rp.port, &mut redis_p), (ours.port(), &mut ours_p)] {
        let (mut sock, file) = attach_sync(port);
        assert!(file.starts_with(b"REDIS0010"), "{:?}", &file[..file.len().min(9)]);
        let start: u64 = info_field(c, "master_repl_offset").expect("offset").parse().expect("offset");
        run(c, &cmds);
        let end: u64 = info_field(c, "master_repl_offset").expect("offset").parse().expect("offset");
        let mut bytes = vec![0; (end - start) as usize];
        sock.read_exact(&mut bytes).expect("stream");
        streams.push(bytes);
    }
    let shown = |b: &[u8]| String::from_utf8_lossy(b).replace("\r\n", " ");
    assert_eq!(shown(&streams[1]), shown(&streams[0]));
    assert_eq!(streams[1], streams[0]);
}

/// A primary that answers the handshake, then sends `payload` after
/// `+FULLRESYNC` and closes; counts the connections it got.
fn broken_primary(payload: Vec<u8>) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut s) = conn else { return };
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            // Every handshake command gets +OK (PING: +PONG) until PSYNC.
            while !got.windows(5).any(|w| w.eq_ignore_ascii_case(b"PSYNC")) {
                let Ok(n) = s.read(&mut buf) else { break };
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                let replies = buf[..n].iter().filter(|&&b| b == b'*').count();
                for _ in 0..replies {
                    let _ = s.write_all(b"+OK\r\n");
                }
            }
            let _ = s.write_all(b"+FULLRESYNC 0123456789012345678901234567890123456789 0\r\n");
            let _ = s.write_all(&payload);
        }
    });
    (port, seen)
}

#[test]
fn a_broken_primary_gives_a_retried_link_not_a_stalled_replica() {
    let mut bad_rdb = b"$40\r\nREDIS0010".to_vec();
    bad_rdb.extend_from_slice(&[0xfe, 0x00, 0x00, 0x03, b'k', b'e', b'y', 0xc3, 0xff, 0xff]);
    bad_rdb.resize(5 + 40, 0xff);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("a damaged RDB file", bad_rdb),
        ("a huge declared length, then nothing", b"$99999999999999\r\nREDIS".to_vec()),
        ("not a transfer at all", b"*3\r\n$3\r\nSET\r\n".to_vec()),
    ];
    for (what, payload) in cases {
        let (port, seen) = broken_primary(payload);
        let (_srv, mut c) = rlockd_primary();
        ok(c.cmd(&["SET", "mine", "1"]));
        ok(c.cmd(&["REPLICAOF", "127.0.0.1", &port.to_string()]));
        until(&format!("{what}: the link retried"), || seen.load(std::sync::atomic::Ordering::SeqCst) >= 2);
        // The node kept serving, with its data, and shows the link down.
        assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()), "{what}");
        assert_eq!(c.cmd(&["GET", "mine"]), Value::Bulk(Some(b"1".to_vec())), "{what}");
        assert_eq!(info_field(&mut c, "master_link_status").as_deref(), Some("down"), "{what}");
        ok(c.cmd(&["REPLICAOF", "NO", "ONE"]));
    }
}

#[test]
fn a_replica_that_does_not_read_is_dropped_at_its_output_limit() {
    let (_srv, mut c) = rlockd_primary();
    ok(c.cmd(&["CONFIG", "SET", "client-output-buffer-limit", "replica 1048576 0 0"]));
    let (sock, _file) = attach_sync(_srv.port());
    until("the replica attached", || info_field(&mut c, "connected_slaves").as_deref() == Some("1"));
    // The replica never reads: its stream piles up until the hard limit.
    let value = "v".repeat(64 * 1024);
    let mut i = 0;
    while info_field(&mut c, "connected_slaves").as_deref() == Some("1") {
        assert!(i < 2000, "the replica was never cut off");
        ok(c.cmd(&["SET", &format!("k{i}"), &value]));
        i += 1;
    }
    // Cut off after about the limit (what the socket buffers took, plus
    // the limit), and the primary goes on.
    assert!(i >= 8, "cut off after {i} writes");
    assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    assert!(!text(c.cmd(&["CLIENT", "LIST"])).contains("flags=S"));
    drop(sock);
}

/// Reads one `\r\n`-ended line.
fn read_line(s: &mut TcpStream) -> String {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        s.read_exact(&mut byte).expect("line");
        line.push(byte[0]);
    }
    String::from_utf8(line).expect("line").trim_end().to_string()
}

#[test]
fn psync_continues_from_the_backlog_as_redis_does() {
    let Some((rp, mut redis_p)) = primary_oracle() else { return };
    let (ours, mut ours_p) = rlockd_primary();
    let mut seen = Vec::new();
    for (port, c) in [(rp.port, &mut redis_p), (ours.port(), &mut ours_p)] {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        // As a replica does: each reply read before the next command.
        s.write_all(b"REPLCONF capa psync2\r\n").expect("write");
        assert_eq!(read_line(&mut s), "+OK");
        s.write_all(b"PSYNC ? -1\r\n").expect("write");
        let full = read_line(&mut s);
        let mut words = full.split(' ');
        assert_eq!(words.next(), Some("+FULLRESYNC"), "{full}");
        let (replid, offset): (String, u64) =
            (words.next().expect("id").into(), words.next().expect("off").parse().expect("off"));
        let len: usize = loop {
            let l = read_line(&mut s);
            if let Some(n) = l.trim_start_matches('\n').strip_prefix('$') {
                break n.parse().expect("len");
            }
        };
        let mut file = vec![0; len];
        s.read_exact(&mut file).expect("file");
        ok(c.cmd(&["SET", "x", "1"]));
        drop(s);
        // A replica that lost its link asks to go on from what it had.
        let mut again = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        again.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        again.write_all(b"REPLCONF capa psync2\r\n").expect("write");
        assert_eq!(read_line(&mut again), "+OK");
        again.write_all(format!("PSYNC {replid} {}\r\n", offset + 1).as_bytes()).expect("write");
        let cont = read_line(&mut again).replace(&replid, "<id>");
        let end: u64 = info_field(c, "master_repl_offset").expect("offset").parse().expect("offset");
        let mut rest = vec![0; (end - offset) as usize];
        again.read_exact(&mut rest).expect("backlog");
        // Another history: a full resynchronisation.
        let mut other = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        other.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        other.write_all(b"PSYNC 0123456789012345678901234567890123456789 5\r\n").expect("write");
        let refused = read_line(&mut other);
        seen.push((cont, String::from_utf8_lossy(&rest).into_owned(), refused.starts_with("+FULLRESYNC ")));
    }
    assert_eq!(seen[1], seen[0]);
    assert_eq!(seen[0].0, "+CONTINUE <id>");
}

#[test]
fn an_rlockd_process_replicates_another_started_with_replicaof() {
    use crate::common::binary::Binary;
    let primary = Binary::start(&["--port", "0", "--repl-ping-replica-period", NO_PING]);
    let mut p = RawConn::connect(primary.port);
    run(&mut p, &before_attach());
    let replica = Binary::start(&["--port", "0", "--replicaof", "127.0.0.1", &primary.port.to_string()]);
    let mut r = RawConn::connect(replica.port);
    until("the replica process online", || info_field(&mut r, "master_link_status").as_deref() == Some("up"));
    run(&mut p, &after_attach());
    assert_eq!(p.cmd(&["WAIT", "1", "1000"]), Value::Int(1));
    until("caught up", || info_field(&mut r, "slave_repl_offset") == info_field(&mut p, "master_repl_offset"));
    let primary_keys: Vec<String> =
        keyspace(&mut p).into_iter().map(|l| l.replace("\"entries-read\", :1", "\"entries-read\", nil")).collect();
    assert_same_keyspace(keyspace(&mut r), primary_keys);
    assert!(!replica.stderr().contains("no effect"), "{}", replica.stderr());
    drop(primary);
    until("the link seen down", || info_field(&mut r, "master_link_status").as_deref() == Some("down"));
    assert_eq!(r.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
}

#[test]
fn a_large_diskless_transfer_from_redis_server_loads_whole() {
    let Some((rp, mut redis_p)) = primary_oracle() else { return };
    ok(redis_p.cmd(&["DEBUG", "POPULATE", "60000", "key", "200"]));
    let (_ours, mut ours_r) = rlockd_primary();
    ok(ours_r.cmd(&["REPLICAOF", "127.0.0.1", &rp.port.to_string()]));
    until("rlockd loaded the file", || info_field(&mut ours_r, "master_link_status").as_deref() == Some("up"));
    assert_eq!(ours_r.cmd(&["DBSIZE"]), Value::Int(60000));
    for k in ["key:0", "key:31337", "key:59999"] {
        assert_eq!(ours_r.cmd(&["GET", k]), redis_p.cmd(&["GET", k]), "{k}");
    }
}

/// Every key of the current database as `key|type|content|pexpiretime`,
/// sorted, made by the server itself (one script: 200k keys would take
/// minutes of round trips).
const DUMP_KEYSPACE: &str = "
local keys = redis.call('KEYS', '*')
table.sort(keys)
local out = {}
for i, k in ipairs(keys) do
  local t = redis.call('TYPE', k)['ok']
  local v = t
  if t == 'string' then
    v = redis.call('GET', k)
  elseif t == 'hash' then
    local h = redis.call('HGETALL', k)
    local p = {}
    for j = 1, #h, 2 do p[#p + 1] = h[j] .. '=' .. h[j + 1] end
    table.sort(p)
    v = table.concat(p, ',')
  end
  out[i] = k .. '|' .. t .. '|' .. v .. '|' .. redis.call('PEXPIRETIME', k)
end
return out";

fn dump_keyspace(c: &mut RawConn) -> Vec<String> {
    // A debug build on a loaded machine takes its time over 200k keys.
    c.set_read_timeout(Duration::from_secs(300));
    let v = c.cmd(&["EVAL_RO", DUMP_KEYSPACE, "0"]);
    v.bulks().into_iter().map(|b| String::from_utf8(b).expect("utf-8")).collect()
}

/// Loads `n` strings `k:<i>` and `n` small hashes `h:<i>` (one script),
/// and 2,000 keys `t:<i>` that expire within 1.5 s.
fn load_keys(c: &mut RawConn, n: usize) {
    c.set_read_timeout(Duration::from_secs(300));
    let script = "for i = 1, tonumber(ARGV[1]) do
        redis.call('SET', 'k:' .. i, i)
        redis.call('HSET', 'h:' .. i, 'a', i, 'b', 'x')
      end
      for i = 1, 2000 do redis.call('SET', 't:' .. i, i, 'PX', 500 + i % 1000) end
      return 1";
    assert_eq!(c.cmd(&["EVAL", script, "0", &n.to_string()]), Value::Int(1));
}

/// Writes all over the keyspace until `stop`: INCRs of counters (their
/// expected values returned), DELs, SETs with an expiry, HSETs, new keys.
fn spawn_writer(
    port: u16,
    n: usize,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<(u64, std::collections::BTreeMap<String, i64>)> {
    std::thread::spawn(move || {
        let mut c = RawConn::connect(port);
        let mut counts = std::collections::BTreeMap::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut ops = 0u64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let i = (seed >> 8) as usize % n + 1;
            match seed % 6 {
                0 | 1 => {
                    let key = format!("k:{i}");
                    // A key deleted or set to a word is no counter: start it over.
                    let v = c.cmd(&["INCR", &key]);
                    match v {
                        Value::Int(x) => {
                            counts.insert(key, x);
                        }
                        _ => {
                            c.cmd(&["DEL", &key]);
                            counts.remove(&key);
                        }
                    }
                }
                2 => {
                    let key = format!("k:{}", (i * 7) % n + 1);
                    c.cmd(&["DEL", &key]);
                    counts.remove(&key);
                }
                3 => {
                    let key = format!("k:{}", (i * 13) % n + 1);
                    ok(c.cmd(&["SET", &key, "word", "EX", "1000"]));
                    counts.remove(&key);
                }
                4 => {
                    c.cmd(&["HSET", &format!("h:{i}"), "a", &ops.to_string(), "c", "new"]);
                }
                _ => {
                    ok(c.cmd(&["SET", &format!("n:{ops}"), "fresh"]));
                }
            }
            ops += 1;
        }
        (ops, counts)
    })
}

/// A full resynchronisation while a client writes all over a keyspace of
/// 200k keys (and keys expire): two redis-server replicas (the second
/// joins the file being made) and an rlockd process end with exactly the
/// primary's keyspace, each counter INCRed as many times as the client saw
/// (none applied twice, none lost), deadlines to the millisecond. A
/// replica that goes away in the middle of its file is dropped, and the
/// next full sync starts a file of its own.
#[test]
fn a_full_sync_under_writes_is_a_point_in_time_copy() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let Some((_r1o, mut r1)) = replica_oracle() else { return };
    let Some((_r2o, mut r2)) = replica_oracle() else { return };
    let (ours, mut p) = rlockd_primary();
    let n = 100_000;
    load_keys(&mut p, n);
    // (Some t: keys may be gone already.)
    assert!(p.cmd(&["DBSIZE"]).as_int().is_some_and(|k| k >= 2 * n as i64), "loaded");

    // A replica that leaves in the middle of its file.
    let mut gone = TcpStream::connect(("127.0.0.1", ours.port())).expect("connect");
    gone.write_all(b"SYNC\r\n").expect("write");
    until("the leaving replica attached", || text(p.cmd(&["INFO", "replication"])).contains("state=wait_bgsave"));
    drop(gone);

    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_writer(ours.port(), n, stop.clone());
    std::thread::sleep(Duration::from_millis(100));
    let port = ours.port().to_string();
    ok(r1.cmd(&["REPLICAOF", "127.0.0.1", &port]));
    ok(r2.cmd(&["REPLICAOF", "127.0.0.1", &port]));
    let ours_r = crate::common::binary::Binary::start(&["--port", "0", "--replicaof", "127.0.0.1", &port]);
    let mut r3 = RawConn::connect(ours_r.port);
    for (what, c) in [("r1", &mut r1), ("r2", &mut r2), ("r3", &mut r3)] {
        until(&format!("{what} in sync"), || info_field(c, "master_link_status").as_deref() == Some("up"));
    }
    // The writes go on a little after the files.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let (ops, counts) = writer.join().expect("writer");
    assert!(ops > 100, "the writer hardly ran: {ops} writes");
    // The short deadlines have passed and the primary expired them all.
    until("the t: keys expired", || p.cmd(&["EXISTS", "t:1", "t:1000", "t:2000"]) == Value::Int(0));
    until("every t: key deleted", || p.cmd(&["EVAL_RO", "return #redis.call('KEYS', 't:*')", "0"]) == Value::Int(0));
    assert_eq!(p.cmd(&["WAIT", "3", "5000"]), Value::Int(3));
    let offset = info_field(&mut p, "master_repl_offset");
    for (what, c) in [("r1", &mut r1), ("r2", &mut r2), ("r3", &mut r3)] {
        until(&format!("{what} caught up"), || info_field(c, "slave_repl_offset") == offset);
    }
    let primary = dump_keyspace(&mut p);
    for (key, count) in &counts {
        assert!(primary.contains(&format!("{key}|string|{count}|-1")), "{key} should be {count}");
    }
    for (what, c) in [("r1", &mut r1), ("r2", &mut r2), ("r3", &mut r3)] {
        let theirs = dump_keyspace(c);
        for (a, b) in primary.iter().zip(&theirs) {
            assert_eq!(a, b, "{what}");
        }
        assert_eq!(primary.len(), theirs.len(), "{what}");
    }

    // No file is being made any more: a full sync now is of now.
    ok(p.cmd(&["SET", "after", "1"]));
    let mut s = TcpStream::connect(("127.0.0.1", ours.port())).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let now: u64 = info_field(&mut p, "master_repl_offset").expect("offset").parse().expect("offset");
    s.write_all(b"PSYNC ? -1\r\n").expect("write");
    let full = read_line(&mut s);
    assert!(full.ends_with(&format!(" {now}")), "{full} (offset now {now})");
}
