//! Redis 8.4's compare-and-set family under `--redis-version 8.4.0`:
//! `DIGEST`, `DELEX`, `SET … IFEQ/IFNE/IFDEQ/IFDNE`, `MSETEX`, over TCP.
//!
//! There is no Redis 8.4 server here to compare with (no `tests/diff` file
//! can name one): the expectations below are written from Redis 8.4's
//! documentation (redis.io's DIGEST, DELEX, SET and MSETEX pages, the
//! command JSON files of its source) and its issues (#14496/#14502: the
//! digest's leading zeros, its length check and case). Where those are
//! silent the test pins rlockd's documented choice (`cmd/string.rs`).

use crate::common::resp::{encode, pretty, RawConn, Value};

fn server(version: &str) -> rlockd::Server {
    rlockd::Server::start_with(config(version)).expect("start rlockd")
}

fn config(version: &str) -> rlockd::Config {
    rlockd::Config { params: vec![("redis-version".to_string(), version.to_string())], ..Default::default() }
}

fn ok() -> Value {
    Value::Simple(b"OK".to_vec())
}

fn bulk(s: &str) -> Value {
    Value::Bulk(Some(s.as_bytes().to_vec()))
}

fn err(v: Value) -> String {
    match v {
        Value::Error(e) => String::from_utf8_lossy(&e).into_owned(),
        other => panic!("not an error: {other:?}"),
    }
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const BAD_DIGEST: &str = "ERR must be exactly 16 hexadecimal characters";
/// XXH3-64 of "Hello world", as Redis 8.4's DIGEST page shows it.
const HELLO_DIGEST: &str = "b6acb9d84a38ff74";

#[test]
fn the_family_is_unknown_before_8_4() {
    for version in ["7.0.15", "8.2.3"] {
        let srv = server(version);
        let mut c = RawConn::connect(srv.port());
        for line in [vec!["DIGEST", "k"], vec!["DELEX", "k"], vec!["MSETEX", "1", "k", "v"]] {
            let e = err(c.cmd(&line));
            assert!(e.starts_with("ERR unknown command"), "{version} {line:?}: {e}");
        }
        assert_eq!(err(c.cmd(&["SET", "k", "v", "IFNE", "x"])), "ERR syntax error", "{version}");
        assert_eq!(err(c.cmd(&["SET", "k", "v", "IFEQ", "x"])), "ERR syntax error", "{version}: Valkey's IFEQ");
        let script = "return redis.call('delex', KEYS[1])";
        let e = err(c.cmd(&["EVAL", script, "1", "k"]));
        assert!(e.contains("Unknown Redis command called from script"), "{version}: {e}");
        assert_eq!(c.cmd(&["COMMAND", "INFO", "digest"]), Value::Agg(b'*', Some(vec![Value::Bulk(None)])), "{version}");
    }
    // Valkey keeps its own IFEQ and has none of the rest.
    let params = vec![("valkey-version".to_string(), "8.1.8".to_string())];
    let srv = rlockd::Server::start_with(rlockd::Config { params, ..Default::default() }).expect("valkey");
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["SET", "k", "v"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "w", "IFEQ", "v"]), ok());
    assert_eq!(err(c.cmd(&["SET", "k", "w", "IFNE", "v"])), "ERR syntax error");
    assert!(err(c.cmd(&["DELEX", "k"])).starts_with("ERR unknown command"));
}

#[test]
fn digest_replies() {
    let srv = server("8.4.0");
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["DIGEST", "k"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["SET", "k", "Hello world"]), ok());
    assert_eq!(c.cmd(&["DIGEST", "k"]), bulk(HELLO_DIGEST));
    // Leading zeros are printed (redis/redis#14496).
    let zeros = "v8lf0c11xh8ymlqztfd3eeq16kfn4sspw7fqmnuuq3k3t75em5wdizgcdw7uc26nnf961u2jkfzkjytls2kwlj7626sd";
    assert_eq!(c.cmd(&["SET", "z", zeros]), ok());
    assert_eq!(c.cmd(&["DIGEST", "z"]), bulk("00006c38adf31777"));
    // An integer-encoded value hashes as its digits.
    assert_eq!(c.cmd(&["SET", "n", "12345"]), ok());
    assert_eq!(c.cmd(&["INCR", "n"]), Value::Int(12346));
    assert_eq!(c.cmd(&["SET", "s", "12346"]), ok());
    assert_eq!(c.cmd(&["DIGEST", "n"]), c.cmd(&["DIGEST", "s"]));
    assert_eq!(c.cmd(&["HSET", "h", "f", "v"]), Value::Int(1));
    assert_eq!(err(c.cmd(&["DIGEST", "h"])), WRONGTYPE);
    assert_eq!(err(c.cmd(&["DIGEST"])), "ERR wrong number of arguments for 'digest' command");
    assert_eq!(err(c.cmd(&["DIGEST", "a", "b"])), "ERR wrong number of arguments for 'digest' command");
}

