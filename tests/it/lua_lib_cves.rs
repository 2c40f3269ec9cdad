//! Public reproducers of the CVEs of Redis's Lua libraries, run against our
//! Rust rewrites of cjson, cmsgpack, struct and bit: each gets Redis's
//! answer and the server keeps serving. `tests/diff/lua_lib_cves.redis`
//! compares the same scripts with redis-server.

use crate::common::{conn, server};

fn eval(con: &mut redis::Connection, script: &str) -> redis::RedisResult<redis::Value> {
    redis::cmd("EVAL").arg(script).arg(0).query(con)
}

fn err_text(r: redis::RedisResult<redis::Value>) -> String {
    r.expect_err("the script must fail").to_string()
}

#[test]
fn cve_2024_31449_bit_tohex_extremes() {
    let srv = server();
    let mut con = conn(&srv);
    // INT_MIN digits: negating it overflowed in the C library.
    let v: String = redis::cmd("EVAL").arg("return bit.tohex(65535, -2147483648)").arg(0).query(&mut con).unwrap();
    assert_eq!(v, "0000FFFF");
    let v: String = redis::cmd("EVAL").arg("return bit.tohex(65535, 2147483647)").arg(0).query(&mut con).unwrap();
    assert_eq!(v, "0000ffff");
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn cve_2020_14147_struct_size_overflow() {
    let srv = server();
    let mut con = conn(&srv);
    for fmt in ["i2147483648", "c99999999999999999999", ">!99999999999i"] {
        let e = err_text(eval(&mut con, &format!("return struct.pack('{fmt}', 1)")));
        assert!(e.contains("integral size overflow"), "{fmt}: {e}");
    }
    let e = err_text(eval(&mut con, "return struct.pack('i100', 1)"));
    assert!(e.contains("integral size 100 is larger than limit of 32"), "{e}");
    let e = err_text(eval(&mut con, "return struct.unpack('c2147483647', 'abc')"));
    assert!(e.contains("data string too short"), "{e}");
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn cve_2022_24834_encoders_on_growing_strings() {
    let srv = server();
    let mut con = conn(&srv);
    let n: i64 =
        redis::cmd("EVAL").arg("return #cjson.encode(string.rep('\"', 1048576))").arg(0).query(&mut con).unwrap();
    assert_eq!(n, 2 * 1048576 + 2);
    let n: i64 =
        redis::cmd("EVAL").arg("return #cjson.encode(string.rep('\\1', 1048576))").arg(0).query(&mut con).unwrap();
    assert_eq!(n, 6 * 1048576 + 2);
    let e: String = redis::cmd("EVAL")
        .arg("local s = string.rep('[', 100000) local ok, e = pcall(cjson.decode, s) return e")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(e, "Found too many nested data structures (1001) at character 1001");
    let e: String = redis::cmd("EVAL")
        .arg("local s = string.rep('\\145', 100000) .. '\\1' local ok, e = pcall(cmsgpack.unpack, s) return e")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert!(e.starts_with("stack overflow"), "{e}");
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

/// Redis's large-memory test for CVE-2022-24834: a 3 GiB string whose JSON
/// form passes 2^31 bytes. Needs ~12 GiB; run with `--ignored`.
#[test]
#[ignore = "large-memory: needs about 12 GiB"]
fn cve_2022_24834_cjson_string_over_2gb() {
    let srv = server();
    let mut con = conn(&srv);
    let n: i64 = redis::cmd("EVAL")
        .arg("local s = string.rep('a', 1024 * 1024 * 1024) return #cjson.encode(s .. s .. s)")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 3221225474);
}
