//! Connection limits over TCP: `timeout` closes idle normal clients (on the
//! server clock: advancing it counts) but not blocked, subscribed or
//! monitoring ones; `maxclients` refuses the connection past the limit with
//! Redis's error; `maxmemory` reports and evicts from the allocator's figure.
//! Under an LFU policy, keys read often survive eviction and their counters
//! decay with the server clock.
//! The command-level limits (OOM, NOREPLICAS) are compared with redis-server
//! in `tests/diff/limits.redis`.

use std::time::{Duration, Instant};

use crate::common::resp::{RawConn, Value};
use crate::common::server;

fn ok() -> Value {
    Value::Simple(b"OK".to_vec())
}

/// Waits (bounded) until `conn` is closed by the server.
fn closed(conn: &mut RawConn) -> bool {
    conn.set_read_timeout(Duration::from_secs(10));
    conn.read().is_none()
}

#[test]
fn timeout_closes_idle_normal_clients_only() {
    let srv = server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    assert_eq!(admin.cmd(&["CONFIG", "SET", "timeout", "2"]), ok());
    let mut idle = RawConn::connect(port);
    assert_eq!(idle.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    let mut sub = RawConn::connect(port);
    sub.send(&[b"SUBSCRIBE".to_vec(), b"ch".to_vec()]);
    assert!(sub.read().is_some());
    let mut blocked = RawConn::connect(port);
    blocked.send(&[b"BLPOP".to_vec(), b"q".to_vec(), b"0".to_vec()]);
    let mut monitor = RawConn::connect(port);
    assert_eq!(monitor.cmd(&["MONITOR"]), ok());
    // Let the blocked client register before time jumps.
    let t0 = Instant::now();
    let blocked_clients = |c: &mut RawConn| match c.cmd(&["INFO", "clients"]) {
        Value::Bulk(Some(text)) => String::from_utf8_lossy(&text).contains("blocked_clients:1"),
        other => panic!("INFO clients: {other:?}"),
    };
    while !blocked_clients(&mut admin) {
        assert!(t0.elapsed() < Duration::from_secs(10), "BLPOP never blocked");
        std::thread::sleep(Duration::from_millis(5));
    }
    srv.clock().advance_ms(10_000);
    assert!(closed(&mut idle), "an idle client past the timeout is closed");
    assert!(closed(&mut admin), "so is every other normal client: all were idle for 10 s");
    let mut admin = RawConn::connect(port);
    // The others are still served.
    assert_eq!(
        sub.cmd(&["PING"]),
        Value::Agg(b'*', Some(vec![Value::Bulk(Some(b"pong".to_vec())), Value::Bulk(Some(vec![]))]))
    );
    assert_eq!(admin.cmd(&["RPUSH", "q", "v"]), Value::Int(1));
    assert_eq!(
        blocked.read(),
        Some(Value::Agg(b'*', Some(vec![Value::Bulk(Some(b"q".to_vec())), Value::Bulk(Some(b"v".to_vec()))])))
    );
    assert_eq!(admin.cmd(&["CONFIG", "SET", "timeout", "0"]), ok());
}

#[test]
fn maxclients_refuses_with_redis_error() {
    let srv = server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    assert_eq!(admin.cmd(&["CONFIG", "SET", "maxclients", "2"]), ok());
    let mut second = RawConn::connect(port);
    assert_eq!(second.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    let mut third = RawConn::connect(port);
    assert_eq!(third.read(), Some(Value::Error(b"ERR max number of clients reached".to_vec())));
    assert!(closed(&mut third));
    let Value::Bulk(Some(stats)) = admin.cmd(&["INFO", "stats"]) else { panic!("INFO stats") };
    assert!(String::from_utf8_lossy(&stats).contains("rejected_connections:1"));
}

#[test]
fn maxmemory_evicts_by_allocator_figure() {
    let srv = server();
    let mut c = RawConn::connect(srv.port());
    let Value::Bulk(Some(info)) = c.cmd(&["INFO", "memory"]) else { panic!("INFO memory") };
    let info = String::from_utf8(info).unwrap();
    let field = |name: &str| -> u64 {
        info.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.parse().ok()).expect(name)
    };
    // The allocator's figure, not RSS.
    assert!(field("used_memory:") > 0);
    assert!(field("used_memory_rss:") > 0);
    assert_ne!(field("used_memory:"), field("used_memory_rss:"));
    for i in 0..100 {
        assert_eq!(c.cmd(&["SET", &format!("k{i}"), "v", "EX", "1000"]), ok());
    }
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "volatile-lru"]), ok());
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "1"]), ok());
    assert_eq!(c.cmd(&["DBSIZE"]), Value::Int(0));
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "0"]), ok());
    let Value::Bulk(Some(stats)) = c.cmd(&["INFO", "stats"]) else { panic!("INFO stats") };
    assert!(String::from_utf8_lossy(&stats).contains("evicted_keys:100"));
}