#[test]
fn delex_replies_and_errors() {
    let srv = server("8.4.0");
    let mut c = RawConn::connect(srv.port());
    // No condition: any type, like DEL of one key.
    assert_eq!(c.cmd(&["DELEX", "nokey"]), Value::Int(0));
    assert_eq!(c.cmd(&["HSET", "h", "f", "v"]), Value::Int(1));
    assert_eq!(c.cmd(&["DELEX", "h"]), Value::Int(1));
    assert_eq!(c.cmd(&["EXISTS", "h"]), Value::Int(0));
    // Conditions on a string.
    assert_eq!(c.cmd(&["SET", "k", "Hello world"]), ok());
    assert_eq!(c.cmd(&["DELEX", "k", "IFEQ", "other"]), Value::Int(0));
    assert_eq!(c.cmd(&["DELEX", "k", "IFNE", "Hello world"]), Value::Int(0));
    assert_eq!(c.cmd(&["DELEX", "k", "IFDEQ", "0000000000000000"]), Value::Int(0));
    assert_eq!(c.cmd(&["DELEX", "k", "IFDNE", HELLO_DIGEST]), Value::Int(0));
    assert_eq!(c.cmd(&["GET", "k"]), bulk("Hello world"));
    assert_eq!(c.cmd(&["DELEX", "k", "ifeq", "Hello world"]), Value::Int(1));
    assert_eq!(c.cmd(&["SET", "k", "Hello world"]), ok());
    assert_eq!(c.cmd(&["DELEX", "k", "IFNE", "other"]), Value::Int(1));
    assert_eq!(c.cmd(&["SET", "k", "Hello world"]), ok());
    // Digests compare without regard to case (#14502).
    assert_eq!(c.cmd(&["DELEX", "k", "IFDEQ", &HELLO_DIGEST.to_uppercase()]), Value::Int(1));
    assert_eq!(c.cmd(&["SET", "k", "Hello world"]), ok());
    assert_eq!(c.cmd(&["DELEX", "k", "IFDNE", "0123456789abcdef"]), Value::Int(1));
    // A missing key answers 0 whatever the condition.
    assert_eq!(c.cmd(&["DELEX", "k", "IFEQ", "x"]), Value::Int(0));
    assert_eq!(c.cmd(&["DELEX", "k", "IFDEQ", "short"]), Value::Int(0));
    // Errors.
    assert_eq!(c.cmd(&["SET", "k", "v"]), ok());
    assert_eq!(err(c.cmd(&["DELEX", "k", "IFDEQ", "abc"])), BAD_DIGEST);
    assert_eq!(err(c.cmd(&["DELEX", "k", "IFDNE", "0123456789abcdef0"])), BAD_DIGEST);
    assert_eq!(err(c.cmd(&["DELEX", "k", "IFXX", "v"])), "ERR syntax error");
    assert_eq!(err(c.cmd(&["DELEX", "k", "IFEQ"])), "ERR wrong number of arguments for 'delex' command");
    assert_eq!(err(c.cmd(&["DELEX", "k", "IFEQ", "v", "IFNE"])), "ERR wrong number of arguments for 'delex' command");
    assert_eq!(err(c.cmd(&["DELEX"])), "ERR wrong number of arguments for 'delex' command");
    assert_eq!(c.cmd(&["LPUSH", "l", "v"]), Value::Int(1));
    assert_eq!(err(c.cmd(&["DELEX", "l", "IFEQ", "v"])), WRONGTYPE);
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
}

