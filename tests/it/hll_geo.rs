//! HyperLogLog and geo values cross between rlockd and redis-server: a
//! HyperLogLog's bytes (GET) written on one server and SET on the other
//! count, merge and grow the same there, and geo scores taken from one
//! server answer the same positions and searches on the other.

use super::common::oracle::Oracle;
use super::common::resp::{RawConn, Value};

fn bulk(v: Value) -> Vec<u8> {
    match v {
        Value::Bulk(Some(b)) => b,
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

fn cmd(c: &mut RawConn, args: &[&[u8]]) -> Value {
    c.send(&args.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
    c.read().expect("reply")
}

/// PFADDs `n` elements (in batches) on both connections.
fn pfadd_both(ours: &mut RawConn, redis: &mut RawConn, key: &str, from: usize, n: usize) {
    let elements: Vec<String> = (from..from + n).map(|i| format!("element:{i}")).collect();
    for batch in elements.chunks(500) {
        for c in [&mut *ours, &mut *redis] {
            let mut args: Vec<&str> = vec!["PFADD", key];
            args.extend(batch.iter().map(String::as_str));
            c.cmd(&args);
        }
    }
}

#[test]
fn hyperloglog_bytes_cross_between_servers() {
    let Some(oracle) = Oracle::start() else {
        return;
    };
    let srv = rlockd::Server::start().expect("rlockd");
    let mut ours = RawConn::connect(srv.port());
    let mut redis = RawConn::connect(oracle.port);
    for n in [0usize, 1, 7, 150, 900, 2500, 12000, 60000] {
        for c in [&mut ours, &mut redis] {
            c.cmd(&["FLUSHALL"]);
        }
        pfadd_both(&mut ours, &mut redis, "h", 0, n);
        if n == 0 {
            for c in [&mut ours, &mut redis] {
                c.cmd(&["PFADD", "h"]);
            }
        }
        let our_bytes = bulk(ours.cmd(&["GET", "h"]));
        let their_bytes = bulk(redis.cmd(&["GET", "h"]));
        assert_eq!(our_bytes, their_bytes, "PFADD of {n} elements: raw values differ");
        // Each server's bytes on the other server.
        cmd(&mut ours, &[b"SET", b"theirs", &their_bytes]);
        cmd(&mut redis, &[b"SET", b"ours", &our_bytes]);
        let count = redis.cmd(&["PFCOUNT", "h"]);
        assert_eq!(ours.cmd(&["PFCOUNT", "theirs"]), count, "PFCOUNT of redis-server's value, {n} elements");
        assert_eq!(redis.cmd(&["PFCOUNT", "ours"]), count, "PFCOUNT of rlockd's value, {n} elements");
        // Grown further, merged, encoded: still the same bytes.
        pfadd_both(&mut ours, &mut redis, "h", n, 300);
        let extra: Vec<String> = (n..n + 300).map(|i| format!("element:{i}")).collect();
        let mut args: Vec<&str> = vec!["PFADD", "theirs"];
        args.extend(extra.iter().map(String::as_str));
        ours.cmd(&args);
        args[1] = "ours";
        redis.cmd(&args);
        let grown_ours = bulk(ours.cmd(&["GET", "theirs"]));
        assert_eq!(grown_ours, bulk(redis.cmd(&["GET", "ours"])), "grown values differ, {n} elements");
        assert_eq!(grown_ours, bulk(redis.cmd(&["GET", "h"])), "grown value differs from redis-server's own");
        ours.cmd(&["PFMERGE", "m", "theirs", "h"]);
        redis.cmd(&["PFMERGE", "m", "ours", "h"]);
        assert_eq!(bulk(ours.cmd(&["GET", "m"])), bulk(redis.cmd(&["GET", "m"])), "PFMERGE, {n} elements");
        assert_eq!(ours.cmd(&["PFDEBUG", "ENCODING", "m"]), redis.cmd(&["PFDEBUG", "ENCODING", "m"]));
    }
}

#[test]
fn geo_scores_cross_between_servers() {
    let Some(oracle) = Oracle::start() else {
        return;
    };
    let srv = rlockd::Server::start().expect("rlockd");
    let mut ours = RawConn::connect(srv.port());
    let mut redis = RawConn::connect(oracle.port);
    let places = [
        ("13.361389", "38.115556", "Palermo"),
        ("15.087269", "37.502669", "Catania"),
        ("-122.4194", "37.7749", "sf"),
        ("139.6917", "35.6895", "tokyo"),
        ("-180", "-85.05112878", "corner"),
        ("0", "0", "zero"),
    ];
    for (lon, lat, name) in places {
        redis.cmd(&["GEOADD", "g", lon, lat, name]);
    }
    // redis-server's scores, copied to rlockd with ZADD.
    let Value::Agg(_, Some(items)) = redis.cmd(&["ZRANGE", "g", "0", "-1", "WITHSCORES"]) else { panic!("ZRANGE") };
    for pair in items.chunks(2) {
        let (Value::Bulk(Some(m)), Value::Bulk(Some(s))) = (&pair[0], &pair[1]) else { panic!("pair") };
        cmd(&mut ours, &[b"ZADD", b"g", s, m]);
    }
    let names: Vec<&str> = places.iter().map(|p| p.2).collect();
    let mut pos = vec!["GEOPOS", "g"];
    pos.extend(&names);
    assert_eq!(ours.cmd(&pos), redis.cmd(&pos));
    pos[0] = "GEOHASH";
    assert_eq!(ours.cmd(&pos), redis.cmd(&pos));
    let search = ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "12000", "km", "WITHDIST", "WITHCOORD", "ASC"];
    assert_eq!(ours.cmd(&search), redis.cmd(&search));
    // And rlockd's scores read back by redis-server.
    for (lon, lat, name) in places {
        ours.cmd(&["GEOADD", "mine", lon, lat, name]);
    }
    assert_eq!(
        ours.cmd(&["ZRANGE", "mine", "0", "-1", "WITHSCORES"]),
        redis.cmd(&["ZRANGE", "g", "0", "-1", "WITHSCORES"])
    );
}