#[test]
fn normal_output_buffer_limit_closes_the_client() {
    let srv = server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    assert_eq!(admin.cmd(&["CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0"]), ok());
    assert_eq!(
        admin.cmd(&["CONFIG", "GET", "client-output-buffer-limit"]).bulks()[1],
        b"normal 1048576 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60".to_vec()
    );
    let big = "x".repeat(2 << 20);
    assert_eq!(admin.cmd(&["SET", "big", &big]), ok());
    let mut reader = RawConn::connect(port);
    reader.send(&[b"GET".to_vec(), b"big".to_vec()]);
    assert!(closed(&mut reader), "a 2 MiB reply is over the 1 MiB hard limit");
    // A reply under the limit is served, and others are unaffected.
    assert_eq!(admin.cmd(&["STRLEN", "big"]), Value::Int(2 << 20));
    assert_eq!(admin.cmd(&["CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0"]), ok());
    let mut reader = RawConn::connect(port);
    assert_eq!(reader.cmd(&["GET", "big"]), Value::Bulk(Some(big.into_bytes())));
}

fn info_field(c: &mut RawConn, section: &str, name: &str) -> i64 {
    let Value::Bulk(Some(info)) = c.cmd(&["INFO", section]) else { panic!("INFO {section}") };
    let info = String::from_utf8(info).unwrap();
    info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.parse().ok()).expect(name)
}

/// Under `allkeys-lfu`, keys read often outlive keys written once: filling
/// the memory past `maxmemory` with cold keys evicts cold keys only. The
/// binary counts its own allocations, so the limit is its own figure.
#[test]
fn allkeys_lfu_keeps_frequently_used_keys() {
    let srv = crate::common::binary::Binary::start(&["--port", "0"]);
    let mut c = RawConn::connect(srv.port);
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]), ok());
    assert_eq!(c.cmd(&["CONFIG", "SET", "lfu-log-factor", "0"]), ok());
    let value = "x".repeat(4096);
    for i in 0..20 {
        assert_eq!(c.cmd(&["SET", &format!("hot{i}"), &value]), ok());
        for _ in 0..10 {
            assert!(matches!(c.cmd(&["GET", &format!("hot{i}")]), Value::Bulk(Some(_))));
        }
    }
    let limit = info_field(&mut c, "memory", "used_memory") + (2 << 20);
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", &limit.to_string()]), ok());
    // About 4 MB of cold keys: twice what fits under the limit.
    for i in 0..1000 {
        assert_eq!(c.cmd(&["SET", &format!("cold{i}"), &value]), ok());
    }
    let evicted = info_field(&mut c, "stats", "evicted_keys");
    assert!(evicted >= 300, "evicted {evicted} keys");
    for i in 0..20 {
        let key = format!("hot{i}");
        assert_eq!(c.cmd(&["EXISTS", &key]), Value::Int(1), "{key} evicted after {evicted} evictions");
        assert_eq!(c.cmd(&["OBJECT", "FREQ", &key]), Value::Int(15), "{key}");
    }
    let Value::Int(size) = c.cmd(&["DBSIZE"]) else { panic!("DBSIZE") };
    assert_eq!(size, 1020 - evicted);
}

/// An LFU counter loses one per `lfu-decay-time` minutes without access, on
/// the server clock; 0 turns the decay off.
#[test]
fn lfu_counter_decays_with_the_server_clock() {
    let srv = server();
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "volatile-lfu"]), ok());
    assert_eq!(c.cmd(&["CONFIG", "SET", "lfu-log-factor", "0"]), ok());
    let Value::Int(_) = c.cmd(&["RLOCKD", "CLOCK", "FREEZE"]) else { panic!("CLOCK FREEZE") };
    assert_eq!(c.cmd(&["SET", "k", "v"]), ok());
    for _ in 0..10 {
        c.cmd(&["GET", "k"]);
    }
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Value::Int(15));
    c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "180000"]);
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Value::Int(12), "three minutes, one each");
    assert_eq!(c.cmd(&["CONFIG", "SET", "lfu-decay-time", "2"]), ok());
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Value::Int(14), "three minutes, one per two");
    // An access stores the decayed counter (plus one) and restarts the period.
    c.cmd(&["GET", "k"]);
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Value::Int(15));
    c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "120000"]);
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Value::Int(14));
    assert_eq!(c.cmd(&["CONFIG", "SET", "lfu-decay-time", "0"]), ok());
    c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "6000000"]);
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Value::Int(15), "no decay");
    assert_eq!(c.cmd(&["CONFIG", "SET", "lfu-decay-time", "1"]), ok());
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Value::Int(0), "102 minutes");
}

/// With the default `lfu-log-factor` (10) the counter grows logarithmically:
/// Redis documents about 18 after a thousand accesses.
#[test]
fn lfu_default_log_factor_is_logarithmic() {
    let srv = server();
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "v"]), ok());
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "k"]), Value::Int(5));
    let script = "for i = 1, 1000 do redis.call('get', KEYS[1]) end return redis.call('object', 'freq', KEYS[1])";
    let Value::Int(freq) = c.cmd(&["EVAL", script, "1", "k"]) else { panic!("EVAL") };
    assert!((12..=26).contains(&freq), "counter {freq} after 1000 accesses");
}