#[test]
fn set_conditions() {
    let srv = server("8.4.0");
    let mut c = RawConn::connect(srv.port());
    // A missing key: IFEQ/IFDEQ never create it, IFNE/IFDNE do.
    assert_eq!(c.cmd(&["SET", "k", "v", "IFEQ", "x"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["SET", "k", "v", "IFDEQ", HELLO_DIGEST]), Value::Bulk(None));
    assert_eq!(c.cmd(&["EXISTS", "k"]), Value::Int(0));
    assert_eq!(c.cmd(&["SET", "k", "Hello world", "IFNE", "x"]), ok());
    assert_eq!(c.cmd(&["SET", "k2", "v", "IFDNE", HELLO_DIGEST]), ok());
    // A present string.
    assert_eq!(c.cmd(&["SET", "k", "a", "IFEQ", "nope"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["SET", "k", "a", "IFNE", "Hello world"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["SET", "k", "a", "IFDNE", HELLO_DIGEST]), Value::Bulk(None));
    assert_eq!(c.cmd(&["SET", "k", "a", "IFDEQ", &HELLO_DIGEST.to_uppercase()]), ok());
    assert_eq!(c.cmd(&["SET", "k", "b", "IFEQ", "a", "PX", "100000"]), ok());
    assert!(matches!(c.cmd(&["PTTL", "k"]), Value::Int(t) if t > 90_000), "the expiry applies with the condition");
    assert_eq!(c.cmd(&["SET", "k", "c", "IFNE", "zz", "KEEPTTL"]), ok());
    assert!(matches!(c.cmd(&["PTTL", "k"]), Value::Int(t) if t > 90_000));
    // GET answers the old value whether or not the condition held.
    assert_eq!(c.cmd(&["SET", "k", "d", "IFEQ", "nope", "GET"]), bulk("c"));
    assert_eq!(c.cmd(&["SET", "k", "d", "GET", "IFEQ", "c"]), bulk("c"));
    assert_eq!(c.cmd(&["GET", "k"]), bulk("d"));
    assert_eq!(c.cmd(&["SET", "nokey", "d", "IFNE", "x", "GET"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["GET", "nokey"]), bulk("d"));
    // Exclusivity: a condition after NX/XX or another condition is a syntax
    // error; the same one again replaces its value; NX after a condition is
    // taken (Redis 8.4's parser checks NX against XX only) and aborts.
    for line in [
        vec!["SET", "k", "v", "NX", "IFEQ", "d"],
        vec!["SET", "k", "v", "XX", "IFNE", "d"],
        vec!["SET", "k", "v", "IFEQ", "d", "IFNE", "d"],
        vec!["SET", "k", "v", "IFDEQ", HELLO_DIGEST, "IFEQ", "d"],
        vec!["SET", "k", "v", "IFEQ"],
    ] {
        assert_eq!(err(c.cmd(&line)), "ERR syntax error", "{line:?}");
    }
    assert_eq!(c.cmd(&["SET", "k", "e", "IFEQ", "x", "IFEQ", "d"]), ok());
    assert_eq!(c.cmd(&["SET", "k", "f", "IFEQ", "e", "NX"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["SET", "k", "f", "IFEQ", "e", "XX"]), ok());
    // Types and digests.
    assert_eq!(c.cmd(&["RPUSH", "l", "x"]), Value::Int(1));
    assert_eq!(err(c.cmd(&["SET", "l", "v", "IFEQ", "x"])), WRONGTYPE);
    assert_eq!(err(c.cmd(&["SET", "l", "v", "IFNE", "x"])), WRONGTYPE);
    assert_eq!(err(c.cmd(&["SET", "k", "v", "IFDEQ", "abc"])), BAD_DIGEST);
    assert_eq!(c.cmd(&["SET", "missing", "v", "IFDEQ", "abc"]), Value::Bulk(None), "no key, no digest check");
    // The plain forms are untouched.
    assert_eq!(c.cmd(&["SET", "l", "v"]), ok());
    assert_eq!(c.cmd(&["SET", "l", "w", "NX"]), Value::Bulk(None));
}

#[test]
fn msetex_replies_and_errors() {
    let srv = server("8.4.0");
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["MSETEX", "2", "a", "1", "b", "2", "EX", "100"]), Value::Int(1));
    assert_eq!(c.cmd(&["MGET", "a", "b"]), Value::Agg(b'*', Some(vec![bulk("1"), bulk("2")])));
    for k in ["a", "b"] {
        assert!(matches!(c.cmd(&["TTL", k]), Value::Int(t) if (99..=100).contains(&t)), "{k}");
    }
    // NX: nothing is set when one key exists; XX likewise when one is missing.
    assert_eq!(c.cmd(&["MSETEX", "2", "a", "x", "c", "x", "NX"]), Value::Int(0));
    assert_eq!(c.cmd(&["EXISTS", "c"]), Value::Int(0));
    assert_eq!(c.cmd(&["MSETEX", "2", "a", "x", "c", "x", "XX", "PX", "5000"]), Value::Int(0));
    assert_eq!(c.cmd(&["GET", "a"]), bulk("1"));
    assert_eq!(c.cmd(&["MSETEX", "2", "c", "3", "d", "4", "nx"]), Value::Int(1));
    // KEEPTTL keeps each key's TTL; no expiry option drops it, as MSET does.
    assert_eq!(c.cmd(&["MSETEX", "2", "a", "10", "c", "30", "XX", "KEEPTTL"]), Value::Int(1));
    assert!(matches!(c.cmd(&["TTL", "a"]), Value::Int(t) if t > 90));
    assert_eq!(c.cmd(&["TTL", "c"]), Value::Int(-1));
    assert_eq!(c.cmd(&["MSETEX", "1", "b", "20"]), Value::Int(1));
    assert_eq!(c.cmd(&["TTL", "b"]), Value::Int(-1));
    // Options in any order; absolute times.
    assert_eq!(c.cmd(&["MSETEX", "1", "e", "5", "PXAT", "99999999999999", "NX"]), Value::Int(1));
    assert_eq!(c.cmd(&["PEXPIRETIME", "e"]), Value::Int(99_999_999_999_999));
    // Overwrites another type.
    assert_eq!(c.cmd(&["HSET", "h", "f", "v"]), Value::Int(1));
    assert_eq!(c.cmd(&["MSETEX", "1", "h", "s"]), Value::Int(1));
    assert_eq!(c.cmd(&["GET", "h"]), bulk("s"));
    // Errors.
    for n in ["0", "-1", "abc", "2147483648"] {
        assert_eq!(err(c.cmd(&["MSETEX", n, "a", "1"])), "ERR invalid numkeys value", "{n}");
    }
    assert_eq!(err(c.cmd(&["MSETEX", "2", "a", "1"])), "ERR wrong number of key-value pairs");
    assert_eq!(err(c.cmd(&["MSETEX", "2", "a", "1", "b"])), "ERR wrong number of key-value pairs");
    assert_eq!(err(c.cmd(&["MSETEX", "1", "a"])), "ERR wrong number of arguments for 'msetex' command");
    for line in [
        vec!["MSETEX", "1", "a", "1", "GET"],
        vec!["MSETEX", "1", "a", "1", "NX", "XX"],
        vec!["MSETEX", "1", "a", "1", "IFEQ", "1"],
        vec!["MSETEX", "1", "a", "1", "EX", "10", "PX", "10"],
        vec!["MSETEX", "1", "a", "1", "KEEPTTL", "EX", "10"],
        vec!["MSETEX", "1", "a", "1", "EX"],
        vec!["MSETEX", "1", "a", "1", "b"],
    ] {
        assert_eq!(err(c.cmd(&line)), "ERR syntax error", "{line:?}");
    }
    for bad in ["0", "-5"] {
        let e = err(c.cmd(&["MSETEX", "1", "a", "1", "EX", bad]));
        assert_eq!(e, "ERR invalid expire time in 'msetex' command");
    }
    assert_eq!(err(c.cmd(&["MSETEX", "1", "a", "1", "PX", "x"])), "ERR value is not an integer or out of range");
    assert_eq!(c.cmd(&["GET", "a"]), bulk("10"), "no error changed anything");
}

#[test]
fn metadata_under_8_4() {
    let srv = server("8.4.0");
    let mut c = RawConn::connect(srv.port());
    let Value::Agg(_, Some(info)) = c.cmd(&["COMMAND", "INFO", "msetex", "digest", "delex"]) else { panic!("INFO") };
    let Value::Agg(_, Some(msetex)) = &info[0] else { panic!("msetex: {:?}", info[0]) };
    assert_eq!(msetex[0], bulk("msetex"));
    assert_eq!(msetex[1], Value::Int(-4));
    assert_eq!(
        msetex[2],
        Value::Agg(
            b'*',
            Some(["write", "denyoom", "movablekeys"].iter().map(|f| Value::Simple(f.as_bytes().to_vec())).collect())
        )
    );
    assert_eq!(&msetex[3..6], &[Value::Int(0), Value::Int(0), Value::Int(0)]);
    let Value::Agg(_, Some(digest)) = &info[1] else { panic!("digest") };
    assert_eq!(
        &digest[1..6],
        &[
            Value::Int(2),
            Value::Agg(b'*', Some(vec![Value::Simple(b"readonly".to_vec()), Value::Simple(b"fast".to_vec())])),
            Value::Int(1),
            Value::Int(1),
            Value::Int(1),
        ]
    );
    assert!(matches!(&info[2], Value::Agg(_, Some(d)) if d[1] == Value::Int(-2)));
    // Keys by the key specs written for 8.4.
    let keys = c.cmd(&["COMMAND", "GETKEYS", "MSETEX", "2", "a", "1", "b", "2", "EX", "10"]);
    assert_eq!(keys, Value::Agg(b'*', Some(vec![bulk("a"), bulk("b")])));
    let keys = c.cmd(&["COMMAND", "GETKEYS", "DELEX", "k", "IFEQ", "v"]);
    assert_eq!(keys, Value::Agg(b'*', Some(vec![bulk("k")])));
    // SET's history gained its 8.4 line; the ACL category lists them.
    let docs = pretty(&c.cmd(&["COMMAND", "DOCS", "set"]));
    assert!(docs.contains("Added 'IFEQ', 'IFNE', 'IFDEQ', 'IFDNE' options."), "{docs}");
    assert!(docs.contains("ifdeq-digest"));
    let cat = c.cmd(&["ACL", "CAT", "string"]).bulks();
    for name in ["digest", "delex", "msetex"] {
        assert!(cat.contains(&name.as_bytes().to_vec()), "{name} in @string");
    }
    assert_eq!(c.cmd(&["COMMAND", "COUNT"]), {
        let old = server("8.2.3");
        let mut o = RawConn::connect(old.port());
        let Value::Int(n) = o.cmd(&["COMMAND", "COUNT"]) else { panic!("count") };
        Value::Int(n + 3)
    });
}

#[test]
fn acl_write_and_read_permissions() {
    let srv = server("8.4.0");
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["SET", "k", "v"]), ok());
    assert_eq!(c.cmd(&["ACL", "SETUSER", "r", "on", "nopass", "~*", "+@read"]), ok());
    assert_eq!(c.cmd(&["ACL", "SETUSER", "w", "on", "nopass", "~*", "+@write"]), ok());
    let mut r = RawConn::connect(srv.port());
    assert_eq!(r.cmd(&["AUTH", "r", "x"]), ok());
    assert_eq!(r.cmd(&["DIGEST", "k"]).shape(), "$");
    assert!(err(r.cmd(&["DELEX", "k"])).starts_with("NOPERM"));
    assert!(err(r.cmd(&["MSETEX", "1", "k", "v"])).starts_with("NOPERM"));
    let mut w = RawConn::connect(srv.port());
    assert_eq!(w.cmd(&["AUTH", "w", "x"]), ok());
    assert!(err(w.cmd(&["DIGEST", "k"])).starts_with("NOPERM"));
    assert_eq!(w.cmd(&["DELEX", "k", "IFNE", "x"]), Value::Int(1));
}

#[test]
fn events_and_watch() {
    let srv = server("8.4.0");
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]), ok());
    let mut sub = RawConn::connect(srv.port());
    sub.send(&[b"PSUBSCRIBE".to_vec(), b"__keyevent@0__:*".to_vec()]);
    assert!(sub.read().is_some());
    let mut next = || {
        let Some(Value::Agg(_, Some(m))) = sub.read() else { panic!("event") };
        let (Value::Bulk(Some(ch)), Value::Bulk(Some(key))) = (&m[2], &m[3]) else { panic!("{m:?}") };
        format!(
            "{} {}",
            String::from_utf8_lossy(ch).trim_start_matches("__keyevent@0__:"),
            String::from_utf8_lossy(key)
        )
    };
    assert_eq!(c.cmd(&["MSETEX", "2", "a", "1", "b", "2", "PX", "100000"]), Value::Int(1));
    assert_eq!(c.cmd(&["SET", "a", "3", "IFEQ", "1"]), ok());
    assert_eq!(c.cmd(&["SET", "a", "4", "IFEQ", "1"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["DELEX", "a", "IFEQ", "nope"]), Value::Int(0));
    assert_eq!(c.cmd(&["DELEX", "a", "IFEQ", "3"]), Value::Int(1));
    // MSETEX: each key's deadline, then its value (Redis 8.4's order); the
    // failed conditions send nothing.
    let got: Vec<String> = (0..6).map(|_| next()).collect();
    assert_eq!(got, ["expire a", "set a", "expire b", "set b", "set a", "del a"]);

    // WATCH: a DELEX that deletes touches the key, one that does not leaves it.
    let mut w = RawConn::connect(srv.port());
    assert_eq!(w.cmd(&["WATCH", "b"]), ok());
    assert_eq!(c.cmd(&["DELEX", "b", "IFEQ", "nope"]), Value::Int(0));
    assert_eq!(w.cmd(&["MULTI"]), ok());
    assert_eq!(w.cmd(&["GET", "b"]), Value::Simple(b"QUEUED".to_vec()));
    assert_eq!(w.cmd(&["EXEC"]), Value::Agg(b'*', Some(vec![bulk("2")])));
    assert_eq!(w.cmd(&["WATCH", "b"]), ok());
    let d = digest_of(&mut c, "b");
    assert_eq!(c.cmd(&["DELEX", "b", "IFDEQ", &d]), Value::Int(1));
    assert_eq!(w.cmd(&["MULTI"]), ok());
    assert_eq!(w.cmd(&["GET", "b"]), Value::Simple(b"QUEUED".to_vec()));
    assert_eq!(w.cmd(&["EXEC"]), Value::Agg(b'*', None));
}

