//! Hash field expiration over TCP (Redis 7.4's HEXPIRE family, 8.0's
//! HGETEX/HSETEX/HGETDEL): hidden under the default 7.0.15 profile, served
//! under 8.2.3, expired by the virtual clock with their events, callable
//! from Lua. Replies and errors are compared with redis-server 8.2.3 in
//! `tests/diff/hash_field_ttl.redis`.

use crate::common::resp::{RawConn, Value};

fn server_82() -> rlockd::Server {
    let params = vec![("redis-version".to_string(), "8.2.3".to_string())];
    rlockd::Server::start_with(rlockd::Config { params, ..Default::default() }).expect("start rlockd")
}

fn ints(v: &[i64]) -> Value {
    Value::Agg(b'*', Some(v.iter().map(|&i| Value::Int(i)).collect()))
}

fn bulk(s: &str) -> Value {
    Value::Bulk(Some(s.as_bytes().to_vec()))
}

#[test]
fn field_expiry_commands_follow_the_profile() {
    let srv = crate::common::server();
    let mut c = RawConn::connect(srv.port());
    for cmd in [
        "hexpire",
        "hpexpire",
        "hexpireat",
        "hpexpireat",
        "httl",
        "hpttl",
        "hexpiretime",
        "hpexpiretime",
        "hpersist",
        "hgetex",
        "hsetex",
        "hgetdel",
    ] {
        let Value::Error(e) = c.cmd(&[cmd, "h", "10", "FIELDS", "1", "a"]) else { panic!("{cmd} under 7.0.15") };
        assert!(String::from_utf8_lossy(&e).starts_with("ERR unknown command"), "{cmd}");
    }
    let srv = server_82();
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["HSET", "h", "a", "1"]), Value::Int(1));
    assert_eq!(c.cmd(&["HEXPIRE", "h", "10", "FIELDS", "2", "a", "b"]), ints(&[1, -2]));
    assert_eq!(c.cmd(&["HTTL", "h", "FIELDS", "1", "a"]), ints(&[10]));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "h"]), bulk("listpackex"));
}

/// The virtual clock expires fields as it expires keys: each due field
/// goes at once with `hexpired`, the key with its last field (`del`).
#[test]
fn the_virtual_clock_expires_fields() {
    let srv = server_82();
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]), Value::Simple(b"OK".to_vec()));
    let mut sub = RawConn::connect(srv.port());
    sub.send(&[b"PSUBSCRIBE".to_vec(), b"__keyevent@0__:*".to_vec()]);
    assert!(sub.read().is_some());
    let Value::Int(_) = c.cmd(&["RLOCKD", "CLOCK", "FREEZE"]) else { panic!("CLOCK FREEZE") };
    assert_eq!(c.cmd(&["HSET", "h", "a", "1", "b", "2"]), Value::Int(2));
    assert_eq!(c.cmd(&["HPEXPIRE", "h", "5000", "FIELDS", "1", "a"]), ints(&[1]));
    assert_eq!(c.cmd(&["HPEXPIRE", "h", "9000", "FIELDS", "1", "b"]), ints(&[1]));
    let pmessage = |event: &str| {
        Some(Value::Agg(
            b'*',
            Some(vec![bulk("pmessage"), bulk("__keyevent@0__:*"), bulk(&format!("__keyevent@0__:{event}")), bulk("h")]),
        ))
    };
    for event in ["hset", "hexpire", "hexpire"] {
        assert_eq!(sub.read(), pmessage(event));
    }
    let Value::Int(_) = c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "4999"]) else { panic!("ADVANCE") };
    assert_eq!(c.cmd(&["HPTTL", "h", "FIELDS", "2", "a", "b"]), ints(&[1, 4001]));
    let Value::Int(_) = c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "1"]) else { panic!("ADVANCE") };
    assert_eq!(c.cmd(&["HLEN", "h"]), Value::Int(1), "reclaimed at once, not left for a reader");
    assert_eq!(sub.read(), pmessage("hexpired"));
    let Value::Int(_) = c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "4000"]) else { panic!("ADVANCE") };
    assert_eq!(c.cmd(&["EXISTS", "h"]), Value::Int(0));
    assert_eq!(sub.read(), pmessage("hexpired"));
    assert_eq!(sub.read(), pmessage("del"));
}

/// Lua reaches the same commands through `redis.call`.
#[test]
fn scripts_call_field_expiry_commands() {
    let srv = server_82();
    let mut c = RawConn::connect(srv.port());
    let script = "redis.call('hset', KEYS[1], 'f', 'v'); \
                  local set = redis.call('hpexpire', KEYS[1], 60000, 'FIELDS', 1, 'f'); \
                  local got = redis.call('hgetex', KEYS[1], 'PERSIST', 'FIELDS', 1, 'f'); \
                  return {set[1], got[1], redis.call('httl', KEYS[1], 'FIELDS', 1, 'f')[1]}";
    assert_eq!(
        c.cmd(&["EVAL", script, "1", "h"]),
        Value::Agg(b'*', Some(vec![Value::Int(1), bulk("v"), Value::Int(-1)]))
    );
    let Value::Error(e) = c.cmd(&["EVAL", "return redis.call('hexpire', KEYS[1], -1, 'FIELDS', 1, 'f')", "1", "h"])
    else {
        panic!("an error")
    };
    assert!(String::from_utf8_lossy(&e).contains("invalid expire time, must be >= 0"));
}