fn digest_of(c: &mut RawConn, key: &str) -> String {
    let Value::Bulk(Some(d)) = c.cmd(&["DIGEST", key]) else { panic!("DIGEST {key}") };
    String::from_utf8(d).expect("hex")
}

/// Lua calls them through the same table; the shapes Redisson 4.1 uses for
/// `RBucket.compareAndSet`/`compareAndDelete` and `RBuckets.setIfAllKeys`
/// (one command each, checked here from a script and directly).
#[test]
fn scripts_and_redisson_shaped_calls() {
    let srv = server("8.4.0");
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["SET", "bucket", "old"]), ok());
    let cas = "local r = redis.call('set', KEYS[1], ARGV[2], 'IFEQ', ARGV[1]); if r then return 1 end; return 0";
    assert_eq!(c.cmd(&["EVAL", cas, "1", "bucket", "nope", "new"]), Value::Int(0));
    assert_eq!(c.cmd(&["EVAL", cas, "1", "bucket", "old", "new"]), Value::Int(1));
    assert_eq!(c.cmd(&["GET", "bucket"]), bulk("new"));
    let cad = "return redis.call('delex', KEYS[1], 'IFDEQ', redis.call('digest', KEYS[1]))";
    assert_eq!(c.cmd(&["EVAL", cad, "1", "bucket"]), Value::Int(1));
    assert_eq!(c.cmd(&["EXISTS", "bucket"]), Value::Int(0));
    let set_all = "return redis.call('msetex', #KEYS, KEYS[1], ARGV[1], KEYS[2], ARGV[2], 'XX', 'PX', ARGV[3])";
    assert_eq!(c.cmd(&["EVAL", set_all, "2", "{b}1", "{b}2", "x", "y", "60000"]), Value::Int(0));
    assert_eq!(c.cmd(&["MSET", "{b}1", "0", "{b}2", "0"]), ok());
    assert_eq!(c.cmd(&["EVAL", set_all, "2", "{b}1", "{b}2", "x", "y", "60000"]), Value::Int(1));
    assert_eq!(c.cmd(&["MGET", "{b}1", "{b}2"]), Value::Agg(b'*', Some(vec![bulk("x"), bulk("y")])));
    // Errors come back to the script as Redis's.
    let bad = "return redis.pcall('delex', KEYS[1], 'IFDEQ', 'abc')";
    assert_eq!(c.cmd(&["EVAL", bad, "1", "{b}1"]), Value::Error(BAD_DIGEST.as_bytes().to_vec()));
    // DIGEST is read-only: allowed in EVAL_RO, DELEX is not.
    assert_eq!(c.cmd(&["EVAL_RO", "return redis.call('digest', KEYS[1])", "1", "{b}1"]).shape(), "$");
    let e = err(c.cmd(&["EVAL_RO", "return redis.call('delex', KEYS[1])", "1", "{b}1"]));
    assert!(e.contains("Write commands are not allowed from read-only scripts"), "{e}");
}

/// What the replica receives: `DELEX` as `DEL key`, `MSETEX … PX` with
/// `PXAT` and the deadline, `SET … IFEQ` as it came (the condition held on
/// the primary, and holds on the replica, which has the same value).
#[test]
fn replication_to_an_in_process_replica() {
    let nodes = rlockd::Server::start_with_replicas(1, config("8.4.0")).expect("start");
    let mut p = RawConn::connect(nodes[0].port());
    let mut r = RawConn::connect(nodes[1].port());
    let offset = |c: &mut RawConn| -> usize {
        let Value::Bulk(Some(text)) = c.cmd(&["INFO", "replication"]) else { panic!("INFO") };
        let text = String::from_utf8(text).expect("utf-8");
        let line = text.lines().find(|l| l.starts_with("master_repl_offset:")).expect("offset");
        line["master_repl_offset:".len()..].trim().parse().expect("number")
    };
    let sync = |p: &mut RawConn| assert_eq!(p.cmd(&["WAIT", "1", "5000"]), Value::Int(1));
    assert_eq!(p.cmd(&["SET", "k", "v"]), ok());
    sync(&mut p);

    let before = offset(&mut p);
    assert_eq!(p.cmd(&["DELEX", "k", "IFEQ", "v"]), Value::Int(1));
    let after = offset(&mut p);
    let del = encode(&[b"DEL".to_vec(), b"k".to_vec()]).len();
    assert_eq!(after - before, del, "DELEX is replicated as DEL k");
    sync(&mut p);
    assert_eq!(r.cmd(&["EXISTS", "k"]), Value::Int(0));

    let before = offset(&mut p);
    assert_eq!(p.cmd(&["DELEX", "k"]), Value::Int(0));
    assert_eq!(p.cmd(&["SET", "nokey", "v", "IFEQ", "x"]), Value::Bulk(None));
    assert_eq!(offset(&mut p), before, "nothing changed, nothing replicated");

    assert_eq!(p.cmd(&["MSETEX", "2", "a", "1", "b", "2", "PX", "100000"]), Value::Int(1));
    let Value::Int(deadline) = p.cmd(&["PEXPIRETIME", "a"]) else { panic!("deadline") };
    let after = offset(&mut p);
    let line: Vec<Vec<u8>> = ["MSETEX", "2", "a", "1", "b", "2", "PXAT", &deadline.to_string()]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    sync(&mut p);
    assert_eq!(after - before, encode(&line).len(), "PX became PXAT");
    assert_eq!(r.cmd(&["PEXPIRETIME", "a"]), Value::Int(deadline));
    assert_eq!(r.cmd(&["PEXPIRETIME", "b"]), Value::Int(deadline));

    assert_eq!(p.cmd(&["SET", "a", "3", "IFEQ", "1"]), ok());
    let d = digest_of(&mut p, "b");
    assert_eq!(p.cmd(&["SET", "b", "4", "IFDEQ", &d, "EX", "50"]), ok());
    sync(&mut p);
    assert_eq!(r.cmd(&["MGET", "a", "b"]), Value::Agg(b'*', Some(vec![bulk("3"), bulk("4")])));
    assert!(matches!(r.cmd(&["TTL", "b"]), Value::Int(t) if (49..=50).contains(&t)));
    assert_eq!(r.cmd(&["TTL", "a"]), Value::Int(-1), "SET without KEEPTTL dropped a's TTL on both");
    assert_eq!(p.cmd(&["TTL", "a"]), Value::Int(-1));
}

#[test]
fn cluster_refuses_cross_slot_msetex() {
    let node = config("8.4.0");
    let cluster = rlockd::Cluster::start(rlockd::ClusterConfig::new(1).with_node(node)).expect("cluster");
    let port = cluster.addrs()[0].port();
    let mut c = RawConn::connect(port);
    assert_eq!(err(c.cmd(&["MSET", "a", "1", "b", "2"])), "CROSSSLOT Keys in request don't hash to the same slot");
    let e = err(c.cmd(&["MSETEX", "2", "a", "1", "b", "2", "EX", "10"]));
    assert_eq!(e, "CROSSSLOT Keys in request don't hash to the same slot");
    assert_eq!(c.cmd(&["MSETEX", "2", "{t}a", "1", "{t}b", "2", "EX", "10"]), Value::Int(1));
    assert_eq!(c.cmd(&["DELEX", "{t}a", "IFEQ", "1"]), Value::Int(1));
    assert_eq!(c.cmd(&["DIGEST", "{t}b"]).shape(), "$");
}
